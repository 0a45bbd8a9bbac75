"""Client-protocol payloads: hand-built vectors from docs/protocol.md, round trips, fuzzing."""

from __future__ import annotations

import dataclasses
import re
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.hresult import HResult
from pymsmq.protocol import (
    MAX_PAYLOAD,
    REQUEST_TYPES,
    RESPONSE_TYPES,
    Action,
    CancelReceiveRequest,
    ClientHello,
    CreateQueueRequest,
    EndReceiveRequest,
    ErrorResponse,
    Goodbye,
    ListQueuesPageRequest,
    ListQueuesPageResponse,
    ListQueuesResponse,
    Op,
    OpenQueueRequest,
    PingRequest,
    ReceiveFlags,
    ReceiveMatchingRequest,
    ReceiveMatchingResponse,
    ReceiveRequest,
    ReceiveResponse,
    SendRequest,
    ServerHello,
    choose_version,
)
from pymsmq.protocol._payload import Payload
from pymsmq.protocol.messages import ReadRangeRequest
from pymsmq.wire.base_header import MAX_PACKET_SIZE
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.user_message import UserMessage
from pymsmq.wire.vartype import VarType

PACKET = UserMessage.build(destination="DIRECT=TCP:10.0.0.1\\private$\\q", body=b"hello", label="x").encode()
GUID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
GUID_LE = bytes.fromhex("33221100554477668899aabbccddeeff")


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("\n", ""))


def utf16(text: str) -> bytes:
    return struct.pack("<H", len(text)) + text.encode("utf-16-le")


# ------------------------------------------------------------------ vectors built from the layout tables


VECTORS: list[tuple[Payload, bytes]] = [
    (PingRequest(b"abc"), h("03000000") + b"abc"),
    (ClientHello((1,), b"tok", "cli"), h("0100 0100") + h("03000000") + b"tok" + utf16("cli")),
    (
        ServerHello(1, GUID, "m", 0x00410000, 16, 0x00400000),
        h("0100") + GUID_LE + utf16("m") + h("00004100 10000000 00004000"),
    ),
    (Goodbye(HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, ""), h("0b000ec0 0000")),
    (ErrorResponse(HResult.MQ_ERROR_IO_TIMEOUT, "t"), h("1b000ec0") + utf16("t")),
    (
        OpenQueueRequest(".\\private$\\q", 1, 0),
        utf16(".\\private$\\q") + h("01000000 00000000"),
    ),
    (
        CreateQueueRequest(".\\private$\\q", ((113, PropVariant(VarType.VT_UI1, 1)),)),
        # PROPID_Q_TRANSACTION (113 = 0x71) VT_UI1 (0x0011) value 1
        utf16(".\\private$\\q") + h("01000000 71000000 1100 01"),
    ),
    (
        SendRequest(5, PACKET, 3, ()),
        h("05000000") + struct.pack("<I", len(PACKET)) + PACKET + h("01 03") + h("00000000"),
    ),
    (
        ReceiveRequest(
            5, Action.MQ_LOOKUP_PEEK_NEXT, 2000, 9, 0x1122334455, GUID, ReceiveFlags.NO_PACKET, (60,)
        ),
        h("05000000 11000040 d0070000 09000000 5544332211000000")
        + b"\x02"
        + GUID_LE
        + h("01000000 01000000 3c000000"),
    ),
    (
        ReceiveResponse(PACKET, ((60, PropVariant(VarType.VT_UI8, 7)),)),
        # PROPID_M_LOOKUPID (60) VT_UI8 (0x0015) = 7
        struct.pack("<I", len(PACKET)) + PACKET + h("01000000 3c000000 1500 0700000000000000"),
    ),
    (ReceiveResponse(None, ()), h("00000000 00000000")),
    (
        # RECEIVE_MATCHING: handle 5, MQ_ACTION_PEEK_CURRENT, 2000 ms, PROPID_M_CORRELATIONID (3), the
        # OBJECTID {GUID, 7} ([MS-MQMQ] 2.2.8: the GUID's 16 bytes, then the u32), transaction kind
        # 0 (none), flags NO_PACKET, propids (60,)
        ReceiveMatchingRequest(
            5, Action.MQ_ACTION_PEEK_CURRENT, 2000, 3, GUID, 7, None, ReceiveFlags.NO_PACKET, (60,)
        ),
        h("05000000 00000080 d0070000 03000000") + GUID_LE + h("07000000 00 01000000 01000000 3c000000"),
    ),
    (ReceiveMatchingResponse(None, ()), h("00000000 00000000")),
    # END_RECEIVE: handle 5, lookup id 0x1122334455, RR_ACK (2) ([MS-MQRR] 3.1.4.9 dwAck)
    (EndReceiveRequest(5, 0x1122334455, 2), h("05000000 5544332211000000 02000000")),
    # CANCEL_RECEIVE: handle 5, the waiting request's id 0x01020304 ([MS-MQRR] 3.1.4.8 dwRequestId)
    (CancelReceiveRequest(5, 0x01020304), h("05000000 04030201")),
    (ListQueuesResponse(("a",), ((),)), h("01000000") + utf16("a") + h("01000000 00000000")),
    # LIST_QUEUES_PAGE: filter 1 (private), propids (7,), after "a", max_count 100
    (ListQueuesPageRequest(1, (7,), "a", 100), h("01 01000000 07000000") + utf16("a") + h("64000000")),
    (
        ListQueuesPageResponse(("b",), ((),), 1),
        h("01000000") + utf16("b") + h("01000000 00000000") + h("01"),
    ),
]


