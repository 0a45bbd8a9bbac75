"""The hot paths (protocol.fast_packet, protocol.hot) agree with the general codecs, byte for byte."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import MSMQError, WireError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import message_to_packet, packet_to_message
from pymsmq.protocol import hot
from pymsmq.protocol._payload import Payload
from pymsmq.protocol.codes import Action
from pymsmq.protocol.fast_packet import decode_simple, encode_simple
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS, _fact, fact_properties, send_facts
from pymsmq.protocol.messages import ReceiveRequest, ReceiveResponse, SendRequest, SendResponse
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.user_message import UserMessage
from pymsmq.wire.vartype import VarType

GUID = uuid.UUID("11111111-2222-3333-4444-555555555555")

simple_messages = st.builds(
    Message,
    body=st.binary(max_size=300),
    label=st.text(
        st.characters(min_codepoint=1, max_codepoint=0x10FFFF, exclude_categories=("Cs",)), max_size=30
    ),
    priority=st.integers(0, 7),
    delivery=st.integers(0, 1),
    journal=st.sampled_from([0, 1, 2, 3]),
    app_specific=st.integers(0, 0xFFFFFFFF),
    body_type=st.integers(0, 0xFFFFFFFF),
    msg_class=st.integers(0, 0xFFFF),
    max_time_to_reach_queue=st.integers(0, 0xFFFFFFFF),
    max_time_to_receive=st.integers(0, 0xFFFFFFFF),
    extension=st.binary(max_size=40),
    priv_level=st.sampled_from([0, 1, 3]),
    hash_algorithm=st.integers(0, 0xFFFFFFFF),
    encrypt_algorithm=st.integers(0, 0xFFFFFFFF),
    correlation_id=st.none() | st.builds(ObjectId, st.uuids(), st.integers(0, 0xFFFFFFFF)),
    id=st.none() | st.builds(ObjectId, st.just(GUID), st.integers(1, 0xFFFFFFFF)),
    sent_time=st.none() | st.floats(0, 0xFFFFFFFF),
)


def _validated(m: Message) -> Message:
    m.validate()
    return m


# ---------------------------------------------------------------------------- fast_packet


def test_simple_packet_vector() -> None:
    # [MS-MQMQ] 2.2.19.1-3 field by field, for a message of priority 5, label "ab", body "xyz".
    m = _validated(Message(body=b"xyz", label="ab", priority=5, app_specific=7, delivery=1))
    packet = encode_simple(m)
    assert packet is not None
    expected = (
        bytes.fromhex("10 00 0500 4c494f52")  # VersionNumber 0x10, Reserved, Flags.PR=5, Signature "LIOR"
        + struct.pack("<II", 132, 0xFFFFFFFF)  # PacketSize, TimeToReachQueue INFINITE
        + bytes(32)  # SourceQueueManager, QueueManagerAddress: null GUIDs
        + struct.pack("<IIII", 0xFFFFFFFF, 0, 0, 0x00200020)  # TTBR, SentTime, MessageID, Flags MP|DM=1
        + bytes((0, 3))  # MessagePropertiesHeader.Flags, LabelLength (with the NUL)
        + struct.pack("<H", 0)  # MessageClass
        + bytes(20)  # CorrelationID
        + struct.pack("<IIIIIIII", 0, 7, 3, 3, 0, 0x8004, 0x6801, 0)  # ... ExtensionSize
        + "ab\x00".encode("utf-16-le")
        + b"xyz"
        + b"\x00\x00\x00"  # padding: 129 bytes -> PacketSize 132
    )
    assert packet == expected
    assert decode_simple(packet) == packet_to_message(packet) == m


@given(simple_messages)
def test_encode_simple_is_message_to_packet(m: Message) -> None:
    m = _validated(m)
    packet = encode_simple(m)
    assert packet is not None
    assert packet == message_to_packet(m)
    assert decode_simple(packet) == packet_to_message(packet)


def test_not_simple_messages_take_the_general_path() -> None:
    for m in (
        Message(admin_queue="DIRECT=OS:h\\private$\\a", ack=1),
        Message(trace=1),
        Message(transaction_id=ObjectId(GUID, 5)),
        Message(sender_id=b"sid"),
    ):
        m.validate()
        assert encode_simple(m) is None
        assert decode_simple(message_to_packet(m)) is None
    # Not encodable at all: the general mapping raises the error, so the fast path must decline.
    odd = _validated(Message(id=ObjectId(GUID, 5), source_machine_guid=uuid.UUID(int=1)))
    assert encode_simple(odd) is None


def _general(data: bytes) -> Message | None:
    try:
        return packet_to_message(data)
    except (WireError, MSMQError):
        return None


def _damaged_packets_agree(m: Message, data: st.DataObject) -> None:
    # One byte of the packet flipped, then the packet cut or lengthened: decode_simple either
    # declines or gives what the general decoder gives.
    packet = bytearray(message_to_packet(m))
    i = data.draw(st.integers(0, len(packet) - 1))
    packet[i] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(packet)))
    for candidate in (bytes(packet), bytes(packet[:cut]), bytes(packet) + b"\x00\x00\x00\x00"):
        fast = decode_simple(candidate)
        if fast is not None:
            assert fast == _general(candidate)


@given(simple_messages, st.data())
def test_decode_simple_never_accepts_what_the_general_decoder_refuses(
    m: Message, data: st.DataObject
) -> None:
    _damaged_packets_agree(_validated(m), data)


@given(st.binary(max_size=300))
def test_decode_simple_on_arbitrary_bytes(data: bytes) -> None:
    fast = decode_simple(data)
    if fast is not None:
        assert fast == _general(data)


@st.composite
def transactional_messages(draw: st.DrawFn) -> Message:
    """Simple messages received in a transaction: a TransactionHeader, ConnectorQMGuid when the
    identifier's lineage is not the sending queue manager."""
    m = _validated(draw(simple_messages))
    lineage = draw(st.sampled_from([GUID, uuid.UUID(int=7)]))
    m.transaction_id = ObjectId(lineage, draw(st.integers(1, 0xFFFFFFFF)))
    m.is_first_in_transaction = draw(st.booleans())
    m.is_last_in_transaction = draw(st.booleans())
    m.delivery, m.priority = 1, 0  # what a transactional packet carries (2.2.19.1 PR, 2.2.19.2 TH)
    return m


