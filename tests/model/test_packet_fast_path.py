"""The stored-packet fast path (``simple_packet``) writes exactly the bytes of the general mapping.

``message_to_packet`` tries a template-based encoder for the common message shape first; it must
either decline (``None``) or produce byte-for-byte what the [MS-MQDMPR] 3.1.7.1.30-32 mapping through
the header dataclasses produces.
"""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st
from test_packet_mapping import single_names

from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import _general_packet, message_to_packet, packet_to_message
from pymsmq.model.simple_packet import simple_packet

u32 = st.integers(0, 0xFFFFFFFF)
labels = st.text(st.characters(codec="utf-16", exclude_characters="\x00", max_codepoint=0xFFFF), max_size=260)


@st.composite
def simple_messages(draw: st.DrawFn) -> Message:
    """Messages that set only properties of the three always-present headers, plus a destination."""
    source = draw(st.uuids())
    kwargs: dict[str, object] = {
        "body": draw(st.binary(max_size=300)),
        "label": draw(labels),
        "destination_queue": draw(st.none() | single_names()),
        "id": ObjectId(source, draw(st.integers(1, 2**32 - 1))),
        "source_machine_guid": source,
        "sent_time": float(draw(st.integers(1, 0xFFFFFFFF))),
    }
    optional = {
        "priority": st.integers(0, 7),
        "delivery": st.sampled_from([0, 1]),
        "journal": st.integers(0, 3),
        "max_time_to_reach_queue": u32,
        "max_time_to_receive": u32,
        "msg_class": st.integers(0, 0xFFFF),
        "correlation_id": st.builds(ObjectId, st.uuids(), st.integers(1, 2**32 - 1)),
        "body_type": u32,
        "app_specific": u32,
        "extension": st.binary(max_size=20),
        "priv_level": st.sampled_from([0, 1, 3]),
        "hash_algorithm": u32,
        "encrypt_algorithm": u32,
    }
    for name in draw(st.sets(st.sampled_from(sorted(optional)))):
        kwargs[name] = draw(optional[name])
    try:
        return Message(**kwargs)  # type: ignore[arg-type]
    except Exception:
        # A combination the model refuses (e.g. a label over 249 characters) is not a message.
        return Message(body=b"", id=kwargs["id"], source_machine_guid=source)  # type: ignore[arg-type]


def _declines_or_matches(m: Message) -> None:
    fast = simple_packet(m, _general_packet)
    general = _general_packet(m)
    if fast is not None:
        assert fast == general
    assert message_to_packet(m) == general


@given(simple_messages())
def test_fast_path_declines_or_matches_the_general_mapping(m: Message) -> None:
    _declines_or_matches(m)


_SOURCE = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")


def _order(**extra: object) -> Message:
    """A queued recoverable message of the common shape, as the queue manager stores it."""
    return Message(
        body=b"x" * 200,
        label="order",
        delivery=1,
        id=ObjectId(_SOURCE, 7),
        source_machine_guid=_SOURCE,
        sent_time=1_700_000_000.0,
        destination_queue=f"PRIVATE={_SOURCE}\\00000042",
        **extra,  # type: ignore[arg-type]
    )


def test_fast_path_is_taken_for_the_common_shape() -> None:
    m = _order(priority=5)
    fast = simple_packet(m, _general_packet)
    assert fast is not None and fast == _general_packet(m)
    back = packet_to_message(fast)
    assert (back.body, back.label, back.priority, back.delivery, back.id) == (
        m.body,
        m.label,
        m.priority,
        m.delivery,
        m.id,
    )


@st.composite
def transactional_messages(draw: st.DrawFn) -> Message:
    """Simple messages sent in a transaction: a TransactionHeader, with or without ConnectorQMGuid."""
    m = draw(simple_messages())
    assert m.id is not None
    lineage = m.id.lineage if draw(st.booleans()) else draw(st.uuids())  # another lineage: Flags.CG
    m.transaction_id = ObjectId(lineage, draw(st.integers(1, 2**32 - 1)))
    m.is_first_in_transaction = draw(st.booleans())
    m.is_last_in_transaction = draw(st.booleans())
    if draw(st.booleans()):
        m.delivery = 1
        m.priority = 0  # what Queue._enqueue sets for a message sent in a transaction
    return m


@given(transactional_messages())
def test_fast_path_declines_or_matches_the_general_mapping_in_a_transaction(m: Message) -> None:
    _declines_or_matches(m)


def test_fast_path_is_taken_for_a_message_of_a_local_transaction() -> None:
    m = _order(transaction_id=ObjectId(_SOURCE, 0x123456), is_first_in_transaction=True)
    fast = simple_packet(m, _general_packet)
    assert fast is not None and fast == _general_packet(m)
    back = packet_to_message(fast)
    assert back.transaction_id == m.transaction_id
    assert (back.is_first_in_transaction, back.is_last_in_transaction) == (True, False)
    # Another queue manager's transaction identifier needs ConnectorQMGuid: the general path.
    m.transaction_id = ObjectId(uuid.uuid4(), 5)
    assert simple_packet(m, _general_packet) is None
