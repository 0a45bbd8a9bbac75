"""The one-request-in-flight fast lanes give exactly what the general paths give (bytes, values, state).

protocol.message_codec ``send_answer_body``/``receive_answer_body``/``parse_send_answer``/
``parse_receive_answer``, protocol.hot ``send_request_body``/``receive_request_body``, and the
connection lanes ``ClientConnection.request_frame``/``response_payload`` and
``ServerConnection.request_fast``/``answer_frame``.
"""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol import (
    ClientConnection,
    ClientHello,
    ErrorResponse,
    RequestReceived,
    ResponseReceived,
    ServerConnection,
    ServerHello,
    hot,
)
from pymsmq.protocol.codes import Op
from pymsmq.protocol.fast_packet import decode_simple, guid_bytes_le, object_id
from pymsmq.protocol.message_codec import (
    CLIENT_RECEIVE_PROPIDS,
    decode_message,
    encode_packet,
    fact_properties,
    parse_receive_answer,
    parse_send_answer,
    props_dict,
    receive_answer_body,
    send_answer_body,
    send_facts,
)
from pymsmq.protocol.messages import ReceiveResponse, SendResponse

GUID = uuid.UUID("11111111-2222-3333-4444-555555555555")

messages = st.builds(
    Message,
    body=st.binary(max_size=300),
    label=st.text(
        st.characters(min_codepoint=1, max_codepoint=0x10FFFF, exclude_categories=("Cs",)), max_size=20
    ),
    priority=st.integers(0, 7),
    delivery=st.integers(0, 1),
    app_specific=st.integers(0, 0xFFFFFFFF),
    correlation_id=st.none() | st.builds(ObjectId, st.uuids(), st.integers(0, 0xFFFFFFFF)),
    id=st.none() | st.builds(ObjectId, st.just(GUID), st.integers(1, 0xFFFFFFFF)),
    sent_time=st.none() | st.floats(0, 0xFFFFFFFF),
    response_queue=st.none() | st.just("DIRECT=OS:m\\private$\\reply"),
)
facts = st.fixed_dictionaries(
    {
        "lookup_id": st.integers(0, (1 << 64) - 1),
        "arrived_time": st.none() | st.floats(0, 2.0**33),
        "abort_count": st.integers(0, 1 << 33),
        "move_count": st.integers(0, 1 << 33),
        "last_move_time": st.none() | st.floats(0, 2.0**33),
    }
)


def _received(m: Message, values: dict[str, object]) -> Message:
    m.validate()
    for name, value in values.items():
        setattr(m, name, value)
    return m


# ---------------------------------------------------------------------------- payload codecs


@given(messages)
def test_send_answer_body_equals_the_general_writer_and_parses_back(m: Message) -> None:
    m.validate()
    general = SendResponse(send_facts(m))
    body = send_answer_body(m)
    assert body == general.encode()
    values = props_dict(SendResponse.decode(body).properties)
    assert parse_send_answer(body) == (values[2], values[31])


@given(messages, facts, st.booleans())
def test_receive_answer_body_equals_the_general_writer(
    m: Message, values: dict[str, object], none: bool
) -> None:
    m = _received(m, values)
    packet = None if none else encode_packet(m, "DIRECT=OS:x\\private$\\q")
    general = ReceiveResponse(packet, fact_properties(m, CLIENT_RECEIVE_PROPIDS))
    assert receive_answer_body(packet, m) == general.encode()


@given(messages, facts)
def test_parse_receive_answer_equals_the_general_decoder(m: Message, values: dict[str, object]) -> None:
    m = _received(m, values)
    body = receive_answer_body(encode_packet(m, "q"), m)
    assert body is not None
    general = ReceiveResponse.decode(body)
    expected = decode_message(general.packet, general.properties)
    got = parse_receive_answer(body)
    if got is not None:  # None: not the simple shape (e.g. a response queue)
        assert got == expected
        assert got.__dict__ == expected.__dict__
    else:
        assert m.response_queue is not None


@given(messages, facts, st.data())
def test_parse_receive_answer_never_accepts_what_the_general_path_refuses(
    m: Message, values: dict[str, object], data: st.DataObject
) -> None:
    body = bytearray(receive_answer_body(encode_packet(_received(m, values), "q"), m) or b"")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(body) - 1))
        body[i] = data.draw(st.integers(0, 255))
    got = parse_receive_answer(bytes(body))
    if got is not None:
        general = ReceiveResponse.decode(bytes(body))
        assert got.__dict__ == decode_message(general.packet, general.properties).__dict__