@given(transactional_messages())
def test_decode_simple_reads_a_transaction_header_as_the_general_decoder(m: Message) -> None:
    packet = message_to_packet(m)
    fast = decode_simple(packet)
    if fast is not None:
        assert fast == packet_to_message(packet)
    if m.id is not None and m.transaction_id is not None and m.transaction_id.lineage == GUID:
        # Same lineage as SourceQueueManager: no ConnectorQMGuid, the fast path takes it.
        assert fast is not None and fast.transaction_id == m.transaction_id


@given(transactional_messages(), st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF))
def test_decode_simple_takes_the_identifier_as_the_general_decoder_whatever_the_ordinal(
    m: Message, ordinal: int, timestamp: int
) -> None:
    # TxSequenceID is session state ([MS-MQQB] refills it): an Ordinal whose low 20 bits differ from
    # Flags.ID must give Flags.ID, one that agrees gives the whole Ordinal.
    packet = bytearray(message_to_packet(m))
    if not packet[62] & 0x10 or struct.unpack_from("<I", packet, 64)[0] & 1:
        return  # ConnectorQMGuid (or a queue before the header): not the fast path's shape
    struct.pack_into("<II", packet, 68, ordinal, timestamp)
    fast = decode_simple(bytes(packet))
    general = packet_to_message(bytes(packet))
    if fast is not None:
        assert fast == general
    if m.id is not None and general.transaction_id is not None and general.transaction_id.uniquifier:
        assert fast is not None


@given(transactional_messages(), st.data())
def test_decode_simple_never_accepts_a_damaged_transactional_packet_the_general_decoder_refuses(
    m: Message, data: st.DataObject
) -> None:
    _damaged_packets_agree(m, data)


# ---------------------------------------------------------------------------- hot payloads

_PACKET = UserMessage.build(destination=None, body=b"hello", label="x").encode()
_int_props = st.lists(
    st.tuples(
        st.integers(0, 0xFFFFFFFF),
        st.one_of(
            st.builds(PropVariant, st.just(VarType.VT_UI4), st.integers(0, 0xFFFFFFFF)),
            st.builds(PropVariant, st.just(VarType.VT_UI8), st.integers(0, 2**64 - 1)),
            st.builds(PropVariant, st.just(VarType.VT_UI1), st.integers(0, 0xFF)),
            st.builds(PropVariant, st.just(VarType.VT_I4), st.integers(-(2**31), 2**31 - 1)),
            st.builds(
                PropVariant,
                st.just(VarType.VT_LPWSTR),
                st.text(st.characters(min_codepoint=1, max_codepoint=0xD7FF), max_size=5),
            ),
            st.builds(PropVariant, st.just(VarType.VT_VECTOR_UI1), st.binary(max_size=20)),
        ),
    ),
    max_size=6,
).map(tuple)
_xact = st.none() | st.integers(0, 0xFF) | st.uuids()
_packets = st.builds(
    lambda body, label: UserMessage.build(destination=None, body=body, label=label).encode(),
    st.binary(max_size=50),
    st.none() | st.text(st.characters(min_codepoint=1, max_codepoint=0xD7FF), max_size=5),
)
hot_payloads: st.SearchStrategy[Payload] = st.one_of(
    st.builds(SendRequest, st.integers(0, 0xFFFFFFFF), _packets, _xact, _int_props),
    st.builds(SendResponse, _int_props),
    st.builds(
        ReceiveRequest,
        st.integers(0, 0xFFFFFFFF),
        st.sampled_from(Action),
        st.integers(0, 0xFFFFFFFF),
        st.integers(0, 0xFFFFFFFF),
        st.integers(0, 2**64 - 1),
        _xact,
        st.integers(0, 0xFFFFFFFF),
        st.lists(st.integers(0, 0xFFFFFFFF), max_size=8).map(tuple),
    ),
    st.builds(ReceiveResponse, st.none() | _packets, _int_props),
)