@pytest.mark.parametrize(
    ("value", "data"), VECTORS, ids=lambda v: type(v).__name__ if isinstance(v, Payload) else ""
)
def test_payload_vectors_both_ways(value: Payload, data: bytes) -> None:
    assert value.encode() == data
    assert type(value).decode(data) == value


def test_operation_tables_cover_every_op() -> None:
    assert set(REQUEST_TYPES) == set(Op) == set(RESPONSE_TYPES)
    for op, cls in REQUEST_TYPES.items():
        assert op == cls.OP and cls.__name__.endswith("Request")
        assert op == RESPONSE_TYPES[op].OP and RESPONSE_TYPES[op].__name__ == cls.__name__[:-7] + "Response"


def test_spec_matches_dataclass_fields() -> None:
    for cls in [
        *REQUEST_TYPES.values(),
        *RESPONSE_TYPES.values(),
        ClientHello,
        ServerHello,
        Goodbye,
        ErrorResponse,
    ]:
        assert [name for name, _ in cls.SPEC] == [fl.name for fl in dataclasses.fields(cls)]  # type: ignore[arg-type]


def test_action_values_are_the_mq_h_values() -> None:
    assert Action.MQ_ACTION_PEEK_NEXT == 0x80000001
    assert Action.MQ_LOOKUP_RECEIVE_ALLOW_PEEK == 0x40000120 == 1073742112
    assert Action.MQ_LOOKUP_PEEK_LAST.by_lookup_id and not Action.MQ_ACTION_RECEIVE.by_lookup_id
    assert Action.MQ_LOOKUP_PEEK_PREV.peek and not Action.MQ_LOOKUP_RECEIVE_CURRENT.peek


def test_receive_action_must_be_known() -> None:
    with pytest.raises(WireError, match="action"):
        ReceiveRequest(1, 0x80000002)
    data = bytearray(ReceiveRequest(1).encode())
    struct.pack_into("<I", data, 4, 0x12345678)
    with pytest.raises(WireError, match="action"):
        ReceiveRequest.decode(bytes(data))


def test_receive_matching_action_and_match_must_be_known() -> None:
    # Only a receive or a peek of the first match, of a message id (2) or a correlation id (3).
    with pytest.raises(WireError, match="action"):
        ReceiveMatchingRequest(1, Action.MQ_ACTION_PEEK_NEXT)
    with pytest.raises(WireError, match="match"):
        ReceiveMatchingRequest(1, match=4)
    data = bytearray(ReceiveMatchingRequest(1).encode())
    struct.pack_into("<I", data, 12, 60)  # PROPID_M_LOOKUPID is not a match
    with pytest.raises(WireError, match="match"):
        ReceiveMatchingRequest.decode(bytes(data))


def test_constructor_checks_fields() -> None:
    with pytest.raises(WireError, match=r"SendRequest\.packet"):
        SendRequest(1, b"not a packet")
    with pytest.raises(WireError, match=r"OpenQueueRequest\.access"):
        OpenQueueRequest("q", -1)
    with pytest.raises(WireError, match=r"ClientHello\.versions"):
        ClientHello(())
    with pytest.raises(WireError, match="token"):
        ClientHello(token=b"x" * 4097)
    with pytest.raises(WireError, match="max_payload"):
        ServerHello(max_payload=MAX_PAYLOAD + 1)
    with pytest.raises(WireError, match="max_in_flight"):
        ServerHello(max_in_flight=0)
    with pytest.raises(WireError, match="max_message_size"):
        ServerHello(max_message_size=MAX_PACKET_SIZE + 1)
    with pytest.raises(WireError, match="one property array per name"):
        ListQueuesResponse(("a", "b"), ((),))
    with pytest.raises(WireError, match="one property array per name"):
        ListQueuesPageResponse(("a", "b"), ((),))
    with pytest.raises(WireError, match="more 2 is not 0 or 1"):
        ListQueuesPageResponse((), (), 2)


