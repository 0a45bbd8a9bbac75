"""Mutated client streams against a real server: every one is handled, none escapes the event loop.

Each connection sends the bytes of a real session (CLIENT_HELLO, then requests of most kinds: queues,
sends, receives, two-phase receives and END_RECEIVE, cursors, moves, transactions, range reads,
properties) with a few bytes changed and
maybe cut short, either all at once or after a proper handshake, then ends its stream.
The server must deal with each (answer, refuse, or close that connection), report nothing unhandled
to its event loop, and keep serving a well-behaved client throughout.
"""

from __future__ import annotations

import logging
import random
import socket
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)

from pymsmq import Message
from pymsmq.client import connect
from pymsmq.protocol import ClientConnection, ClientHello, ServerConnection, ServerHello, hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.batch_ops import ReceiveManyRequest
from pymsmq.protocol.codes import RR_ACK, RR_NACK, ManyFlags, RangeFlags, ReceiveFlags
from pymsmq.protocol.fast_packet import encode_plain

Q = r".\private$\fuzz"
CONNECTIONS = 150


def _session_bytes() -> tuple[bytes, bytes]:
    """(CLIENT_HELLO, then requests of most kinds) as a client writes them."""
    client = ClientConnection()
    hello = client.send(ClientHello(client_name="fuzz"))
    peer = ServerConnection()
    peer.receive_data(hello)
    client.receive_data(peer.send(ServerHello(qm_guid=uuid.uuid4(), machine_name="fuzz")))
    packet = encode_plain(Message(body=b"fuzz", delivery=1))
    assert packet is not None
    xact = uuid.UUID(int=7)
    requests: list[pm.Request] = [
        pm.CreateQueueRequest(Q + "2"),
        pm.OpenQueueRequest(Q, 2),  # handle 1: send
        pm.OpenQueueRequest(Q, 1),  # handle 2: receive
        pm.BeginTransactionRequest(),  # its id is the server's: xact below is unknown to it
        hot.send_request(1, packet, None),
        hot.send_request(1, packet, xact),
        pm.ReceiveRequest(2, action=0x80000000, request_timeout=0),  # peek current
        pm.ReceiveRequest(2, request_timeout=0, transaction=xact),
        pm.CreateCursorRequest(2),
        pm.ReceiveRequest(2, action=0x80000001, request_timeout=0, cursor=1),  # peek next
        pm.MoveRequest(2, 1, "poison"),
        pm.ReadRangeRequest(2),
        ReceiveManyRequest(2, max_count=5, request_timeout=0),
        # Two-phase receives (held messages) and their acknowledgements, right and wrong.
        hot.send_request(1, packet, None),
        pm.ReceiveRequest(2, request_timeout=0, flags=int(ReceiveFlags.CONFIRM)),
        hot.send_request(1, packet, None),
        ReceiveManyRequest(2, max_count=5, request_timeout=0, flags=int(ManyFlags.CONFIRM)),
        hot.send_request(1, packet, None),
        pm.ReadRangeRequest(2, flags=int(RangeFlags.RECEIVE | RangeFlags.CONFIRM)),
        pm.EndReceiveRequest(2, 1, RR_ACK),
        pm.EndReceiveRequest(2, 2, RR_NACK),
        pm.EndReceiveRequest(2, 3, 9),
        ReceiveManyRequest(2, max_count=5, request_timeout=200, flags=int(ManyFlags.CONFIRM)),
        pm.CancelReceiveRequest(2, 12),  # (the request id of the waiting RECEIVE_MANY above)
        pm.CancelReceiveRequest(2, 999),
        pm.GetQueuePropertiesRequest(Q),
        pm.SetQueuePropertiesRequest(Q),
        pm.CommitTransactionRequest(xact),
        pm.AbortTransactionRequest(xact),
        pm.PurgeQueueRequest(2),
        pm.CloseCursorRequest(1),
        pm.CloseQueueRequest(1),
        pm.StatsRequest(),
        pm.ListQueuesRequest(),
        pm.DeleteQueueRequest(Q + "2"),
    ]
    return hello, b"".join(client.send_request(r)[1] for r in requests)


def _drain(sock: socket.socket) -> None:
    try:
        while sock.recv(65536):
            pass
    except OSError:  # reset, or no answer in time
        pass


def test_mutated_streams_are_handled_and_others_keep_working(
    server: ThreadServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pymsmq")
    uncaught: list[dict[str, Any]] = []
    server.loop.set_exception_handler(lambda _loop, context: uncaught.append(context))
    good = connect(server.url)
    q = good.create_queue(Q)
    hello, frames = _session_bytes()
    rng = random.Random(20261125)
    for n in range(CONNECTIONS):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=2)
        try:
            if rng.random() < 0.5:  # a proper handshake first, then mutated requests
                sock.sendall(hello)
                assert sock.recv(65536)  # SERVER_HELLO
                data = bytearray(frames)
            else:
                data = bytearray(hello + frames)
            for _ in range(rng.randint(1, 6)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            if rng.random() < 0.3:
                data = data[: rng.randrange(len(data))]
            sock.sendall(bytes(data))
            sock.shutdown(socket.SHUT_WR)  # the stream ends here, maybe inside a frame
            _drain(sock)
        finally:
            sock.close()
        if n % 25 == 0:
            q.send(Message(body=b"probe %d" % n))
            assert b"probe %d" % n in [m.body for m in q.receive_many(1000)]
    assert uncaught == []
    # Refusals and protocol errors are warnings; an ERROR would be an internal error (an exception
    # that is not an MSMQError escaping a request handler).
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert good.ping(b"still here") == b"still here"
    assert server.server is not None and server.server.stats.protocol_errors > 0
