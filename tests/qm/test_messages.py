"""Message properties through the queue manager: what send assigns ([MC-MQAC] 3.17.4.1.48), what a
received message carries, ordering (priority, FIFO; transactional send order), D9 51/92/95/96/100."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq import MQMSG_DELIVERY_RECOVERABLE, HResult, Message, MSMQError, QueueManager
from pymsmq.model.ids import ObjectId


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QueueManager]:
    now = [1_700_000_000.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    m = QueueManager.open(":memory:" if request.param == "memory" else tmp_path / "qm", clock=clock)
    yield m
    m.close()


def test_send_assigns_identity_and_times(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\m")
    m = Message(body=b"hello", label="greeting")
    q.send(m)
    assert isinstance(m.id, ObjectId) and m.id.lineage == qm.guid and len(bytes(m.id)) == 20
    assert m.source_machine_guid == qm.guid and m.destination_queue == q.format_name
    assert m.sent_time is not None
    r = q.receive(timeout=0)
    assert r.id == m.id and r.body == b"hello" and r.label == "greeting"
    assert r.sent_time == m.sent_time and r.arrived_time is not None and r.arrived_time >= r.sent_time
    assert r.lookup_id > 0 and r.source_machine_guid == qm.guid and r.destination_queue == q.format_name
    assert r.sender_version == 0x10


def test_resending_the_same_object_gets_a_new_id(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\m")
    m = Message(body=b"x")
    q.send(m)
    first = m.id
    q.send(m)
    assert m.id != first
    a, b = q.receive(timeout=0), q.receive(timeout=0)
    assert a.id == first and b.id == m.id and a.id != b.id


def test_properties_survive_the_queue(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\m")
    corr = ObjectId(uuid.uuid4(), 5)
    ctg = uuid.uuid4()
    sent = Message(
        body=b"\x00\x01",
        label="l",
        priority=6,
        delivery=MQMSG_DELIVERY_RECOVERABLE,
        ack=0x0E,
        journal=3,
        app_specific=0xDEADBEEF,
        correlation_id=corr,
        body_type=8,
        extension=b"ext",
        response_queue="DIRECT=OS:x\\private$\\resp",
        admin_queue="DIRECT=OS:x\\private$\\admin",
        dead_letter_queue=r".\private$\mydlq",
        priv_level=1,
        auth_level=8,
        sender_id=b"sid",
        connector_type_guid=ctg,
        msg_class=0x0001,
        max_time_to_reach_queue=100,
        max_time_to_receive=200,
        trace=1,
    )
    q.send(sent)
    r = q.receive(timeout=0)
    for name in (
        "body",
        "label",
        "priority",
        "delivery",
        "ack",
        "journal",
        "app_specific",
        "correlation_id",
        "body_type",
        "extension",
        "response_queue",
        "admin_queue",
        "dead_letter_queue",
        "priv_level",
        "auth_level",
        "sender_id",
        "connector_type_guid",
        "msg_class",
        "max_time_to_reach_queue",
        "max_time_to_receive",
        "trace",
    ):
        assert getattr(r, name) == getattr(sent, name), name


def test_time_to_receive_raised_to_time_to_reach_queue(qm: QueueManager) -> None:
    # [MC-MQAC] 3.17.4.1.48 step 12 (D9 95).
    q = qm.create_queue(r".\private$\t")
    q.send(Message(max_time_to_reach_queue=60, max_time_to_receive=10))
    assert q.receive(timeout=0).max_time_to_receive == 60


def test_priority_order_then_fifo(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\o")
    for i, p in enumerate([1, 7, 3, 7, 1, 3]):
        q.send(Message(priority=p, app_specific=i))
    got = [(m.priority, m.app_specific) for m in (q.receive(timeout=0) for _ in range(6))]
    assert got == [(7, 1), (7, 3), (3, 2), (3, 5), (1, 0), (1, 4)]


def test_transactional_queue_keeps_send_order(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\tx", transactional=True)
    with qm.begin_transaction() as tx:
        for i, p in enumerate([1, 7, 3]):
            q.send(Message(priority=p, app_specific=i), transaction=tx)
    assert [q.receive(timeout=0).app_specific for _ in range(3)] == [0, 1, 2]


def test_express_and_recoverable_mix(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\mix")
    q.send(Message(body=b"e"))
    q.send(Message(body=b"r", delivery=1))
    assert [q.receive(timeout=0).body for _ in range(2)] == [b"e", b"r"]


def test_invalid_message_rejected_at_send(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\v")
    m = Message()
    m.label = "x" * 300
    with pytest.raises(MSMQError) as e:
        q.send(m)
    assert e.value.hresult == HResult.MQ_ERROR_LABEL_TOO_LONG
    with pytest.raises(MSMQError) as e:
        q.send(b"raw")  # type: ignore[arg-type]
    assert e.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    assert q.message_count == 0


def test_sender_object_is_snapshotted(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\snap")
    m = Message(body=b"before")
    q.send(m)
    m.body = b"after"
    assert q.receive(timeout=0).body == b"before"


def test_peeked_copy_does_not_change_the_queue(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\copy")
    q.send(Message(body=b"orig"))
    p = q.peek(timeout=0)
    p.body = b"changed"
    assert q.peek(timeout=0).body == b"orig"


def test_expiry_deadline_is_recorded(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\exp")
    q.send(Message(max_time_to_receive=30))
    q.send(Message())
    index = q._index()
    a, b = list(index)
    assert a.expires_at == a.message.sent_time + 30  # type: ignore[operator]
    assert b.expires_at is None


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.booleans()), max_size=30))
def test_any_mix_comes_out_in_priority_fifo_order(batch: list[tuple[int, bool]]) -> None:
    with QueueManager.open(":memory:") as qm:
        q = qm.create_queue(r".\private$\h")
        for i, (p, recoverable) in enumerate(batch):
            q.send(Message(priority=p, delivery=int(recoverable), app_specific=i))
        got = [q.receive(timeout=0).app_specific for _ in batch]
        expected = [i for i, _ in sorted(enumerate(batch), key=lambda t: (-t[1][0], t[0]))]
        assert got == expected
        assert q.message_count == 0