def test_send_request_carries_a_real_packet(vector: Any) -> None:
    real = vector("queuejumper-msf-usermessage-srmp.bin")
    req = SendRequest(1, real, None)
    assert SendRequest.decode(req.encode()).packet == real
    assert req.message.encode() == real
    msg = UserMessage.decode(PACKET)
    assert SendRequest.from_message(2, msg).packet == PACKET
    assert ReceiveResponse(PACKET).message == msg
    assert ReceiveResponse(None).message is None


def test_choose_version() -> None:
    assert choose_version(ClientHello((1, 7))) == 1  # a version-1 client gets version 1
    assert choose_version(ClientHello((1, 2))) == 2  # a version-2 client gets version 2
    assert choose_version(ClientHello((1, 2, 3))) == 3
    assert choose_version(ClientHello((3, 4))) == 4
    assert choose_version(ClientHello((4, 5))) == 5  # MARK_REJECTED's version
    assert choose_version(ClientHello((3, 6))) == 3
    assert choose_version(ClientHello((6, 7))) is None
    assert choose_version(ClientHello((1, 2, 3)), (1,)) == 1


# ------------------------------------------------------------------ Hypothesis strategies from the SPECs

_text = st.text(max_size=20)
_propvariants = st.one_of(
    st.builds(PropVariant, st.just(VarType.VT_UI4), st.integers(0, 0xFFFFFFFF)),
    st.builds(PropVariant, st.just(VarType.VT_UI8), st.integers(0, 2**64 - 1)),
    st.builds(PropVariant, st.just(VarType.VT_I2), st.integers(-0x8000, 0x7FFF)),
    st.builds(PropVariant, st.just(VarType.VT_UI1), st.integers(0, 0xFF)),
    st.builds(PropVariant, st.just(VarType.VT_BOOL), st.booleans()),
    st.builds(
        PropVariant,
        st.just(VarType.VT_LPWSTR),
        st.text(st.characters(exclude_characters="\x00"), max_size=10),
    ),
    st.builds(PropVariant, st.just(VarType.VT_VECTOR_UI1), st.binary(max_size=20)),
    st.builds(PropVariant, st.just(VarType.VT_CLSID), st.uuids()),
    st.builds(PropVariant, st.just(VarType.VT_VECTOR_LPWSTR), st.lists(st.just("ab"), max_size=3).map(tuple)),
)
_props = st.lists(st.tuples(st.integers(0, 0xFFFFFFFF), _propvariants), max_size=4).map(tuple)
_packets = st.builds(
    lambda body, label, prio, sh: UserMessage.build(
        destination="DIRECT=TCP:10.0.0.1\\private$\\q", body=body, label=label, priority=prio
    ).encode(),
    st.binary(max_size=300),
    st.none() | st.text(st.characters(exclude_characters="\x00"), max_size=10),
    st.integers(0, 7),
    st.booleans(),
)

CODEC_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "u8": st.integers(0, 0xFF),
    "u16": st.integers(0, 0xFFFF),
    "u32": st.integers(0, 0xFFFFFFFF),
    "u64": st.integers(0, 2**64 - 1),
    "GUID": st.uuids(),
    "STR": _text,
    "BYTES": st.binary(max_size=40),
    "PACKET": _packets,
    "OPT_PACKET": st.none() | _packets,
    "PROPS": _props,
    "PROPS_LIST": st.lists(_props, max_size=3).map(tuple),
    "PROPIDS": st.lists(st.integers(0, 0xFFFFFFFF), max_size=6).map(tuple),
    "U16S": st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=5).map(tuple),
    "STRS": st.lists(_text, max_size=4).map(tuple),
    "XACT": st.none() | st.integers(0, 0xFF) | st.uuids(),
}
OVERRIDES: dict[tuple[type, str], st.SearchStrategy[Any]] = {
    (ReceiveRequest, "action"): st.sampled_from(Action),
    (ReceiveMatchingRequest, "action"): st.sampled_from(
        [Action.MQ_ACTION_RECEIVE, Action.MQ_ACTION_PEEK_CURRENT]
    ),
    (ReceiveMatchingRequest, "match"): st.sampled_from([2, 3]),
    (ServerHello, "max_payload"): st.integers(0x10000, MAX_PAYLOAD),
    (ServerHello, "max_in_flight"): st.integers(1, 0xFFFFFFFF),
    (ServerHello, "max_message_size"): st.integers(0, MAX_PACKET_SIZE),
    (ClientHello, "token"): st.binary(max_size=64),
    # READ_RANGE priorities are BaseHeader.Flags.PR values ([MS-MQMQ] 2.2.19.1): 0..7.
    (ReadRangeRequest, "min_priority"): st.integers(0, 7),
    (ReadRangeRequest, "max_priority"): st.integers(0, 7),
}


