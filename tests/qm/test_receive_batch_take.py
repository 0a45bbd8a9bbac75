"""``qm.receive_batch.take_available``: N head receives under one lock = N ``receive(0)`` calls.

Two queue managers get the same sends; one is drained with ``take_available``, the other with the
reference loop (``peek`` to see why to stop, then ``receive(0)``).  The messages taken, the reason
for stopping, what stays in the queue and the acknowledgements / journal copies must be the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq import HResult, Message, MSMQError, QueueManager
from pymsmq.qm.queue import Queue
from pymsmq.qm.receive_batch import DONE, DURABLE, EMPTY, REFUSED, take_available
from pymsmq.qm.timers import FakeClock

_Q = r".\private$\plain"
_ADMIN = r".\private$\admin"

_send = st.tuples(
    st.sampled_from([0, 0, 0, 1]),  # delivery (recoverable ones stop the batch)
    st.sampled_from([0, 1, 3, 7]),  # priority
    st.sampled_from([0, 0x02, 0x0E]),  # ack: none, POS_RECEIVE, FULL_RECEIVE
    st.booleans(),  # a short time to be received (expires before the receives)
    st.integers(0, 300),  # body size
)


def _world(qm: QueueManager, journal: bool) -> tuple[Queue, str]:
    with qm.create_queue(_ADMIN) as admin:
        fmt = admin.format_name
    return qm.create_queue(_Q, journal=journal), fmt


def _message(i: int, admin: str, delivery: int, priority: int, ack: int, short: bool, size: int) -> Message:
    m = Message(body=b"%d:" % i + b"b" * size, delivery=delivery, priority=priority, label=str(i))
    if ack:
        m.ack = ack
        m.admin_queue = admin
    if short:
        m.max_time_to_receive = 5
    return m


def _key(m: Message) -> tuple[Any, ...]:
    return (m.body, m.label, m.priority, m.delivery, m.lookup_id, m.arrived_time)


def _rest(qm: QueueManager) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for name in (_Q, _ADMIN):
        q = qm.queue(name)
        out.extend((*_key(m), m.msg_class) for m in q.receive_many(10_000))
    q = qm.queue(_Q)
    out.extend(("journal", *_key(m)) for m in q.journal.receive_many(10_000))
    return out


def _rest_as_sets(qm: QueueManager) -> list[Any]:
    """``_rest`` with the acknowledgements and journal copies as sets (no order, no lookup ids)."""
    left = [(*_key(m), m.msg_class) for m in qm.queue(_Q).receive_many(10_000)]
    acks = [(m.body, m.label, m.msg_class) for m in qm.queue(_ADMIN).receive_many(10_000)]
    journal = [(m.body, m.label) for m in qm.queue(_Q).journal.receive_many(10_000)]
    return [left, sorted(acks), sorted(journal)]


def _reference(q: Queue, count: int, limit: int) -> tuple[list[Message], int]:
    taken: list[Message] = []
    for _ in range(count):
        try:
            head = q.peek(0)
        except MSMQError as e:
            assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
            return taken, EMPTY
        if head.delivery:
            return taken, DURABLE
        taken.append(q.receive(0))
        if len(taken) >= limit:
            return taken, REFUSED
    return taken, DONE


@settings(max_examples=150)
@given(st.lists(_send, max_size=30), st.integers(0, 35), st.integers(1, 40), st.booleans())
def test_take_available_equals_receives(
    sends: list[tuple[int, int, int, bool, int]], count: int, limit: int, journal: bool
) -> None:
    clock = FakeClock(1_000_000.0)
    one = QueueManager.open(":memory:", clock)
    many = QueueManager.open(":memory:", clock)
    try:
        (q1, a1), (q2, a2) = _world(one, journal), _world(many, journal)
        for i, s in enumerate(sends):
            q1.send(_message(i, a1, *s))
            q2.send(_message(i, a2, *s))
        clock.advance(10)  # the short-lived ones expire (NACKs to the admin queue)
        expected, why1 = _reference(q1, count, limit)
        got: list[Message] = []

        def accept(m: Message) -> bool:
            got.append(m)
            return len(got) < limit

        why2 = take_available(q2, count, accept)
        assert why2 == why1
        assert [_key(m) for m in got] == [_key(m) for m in expected]
        assert _rest(many) == _rest(one)
    finally:
        one.close()
        many.close()


def test_take_available_checks_and_errors() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(_Q)
        assert take_available(q, 5, lambda m: True) == EMPTY
        send_only = qm.queue(_Q, 2)
        with pytest.raises(MSMQError) as info:
            take_available(send_only, 5, lambda m: True)
        assert info.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
        tx = qm.create_queue(r".\private$\tx", transactional=True)
        with pytest.raises(ValueError):
            take_available(tx, 5, lambda m: True)
        for i in range(3):
            q.send(Message(body=b"%d" % i))
        assert take_available(q, 0, lambda m: True) == DONE
        with pytest.raises(RuntimeError):  # an error of accept: the message it was given is taken
            take_available(q, 5, lambda m: (_ for _ in ()).throw(RuntimeError("x")))
        assert [m.body for m in q.receive_many(10)] == [b"1", b"2"]
        q.close()
        with pytest.raises(MSMQError) as info:
            take_available(q, 5, lambda m: True)
        assert info.value.hresult == HResult.MQ_ERROR_INVALID_HANDLE
    finally:
        qm.close()


@settings(max_examples=100)
@given(st.lists(_send, max_size=30), st.integers(0, 35), st.booleans())
def test_queue_receive_many_equals_receives(
    sends: list[tuple[int, int, int, bool, int]], count: int, journal: bool
) -> None:
    # Queue.receive_many (take_available for the express messages, receive for a recoverable one)
    # gives what ``count`` receive(0) calls give.  The recoverable messages of a batch are removed
    # together at its end (one durable write), so their acknowledgements and journal copies come
    # after those of the express messages: those are compared as sets.
    clock = FakeClock(1_000_000.0)
    one = QueueManager.open(":memory:", clock)
    many = QueueManager.open(":memory:", clock)
    try:
        (q1, a1), (q2, a2) = _world(one, journal), _world(many, journal)
        for i, s in enumerate(sends):
            q1.send(_message(i, a1, *s))
            q2.send(_message(i, a2, *s))
        clock.advance(10)
        expected: list[Message] = []
        for _ in range(count):
            try:
                expected.append(q1.receive(0))
            except MSMQError as e:
                assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
        got = q2.receive_many(count)
        assert [_key(m) for m in got] == [_key(m) for m in expected]
        assert _rest_as_sets(many) == _rest_as_sets(one)
    finally:
        one.close()
        many.close()


def test_queue_receive_many_closed_handle_and_transactional() -> None:
    qm = QueueManager.open(":memory:")
    try:
        tx = qm.create_queue(r".\private$\tx", transactional=True)
        tx.send(Message(body=b"t"), 3)
        assert [m.body for m in tx.receive_many(5)] == [b"t"]
        q = qm.create_queue(_Q)
        q.send(Message(body=b"a"))
        q.close()
        with pytest.raises(MSMQError) as info:
            q.receive_many(3)
        assert info.value.hresult == HResult.MQ_ERROR_INVALID_HANDLE
    finally:
        qm.close()
