"""[MS-MQRR] 2.2.5 headers: the real queuejumper packets, hand-built bytes, round trips, fuzzing."""

from __future__ import annotations

import ipaddress
import struct
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire.mqrr_headers import (
    AddressType,
    CompoundMessageHeader,
    DeadLetterHeader,
    ExtendedAddressHeader,
    ExtensionHeader,
    ExtensionHeaderFlags,
    SRMPEnvelopeHeader,
    SubqueueHeader,
)

Load = Callable[[str], bytes]

# The SRMP envelope header follows the MessagePropertiesHeader, which ends at offset 228 (label
# "poc" at 220..227); its DataLength field is at 232 (the byte the malformed variants patch is 235).
SRMP_START = 228
VECTOR_DIR = Path(__file__).parents[1] / "vectors"

VECTORS = [
    # file, padding after the envelope, HTTPBodySize
    ("queuejumper-msf-usermessage-srmp.bin", b"\x64\x00", 1060),
    ("queuejumper-nse-usermessage-srmp.bin", b"", 1036),
]


@pytest.mark.parametrize(("name", "pad", "http_size"), VECTORS)
def test_queuejumper_srmp_headers(vector: Load, name: str, pad: bytes, http_size: int) -> None:
    data = vector(name)
    r = Reader(data, SRMP_START)

    env = SRMPEnvelopeHeader.read(r)
    assert env.header_id == 0 and env.reserved == 0
    assert env.data_length == 539
    assert env.data.endswith("\x00") and not env.envelope.endswith("\x00")
    assert env.envelope.startswith("<se:Envelope")
    assert env.envelope.endswith("</se:Envelope>\r\n\r\n")
    assert env.padding == pad
    assert r.pos == SRMP_START + 8 + 2 * 539 + 2 == 1316  # 1086 bytes + 2 bytes of padding

    compound = CompoundMessageHeader.read(r)
    assert compound.header_id == 500 and compound.reserved == 0
    assert compound.http_body_size == http_size
    assert compound.msg_body_size == 7 and compound.msg_body_offset == 995
    assert compound.message_body == b"Message"
    assert compound.data.startswith(b"POST ")
    assert compound.padding == b""
    assert r.pos == 1316 + 16 + http_size == len(data) - 12

    ext = ExtensionHeader.read(r)
    assert (ext.header_size, ext.remaining_headers_size, ext.flags, ext.reserved) == (
        12,
        0,
        0,
        b"\x00\x00\x00",
    )
    assert not (ext.has_subqueue_header or ext.has_dead_letter_header or ext.has_extended_address_header)
    assert not ext.dead_letter_queue_invalid
    assert r.remaining == 0

    # Byte exact, padding `64 00` included.
    assert env.encode() + compound.encode() + ext.encode() == data[SRMP_START:]
    assert SRMPEnvelopeHeader.decode(data[SRMP_START:1316]) == env
    assert CompoundMessageHeader.decode(data[1316 : len(data) - 12]) == compound
    assert ExtensionHeader.decode(data[-12:]) == ext


@pytest.mark.parametrize(
    "name",
    [
        "queuejumper-msf-usermessage-srmp-malformed-datalength.bin",
        "queuejumper-nse-usermessage-srmp-malformed-datalength.bin",
    ],
)
def test_malformed_datalength_is_rejected_without_allocating(vector: Load, name: str) -> None:
    data = vector(name)
    assert struct.unpack_from("<I", data, 232)[0] == 0x8000021B
    tracemalloc.start()
    try:
        with pytest.raises(WireError, match=r"SRMPEnvelopeHeader\.Data") as info:
            SRMPEnvelopeHeader.read(Reader(data, SRMP_START))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.offset == 236
    assert peak < 1 << 20  # nothing near 4 GiB (2 * DataLength) was allocated


# ---------------------------------------------------------------------------------------------
# hand-built bytes from the [MS-MQRR] diagrams


