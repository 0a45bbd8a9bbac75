"""``Queue.receive_many`` of recoverable messages outside a transaction: one durable write per batch.

The messages are held as they are taken (``Hold``) and removed together when the batch is complete;
a store that refuses that write leaves every one of them in the queue, in its place, and the
caller gets the error.  Before, each recoverable message of a batch was its own durable delete
(one fsync each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pymsmq import (
    MQMSG_ACKNOWLEDGMENT_POS_RECEIVE,
    MQMSG_CLASS_ACK_RECEIVE,
    Message,
    MSMQError,
    QueueManager,
)
from pymsmq.hresult import HResult
from pymsmq.qm.range_read import read_range
from pymsmq.qm.store import MemoryStore
from pymsmq.qm.store.base import Batch, MessageKey

Q = r".\private$\many-recoverable"


class CountingStore(MemoryStore):
    """A memory store that counts its batches and refuses deletes while ``refuse_deletes``."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[Batch] = []
        self.refuse_deletes = False

    def apply(self, batch: Batch) -> None:
        if self.refuse_deletes and batch.delete:
            raise MSMQError("refused: an I/O error", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)
        self.batches.append(batch)
        super().apply(batch)


def test_a_batch_of_recoverable_messages_is_removed_in_one_write() -> None:
    store = CountingStore()
    with QueueManager.open("unused", store=store) as qm:
        q = qm.create_queue(Q)
        for i in range(10):
            q.send(Message(body=b"%d" % i, delivery=1 if i % 3 else 0))  # express among them
        store.batches.clear()
        got = q.receive_many(8)
        assert [m.body for m in got] == [b"%d" % i for i in range(8)]
        deletes = [b for b in store.batches if b.delete]
        assert len(deletes) == 1 and len(deletes[0].delete) == 5  # 1, 2, 4, 5, 7: recoverable
        assert q.message_count == 2


def test_a_refused_removal_leaves_the_batch_in_the_queue_in_place() -> None:
    store = CountingStore()
    with QueueManager.open("unused", store=store) as qm:
        q = qm.create_queue(Q)
        for i in range(4):
            q.send(Message(body=b"%d" % i, delivery=1))
        store.refuse_deletes = True
        with pytest.raises(MSMQError) as e:
            q.receive_many(3)
        assert e.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
        store.refuse_deletes = False
        assert [m.body for m in q.receive_many(10)] == [b"0", b"1", b"2", b"3"]


def test_a_received_batch_stays_received_after_a_restart(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        q = qm.create_queue(Q)
        for i in range(300):
            q.send(Message(body=b"%d" % i, delivery=1))
        assert len(q.receive_many(250)) == 250
    with QueueManager.open(tmp_path) as qm:
        assert [m.body for m in qm.queue(Q).receive_many(100)] == [b"%d" % i for i in range(250, 300)]


def _with_messages(store: CountingStore) -> list[Batch]:
    # The batches that store or delete messages (not a queue's first lookup-id block reservation).
    return [b for b in store.batches if b.insert or b.delete]


def test_journal_copies_and_receive_acks_of_a_batch_share_one_write() -> None:
    # Before, every received message's journal copy (and receive acknowledgement) was a durable
    # write of its own: a journaled queue received at the rate of fsync, in a batch or a transaction.
    store = CountingStore()
    with QueueManager.open("unused", store=store) as qm:
        admin = qm.create_queue(r".\private$\admin")
        q = qm.create_queue(Q, journal=True)
        t = qm.create_queue(r".\private$\many-transactional", transactional=True, journal=True)
        ack = MQMSG_ACKNOWLEDGMENT_POS_RECEIVE
        q.send_many(
            [Message(body=b"%d" % i, delivery=1, ack=ack, admin_queue=admin.format_name) for i in range(6)]
        )
        with qm.begin_transaction() as tx:
            t.send_many([Message(body=b"t%d" % i) for i in range(6)], transaction=tx)
        store.batches.clear()
        assert len(q.receive_many(6)) == 6
        assert len(_with_messages(store)) == 1  # the deletes with the copies and acknowledgements
        assert [m.body for m in q.journal.receive_many(10)] == [b"%d" % i for i in range(6)]
        assert [m.msg_class for m in admin.receive_many(10)] == [MQMSG_CLASS_ACK_RECEIVE] * 6
        store.batches.clear()
        with qm.begin_transaction() as tx:
            assert len(t.receive_many(6, transaction=tx)) == 6
        assert len(_with_messages(store)) == 1  # the commit with the journal copies
        assert [m.body for m in t.journal.receive_many(10)] == [b"t%d" % i for i in range(6)]
        q.send_many([Message(body=b"r%d" % i, delivery=1) for i in range(6)])
        store.batches.clear()
        assert len(read_range(q, receive=True).messages) == 6  # READ_RANGE's receive too
        assert len(_with_messages(store)) == 1
        assert [m.body for m in q.journal.receive_many(10)] == [b"r%d" % i for i in range(6)]


def test_a_batch_absorbs_another() -> None:
    a = Batch(delete=[MessageKey(1, 1)], last_lookup_ids={1: 5, 2: 9}, meta={"x": "1"})
    b = Batch(delete=[MessageKey(1, 2)], last_lookup_ids={1: 7, 2: 3, 3: 1}, meta={"y": "2"})
    a.absorb(b)
    assert a.delete == [MessageKey(1, 1), MessageKey(1, 2)]
    assert a.last_lookup_ids == {1: 7, 2: 9, 3: 1}  # the highest of each
    assert a.meta == {"x": "1", "y": "2"}
    assert not Batch() and a
