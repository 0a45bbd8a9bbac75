"""CACTransferBufferV1 ([MS-MQMP] 2.2.3.2): TV-10..TV-12, range checks, flat encoding round trips, fuzz."""

from __future__ import annotations

import dataclasses
import struct
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.wire.cac_transfer_buffer import (
    CACTransferBufferV1,
    CreateCursorArm,
    ReceiveAction,
    ReceiveArm,
    SendArm,
    TransferType,
)
from pymsmq.wire.cac_transfer_rules import (
    BufferTooSmallError,
    ClassWord,
    decode_class,
    fill_receive,
    send_defaults,
)

SEND = TransferType.CACTB_SEND
RECEIVE = TransferType.CACTB_RECEIVE


# ---------------------------------------------------------------- TV-10


@pytest.mark.parametrize(
    ("word", "s", "r", "h", "code"),
    [
        (0x0000, False, False, False, 0),  # Normal
        (0x4000, False, True, False, 0),  # AckReceive
        (0x8002, True, False, False, 2),  # NackReachQueueTimeout
        (0xC002, True, True, False, 2),  # NackReceiveTimeout
        (0xA194, True, False, True, 404),  # HTTP NACK 404 needs the 9-bit code
    ],
)
def test_tv10_class_word(word: int, s: bool, r: bool, h: bool, code: int) -> None:
    assert decode_class(word) == ClassWord(s, r, h, 0, code)


def test_tv10_reserved_bits_ignored_not_rejected() -> None:
    cw = decode_class(0x1E00 | 0x8002)
    assert (cw.s, cw.r, cw.h, cw.class_code) == (True, False, False, 2)
    assert cw.reserved == 0xF
    with pytest.raises(WireError):
        decode_class(0x10000)
    # An unknown class word is kept opaque by the record.
    assert CACTransferBufferV1.decode(CACTransferBufferV1(msg_class=0x1E05).encode()).msg_class == 0x1E05


# ---------------------------------------------------------------- TV-11


def test_tv11_all_null_send_defaults() -> None:
    p = send_defaults(CACTransferBufferV1(SEND, absolute_time_to_queue=0, uow=None))
    assert p.priority == 3
    assert p.trace == 0
    assert p.time_to_reach_queue == 0xFFFFFFFF
    assert p.delivery == 0
    assert p.auditing == 0
    assert p.msg_class == 0x0000
    assert p.correlation_id == bytes(20)
    assert p.acknowledge == 0
    assert p.application_tag == 0
    assert p.label == ""
    assert p.body is None
    assert p.priv_level == 0
    assert p.hash_alg == 0
    assert p.encrypt_alg == 0
    assert p.body_type == 0
    assert not p.transactional


def test_tv11_transactional_send_is_recoverable() -> None:
    p = send_defaults(CACTransferBufferV1(SEND, uow=bytes(range(1, 17)), delivery=None))
    assert p.delivery == 1
    assert p.transactional
    # A zero XACTUOW is not a transaction; an explicit delivery wins.
    assert send_defaults(CACTransferBufferV1(SEND, uow=bytes(16))).delivery == 0
    assert send_defaults(CACTransferBufferV1(SEND, uow=b"\x01" * 16, delivery=0)).delivery == 0


def test_tv11_title_truncated_to_250() -> None:
    title = "x" * 300
    p = send_defaults(CACTransferBufferV1(SEND, title=title, title_buffer_size_in_wchars=250))
    assert p.label == "x" * 250
    p2 = send_defaults(CACTransferBufferV1(SEND, title="abc\x00junk", title_buffer_size_in_wchars=8))
    assert p2.label == "abc"


