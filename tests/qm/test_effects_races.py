"""Side effects written with their operation (``lifecycle.Effects``) when a queue is deleted while
that write is under way, and when the write is refused (outside QA, 2026-11-28).

The store is the real SQLite store; its ``apply`` is wrapped to hold one chosen write at a gate
(a slow fsync, or a thread preempted between building its batch and writing it) while the test
deletes a queue.  The deletion decides the fate of the message it meets: no positive acknowledgement
or journal copy beside the NACK it got, and no row left behind in the queue that is gone.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pymsmq import (
    MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
    MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL,
    MQMSG_CLASS_ACK_REACH_QUEUE,
    MQMSG_CLASS_NACK_Q_DELETED,
    MQMSG_DEADLETTER,
    MQMSG_JOURNAL,
    Message,
    MSMQError,
    QueueManager,
)
from pymsmq.hresult import HResult
from pymsmq.qm.store import MemoryStore
from pymsmq.qm.store.base import Batch

ADMIN, WORK = r".\private$\admin", r".\private$\work"


class Gate:
    """Holds the first write of ``qm``'s store for which ``hold(batch)`` is true until ``open``."""

    def __init__(self, qm: QueueManager, hold: Callable[[Batch], bool]) -> None:
        store = qm._store
        self.real = store.apply
        self.hold: Callable[[Batch], bool] | None = hold
        self.waiting = threading.Event()
        self.released = threading.Event()
        store.apply = self._apply  # type: ignore[method-assign]

    def _apply(self, batch: Batch) -> None:
        if self.hold is not None and self.hold(batch):
            self.hold = None
            self.waiting.set()
            assert self.released.wait(30)
        self.real(batch)

    def run_held(self, operation: Callable[[], object], meanwhile: Callable[[], object]) -> None:
        """Run ``operation`` on a thread; once its write is held, ``meanwhile``; then let it go."""
        errors: list[BaseException] = []

        def run() -> None:
            try:
                operation()
            except BaseException as exc:  # (reported below)
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            assert self.waiting.wait(30)
            meanwhile()
        finally:
            self.released.set()
            thread.join(30)
        assert not errors, errors


@pytest.fixture
def qm(tmp_path: Path) -> Iterator[QueueManager]:
    m = QueueManager.open(tmp_path)
    yield m
    if not m.closed:
        m.close()


def _rows_of_queues_gone(data: Path) -> int:
    con = sqlite3.connect(next(data.glob("*.db")))
    try:
        (n,) = con.execute(
            "SELECT count(*) FROM messages WHERE queue_id NOT IN (SELECT queue_id FROM queues)"
        ).fetchone()
    finally:
        con.close()
    return int(n)


def _touches(queue_id: int) -> Callable[[Batch], bool]:
    def hold(batch: Batch) -> bool:
        return any(k.queue_id == queue_id for k in batch.delete) or any(
            r.queue_id == queue_id for r in batch.insert
        )

    return hold


def test_a_transactional_send_whose_queue_is_deleted_during_the_commit_gets_no_arrival_ack(
    qm: QueueManager, tmp_path: Path
) -> None:
    admin = qm.create_queue(ADMIN)
    work = qm.create_queue(WORK, transactional=True)
    tx = qm.begin_transaction()
    work.send(
        Message(body=b"m", ack=MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL, admin_queue=admin.format_name),
        transaction=tx,
    )
    Gate(qm, _touches(work._state.queue_id)).run_held(tx.commit, lambda: qm.delete_queue(WORK))
    # The message never became visible in its queue: no ACK_REACH_QUEUE (it used to get one and be
    # dead-lettered as NACK_BAD_DST_Q as well), and its row went with the queue.
    assert admin.message_count == 0
    qm.close()
    assert _rows_of_queues_gone(tmp_path) == 0


def test_a_transactional_receive_whose_queue_is_deleted_during_the_commit_gets_only_its_nack(
    qm: QueueManager, tmp_path: Path
) -> None:
    admin = qm.create_queue(ADMIN)
    work = qm.create_queue(WORK, transactional=True, journal=True)
    with qm.begin_transaction() as tx:
        work.send(
            Message(
                body=b"m",
                ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
                admin_queue=admin.format_name,
                journal=MQMSG_JOURNAL | MQMSG_DEADLETTER,
            ),
            transaction=tx,
        )
    tx = qm.begin_transaction()
    work.receive(timeout=0, transaction=tx)
    Gate(qm, _touches(work._state.queue_id)).run_held(tx.commit, lambda: qm.delete_queue(WORK))
    # The deletion met the message and gave it NACK_Q_DELETED (and its dead letter); the receive's
    # ACK_RECEIVE and machine journal copy, built for the commit, are taken back.
    assert [m.msg_class for m in admin.receive_many(10)] == [MQMSG_CLASS_NACK_Q_DELETED]
    assert qm.machine_journal.message_count == 0
    qm.close()
    assert _rows_of_queues_gone(tmp_path) == 0


def test_an_ack_to_an_admin_queue_deleted_during_the_receive_leaves_no_row(
    qm: QueueManager, tmp_path: Path
) -> None:
    admin = qm.create_queue(ADMIN)
    work = qm.create_queue(WORK, journal=True)
    work.send(
        Message(body=b"m", delivery=1, ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE, admin_queue=admin.format_name)
    )
    journal_id = work.journal._state.queue_id
    got: list[bytes] = []
    Gate(qm, _touches(work._state.queue_id)).run_held(
        lambda: got.append(work.receive(timeout=0).body), lambda: qm.delete_queue(ADMIN)
    )
    assert got == [b"m"]
    assert work.journal.message_count == 1  # the journal copy stands; the ack's queue is gone
    qm.close()
    assert _rows_of_queues_gone(tmp_path) == 0
    with QueueManager.open(tmp_path) as again:
        assert again.queue(WORK).journal.message_count == 1
        assert again.queue(WORK).journal._state.queue_id == journal_id


