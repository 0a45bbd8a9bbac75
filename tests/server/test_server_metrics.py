"""``GET /metrics`` (``pymsmq serve --metrics-port``): the server's statistics in Prometheus's text
format, read back with prometheus_client's own parser, over real sockets; the CLI option; TLS."""

from __future__ import annotations

import socket
import sqlite3
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trustme
from click.testing import CliRunner
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)
from _serve_process import SERVE, ServeProcess, env

from pymsmq import Message, QueueManager
from pymsmq.cli import main
from pymsmq.client import connect
from pymsmq.server import AccessPolicy, ConfigError, ServerConfig
from pymsmq.server.metrics import REQUEST_TIMEOUT, metric_families

Q = r".\private$\metered"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _parse(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _scrape(url: str, context: ssl.SSLContext | None = None) -> Samples:
    with urllib.request.urlopen(url, timeout=10, context=context) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return _parse(response.read().decode())


def _of_queue(samples: Samples, name: str, format_name: str) -> float:
    (value,) = [
        v for (n, labels), v in samples.items() if n == name and ("format_name", format_name) in labels
    ]
    return value


def _metrics_url(server: ThreadServer, scheme: str = "http") -> str:
    assert server.server is not None and server.server.metrics is not None
    host, port = server.server.metrics.address
    return f"{scheme}://{host}:{port}/metrics"


def test_a_scrape_gives_each_queues_messages_and_traffic(tmp_path: Path) -> None:
    server = ThreadServer(tmp_path / "qm", ServerConfig(port=0, metrics_port=0)).start()
    try:
        client = connect(server.url)
        q = client.create_queue(Q)
        for body in (b"a" * 10, b"b" * 20, b"c" * 30):
            q.send(Message(body=body))
        assert q.receive(0).body == b"a" * 10
        assert q.peek(0).body == b"b" * 20
        samples = _scrape(_metrics_url(server))
        fn = q.format_name
        assert _of_queue(samples, "pymsmq_queue_messages", fn) == 2
        assert _of_queue(samples, "pymsmq_queue_sent_messages_total", fn) == 3
        assert _of_queue(samples, "pymsmq_queue_received_messages_total", fn) == 1
        assert _of_queue(samples, "pymsmq_queue_peeked_messages_total", fn) == 1
        assert _of_queue(samples, "pymsmq_queue_sent_bytes_total", fn) == 60
        assert _of_queue(samples, "pymsmq_queue_received_bytes_total", fn) == 10
        assert _of_queue(samples, "pymsmq_queue_bytes", fn) == client.server_stats()["queues"][fn]["bytes"]
        path = [
            dict(labels)["path_name"]
            for (n, labels) in samples
            if n == "pymsmq_queue_messages" and ("format_name", fn) in labels
        ]
        assert path[0].lower().endswith("private$\\metered")
        assert samples[("pymsmq_connections_open", ())] == 1
        assert samples[("pymsmq_requests_total", ())] >= 6
        assert samples[("pymsmq_disk_full", ())] == 0
        assert ("pymsmq_machine_quota_bytes", ()) not in samples  # no quota: no series
        # The system queues are there too (with no path of their own to name).
        assert sum(1 for (n, _) in samples if n == "pymsmq_queue_messages") == 4
        q.send(Message(body=b"d"))
        assert _of_queue(_scrape(_metrics_url(server)), "pymsmq_queue_messages", fn) == 3
        client.close()
    finally:
        server.stop()


def test_a_subqueues_traffic_counts_in_its_queues_series_and_a_journal_has_its_path(tmp_path: Path) -> None:
    # Outside QA: a subqueue's reads had a series of their own, with no path_name, gone when the
    # subqueue emptied (sent less received no longer balanced the queue); a journal's had no path.
    server = ThreadServer(tmp_path / "qm", ServerConfig(port=0, metrics_port=0)).start()
    try:
        client = connect(server.url)
        q = client.create_queue(Q, transactional=True, journal=True)
        for body in (b"a" * 10, b"b" * 20, b"c" * 30):
            q.send(Message(body=body), transaction=3)
        with client.begin_transaction() as tx:
            q.move(q.peek(0).lookup_id, "poison", transaction=tx)
        with client.queue(q.format_name + ";poison") as poison:
            assert poison.peek(0).body == b"a" * 10
            assert poison.receive(0, transaction=3).body == b"a" * 10  # the subqueue is empty now
        assert q.receive(0, transaction=3).body == b"b" * 20
        with q.journal as journal:
            assert journal.peek(0).body == b"a" * 10
        samples = _scrape(_metrics_url(server))
        fn = q.format_name
        assert _of_queue(samples, "pymsmq_queue_sent_messages_total", fn) == 3
        assert _of_queue(samples, "pymsmq_queue_received_messages_total", fn) == 2
        assert _of_queue(samples, "pymsmq_queue_peeked_messages_total", fn) == 2  # one in poison
        assert _of_queue(samples, "pymsmq_queue_moved_messages_total", fn) == 1
        assert _of_queue(samples, "pymsmq_queue_received_bytes_total", fn) == 30
        assert _of_queue(samples, "pymsmq_queue_messages", fn) == 1  # 3 sent, 2 received
        assert not [1 for (_, labels) in samples if any(";poison" in v for _, v in labels)]
        journal_labels = [
            dict(labels)
            for (n, labels) in samples
            if n == "pymsmq_queue_peeked_messages_total" and dict(labels)["format_name"] == fn + ";JOURNAL"
        ]
        assert journal_labels[0]["path_name"].lower().endswith("private$\\metered;journal")
        assert _of_queue(samples, "pymsmq_queue_peeked_messages_total", fn + ";JOURNAL") == 1
        client.close()
    finally:
        server.stop()


def test_a_deleted_queue_leaves_the_scrape(tmp_path: Path) -> None:
    server = ThreadServer(tmp_path / "qm", ServerConfig(port=0, metrics_port=0)).start()
    try:
        client = connect(server.url)
        fn = client.create_queue(Q).format_name
        client.queue(Q).send(Message(body=b"x"))
        assert _of_queue(_scrape(_metrics_url(server)), "pymsmq_queue_messages", fn) == 1
        client.delete_queue(Q)
        samples = _scrape(_metrics_url(server))
        assert not [1 for (_, labels) in samples if ("format_name", fn) in labels]
        client.close()
    finally:
        server.stop()


def test_shutdown_closes_the_metrics_port(tmp_path: Path) -> None:
    server = ThreadServer(tmp_path / "qm", ServerConfig(port=0, metrics_port=0)).start()
    url = _metrics_url(server)
    _scrape(url)
    server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)


