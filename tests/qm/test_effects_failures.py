"""Side effects that cannot be stored never fail the receive, send or commit that caused them.

Acknowledgements and journal copies are stored after the operation that causes them is durable.
When storing them fails (a full disk, an I/O error), the operation still succeeds -- failing it would
lose a received message or make its caller send again -- and the effects are dropped, from memory too,
with a warning.  The store here is a real ``MemoryStore`` that refuses batches adding messages to
chosen queues, as a full disk refuses them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from pymsmq import (
    MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE,
    MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
    MQMSG_CLASS_ACK_RECEIVE,
    Message,
    MSMQError,
    QueueManager,
)
from pymsmq.hresult import HResult
from pymsmq.qm.queue import Queue
from pymsmq.qm.store import MemoryStore
from pymsmq.qm.store.base import Batch


class RefusingStore(MemoryStore):
    """A memory store that refuses every batch adding a message to a queue id in ``refuse``."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse: set[int] = set()
        self.refused = 0

    def apply(self, batch: Batch) -> None:
        if any(row.queue_id in self.refuse for row in batch.insert):
            self.refused += 1
            raise MSMQError("refused: the disk is full", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)
        super().apply(batch)


@pytest.fixture
def store() -> RefusingStore:
    return RefusingStore()


@pytest.fixture
def qm(store: RefusingStore) -> Iterator[QueueManager]:
    m = QueueManager.open("unused", store=store)
    yield m
    m.close()


def _refuse(store: RefusingStore, q: Queue) -> None:
    store.refuse.add(q._state.queue_id)


def _dropped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "not stored" in r.getMessage()]


def test_a_receive_returns_its_message_when_the_journal_copy_cannot_be_stored(
    qm: QueueManager, store: RefusingStore, caplog: pytest.LogCaptureFixture
) -> None:
    q = qm.create_queue(r".\private$\journaled", journal=True)
    q.send(Message(body=b"kept", delivery=1))
    _refuse(store, q.journal)
    with caplog.at_level(logging.WARNING, logger="pymsmq.qm"):
        assert q.receive(timeout=0).body == b"kept"
    assert store.refused == 1
    assert q.message_count == 0
    assert q.journal.message_count == 0  # memory holds what the store holds
    assert len(_dropped(caplog)) == 1


def test_a_send_succeeds_once_when_its_arrival_ack_cannot_be_stored(
    qm: QueueManager, store: RefusingStore, caplog: pytest.LogCaptureFixture
) -> None:
    admin = qm.create_queue(r".\private$\admin")
    q = qm.create_queue(r".\private$\target")
    _refuse(store, admin)
    m = Message(
        body=b"once", delivery=1, ack=MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE, admin_queue=admin.format_name
    )
    with caplog.at_level(logging.WARNING, logger="pymsmq.qm"):
        q.send(m)
    assert [x.body for x in (q.receive(timeout=0),)] == [b"once"]
    assert admin.message_count == 0
    assert len(_dropped(caplog)) == 1


def test_a_commit_returns_when_its_acknowledgements_cannot_be_stored(
    qm: QueueManager, store: RefusingStore, caplog: pytest.LogCaptureFixture
) -> None:
    admin = qm.create_queue(r".\private$\admin")
    q = qm.create_queue(r".\private$\orders", transactional=True)
    _refuse(store, admin)
    reach, receive = MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE, MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE
    with caplog.at_level(logging.WARNING, logger="pymsmq.qm"), qm.begin_transaction() as tx:
        q.send(Message(body=b"arrived", ack=reach, admin_queue=admin.format_name), transaction=tx)
        q.send(Message(body=b"received", ack=receive, admin_queue=admin.format_name), transaction=tx)
    # The commit's arrival ack was dropped; both messages are there, once.
    assert q.message_count == 2
    with caplog.at_level(logging.WARNING, logger="pymsmq.qm"), qm.begin_transaction() as tx:
        assert q.receive(timeout=0, transaction=tx).body == b"arrived"
        assert q.receive(timeout=0, transaction=tx).body == b"received"
    # The receive's ack was dropped too; the receive is committed.
    assert q.message_count == 0
    assert admin.message_count == 0
    assert len(_dropped(caplog)) == 2
    assert store.refused == 2


