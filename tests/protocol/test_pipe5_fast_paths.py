"""Fast paths of the pipelined SEND_MANY / RECEIVE_MANY codecs against their general forms."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol.batch_ops import client_receive_facts, decode_received, receive_facts
from pymsmq.protocol.fast_packet import encode_plain, encode_simple
from pymsmq.protocol.hot import _write_props
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS, fact_properties

_GUID = uuid.UUID("12345678-1234-5678-1234-567812345678")


@settings(max_examples=300)
@given(
    lookup_id=st.integers(0, 2**64 - 1),
    arrived=st.none() | st.floats(0, 2.0**33, allow_nan=False) | st.integers(-5, 2**33),
    aborts=st.integers(-(2**33), 2**33),
    moves=st.integers(-(2**33), 2**33),
    moved=st.none() | st.floats(0, 2.0**33, allow_nan=False) | st.integers(-5, 2**33),
)
def test_client_receive_facts_is_the_general_encoding(
    lookup_id: int, arrived: float | int | None, aborts: int, moves: int, moved: float | int | None
) -> None:
    m = Message(body=b"x")
    m.lookup_id = lookup_id
    m.arrived_time = arrived  # type: ignore[assignment]
    m.abort_count = aborts
    m.move_count = moves
    m.last_move_time = moved  # type: ignore[assignment]
    general = _write_props(fact_properties(m, CLIENT_RECEIVE_PROPIDS))
    assert client_receive_facts(m) == general == receive_facts(m, CLIENT_RECEIVE_PROPIDS)


@settings(max_examples=300)
@given(
    body=st.binary(max_size=300),
    priority=st.integers(0, 7),
    delivery=st.integers(0, 1),
    uniquifier=st.none() | st.integers(1, 0xFFFFFFFF),
    sent_time=st.none() | st.floats(0, 2.0**32 - 1, allow_nan=False),
    source=st.booleans(),
)
def test_encode_plain_without_label_is_encode_simple(
    body: bytes, priority: int, delivery: int, uniquifier: int | None, sent_time: float | None, source: bool
) -> None:
    # The label-less head (constant byte runs) gives the bytes encode_simple gives; the packet
    # decodes back to the same message facts.
    m = Message(body=body, priority=priority, delivery=delivery)
    if uniquifier is not None:
        m.id = ObjectId(_GUID, uniquifier)
    if source:
        m.source_machine_guid = _GUID
    m.sent_time = sent_time
    m.validate()
    plain = encode_plain(m)
    assert plain is not None
    assert plain == encode_simple(m)
    facts = client_receive_facts(m)
    blob = len(plain).to_bytes(4, "little") + plain + facts
    (got,) = decode_received((1).to_bytes(4, "little") + blob)
    assert got.body == body and got.priority == priority and got.delivery == delivery