def test_the_open_deletes_stored_messages_of_queues_that_are_gone(tmp_path: Path) -> None:
    # (What a write racing a deletion left before the fix: nothing loads such rows or purges them.)
    with QueueManager.open(tmp_path) as qm:
        admin = qm.create_queue(ADMIN)
        admin.send(Message(body=b"orphan", delivery=1))
        gone = (admin._state.queue_id, admin.journal._state.queue_id)
    con = sqlite3.connect(next(tmp_path.glob("*.db")))
    with con:
        con.execute("DELETE FROM queues WHERE queue_id IN (?, ?)", gone)
    con.close()
    assert _rows_of_queues_gone(tmp_path) == 1
    with QueueManager.open(tmp_path) as qm:
        assert not qm.queue_exists(ADMIN)
    assert _rows_of_queues_gone(tmp_path) == 0


class RefusingStore(MemoryStore):
    """Refuses every write that adds a message to a queue in ``refuse`` (None: every write that
    adds a message)."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse: set[int] | None = set()

    def apply(self, batch: Batch) -> None:
        if batch.insert and (self.refuse is None or any(r.queue_id in self.refuse for r in batch.insert)):
            raise MSMQError("refused: the disk is full", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)
        super().apply(batch)


def test_send_many_with_arrival_acks_whose_write_is_refused() -> None:
    # The rows of a batch and of its arrival events were one list: a refused write raised
    # ValueError and left every message and ack PENDING (unseen, counted in quotas) for good.
    store = RefusingStore()
    with QueueManager.open("unused", store=store) as qm:
        admin = qm.create_queue(ADMIN)
        work = qm.create_queue(WORK)
        ack = MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL

        def batch(tag: bytes) -> list[Message]:
            return [
                Message(body=tag + b"%d" % i, delivery=1, ack=ack, admin_queue=admin.format_name)
                for i in range(3)
            ]

        store.refuse = None  # everything: the sends fail, nothing stays behind
        with pytest.raises(MSMQError) as err:
            work.send_many(batch(b"a"))
        assert err.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
        assert qm.total_bytes == 0
        assert work.message_count == 0 and admin.message_count == 0
        store.refuse = {admin._state.queue_id}  # only the acks: the sends go, the acks are dropped
        work.send_many(batch(b"b"))
        assert [m.body for m in work.receive_many(10)] == [b"b0", b"b1", b"b2"]
        assert admin.message_count == 0
        store.refuse = set()
        work.send_many(batch(b"c"))
        assert [m.msg_class for m in admin.receive_many(10)] == [MQMSG_CLASS_ACK_REACH_QUEUE] * 3


def test_a_refused_batch_logs_the_dropped_acks(caplog: pytest.LogCaptureFixture) -> None:
    store = RefusingStore()
    with QueueManager.open("unused", store=store) as qm:
        admin = qm.create_queue(ADMIN)
        work = qm.create_queue(WORK)
        store.refuse = {admin._state.queue_id}
        with caplog.at_level(logging.WARNING, logger="pymsmq.qm"):
            work.send_many(
                [
                    Message(
                        body=b"x",
                        delivery=1,
                        ack=MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL,
                        admin_queue=admin.format_name,
                    )
                ]
            )
        assert work.message_count == 1
        assert [r.getMessage() for r in caplog.records if "not stored" in r.getMessage()]


@pytest.mark.parametrize("how", ["receive", "receive_many"])
def test_a_receive_whose_queue_is_deleted_during_its_write_gets_only_its_nack(
    qm: QueueManager, tmp_path: Path, how: str
) -> None:
    # The deletion met the message while the receive held it and sent NACK_Q_DELETED: the
    # ACK_RECEIVE and machine journal copy built for the receive are taken back (outside QA: both).
    admin = qm.create_queue(ADMIN)
    work = qm.create_queue(WORK)
    work.send(
        Message(
            body=b"m",
            delivery=1,
            ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
            admin_queue=admin.format_name,
            journal=MQMSG_JOURNAL,
        )
    )
    qm.machine_journal.receive_many(10)  # (its arrival copy)
    take = (lambda: work.receive(timeout=0)) if how == "receive" else (lambda: work.receive_many(5))
    Gate(qm, _touches(work._state.queue_id)).run_held(take, lambda: qm.delete_queue(WORK))
    assert [m.msg_class for m in admin.receive_many(10)] == [MQMSG_CLASS_NACK_Q_DELETED]
    assert qm.machine_journal.message_count == 0
    qm.close()
    assert _rows_of_queues_gone(tmp_path) == 0


def test_a_send_whose_queue_is_deleted_during_its_write_is_undeliverable(
    qm: QueueManager, tmp_path: Path
) -> None:
    # It was not visible when the deletion passed: as a transactional send to a queue deleted
    # before its commit, NACK_BAD_DST_Q (an insecure NACK: not sent by default) and its dead
    # letter; no ACK_REACH_QUEUE (outside QA: it vanished, its row left to the next open).
    admin = qm.create_queue(ADMIN)
    work = qm.create_queue(WORK)
    m = Message(
        body=b"m",
        delivery=1,
        ack=MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL,
        admin_queue=admin.format_name,
        journal=MQMSG_DEADLETTER,
    )
    Gate(qm, _touches(work._state.queue_id)).run_held(lambda: work.send(m), lambda: qm.delete_queue(WORK))
    assert admin.message_count == 0
    assert [x.body for x in qm.dead_letter_queue.receive_many(10)] == [b"m"]
    qm.close()
    assert _rows_of_queues_gone(tmp_path) == 0