def test_srmp_envelope_header_bytes() -> None:
    # HeaderId 7, Reserved 0xBEEF, DataLength 3 WCHARs ("ab" + NUL), then 2 bytes of padding.
    raw = bytes.fromhex("0700 efbe 03000000 6100 6200 0000 0000")
    env = SRMPEnvelopeHeader.decode(raw)
    assert (env.header_id, env.reserved, env.data, env.envelope, env.data_length) == (
        7,
        0xBEEF,
        "ab\x00",
        "ab",
        3,
    )
    assert env.padding == b""
    assert env.encode() == raw
    assert SRMPEnvelopeHeader("ab\x00", 7, 0xBEEF).encode() == raw


def test_compound_message_header_bytes_and_body_bounds() -> None:
    raw = bytes.fromhex("f401 0000 05000000 02000000 03000000") + b"POSTx" + b"\xaa\x00\x00"
    compound = CompoundMessageHeader.decode(raw)
    assert compound.http_body_size == 5 and compound.message_body == b"Tx"
    assert compound.padding == b"\xaa\x00\x00"
    assert compound.encode() == raw
    bad = bytearray(raw)
    bad[12] = 4  # MsgBodyOffset 4 + MsgBodySize 2 > HTTPBodySize 5
    with pytest.raises(WireError, match="runs past"):
        CompoundMessageHeader.decode(bytes(bad))
    with pytest.raises(WireError):
        CompoundMessageHeader(b"abc", msg_body_size=2, msg_body_offset=2).encode()
    # An empty body has no meaningful offset.
    assert CompoundMessageHeader(b"abc", 0, 99).message_body == b""


def test_extension_chain_subqueue_dead_letter_extended_address() -> None:
    subqueue = (
        struct.pack("<IIIII", 148, 0x8002 << 1 | 1 | 0x1234 << 17, 3, 2, 1000)
        + "poison".encode("utf-16-le").ljust(64, b"\x00")
        + bytes(64)
    )
    # DeadLetterHeader: HeaderSize 4 + 2*(5+1) = 16, already 4-aligned.
    dead_letter = struct.pack("<I", 16) + "a\\b$c\x00".encode("utf-16-le")
    address = struct.pack("<IHHI", 28, 4, 1, 0) + bytes([10, 0, 0, 1]) + bytes(12)
    flags = (
        ExtensionHeaderFlags.DL | ExtensionHeaderFlags.SQ | ExtensionHeaderFlags.DI | ExtensionHeaderFlags.EA
    )
    extension = struct.pack("<IIB", 12, 148 + 16 + 28, flags) + b"\x01\x02\x03"
    data = extension + subqueue + dead_letter + address

    r = Reader(data)
    ext = ExtensionHeader.read(r)
    assert ext.flags == 0x1B and ext.reserved == b"\x01\x02\x03"
    assert ext.has_subqueue_header and ext.has_dead_letter_header and ext.has_extended_address_header
    assert ext.dead_letter_queue_invalid
    sq = SubqueueHeader.read(r)
    assert (sq.tm, sq.acknowledgement_class, sq.reserved) == (1, 0x8002, 0x1234)
    assert (sq.abort_counter, sq.move_counter, sq.last_move_time) == (3, 2, 1000)
    assert sq.subqueue_name == sq.subqueue == "poison" and sq.target_subqueue_name == ""
    dl = DeadLetterHeader.read(r)
    assert dl.dead_letter_path_name == "a\\b$c" and dl.header_size == 16 and dl.padding == b""
    ea = ExtendedAddressHeader.read(r)
    assert (ea.header_size, ea.address_length, ea.address_type, ea.address_scope) == (
        28,
        4,
        AddressType.IP_ADDRESS_TYPE,
        0,
    )
    assert ea.ip_address == ipaddress.IPv4Address("10.0.0.1")
    assert r.remaining == 0
    assert ext.remaining_headers_size == len(data) - 12

    w = Writer()
    for header in (ext, sq, dl, ea):
        header.write(w)
    assert w.getvalue() == data
    assert ExtendedAddressHeader.from_ip(ipaddress.IPv4Address("10.0.0.1")).encode() == address


