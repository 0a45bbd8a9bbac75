"""A server that stops answering: calls fail after about twice the connect timeout instead of
hanging (the transport's watchdog, ``pymsmq.client.transport``), and a live server kept waiting is
not taken for dead (its PING answers keep the connection)."""

from __future__ import annotations

import select
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

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