def test_metric_families_escape_label_values_and_report_the_quota() -> None:
    odd = 'DIRECT=OS:host\\private$\\a "quoted"\nname'
    snapshot = {
        "connections": {"open": 2, "total": 5, "refused": 1, "protocol_errors": 0},
        "requests": 7,
        "machine_quota": 4,
        "disk_full": True,
        "queues": {
            odd: {
                "sent": 3,
                "received": 1,
                "peeked": 0,
                "bytes_in": 9,
                "bytes_out": 3,
                "messages": 2,
                "bytes": 6,
            }
        },
    }

    class Fixed:
        def collect(self) -> object:
            return metric_families(snapshot, {odd: 'host\\private$\\a "quoted"'})

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed())  # type: ignore[arg-type]
    samples = _parse(generate_latest(registry).decode())
    labels = (("format_name", odd), ("path_name", 'host\\private$\\a "quoted"'))
    assert samples[("pymsmq_queue_messages", labels)] == 2
    assert samples[("pymsmq_queue_sent_messages_total", labels)] == 3
    assert samples[("pymsmq_machine_quota_bytes", ())] == 4096
    assert samples[("pymsmq_disk_full", ())] == 1
    assert samples[("pymsmq_connections_refused_total", ())] == 1
    assert ("pymsmq_held_messages", ()) not in samples  # not in the snapshot: not made up


def test_a_bad_metrics_port_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="metrics port"):
        ServerConfig(port=0, metrics_port=70000).validate()


def test_serve_prints_the_metrics_url_and_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    srv = ServeProcess(tmp_path / "qm", "--metrics-port", "0")
    try:
        assert srv.proc.stdout is not None
        line = srv.proc.stdout.readline()
        assert line.startswith("pymsmq: metrics http://127.0.0.1:"), line
        url = line.split()[-1]
        client = connect(srv.url)
        client.create_queue(Q).send(Message(body=b"x"))
        samples = _scrape(url)
        assert _of_queue(samples, "pymsmq_queue_sent_messages_total", client.queue(Q).format_name) == 1
        client.close()
        taken = int(url.rsplit(":", 1)[1].split("/")[0])
        failed = subprocess.run(
            [
                sys.executable,
                "-c",
                SERVE,
                "--data",
                str(tmp_path / "qm2"),
                "--port",
                "0",
                "--metrics-port",
                str(taken),
            ],
            capture_output=True,
            text=True,
            env=env(),
            timeout=60,
        )
        assert failed.returncode == 1
        assert f"cannot serve metrics on 127.0.0.1:{taken}" in failed.stderr
        assert "Traceback" not in failed.stderr
    finally:
        assert srv.terminate() == 0


