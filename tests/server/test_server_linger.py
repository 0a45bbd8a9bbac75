"""How the server closes a connection (``Session._linger``): a half-close, then reading and
dropping what still comes until the client's end of stream, ``LINGER_SECONDS`` at most, for at most
``LINGERING_LIMIT`` connections at once; a connection already gone is let go without an error."""

from __future__ import annotations

import asyncio
import socket
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)

from pymsmq.hresult import HResult
from pymsmq.protocol import ClientConnection, ClientHello
from pymsmq.server import session as session_module
from pymsmq.server.session import Session


def _hello(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn = ClientConnection()
    sock.sendall(conn.send(ClientHello(client_name="linger")))
    while conn.server_hello is None:
        conn.receive_data(sock.recv(65536))
    return sock


def _on_loop(server: ThreadServer, fn: Callable[[], Any]) -> Any:
    async def call() -> Any:
        return fn()

    return asyncio.run_coroutine_threadsafe(call(), server.loop).result(10)


def _sessions(server: ThreadServer, count: int) -> list[Session]:
    assert server.server is not None
    until = time.monotonic() + 10
    while len(server.server.sessions) < count and time.monotonic() < until:
        time.sleep(0.01)
    return list(server.server.sessions)


def _goodbye_all(server: ThreadServer) -> None:
    assert server.server is not None
    for s in list(server.server.sessions):
        s.goodbye(HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, "test")


def _ends_with_goodbye(sock: socket.socket) -> bool:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return len(data) >= 16 and data[3] == 6  # (the only frame after the handshake: GOODBYE)


@pytest.fixture
def server(tmp_path: Path) -> Any:
    srv = ThreadServer(tmp_path / "qm").start()
    errors: list[dict[str, Any]] = []
    srv.loop.call_soon_threadsafe(srv.loop.set_exception_handler, lambda _loop, ctx: errors.append(ctx))
    yield srv, errors
    srv.stop()


def test_a_goodbye_to_a_connection_reset_unnoticed_raises_nothing(server: Any) -> None:
    # The GOODBYE's write fails (the peer reset the connection while its reading was paused, so
    # the loop had not seen it): uvloop then refused the half-close with a RuntimeError, out of
    # ``goodbye`` (a shutdown stopped there).
    srv, errors = server
    sock = _hello(srv.port)
    (session,) = _sessions(srv, 1)
    _on_loop(srv, lambda: session.transport.pause_reading())
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # a reset
    time.sleep(0.3)
    assert not session.closed  # (not seen: its reading is paused)
    _on_loop(srv, lambda: session.goodbye(HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, "test"))
    time.sleep(0.3)
    assert session.closed and session.transport is None
    assert srv.server.lingering == {}
    assert errors == []


def test_clients_read_the_goodbye_and_their_connections_end_with_theirs(server: Any) -> None:
    srv, errors = server
    socks = [_hello(srv.port) for _ in range(3)]
    _sessions(srv, 3)
    _on_loop(srv, lambda: _goodbye_all(srv))
    assert len(srv.server.lingering) == 3  # half-closed, read until the clients' ends
    assert all(_ends_with_goodbye(s) for s in socks)
    for s in socks:
        s.close()
    until = time.monotonic() + 5
    while srv.server.lingering and time.monotonic() < until:
        time.sleep(0.01)
    assert srv.server.lingering == {}
    assert errors == []


def test_at_most_so_many_connections_linger_and_each_for_so_long(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv, errors = server
    monkeypatch.setattr(session_module, "LINGERING_LIMIT", 2)
    monkeypatch.setattr(session_module, "LINGER_SECONDS", 0.5)
    socks = [_hello(srv.port) for _ in range(4)]
    _sessions(srv, 4)
    _on_loop(srv, lambda: _goodbye_all(srv))
    assert len(srv.server.lingering) == 2  # the others closed at once
    assert all(_ends_with_goodbye(s) for s in socks)  # each client reads its GOODBYE all the same
    time.sleep(1.0)  # the clients never close: the server lets go after LINGER_SECONDS
    assert srv.server.lingering == {}
    for s in socks:
        s.close()
    assert errors == []


def test_a_connection_refused_over_the_descriptor_cap_does_not_linger(server: Any) -> None:
    # Outside QA: refusals lingered, holding the descriptors the cap keeps spare; under a flood
    # of connections the process ran out of them and asyncio's accept loop spun.
    srv, errors = server
    _on_loop(srv, lambda: setattr(srv.server, "session_cap", 2))
    held = [_hello(srv.port) for _ in range(2)]
    refused = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    data = b""
    while chunk := refused.recv(65536):
        data += chunk
    assert data[3] == 6 and struct.unpack_from("<I", data, 16)[0] == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    assert srv.server.lingering == {}
    # A connection the server closed gives its descriptor to a new one (the cap counts both).
    _on_loop(srv, lambda: min(srv.server.sessions, key=id).goodbye(HResult.S_OK, "test"))
    assert len(srv.server.lingering) == 1
    admitted = _hello(srv.port)  # (SERVER_HELLO, not a GOODBYE)
    assert srv.server.lingering == {} and len(srv.server.sessions) == 2
    for s in [*held, refused, admitted]:
        s.close()
    assert errors == []