def test_tv11_explicit_values_pass_through() -> None:
    buf = CACTransferBufferV1(
        SEND,
        send=SendArm(r"DIRECT=OS:.\private$\admin", None),
        priority=0,
        msg_class=0x4000,
        body=b"0123456789",
        body_buffer_size_in_bytes=4,
        alloc_body_buffer_in_bytes=10,
        absolute_time_to_queue=300,
        relative_time_to_live=60,
        correlation_id=b"\x07" * 20,
        hash_alg=0x8004,
        priv_level=1,
        encrypt_alg=0x6602,
    )
    p = send_defaults(buf)
    assert (p.priority, p.msg_class, p.body, p.time_to_reach_queue, p.time_to_be_received) == (
        0,
        0x4000,
        b"0123",
        300,
        60,
    )
    assert p.correlation_id == b"\x07" * 20
    assert p.admin_queue_format == r"DIRECT=OS:.\private$\admin"
    assert (p.hash_alg, p.priv_level, p.encrypt_alg) == (0x8004, 1, 0x6602)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"priority": 8},
        {"transfer_type": 3},
        {"transfer_type": -1},
        {"title_buffer_size_in_wchars": 251},
        {"correlation_id": bytes(19)},
        {"correlation_id": bytes(21)},
        {"message_id": bytes(19)},
        {"uow": bytes(15)},
        {"body_buffer_size_in_bytes": 11, "alloc_body_buffer_in_bytes": 10},
        {"body_size": 11, "alloc_body_buffer_in_bytes": 10},
        {"body": b"abc", "alloc_body_buffer_in_bytes": 2},
        {"delivery": 2},
        {"acknowledge": 3},
        {"auditing": 4},
        {"trace": 2},
        {"sender_id_type": 3},
        {"p_authenticated": 2},
        {"hash_alg": 0x8005},
        {"encrypt_alg": 0x6603},
        {"priv_level": 4},
        {"msg_class": 0x10000},
        {"sent_time": -1},
        {"encrypted": 256},
        {"sender_id_len": 0x10000},
        {"default_provider": 2**31},
        {"sender_id": b"abc", "sender_id_len": 2, "sender_id_type": 1},
        {"sender_id": b"", "sender_id_type": 0},
        {"signature": b"ab", "signature_size": 1},
        {"title": b"x"},
        {"src_qm_id": "not a guid"},
        {"body": "text", "alloc_body_buffer_in_bytes": 10},
        {"receive": ReceiveArm()},
    ],
)
def test_tv11_rejected_on_construction(kwargs: dict[str, Any]) -> None:
    with pytest.raises(WireError):
        CACTransferBufferV1(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"action": 0x00000001},
        {"action": 2},
        {"dest_format_name_len": 1025},
        {"admin_format_name_len": -1},
        {"response_format_name_len": 2, "response_format_name": "abc"},
        {"cursor": 2**32},
        {"ordering_format_name_len_prop": -1},
    ],
)
def test_receive_arm_ranges(kwargs: dict[str, Any]) -> None:
    with pytest.raises(WireError):
        ReceiveArm(**kwargs)


def test_receive_arm_bounds_accepted() -> None:
    arm = ReceiveArm(
        action=ReceiveAction.MQ_ACTION_PEEK_NEXT, dest_format_name_len=1024, dest_format_name="d" * 1024
    )
    buf = CACTransferBufferV1(RECEIVE, receive=arm)
    assert CACTransferBufferV1.decode(buf.encode()) == buf
    assert ReceiveArm(action=0x80000000).action is ReceiveAction.MQ_ACTION_PEEK_CURRENT


def test_send_rule_violations() -> None:
    with pytest.raises(MSMQError):
        send_defaults(CACTransferBufferV1(RECEIVE))
    with pytest.raises(MSMQError):
        send_defaults(CACTransferBufferV1(SEND, sender_id_len=16))
    with pytest.raises(MSMQError):
        send_defaults(CACTransferBufferV1(SEND, signature_size=4, signature=b"abcd"))
    with pytest.raises(MSMQError):
        send_defaults(CACTransferBufferV1(SEND, priv_level=1))


# ---------------------------------------------------------------- TV-12


def _tv12_request(capacity: int) -> CACTransferBufferV1:
    return CACTransferBufferV1(
        RECEIVE,
        receive=ReceiveArm(cursor=7),
        msg_class=0xFFFF,
        body=b"",
        body_buffer_size_in_bytes=capacity,
        alloc_body_buffer_in_bytes=capacity,
        body_size=0,
        uow=b"\x05" * 16,
    )


