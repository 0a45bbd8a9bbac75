"""send_many / receive_many: the same semantics embedded and remote (the shared client suite's ``qm``)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pymsmq import Message
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

Q = ".\\private$\\many"


def test_send_many_then_receive_many_keep_order_ids_and_delivery(qm: Any) -> None:
    q = qm.create_queue(Q)
    sent = [Message(body=b"%d" % i, delivery=i % 2, label=f"m{i}") for i in range(120)]
    q.send_many(sent)
    assert all(m.id is not None for m in sent)
    got = q.receive_many(500, timeout=0)
    assert [m.body for m in got] == [b"%d" % i for i in range(120)]
    assert [m.id for m in got] == [m.id for m in sent]
    assert [m.delivery for m in got] == [i % 2 for i in range(120)]
    assert q.receive_many(3, timeout=0) == []


def test_an_invalid_message_raises_before_anything_is_sent(qm: Any) -> None:
    q = qm.create_queue(Q)
    bad = Message(body=b"bad")
    bad.priority = 9
    with pytest.raises(MSMQError) as err:
        q.send_many([Message(body=b"1"), bad, Message(body=b"2")])
    assert err.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
    assert q.receive_many(10, timeout=0) == []


def test_a_refused_send_raises_after_the_others(qm: Any) -> None:
    q = qm.create_queue(Q, transactional=True)
    with pytest.raises(MSMQError) as err:
        q.send_many([Message(body=b"1"), Message(body=b"2")])
    assert err.value.hresult == HResult.MQ_ERROR_TRANSACTION_USAGE
    with qm.begin_transaction() as tx:
        q.send_many([Message(body=b"a"), Message(body=b"b")], tx)
    with qm.begin_transaction() as tx:
        assert [m.body for m in q.receive_many(5, 0, tx)] == [b"a", b"b"]


def test_receive_many_returns_once_the_first_message_is_there(qm: Any) -> None:
    # Waits (here without limit) for the first message only, not for ``count`` of them.  If it waited
    # for all three, the watchdog sends the other two after 20 s so that the test ends, and fails it.
    q = qm.create_queue(Q)
    returned = threading.Event()
    waited_for_all: list[bool] = []

    def feed() -> None:
        q.send(Message(body=b"first"))
        if not returned.wait(20):
            waited_for_all.append(True)
            q.send_many([Message(body=b"x"), Message(body=b"y")])

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        got = q.receive_many(3, timeout=None)
    finally:
        returned.set()
        feeder.join()
    assert not waited_for_all
    assert [m.body for m in got] == [b"first"]


def test_receive_many_counts_are_checked(qm: Any) -> None:
    q = qm.create_queue(Q)
    for bad in (-1, 1.5, "3"):
        with pytest.raises(MSMQError) as err:
            q.receive_many(bad)
        assert err.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    assert q.receive_many(0, timeout=0) == []
