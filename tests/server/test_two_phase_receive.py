"""Two-phase receives ([MS-MQRR] 3.1.4.9 R_EndReceive): a recoverable message is not lost in transit.

A RECEIVE with ReceiveFlags.CONFIRM outside a transaction holds a recoverable message until
END_RECEIVE: RR_ACK removes it, RR_NACK puts it back, a connection that closes first gives it back,
and a server that dies first still has it.  The pymsmq client asks for it on every receive outside
a transaction and acknowledges before ``receive`` returns.  Real ``pymsmq serve`` processes.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _serve_process import ServeProcess, env, serving

from pymsmq import Message, MSMQError
from pymsmq.client import connect
from pymsmq.client.remote_transaction import _receive_xact
from pymsmq.hresult import HResult
from pymsmq.protocol import hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import RR_ACK, RR_NACK, Action, ReceiveFlags
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS, decode_message, is_held

Q = r".\private$\two-phase"
RECEIVE = int(Action.MQ_ACTION_RECEIVE)
CONFIRM = int(ReceiveFlags.CONFIRM)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    with serving(tmp_path / "qm") as srv:
        yield srv


def _raw_receive(q: Any, flags: int = CONFIRM) -> pm.ReceiveResponse:
    """One RECEIVE as a client that speaks the protocol itself (no END_RECEIVE of its own)."""
    request = hot.receive_request(q._handle, RECEIVE, 0, 0, 0, None, CLIENT_RECEIVE_PROPIDS, flags)
    response: pm.ReceiveResponse = q._t.call(request)
    return response


def _fill(url: str, *bodies: bytes, delivery: int = 1) -> None:
    c = connect(url)
    q = c.queue(Q) if c.queue_exists(Q) else c.create_queue(Q)
    for b in bodies:
        q.send(Message(body=b, delivery=delivery))
    c.close()


def _count(url: str) -> int:
    c = connect(url)
    n = c.queue(Q).message_count
    c.close()
    return n


def test_a_held_message_comes_back_when_the_receiver_goes_away_unacknowledged(server: Any) -> None:
    _fill(server.url, b"in transit", b"next")
    gone = connect(server.url)
    answer = _raw_receive(gone.queue(Q))
    assert is_held(answer.properties)
    held = decode_message(answer.packet, answer.properties)
    assert held.body == b"in transit"
    other = connect(server.url)
    assert other.queue(Q).message_count == 2  # the held one is locked, not removed
    assert other.queue(Q).receive(timeout=0).body == b"next"  # others get the next one
    gone.close()  # the network "fails" before END_RECEIVE
    back = other.queue(Q).receive(timeout=5)
    assert back.body == b"in transit" and back.lookup_id == held.lookup_id
    other.close()


def test_rr_nack_puts_it_back_and_rr_ack_removes_it_durably(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, b"a", b"b")
        q = connect(srv.url).queue(Q)
        first = decode_message(*_unpack(_raw_receive(q)))
        q._t.call(pm.EndReceiveRequest(q._handle, first.lookup_id, RR_NACK))
        again = decode_message(*_unpack(_raw_receive(q)))
        assert again.lookup_id == first.lookup_id and again.abort_count == 0
        q._t.call(pm.EndReceiveRequest(q._handle, again.lookup_id, RR_ACK))
    with serving(tmp_path / "qm") as srv:
        q = connect(srv.url).queue(Q)
        assert [q.receive(timeout=0).body] == [b"b"]
        assert q.message_count == 0


def test_a_server_that_dies_before_the_acknowledgement_still_has_the_message(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, b"survivor")
        assert is_held(_raw_receive(connect(srv.url).queue(Q)).properties)
    with serving(tmp_path / "qm") as srv:
        assert connect(srv.url).queue(Q).receive(timeout=0).body == b"survivor"


def test_the_client_acknowledges_before_receive_returns(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, b"one", b"two")
        q = connect(srv.url).queue(Q)
        assert q.receive(timeout=0).body == b"one"
        assert _count(srv.url) == 1  # removed, not held
        assert q.cursor().receive_current(timeout=0).body == b"two"  # every receive form
        assert _count(srv.url) == 0
    with serving(tmp_path / "qm") as srv:
        assert _count(srv.url) == 0


def test_express_messages_and_old_clients_take_one_phase(server: Any) -> None:
    _fill(server.url, b"express", delivery=0)
    _fill(server.url, b"old client")
    c = connect(server.url)
    q = c.queue(Q)
    express = _raw_receive(q)
    assert not is_held(express.properties)  # removed at once: express is not durable anyway
    old = _raw_receive(q, flags=0)
    assert not is_held(old.properties)
    assert decode_message(*_unpack(old)).body == b"old client"
    assert q.message_count == 0
    c.close()


def test_end_receive_errors(server: Any) -> None:
    _fill(server.url, b"x")
    c = connect(server.url)
    q = c.queue(Q)
    with pytest.raises(MSMQError) as unknown:
        q._t.call(pm.EndReceiveRequest(q._handle, 12345, RR_ACK))
    assert unknown.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    held = decode_message(*_unpack(_raw_receive(q)))
    with pytest.raises(MSMQError) as bad:
        q._t.call(pm.EndReceiveRequest(q._handle, held.lookup_id, 7))
    assert bad.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    q._t.call(pm.EndReceiveRequest(q._handle, held.lookup_id, RR_ACK))  # still held after the bad one
    with pytest.raises(MSMQError) as twice:
        q._t.call(pm.EndReceiveRequest(q._handle, held.lookup_id, RR_ACK))
    assert twice.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert q.message_count == 0
    c.close()


def _unpack(r: pm.ReceiveResponse) -> tuple[Any, Any]:
    return r.packet, r.properties


_KILLED_CHILD = r"""
import sys, time
from pymsmq.client import connect
from pymsmq.protocol import hot
from pymsmq.protocol.codes import Action, ReceiveFlags
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS, decode_message, is_held
q = connect(sys.argv[1]).queue(sys.argv[2])
request = hot.receive_request(
    q._handle, int(Action.MQ_ACTION_RECEIVE), 5000, 0, 0, None, CLIENT_RECEIVE_PROPIDS,
    int(ReceiveFlags.CONFIRM),
)
answer = q._t.call(request)
body = decode_message(answer.packet, answer.properties).body.decode()
print("held" if is_held(answer.properties) else "removed", body, flush=True)
time.sleep(60)
"""


def test_a_receiver_killed_before_its_acknowledgement_loses_nothing(server: Any) -> None:
    _fill(server.url, b"precious")
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, server.url, Q], stdout=subprocess.PIPE, text=True, env=env()
    )
    assert child.stdout is not None
    assert child.stdout.readline().split() == ["held", "precious"]
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    c = connect(server.url)
    assert c.queue(Q).receive(timeout=5).body == b"precious"
    c.close()


def test_mq_no_transaction_and_its_kin_receive_two_phase(server: Any) -> None:
    # For a receive, MQ_NO_TRANSACTION, MTS and MQ_SINGLE_MESSAGE (0, 1, 3) mean no transaction:
    # the server holds the message as for no XACT at all, and the client sends none of them (XA
    # and the constants above 3 it refuses itself, as the server would).
    _fill(server.url, b"zero", b"three")
    c = connect(server.url)
    q = c.queue(Q)
    for xact in (0, 3):
        request = hot.receive_request(q._handle, RECEIVE, 0, 0, 0, xact, CLIENT_RECEIVE_PROPIDS, CONFIRM)
        answer = q._t.call(request)
        assert is_held(answer.properties)
    assert _receive_xact(c, 0) is None and _receive_xact(c, 3) is None
    for refused, hresult in (
        (2, HResult.MQ_ERROR_TRANSACTION_IMPORT),
        (4, HResult.MQ_ERROR_INVALID_PARAMETER),
    ):
        with pytest.raises(MSMQError) as caught:
            _receive_xact(c, refused)
        assert caught.value.hresult == hresult
    c.close()
    assert _count(server.url) == 2  # both given back with the connection


def test_closing_the_queue_handle_gives_its_held_messages_back(server: Any) -> None:
    # [MS-MQRR] 3.1.4.9: END_RECEIVE names a handle not closed; a closed handle's held messages go
    # back to their queue at once (the connection goes on), and END_RECEIVE on it is refused.
    _fill(server.url, b"held", b"other")
    c = connect(server.url)
    q = c.queue(Q)
    held = decode_message(*_unpack(_raw_receive(q)))
    handle = q._handle
    q.close()
    with pytest.raises(MSMQError) as closed:
        c._t.call(pm.EndReceiveRequest(handle, held.lookup_id, RR_ACK))
    assert closed.value.hresult == HResult.MQ_ERROR_INVALID_HANDLE
    # The same connection: back in its place (given back on the server's work pool, so a request
    # right after the close may come first: wait until it is visible).
    reader = c.queue(Q)
    deadline = time.monotonic() + 10
    while reader.peek(timeout=5).body != b"held":
        assert time.monotonic() < deadline, "the held message did not come back"
        time.sleep(0.02)
    again = reader.receive(timeout=5)
    assert again.body == b"held" and again.lookup_id == held.lookup_id
    c.close()


@pytest.mark.parametrize("many", [False, True], ids=["receive", "receive_many"])
def test_an_interrupt_while_the_acknowledgement_is_answered_loses_nothing(
    server: ServeProcess, many: bool
) -> None:
    # The RR_ACK is written: the server removes the message(s), which the call holds.  An interrupt
    # (Ctrl-C) while its answer was awaited ended the call: every interrupt there lost the message.
    qm = connect(server.url)
    try:
        q = qm.create_queue(Q)
        q.send_many([Message(body=b"m%d" % i, delivery=1) for i in range(3)])
        t = q._t
        acks: set[int] = set()
        send_many, wait = t.send_many, t.wait

        def recording_send_many(requests: list[pm.Request]) -> list[int]:
            rids = send_many(requests)
            if requests and type(requests[0]) is pm.EndReceiveRequest:
                acks.update(rids)
            return rids

        interrupted: list[int] = []

        def interrupted_wait(rid: int, *args: Any, **kwargs: Any) -> Any:
            if rid in acks and rid not in interrupted:
                interrupted.append(rid)
                raise KeyboardInterrupt
            return wait(rid, *args, **kwargs)

        t.send_many = recording_send_many  # type: ignore[method-assign]
        t.wait = interrupted_wait  # type: ignore[method-assign]
        got = [m.body for m in q.receive_many(3, timeout=1)] if many else [q.receive(timeout=1).body]
        assert interrupted, "the acknowledgement was not awaited"
        assert got == ([b"m0", b"m1", b"m2"] if many else [b"m0"])
        t.send_many, t.wait = send_many, wait  # type: ignore[method-assign]
        assert q.message_count == (0 if many else 2)  # removed once, handed over once
        assert qm.ping(b"x") == b"x"  # the connection is fine
    finally:
        qm.close()
