"""``parse_receive_answer`` on the plain shape (``batch_fast.decode_plain_at`` first) gives exactly
what the general RECEIVE reader plus ``decode_message`` give (docs/protocol.md 5)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import message_to_packet
from pymsmq.protocol.batch_fast import decode_plain_at
from pymsmq.protocol.fast_packet import encode_simple
from pymsmq.protocol.message_codec import (
    decode_message,
    encode_packet,
    parse_receive_answer,
    receive_answer_body,
)
from pymsmq.protocol.messages import ReceiveResponse

# Plain messages as a server queues them: a source machine, an id of that lineage, a sent time.
plain = st.builds(
    Message,
    body=st.binary(max_size=300),
    priority=st.integers(0, 7),
    delivery=st.integers(0, 1),
    max_time_to_reach_queue=st.integers(0, 0xFFFFFFFF),
    max_time_to_receive=st.integers(0, 0xFFFFFFFF),
    sent_time=st.none() | st.integers(0, 0xFFFFFFFF).map(float),
)
facts = st.tuples(
    st.integers(0, (1 << 64) - 1),
    st.integers(0, 0xFFFFFFFF),
    st.integers(0, 1000),
    st.integers(0, 1000),
    st.none() | st.integers(1, 0xFFFFFFFF).map(float),
)


def _answer(m: Message, source: uuid.UUID, unique: int, f: tuple[int, int, int, int, float | None]) -> bytes:
    m.source_machine_guid = source
    m.id = ObjectId(source, unique) if unique else None
    m.validate()
    m.lookup_id, arrived, m.abort_count, m.move_count, m.last_move_time = f
    m.arrived_time = float(arrived)
    body = receive_answer_body(encode_packet(m, "DIRECT=OS:host\\private$\\q"), m)
    assert body is not None
    return body


def _general(body: bytes) -> Message:
    response = ReceiveResponse.decode(body)
    return decode_message(response.packet, response.properties)


@given(plain, st.uuids(), st.integers(0, 0xFFFFFFFF), facts)
def test_plain_receive_answer_equals_the_general_decoder(
    m: Message, source: uuid.UUID, unique: int, f: tuple[int, int, int, int, float | None]
) -> None:
    body = _answer(m, source, unique, f)
    size = int.from_bytes(body[:4], "little")
    if source.int:
        assert decode_plain_at(body, 4, size) is not None  # the plain lane is the one tested
    got = parse_receive_answer(body)
    expected = _general(body)
    assert got is not None
    assert got == expected
    assert got.__dict__ == expected.__dict__
    assert list(got.__dict__) == list(expected.__dict__)


@given(plain, st.uuids(), st.integers(1, 0xFFFFFFFF), facts, st.data())
def test_damaged_plain_receive_answer_is_refused_or_decoded_as_the_general_path(
    m: Message,
    source: uuid.UUID,
    unique: int,
    f: tuple[int, int, int, int, float | None],
    data: st.DataObject,
) -> None:
    body = bytearray(_answer(m, source, unique, f))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(body) - 1))
        body[i] = data.draw(st.integers(0, 255))
    got = parse_receive_answer(bytes(body))
    if got is None:
        return
    expected = _general(bytes(body))
    assert got == expected
    assert got.__dict__ == expected.__dict__


@given(plain, st.uuids(), st.integers(0, 0xFFFFFFFF), facts, st.booleans())
def test_encode_packet_of_a_plain_message_is_the_simple_packet(
    m: Message, source: uuid.UUID, unique: int, f: tuple[int, int, int, int, float | None], queued: bool
) -> None:
    # encode_packet tries encode_plain first: the bytes are encode_simple's (and the general mapping's).
    fmt = "DIRECT=OS:host\\private$\\q"
    _answer(m, source, unique, f)
    if queued:
        m.destination_queue = fmt
    packet = encode_packet(m, fmt)
    assert packet == encode_simple(m)
    assert decode_message(packet, ()) == decode_message(message_to_packet(_without_destination(m)), ())


def _without_destination(m: Message) -> Message:
    copy = Message.__new__(Message)
    copy.__dict__.update(m.__dict__)
    copy.__dict__.pop("destination_queue", None)
    return copy