def test_metrics_stay_plain_http_beside_a_tls_client_port(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    chain, key = tmp_path / "chain.pem", tmp_path / "key.pem"
    cert.private_key_pem.write_to_path(str(key))
    chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    config = ServerConfig(
        port=0, metrics_port=0, policy=AccessPolicy.single_token("t"), tls_cert=str(chain), tls_key=str(key)
    )
    server = ThreadServer(tmp_path / "qm", config).start()
    try:
        assert ("pymsmq_requests_total", ()) in _scrape(_metrics_url(server))
    finally:
        server.stop()


def test_a_silent_metrics_connection_is_closed_and_scrapes_go_on(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    server = ThreadServer(tmp_path / "qm", ServerConfig(port=0, metrics_port=0)).start()
    try:
        assert server.server is not None and server.server.metrics is not None
        endpoint = server.server.metrics
        handler = endpoint._httpd.RequestHandlerClass
        assert handler.timeout == REQUEST_TIMEOUT  # (socketserver's default is None: no timeout)
        endpoint._httpd.RequestHandlerClass = type("Quick", (handler,), {"timeout": 0.3})
        silent = [socket.create_connection(endpoint.address) for _ in range(5)]
        try:
            assert ("pymsmq_requests_total", ()) in _scrape(_metrics_url(server))  # not held up
            for s in silent:
                s.settimeout(5)
                assert s.recv(1) == b""  # closed by the server, not left open
        finally:
            for s in silent:
                s.close()
    finally:
        server.stop()
    # Each timed-out connection printed a 17-line traceback on stderr (outside QA: a flood that no
    # log budget bounded); a DEBUG line now.
    assert "Traceback" not in capfd.readouterr().err


def test_the_client_port_is_free_again_when_the_metrics_port_is_taken(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            client_port = probe.getsockname()[1]
        server = ThreadServer(tmp_path / "qm", ServerConfig(port=client_port, metrics_port=taken))
        with pytest.raises(ConfigError, match="cannot serve metrics"):
            server.start()
    with socket.socket() as again:  # the client port the failed start bound was let go
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", client_port))


@pytest.fixture
def endpoint() -> Any:
    """A MetricsEndpoint with short limits (0.5 s, 3 connections) over a loop of its own."""
    import asyncio
    import threading

    from pymsmq.server.metrics import MetricsEndpoint

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    snapshot = {"requests": 7, "queues": {}}
    ep = MetricsEndpoint("127.0.0.1", 0, loop, lambda: (snapshot, {}), request_timeout=0.5, max_connections=3)
    yield ep
    ep.close()
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def _url(ep: Any, path: str = "/metrics") -> str:
    host, port = ep.address
    return f"http://{host}:{port}{path}"


def _closed_by_server(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_only_the_metrics_path_is_answered(endpoint: Any) -> None:
    # QA round 4: any path answered the metrics.
    assert _scrape(_url(endpoint))[("pymsmq_requests_total", ())] == 7
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(_url(endpoint, "/other"), timeout=5)
    assert err.value.code == 404


def test_a_slow_sender_is_cut_at_the_deadline(endpoint: Any) -> None:
    # QA round 4: one byte every 5 s kept a connection (and its thread) past the 10 s limit.
    with socket.create_connection(endpoint.address) as s:
        started = time.monotonic()
        closed = False
        for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 40:
            try:
                s.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            if _closed_by_server(s, 0.1):
                closed = True
                break
        assert closed and time.monotonic() - started < 3


def test_connections_beyond_the_limit_are_closed_and_scrapes_come_back(endpoint: Any) -> None:
    held = [socket.create_connection(endpoint.address) for _ in range(3)]
    try:
        time.sleep(0.1)
        with socket.create_connection(endpoint.address) as extra:
            assert _closed_by_server(extra, 0.3)  # over the limit: closed at once
        time.sleep(0.8)  # the three are past their deadline, cut, and their slots free
        assert all(_closed_by_server(s, 1) for s in held)
        assert ("pymsmq_requests_total", ()) in _scrape(_url(endpoint))
    finally:
        for s in held:
            s.close()


def test_messages_damaged_on_disk_are_counted_in_stats_and_metrics(tmp_path: Path) -> None:
    # A message left in the store at start because its packet was damaged on disk was only in the
    # log: a scrape and STATS now count it, until a purge of its queue deletes it.
    with QueueManager.open(tmp_path / "qm") as qm:
        q = qm.create_queue(Q)
        q.send_many([Message(body=b"good", delivery=1), Message(body=b"rots", delivery=1)])
    with sqlite3.connect(tmp_path / "qm" / "pymsmq.db") as conn:
        conn.execute("UPDATE messages SET packet_crc = packet_crc + 1")  # both look damaged
    server = ThreadServer(tmp_path / "qm", ServerConfig(port=0, metrics_port=0)).start()
    try:
        with connect(server.url) as client:
            assert client.server_stats()["unreadable_messages"] == 2
            assert _scrape(_metrics_url(server))[("pymsmq_unreadable_messages", ())] == 2
            shown = CliRunner().invoke(main, ["stats", "--url", server.url], env={"PYMSMQ_URL": None})
            assert shown.exit_code == 0 and "store: 2 stored message(s) could not be read" in shown.output
            client.queue(Q).purge()
            assert client.server_stats()["unreadable_messages"] == 0
            assert _scrape(_metrics_url(server))[("pymsmq_unreadable_messages", ())] == 0
    finally:
        server.stop()