def test_tv12_receive_fills_only_requested_members() -> None:
    request = _tv12_request(16)
    stored = {
        "msg_class": 0x0000,
        "body": bytes(range(10)),
        "priority": 5,
        "title": "label",
        "arrived_time": 9,
    }
    reply = fill_receive(request, stored)
    assert reply.msg_class == 0x0000
    assert reply.body == bytes(range(10))
    assert reply.body_size == 10
    assert reply.body_buffer_size_in_bytes == 16  # unchanged
    assert reply.receive is not None and reply.receive.cursor == 7  # unchanged
    assert reply.uow == b"\x05" * 16  # unchanged
    # Every pointer that was NULL on input is still NULL.
    for f in dataclasses.fields(CACTransferBufferV1):
        if getattr(request, f.name) is None:
            assert getattr(reply, f.name) is None, f.name
    assert CACTransferBufferV1.decode(reply.encode()) == reply


def test_tv12_capacity_checked_before_filling() -> None:
    with pytest.raises(BufferTooSmallError) as err:
        fill_receive(_tv12_request(10), {"msg_class": 0, "body": bytes(25)})
    assert err.value.hresult == HResult.MQ_ERROR_BUFFER_OVERFLOW
    assert err.value.required == 25
    assert err.value.capacity == 10
    assert isinstance(err.value, MSMQError)


def test_receive_size_out_and_names() -> None:
    request = CACTransferBufferV1(
        RECEIVE,
        receive=ReceiveArm(
            dest_format_name_len=64,
            dest_format_name="",
            dest_format_name_len_prop=64,
            admin_format_name_len_prop=0,
            response_format_name_len=4,
            response_format_name="",
        ),
        p_title_buffer_size_in_wchars=0,
        sender_id_len_prop=0,
    )
    stored = {"dest_format_name": r"DIRECT=OS:.\private$\q", "admin_format_name": "abc", "title": "hello"}
    reply = fill_receive(request, stored)
    assert reply.receive is not None
    assert reply.receive.dest_format_name == r"DIRECT=OS:.\private$\q"
    assert reply.receive.dest_format_name_len_prop == len(stored["dest_format_name"])
    assert reply.receive.admin_format_name is None and reply.receive.admin_format_name_len_prop == 3
    assert reply.receive.response_format_name == ""  # requested, absent property
    assert reply.p_title_buffer_size_in_wchars == 5 and reply.title is None
    assert reply.sender_id_len_prop == 0
    with pytest.raises(BufferTooSmallError) as err:
        fill_receive(request, {"response_format_name": "12345"})
    assert err.value.hresult == HResult.MQ_ERROR_FORMATNAME_BUFFER_TOO_SMALL
    with pytest.raises(BufferTooSmallError) as err2:
        fill_receive(CACTransferBufferV1(RECEIVE, title="", title_buffer_size_in_wchars=2), {"title": "abc"})
    assert err2.value.hresult == HResult.MQ_ERROR_LABEL_BUFFER_TOO_SMALL
    with pytest.raises(MSMQError):
        fill_receive(CACTransferBufferV1(SEND), {})


# ---------------------------------------------------------------- flat encoding vectors


def test_flat_encoding_minimal_send_vector() -> None:
    buf = CACTransferBufferV1()
    wire = struct.pack("<IQ", 0, 0) + bytes(52)
    assert buf.encode() == wire
    assert CACTransferBufferV1.decode(wire) == buf
    assert buf.send == SendArm()


def test_flat_encoding_hand_built_vector() -> None:
    qm = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    buf = CACTransferBufferV1(
        SEND,
        send=SendArm(admin_queue_format="A"),
        msg_class=0x4000,  # bit 0
        priority=7,  # bit 5
        body=b"hi",  # bit 10
        body_buffer_size_in_bytes=2,
        alloc_body_buffer_in_bytes=2,
        src_qm_id=qm,  # bit 33
        default_provider=-1,
    )
    presence = 1 << 0 | 1 << 5 | 1 << 10 | 1 << 33 | 1 << 40
    scalars = struct.pack("<IIIIIIIIiIBBHII", 2, 2, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0)
    wire = (
        struct.pack("<IQ", 0, presence)
        + b"\x01\x00\x00\x00A\x00"  # admin_queue_format: 1 code unit
        + scalars
        + b"\x00\x40"  # msg_class
        + b"\x07"  # priority
        + b"\x02\x00\x00\x00hi"  # body
        + qm.bytes_le
    )
    assert buf.encode() == wire
    assert CACTransferBufferV1.decode(wire) == buf


