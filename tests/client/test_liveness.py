"""A server that stops answering: calls fail after about twice the connect timeout instead of
hanging (the transport's watchdog, ``pymsmq.client.transport``), and a live server kept waiting is
not taken for dead (its PING answers keep the connection)."""

from __future__ import annotations

import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pymsmq import HResult, Message, MSMQError
from pymsmq.client import connect

sys.path.insert(0, str(Path(__file__).parent))
from _pymsmq_server import ThreadServer

Q = r".\private$\live"


class FreezableProxy:
    """A TCP proxy in front of a server that can stop passing bytes (a frozen server, a network
    path that drops everything) without closing anything."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.frozen = threading.Event()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        client, _ = self._listener.accept()
        server = socket.create_connection(("127.0.0.1", self.target_port))
        peers = {client: server, server: client}
        while not self._stop.is_set():
            if self.frozen.is_set():
                time.sleep(0.02)
                continue
            ready, _, _ = select.select(list(peers), [], [], 0.02)
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                peers[s].sendall(data)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._listener.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadServer]:
    srv = ThreadServer(tmp_path / "qm").start()
    yield srv
    srv.stop()


def test_a_call_on_a_server_that_stopped_answering_fails_instead_of_hanging(server: ThreadServer) -> None:
    with connect(server.url) as admin:
        admin.create_queue(Q)
    proxy = FreezableProxy(server.port)
    qm = connect(f"msmq://127.0.0.1:{proxy.port}", timeout=0.5)
    try:
        q = qm.queue(Q)
        q.send(Message(body=b"before"))
        proxy.frozen.set()
        started = time.monotonic()
        with pytest.raises(MSMQError) as lost:
            q.receive(timeout=60)  # waited for the answer forever
        waited = time.monotonic() - started
        assert lost.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
        assert "the server sent nothing for" in str(lost.value)
        assert waited < 10
        with pytest.raises(MSMQError) as again:  # the connection is gone for every call
            q.peek(0)
        assert again.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    finally:
        qm.close()
        proxy.close()


def test_a_live_server_keeping_a_receive_waiting_is_not_taken_for_dead(server: ThreadServer) -> None:
    qm = connect(server.url, timeout=0.3)
    try:
        q = qm.create_queue(Q)
        started = time.monotonic()
        with pytest.raises(MSMQError) as waited:
            q.receive(timeout=2.5)  # eight liveness periods without a message
        assert waited.value.hresult == HResult.MQ_ERROR_IO_TIMEOUT
        assert time.monotonic() - started >= 2.4
        q.send(Message(body=b"still here"))
        assert q.receive(timeout=1).body == b"still here"
    finally:
        qm.close()


def test_the_main_thread_reads_and_dispatches_with_signals_held(server: ThreadServer) -> None:
    # A signal handler raising (Ctrl-C) after recv_into returned and before the bytes were parsed
    # dropped them: protocol errors, or a call waiting for the rest of a frame forever.  The bytes
    # are now read and dispatched with the signals held; the wait before the read stays open to them.
    qm = connect(server.url)
    try:
        q = qm.create_queue(Q)
        conn = q._t._conn
        seen: list[set[int]] = []
        receive_data = conn.receive_data

        def checking(data: bytes) -> Any:
            seen.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))
            return receive_data(data)

        conn.receive_data = checking  # type: ignore[method-assign]
        q.send_many([Message(body=b"x" * 70_000) for _ in range(3)])  # answers span many reads
        assert len(q.receive_many(3, timeout=1)) == 3
        assert seen and all(signal.SIGINT in mask for mask in seen)
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # given back
    finally:
        qm.close()


def test_interrupts_while_large_answers_arrive_lose_no_bytes(server: ThreadServer) -> None:
    class Interrupt(BaseException):
        pass

    armed = [False]

    def raising(signum: int, frame: object) -> None:
        if armed[0]:  # only inside the client call, not in the test's own lines
            armed[0] = False
            raise Interrupt

    qm = connect(server.url)
    previous = signal.signal(signal.SIGINT, raising)  # Ctrl-C, raising as KeyboardInterrupt does
    stop = threading.Event()
    main = threading.main_thread().ident
    assert main is not None

    def interrupter() -> None:
        while not stop.is_set():
            time.sleep(0.002)
            signal.pthread_kill(main, signal.SIGINT)

    try:
        q = qm.create_queue(Q)
        with connect(server.url) as producer:
            producer.queue(Q).send_many([Message(body=b"%d" % i + b"x" * 60_000) for i in range(300)])
        thread = threading.Thread(target=interrupter)
        thread.start()
        deadline = time.monotonic() + 4
        interrupts = 0
        try:
            while time.monotonic() < deadline:
                try:
                    armed[0] = True
                    q.peek(timeout=0)  # a 60 KB answer read in pieces, over and over
                    armed[0] = False
                except Interrupt:
                    interrupts += 1
        finally:
            stop.set()
            thread.join()
        assert interrupts > 10
        assert qm.ping(b"still in step") == b"still in step"  # no protocol error, no desync
        assert q.message_count == 300
    finally:
        signal.signal(signal.SIGINT, previous)
        qm.close()


def test_close_wakes_a_call_blocked_on_a_frozen_server(server: ThreadServer) -> None:
    with connect(server.url) as admin:
        admin.create_queue(Q)
    proxy = FreezableProxy(server.port)
    qm = connect(f"msmq://127.0.0.1:{proxy.port}", timeout=None)  # no liveness check
    outcome: list[BaseException] = []

    def waiting() -> None:
        try:
            qm.queue(Q).receive(timeout=60)
        except BaseException as exc:
            outcome.append(exc)

    try:
        proxy.frozen.set()
        thread = threading.Thread(target=waiting)
        thread.start()
        time.sleep(0.3)
        started = time.monotonic()
        qm.close()  # was: the reader stayed blocked on the socket for good
        thread.join(5)
        assert not thread.is_alive() and time.monotonic() - started < 5
        (error,) = outcome
        assert isinstance(error, MSMQError) and error.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    finally:
        proxy.close()


def test_many_waiting_async_receives_do_not_hold_up_another(server: ThreadServer) -> None:
    # Each remote receive_async waited in the loop's default executor (6 threads here): with 8
    # waiting, a receive on a queue that had a message did not finish in 10 s.
    import asyncio

    with connect(server.url) as qm:
        empty = qm.create_queue(Q)
        full = qm.create_queue(r".\private$\full")
        full.send(Message(body=b"here"))

        async def wait_on_empty() -> Message:
            return await empty.receive_async(timeout=8)

        async def main() -> tuple[bytes, float]:
            waiters = [asyncio.create_task(wait_on_empty()) for _ in range(12)]
            await asyncio.sleep(0.3)
            started = time.monotonic()
            got = await asyncio.wait_for(full.receive_async(timeout=5), 4)
            took = time.monotonic() - started
            for w in waiters:
                w.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
            return got.body, took

        body, took = asyncio.run(main())
        assert body == b"here" and took < 3