def test_dead_letter_header_padding_and_rules() -> None:
    # "ab" + NUL = 6 bytes; 4 + 6 = 10 -> HeaderSize 12 with 2 bytes of padding.
    raw = struct.pack("<I", 12) + "ab\x00".encode("utf-16-le") + b"\x00\x00"
    assert DeadLetterHeader.decode(raw) == DeadLetterHeader("ab")
    assert DeadLetterHeader("ab").encode() == raw
    odd = struct.pack("<I", 10) + "ab\x00".encode("utf-16-le")
    with pytest.raises(WireError, match="multiple of 4"):
        DeadLetterHeader.decode(odd)
    unterminated = struct.pack("<I", 12) + "abcd".encode("utf-16-le")
    with pytest.raises(WireError, match="unterminated"):
        DeadLetterHeader.decode(unterminated)
    too_long = struct.pack("<I", 16) + "ab\x00".encode("utf-16-le") + bytes(6)
    with pytest.raises(WireError, match="padding"):
        DeadLetterHeader.decode(too_long)
    with pytest.raises(WireError):
        DeadLetterHeader("a\x00b").encode()


def test_ipv6_and_unknown_address_types() -> None:
    ip = ipaddress.IPv6Address("fe80::1")
    ea = ExtendedAddressHeader.from_ip(ip, scope=7)
    raw = ea.encode()
    assert raw[:12] == struct.pack("<IHHI", 28, 16, 6, 7)
    assert ExtendedAddressHeader.decode(raw).ip_address == ip
    unknown = ExtendedAddressHeader.decode(struct.pack("<IHHI", 28, 4, 9, 0) + bytes(16))
    assert unknown.address_type == 9 and unknown.ip_address is None
    assert ExtendedAddressHeader().ip_address is None