def test_flat_encoding_create_cursor_vector() -> None:
    buf = CACTransferBufferV1(TransferType.CACTB_CREATECURSOR, create_cursor=CreateCursorArm(1, 2, 3))
    wire = struct.pack("<IQIII", 2, 0, 1, 2, 3) + bytes(52)
    assert buf.encode() == wire
    assert CACTransferBufferV1.decode(wire) == buf


@pytest.mark.parametrize(
    "data",
    [
        b"",
        struct.pack("<IQ", 3, 0) + bytes(52),  # uTransferType 3
        struct.pack("<IQ", 0, 1 << 42) + bytes(52),  # a presence bit the Send arm does not have
        struct.pack("<IQ", 2, 1 << 40) + bytes(64),
        struct.pack("<IQ", 0, 0) + bytes(51),  # truncated scalars
        struct.pack("<IQ", 0, 0) + bytes(53),  # trailing byte
        struct.pack("<IQ", 0, 1 << 5) + bytes(52) + b"\x08",  # priority 8
        struct.pack("<IQ", 0, 1 << 10) + bytes(52) + b"\xff\xff\xff\xff",  # body length beyond input
        struct.pack("<IQ", 1, 0) + struct.pack("<IIII", 0, 1, 0, 0) + bytes(16 + 52),  # Action 1
        struct.pack("<IQ", 1, 0) + bytes(16) + struct.pack("<I", 1025) + bytes(12 + 52),  # name len 1025
    ],
)
def test_flat_encoding_malformed(data: bytes) -> None:
    with pytest.raises(WireError):
        CACTransferBufferV1.decode(data)


# ---------------------------------------------------------------- Hypothesis

_u32 = st.integers(0, 2**32 - 1)
_text = st.text(max_size=12)


