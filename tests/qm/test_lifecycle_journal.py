"""Journals ([MC-MQAC] 1.3 Message Journaling, [MS-MQDMPR] 3.1.1.12, digest D7): queue journal copies,
machine journal (MQMSG_JOURNAL), journal quotas, read-only journals; trace reports ([MS-MQQB] 1.3.6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import (
    MQ_SINGLE_MESSAGE,
    MQMSG_DEADLETTER,
    MQMSG_JOURNAL,
    HResult,
    Message,
    MSMQError,
    QueueManager,
)
from pymsmq.qm.lifecycle import REPORT_QUEUE_TYPE
from pymsmq.qm.queue import Queue
from pymsmq.qm.timers import FakeClock


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QueueManager]:
    m = QueueManager.open(
        ":memory:" if request.param == "memory" else tmp_path / "qm", clock=FakeClock(1_600_000_000.0)
    )
    yield m
    m.close()


def drain(q: Queue) -> list[Message]:
    out = []
    while True:
        try:
            out.append(q.receive(timeout=0))
        except MSMQError as e:
            assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
            return out


def test_queue_journal_copy_on_receive(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\j", journal=True)
    m = Message(body=b"a", label="x", delivery=1)
    q.send(m)
    q.send(Message(body=b"b"))
    assert q.journal.message_count == 0  # copies on receive, not on send
    assert q.receive(timeout=0).body == b"a"
    copies = drain(q.journal)
    assert [(c.body, c.id, c.label, c.msg_class) for c in copies] == [(b"a", m.id, "x", 0)]
    q.peek(timeout=0)
    assert q.journal.message_count == 0  # a peek is not a receive


def test_no_journal_when_off_and_after_turning_on(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\j")
    q.send(Message(body=b"a"))
    q.receive(timeout=0)
    assert q.journal.message_count == 0
    qm.set_queue_properties(r".\private$\j", journal=True)
    q.send(Message(body=b"b"))
    q.receive(timeout=0)
    assert [c.body for c in drain(q.journal)] == [b"b"]


def test_transactional_receive_journals_at_commit(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True, journal=True)
    q.send(Message(body=b"t"), transaction=MQ_SINGLE_MESSAGE)
    tx = qm.begin_transaction()
    q.receive(timeout=0, transaction=tx)
    tx.abort()
    assert q.journal.message_count == 0
    with qm.begin_transaction() as tx:
        q.receive(timeout=0, transaction=tx)
    assert [c.body for c in drain(q.journal)] == [b"t"]


def test_journal_quota_discards_copies(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\j", journal=True, journal_quota=1)
    for body in (b"a" * 700, b"b" * 700, b"c" * 300):
        q.send(Message(body=body))
        q.receive(timeout=0)  # the receive itself always succeeds
    assert [c.body[:1] for c in drain(q.journal)] == [b"a", b"c"]


def test_machine_journal_quota(tmp_path: Path) -> None:
    qm = QueueManager.open(":memory:", machine_journal_quota=1)
    try:
        q = qm.create_queue(r".\private$\j", journal=True)
        q.send(Message(body=b"a" * 800))
        q.send(Message(body=b"b" * 800))
        drain(q)
        assert q.journal.message_count == 1
    finally:
        qm.close()


def test_machine_journal_for_message_journal_flag(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    t = qm.create_queue(r".\private$\t", transactional=True)
    q.send(Message(body=b"n", journal=MQMSG_JOURNAL))
    # Non-transactional: delivery is confirmed on arrival.
    assert [m.body for m in drain(qm.machine_journal)] == [b"n"]
    t.send(Message(body=b"t", journal=MQMSG_JOURNAL), transaction=MQ_SINGLE_MESSAGE)
    assert qm.machine_journal.message_count == 0
    t.receive(timeout=0)  # transactional: on the positive FinalAck, i.e. the receive
    assert [m.body for m in drain(qm.machine_journal)] == [b"t"]
    q.send(Message(body=b"plain"))
    assert qm.machine_journal.message_count == 0


@pytest.mark.parametrize("which", ["queue", "machine", "dlq", "xdlq"])
def test_journals_and_dead_letter_queues_are_read_only(qm: QueueManager, which: str) -> None:
    q = qm.create_queue(r".\private$\j", journal=True)
    target = {
        "queue": q.journal,
        "machine": qm.machine_journal,
        "dlq": qm.dead_letter_queue,
        "xdlq": qm.transactional_dead_letter_queue,
    }[which]
    with pytest.raises(MSMQError) as e:
        target.send(Message(body=b"x"), transaction=MQ_SINGLE_MESSAGE if which == "xdlq" else None)
    assert e.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED


def test_journal_survives_restart(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        q = qm.create_queue(r".\private$\j", journal=True)
        q.send(Message(body=b"r", delivery=1))
        q.receive(timeout=0)
    with QueueManager.open(tmp_path) as qm:
        assert [m.body for m in drain(qm.queue(r".\private$\j").journal)] == [b"r"]


def test_trace_report_to_report_queue(qm: QueueManager) -> None:
    report = qm.create_queue(r".\reports", service_type_guid=REPORT_QUEUE_TYPE)
    q = qm.create_queue(r".\private$\q")
    m = Message(body=b"x", trace=1)
    q.send(m)
    q.send(Message(body=b"untraced"))
    reports = drain(report)
    assert len(reports) == 1
    r = reports[0]
    assert m.id is not None
    assert r.msg_class == 0x0001 and r.delivery == 0  # MQMSG_CLASS_REPORT, express
    assert f":{m.id.uniquifier:08x}:" in r.label and f"received by {qm.guid}" in r.label
    body = r.body.decode("utf-16-le")
    assert body == (
        f"<MESSAGE ID>{m.id.uniquifier:08x}</MESSAGE ID>\r\n<TARGET QUEUE>{q.format_name}</TARGET QUEUE>\r\n"
    )


def test_trace_without_report_queue_is_silent(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"x", trace=1))
    assert q.receive(timeout=0).body == b"x"


def test_a_journaled_queue_journals_every_message_received_negative_acknowledgements_too(
    qm: QueueManager,
) -> None:
    # [MC-MQAC] 2.2.2.4 MQ_JOURNAL: "received messages copied to the queue's journal queue", whatever
    # their class: a journaled administration queue kept its positive acknowledgements and lost
    # every NACK received from it.  Such a NACK received sends no ACK_RECEIVE of its own.
    admin = qm.create_queue(r".\private$\admin", journal=True)
    q = qm.create_queue(r".\private$\q")
    for body in (b"m1", b"m2"):
        q.send(Message(body=body, label=body.decode(), ack=0xF, admin_queue=admin.format_name))
    q.receive(timeout=0)
    q.purge()
    received = drain(admin)
    assert sorted((a.msg_class, a.label) for a in received) == [
        (0x0002, "m1"),
        (0x0002, "m2"),
        (0x4000, "m1"),
        (0xC001, "m2"),
    ]
    assert sorted((c.msg_class, c.label) for c in drain(admin.journal)) == sorted(
        (a.msg_class, a.label) for a in received
    )
    assert admin.message_count == 0  # no acknowledgement of an acknowledgement


def test_a_journaled_dead_letter_queue_of_its_own_journals_its_dead_letters(qm: QueueManager) -> None:
    # A dead letter received from a journaled application dead-letter queue is copied to its
    # journal (and, being a failure already reported, gets no ACK_RECEIVE).
    mydlq = qm.create_queue(r".\private$\mydlq", journal=True)
    admin = qm.create_queue(r".\private$\admin")
    q = qm.create_queue(r".\private$\q")
    q.send(
        Message(
            body=b"d",
            journal=MQMSG_DEADLETTER,
            dead_letter_queue=mydlq.format_name,
            max_time_to_receive=0,
            ack=0xF,
            admin_queue=admin.format_name,
        )
    )
    assert [a.msg_class for a in drain(admin)] == [0x0002, 0xC002]
    dead = mydlq.receive(timeout=0)
    assert (dead.body, dead.msg_class) == (b"d", 0xC002)
    assert [(c.body, c.msg_class) for c in drain(mydlq.journal)] == [(b"d", 0xC002)]
    assert drain(admin) == []
