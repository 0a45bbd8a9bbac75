"""Client-protocol frame header and field encodings (docs/protocol.md, "Frames", "Field types")."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.hresult import HResult
from pymsmq.protocol import (
    FRAME_HEADER_SIZE,
    MAX_PAYLOAD,
    FrameHeader,
    FrameType,
    Op,
    XactKind,
    check_packet,
    encode_frame,
    goodbye_frame,
)
from pymsmq.protocol import _fields as f
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.user_message import UserMessage
from pymsmq.wire.vartype import VarType

# ------------------------------------------------------------------ frame header vectors (docs table)

# A REQUEST of op SEND (0x0020), request id 7, 0x1C payload bytes.
REQUEST_HEADER = bytes.fromhex("4d51 01 03 2000 0000 07000000 1c000000".replace(" ", ""))
# A CLIENT_HELLO with 0x0A payload bytes: op and request id are 0.
HELLO_HEADER = bytes.fromhex("4d51 01 01 0000 0000 00000000 0a000000".replace(" ", ""))
# An ERROR answer to request 0xDEADBEEF of op RECEIVE (0x0021), 4 MiB + 64 KiB payload (the maximum).
ERROR_HEADER = bytes.fromhex("4d51 01 05 2100 0000 efbeadde 00004100".replace(" ", ""))


def test_header_size_and_layout() -> None:
    assert FRAME_HEADER_SIZE == 16
    assert MAX_PAYLOAD == 0x00400000 + 0x10000 == 0x00410000


@pytest.mark.parametrize(
    ("data", "header"),
    [
        (REQUEST_HEADER, FrameHeader(FrameType.REQUEST, 0x1C, Op.SEND, 7)),
        (HELLO_HEADER, FrameHeader(FrameType.CLIENT_HELLO, 10)),
        (ERROR_HEADER, FrameHeader(FrameType.ERROR, MAX_PAYLOAD, Op.RECEIVE, 0xDEADBEEF)),
    ],
)
def test_header_vectors_both_ways(data: bytes, header: FrameHeader) -> None:
    assert len(data) == 16
    assert FrameHeader.decode(data) == header
    assert header.encode() == data
    w = Writer()
    header.write(w)
    assert w.getvalue() == data


def test_decoded_frame_type_is_the_enum() -> None:
    assert FrameHeader.decode(REQUEST_HEADER).frame_type is FrameType.REQUEST
    assert FrameHeader(6).frame_type is FrameType.GOODBYE  # type: ignore[arg-type]


def _patch(data: bytes, offset: int, fmt: str, value: int | bytes) -> bytes:
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (_patch(REQUEST_HEADER, 0, "2s", b"MX"), "magic"),
        (_patch(REQUEST_HEADER, 0, "2s", b"\x10\x00"), "magic"),  # a port-1801 MSMQ packet
        (_patch(REQUEST_HEADER, 2, "<B", 2), "version"),
        (_patch(REQUEST_HEADER, 3, "<B", 0), "frame type"),
        (_patch(REQUEST_HEADER, 3, "<B", 7), "frame type"),
        (_patch(REQUEST_HEADER, 6, "<H", 1), "flags"),
        (_patch(REQUEST_HEADER, 4, "<H", 0), "op"),
        (_patch(REQUEST_HEADER, 8, "<I", 0), "request id"),
        (_patch(HELLO_HEADER, 4, "<H", 1), "op 0"),
        (_patch(HELLO_HEADER, 8, "<I", 1), "op 0"),
        (_patch(REQUEST_HEADER, 12, "<I", MAX_PAYLOAD + 1), "length"),
        (_patch(REQUEST_HEADER, 12, "<I", 0xFFFFFFFF), "length"),
    ],
)
def test_header_rejects(data: bytes, why: str) -> None:
    with pytest.raises(WireError, match=why):
        FrameHeader.decode(data)


def test_header_truncated_and_trailing() -> None:
    for n in range(16):
        with pytest.raises(WireError):
            FrameHeader.decode(REQUEST_HEADER[:n])
    with pytest.raises(WireError, match="trailing"):
        FrameHeader.decode(REQUEST_HEADER + b"\x00")


def test_encode_frame_and_goodbye_frame() -> None:
    assert encode_frame(FrameType.REQUEST, bytes(0x1C), Op.SEND, 7) == REQUEST_HEADER + bytes(0x1C)
    # GOODBYE(hresult=MQ_ERROR_ACCESS_DENIED, reason "no"): u32 hresult, STR (u16 units + UTF-16LE).
    payload = bytes.fromhex("2500 0ec0 0200 6e00 6f00".replace(" ", ""))
    assert goodbye_frame(HResult.MQ_ERROR_ACCESS_DENIED, "no") == (
        bytes.fromhex("4d51 01 06 0000 0000 00000000 0a000000".replace(" ", "")) + payload
    )
    with pytest.raises(WireError):
        encode_frame(FrameType.REQUEST, b"", 0, 7)


headers = st.builds(
    lambda kind, length, op, rid: FrameHeader(
        kind,
        length,
        op if kind in (FrameType.REQUEST, FrameType.RESPONSE, FrameType.ERROR) else 0,
        rid if kind in (FrameType.REQUEST, FrameType.RESPONSE, FrameType.ERROR) else 0,
    ),
    st.sampled_from(FrameType),
    st.integers(0, MAX_PAYLOAD),
    st.integers(1, 0xFFFF),
    st.integers(1, 0xFFFFFFFF),
)


@given(headers)
def test_header_round_trip(header: FrameHeader) -> None:
    data = header.encode()
    assert len(data) == 16
    assert FrameHeader.decode(data) == header


@given(st.binary(max_size=40))
def test_header_decode_any_bytes(data: bytes) -> None:
    try:
        header = FrameHeader.decode(data)
    except WireError:
        return
    assert header.encode() == data


# ------------------------------------------------------------------ field encodings


def _enc(codec: f.Codec, value: object) -> bytes:
    w = Writer()
    codec.write(w, value)
    return w.getvalue()


def _dec(codec: f.Codec, data: bytes) -> object:
    r = Reader(data)
    value = codec.read(r)
    assert r.remaining == 0
    return value


GUID_TEXT = "00112233-4455-6677-8899-aabbccddeeff"
GUID_LE = bytes.fromhex("33221100 5544 7766 8899aabbccddeeff".replace(" ", ""))


@pytest.mark.parametrize(
    ("codec", "value", "data"),
    [
        (f.U8, 0xAB, b"\xab"),
        (f.U16, 0x1234, b"\x34\x12"),
        (f.U32, 0x12345678, b"\x78\x56\x34\x12"),
        (f.U64, 0x0102030405060708, bytes.fromhex("0807060504030201")),
        (f.GUID, uuid.UUID(GUID_TEXT), GUID_LE),
        (f.STR, "", b"\x00\x00"),
        (f.STR, "ab", b"\x02\x00a\x00b\x00"),
        (f.STR, "\U0001f600", b"\x02\x00\x3d\xd8\x00\xde"),  # one astral char = two code units
        (f.BYTES, b"", b"\x00\x00\x00\x00"),
        (f.BYTES, b"xyz", b"\x03\x00\x00\x00xyz"),
        (f.PROPS, (), b"\x00\x00\x00\x00"),
        # PROPID_Q_LABEL (108) VT_LPWSTR "q": count 1, PROPID, VARTYPE 0x001F, "q\0" in UTF-16LE.
        (
            f.PROPS,
            ((108, PropVariant(VarType.VT_LPWSTR, "q")),),
            bytes.fromhex("01000000 6c000000 1f00 7100 0000"),
        ),
        (f.PROPS_LIST, ((), ()), bytes.fromhex("02000000 00000000 00000000")),
        (f.PROPIDS, (), b"\x00\x00\x00\x00"),
        (f.PROPIDS, (60, 32), bytes.fromhex("02000000 3c000000 20000000")),
        (f.U16S, (1, 2), bytes.fromhex("0200 0100 0200")),
        (f.STRS, ("a", ""), bytes.fromhex("02000000 0100 6100 0000")),
        (f.XACT, None, b"\x00"),
        (f.XACT, 3, b"\x01\x03"),
        (f.XACT, uuid.UUID(GUID_TEXT), b"\x02" + GUID_LE),
        (f.OPT_PACKET, None, b"\x00\x00\x00\x00"),
    ],
)
def test_field_vectors_both_ways(codec: f.Codec, value: object, data: bytes) -> None:
    codec.check(value, "x")
    assert _enc(codec, value) == data
    assert _dec(codec, data) == value


def test_xact_kinds() -> None:
    assert (XactKind.NONE, XactKind.CONSTANT, XactKind.INTERNAL) == (0, 1, 2)
    with pytest.raises(WireError, match="XACT kind 3"):
        _dec(f.XACT, b"\x03")


@pytest.mark.parametrize(
    ("codec", "value"),
    [
        (f.U8, 256),
        (f.U8, -1),
        (f.U32, True),
        (f.U32, 1 << 32),
        (f.U64, "1"),
        (f.GUID, GUID_TEXT),
        (f.STR, b"x"),
        (f.STR, "x" * 0x10000),
        (f.BYTES, bytearray(b"x")),
        (f.PACKET, b"x" * 16),
        (f.OPT_PACKET, b""),
        (f.PROPS, [(1, PropVariant(VarType.VT_UI4, 1))]),
        (f.PROPS, ((1, 1),)),
        (f.PROPS, ((1 << 32, PropVariant(VarType.VT_UI4, 1)),)),
        (f.PROPS, tuple((i, PropVariant(VarType.VT_UI4, 1)) for i in range(129))),
        (f.PROPIDS, (1, -1)),
        (f.PROPIDS, tuple(range(129))),
        (f.U16S, tuple(range(65))),
        (f.STRS, ("a", 1)),
        (f.XACT, 256),
        (f.XACT, False),
        (f.PROPS_LIST, [()]),
    ],
)
def test_field_checks_reject(codec: f.Codec, value: object) -> None:
    with pytest.raises(WireError):
        codec.check(value, "field")


def _packet(**kw: object) -> bytes:
    return UserMessage.build(destination="DIRECT=TCP:10.0.0.1\\private$\\q", body=b"b" * 5, **kw).encode()  # type: ignore[arg-type]


def test_packet_field_checks_the_base_header(vector: object) -> None:
    pkt = _packet(label="l")
    check_packet(pkt)
    assert _dec(f.PACKET, _enc(f.PACKET, pkt)) == pkt
    real = vector("queuejumper-msf-usermessage-srmp.bin")  # type: ignore[operator]
    check_packet(real)
    bad = [
        pkt[:15],
        b"\x11" + pkt[1:],  # VersionNumber
        pkt[:4] + b"XXXX" + pkt[8:],  # Signature
        pkt[:2] + struct.pack("<H", 0x0008) + pkt[4:],  # Flags.IN: an internal packet
        pkt[:-4],  # shorter than PacketSize
        pkt + b"\x00" * 4,  # longer than PacketSize
        pkt[:8] + struct.pack("<I", 0x00400004) + pkt[12:],  # PacketSize over the limit
    ]
    for data in bad:
        with pytest.raises(WireError):
            check_packet(data)
        with pytest.raises(WireError):
            _dec(f.PACKET, _enc(f.BYTES, data))


def test_counts_checked_before_allocation() -> None:
    for codec in (f.BYTES, f.STRS, f.PROPS_LIST, f.PACKET):
        with pytest.raises(WireError):
            _dec(codec, b"\xff\xff\xff\x7f")
    with pytest.raises(WireError, match="exceed"):
        _dec(f.PROPIDS, b"\x81\x00\x00\x00" + bytes(4 * 129))
    with pytest.raises(WireError, match="exceed"):
        _dec(f.U16S, b"\x41\x00" + bytes(2 * 65))


ALL_CODECS = [
    f.U8,
    f.U16,
    f.U32,
    f.U64,
    f.GUID,
    f.STR,
    f.BYTES,
    f.PACKET,
    f.OPT_PACKET,
    f.PROPS,
    f.PROPS_LIST,
    f.PROPIDS,
    f.U16S,
    f.STRS,
    f.XACT,
]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
@given(data=st.binary(max_size=80))
def test_field_read_any_bytes(codec: f.Codec, data: bytes) -> None:
    r = Reader(data)
    try:
        value = codec.read(r)
    except WireError:
        return
    codec.check(value, "decoded")
    assert _enc(codec, value) == data[: r.pos]