def _opt(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | s


@st.composite
def _names(draw: st.DrawFn, stem: str) -> dict[str, Any]:
    cap = draw(st.integers(0, 1024))
    name = draw(_opt(st.text(max_size=min(cap, 12))))
    return {
        f"{stem}_format_name_len": cap,
        f"{stem}_format_name": name,
        f"{stem}_format_name_len_prop": draw(_opt(_u32)),
    }


@st.composite
def receive_arms(draw: st.DrawFn) -> ReceiveArm:
    kw: dict[str, Any] = {
        "request_timeout": draw(_u32),
        "action": draw(st.sampled_from(ReceiveAction)),
        "asynchronous": draw(_u32),
        "cursor": draw(_u32),
    }
    for stem in ("response", "admin", "dest", "ordering"):
        kw.update(draw(_names(stem)))
    return ReceiveArm(**kw)


@st.composite
def records(draw: st.DrawFn) -> CACTransferBufferV1:
    tt = draw(st.sampled_from(TransferType))
    kw: dict[str, Any] = {"transfer_type": tt}
    if tt is TransferType.CACTB_SEND:
        kw["send"] = SendArm(draw(_opt(_text)), draw(_opt(_text)))
    elif tt is TransferType.CACTB_RECEIVE:
        kw["receive"] = draw(receive_arms())
    else:
        kw["create_cursor"] = CreateCursorArm(draw(_u32), draw(_u32), draw(_u32))
    alloc = draw(st.integers(0, 64))
    kw["alloc_body_buffer_in_bytes"] = alloc
    kw["body_buffer_size_in_bytes"] = draw(st.integers(0, alloc))
    kw["body"] = draw(_opt(st.binary(max_size=alloc)))
    kw["body_size"] = draw(_opt(st.integers(0, alloc)))
    kw["title"] = draw(_opt(st.text(max_size=20)))
    kw["title_buffer_size_in_wchars"] = draw(st.integers(0, 250))
    kw["msg_class"] = draw(_opt(st.integers(0, 0xFFFF)))
    kw["message_id"] = draw(_opt(st.binary(min_size=20, max_size=20)))
    kw["correlation_id"] = draw(_opt(st.binary(min_size=20, max_size=20)))
    for name in (
        "sent_time",
        "arrived_time",
        "application_tag",
        "p_title_buffer_size_in_wchars",
        "relative_time_to_queue",
        "p_relative_time_to_live",
        "sender_id_len_prop",
        "sender_cert_len_prop",
        "auth_prov_name_len_prop",
        "prov_type",
        "symm_keys_size_prop",
        "signature_size_prop",
        "msg_extension_size",
        "body_type",
        "version",
    ):
        kw[name] = draw(_opt(_u32))
    for name in ("absolute_time_to_queue", "relative_time_to_live", "auth_level"):
        kw[name] = draw(_u32)
    kw["priority"] = draw(_opt(st.integers(0, 7)))
    kw["delivery"] = draw(_opt(st.integers(0, 1)))
    kw["trace"] = draw(_opt(st.integers(0, 1)))
    kw["auditing"] = draw(_opt(st.integers(0, 3)))
    kw["acknowledge"] = draw(_opt(st.sampled_from([0, 1, 2, 4, 5, 8, 0xC, 0xE])))
    kw["p_authenticated"] = draw(_opt(st.sampled_from([0, 1, 3, 5, 9])))
    kw["hash_alg"] = draw(_opt(st.sampled_from([0x8001, 0x8002, 0x8003, 0x8004, 0x800C, 0x800E])))
    kw["encrypt_alg"] = draw(_opt(st.sampled_from([0x6602, 0x6801])))
    kw["priv_level"] = draw(_opt(st.sampled_from([0, 1, 2, 3, 5])))
    kw["sender_id_type"] = draw(_opt(st.integers(1, 2)))
    kw["default_provider"] = draw(st.integers(-(2**31), 2**31 - 1))
    kw["encrypted"] = draw(st.integers(0, 255))
    kw["authenticated"] = draw(st.integers(0, 255))
    for buf, cap, hi in (
        ("sender_id", "sender_id_len", 0xFFFF),
        ("sender_cert", "sender_cert_len", 2**32 - 1),
        ("symm_keys", "symm_keys_size", 2**32 - 1),
        ("signature", "signature_size", 2**32 - 1),
        ("msg_extension", "msg_extension_buffer_in_bytes", 2**32 - 1),
    ):
        data = draw(_opt(st.binary(max_size=16)))
        kw[buf] = data
        kw[cap] = draw(st.integers(0 if data is None else len(data), hi))
    name = draw(_opt(st.text(max_size=8)))
    kw["prov_name"] = name
    kw["prov_name_len"] = draw(st.integers(0 if name is None else len(name), 2**32 - 1))
    kw["src_qm_id"] = draw(_opt(st.uuids()))
    kw["connector_type"] = draw(_opt(st.uuids()))
    kw["uow"] = draw(_opt(st.binary(min_size=16, max_size=16)))
    return CACTransferBufferV1(**kw)


@given(records())
def test_record_round_trip(buf: CACTransferBufferV1) -> None:
    data = buf.encode()
    back = CACTransferBufferV1.decode(data)
    assert back == buf
    assert back.encode() == data


@given(records(), st.data())
def test_record_truncations_and_trailing(buf: CACTransferBufferV1, data: st.DataObject) -> None:
    wire = buf.encode()
    cut = data.draw(st.integers(0, len(wire) - 1))
    with pytest.raises(WireError):
        CACTransferBufferV1.decode(wire[:cut])
    with pytest.raises(WireError):
        CACTransferBufferV1.decode(wire + data.draw(st.binary(min_size=1, max_size=8)))


@given(st.binary(max_size=300))
def test_arbitrary_bytes(data: bytes) -> None:
    try:
        buf = CACTransferBufferV1.decode(data)
    except WireError:
        return
    assert buf.encode() == data


@given(st.sampled_from([0, 1, 2]), st.integers(0, 2**64 - 1), st.binary(max_size=300))
def test_arbitrary_bodies_after_a_valid_head(tt: int, presence: int, tail: bytes) -> None:
    data = struct.pack("<IQ", tt, presence) + tail
    try:
        buf = CACTransferBufferV1.decode(data)
    except WireError:
        return
    assert buf.encode() == data


@given(st.integers(0, 0xFFFF))
def test_class_word_fields_recompose(word: int) -> None:
    cw = decode_class(word)
    assert (cw.s << 15 | cw.r << 14 | cw.h << 13 | cw.reserved << 9 | cw.class_code) == word