def _generic_decode(cls: type[Payload], data: bytes) -> Any:
    try:
        return cls.decode(data)
    except WireError:
        return None


@given(hot_payloads)
def test_hot_writers_and_readers_equal_the_generic_codec(value: Payload) -> None:
    cls = type(value)
    generic = Payload.encode(value)
    assert hot.PAYLOAD_WRITERS[cls](value) == generic
    fast = hot.PAYLOAD_READERS[cls](generic)
    assert fast == cls.decode(generic) == value or fast is None


@given(hot_payloads, st.data())
def test_hot_readers_never_accept_what_the_generic_reader_refuses(
    value: Payload, data: st.DataObject
) -> None:
    cls = type(value)
    raw = bytearray(Payload.encode(value))
    if raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(raw)))
    for candidate in (bytes(raw), bytes(raw[:cut]), bytes(raw) + b"\x00junk"):
        fast = hot.PAYLOAD_READERS[cls](candidate)
        if fast is not None:
            assert fast == _generic_decode(cls, candidate)


@given(st.sampled_from([SendRequest, SendResponse, ReceiveRequest, ReceiveResponse]), st.binary(max_size=200))
def test_hot_readers_on_arbitrary_bytes(cls: type[Payload], data: bytes) -> None:
    fast = hot.PAYLOAD_READERS[cls](data)
    if fast is not None:
        assert fast == _generic_decode(cls, data)


def test_receive_response_vector() -> None:
    # OPT_PACKET (u32 length + packet), then PROPS: Count, (PROPID u32, VARTYPE u16, value) entries.
    props = ((60, PropVariant(VarType.VT_UI8, 9)), (32, PropVariant(VarType.VT_UI4, 1700000000)))
    raw = (
        struct.pack("<I", len(_PACKET))
        + _PACKET
        + struct.pack("<I", 2)
        + struct.pack("<IHQ", 60, 0x15, 9)
        + struct.pack("<IHI", 32, 0x13, 1700000000)
    )
    value = hot.receive_response(_PACKET, props)
    assert hot.PAYLOAD_WRITERS[ReceiveResponse](value) == raw == ReceiveResponse(_PACKET, props).encode()
    assert hot.read_receive_response(raw) == value
    # No packet: length 0.
    assert hot.read_receive_response(b"\x00" * 8) == ReceiveResponse(None, ())


def test_trusted_builders_equal_the_checked_constructors() -> None:
    tid = uuid.UUID(int=5)
    assert hot.send_request(3, _PACKET, tid) == SendRequest(3, _PACKET, tid, ())
    assert hot.receive_request(3, 0, 100, 0, 0, 1, (60,)) == ReceiveRequest(3, 0, 100, 0, 0, 1, 0, (60,))
    assert hot.send_response(()) == SendResponse(())


@given(
    st.integers(0, 2**64 - 1),
    st.none() | st.floats(-10.0, 2.0**33),
    st.integers(0, 2**33),
    st.integers(0, 9),
    st.none() | st.floats(-10.0, 2.0**33),
)
def test_client_fact_array_equals_the_general_one(
    lookup_id: int, arrived: float | None, aborts: int, moves: int, moved: float | None
) -> None:
    m = Message(body=b"x")
    m.lookup_id, m.arrived_time, m.abort_count, m.move_count = lookup_id, arrived, aborts, moves
    m.last_move_time = moved
    general = tuple((pid, pv) for pid in CLIENT_RECEIVE_PROPIDS if (pv := _fact(m, pid)) is not None)
    assert fact_properties(m, CLIENT_RECEIVE_PROPIDS) == general
    # lookup id, arrived time, abort and move counts, last move time
    assert [pid for pid, _ in general] == [60, 32, 69, 70, 75]


@given(
    st.none() | st.builds(ObjectId, st.uuids(), st.integers(1, 0xFFFFFFFF)), st.none() | st.floats(0, 2.0**33)
)
def test_send_facts_equal_the_general_ones(mid: ObjectId | None, sent: float | None) -> None:
    m = Message(body=b"x")
    m.id, m.sent_time = mid, sent
    assert send_facts(m) == fact_properties(m, (2, 31))  # PROPID_M_MSGID, PROPID_M_SENTTIME