@pytest.mark.parametrize(
    ("cls", "raw", "message"),
    [
        (ExtensionHeader, struct.pack("<IIB3s", 16, 0, 0, b""), "MUST be 12"),
        (SubqueueHeader, struct.pack("<I", 144) + bytes(144), "MUST be 148"),
        (ExtendedAddressHeader, struct.pack("<I", 24) + bytes(24), "MUST be 28"),
        (SRMPEnvelopeHeader, bytes.fromhex("0000 0000 02000000 6100"), "truncated"),
        (CompoundMessageHeader, bytes.fromhex("f401 0000 ffffffff 00000000 00000000"), "truncated"),
        (SubqueueHeader, bytes(147), "truncated"),
    ],
)
def test_must_rules(cls: Any, raw: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        cls.decode(raw)


def test_encoder_range_checks() -> None:
    with pytest.raises(WireError):
        SubqueueHeader(subqueue_name="x" * 33).encode()
    with pytest.raises(WireError):
        SubqueueHeader(acknowledgement_class=0x10000).encode()
    with pytest.raises(WireError):
        ExtensionHeader(flags=0x100).encode()
    with pytest.raises(WireError):
        ExtensionHeader(reserved=b"\x00").encode()
    with pytest.raises(WireError):
        ExtendedAddressHeader(address=bytes(4)).encode()
    with pytest.raises(WireError):
        SRMPEnvelopeHeader("a", header_id=0x10000).encode()
    with pytest.raises(WireError):
        SRMPEnvelopeHeader("a", padding=b"\x01\x02\x03").encode()  # 8 + 2 = 10 bytes: 2 of padding


def test_trailing_bytes_rejected_by_decode_but_not_read() -> None:
    raw = ExtensionHeader().encode()
    with pytest.raises(WireError, match="trailing"):
        ExtensionHeader.decode(raw + b"\x00")
    r = Reader(raw + b"\x00")
    ExtensionHeader.read(r)
    assert r.remaining == 1


# ---------------------------------------------------------------------------------------------
# Hypothesis

u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
nonzero_pad = st.binary(min_size=1, max_size=3).filter(lambda b: b.strip(b"\x00") != b"")


def _name(max_bytes: int) -> st.SearchStrategy[str]:
    return text.filter(lambda s: not s.endswith("\x00") and len(s.encode("utf-16-le")) <= max_bytes)


@st.composite
def srmp_envelopes(draw: st.DrawFn) -> SRMPEnvelopeHeader:
    data = draw(text)
    units = len(data.encode("utf-16-le")) // 2
    pad_len = -(8 + 2 * units) & 3
    padding = (
        draw(nonzero_pad.filter(lambda b: len(b) == pad_len)) if pad_len and draw(st.booleans()) else b""
    )
    return SRMPEnvelopeHeader(data, draw(u16), draw(u16), padding)


@st.composite
def compounds(draw: st.DrawFn) -> CompoundMessageHeader:
    data = draw(st.binary(max_size=60))
    offset = draw(st.integers(0, len(data)))
    size = draw(st.integers(0, len(data) - offset))
    pad_len = -len(data) & 3
    padding = draw(st.binary(min_size=pad_len, max_size=pad_len)) if pad_len else b""
    padding = padding if padding.strip(b"\x00") else b""
    return CompoundMessageHeader(data, size, offset, draw(u16), draw(u16), padding)


extensions = st.builds(
    ExtensionHeader, u32, st.integers(0, 0xFF), st.just(12), st.binary(min_size=3, max_size=3)
)
subqueues = st.builds(
    SubqueueHeader, _name(64), _name(64), u16, u32, u32, u32, st.integers(0, 1), st.integers(0, 0x7FFF)
)


@st.composite
def dead_letters(draw: st.DrawFn) -> DeadLetterHeader:
    name = draw(text.filter(lambda s: "\x00" not in s))
    pad_len = -(4 + len(name.encode("utf-16-le")) + 2) & 3
    padding = (
        draw(nonzero_pad.filter(lambda b: len(b) == pad_len)) if pad_len and draw(st.booleans()) else b""
    )
    return DeadLetterHeader(name, padding)


extended_addresses = st.builds(ExtendedAddressHeader, u16, u16, u32, st.binary(min_size=16, max_size=16))

ALL = [
    (SRMPEnvelopeHeader, srmp_envelopes()),
    (CompoundMessageHeader, compounds()),
    (ExtensionHeader, extensions),
    (SubqueueHeader, subqueues),
    (DeadLetterHeader, dead_letters()),
    (ExtendedAddressHeader, extended_addresses),
]


@pytest.mark.parametrize(("cls", "strategy"), ALL, ids=[c.__name__ for c, _ in ALL])
@given(data=st.data())
def test_round_trip(cls: Any, strategy: st.SearchStrategy[Any], data: st.DataObject) -> None:
    value = data.draw(strategy)
    raw = value.encode()
    assert len(raw) % 4 == 0
    assert cls.decode(raw) == value
    assert cls.decode(raw).encode() == raw
    # read() inside a bigger buffer consumes exactly the header and its padding.
    r = Reader(b"\xee" * 4 + raw + b"\xff" * 5, 4)
    assert cls.read(r) == value and r.pos == 4 + len(raw)


@pytest.mark.parametrize("cls", [c for c, _ in ALL], ids=[c.__name__ for c, _ in ALL])
@given(raw=st.binary(max_size=300))
def test_arbitrary_bytes_give_value_or_wire_error(cls: Any, raw: bytes) -> None:
    try:
        value = cls.decode(raw)
    except WireError:
        return
    assert isinstance(value, cls)
    # Whatever decodes re-encodes byte for byte; padding cut off at the end of the input comes back
    # as zeros.
    encoded = value.encode()
    assert encoded[: len(raw)] == raw and len(encoded) - len(raw) < 4


@pytest.mark.parametrize(("cls", "strategy"), ALL, ids=[c.__name__ for c, _ in ALL])
@given(data=st.data())
def test_truncation_and_garbage(cls: Any, strategy: st.SearchStrategy[Any], data: st.DataObject) -> None:
    raw = data.draw(strategy).encode()
    cut = data.draw(st.integers(0, len(raw) - 1))
    try:
        cls.decode(raw[:cut])
    except WireError:
        pass
    with pytest.raises(WireError):
        cls.decode(raw + data.draw(st.binary(min_size=1, max_size=8)))


@pytest.mark.parametrize("name", [v[0] for v in VECTORS])
@given(data=st.data())
def test_mutated_vector_tail(name: str, data: st.DataObject) -> None:
    raw = bytearray((VECTOR_DIR / name).read_bytes()[SRMP_START:])
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    r = Reader(bytes(raw))
    try:
        for cls in (SRMPEnvelopeHeader, CompoundMessageHeader, ExtensionHeader):
            cls.read(r)
    except WireError:
        pass
