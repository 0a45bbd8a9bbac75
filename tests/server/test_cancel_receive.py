"""CANCEL_RECEIVE ([MS-MQRR] 3.1.4.8 R_CancelReceive, [MS-MQDMPR] 3.1.7.1.17): a RECEIVE or
RECEIVE_MANY that waits for a message stops waiting and is answered MQ_ERROR_OPERATION_CANCELLED,
so it takes no message that arrives later; and the client cancels the wait of a call interrupted
while it waits (before, such a receive took the next message for nobody: an express one was lost)."""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _interrupt import interrupt_next_read
from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)

from pymsmq import Message
from pymsmq.client import connect
from pymsmq.client.many import GiveBack
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.protocol import Action, ErrorResponse, hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.batch_ops import ReceiveManyRequest
from pymsmq.protocol.codes import ManyFlags, ReceiveFlags
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS

Q = r".\private$\cancel"
_WANTED = ObjectId(uuid.UUID(int=7), 7)
TQ = r".\private$\cancel-tx"


@pytest.fixture
def client(server: ThreadServer) -> Iterator[Any]:
    qm = connect(server.url)
    qm.create_queue(Q).close()
    qm.create_queue(TQ, transactional=True).close()
    yield qm
    qm.close()


def _waiting(server: ThreadServer, timeout: float = 5.0) -> int:
    """How many reads CANCEL_RECEIVE could stop, over every connection (polled until one waits)."""
    deadline = time.monotonic() + timeout
    while True:
        n = sum(len(s.cancels) for s in list(server.server.sessions))  # type: ignore[union-attr]
        if n or time.monotonic() > deadline:
            return n
        time.sleep(0.01)


def _receive_request(handle: int, cursor: int = 0, xact: object = None, flags: int = 0) -> pm.Request:
    action = int(Action.MQ_ACTION_RECEIVE)
    return hot.receive_request(handle, action, 60_000, cursor, 0, xact, CLIENT_RECEIVE_PROPIDS, flags)


def _cancel_and_check(server: ThreadServer, client: Any, q: Any, rid: int, then_send_to: Any) -> None:
    t = client._t
    assert _waiting(server) >= 1
    assert t.call(pm.CancelReceiveRequest(q._handle, rid)) == pm.CancelReceiveResponse()
    answer = t.wait(rid)
    assert type(answer) is ErrorResponse and answer.hresult == HResult.MQ_ERROR_OPERATION_CANCELLED
    assert _waiting(server, 0) == 0
    # The cancelled read takes nothing that comes later.
    then_send_to.send(Message(body=b"later", delivery=1))
    assert q.peek(timeout=5).body == b"later"


def test_a_waiting_head_receive_is_cancelled(server: ThreadServer, client: Any) -> None:
    q = client.queue(Q)
    rid = client._t.send(_receive_request(q._handle, flags=int(ReceiveFlags.CONFIRM)))
    _cancel_and_check(server, client, q, rid, q)


def test_a_waiting_cursor_receive_is_cancelled(server: ThreadServer, client: Any) -> None:
    q = client.queue(Q)
    cursor = q.cursor()
    rid = client._t.send(_receive_request(q._handle, cursor=cursor._cursor_id()))
    _cancel_and_check(server, client, q, rid, q)


def test_a_waiting_transactional_receive_is_cancelled(server: ThreadServer, client: Any) -> None:
    q = client.queue(TQ)
    tx = client.begin_transaction()
    rid = client._t.send(_receive_request(q._handle, xact=tx.id))
    assert _waiting(server) >= 1
    assert client._t.call(pm.CancelReceiveRequest(q._handle, rid)) == pm.CancelReceiveResponse()
    answer = client._t.wait(rid)
    assert type(answer) is ErrorResponse and answer.hresult == HResult.MQ_ERROR_OPERATION_CANCELLED
    with client.begin_transaction() as other:
        q.send(Message(body=b"later"), transaction=other)
    tx.commit()  # the cancelled receive took nothing: committing removes nothing
    assert q.receive(timeout=5).body == b"later"