@given(st.binary(max_size=120))
def test_parsers_on_arbitrary_bytes(data: bytes) -> None:
    assert parse_receive_answer(data) is None or isinstance(parse_receive_answer(data), Message)
    got = parse_send_answer(data)
    if got is not None:
        values = props_dict(SendResponse.decode(data).properties)
        assert got == (values[2], values[31])


def test_parse_send_answer_refuses_other_shapes() -> None:
    good = send_answer_body(Message(id=ObjectId(GUID, 5), sent_time=9.0))
    assert parse_send_answer(good) == (bytes(ObjectId(GUID, 5)), 9)
    assert parse_send_answer(good[:-1]) is None
    assert parse_send_answer(b"\x03" + good[1:]) is None  # count
    assert parse_send_answer(good[:4] + b"\x03" + good[5:]) is None  # first propid


@given(
    st.integers(0, 0xFFFFFFFF),
    st.binary(max_size=64),
    st.none() | st.integers(0, 255) | st.uuids(),
)
def test_send_request_body_equals_the_general_writer(handle: int, packet: bytes, xact: object) -> None:
    req = hot.send_request(handle, packet, xact)  # type: ignore[arg-type]
    assert hot.send_request_body(handle, packet, xact) == hot.PAYLOAD_WRITERS[type(req)](req)  # type: ignore[arg-type]


@given(
    st.integers(0, 0xFFFFFFFF),
    st.integers(0, 0xFFFFFFFF),
    st.integers(0, 0xFFFFFFFF),
    st.none() | st.integers(0, 255) | st.uuids(),
    st.lists(st.integers(0, 0xFFFFFFFF), max_size=8).map(tuple),
)
def test_receive_request_body_equals_the_general_writer(
    handle: int, timeout: int, cursor: int, xact: object, propids: tuple[int, ...]
) -> None:
    req = hot.receive_request(handle, 1, timeout, cursor, 7, xact, propids)  # type: ignore[arg-type]
    body = hot.receive_request_body(handle, 1, timeout, cursor, 7, xact, propids)  # type: ignore[arg-type]
    assert body == req.encode()


# ---------------------------------------------------------------------------- connection lanes


def _pair() -> tuple[ClientConnection, ServerConnection]:
    client, server = ClientConnection(), ServerConnection()
    server.receive_data(client.send(ClientHello()))
    client.receive_data(server.send(ServerHello(1, GUID, "m", 1 << 20, 4, 1 << 20)))
    return client, server


@given(messages, st.integers(1, 9))
def test_client_request_frame_equals_send_request(m: Message, handle: int) -> None:
    m.validate()
    packet = encode_packet(m)
    general, lean = _pair()[0], _pair()[0]
    for _ in range(3):
        rid, data = general.send_request(hot.send_request(handle, packet))
        framed = lean.request_frame(int(Op.SEND), hot.send_request_body(handle, packet))
        assert framed == (rid, data)
        assert lean.in_flight == general.in_flight
    assert lean.request_frame(int(Op.SEND), b"x") is not None  # 4th: window of 4
    assert lean.request_frame(int(Op.SEND), b"x") is None
    assert len(lean.in_flight) == 4


def test_client_request_frame_refuses_before_ready_and_oversized() -> None:
    assert ClientConnection().request_frame(int(Op.SEND), b"") is None
    client, _ = _pair()
    assert client.request_frame(int(Op.SEND), bytes((1 << 20) + 1)) is None
    assert not client.in_flight


@given(messages, facts)
def test_client_response_payload_equals_receive_data(m: Message, values: dict[str, object]) -> None:
    m = _received(m, values)
    for op, body, parse in (
        (Op.SEND, send_answer_body(m), parse_send_answer),
        (Op.RECEIVE, receive_answer_body(encode_packet(m, "q"), m), parse_receive_answer),
    ):
        assert body is not None
        client, server = _pair()
        lean, _ = _pair()
        rid = client.request_frame(int(op), b"\x00" * 8)[0]  # type: ignore[index]
        assert lean.request_frame(int(op), b"\x00" * 8) is not None
        server.in_flight[rid] = int(op)
        frame = server.answer_frame(rid, int(op), body)
        assert frame is not None
        assert lean.response_payload(frame[:-1], rid, parse) is None  # partial: general path
        assert lean.response_payload(frame + frame, rid, parse) is None  # two frames: general path
        assert lean.response_payload(frame, rid + 1, parse) is None  # another request's answer
        (event,) = client.receive_data(frame)
        assert isinstance(event, ResponseReceived)
        got = lean.response_payload(frame, rid, parse)
        if got is None:  # a message that is not of the simple shape: left to receive_data
            assert op == Op.RECEIVE and m.response_queue is not None
            assert lean.in_flight == {rid: int(op)}
            continue
        assert lean.in_flight == client.in_flight == {}
        if op == Op.SEND:
            assert got == parse_send_answer(event.response.encode())
        else:
            r = event.response
            assert isinstance(r, ReceiveResponse)
            assert got.__dict__ == decode_message(r.packet, r.properties).__dict__  # type: ignore[union-attr]


