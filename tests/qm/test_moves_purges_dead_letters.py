"""Moves, purges, quotas and dead-letter queues meeting transactions (outside QA, session 14).

Each test failed before its fix: a purge during a transactional move, an application dead-letter
queue purged or deleted, a quota refusal in an aborted transaction, a deadline that passed during a
move, and the abort count across subqueue moves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import (
    MQ_SINGLE_MESSAGE,
    MQMSG_ACKNOWLEDGMENT_NEG_ARRIVAL,
    MQMSG_DEADLETTER,
    HResult,
    Message,
    MSMQError,
    QueueManager,
)
from pymsmq.qm.queue import Queue
from pymsmq.qm.range_read import read_range
from pymsmq.qm.timers import FakeClock


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "qm"


@pytest.fixture
def qm(path: Path, clock: FakeClock) -> Iterator[QueueManager]:
    m = QueueManager.open(path, clock=clock)
    yield m
    m.close()


def bodies(q: Queue) -> list[bytes]:
    return [m.body for m in read_range(q).messages]


def _failure_reported(body: bytes, admin: Queue) -> Message:
    """A message that asks for a dead letter and a negative arrival acknowledgement."""
    return Message(
        body=body,
        journal=MQMSG_DEADLETTER,
        ack=MQMSG_ACKNOWLEDGMENT_NEG_ARRIVAL,
        admin_queue=admin.format_name,
    )


def _transactional(qm: QueueManager, name: str, *messages: Message) -> Queue:
    q = qm.create_queue(f".\\private$\\{name}", transactional=True)
    if messages:
        with qm.begin_transaction() as tx:
            for m in messages:
                q.send(m, tx)
    return q


def test_a_purge_during_a_transactional_move_ends_with_the_move(path: Path, clock: FakeClock) -> None:
    # [MS-MQDMPR] 3.1.7.1.7: a locked position becomes PurgePending, resolved when its transaction
    # ends; 3.1.4.4: a committed move's new position is Available.  The flag stayed on the moved
    # message, and the next aborted receive deleted it (NACK_Q_PURGED and a dead letter with it).
    qm = QueueManager.open(path, clock=clock)
    q = _transactional(qm, "p", Message(body=b"keep-me", journal=MQMSG_DEADLETTER))
    lid = q.peek(0).lookup_id
    tx = qm.begin_transaction()
    q.move(lid, "retry", transaction=tx)
    q.purge()
    tx.commit()
    retry = q.subqueue("retry")
    assert bodies(retry) == [b"keep-me"]
    tx = qm.begin_transaction()
    assert retry.receive(0, tx).body == b"keep-me"
    tx.abort()
    assert bodies(retry) == [b"keep-me"]
    assert bodies(qm.transactional_dead_letter_queue) == []
    qm.close()
    qm = QueueManager.open(path, clock=clock)
    try:
        assert bodies(qm.queue(r".\private$\p").subqueue("retry")) == [b"keep-me"]
    finally:
        qm.close()


def test_a_purge_during_a_move_that_aborts_still_deletes(qm: QueueManager) -> None:
    q = _transactional(qm, "p", Message(body=b"gone"))
    tx = qm.begin_transaction()
    q.move(q.peek(0).lookup_id, "retry", transaction=tx)
    q.purge()
    tx.abort()  # the position goes back to the main queue, purged: deleted (3.1.4.5)
    assert bodies(q) == [] and bodies(q.subqueue("retry")) == []


def test_an_application_dead_letter_queue_purged_or_deleted_keeps_its_dead_letters(
    path: Path, clock: FakeClock
) -> None:
    # Purging the application DLQ put each message straight back into it (its dead_letter_queue
    # names that queue); deleting it lost them.  They go to the system transactional DLQ.
    qm = QueueManager.open(path, clock=clock)
    work = _transactional(qm, "work")
    mydlq = _transactional(qm, "mydlq")
    with qm.begin_transaction() as tx:
        work.send(Message(body=b"m", journal=MQMSG_DEADLETTER, dead_letter_queue=mydlq.format_name), tx)
        work.send(Message(body=b"n", journal=MQMSG_DEADLETTER, dead_letter_queue=mydlq.format_name), tx)
    work.purge()
    assert [(m.body, m.msg_class) for m in read_range(mydlq).messages] == [(b"m", 0xC001), (b"n", 0xC001)]
    assert mydlq.receive(0).body == b"m"  # one taken; the other purged
    mydlq.purge()
    assert bodies(mydlq) == []
    assert bodies(qm.transactional_dead_letter_queue) == [b"n"]
    with qm.begin_transaction() as tx:
        work.send(Message(body=b"o", journal=MQMSG_DEADLETTER, dead_letter_queue=mydlq.format_name), tx)
    work.purge()
    assert bodies(mydlq) == [b"o"]
    qm.delete_queue(r".\private$\mydlq")
    assert bodies(qm.transactional_dead_letter_queue) == [b"n", b"o"]
    qm.close()
    qm = QueueManager.open(path, clock=clock)
    try:
        assert bodies(qm.transactional_dead_letter_queue) == [b"n", b"o"]
    finally:
        qm.close()


def test_a_quota_refusal_inside_a_transaction_only_raises(qm: QueueManager) -> None:
    # A transactional send is not sent before its commit: a NACK or dead letter for a send the
    # transaction then discarded (or that the application sent again) was false.
    q = qm.create_queue(r".\private$\quota", transactional=True, quota=1)
    admin = qm.create_queue(r".\private$\admin")
    tx = qm.begin_transaction()
    q.send(Message(body=b"a" * 800), tx)
    with pytest.raises(MSMQError) as refused:
        q.send(_failure_reported(b"b" * 800, admin), tx)
    assert refused.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    tx.abort()
    assert bodies(qm.transactional_dead_letter_queue) == [] and bodies(admin) == []
    # Outside a transaction a refusal still NACKs and dead-letters, as a remote sender would see.
    plain = qm.create_queue(r".\private$\plain", quota=1)
    plain.send(Message(body=b"a" * 800))
    with pytest.raises(MSMQError):
        plain.send(_failure_reported(b"c" * 800, admin))
    assert [m.msg_class for m in read_range(admin).messages] == [0x8003]
    assert [m.msg_class for m in read_range(qm.dead_letter_queue).messages] == [0x8003]


def test_a_deadline_that_passed_during_a_move_applies_at_its_commit(
    qm: QueueManager, clock: FakeClock
) -> None:
    # [MC-MQAC] 3.1.6.1.1 step 1: a locked message's expiry waits for the lock to end.  After a
    # committed move nothing re-armed it: the message could be received an hour late.
    q = _transactional(qm, "e", Message(body=b"late", max_time_to_receive=10, journal=MQMSG_DEADLETTER))
    tx = qm.begin_transaction()
    q.move(q.peek(0).lookup_id, "sq", transaction=tx)
    clock.advance(20)
    tx.commit()
    assert bodies(q.subqueue("sq")) == []
    assert [(m.body, m.msg_class) for m in read_range(qm.transactional_dead_letter_queue).messages] == [
        (b"late", 0xC002)
    ]


def test_a_move_to_or_from_a_subqueue_resets_the_abort_count(path: Path, clock: FakeClock) -> None:
    # PROPID_M_ABORT_COUNT: "If a message is moved to or from a subqueue, its PROPID_M_ABORT_COUNT
    # property is reset to 0"; PROPID_M_MOVE_COUNT is never reset.
    qm = QueueManager.open(path, clock=clock)
    q = _transactional(qm, "a", Message(body=b"poison"))
    for _ in range(3):
        tx = qm.begin_transaction()
        q.receive(0, tx)
        tx.abort()
    first = q.peek(0)
    assert (first.abort_count, first.move_count) == (3, 0)
    with qm.begin_transaction() as tx:
        q.move(first.lookup_id, "retry", transaction=tx)
    retry = q.subqueue("retry")
    moved = retry.peek(0)
    assert (moved.abort_count, moved.move_count) == (0, 1)
    tx = qm.begin_transaction()
    retry.receive(0, tx)
    tx.abort()
    assert retry.peek(0).abort_count == 1
    retry.move(moved.lookup_id, "")  # back to the main queue, outside a transaction
    back = q.peek(0)
    assert (back.abort_count, back.move_count) == (0, 2)
    qm.close()
    qm = QueueManager.open(path, clock=clock)
    try:
        again = qm.queue(r".\private$\a").peek(0)
        assert (again.abort_count, again.move_count) == (0, 2)
    finally:
        qm.close()


@pytest.mark.parametrize("how", ["purge", "delete"])
def test_a_dead_letter_moved_on_from_its_application_dead_letter_queue_keeps_its_reason(
    qm: QueueManager, clock: FakeClock, how: str
) -> None:
    # A message that died of its TimeToBeReceived (0xC002) keeps that class when its transactional
    # application dead-letter queue is purged or deleted: it moves to DEADXACT as it is (it was
    # given the purge's 0xC001, the deletion's 0xC000, losing why it died).
    work = _transactional(qm, "work")
    mydlq = _transactional(qm, "mydlq")
    work.send(
        Message(
            body=b"m", max_time_to_receive=5, journal=MQMSG_DEADLETTER, dead_letter_queue=mydlq.format_name
        ),
        MQ_SINGLE_MESSAGE,
    )
    clock.advance(6)
    assert [(m.body, m.msg_class) for m in read_range(mydlq).messages] == [(b"m", 0xC002)]
    if how == "purge":
        mydlq.purge()
    else:
        qm.delete_queue(r".\private$\mydlq")
    moved = read_range(qm.transactional_dead_letter_queue).messages
    assert [(m.body, m.msg_class) for m in moved] == [(b"m", 0xC002)]
