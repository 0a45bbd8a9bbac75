"""The express-send fast paths produce exactly what the general code produces.

* ``queue._queued_copy`` (the queue's copy of a sent message, built attribute by attribute so that
  CPython keeps the values inline) equals ``Message.copy`` on any message, and is independent of it;
* a message received after ``send`` equals the reference result of [MC-MQAC] 3.17.4.1.48 applied to
  a ``copy()`` of what was sent (the pre-optimisation algorithm, restated here);
* ``MessageIndex.add_new`` leaves the index exactly as ``add(Entry(...))`` does.
"""

from __future__ import annotations

import gc
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymsmq import Message, QueueManager
from pymsmq.model import constants as c
from pymsmq.model.constants import INFINITE
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import DEFAULT_PROVIDER_NAME
from pymsmq.qm.index import AVAILABLE, LOCKED, PENDING, Entry, MessageIndex
from pymsmq.qm.queue import _queued_copy
from pymsmq.qm.timers import FakeClock

u32 = st.integers(0, 0xFFFFFFFF)
ids = st.builds(ObjectId, st.uuids(), st.integers(1, 0xFFFFFFFF))
opt_bytes = st.none() | st.binary(min_size=1, max_size=16)

# Every property an application may set, with valid values (any subset is a valid message).
PROPERTIES: dict[str, st.SearchStrategy[object]] = {
    "body": st.binary(max_size=64),
    "label": st.text(max_size=20).filter(lambda s: "\x00" not in s),
    "body_type": u32,
    "extension": st.binary(max_size=16),
    "app_specific": u32,
    "correlation_id": st.none() | ids,
    "msg_class": st.integers(0, 0xFFFF),
    "priority": st.integers(0, 7),
    "delivery": st.sampled_from([0, 1]),
    "ack": st.sampled_from(sorted(c.VALID_ACK_VALUES)),
    "journal": st.sampled_from([0, 1]),  # not MQMSG_JOURNAL (2): no journal copies to compare
    "trace": st.just(0),
    "max_time_to_reach_queue": u32,
    "max_time_to_receive": u32,
    "dead_letter_queue": st.none() | st.just(r".\private$\dlq"),
    "priv_level": st.sampled_from([0, 1, 3]),
    "auth_level": st.sampled_from([0, 1, 2, 4, 8]),
    "hash_algorithm": u32,
    "encrypt_algorithm": u32,
    "sender_id": opt_bytes,
    "sender_id_type": st.sampled_from([0, 1, 2]),
    "sender_certificate": opt_bytes,
    "signature": opt_bytes,
    "destination_symmetric_key": opt_bytes,
    "authentication_provider_type": u32,
    "authentication_provider_name": st.none() | st.text(max_size=8).filter(lambda s: "\x00" not in s),
    "connector_type_guid": st.none() | st.uuids(),
    # Facts a received message carries when it is sent again.
    "id": st.none() | ids,
    "lookup_id": st.integers(0, 2**64 - 1),
    "sent_time": st.none() | st.integers(0, 2**31).map(float),
    "arrived_time": st.none() | st.integers(0, 2**31).map(float),
    "source_machine_guid": st.none() | st.uuids(),
    "destination_queue": st.none() | st.text(max_size=8),
    "transaction_status_queue": st.none() | st.text(max_size=8),
    "transaction_id": st.none() | ids,
    "is_first_in_transaction": st.booleans(),
    "is_last_in_transaction": st.booleans(),
    "received_authentication_level": st.integers(0, 0xFFFF),
    "abort_count": u32,
    "move_count": u32,
    "soap_envelope": st.none() | st.text(max_size=8),
    "compound_message": opt_bytes,
}


@st.composite
def messages(draw: st.DrawFn) -> Message:
    """A valid message with a random subset of its properties set (possibly all of them)."""
    names = draw(st.lists(st.sampled_from(sorted(PROPERTIES)), unique=True))
    return Message(**{name: draw(PROPERTIES[name]) for name in names})


# ---------------------------------------------------------------- the queue's copy
@given(messages())
def test_queued_copy_equals_copy(message: Message) -> None:
    copied = _queued_copy(message)
    reference = message.copy()
    assert type(copied) is Message
    assert copied == reference and vars(copied) == vars(reference)
    copied.body = b"changed"
    copied.label = "changed"
    assert message == reference  # independent of the original


@settings(max_examples=20)
@given(st.fixed_dictionaries(PROPERTIES))
def test_queued_copy_keeps_extra_attributes_and_wide_messages(props: dict[str, object]) -> None:
    every = Message(**props)
    every.custom = 5  # type: ignore[attr-defined]
    for _ in range(3):  # more properties than CPython's shared instance keys: the dict fallback
        copied = _queued_copy(every)
        assert vars(copied) == vars(every.copy()) and copied.custom == 5  # type: ignore[attr-defined]


