"""A peer that is not a pymsmq server: ``connect`` fails at once with one clear MSMQError."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from pymsmq import MSMQError, connect
from pymsmq.hresult import HResult


def _one_shot_server(reply: bytes) -> int:
    # Accept one connection, read the CLIENT_HELLO, answer ``reply`` and close.
    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(reply)
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(srv.getsockname()[1])


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "frame magic b'HT' is not b'MQ'"),
        (b"MQ\x01\x02" + b"\xff" * 12, "reserved bits MUST be 0"),
        (b"", "closed the connection"),
    ],
    ids=["http", "bad-flags", "closed"],
)
def test_a_peer_that_is_not_a_server(reply: bytes, says: str) -> None:
    port = _one_shot_server(reply)
    with pytest.raises(MSMQError) as e:
        connect(f"msmq://127.0.0.1:{port}", timeout=5)
    assert e.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    assert says in str(e.value)
    assert str(e.value).count("0xC00E") == 1  # one code, not the inner error's too


def test_a_server_that_resets_each_connection_as_it_is_made() -> None:
    # A server restarting (or with a full backlog) resets connections at once: the reset can come
    # before the CLIENT_HELLO is written, as it is read, or before TCP_NODELAY is set; each is the
    # same MSMQError, never a raw ConnectionResetError or BrokenPipeError (about 1 in 300 before).
    srv = socket.create_server(("127.0.0.1", 0), backlog=512)
    port = int(srv.getsockname()[1])

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # RST

    threading.Thread(target=serve, daemon=True).start()
    try:
        for _ in range(600):
            with pytest.raises(MSMQError) as e:
                connect(f"msmq://127.0.0.1:{port}", timeout=5)
            assert e.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    finally:
        srv.close()