def payloads(cls: type[Payload]) -> st.SearchStrategy[Payload]:
    if cls is ListQueuesResponse:
        return st.lists(st.tuples(_text, _props), max_size=3).map(
            lambda rows: ListQueuesResponse(tuple(n for n, _ in rows), tuple(p for _, p in rows))
        )
    if cls is ListQueuesPageResponse:
        return st.tuples(st.lists(st.tuples(_text, _props), max_size=3), st.sampled_from([0, 1])).map(
            lambda page: ListQueuesPageResponse(
                tuple(n for n, _ in page[0]), tuple(p for _, p in page[0]), page[1]
            )
        )
    fields = {name: OVERRIDES.get((cls, name), CODEC_STRATEGIES[codec.name]) for name, codec in cls.SPEC}
    return st.builds(cls, **fields)


ALL_PAYLOADS: list[type[Payload]] = [
    *REQUEST_TYPES.values(),
    *RESPONSE_TYPES.values(),
    ClientHello,
    ServerHello,
    Goodbye,
    ErrorResponse,
]


@pytest.mark.parametrize("cls", ALL_PAYLOADS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_round_trip(cls: type[Payload], data: st.DataObject) -> None:
    value = data.draw(payloads(cls))
    encoded = value.encode()
    decoded = cls.decode(encoded)
    assert decoded == value
    assert decoded.encode() == encoded


@pytest.mark.parametrize("cls", ALL_PAYLOADS, ids=lambda c: c.__name__)
@given(blob=st.binary(max_size=120))
def test_decode_any_bytes(cls: type[Payload], blob: bytes) -> None:
    try:
        value = cls.decode(blob)
    except WireError:
        return
    assert value.encode() == blob


@pytest.mark.parametrize("cls", ALL_PAYLOADS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_truncation_and_trailing_garbage(cls: type[Payload], data: st.DataObject) -> None:
    encoded = data.draw(payloads(cls)).encode()
    cut = data.draw(st.integers(0, max(0, len(encoded) - 1)))
    if len(encoded):
        with pytest.raises(WireError):
            cls.decode(encoded[:cut])
    garbage = data.draw(st.binary(min_size=1, max_size=8))
    with pytest.raises(WireError):
        cls.decode(encoded + garbage)


@pytest.mark.parametrize("cls", ALL_PAYLOADS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_mutated_encodings(cls: type[Payload], data: st.DataObject) -> None:
    encoded = bytearray(data.draw(payloads(cls)).encode())
    if not encoded:
        return
    i = data.draw(st.integers(0, len(encoded) - 1))
    encoded[i] = data.draw(st.integers(0, 255))
    try:
        value = cls.decode(bytes(encoded))
    except WireError:
        return
    assert value.encode() == bytes(encoded)


def test_the_receive_matching_example_of_protocol_md_is_the_encoding() -> None:
    # docs/protocol.md 11.z: each line of the example block is hex words, then a comment.
    text = (Path(__file__).parents[2] / "docs" / "protocol.md").read_text()
    section = text[text.index("### 11.z RECEIVE_MATCHING") :]
    block = section[section.index("```\n") + 4 :]
    block = block[: block.index("```")]
    data = bytes.fromhex("".join(re.split(r"\s{3,}", line)[0] for line in block.splitlines()))
    request = ReceiveMatchingRequest(
        5, Action.MQ_ACTION_PEEK_CURRENT, 2000, 3, GUID, 7, None, ReceiveFlags.NO_PACKET, (60,)
    )
    assert data == request.encode()
    assert ReceiveMatchingRequest.decode(data) == request
