"""The server's send batcher: recoverable SENDs of every connection share store batches.

Order per handle, error answers, grouping, graceful shutdown, and durability across a SIGKILL of the
server process while concurrent clients send recoverable messages.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer
from _serve_process import SERVE, ServeProcess, env

from pymsmq import Message, MSMQError
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.server import ServerConfig

Q = ".\\private$\\q"


#: ``ServerConfig.durable_writes``: every test runs with batches written on the loop and on a thread.
WRITES = ["loop", "thread", "auto"]


@pytest.fixture(params=WRITES)
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ThreadServer]:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, durable_writes=request.param)).start()
    yield s
    s.stop()


def test_pipelined_sends_of_one_handle_keep_their_order(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    # Recoverable and express mixed: an express send behind a queued recoverable one waits its turn.
    msgs = [Message(body=b"%d" % i, delivery=1 if i % 3 else 0) for i in range(300)]
    # Separate SEND requests, all written before the first answer (send_many would use SEND_MANY).
    pending = [q.send_async(m) for m in msgs]
    for p in pending:
        p.result()
    ids = [m.id for m in msgs]
    assert all(i is not None for i in ids)
    got = q.receive_many(400)
    assert [m.body for m in got] == [b"%d" % i for i in range(300)]
    assert [m.id for m in got] == ids
    assert [m.delivery for m in got] == [1 if i % 3 else 0 for i in range(300)]
    batcher = server.server.send_batcher  # type: ignore[union-attr]
    assert batcher.sends >= 200 and batcher.batches < batcher.sends  # they shared batches
    client.close()


def test_concurrent_clients_all_answered_and_stored(server: ThreadServer) -> None:
    connect(server.url).create_queue(Q)
    errors: list[BaseException] = []

    def sender(k: int) -> None:
        try:
            c = connect(server.url)
            h = c.queue(Q)
            for i in range(40):
                h.send(Message(body=f"{k}-{i}".encode(), delivery=1))
            c.close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    q = connect(server.url).queue(Q)
    bodies = [m.body.decode() for m in q.receive_many(400)]
    assert sorted(bodies) == sorted(f"{k}-{i}" for k in range(8) for i in range(40))
    for k in range(8):  # each client's messages in its send order
        mine = [b for b in bodies if b.startswith(f"{k}-")]
        assert mine == [f"{k}-{i}" for i in range(40)]


def test_errors_answer_only_their_send(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q, quota=1)  # 1 KB
    msgs = [Message(body=b"x" * 300, delivery=1) for _ in range(5)]
    with pytest.raises(MSMQError) as e:
        q.send_many(msgs)
    assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    # The two refused for the quota have ids too: those their NACKs would correlate to.
    assert len({m.id for m in msgs}) == 5 and None not in {m.id for m in msgs}
    stored = q.receive_many(10)
    assert [m.id for m in stored] == [m.id for m in msgs[:3]]
    tq = client.create_queue(".\\private$\\tq", transactional=True)
    with pytest.raises(MSMQError) as e:
        tq.send(Message(body=b"r", delivery=1))  # non-transactional send to a transactional queue
    assert e.value.hresult == HResult.MQ_ERROR_TRANSACTION_USAGE
    tq.send(Message(body=b"single"), 3)  # MQ_SINGLE_MESSAGE goes through the batcher too
    assert tq.receive(0).body == b"single"
    client.close()


def test_move_after_sends_waits_for_them(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    q.send_many([Message(body=b"%d" % i, delivery=1) for i in range(50)])
    q.purge()  # behind the sends of the same handle
    assert q.receive_many(5) == []
    client.close()


@pytest.mark.parametrize("writes", WRITES)
def test_graceful_shutdown_flushes_the_batcher(tmp_path: Path, writes: str) -> None:
    srv = ServeProcess(tmp_path / "qm", "--durable-writes", writes)
    try:
        client = connect(srv.url)
        q = client.create_queue(Q)
        q.send_many([Message(body=b"%d" % i, delivery=1) for i in range(100)])
        client.close()
        assert srv.terminate() == 0
        srv = ServeProcess(tmp_path / "qm")
        client = connect(srv.url)
        assert len(client.queue(Q).receive_many(200)) == 100
        client.close()
    finally:
        srv.kill()


_SENDER = """
import sys
from pymsmq import Message
from pymsmq.client import connect
url, tag, out = sys.argv[1], sys.argv[2], sys.argv[3]
with open(out, "w") as f:
    try:
        q = connect(url, timeout=5).queue(r".\\private$\\q")
        i = 0
        while True:
            body = f"{tag}-{i}"
            q.send(Message(body=body.encode(), delivery=1))
            f.write(body + "\\n")  # acknowledged: it must survive the crash
            f.flush()
            i += 1
    except Exception:
        pass
