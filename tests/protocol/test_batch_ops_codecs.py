"""SEND_MANY / RECEIVE_MANY payload codecs (pymsmq.protocol.batch_ops): round trips, arbitrary bytes,
and the fast paths against the general encoders and decoders."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol import REQUEST_TYPES, RESPONSE_TYPES, ManyFlags, Op, check_packet
from pymsmq.protocol.batch_ops import (
    ReceiveManyRequest,
    ReceiveManyResponse,
    SendManyRequest,
    SendManyResponse,
    decode_messages,
    decode_received,
    decode_send_facts,
    decode_send_results,
    encode_messages,
    encode_packets,
    encode_send_results,
    error_result,
    receive_facts,
    send_result,
)
from pymsmq.protocol.hot import _write_props
from pymsmq.protocol.message_codec import (
    CLIENT_RECEIVE_PROPIDS,
    DEFAULT_RECEIVE_PROPIDS,
    decode_message,
    encode_packet,
    fact_properties,
    props_dict,
    send_facts,
)
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.vartype import VarType

_GUID = st.uuids()
_ids = st.builds(ObjectId, _GUID, st.integers(1, 0xFFFFFFFF))
_messages = st.builds(
    Message,
    body=st.binary(max_size=64),
    label=st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=12),
    priority=st.integers(0, 7),
    delivery=st.integers(0, 1),
    app_specific=st.integers(0, 0xFFFFFFFF),
    extension=st.binary(max_size=8),
)
_propvariants = st.one_of(
    st.builds(PropVariant, st.just(VarType.VT_UI4), st.integers(0, 0xFFFFFFFF)),
    st.builds(PropVariant, st.just(VarType.VT_UI8), st.integers(0, 2**64 - 1)),
    st.builds(PropVariant, st.just(VarType.VT_UI1), st.integers(0, 0xFF)),
    st.builds(PropVariant, st.just(VarType.VT_VECTOR_UI1), st.binary(max_size=24)),
    st.builds(
        PropVariant, st.just(VarType.VT_LPWSTR), st.text(st.characters(exclude_characters="\x00"), max_size=6)
    ),
)
_props = st.lists(st.tuples(st.integers(0, 0xFFFFFFFF), _propvariants), max_size=4).map(tuple)


@st.composite
def _stored(draw: Any) -> Message:
    # A message as the queue manager hands it out: facts set, possibly id and sent time.
    m: Message = draw(_messages)
    m.lookup_id = draw(st.integers(0, 2**64 - 1))
    m.arrived_time = float(draw(st.integers(0, 0xFFFFFFFF)))
    m.abort_count = draw(st.integers(0, 0xFFFFFFFF))
    m.move_count = draw(st.integers(0, 0xFFFFFFFF))
    m.last_move_time = draw(st.none() | st.integers(1, 0xFFFFFFFF).map(float))
    if draw(st.booleans()):
        m.id = draw(_ids)
        m.sent_time = float(draw(st.integers(0, 0xFFFFFFFF)))
    return m


_packets = _messages.map(lambda m: encode_packet(m))
_items = st.lists(st.tuples(_packets, _props), max_size=5)
_results = st.lists(
    st.tuples(st.integers(0, 0xFFFFFFFF), _props, st.text(max_size=10)).map(lambda r: (r[0], r[1], r[2])),
    max_size=5,
)


def test_ops_are_registered() -> None:
    assert int(Op.SEND_MANY) == 0x41 and int(Op.RECEIVE_MANY) == 0x42
    assert REQUEST_TYPES[Op.SEND_MANY] is SendManyRequest and RESPONSE_TYPES[Op.SEND_MANY] is SendManyResponse
    assert REQUEST_TYPES[Op.RECEIVE_MANY] is ReceiveManyRequest
    assert RESPONSE_TYPES[Op.RECEIVE_MANY] is ReceiveManyResponse
    assert int(ManyFlags.PEEK) == 1


def test_payload_byte_layouts() -> None:
    # docs/protocol.md 11: handle u32, transaction XACT, messages BYTES / results BYTES / ...
    assert SendManyRequest(7, None, b"\x00\x00\x00\x00").encode() == (
        b"\x07\x00\x00\x00" + b"\x00" + b"\x04\x00\x00\x00" + b"\x00\x00\x00\x00"
    )
    assert ReceiveManyRequest(2, 10, 0, ManyFlags.PEEK, 3, (60,)).encode() == struct.pack(
        "<IIIIBBII", 2, 10, 0, 1, 1, 3, 1, 60
    )
    assert ReceiveManyResponse(1, 0, "", b"\x00\x00\x00\x00").encode() == (
        b"\x01" + bytes(4) + b"\x00\x00" + b"\x04\x00\x00\x00" + bytes(4)
    )


@given(_items)
def test_message_list_round_trip(items: list[tuple[bytes, Any]]) -> None:
    data = encode_messages(items)
    assert decode_messages(data) == items
    assert encode_messages(decode_messages(data)) == data


@given(st.lists(_packets, max_size=5))
def test_encode_packets_is_encode_messages_without_properties(packets: list[bytes]) -> None:
    assert encode_packets(packets) == encode_messages([(p, ()) for p in packets])


@given(_results)
def test_send_results_round_trip(results: list[Any]) -> None:
    data = encode_send_results(results)
    assert decode_send_results(data) == results
    facts = decode_send_facts(data)
    for (hresult, props, text), (h2, mid, sent, t2) in zip(results, facts, strict=True):
        values = props_dict(props)
        assert (h2, t2) == (hresult, text)
        assert mid == (values.get(2) if type(values.get(2)) is bytes else None)
        assert sent == (values.get(31) if type(values.get(31)) is int else None)


@given(
    st.lists(_stored(), max_size=5),
    st.lists(st.tuples(st.integers(1, 0xFFFF), st.text(max_size=5)), max_size=3),
)
def test_send_result_fast_path_equals_general_encoding(messages: list[Message], errors: list[Any]) -> None:
    fast = struct.pack("<I", len(messages) + len(errors)) + b"".join(send_result(m) for m in messages)
    fast += b"".join(error_result(h, t) for h, t in errors)
    general = encode_send_results(
        [(0, send_facts(m), "") for m in messages] + [(h, (), t) for h, t in errors]
    )
    assert fast == general
    facts = decode_send_facts(fast)
    for m, (hresult, mid, sent, _) in zip(messages, facts, strict=False):
        assert hresult == 0 and mid == (bytes(m.id) if m.id is not None else bytes(20))
        assert sent == int(m.sent_time or 0)


@given(_stored(), st.sampled_from([CLIENT_RECEIVE_PROPIDS, DEFAULT_RECEIVE_PROPIDS, (60, 2), ()]))
def test_receive_facts_fast_path_equals_general_encoding(m: Message, propids: tuple[int, ...]) -> None:
    assert receive_facts(m, propids) == _write_props(fact_properties(m, propids))


@settings(max_examples=200)
@given(
    st.lists(_stored(), max_size=5), st.sampled_from([CLIENT_RECEIVE_PROPIDS, DEFAULT_RECEIVE_PROPIDS, ()])
)
def test_decode_received_equals_decode_message(messages: list[Message], propids: tuple[int, ...]) -> None:
    items = [(encode_packet(m, "q"), fact_properties(m, propids)) for m in messages]
    data = encode_messages(items)
    assert encode_messages([(p, ()) for p, _ in items]) != data or not any(props for _, props in items)
    fast = decode_received(data)
    general = [decode_message(p, props) for p, props in decode_messages(data)]
    assert [m.__dict__ for m in fast] == [m.__dict__ for m in general]


_DECODERS = [decode_messages, decode_send_results, decode_received, decode_send_facts]


@pytest.mark.parametrize("decode", _DECODERS, ids=lambda f: f.__name__)
@given(blob=st.binary(max_size=200))
def test_arbitrary_bytes_raise_wire_error_or_decode(decode: Any, blob: bytes) -> None:
    try:
        decode(blob)
    except WireError:
        return


@given(blob=st.binary(max_size=200))
def test_arbitrary_bytes_that_decode_re_encode_to_themselves(blob: bytes) -> None:
    try:
        items = decode_messages(blob)
    except WireError:
        items = None
    if items is not None:
        assert encode_messages(items) == blob
    try:
        results = decode_send_results(blob)
    except WireError:
        return
    assert encode_send_results(results) == blob


@given(data=st.data())
def test_truncated_and_trailing_lists_are_wire_errors(data: st.DataObject) -> None:
    items = data.draw(_items.filter(bool))
    encoded = encode_messages(items)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    for decode in (decode_messages, decode_received):
        with pytest.raises(WireError):
            decode(encoded[:cut])
        with pytest.raises(WireError):
            decode(encoded + data.draw(st.binary(min_size=1, max_size=8)))
    results = encode_send_results(data.draw(_results.filter(bool)))
    cut = data.draw(st.integers(0, len(results) - 1))
    for decode2 in (decode_send_results, decode_send_facts):
        with pytest.raises(WireError):
            decode2(results[:cut])
        with pytest.raises(WireError):
            decode2(results + data.draw(st.binary(min_size=1, max_size=8)))


@given(data=st.data())
def test_mutated_lists_decode_consistently(data: st.DataObject) -> None:
    encoded = bytearray(encode_messages(data.draw(_items.filter(bool))))
    i = data.draw(st.integers(0, len(encoded) - 1))
    encoded[i] = data.draw(st.integers(0, 255))
    try:
        items = decode_messages(bytes(encoded))
    except WireError:
        with pytest.raises(WireError):
            decode_received(bytes(encoded))
        return
    assert encode_messages(items) == bytes(encoded)
    try:
        general = [decode_message(p, props) for p, props in items]
    except WireError:
        return
    assert [m.__dict__ for m in decode_received(bytes(encoded))] == [m.__dict__ for m in general]


@given(_packets, st.integers(0, 0xFFFF), st.booleans())
def test_message_list_packet_checks_are_those_of_the_packet_field(
    packet: bytes, flags: int, session: bool
) -> None:
    # [MS-MQMQ] 2.2.19.1 BaseHeader.Flags: IN (internal packet) and SH (SessionHeader follows) change
    # what is accepted; the fast checks must agree with check_packet on every flag value.
    raw = bytearray(packet)
    struct.pack_into("<H", raw, 2, flags)
    if session:
        raw += bytes(16)
    candidate = bytes(raw)
    try:
        check_packet(candidate)
        ok = True
    except WireError:
        ok = False
    for decode in (decode_messages, decode_received):
        try:
            decode(encode_messages([(candidate, ())]))
            accepted = True
        except WireError:
            accepted = False
        if decode is decode_messages or accepted:
            assert accepted == ok or (decode is decode_received and not accepted)