def test_a_batch_of_receives_returns_its_messages_when_their_journal_copies_cannot_be_stored(
    qm: QueueManager, store: RefusingStore, caplog: pytest.LogCaptureFixture
) -> None:
    # receive_many removes its recoverable messages together and stores their journal copies in
    # one batch: refused, the receives still return every message and the copies are dropped.
    q = qm.create_queue(r".\private$\journaled", journal=True)
    q.send_many([Message(body=b"%d" % i, delivery=1) for i in range(5)])
    _refuse(store, q.journal)
    with caplog.at_level(logging.WARNING, logger="pymsmq.qm"):
        assert [m.body for m in q.receive_many(5)] == [b"%d" % i for i in range(5)]
    assert store.refused == 1  # one batch for the five copies
    assert q.message_count == 0 and q.journal.message_count == 0
    assert len(_dropped(caplog)) == 1


class GatedStore(MemoryStore):
    """A memory store whose writes that delete messages wait at ``gate`` (once ``hold`` is set),
    or fail when ``fail`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = False
        self.fail = False
        self.waiting = threading.Event()
        self.gate = threading.Event()

    def apply(self, batch: Batch) -> None:
        if batch.delete and self.fail:
            raise MSMQError("refused: an I/O error", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)
        if batch.delete and self.hold:
            self.waiting.set()
            assert self.gate.wait(30)
        super().apply(batch)


def test_a_receives_effects_are_unseen_until_its_write_is_durable() -> None:
    # The ACK_RECEIVE and the journal copy go in the write that deletes the message
    # (lifecycle.Effects): until that write returns they are in their queues unseen, as a
    # transaction's sends are, so nobody reads an acknowledgement of a receive that may not happen.
    store = GatedStore()
    with QueueManager.open("unused", store=store) as qm:
        admin = qm.create_queue(r".\private$\admin")
        q = qm.create_queue(r".\private$\journaled", journal=True)
        q.send(
            Message(
                body=b"m", delivery=1, ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE, admin_queue=admin.format_name
            )
        )
        store.hold = True
        got: list[bytes] = []
        receiver = threading.Thread(target=lambda: got.append(q.receive(timeout=0).body))
        receiver.start()
        assert store.waiting.wait(30)
        try:
            assert admin.message_count == 0 and q.journal.message_count == 0
            with pytest.raises(MSMQError):
                admin.peek(timeout=0)
            with pytest.raises(MSMQError):
                q.journal.receive(timeout=0)
        finally:
            store.gate.set()
        receiver.join(30)
        assert got == [b"m"]
        assert [m.msg_class for m in admin.receive_many(10)] == [MQMSG_CLASS_ACK_RECEIVE]
        assert [m.body for m in q.journal.receive_many(10)] == [b"m"]


def test_a_receive_whose_write_fails_leaves_no_effect_behind() -> None:
    # The write fails as a whole: the message is back in its place, and the acknowledgement and
    # journal copy built for it are gone from memory too (the next receive makes one of each).
    store = GatedStore()
    with QueueManager.open("unused", store=store) as qm:
        admin = qm.create_queue(r".\private$\admin")
        q = qm.create_queue(r".\private$\journaled", journal=True)
        ack = MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE
        q.send_many(
            [Message(body=b"%d" % i, delivery=1, ack=ack, admin_queue=admin.format_name) for i in range(2)]
        )
        store.fail = True
        with pytest.raises(MSMQError) as err:
            q.receive(timeout=0)
        assert err.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
        with pytest.raises(MSMQError), qm.begin_transaction() as tx:
            q.receive(timeout=0, transaction=tx)
        with pytest.raises(MSMQError):
            q.receive_many(2)
        store.fail = False
        assert [m.body for m in q.receive_many(2)] == [b"0", b"1"]
        assert [m.msg_class for m in admin.receive_many(10)] == [MQMSG_CLASS_ACK_RECEIVE] * 2
        assert [m.body for m in q.journal.receive_many(10)] == [b"0", b"1"]