@pytest.mark.skipif(
    sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info < (3, 14),
    reason="CPython 3.11-3.13 inline instance values",
)
def test_queued_express_message_has_no_instance_dict() -> None:
    # The reason for _queued_copy: a queued express message is one GC-tracked object, not two.
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\inline")
        for _ in range(3):
            q.send(Message(body=b"x" * 200))
        entry = next(iter(q._state.index))
        # (message.py claims CPython's shared instance keys for the properties send sets, so this
        # holds even after messages with many rare properties, as earlier tests here create.)
        assert not any(type(r) is dict for r in gc.get_referents(entry.message))
    finally:
        qm.close()


# ---------------------------------------------------------------- send end to end
@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueueManager]:
    where = ":memory:" if request.param == "memory" else tmp_path_factory.mktemp("qm") / "qm"
    m = QueueManager.open(where, clock=FakeClock(1_700_000_000.25))
    yield m
    m.close()


def _reference_receive(sent: Message, before: Message, qm: QueueManager, fmt: str, lid: int) -> Message:
    # The general algorithm: a copy() of the message as given, then the assignments of [MC-MQAC]
    # 3.17.4.1.48 steps 7, 9-12 (values read back from what send stamped on the caller's message).
    now = qm._clock()
    m = before.copy()
    m.id = sent.id
    m.source_machine_guid = qm.guid
    m.destination_queue = fmt
    m.sent_time = float(int(now))
    m.arrived_time = now
    # Outside a transaction: no transaction facts ([MC-MQAC] 3.17.4.1.68-70, queue-manager properties).
    if m.transaction_id is not None or m.is_first_in_transaction or m.is_last_in_transaction:
        m.transaction_id = None
        m.is_first_in_transaction = m.is_last_in_transaction = False
    if m.abort_count or m.move_count or m.last_move_time is not None:
        m.abort_count = m.move_count = 0
        m.last_move_time = None
    if INFINITE != m.max_time_to_reach_queue > m.max_time_to_receive:
        m.max_time_to_receive = m.max_time_to_reach_queue
    # No provider where the SecurityHeader would carry nothing else: its packet states the default.
    if m.authentication_provider_name is None and not (
        m.sender_id or m.sender_certificate or m.signature or m.destination_symmetric_key
    ):
        m.authentication_provider_name = DEFAULT_PROVIDER_NAME
    m.lookup_id = lid
    return m


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(messages(), min_size=1, max_size=5))
def test_received_message_equals_the_general_algorithm(qm: QueueManager, batch: list[Message]) -> None:
    name = rf".\private$\eq{uuid.uuid4().hex[:8]}"
    q = qm.create_queue(name)
    expected = []
    for message in batch:
        message.ack = message.ack & ~1  # no arrival acks (their admin queue is not set anyway)
        message.max_time_to_receive = max(message.max_time_to_receive, 1)  # not expired at once
        if message.sender_id_type == 0:
            message.sender_id = None  # a packet cannot carry it ([MS-MQMQ] 2.2.20.6 ST)
        before = message.copy()
        q.send(message)
        assert message.id is not None and message.id.lineage == qm.guid
        assert message.source_machine_guid == qm.guid and message.destination_queue == q.format_name
        assert message.sent_time == float(int(qm._clock()))
        expected.append((before, message.copy()))
    received = [q.receive(timeout=0) for _ in batch]
    by_id = {r.id: r for r in received}
    for before, sent in expected:
        r = by_id[sent.id]
        assert r == _reference_receive(sent, before, qm, q.format_name, r.lookup_id)
        assert vars(r) == vars(_reference_receive(sent, before, qm, q.format_name, r.lookup_id))
    qm.delete_queue(name)


# ---------------------------------------------------------------- MessageIndex.add_new
_SLOTS = Entry.__slots__


def _facts(index: MessageIndex) -> object:
    entries = [tuple(getattr(e, name) for name in _SLOTS) for e in index]
    counters = (index.total_bytes, index.locked, index.pending, index.pending_bytes)
    return entries, len(index), counters, index.tail_position()


ops = st.lists(
    st.tuples(
        st.integers(1, 60),  # lookup id (repeats and out-of-order ids exercise add's general path)
        st.integers(0, 7),
        st.integers(0, 500),
        st.sampled_from([AVAILABLE, LOCKED, PENDING]),
        st.none() | st.floats(0, 1e9),
        st.booleans(),  # remove it again afterwards
    ),
    max_size=40,
)


@given(ops)
def test_add_new_is_add_of_a_new_entry(steps: list[tuple[int, int, int, int, float | None, bool]]) -> None:
    fast, general = MessageIndex(), MessageIndex()
    message = Message()
    for lid, priority, size, state, expires_at, remove in steps:
        if lid in general:
            continue
        a = fast.add_new(lid, priority, message, size, state, expires_at)
        b = Entry(lid, priority, message, size, state, False, expires_at)
        general.add(b)
        assert tuple(getattr(a, n) for n in _SLOTS) == tuple(getattr(b, n) for n in _SLOTS)
        if remove:
            assert fast.remove(a) and general.remove(b)
        assert _facts(fast) == _facts(general)
        assert fast.first() is fast.get(general.first().lookup_id) if general.first() else not fast.first()