def test_a_waiting_receive_many_is_cancelled(server: ThreadServer, client: Any) -> None:
    q = client.queue(Q)
    request = ReceiveManyRequest(q._handle, 10, 60_000, int(ManyFlags.CONFIRM), None, CLIENT_RECEIVE_PROPIDS)
    rid = client._t.send(request)
    _cancel_and_check(server, client, q, rid, q)


def test_a_cancel_that_names_no_waiting_read(server: ThreadServer, client: Any) -> None:
    q = client.queue(Q)
    other = client.queue(Q)
    t = client._t
    rid = t.send(_receive_request(q._handle))
    assert _waiting(server) == 1
    # STATUS_NOT_FOUND: no such request, or one of another handle ([MS-MQDMPR] 3.1.7.1.17).
    for handle, request_id in ((q._handle, rid + 1000), (other._handle, rid)):
        answer = t.wait(t.send(pm.CancelReceiveRequest(handle, request_id)))
        assert type(answer) is ErrorResponse and answer.hresult == HResult.STATUS_NOT_FOUND
    # A handle not open: MQ_ERROR_INVALID_HANDLE ([MS-MQRR] 3.1.4.8: "MUST NOT have been closed").
    answer = t.wait(t.send(pm.CancelReceiveRequest(9999, rid)))
    assert type(answer) is ErrorResponse and answer.hresult == HResult.MQ_ERROR_INVALID_HANDLE
    # The read still waits, and gets the message.
    q.send(Message(body=b"m", delivery=1))
    answer = t.wait(rid)
    assert type(answer) is pm.ReceiveResponse
    # Answered: nothing left to cancel.
    answer = t.wait(t.send(pm.CancelReceiveRequest(q._handle, rid)))
    assert type(answer) is ErrorResponse and answer.hresult == HResult.STATUS_NOT_FOUND


@pytest.mark.parametrize("how", ["receive", "cursor", "receive_many", "receive_by_correlation_id"])
@pytest.mark.parametrize("delivery", [0, 1])
def test_an_interrupted_waiting_receive_takes_no_later_message(
    server: ThreadServer, client: Any, monkeypatch: pytest.MonkeyPatch, how: str, delivery: int
) -> None:
    q = client.queue(Q)
    cursor = q.cursor()
    cursor._cursor_id()  # the cursor exists on the server before the interrupted call
    interrupt_next_read(client._t, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        if how == "receive":
            q.receive(timeout=60)
        elif how == "cursor":
            cursor.receive_current(timeout=60)
        elif how == "receive_many":
            q.receive_many(10, timeout=60)
        else:
            q.receive_by_correlation_id(_WANTED, timeout=60)
    deadline = time.monotonic() + 10
    while _waiting(server, 0) and time.monotonic() < deadline:  # the CANCEL_RECEIVE is on its way
        time.sleep(0.01)
    assert _waiting(server, 0) == 0
    sender = connect(server.url)
    sender.queue(Q).send(Message(body=b"after the interrupt", delivery=delivery, correlation_id=_WANTED))
    # Express or recoverable, the message is not taken by the interrupted receive: it is there.
    assert sender.queue(Q).receive(timeout=5).body == b"after the interrupt"
    sender.close()
    assert client.ping(b"still fine") == b"still fine"
    assert not client._t._done


def test_no_cancel_is_written_to_a_version_1_server(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    t = client._t
    written: list[object] = []
    monkeypatch.setattr(t, "send_many", lambda requests: written.extend(requests) or [])
    waiting = GiveBack(t, 1, waits=True)
    monkeypatch.setattr(t, "server_hello", dataclasses.replace(t.server_hello, version=1))
    waiting.interrupted(7)
    assert written == []  # CANCEL_RECEIVE is not an op of version 1
    monkeypatch.setattr(t, "server_hello", dataclasses.replace(t.server_hello, version=2))
    GiveBack(t, 1, waits=False).interrupted(7)
    assert written == []  # a read that does not wait has nothing to cancel
    waiting.interrupted(7)
    assert written == [pm.CancelReceiveRequest(1, 7)]