# ---------------------------------------------------------------------------- fixed fact shapes

# The two fact arrays of every SEND/RECEIVE answer, which hot.py reads and writes with one struct.
_u32 = st.integers(0, 0xFFFFFFFF)
_send_fact_props = st.tuples(
    st.tuples(
        _u32, st.builds(PropVariant, st.just(VarType.VT_VECTOR_UI1), st.binary(min_size=20, max_size=20))
    ),
    st.tuples(_u32, st.builds(PropVariant, st.just(VarType.VT_UI4), _u32)),
)
_receive_fact_props = st.tuples(
    st.tuples(_u32, st.builds(PropVariant, st.just(VarType.VT_UI8), st.integers(0, 2**64 - 1))),
    *[st.tuples(_u32, st.builds(PropVariant, st.just(VarType.VT_UI4), _u32)) for _ in range(3)],
)


def test_fact_shape_vectors() -> None:
    # PROPS: Count, then (PROPID u32, VARTYPE u16, value); VT_VECTOR_UI1 = 0x1011 (u32 size + bytes),
    # VT_UI4 = 0x13, VT_UI8 = 0x15 ([MS-MQCN] 2.2.3 PROPVALUE).
    mid = bytes(range(20))
    send_raw = (
        struct.pack("<I", 2) + struct.pack("<IHI", 2, 0x1011, 20) + mid + struct.pack("<IHI", 31, 0x13, 7)
    )
    send_value = SendResponse(
        ((2, PropVariant(VarType.VT_VECTOR_UI1, mid)), (31, PropVariant(VarType.VT_UI4, 7)))
    )
    assert len(send_raw) == 44
    assert hot.PAYLOAD_WRITERS[SendResponse](send_value) == send_raw == send_value.encode()
    assert hot.read_send_response(send_raw) == send_value
    receive_raw = (
        b"\x00\x00\x00\x00"
        + struct.pack("<I", 4)
        + struct.pack("<IHQ", 60, 0x15, 2**40)
        + struct.pack("<IHI", 32, 0x13, 1)
        + struct.pack("<IHI", 69, 0x13, 2)
        + struct.pack("<IHI", 70, 0x13, 3)
    )
    receive_value = ReceiveResponse(
        None,
        (
            (60, PropVariant(VarType.VT_UI8, 2**40)),
            (32, PropVariant(VarType.VT_UI4, 1)),
            (69, PropVariant(VarType.VT_UI4, 2)),
            (70, PropVariant(VarType.VT_UI4, 3)),
        ),
    )
    assert hot.PAYLOAD_WRITERS[ReceiveResponse](receive_value) == receive_raw == receive_value.encode()
    assert hot.read_receive_response(receive_raw) == receive_value
    # The same sizes with another VARTYPE are not the shape: the generic reader decides.
    other = bytearray(send_raw)
    other[8:10] = struct.pack("<H", 0x41)  # VT_BLOB
    assert hot.read_send_response(bytes(other)) == _generic_decode(SendResponse, bytes(other))


@given(_send_fact_props, st.none() | _packets, _receive_fact_props)
def test_fact_shapes_equal_the_generic_codec(
    send_props: Any, packet: bytes | None, receive_props: Any
) -> None:
    for value in (
        SendResponse(send_props),
        ReceiveResponse(packet, receive_props),
        ReceiveResponse(packet, send_props),
    ):
        cls = type(value)
        generic = Payload.encode(value)
        assert hot.PAYLOAD_WRITERS[cls](value) == generic
        assert hot.PAYLOAD_READERS[cls](generic) == value


@given(st.integers(0, 3), st.binary(min_size=44, max_size=44), st.binary(min_size=58, max_size=58))
def test_fact_shape_readers_on_arbitrary_bytes(count_pick: int, raw44: bytes, raw58: bytes) -> None:
    # Arbitrary bytes of exactly the shape sizes, with the expected count (so the shape check runs).
    for raw, count in ((raw44, 2), (raw58, 5)):
        data = struct.pack("<I", count if count_pick else count_pick) + raw[4:]
        for cls, payload in ((SendResponse, data), (ReceiveResponse, b"\x00\x00\x00\x00" + data)):
            fast = hot.PAYLOAD_READERS[cls](payload)
            if fast is not None:
                assert fast == _generic_decode(cls, payload)


def test_fact_shape_writer_falls_back_on_bad_values() -> None:
    # A PROPID out of u32 range fails the one-struct pack; the generic writer raises WireError.
    bad = ((2, PropVariant(VarType.VT_VECTOR_UI1, bytes(20))), (2**32, PropVariant(VarType.VT_UI4, 1)))
    with pytest.raises(WireError):
        hot.PAYLOAD_WRITERS[SendResponse](hot.send_response(bad))
