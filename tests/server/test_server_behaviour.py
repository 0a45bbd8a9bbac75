"""The server with real sockets: races, crashes, hostile frames, tokens, rights, shutdown, bind rules."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)
from _serve_process import SERVE, ServeProcess, env

from pymsmq import MQ_SINGLE_MESSAGE, Message, MSMQError
from pymsmq.cli import main as cli_main
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.protocol import ClientConnection, ClientHello, Goodbye, PingRequest, hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import Action, Op
from pymsmq.protocol.frames import FrameType
from pymsmq.server import AccessPolicy, ConfigError, ServerConfig
from pymsmq.wire.user_message import UserMessage

Q = ".\\private$\\q"
TQ = ".\\private$\\tq"


def _hello(port: int) -> tuple[socket.socket, ClientConnection]:
    """A raw socket that completed the handshake, and its connection state."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    conn = ClientConnection()
    sock.sendall(conn.send(ClientHello(client_name="raw")))
    while conn.server_hello is None:
        conn.receive_data(sock.recv(65536))
    return sock, conn


def _hello_socket(port: int) -> socket.socket:
    """A raw socket that completed the handshake."""
    return _hello(port)[0]


def _closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes the stream (a GOODBYE may come first)."""
    sock.settimeout(5)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


# ---------------------------------------------------------------------------- races


def test_two_clients_racing_on_receive_never_share_a_message(server: ThreadServer) -> None:
    a, b = connect(server.url), connect(server.url)
    q = a.create_queue(Q)
    q.send_many([Message(body=str(i).encode()) for i in range(400)])
    got: list[list[bytes]] = [[], []]

    def drain(client: Any, out: list[bytes]) -> None:
        handle = client.queue(Q)
        while True:
            try:
                out.append(handle.receive(timeout=0.3).body)
            except MSMQError:
                return

    threads = [threading.Thread(target=drain, args=(c, out)) for c, out in zip((a, b), got, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = got[0] + got[1]
    assert len(everything) == 400 and len(set(everything)) == 400
    a.close()
    b.close()


def test_pipelined_requests_from_many_threads_share_one_connection(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(50):
                q.send(Message(body=f"{n}-{i}".encode()))
                assert client.ping(b"x") == b"x"
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert q.message_count == 400


def test_a_blocked_receive_does_not_hold_up_later_requests(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    pending = q.receive_async(timeout=5)
    start = time.monotonic()
    assert client.ping(b"p") == b"p"
    q.send(Message(body=b"wake"))
    assert time.monotonic() - start < 2
    assert pending.result().body == b"wake"


# ---------------------------------------------------------------------------- crashes

_CHILD = """
import sys, time
from pymsmq.client import connect
qm = connect(sys.argv[1])
q = qm.queue(r".\\private$\\tq")
tx = qm.begin_transaction()
m = q.receive(timeout=5, transaction=tx)
print("got", m.body.decode(), flush=True)
time.sleep(60)
"""


def test_client_killed_inside_a_transactional_receive_gets_its_message_returned(tmp_path: Path) -> None:
    srv = ServeProcess(tmp_path / "qm")
    try:
        qm = connect(srv.url)
        tq = qm.create_queue(TQ, transactional=True)
        tq.send(Message(body=b"precious"), 3)
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, srv.url], stdout=subprocess.PIPE, text=True, env=env()
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "got precious"
        assert _hresult(tq.receive, 0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # locked by the child
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        back = tq.receive(timeout=5, transaction=3)
        assert back.body == b"precious" and back.abort_count == 1
        qm.close()
    finally:
        srv.kill()


def _hresult(fn: Any, *args: Any) -> int:
    with pytest.raises(MSMQError) as info:
        fn(*args)
    return info.value.hresult


# ---------------------------------------------------------------------------- hostile frames


@pytest.mark.parametrize(
    "payload",
    [
        b"GET / HTTP/1.1\r\n\r\n",  # garbage: wrong magic
        b"MQ\x01\x03\x01\x00\x00\x00\x01\x00\x00\x00\xff\xff\xff\x7f",  # oversized length
        b"MQ\x01\x03\x01\x00\x00\x00\x01\x00\x00\x00\x08\x00\x00\x00\x05\x00\x00\x00",  # truncated payload
        b"MQ\x01\x03\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00",  # PING without its BYTES field
        b"MQ\x01\x03\x99\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00",  # unknown op
    ],
    ids=["garbage", "oversized", "truncated", "malformed", "unknown-op"],
)
def test_bad_frames_close_that_connection_only(server: ThreadServer, payload: bytes) -> None:
    good = connect(server.url)
    q = good.create_queue(Q)
    bad = _hello_socket(server.port)
    bad.sendall(payload)
    if payload.startswith(b"MQ\x01\x03\x01\x00\x00\x00\x01\x00\x00\x00\x08"):
        bad.shutdown(socket.SHUT_WR)  # the stream ends inside the frame
    assert _closed_by_server(bad)
    q.send(Message(body=b"still fine"))
    assert q.receive(timeout=1).body == b"still fine"
    assert server.server is not None and server.server.stats.protocol_errors >= 1


def test_a_client_told_of_its_bad_frame_reads_why_while_its_bytes_still_come(server: ThreadServer) -> None:
    # The server closed such a connection with bytes of it unread: a reset, which may throw away
    # the GOODBYE that says why.  It half-closes now and drops what still comes.
    bad = _hello_socket(server.port)
    bad.sendall(b"XX" + bytes(14))  # not a frame header

    def more() -> None:
        with contextlib.suppress(OSError):  # (the old server reset the connection)
            bad.sendall(bytes(4 << 20))

    sender = threading.Thread(target=more)
    sender.start()
    data, error = _read_to_end(bad)
    sender.join(30)
    bad.close()
    assert error is None, f"the stream ended with {error!r} after {len(data)} bytes"
    assert _frames_read(data)[-1][0] == FrameType.GOODBYE


def test_a_goodbye_for_a_malformed_packet_names_its_hresult_once(server: ThreadServer) -> None:
    # The GOODBYE carries the HRESULT in its own field; its reason is text without "[NAME 0x...]"
    # (which the nested packet error once repeated: "... [MQ_ERROR_...] at offset 8 [MQ_ERROR_...]").
    sock, conn = _hello(server.port)
    framed = conn.request_frame(Op.SEND, hot.send_request_body(1, b"\x00" * 40))
    assert framed is not None
    sock.sendall(framed[1])
    events = conn.receive_data(_goodbye_or_close(sock, 5))
    goodbye = next(e for e in events if isinstance(e, Goodbye))
    assert goodbye.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    assert "not an MSMQ packet" in goodbye.reason and "offset" in goodbye.reason
    assert "MQ_ERROR" not in goodbye.reason and "0xC00E" not in goodbye.reason
    sock.close()


def test_garbage_before_the_handshake_is_refused(server: ThreadServer) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(b"\x00" * 64)
    assert _closed_by_server(sock)
    assert connect(server.url).ping(b"ok") == b"ok"


def _uncaught(server: ThreadServer) -> list[dict[str, Any]]:
    # What the server's event loop reports as unhandled (an exception escaping a protocol callback).
    seen: list[dict[str, Any]] = []
    server.loop.set_exception_handler(lambda _loop, context: seen.append(context))
    return seen


def test_request_before_hello_is_a_protocol_error(server: ThreadServer) -> None:
    uncaught = _uncaught(server)
    assert server.server is not None
    before = server.server.stats.protocol_errors
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    conn = ClientConnection()
    hello = conn.send(ClientHello())
    conn._enter(conn.state.__class__.READY)  # forge a client that skips waiting for SERVER_HELLO
    sock.sendall(hello + conn.send(PingRequest(b"x")))
    assert _closed_by_server(sock)
    # Handled as a protocol error (counted, GOODBYE), not by an exception escaping data_received.
    assert server.server.stats.protocol_errors == before + 1
    assert uncaught == []


def test_a_bad_frame_in_the_same_read_as_the_hello_is_a_protocol_error(server: ThreadServer) -> None:
    uncaught = _uncaught(server)
    assert server.server is not None
    before = server.server.stats.protocol_errors
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(ClientConnection().send(ClientHello()) + b"\x00" * 40)
    assert _closed_by_server(sock)
    assert server.server.stats.protocol_errors == before + 1
    assert uncaught == []
    assert connect(server.url).ping(b"ok") == b"ok"


# ---------------------------------------------------------------------------- security


def test_wrong_token_is_refused(tmp_path: Path) -> None:
    s = ThreadServer(
        tmp_path / "qm", ServerConfig(port=0, policy=AccessPolicy.single_token("s3cret"))
    ).start()
    try:
        for token in (None, "wrong"):
            with pytest.raises(MSMQError) as info:
                connect(s.url, token=token)
            assert info.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
        assert connect(s.url, token="s3cret").ping(b"in") == b"in"
    finally:
        s.stop()


def test_an_address_that_keeps_presenting_bad_tokens_is_refused_for_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guessing tokens: after max_failed_logins bad ones within the window, the address is refused
    # whatever it presents (a right guess is not confirmed) until the window has passed.  (This
    # test's clients come from 127.0.0.1, which is never refused: taken for a remote address here.)
    import pymsmq.server.failed_logins as failed_logins

    monkeypatch.setattr(failed_logins, "is_loopback", lambda address: False)
    config = ServerConfig(
        port=0, policy=AccessPolicy.single_token("s3cret"), max_failed_logins=3, failed_login_window=1.5
    )
    s = ThreadServer(tmp_path / "qm", config).start()
    try:
        good = connect(s.url, token="s3cret")  # connected before: not affected
        for guess in ("a", "b", "c"):
            with pytest.raises(MSMQError) as info:
                connect(s.url, token=guess)
            assert "bad or missing token" in str(info.value)
        started = time.monotonic()
        with pytest.raises(MSMQError) as info:
            connect(s.url, token="s3cret")
        assert info.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
        assert "too many bad tokens from 127.0.0.1" in str(info.value)
        assert good.ping(b"still") == b"still"
        time.sleep(max(0.0, 1.6 - (time.monotonic() - started)))
        assert connect(s.url, token="s3cret").ping(b"again") == b"again"
        assert s.server.stats.connections_refused == 4
    finally:
        s.stop()


def test_a_stale_token_on_this_host_locks_out_nobody(tmp_path: Path) -> None:
    # Every local client comes from 127.0.0.1: one left with a stale token after a rotation locked
    # out the owner and the liveness probe with it (outside QA).  Loopback has ten times the limit.
    config = ServerConfig(
        port=0, policy=AccessPolicy.single_token("s3cret"), max_failed_logins=3, failed_login_window=60
    )
    s = ThreadServer(tmp_path / "qm", config).start()
    try:
        for guess in ("a", "b", "c", "d", "e"):
            with pytest.raises(MSMQError) as info:
                connect(s.url, token=guess)
            assert "bad or missing token" in str(info.value)
        assert connect(s.url, token="s3cret").ping(b"alive") == b"alive"
    finally:
        s.stop()


@pytest.mark.parametrize("version", [3, 4])
def test_queue_statistics_of_more_queues_than_one_answer_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    # One LIST_QUEUES answer holds the facts of about ten thousand queues (a frame is at most
    # MAX_PAYLOAD); past it the client reads pages (LIST_QUEUES_PAGE, version 4) or, from a server
    # of version 3, asks queue by queue.  A 48 KB limit for both ends here.
    import pymsmq.server.session as session
    from pymsmq.protocol import connection
    from pymsmq.protocol.handshake import choose_version

    monkeypatch.setattr(connection, "MAX_PAYLOAD", 48 * 1024)
    monkeypatch.setattr(
        session, "choose_version", lambda hello: choose_version(hello, (1, 2, 3, 4)[:version])
    )
    s = ThreadServer(tmp_path / "qm").start()
    try:
        qm = connect(s.url)
        assert qm._t.server_hello.version == version
        for i in range(150):
            q = qm.create_queue(f".\\private$\\s{i:03d}", label="L" * 120 + f"{i:03d}", journal=i % 2 == 0)
            q.send(Message(body=b"x" * i))
            q.close()
        with pytest.raises(MSMQError) as info:  # what the one answer would be
            qm._t.call(pm.ListQueuesRequest(1, (1, 2, 7, 108)))
        assert info.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
        assert "exceeds the peer's limit" in str(info.value)
        assert "MQ_ERROR_INVALID_PARAMETER" not in str(info.value)  # one HRESULT in the text (QA round 4)
        stats = qm.queue_statistics()
        assert [st.path_name.rpartition("\\")[2] for st in stats] == [f"s{i:03d}" for i in range(150)]
        assert [(st.label[-3:], st.message_count, st.bytes_in_queue, st.journal) for st in stats] == [
            (f"{i:03d}", 1, i, i % 2 == 0) for i in range(150)
        ]
        assert len(qm.private_queues) == 150
        assert qm.ping(b"still") == b"still"
    finally:
        s.stop()


def test_queue_statistics_leave_out_a_queue_deleted_while_they_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LIST_QUEUES lists the names, then reads each queue's facts: a queue deleted in between failed
    # the whole answer with MQ_ERROR_QUEUE_NOT_FOUND (outside QA: 34 of 538 listings under churn).
    from pymsmq.server import ops

    s = ThreadServer(tmp_path / "qm").start()
    try:
        qm = connect(s.url)
        for name in "abc":
            qm.create_queue(f".\\private$\\{name}").close()
        real = ops.queue_stats

        def deleting_b_first(manager: Any, name: str, propids: tuple[int, ...]) -> Any:
            if name.endswith("\\a") and manager.queue_exists(".\\private$\\b"):
                manager.delete_queue(".\\private$\\b")  # another client, at that moment
            return real(manager, name, propids)

        monkeypatch.setattr(ops, "queue_stats", deleting_b_first)
        listed = [st.path_name.rpartition("\\")[2] for st in qm.queue_statistics()]
        assert listed == ["a", "c"]
    finally:
        s.stop()


def test_queue_rights_refuse_a_client_without_them(tmp_path: Path) -> None:
    policy = AccessPolicy.from_json(
        json.dumps(
            {
                "owner": "admin",
                "tokens": {"admin-token": "admin", "reader-token": "reader", "nobody-token": "nobody"},
                "permissions": {
                    "reader": {"private$\\q": ["MQSEC_PEEK_MESSAGE", "MQSEC_GET_QUEUE_PROPERTIES"]}
                },
            }
        )
    )
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, policy=policy)).start()
    try:
        admin = connect(s.url, token="admin-token")
        admin.create_queue(Q).send(Message(body=b"m"))
        reader = connect(s.url, token="reader-token")
        rq = reader.queue(Q)
        assert rq.peek(0).body == b"m"
        assert reader.get_queue_properties(Q).path_name.lower().endswith("private$\\q")
        assert _hresult(rq.receive, 0) == HResult.MQ_ERROR_ACCESS_DENIED
        assert _hresult(rq.send, Message()) == HResult.MQ_ERROR_ACCESS_DENIED
        assert _hresult(rq.purge) == HResult.MQ_ERROR_ACCESS_DENIED
        assert _hresult(reader.delete_queue, Q) == HResult.MQ_ERROR_ACCESS_DENIED
        assert _hresult(reader.create_queue, ".\\private$\\new") == HResult.MQ_ERROR_ACCESS_DENIED
        nobody = connect(s.url, token="nobody-token")
        assert _hresult(nobody.queue, Q) == HResult.MQ_ERROR_ACCESS_DENIED
        assert admin.queue(Q).receive(0).body == b"m"
    finally:
        s.stop()


def test_non_loopback_bind_without_token_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        ServerConfig(host="0.0.0.0", port=0).validate()
    ServerConfig(host="0.0.0.0", port=0, policy=AccessPolicy.single_token("t")).validate()
    proc = subprocess.run(
        [sys.executable, "-c", SERVE, "--data", str(tmp_path / "qm"), "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert proc.returncode != 0
    assert "token" in proc.stderr


# ---------------------------------------------------------------------------- shutdown and stats


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"]
)
def test_sigterm_shuts_down_gracefully_without_loss(tmp_path: Path, sig: signal.Signals) -> None:
    srv = ServeProcess(tmp_path / "qm")
    try:
        qm = connect(srv.url)
        q = qm.create_queue(Q)
        q.send_many([Message(body=str(i).encode(), delivery=1) for i in range(200)])
        waiting = qm.queue(".\\private$\\q").subqueue("empty").receive_async(timeout=30)
        srv.proc.send_signal(sig)  # Ctrl-C, a closed terminal as well as SIGTERM: a clean stop, exit 0
        assert srv.proc.wait(30) == 0
        with pytest.raises(MSMQError):
            waiting.result()
    finally:
        srv.kill()
    again = ServeProcess(tmp_path / "qm")
    try:
        q2 = connect(again.url).queue(Q)
        assert q2.message_count == 200
        assert sorted(int(q2.receive(0).body) for _ in range(200)) == list(range(200))
        assert again.terminate() == 0
    finally:
        again.kill()


_HEAD = struct.Struct("<2sBBHHII")  # magic, version, type, op, flags, request id, length


def _raw_request(op: int, rid: int, payload: bytes) -> bytes:
    return _HEAD.pack(b"MQ", 1, FrameType.REQUEST, op, 0, rid, len(payload)) + payload


def _frames_read(data: bytes) -> list[tuple[int, int]]:
    """The (frame type, request id) of each whole frame in ``data``."""
    frames, i = [], 0
    while i + 16 <= len(data):
        _, _, kind, _, _, rid, length = _HEAD.unpack_from(data, i)
        if i + 16 + length > len(data):
            break
        frames.append((kind, rid))
        i += 16 + length
    return frames


def _read_to_end(sock: socket.socket, slowly: bool = False) -> tuple[bytes, OSError | None]:
    """Everything until the end of the stream, and the error that ended it instead (a reset);
    ``slowly``: a read a millisecond."""
    data = b""
    sock.settimeout(30)
    while True:
        try:
            if slowly:
                time.sleep(0.001)
            chunk = sock.recv(1 << 20)
        except OSError as exc:  # a reset: what the kernel held for this socket went with it
            return data, exc
        if not chunk:
            return data, None
        data += chunk


@pytest.mark.parametrize("sending", [False, True], ids=["quiet", "still-sending"])
def test_a_shutdown_lets_a_slow_reader_have_every_answer_then_the_goodbye(
    tmp_path: Path, sending: bool
) -> None:
    # Outside QA (2026-11-28): a client that had sent requests the server had not read yet (its
    # reading paused while answers waited for the client) was closed with a reset at a SIGTERM:
    # the answers already written and the GOODBYE were lost with it.  The server half-closes now
    # and reads, dropping it, what still comes until the client's end of stream; a stopping server
    # waits (within its grace) until its clients have received what it wrote (a second round: a
    # client still sending got a reset while the kernel held answers it had not acknowledged).
    srv = ServeProcess(tmp_path / "qm", "--event-loop", ThreadServer.default_loop)  # (each loop)
    try:
        q = connect(srv.url).create_queue(Q)
        q.send(Message(body=b"p" * 100_000, delivery=1))
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (before the connect: its window)
        sock.connect(("127.0.0.1", srv.port))
        sock.settimeout(30)
        conn = ClientConnection()
        sock.sendall(conn.send(ClientHello(client_name="slow reader")))
        while conn.server_hello is None:
            conn.receive_data(sock.recv(65536))
        handles = []
        for access in (0x20, 0x2):  # MQ_PEEK_ACCESS, MQ_SEND_ACCESS
            sock.sendall(conn.send(pm.OpenQueueRequest(Q, access, 0)))
            events: list[Any] = []
            while not events:
                events = conn.receive_data(sock.recv(65536))
            handles.append(events[0].response.handle)
        # 300 peeks answered 100 KB each: over what the server buffers for a client (4 MB, and
        # the kernel's), so it stops reading; then 500 sends of 2 KB: fewer than 1,024 requests.
        peek = pm.ReceiveRequest(handles[0], Action.MQ_ACTION_PEEK_CURRENT, 0).encode()
        packet = UserMessage.build(destination=None, body=b"s" * 2000, recoverable=True).encode()
        send = pm.SendRequest(handles[1], packet, None, ()).encode()
        requests = b"".join(_raw_request(Op.RECEIVE, rid, peek) for rid in range(1000, 1300))
        requests += b"".join(_raw_request(Op.SEND, rid, send) for rid in range(2000, 2500))
        sock.setblocking(False)
        written, until = 0, time.monotonic() + 10
        while written < len(requests) and time.monotonic() < until:
            try:
                written += sock.send(requests[written : written + 65536])
            except BlockingIOError:
                time.sleep(0.01)
        time.sleep(1)
        sock.setblocking(True)
        stop_pinging = threading.Event()

        def ping() -> None:
            frame = _raw_request(Op.PING, 9999, pm.PingRequest(b"p").encode())
            with contextlib.suppress(OSError):
                while not stop_pinging.wait(0.01):
                    sock.sendall(frame)

        pinger = threading.Thread(target=ping)
        if sending:
            pinger.start()
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        data, error = _read_to_end(sock, slowly=sending)
        stop_pinging.set()
        if sending:
            pinger.join(10)
        assert srv.proc.wait(30) == 0
    finally:
        srv.kill()
    assert error is None, f"the stream ended with {error!r} after {len(data)} bytes"
    frames = _frames_read(data)
    assert frames[-1][0] == FrameType.GOODBYE
    peeks = [rid for kind, rid in frames if kind == FrameType.RESPONSE and rid < 2000]
    sends = [rid for kind, rid in frames if kind == FrameType.RESPONSE and rid >= 2000]
    assert len(peeks) >= (4 << 20) // 100_000  # what the server wrote before it stopped reading
    assert len(sends) < 500, "the server read every request: make the peeks' answers larger"
    again = ServeProcess(tmp_path / "qm")
    try:
        stored = connect(again.url).queue(Q).message_count
    finally:
        again.kill()
    assert stored == 1 + len(sends)  # an answer for every send stored, none for one that was not


@pytest.mark.parametrize("hard", [256, 4096])
def test_a_file_limit_below_the_connection_limit_is_raised_or_warned_about(tmp_path: Path, hard: int) -> None:
    # Past the limit accepts failed and clients were cut off, with nothing in the log.  The soft
    # limit is raised up to the hard one; what is still short is said, with the connections held.
    def low_limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "--data", str(tmp_path / "qm"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        preexec_fn=low_limit,
    )
    try:
        assert proc.stdout is not None and "listening" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        if hard == 256:
            assert "may open 256 files (ulimit -n, hard limit 256), fewer than --max-connections 1024" in err
            assert "needs (2112): at most 192 connections at once" in err
        else:
            assert "ulimit -n" not in err  # raised to 2112
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sends_cut_by_a_shutdown_are_told_the_service_is_going_away(tmp_path: Path) -> None:
    # The server closed its clients' handles before the sends it had read were served: they were
    # answered MQ_ERROR_INVALID_HANDLE ("not open on this connection"), which retry logic takes for
    # a programming error.  A message has an id exactly when it was stored.
    srv = ServeProcess(tmp_path / "qm")
    messages = [Message(body=b"b" * 100, label=f"m{i}", delivery=1) for i in range(60_000)]
    outcome: list[BaseException | None] = []
    try:
        qm = connect(srv.url)
        q = qm.create_queue(Q)

        def send() -> None:
            try:
                q.send_many(messages)
                outcome.append(None)
            except MSMQError as exc:
                outcome.append(exc)

        sender = threading.Thread(target=send)
        sender.start()
        deadline = time.monotonic() + 30
        while messages[100].id is None and time.monotonic() < deadline:
            time.sleep(0.01)
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(30) == 0
        sender.join(30)
    finally:
        srv.kill()
    (error,) = outcome
    assert isinstance(error, MSMQError), "send_many ended before the shutdown: use more messages"
    assert error.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, error
    again = ServeProcess(tmp_path / "qm")
    try:
        stored = {m.label for m in connect(again.url).queue(Q).receive_many(60_000, timeout=1)}
        assert stored == {m.label for m in messages if m.id is not None}
    finally:
        again.kill()


def test_listings_and_statistics_show_only_what_an_identity_may_see(tmp_path: Path) -> None:
    # LIST_QUEUES and the server's STATS follow the queue rights as STATS of one queue does: a queue
    # with no right is not listed, its counters need MQSEC_GET_QUEUE_PROPERTIES.
    policy = AccessPolicy.from_json(
        json.dumps(
            {
                "owner": "admin",
                "tokens": {"admin-token": "admin", "sender-token": "sender"},
                "permissions": {
                    "sender": {
                        "private$\\q": ["MQSEC_WRITE_MESSAGE"],
                        "private$\\open": ["MQSEC_WRITE_MESSAGE", "MQSEC_GET_QUEUE_PROPERTIES"],
                    }
                },
            }
        )
    )
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, policy=policy)).start()
    try:
        admin = connect(s.url, token="admin-token")
        for name in (Q, ".\\private$\\open", ".\\private$\\secret"):
            admin.create_queue(name).send(Message(body=b"abc"))
        sender = connect(s.url, token="sender-token")
        listed = [p.lower().rpartition("\\")[2] for p in sender.private_queues]
        assert sorted(listed) == ["open", "q"]
        assert len(admin.private_queues) == 3
        t = sender._t
        answer = t.call(pm.ListQueuesRequest(1, (1, 7)))
        rows = {
            n.lower().rpartition("\\")[2]: dict(p)
            for n, p in zip(answer.names, answer.properties, strict=True)
        }
        assert set(rows) == {"open", "q"}
        assert rows["q"] == {}  # no MQSEC_GET_QUEUE_PROPERTIES: no counters
        assert rows["open"][7].value == 1
        assert [st.path_name.lower().rpartition("\\")[2] for st in sender.queue_statistics()] == ["open"]
        machine = dict(t.call(pm.StatsRequest("", (2,))).properties)
        assert sorted(p.lower().rpartition("\\")[2] for p in machine[2].value) == ["open", "q"]
        seen = sender.server_stats()["queues"]
        assert list(seen) == [admin.format_name(".\\private$\\open")]
        assert len(admin.server_stats()["queues"]) >= 3
        assert _hresult(lambda: sender.queue(Q).message_count) == HResult.MQ_ERROR_ACCESS_DENIED
        # The CLI's listings and stats show what the identity may read; they failed as a whole on
        # the first queue (or system queue) it had no right on.
        env = {"PYMSMQ_URL": s.url, "PYMSMQ_TOKEN": "sender-token", "PYMSMQ_DATA": None}
        for argv in (["queue", "list", "--all", "--json"], ["stats", "--json"]):
            result = CliRunner().invoke(cli_main, argv, env=env)
            assert result.exit_code == 0, result.output
            shown = json.loads(result.output)
            rows = shown if isinstance(shown, list) else shown["per_queue"]
            assert [r["path_name"].lower().rpartition("\\")[2] for r in rows] == ["open"]
    finally:
        s.stop()


def test_stats_count_per_queue(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    for _ in range(3):
        q.send(Message(body=b"abcd"))
    q.receive(0)
    stats = client.server_stats()
    entry = stats["queues"][q.format_name]
    assert (entry["sent"], entry["received"], entry["bytes_in"], entry["messages"]) == (3, 1, 12, 2)
    assert stats["connections"]["open"] >= 1 and stats["requests"] > 4


def test_idle_connections_are_closed_and_the_client_opens_another(tmp_path: Path) -> None:
    # The server ends a silent connection that holds nothing; the client's next call opens a new
    # one (outside QA: a long-lived connect() left alone failed every later call).  A connection
    # ended otherwise (a shutdown) is not replaced.
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, idle_timeout=0.5)).start()
    try:
        assert s.server is not None
        client = connect(s.url)
        client.create_queue(Q).close()
        time.sleep(2.5)
        assert len(s.server.sessions) == 0  # ended by the server
        assert not client.closed  # (the next call opens another)
        assert client.ping(b"late") == b"late"
        assert s.server.stats.connections_total == 2
        with client.queue(Q) as q:
            q.send(Message(body=b"after"))
            time.sleep(2.5)  # a handle: kept
            assert q.receive(timeout=0).body == b"after"
        assert s.server.stats.connections_total == 2
    finally:
        s.stop()
    with pytest.raises(MSMQError) as info:
        client.ping(b"gone")
    assert info.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    assert client.closed


def test_threads_calling_together_after_the_idle_timeout_all_go_on(tmp_path: Path) -> None:
    # The first calls of several threads after the server ended the connection idle failed with a
    # broken pipe when they wrote before the GOODBYE was read (outside QA: 65 of 300).
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, idle_timeout=0.5)).start()
    try:
        client = connect(s.url)
        failed: list[BaseException] = []
        for _ in range(3):
            time.sleep(2.2)  # ended idle

            def calls() -> None:
                try:
                    for _ in range(5):
                        assert client.ping(b"p") == b"p"
                        client.queue_exists(Q)
                except BaseException as exc:
                    failed.append(exc)

            threads = [threading.Thread(target=calls) for _ in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        assert failed == []
        client.close()
    finally:
        s.stop()


def test_a_connection_ended_idle_is_not_redialled_once_a_new_one_is_refused(tmp_path: Path) -> None:
    # A client whose idle connection went redialled at every later call once the server refused
    # it (a token revoked, the server gone), each dial counted as a failed login (outside QA).
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, idle_timeout=0.5)).start()
    client = connect(s.url)
    try:
        time.sleep(2.5)  # ended idle
        assert not client.closed
    finally:
        s.stop()
    for _ in range(2):
        with pytest.raises(MSMQError) as info:
            client.ping(b"x")
        assert info.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
        assert client.closed


@pytest.mark.parametrize("holding", ["transaction", "handle"])
def test_the_idle_timeout_leaves_a_connection_that_holds_something(tmp_path: Path, holding: str) -> None:
    # A consumer working longer than the idle timeout inside its transaction had it aborted and its
    # message given back (outside QA); a producer keeping a queue open was cut too.  A connection
    # with a handle, a cursor, an open transaction or a held message is kept (TCP keepalive finds
    # a peer that went away); one that holds nothing is still closed.
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, idle_timeout=0.5)).start()
    try:
        setup = connect(s.url)
        setup.create_queue(TQ, transactional=True).send(Message(body=b"job"), transaction=MQ_SINGLE_MESSAGE)
        setup.create_queue(Q)
        setup.close()
        client = connect(s.url)
        tx = None
        if holding == "transaction":
            with client.queue(TQ) as q:
                tx = client.begin_transaction()
                assert q.receive(timeout=5, transaction=tx).body == b"job"
        else:
            q = client.queue(Q)
        time.sleep(2.5)  # five idle timeouts
        assert client.ping(b"still") == b"still"
        if tx is not None:
            tx.commit()  # the work is done: the message is gone
            with client.queue(TQ) as q, pytest.raises(MSMQError) as info:
                q.receive(timeout=0)
            assert info.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
        else:
            q.send(Message(body=b"later"))  # the handle still works
        client.close()
    finally:
        s.stop()


def test_a_flood_of_garbage_connections_writes_a_bounded_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Without a token, each garbage connection wrote a WARNING line: 3,800 a second from one loop
    # (outside QA).  At most a budget of them a minute, then one line with the count.
    from pymsmq.server.log_budget import LogBudget

    s = ThreadServer(tmp_path / "qm").start()
    try:
        assert s.server is not None
        s.server.log_budget = LogBudget(per_window=5, window=60.0)
        with caplog.at_level(logging.INFO, logger="pymsmq.server"):
            for _ in range(30):
                with socket.create_connection(("127.0.0.1", s.port), timeout=5) as sock:
                    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    _goodbye_or_close(sock, 5)
            assert client_ping(s.url)
            lines = [r.getMessage() for r in caplog.records if "protocol error from" in r.getMessage()]
            assert len(lines) == 5
            s.server.loop.call_soon_threadsafe(s.server.log_budget.flush, time.monotonic() + 61)
            deadline = time.monotonic() + 5
            while (
                not any("left out" in r.getMessage() for r in caplog.records) and time.monotonic() < deadline
            ):
                time.sleep(0.05)
        told = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
        assert told == ["25 more lines of 'protocol error' left out in 60 s (at most 5 a window are written)"]
        assert s.server.stats.protocol_errors == 30  # counted all the same
    finally:
        s.stop()


def client_ping(url: str) -> bool:
    with connect(url) as c:
        return c.ping(b"ok") == b"ok"


def test_connections_past_the_session_cap_are_refused_and_the_others_served(tmp_path: Path) -> None:
    # The cap fit_descriptors sets when the process may open too few files for --max-connections.
    s = ThreadServer(tmp_path / "qm").start()
    try:
        assert s.server is not None
        s.server.session_cap = 2
        first, second = connect(s.url), connect(s.url)
        with pytest.raises(MSMQError) as info:
            connect(s.url)
        assert info.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
        assert "too many connections" in str(info.value)
        assert first.ping(b"a") == b"a" and second.ping(b"b") == b"b"
        first.close()
        deadline = time.monotonic() + 5
        while len(s.server.sessions) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client_ping(s.url)
        second.close()
    finally:
        s.stop()


def _goodbye_or_close(sock: socket.socket, within: float) -> bytes:
    """What the server sends before it closes ``sock`` (``within`` seconds at most), GOODBYE included."""
    sock.settimeout(within)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return got


def test_a_peer_that_never_says_hello_is_closed_after_the_slow_timeout(tmp_path: Path) -> None:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, slow_timeout=0.5)).start()
    try:
        silent = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        started = time.monotonic()
        farewell = _goodbye_or_close(silent, 10)
        assert time.monotonic() - started < 5  # closed by the housekeeping, not by our timeout
        assert "handshake timeout".encode("utf-16-le") in farewell  # the GOODBYE's reason, and its
        assert HResult.MQ_ERROR_IO_TIMEOUT.to_bytes(4, "little") in farewell  # HRESULT
        assert connect(s.url).ping(b"ok") == b"ok"
    finally:
        s.stop()


def test_a_short_idle_timeout_does_not_cut_a_handshake_or_a_frame_early(tmp_path: Path) -> None:
    # docs/protocol.md 11: the handshake and a frame have their own 10 s clock (here 3 s), with
    # MQ_ERROR_IO_TIMEOUT; the idle timeout (0.5 s) is for a connection with nothing under way.
    config = ServerConfig(port=0, slow_timeout=3.0, idle_timeout=0.5)
    s = ThreadServer(tmp_path / "qm", config).start()
    try:
        silent = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        half = _hello_socket(s.port)
        half.sendall(b"MQ\x01\x03\x01\x00\x00\x00\x01\x00\x00\x00")  # 12 of the 16 header bytes
        started = time.monotonic()
        farewells = [_goodbye_or_close(sock, 10) for sock in (silent, half)]
        assert time.monotonic() - started > 2.5  # not cut by the 0.5 s idle clock
        assert "handshake timeout".encode("utf-16-le") in farewells[0]
        assert "slow sender".encode("utf-16-le") in farewells[1]
        for farewell in farewells:
            assert HResult.MQ_ERROR_IO_TIMEOUT.to_bytes(4, "little") in farewell
    finally:
        s.stop()


def test_a_frame_left_unfinished_is_closed_after_the_slow_timeout(tmp_path: Path) -> None:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, slow_timeout=0.5, idle_timeout=60)).start()
    try:
        slow = _hello_socket(s.port)
        slow.sendall(b"MQ\x01\x03\x01\x00\x00\x00\x01\x00\x00\x00")  # 12 of the 16 header bytes
        started = time.monotonic()
        farewell = _goodbye_or_close(slow, 10)
        assert time.monotonic() - started < 5
        assert "slow sender".encode("utf-16-le") in farewell
        assert HResult.MQ_ERROR_IO_TIMEOUT.to_bytes(4, "little") in farewell
        # A client that is merely quiet (nothing half-sent) is not a slow sender.
        quiet = connect(s.url)
        time.sleep(2)
        assert quiet.ping(b"still here") == b"still here"
    finally:
        s.stop()


def test_sockets_that_never_say_hello_do_not_keep_clients_out(tmp_path: Path) -> None:
    # Idle sockets counted against --max-connections until the handshake timeout dropped them:
    # an unauthenticated peer reopening them kept every client with a token out.  Connections
    # that have not said hello have a budget of their own; past it, the oldest of them goes.
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, max_connections=2)).start()
    try:
        silent = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(5)]
        client = connect(s.url)
        assert client.ping(b"in") == b"in"
        assert s.server is not None
        deadline = time.monotonic() + 10
        while len(s.server.unauthenticated) > 2:  # at most the budget of them stay
            assert time.monotonic() < deadline, len(s.server.unauthenticated)
            time.sleep(0.01)
        assert all(_closed_by_server(sock) for sock in silent[:3])  # the oldest silent ones went
        second = connect(s.url)
        with pytest.raises(MSMQError) as info:  # the limit still holds for authenticated ones
            connect(s.url)
        assert info.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
        for sock in silent:
            sock.close()
        second.close()
        client.close()
    finally:
        s.stop()


def test_connection_limit(tmp_path: Path) -> None:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, max_connections=1)).start()
    try:
        first = connect(s.url)
        with pytest.raises(MSMQError) as info:
            connect(s.url)
        assert info.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
        assert first.ping(b"1") == b"1"
    finally:
        s.stop()


def test_a_process_with_few_files_serves_what_it_can_and_refuses_the_rest(tmp_path: Path) -> None:
    # ulimit -n 100 under the default --max-connections 1024: accepts failed past the limit (uvloop
    # closed new clients with nothing logged, a metrics scrape spun a CPU; asyncio logged a
    # traceback per try).  The server now holds at most 100 - 64 connections and refuses the next.
    limit = (
        "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (100, 100));"
        " os.execv(sys.argv[1], sys.argv[1:])"
    )
    srv = ServeProcess(tmp_path / "qm", wrap=lambda argv: [sys.executable, "-c", limit, *argv])
    clients = []
    refused = 0
    try:
        for _ in range(45):
            try:
                clients.append(connect(srv.url))
            except MSMQError as exc:
                assert exc.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES, exc
                refused += 1
        assert len(clients) == 36 and refused == 9
        assert all(c.ping(b"x") == b"x" for c in clients)  # every one it holds is served
        for c in clients[:5]:
            c.close()
        time.sleep(0.3)
        assert client_ping(srv.url)
    finally:
        for c in clients:
            c.close()
        code = srv.terminate()
        assert srv.proc.stderr is not None
        err = srv.proc.stderr.read()
    assert code == 0
    assert "at most 36 connections at once" in err
    assert "Traceback" not in err


def test_a_stop_asked_while_the_store_opens_is_a_clean_stop(tmp_path: Path) -> None:
    # SIGTERM while a large store opens (seconds) killed the process: exit 143, nothing logged
    # (outside QA).  The handlers are there before the open; the server stops once it is open.
    slow_open = (
        "import time; from pymsmq.qm.queue_manager import QueueManager as Q; real = Q.open.__func__;"
        " Q.open = classmethod(lambda cls, *a, **k: (time.sleep(2), real(cls, *a, **k))[1]);"
        " from pymsmq.cli.serve import serve; serve()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", slow_open, "--data", str(tmp_path / "qm"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        time.sleep(1.0)  # (inside the two-second open)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert "shutting down" in err and "stopped" in err
    finally:
        if proc.poll() is None:
            proc.kill()