# ---------------------------------------------------------------- reserved id blocks
def test_ids_cross_the_reserved_blocks(tmp_path: Path) -> None:
    # Queue._enqueue steps the ordinal and the lookup id itself inside their durably reserved
    # blocks and calls _next_ordinal / _next_lookup at the edge: ids stay consecutive and unique,
    # and a restart continues after the reservation.
    qm = QueueManager.open(tmp_path / "qm")
    q = qm.create_queue(r".\private$\blocks")
    state = q._state
    qm._ordinal_reserved = qm._ordinal + 2
    state.reserved_lookup = state.next_lookup + 1
    sent = [Message(body=bytes([i])) for i in range(7)]
    for m in sent:
        q.send(m)
    assert [m.id.uniquifier for m in sent] == list(range(sent[0].id.uniquifier, sent[0].id.uniquifier + 7))
    got = [q.receive(timeout=0) for _ in sent]
    assert [r.lookup_id for r in got] == list(range(got[0].lookup_id, got[0].lookup_id + 7))
    assert [r.id for r in got] == [m.id for m in sent]
    assert qm._ordinal_reserved >= qm._ordinal and state.reserved_lookup >= state.next_lookup - 1
    last_ordinal, last_lookup = sent[-1].id.uniquifier, got[-1].lookup_id
    qm.close()
    qm = QueueManager.open(tmp_path / "qm")
    q = qm.queue(r".\private$\blocks")
    m = Message(body=b"after")
    q.send(m)
    assert m.id.uniquifier > last_ordinal and q.receive(timeout=0).lookup_id > last_lookup
    qm.close()


def test_each_open_reserves_a_small_block_of_ids(tmp_path: Path) -> None:
    # Outside QA: every open that sent reserved 65,536 ids, so the u32 uniquifier wrapped after
    # 65,536 opens (a CLI `send`, a short-lived worker).  Blocks start at 256 and double.
    ids = []
    for _ in range(3):
        qm = QueueManager.open(tmp_path / "qm")
        q = qm.queue(r".\private$\blocks") if qm.queue_exists(r".\private$\blocks") else None
        q = q or qm.create_queue(r".\private$\blocks")
        m = Message(body=b"x", delivery=1)
        q.send(m)
        ids.append(m.id.uniquifier)
        qm.close()
    assert ids[1] - ids[0] <= 256 and ids[2] - ids[1] <= 256
    qm = QueueManager.open(tmp_path / "qm")
    q = qm.queue(r".\private$\blocks")
    sent = [Message(body=b"y") for _ in range(5000)]
    q.send_many(sent)
    assert [m.id.uniquifier for m in sent] == list(range(sent[0].id.uniquifier, sent[0].id.uniquifier + 5000))
    assert qm._ordinal_reserved - qm._ordinal < 1 << 16
    qm.close()


@pytest.mark.parametrize("path", ["send", "send_many", "transaction"])
def test_the_uniquifier_wraps_past_zero(tmp_path: Path, path: str) -> None:
    # [MS-MQMQ] 2.2.19.2: ordinal 0 is "no id".  At the wrap of the u32 uniquifier a send drew it
    # and was refused with MQ_ERROR_ILLEGAL_PROPERTY_VALUE (outside QA): it goes from 2**32 - 1 to
    # 1, on every send path, and across a restart.
    qm = QueueManager.open(tmp_path / "qm")
    q = qm.create_queue(r".\private$\wrap", transactional=path == "transaction")
    qm._ordinal = qm._ordinal_reserved = (1 << 32) - 3  # as a store that issued that many reopens
    sent = [Message(body=bytes([i]), delivery=1) for i in range(5)]
    if path == "send":
        for m in sent:
            q.send(m)
    elif path == "send_many":
        q.send_many(sent)
    else:
        with qm.begin_transaction() as tx:
            for m in sent:
                q.send(m, tx)
    ids = [m.id.uniquifier for m in sent]
    top = 1 << 32
    # (a transaction's own id takes the first ordinal)
    expected = [top - 1, 1, 2, 3, 4] if path == "transaction" else [top - 2, top - 1, 1, 2, 3]
    assert ids == expected
    assert q.message_count == 5
    qm.close()
    qm = QueueManager.open(tmp_path / "qm")
    m = Message(body=b"after", delivery=1)
    qm.queue(r".\private$\wrap").send(m, 3 if path == "transaction" else None)
    assert 3 < m.id.uniquifier < 1 << 16
    qm.close()