"""


@pytest.mark.parametrize("writes", WRITES)
def test_acknowledged_recoverable_sends_survive_sigkill(tmp_path: Path, writes: str) -> None:
    srv = ServeProcess(tmp_path / "qm", "--durable-writes", writes)
    try:
        connect(srv.url).create_queue(Q)
        children = []
        for k in range(6):
            out = tmp_path / f"acked-{k}.txt"
            children.append(
                (
                    out,
                    subprocess.Popen(
                        [sys.executable, "-c", _SENDER, srv.url, f"c{k}", str(out)],
                        env=env(),
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    ),
                )
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until every client has had some sends acknowledged
            if all(out.exists() and out.stat().st_size > 50 for out, _ in children):
                break
            time.sleep(0.05)
        time.sleep(0.3)
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(10)
        for _, child in children:
            child.wait(30)
        acked = [line for out, _ in children for line in out.read_text().split()]
        assert len(acked) >= 6
        srv = ServeProcess(tmp_path / "qm")
        q = connect(srv.url).queue(Q)
        stored: list[str] = []
        while batch := q.receive_many(1000):
            stored.extend(m.body.decode() for m in batch)
        assert len(stored) == len(set(stored))  # exactly once
        missing = set(acked) - set(stored)
        assert not missing, (len(acked), len(stored))
        for k in range(6):  # each client's messages stored in its send order
            mine = [b for b in stored if b.startswith(f"c{k}-")]
            assert mine == sorted(mine, key=lambda b: int(b.split("-")[1]))
    finally:
        srv.kill()


def test_stats_report_send_batches(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    for p in [q.send_async(Message(body=b"%d" % i, delivery=1)) for i in range(20)]:
        p.result()
    batches = client.server_stats()["send_batches"]
    assert batches["sends"] == 20 and 1 <= batches["batches"] <= 20
    client.close()


def test_send_behind_other_work_of_its_handle_is_chained(server: ThreadServer) -> None:
    """SEND A, PURGE, SEND B written at once on one handle: B waits for the PURGE, which waits for A."""
    from pymsmq.protocol import ClientConnection, ClientHello, ResponseReceived
    from pymsmq.protocol import messages as pm
    from pymsmq.protocol.message_codec import encode_packet

    connect(server.url).create_queue(Q)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    conn = ClientConnection()
    sock.sendall(conn.send(ClientHello(client_name="raw")))
    while conn.server_hello is None:
        conn.receive_data(sock.recv(65536))

    def answers(count: int) -> dict[int, object]:
        got: dict[int, object] = {}
        while len(got) < count:
            for event in conn.receive_data(sock.recv(65536)):
                if isinstance(event, ResponseReceived):
                    got[event.request_id] = event.response
        return got

    rid, frame = conn.send_request(pm.OpenQueueRequest(Q, 0x23, 0))
    sock.sendall(frame)
    opened = answers(1)[rid]
    assert isinstance(opened, pm.OpenQueueResponse)
    h = opened.handle
    a = conn.send_request(pm.SendRequest(h, encode_packet(Message(body=b"A", delivery=1))))
    p = conn.send_request(pm.PurgeQueueRequest(h))
    b = conn.send_request(pm.SendRequest(h, encode_packet(Message(body=b"B", delivery=1))))
    sock.sendall(a[1] + p[1] + b[1])
    got = answers(3)
    assert isinstance(got[a[0]], pm.SendResponse) and isinstance(got[b[0]], pm.SendResponse)
    assert isinstance(got[p[0]], pm.PurgeQueueResponse)
    sock.close()
    q = connect(server.url).queue(Q)
    assert [m.body for m in q.receive_many(5)] == [b"B"]


def test_durable_writes_setting_is_checked() -> None:
    from pymsmq.server import ConfigError

    with pytest.raises(ConfigError, match="'loop', a 'thread' or 'auto'"):
        ServerConfig(port=0, durable_writes="disk").validate()  # type: ignore[arg-type]
    bad = subprocess.run(
        [sys.executable, "-c", SERVE, "--data", "x", "--durable-writes", "disk"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert bad.returncode == 2 and "'disk' is not one of 'auto', 'loop', 'thread'" in bad.stderr


def test_loop_writes_start_no_thread(server: ThreadServer) -> None:
    """``"loop"``: the batches are written by the event loop's thread, ``"thread"``: by pymsmq-send."""
    client = connect(server.url)
    q = client.create_queue(Q)
    q.send(Message(body=b"one", delivery=1))
    names = {t.name for t in threading.enumerate()}
    if server.config.durable_writes != "auto":  # ("auto": the writer thread starts when first needed)
        assert ("pymsmq-send" in names) == (server.config.durable_writes == "thread")
    assert q.receive(0).body == b"one"
    client.close()


