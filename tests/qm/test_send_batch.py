"""``QueueManager.send_batch``, ``Queue.send_many`` and ``Queue.receive_many``.

The batch path must give exactly what ``Queue.send`` one at a time gives: the same errors, the same
messages (ids, lookup ids, order) in the same queues, acknowledgements and dead letters included.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymsmq import MQ_SINGLE_MESSAGE, HResult, Message, MSMQError, QueueManager
from pymsmq.model.ids import ObjectId
from pymsmq.model.packet_mapping import message_to_packet
from pymsmq.protocol.fast_packet import decode_for_send, encode_simple
from pymsmq.qm.send_batch import send_batch
from pymsmq.qm.store.base import Batch, MessageKey
from pymsmq.qm.store.memory import MemoryStore
from pymsmq.qm.timers import FakeClock

_TARGETS = ("plain", "plain2", "tx", "sub", "closed", "quota", "journal", "peek_only", "dead")


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:" if request.param == "memory" else tmp_path / "qm")
    yield m
    m.close()


def _world(qm: QueueManager) -> dict[str, Any]:
    plain = qm.create_queue(r".\private$\plain")
    plain2 = qm.create_queue(r".\private$\plain2", journal=True)
    tx = qm.create_queue(r".\private$\tx", transactional=True)
    qm.create_queue(r".\private$\admin").close()
    closed = qm.queue(r".\private$\plain")
    closed.close()
    return {
        "plain": plain,
        "plain2": plain2,
        "tx": tx,
        "sub": plain.subqueue("s"),
        "closed": closed,
        "quota": qm.create_queue(r".\private$\quota", quota=2),
        "journal": plain2.journal,
        "peek_only": qm.queue(r".\private$\plain", 0x20),
        "dead": qm.dead_letter_queue,
    }


_send = st.tuples(
    st.sampled_from(_TARGETS),
    st.sampled_from([0, 1]),  # delivery
    st.sampled_from([None, 0, MQ_SINGLE_MESSAGE]),  # transaction argument
    st.integers(0, 1500),  # body size
    st.booleans(),  # ask for an arrival ack (and a dead letter copy)
    st.sampled_from([0, 1, 7]),  # priority
    st.booleans(),  # a bad message (invalid property)
)


def _message(delivery: int, size: int, ack: bool, priority: int, bad: bool) -> Message:
    m = Message(body=b"b" * size, delivery=delivery, priority=priority, label=f"{size}")
    if ack:
        m.ack = 1  # MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL
        m.admin_queue = r".\private$\admin"
        m.journal = 2  # MQMSG_DEADLETTER
    if bad:
        m.priority = 99  # out of range: MQ_ERROR_ILLEGAL_PROPERTY_VALUE (from validate)
    return m


def _contents(qm: QueueManager) -> list[str]:
    out = []
    guid = str(qm.guid)
    for name in (r".\private$\plain", r".\private$\plain2", r".\private$\tx", r".\private$\quota"):
        q = qm.queue(name, 0x20)
        for sub in [None, *q.subqueue_names]:
            h = q if sub is None else q.subqueue(sub)
            c = h.cursor()
            try:
                m = c.peek_current(0)
                while True:
                    out.append(f"{name};{sub}:{m!r}".replace(guid, "G").replace(guid.upper(), "G"))
                    m = c.peek_next(0)
            except MSMQError as e:
                assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    for q in (qm.queue(r".\private$\admin"), qm.dead_letter_queue):
        for m in q.receive_many(1000):
            m.body = m.body.replace(guid.encode(), b"G").replace(guid.upper().encode(), b"G")
            out.append(repr(m).replace(guid, "G").replace(guid.upper(), "G"))
    return out


@given(st.lists(_send, max_size=25))
def test_send_batch_equals_sends_one_by_one(sends: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    one = QueueManager.open(":memory:", clock)
    batch = QueueManager.open(":memory:", clock)
    try:
        w1, w2 = _world(one), _world(batch)
        expected: list[int | None] = []
        sent1: list[Message] = []
        for target, delivery, tx, size, ack, priority, bad in sends:
            m = _message(delivery, size, ack, priority, bad)
            sent1.append(m)
            try:
                w1[target].send(m, tx)
                expected.append(None)
            except MSMQError as e:
                expected.append(e.hresult)
        items = [(w2[t], _message(d, s, a, p, b), tx) for t, d, tx, s, a, p, b in sends]
        got = batch.send_batch(items)
        assert [None if e is None else e.hresult for e in got] == expected
        for m1, (_, m2, _) in zip(sent1, items, strict=True):
            # The caller's message gets the same id, sent time and destination on both paths.
            assert (m1.id and m1.id.uniquifier) == (m2.id and m2.id.uniquifier)
            assert m1.sent_time == m2.sent_time
        assert _contents(one) == _contents(batch)
    finally:
        one.close()
        batch.close()


def test_send_batch_one_store_batch(tmp_path: Path) -> None:
    qm = QueueManager.open(tmp_path / "qm")
    try:
        q = qm.create_queue(r".\private$\q")
        q.send(Message(body=b"warm-up", delivery=1))  # reserves lookup ids and message ids
        q.receive(0)
        store = qm._store
        before = store.batches  # type: ignore[attr-defined]
        errors = qm.send_batch([(q, Message(body=b"%d" % i, delivery=1), None) for i in range(50)])
        assert errors == [None] * 50
        assert store.batches == before + 1  # type: ignore[attr-defined]
        assert [m.body for m in q.receive_many(60)] == [b"%d" % i for i in range(50)]
    finally:
        qm.close()


def test_recoverable_messages_visible_only_once_durable() -> None:
    gate = threading.Event()
    entered = threading.Event()

    class SlowStore(MemoryStore):
        def apply(self, batch: Batch) -> None:
            if batch.insert:
                entered.set()
                gate.wait(5)
            super().apply(batch)

    qm = QueueManager.open(":memory:", store=SlowStore())
    try:
        q = qm.create_queue(r".\private$\q")
        result: list[Any] = []
        t = threading.Thread(
            target=lambda: result.append(qm.send_batch([(q, Message(body=b"r", delivery=1), None)]))
        )
        t.start()
        assert entered.wait(5)
        with pytest.raises(MSMQError) as e:
            q.peek(0)
        assert e.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
        gate.set()
        t.join(5)
        assert result == [[None]]
        assert q.peek(0).body == b"r"
    finally:
        gate.set()
        qm.close()


def test_a_failing_store_write_fails_only_its_message() -> None:
    class PickyStore(MemoryStore):
        def apply(self, batch: Batch) -> None:
            if any(m.priority == 6 for m in batch.insert):
                raise MSMQError("no", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)
            super().apply(batch)

    qm = QueueManager.open(":memory:", store=PickyStore())
    try:
        q = qm.create_queue(r".\private$\q")
        items = [
            (q, Message(body=b"%d" % i, delivery=1, priority=6 if i == 2 else 3), None) for i in range(4)
        ]
        errors = qm.send_batch(items)
        assert [e is None for e in errors] == [True, True, False, True]
        assert errors[2] is not None and errors[2].hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
        assert [m.body for m in q.receive_many(10)] == [b"0", b"1", b"3"]
        # A lone failing send reports the store's error as well.
        (err,) = qm.send_batch([(q, Message(body=b"x", delivery=1, priority=6), None)])
        assert err is not None and q.message_count == 0
    finally:
        qm.close()


def test_send_batch_rejects_foreign_queue_and_non_message(qm: QueueManager) -> None:
    other = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\q")
        foreign = other.create_queue(r".\private$\q")
        errors = qm.send_batch([(foreign, Message(), None), (q, "no", None), (q, Message(body=b"ok"), None)])  # type: ignore[list-item]
        assert errors[0] is not None and errors[0].hresult == HResult.MQ_ERROR_INVALID_HANDLE
        assert errors[1] is not None and errors[1].hresult == HResult.MQ_ERROR_INVALID_PARAMETER
        assert errors[2] is None and q.receive(0).body == b"ok"
        assert qm.send_batch([]) == []
    finally:
        other.close()


def test_send_many_sends_all_then_raises_first(qm: QueueManager) -> None:
    # A message the queue refuses (here: over the queue's 1 KB quota) does not stop the others.
    q = qm.create_queue(r".\private$\q", quota=1)
    msgs = [Message(body=b"a", delivery=1), Message(body=b"b" * 2048), Message(body=b"c")]
    with pytest.raises(MSMQError) as e:
        q.send_many(msgs)
    assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    assert msgs[0].id is not None and msgs[2].id is not None
    assert [m.body for m in q.receive_many(5)] == [b"a", b"c"]
    q.send_many(Message(body=b"%d" % i) for i in range(3))
    assert [m.body for m in q.receive_many(5)] == [b"0", b"1", b"2"]


def test_send_many_validates_every_message_before_sending_any(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    bad = Message()
    bad.priority = 99
    msgs = [Message(body=b"a", delivery=1), bad, Message(body=b"c")]
    with pytest.raises(MSMQError) as e:
        q.send_many(msgs)
    assert e.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
    assert msgs[0].id is None and msgs[2].id is None
    assert q.receive_many(5) == []


def test_send_many_in_a_transaction(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    with qm.begin_transaction() as tx:
        q.send_many([Message(body=b"1"), Message(body=b"2")], tx)
        assert q.receive_many(2) == []  # not visible before commit
    got = []
    with qm.begin_transaction() as tx:
        got = q.receive_many(3, 0, tx)
    assert [m.body for m in got] == [b"1", b"2"]
    with pytest.raises(MSMQError) as e:
        q.send_many([Message()])  # non-transactional send to a transactional queue
    assert e.value.hresult == HResult.MQ_ERROR_TRANSACTION_USAGE


def test_receive_many_timeout_and_errors(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    assert q.receive_many(0) == []
    start = time.monotonic()
    assert q.receive_many(3, 0.2) == []
    assert time.monotonic() - start < 1.5  # every receive waits until 0.2 s after the call at most
    for bad in (-1, 1.5, True):
        with pytest.raises(MSMQError) as e:
            q.receive_many(bad)  # type: ignore[arg-type]
        assert e.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    with pytest.raises(MSMQError) as e:
        q.receive_many(1, -1)
    assert e.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    send_only = qm.queue(r".\private$\q", 2)
    with pytest.raises(MSMQError) as e:
        send_only.receive_many(2)
    assert e.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED


def test_receive_many_gets_arrivals_while_waiting(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    timer = threading.Timer(0.1, lambda: q.send(Message(body=b"late", delivery=1)))
    timer.start()
    try:
        assert [m.body for m in q.receive_many(1, 5)] == [b"late"]
    finally:
        timer.cancel()


def test_send_batch_with_a_transaction(qm: QueueManager) -> None:
    t = qm.create_queue(r".\private$\t", transactional=True)
    plain = qm.create_queue(r".\private$\p")
    with qm.begin_transaction() as tx:
        errors = qm.send_batch(
            [(t, Message(body=b"1"), tx), (plain, Message(body=b"2"), tx), (t, Message(body=b"3"), tx)]
        )
        assert errors[0] is None and errors[2] is None
        assert errors[1] is not None and errors[1].hresult == HResult.MQ_ERROR_TRANSACTION_USAGE
        assert t.receive_many(5) == []  # visible only once committed
    assert [m.body for m in t.receive_many(5)] == [b"1", b"3"]


def _lookup_id(m: Message) -> int:
    assert m.lookup_id is not None
    return m.lookup_id


_simple = st.builds(
    Message,
    body=st.binary(max_size=300),
    label=st.text(st.characters(min_codepoint=1, exclude_categories=("Cs",)), max_size=20),
    priority=st.integers(0, 7),
    delivery=st.just(1),
    journal=st.sampled_from([0, 1]),
    app_specific=st.integers(0, 0xFFFFFFFF),
    max_time_to_receive=st.sampled_from([0xFFFFFFFF, 3600, 10**6]),
    extension=st.binary(max_size=20),
    correlation_id=st.none() | st.builds(ObjectId, st.uuids(), st.integers(0, 0xFFFFFFFF)),
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_simple, min_size=1, max_size=8))
def test_send_batch_with_the_sent_packets(tmp_path: Path, messages: list[Message]) -> None:
    # The server's path: each message decoded from the packet a client sent (decode_for_send) and
    # given away with it.  What is stored is the packet of the queued message, and the messages come
    # back from the store after a restart as they were queued.
    path = tmp_path / f"qm-{uuid.uuid4().hex}"
    qm = QueueManager.open(path)
    try:
        q = qm.create_queue(r".\private$\q")
        sends = []
        for m in messages:
            m.validate()
            packet = encode_simple(m)
            assert packet is not None
            decoded = decode_for_send(packet)
            assert decoded is not None and decoded[1]
            sends.append((decoded[0], packet))
        assert send_batch(qm, [(q, m, None) for m, _ in sends], [p for _, p in sends]) == [None] * len(sends)
        for m, _ in sends:
            entry = q._state.index.get(m.lookup_id)
            assert entry is not None and entry.message is m  # given away: queued without a copy
        store = qm._store
        for m, _ in sends:
            stored = store.read_packet(MessageKey(q._state.queue_id, m.lookup_id))
            assert stored == message_to_packet(m)
    finally:
        qm.close()
    again = QueueManager.open(path)
    try:
        got = again.queue(r".\private$\q").receive_many(len(sends) + 1)
        assert sorted(got, key=_lookup_id) == [m for m, _ in sends]
    finally:
        again.close()
