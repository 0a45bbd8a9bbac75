"""Message <-> SEND/RECEIVE fields (protocol/message_codec.py) and queue properties <-> PROPID_Q_*."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import message_to_packet
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.protocol import SendRequest
from pymsmq.protocol.message_codec import (
    DEFAULT_RECEIVE_PROPIDS,
    PROPID_M_LOOKUPID,
    PROPID_PYMSMQ_MESSAGE,
    decode_message,
    encode_message,
    fact_properties,
    needs_blob,
)
from pymsmq.protocol.queue_props import (
    attrs_to_props,
    properties_from_props,
    properties_to_props,
    props_to_attrs,
)
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.user_message import UserMessage
from pymsmq.wire.vartype import VarType

GUID = uuid.UUID("11111111-2222-3333-4444-555555555555")

packet_messages = st.builds(
    Message,
    body=st.binary(max_size=300),
    label=st.text(st.characters(min_codepoint=1, max_codepoint=0xD7FF), max_size=40),
    priority=st.integers(0, 7),
    delivery=st.integers(0, 1),
    journal=st.sampled_from([0, 1, 2, 3]),
    app_specific=st.integers(0, 0xFFFFFFFF),
    body_type=st.integers(0, 0xFFFFFFFF),
    max_time_to_reach_queue=st.integers(0, 0xFFFFFFFF),
    max_time_to_receive=st.integers(0, 0xFFFFFFFF),
    extension=st.binary(max_size=40),
    correlation_id=st.none() | st.builds(ObjectId, st.uuids(), st.integers(0, 0xFFFFFFFF)),
)


def test_plain_message_packet_fields_against_the_spec() -> None:
    m = Message(body=b"hi", label="x", priority=5, delivery=1, app_specific=9)
    packet, props = encode_message(m)
    assert props == ()  # everything fits in the packet
    um = UserMessage.decode(packet)
    assert um.base_header.flags & 0x7 == 5  # BaseHeader.Flags.PR ([MS-MQMQ] 2.2.19.1)
    assert um.user_header.flags & 0x60 == 0x20  # UserHeader.Flags.DM = recoverable (2.2.19.2)
    mp = um.message_properties_header
    assert mp is not None and (mp.label, mp.body, mp.application_tag) == ("x", b"hi", 9)
    assert packet[8:12] == len(packet).to_bytes(4, "little")  # BaseHeader.PacketSize
    # The packet passes the PACKET checks of docs/protocol.md 3 (as a SEND payload).
    assert SendRequest.decode(SendRequest(1, packet).encode()).packet == packet


def test_properties_outside_the_fixed_headers_travel_in_the_packet_alone() -> None:
    # Since the lossless mapping (pymsmq.model.packet_mapping) no PROPID_PYMSMQ_MESSAGE blob is sent.
    m = Message(body=b"b", admin_queue="DIRECT=OS:h\\private$\\admin", ack=1, trace=1)
    packet, props = encode_message(m)
    assert not needs_blob(m) and props == ()
    um = UserMessage.decode(packet)
    assert um.user_header.flags & 0xE000  # UserHeader.Flags.AQ: an admin queue is present
    assert decode_message(packet, props) == m


def test_an_old_servers_blob_still_wins_over_the_packet() -> None:
    m = Message(body=b"full", label="blob", admin_queue="DIRECT=OS:h\\private$\\admin", ack=1)
    blob = message_to_packet(m)
    plain, _ = encode_message(Message(body=b"plain"))
    assert decode_message(plain, ((PROPID_PYMSMQ_MESSAGE, PropVariant(VarType.VT_BLOB, blob)),)) == m


def test_destination_is_left_out_when_it_is_the_handles_queue() -> None:
    fmt = "DIRECT=OS:h\\private$\\q"
    m = Message(body=b"x", destination_queue=fmt)
    assert UserMessage.decode(encode_message(m, fmt)[0]).user_header.destination_queue is None
    other = "DIRECT=OS:h\\private$\\other"
    back = decode_message(encode_message(m, other)[0], ())
    assert back.destination_queue == fmt  # kept: not the queue the receiver reads
    assert UserMessage.decode(encode_message(m)[0]).user_header.destination_queue is None  # SEND


@given(packet_messages)
def test_round_trip(m: Message) -> None:
    packet, props = encode_message(m)
    assert decode_message(packet, props) == m


@given(packet_messages, st.integers(1, 2**63), st.integers(0, 2**31), st.integers(0, 9))
def test_facts_round_trip(m: Message, lookup_id: int, arrived: int, count: int) -> None:
    m.lookup_id, m.arrived_time, m.abort_count, m.move_count = lookup_id, float(arrived), count, count + 1
    m.last_move_time = float(arrived + 1) if count else None
    m.id, m.source_machine_guid, m.sent_time = ObjectId(GUID, 77), GUID, 1234.0
    packet, extra = encode_message(m)
    back = decode_message(packet, fact_properties(m, DEFAULT_RECEIVE_PROPIDS) + extra)
    assert back == m


def test_fact_vector() -> None:
    m = Message(lookup_id=1)
    (pid, pv), *_ = fact_properties(m, (PROPID_M_LOOKUPID,))
    assert (pid, pv) == (60, PropVariant(VarType.VT_UI8, 1))


@given(st.binary(max_size=400))
def test_arbitrary_packets_give_a_message_or_wire_error(data: bytes) -> None:
    try:
        decode_message(data, ())
    except WireError:
        pass


@given(packet_messages, st.data())
def test_mutated_packets_give_a_message_or_wire_error(m: Message, data: st.DataObject) -> None:
    packet = bytearray(encode_message(m)[0])
    i = data.draw(st.integers(0, len(packet) - 1))
    packet[i] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(packet)))
    for candidate in (bytes(packet), bytes(packet[:cut]), bytes(packet) + b"\x00junk"):
        try:
            decode_message(candidate, ())
        except WireError:
            pass


@given(st.binary(max_size=200))
def test_a_bad_blob_is_a_wire_error(blob: bytes) -> None:
    try:
        decode_message(None, ((PROPID_PYMSMQ_MESSAGE, PropVariant(VarType.VT_BLOB, blob)),))
    except WireError:
        pass


# ---------------------------------------------------------------------------- queue props

queue_props = st.builds(
    QueueProperties,
    path_name=st.just("box\\private$\\q"),
    label=st.text(st.characters(min_codepoint=1, max_codepoint=0xD7FF), max_size=124),
    journal=st.booleans(),
    quota=st.integers(0, 0xFFFFFFFF),
    journal_quota=st.integers(0, 0xFFFFFFFF),
    base_priority=st.integers(-32768, 32767),
    transactional=st.booleans(),
    authenticate=st.booleans(),
    priv_level=st.sampled_from([0, 1, 2]),
    multicast_address=st.none() | st.just("234.1.1.1:8001"),
    queue_guid=st.uuids(),
    service_type_guid=st.uuids(),
    create_time=st.integers(0, 0xFFFFFFFF),
    modify_time=st.integers(0, 0xFFFFFFFF),
)


@given(queue_props)
def test_queue_properties_round_trip(props: QueueProperties) -> None:
    assert properties_from_props(properties_to_props(props)) == props


def test_queue_property_vectors() -> None:
    # [MS-MQMQ] 2.3.1: PROPID_Q_TRANSACTION 113 VT_UI1, PROPID_Q_LABEL 108 VT_LPWSTR.
    assert attrs_to_props({"transactional": True, "label": "x"}) == (
        (113, PropVariant(VarType.VT_UI1, 1)),
        (108, PropVariant(VarType.VT_LPWSTR, "x")),
    )
    assert props_to_attrs([(113, PropVariant(VarType.VT_UI1, 0))]) == {"transactional": False}


@pytest.mark.parametrize(
    ("props", "hresult"),
    [
        ([(999, PropVariant(VarType.VT_UI4, 1))], HResult.MQ_ERROR_ILLEGAL_PROPID),
        ([(108, PropVariant(VarType.VT_UI4, 1))], HResult.MQ_ERROR_ILLEGAL_PROPERTY_VT),
        ([(113, PropVariant(VarType.VT_UI1, 2))], HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE),
        ([(108, PropVariant(VarType.VT_EMPTY))], HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE),
    ],
)
def test_bad_queue_properties(props: list[tuple[int, PropVariant]], hresult: int) -> None:
    with pytest.raises(MSMQError) as info:
        props_to_attrs(props)
    assert info.value.hresult == hresult