def test_a_sender_that_goes_away_does_not_hold_the_next_batches(server: ThreadServer) -> None:
    """ "loop": a batch waits (boundedly) for the senders the last one answered; one that never
    sends again (it disconnected) must not stall the others."""
    staying, leaving = connect(server.url), connect(server.url)
    q = staying.create_queue(Q)
    other = leaving.queue(Q)
    both = [q.send_async(Message(body=b"a", delivery=1)), other.send_async(Message(body=b"b", delivery=1))]
    for p in both:
        p.result()
    leaving.close()
    started = time.monotonic()
    for i in range(50):
        q.send(Message(body=b"%d" % i, delivery=1))
    assert time.monotonic() - started < 20  # each wait is at most 1 ms; a stall would be seconds
    assert len(q.receive_many(100)) == 52
    staying.close()


def test_auto_writes_off_the_loop_only_while_other_requests_arrive(tmp_path: Path) -> None:
    """``"auto"``: recoverable sends alone are written on the loop; beside other requests (here
    express sends and receives) off it, so that those do not wait for the disk."""
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, durable_writes="auto")).start()
    try:
        batcher = s.server.send_batcher if s.server is not None else None
        assert batcher is not None
        client = connect(s.url)
        q = client.create_queue(Q)
        time.sleep(0.2)  # longer than the quiet time after the create request
        for i in range(20):
            q.send(Message(body=b"%d" % i, delivery=1))
        assert batcher.batches_off_loop == 0 and batcher.batches >= 20  # one sender, one per batch
        express = connect(s.url).create_queue(Q + "x")
        stop = threading.Event()

        def express_traffic() -> None:
            while not stop.is_set():
                express.send(Message(body=b"e"))
                express.receive(0)

        t = threading.Thread(target=express_traffic)
        t.start()
        try:
            time.sleep(0.05)
            for i in range(20):
                q.send(Message(body=b"m%d" % i, delivery=1))
        finally:
            stop.set()
            t.join(10)
        assert batcher.batches_off_loop >= 10  # (a few may find no express request in the last 50 ms)
        assert len(q.receive_many(100)) == 40
        client.close()
    finally:
        s.stop()