def test_client_response_payload_leaves_errors_to_receive_data() -> None:
    client, server = _pair()
    rid = client.request_frame(int(Op.SEND), b"\x00" * 8)[0]  # type: ignore[index]
    server.in_flight[rid] = int(Op.SEND)
    frame = server.send(ErrorResponse(0xC00E0001, "no"), rid)
    assert client.response_payload(frame, rid, parse_send_answer) is None
    assert client.in_flight == {rid: int(Op.SEND)}
    (event,) = client.receive_data(frame)
    assert isinstance(event, ResponseReceived) and not event.ok


@given(messages, st.integers(1, 9))
def test_server_request_fast_equals_receive_data(m: Message, handle: int) -> None:
    m.validate()
    for request in (
        hot.send_request(handle, encode_packet(m)),
        hot.receive_request(handle, 0, 0, 0, 0, None, CLIENT_RECEIVE_PROPIDS),
    ):
        client, server = _pair()
        _, lean = _pair()
        _, data = client.send_request(request)
        assert lean.request_fast(data[:-1]) is None  # partial
        assert lean.request_fast(data + data) is None  # two frames
        assert not lean.in_flight
        (event,) = server.receive_data(data)
        assert isinstance(event, RequestReceived)
        assert lean.request_fast(data) == (event.request_id, event.request)
        assert lean.in_flight == server.in_flight
        assert lean.request_fast(data) is None  # the same id again: receive_data raises


def test_server_request_fast_leaves_other_ops_to_receive_data() -> None:
    client, server = _pair()
    _, data = client.send_request(hot.send_request(1, b"not a packet"))
    assert server.request_fast(data) is None  # the hot reader refuses: receive_data says why
    assert not server.in_flight


@given(messages)
def test_server_answer_frame_equals_send(m: Message) -> None:
    m.validate()
    general, lean = _pair()[1], _pair()[1]
    for s in (general, lean):
        s.in_flight[7] = int(Op.SEND)
    body = send_answer_body(m)
    assert lean.answer_frame(7, int(Op.RECEIVE), body) is None  # wrong op
    assert lean.answer_frame(8, int(Op.SEND), body) is None  # not in flight
    assert lean.answer_frame(7, int(Op.SEND), body) == general.send(SendResponse(send_facts(m)), 7)
    assert lean.in_flight == general.in_flight == {}


# ---------------------------------------------------------------------------- fast_packet helpers


@given(st.uuids(), st.integers(0, 0xFFFFFFFF))
def test_guid_bytes_le_and_object_id_equal_the_general_ones(lineage: uuid.UUID, uniquifier: int) -> None:
    assert guid_bytes_le(lineage) == lineage.bytes_le
    assert guid_bytes_le(uuid.UUID(int=lineage.int)) == lineage.bytes_le  # cached by value
    oid = object_id(lineage, uniquifier)
    assert oid == ObjectId(lineage, uniquifier)
    assert bytes(oid) == bytes(ObjectId(lineage, uniquifier))
    assert hash(oid) == hash(ObjectId(lineage, uniquifier))


@given(messages, st.data())
def test_every_packet_decode_simple_accepts_passes_the_general_packet_check(
    m: Message, data: st.DataObject
) -> None:
    # parse_receive_answer relies on it (it skips hot._packet_ok).
    m.validate()
    packet = bytearray(encode_packet(m))
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(0, 19))  # BaseHeader and the start of the UserHeader
        packet[i] = data.draw(st.integers(0, 255))
    if decode_simple(bytes(packet)) is not None:
        assert hot._packet_ok(bytes(packet), 0, len(packet))


def test_hot_packet_check_uses_the_base_header_flag_bits() -> None:
    # [MS-MQMQ] 2.2.19.1: IN is 0x0008 and SH 0x0010 (the hot check once used 0x80 and 0x800).
    packet = bytearray(encode_packet(Message(body=b"abc")))
    assert hot._packet_ok(bytes(packet), 0, len(packet))
    packet[2] |= 0x08  # IN: an internal packet, refused by the general check
    assert not hot._packet_ok(bytes(packet), 0, len(packet))
    payload = hot.send_request_body(1, bytes(packet))
    assert hot.read_send_request(payload) is None
