"""Restart recovery (DESIGN.md Storage): committed messages present exactly once, express ones gone,
uncommitted transactions rolled back, locks released; identity, queues and counters persist."""

from __future__ import annotations

import time
from pathlib import Path

from pymsmq import MQ_SINGLE_MESSAGE, MQMSG_DEADLETTER, HResult, Message, MSMQError, QueueManager


def bodies(qm: QueueManager, name: str) -> list[bytes]:
    q = qm.queue(name)
    out = []
    while True:
        try:
            out.append(q.receive(timeout=0).body)
        except MSMQError as e:
            assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
            return out


def test_identity_and_queues_persist(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path, machine_name="BOX") as qm:
        guid = qm.guid
        q = qm.create_queue(r".\private$\keep", transactional=True, label="L", quota=77)
        fmt = q.format_name
        qm.create_queue(r".\pub", label="P")
        qm.create_queue(r".\private$\gone")
        qm.delete_queue(r".\private$\gone")
    with QueueManager.open(tmp_path, machine_name="OTHER") as qm:
        assert qm.guid == guid and qm.machine_name == "BOX"
        q = qm.queue(r".\private$\keep")
        assert q.format_name == fmt and q.properties.label == "L" and q.properties.quota == 77
        assert q.transactional and q.journal.format_name == fmt + ";JOURNAL"
        assert qm.private_queues == [r"BOX\private$\keep"] and qm.public_queues == [r"BOX\pub"]
        assert not qm.queue_exists(r".\private$\gone")
        assert qm.dead_letter_queue.format_name == f"MACHINE={guid};DEADLETTER"
        assert qm.internal_queue("order_queue$").format_name == f"PRIVATE={guid}\\00000004"


def test_recoverable_survive_express_vanish(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        q = qm.create_queue(r".\private$\q")
        q.send(Message(body=b"express"))
        q.send(Message(body=b"r1", delivery=1, priority=1))
        q.send(Message(body=b"r2", delivery=1, priority=6))
        q.send(Message(body=b"r3", delivery=1))
        q.receive_by_lookup_id(q.peek_last_by_lookup_id().lookup_id)  # r1 received before the restart
    with QueueManager.open(tmp_path) as qm:
        assert bodies(qm, r".\private$\q") == [b"r2", b"r3"]


def test_properties_of_recovered_messages(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        q = qm.create_queue(r".\private$\q")
        m = Message(body=b"b" * 100_000, label="big", delivery=1, app_specific=9, max_time_to_receive=50)
        q.send(m)
        before = q.peek(timeout=0)
    with QueueManager.open(tmp_path) as qm:
        after = qm.queue(r".\private$\q").peek(timeout=0)
        assert after == before
        assert after.id == m.id and after.arrived_time == before.arrived_time


def test_uncommitted_transactions_roll_back(tmp_path: Path) -> None:
    qm = QueueManager.open(tmp_path)
    q = qm.create_queue(r".\private$\t", transactional=True)
    q.send(Message(body=b"committed"), transaction=MQ_SINGLE_MESSAGE)
    q.send(Message(body=b"locked"), transaction=MQ_SINGLE_MESSAGE)
    tx = qm.begin_transaction()
    q.send(Message(body=b"uncommitted"), transaction=tx)
    assert q.receive(timeout=0, transaction=tx).body == b"committed"
    done = qm.begin_transaction()
    with done:
        q.send(Message(body=b"done"), transaction=done)
    qm.close()  # tx never ends: like a crash
    with QueueManager.open(tmp_path) as qm2:
        assert bodies(qm2, r".\private$\t") == [b"committed", b"locked", b"done"]


def test_committed_receive_stays_received(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        q = qm.create_queue(r".\private$\t", transactional=True)
        for b in (b"a", b"b"):
            q.send(Message(body=b), transaction=MQ_SINGLE_MESSAGE)
        with qm.begin_transaction() as tx:
            q.receive(timeout=0, transaction=tx)
    with QueueManager.open(tmp_path) as qm:
        assert bodies(qm, r".\private$\t") == [b"b"]


def test_abort_count_persists(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        q = qm.create_queue(r".\private$\t", transactional=True)
        q.send(Message(body=b"a"), transaction=MQ_SINGLE_MESSAGE)
        for _ in range(2):
            tx = qm.begin_transaction()
            q.receive(timeout=0, transaction=tx)
            tx.abort()
    with QueueManager.open(tmp_path) as qm:
        assert qm.queue(r".\private$\t").peek(timeout=0).abort_count == 2


def test_message_ids_stay_unique_across_restarts(tmp_path: Path) -> None:
    ids = set()
    for _ in range(3):
        with QueueManager.open(tmp_path) as qm:
            if not qm.queue_exists(r".\private$\i"):
                qm.create_queue(r".\private$\i")
            q = qm.queue(r".\private$\i")
            for _ in range(5):
                m = Message()
                q.send(m)
                ids.add(m.id)
    assert len(ids) == 15


def test_memory_store_forgets_everything() -> None:
    with QueueManager.open(":memory:") as qm:
        qm.create_queue(r".\private$\x").send(Message(delivery=1))
    with QueueManager.open(":memory:") as qm:
        assert not qm.queue_exists(r".\private$\x")


def test_reopening_writes_nothing(tmp_path: Path) -> None:
    # A queue manager whose disk is full still opens, so that its messages can be received: opening
    # an existing store with the same settings writes nothing (the WAL stays empty after a clean close).
    d = tmp_path / "qm"
    with QueueManager.open(d, machine_quota=100) as qm, qm.create_queue(r".\private$\a", journal=True) as q:
        q.send(Message(body=b"kept", delivery=1))
    with QueueManager.open(d, machine_quota=100) as qm:  # the same quota again: nothing to write
        wal = d / "pymsmq.db-wal"
        assert not wal.exists() or wal.stat().st_size == 0
        with qm.queue(r".\private$\a") as q:
            assert q.receive(0).body == b"kept"


def test_messages_that_expired_while_closed_all_expire_on_reopen_with_the_timer_thread(
    tmp_path: Path,
) -> None:
    # The real clock and its timer thread: the first restored deadline started the thread, which
    # expired messages while the restore still pushed timers (TimerHeap is not thread-safe): a few
    # of 10,000 expired messages were left in no timer, in the queue, receivable for ever.
    qm = QueueManager.open(tmp_path / "qm")
    q = qm.create_queue(r".\private$\ttbr")
    batch: list[Message] = []
    for i in range(10_000):
        batch.append(Message(body=b"E%d" % i, delivery=1, max_time_to_receive=1, journal=MQMSG_DEADLETTER))
        batch.append(Message(body=b"I%d" % i, delivery=1))
    for start in range(0, len(batch), 1000):
        q.send_many(batch[start : start + 1000])
    qm.close()
    time.sleep(2.2)  # every E deadline passes while the queue manager is closed
    qm = QueueManager.open(tmp_path / "qm")
    try:
        q = qm.queue(r".\private$\ttbr")
        left = [m.body for m in q.receive_many(30_000, timeout=0)]
        dead = qm.dead_letter_queue.receive_many(30_000, timeout=0)
        assert not [b for b in left if b.startswith(b"E")]
        assert len(left) == 10_000 and len(dead) == 10_000
    finally:
        qm.close()
