"""Quotas: queue quota (KB, [MS-MQMQ] 2.3.1.5) and machine quota ([MS-MQDMPR] 3.1.1.1
QueueManagerQuota), [MS-MQDMPR] 3.1.7.1.9 Enqueue Message step 1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import MQ_SINGLE_MESSAGE, HResult, Message, MSMQError, QueueManager, QuotaExceededError


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:" if request.param == "memory" else tmp_path / "qm")
    yield m
    m.close()


def test_queue_quota(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q", quota=1)  # 1 KB
    q.send(Message(body=b"x" * 600))
    with pytest.raises(QuotaExceededError) as e:
        q.send(Message(body=b"x" * 600, delivery=1))
    assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    assert e.value.msg_class == 0x8003  # MQMSG_CLASS_NACK_Q_EXCEED_QUOTA
    assert isinstance(e.value, MSMQError) and q.message_count == 1
    q.send(Message(body=b"x" * 424))  # exactly 1024 bytes in total
    q.receive(timeout=0)
    q.send(Message(body=b"x" * 600))  # room again after a receive


def test_quota_counts_label_and_extension(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q", quota=1)
    q.send(Message(label="l" * 200, extension=b"e" * 600))  # 400 + 600
    with pytest.raises(QuotaExceededError):
        q.send(Message(body=b"x" * 30))


def test_quota_counts_locked_and_uncommitted(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True, quota=1)
    tx = qm.begin_transaction()
    q.send(Message(body=b"x" * 600), transaction=tx)
    with pytest.raises(QuotaExceededError):
        q.send(Message(body=b"x" * 600), transaction=MQ_SINGLE_MESSAGE)
    tx.abort()
    q.send(Message(body=b"x" * 600), transaction=MQ_SINGLE_MESSAGE)
    tx = qm.begin_transaction()
    q.receive(timeout=0, transaction=tx)
    with pytest.raises(QuotaExceededError):  # the locked message still occupies the queue
        q.send(Message(body=b"x" * 600), transaction=MQ_SINGLE_MESSAGE)
    tx.commit()
    q.send(Message(body=b"x" * 600), transaction=MQ_SINGLE_MESSAGE)


def test_raising_the_quota(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q", quota=1)
    q.send(Message(body=b"x" * 1000))
    with pytest.raises(QuotaExceededError):
        q.send(Message(body=b"x" * 1000))
    qm.set_queue_properties(q.format_name, quota=2)
    q.send(Message(body=b"x" * 1000))
    qm.set_queue_properties(q.format_name, quota=0xFFFFFFFF)
    q.send(Message(body=b"x" * 100_000))


def test_machine_quota(tmp_path: Path) -> None:
    with QueueManager.open(":memory:", machine_quota=2) as qm:
        a = qm.create_queue(r".\private$\a")
        b = qm.create_queue(r".\private$\b")
        a.send(Message(body=b"x" * 1500))
        with pytest.raises(QuotaExceededError) as e:
            b.send(Message(body=b"x" * 600))
        assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES and e.value.msg_class is None
        assert qm.total_bytes == 1500
        a.receive(timeout=0)
        b.send(Message(body=b"x" * 600))


def test_journal_copies_are_not_made_over_the_machine_quota() -> None:
    # PROPID_Q_JOURNAL_QUOTA: "If the journal or computer quota is exceeded, Message Queuing will
    # not send copies of the messages to the journal" (a copy over it left every send refused).
    from pymsmq import MQMSG_JOURNAL

    with QueueManager.open(":memory:", machine_quota=2) as qm:
        q = qm.create_queue(r".\private$\a", journal=True)
        q.send(Message(body=b"x" * 1500, journal=MQMSG_JOURNAL))  # source journal: no room for its copy
        assert qm.machine_journal.message_count == 0 and qm.total_bytes == 1500
        q.send(Message(body=b"y" * 10))  # not refused
        assert q.receive(timeout=0).body == b"x" * 1500  # its queue's journal: the copy takes
        assert q.journal.message_count == 1 and qm.total_bytes == 1510  # the bytes it gave back
        q.send(Message(body=b"z" * 500, journal=MQMSG_JOURNAL))  # 2010 + 500 > 2048: no copy
        assert qm.machine_journal.message_count == 0 and qm.total_bytes == 2010


def test_machine_quota_is_persisted(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "m", machine_quota=1) as qm:
        assert qm.machine_quota == 1
    with QueueManager.open(tmp_path / "m") as qm:
        assert qm.machine_quota == 1
        q = qm.create_queue(r".\private$\a")
        with pytest.raises(QuotaExceededError):
            q.send(Message(body=b"x" * 2000))


def test_an_infinite_machine_quota_removes_the_kept_limit(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "m", machine_quota=1) as qm:
        qm.create_queue(r".\private$\a").close()
    with QueueManager.open(tmp_path / "m", machine_quota=0xFFFFFFFF) as qm:  # INFINITE
        assert qm.machine_quota is None
        with qm.queue(r".\private$\a") as q:
            q.send(Message(body=b"x" * 2000, delivery=1))
    with QueueManager.open(tmp_path / "m") as qm, qm.queue(r".\private$\a") as q:
        assert qm.machine_quota is None  # removed for good, not only for that open
        q.send(Message(body=b"x" * 2000))
        assert q.message_count == 2
