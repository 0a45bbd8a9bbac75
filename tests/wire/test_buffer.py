"""The bounds-checked Reader/Writer: every read past the end is a WireError, never another exception."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer, pad4


def test_reads_are_little_endian() -> None:
    r = Reader(bytes.fromhex("01 0203 04050607 08090a0b0c0d0e0f"))
    assert r.u8() == 0x01
    assert r.u16() == 0x0302
    assert r.u32() == 0x07060504
    assert r.u64() == 0x0F0E0D0C0B0A0908
    assert r.remaining == 0


def test_guid_uses_ms_dtyp_packet_layout() -> None:
    # [MS-MQQB] 4.1 frame 1 bytes; the digest's D0.3 gives the correct rendering.
    data = bytes.fromhex("D1587355509195954997B6E611EA26C6")
    assert str(Reader(data).guid()) == "557358d1-9150-9595-4997-b6e611ea26c6"
    w = Writer()
    w.guid(uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6"))
    assert w.getvalue() == data


@pytest.mark.parametrize("method", ["u8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64", "guid"])
def test_truncated_reads_raise_wire_error_with_offset(method: str) -> None:
    r = Reader(b"\x00", pos=1)
    with pytest.raises(WireError) as info:
        getattr(r, method)()
    assert info.value.offset == 1
    assert info.value.hresult == 0xC00E0006


def test_huge_length_is_refused_before_allocation() -> None:
    r = Reader(b"\x00" * 8)
    with pytest.raises(WireError, match="need 2147483648 bytes"):
        r.raw(0x80000000)
    with pytest.raises(WireError):
        r.utf16(0x8000021B)
    with pytest.raises(WireError):
        r.raw(-1)


def test_utf16z_finds_aligned_terminator() -> None:
    # "A\u0100" encodes as 41 00 00 01: the 00 00 at odd offset 1 is not a terminator.
    data = "A\u0100".encode("utf-16-le") + b"\x00\x00" + b"zz"
    r = Reader(data)
    assert r.utf16z() == "A\u0100"
    assert r.raw(2) == b"zz"
    with pytest.raises(WireError, match="unterminated"):
        Reader(b"A\x00B\x00").utf16z()


def test_sub_reader_is_bounded() -> None:
    r = Reader(b"abcdef")
    sub = r.sub(2)
    assert sub.raw(2) == b"ab"
    with pytest.raises(WireError):
        sub.u8()
    assert r.raw(4) == b"cdef"


def test_align4_and_pad_to4_keep_padding_bytes() -> None:
    r = Reader(b"\x01\x64\x00\x00X")
    r.u8()
    assert r.align4() == b"\x64\x00\x00"
    w = Writer()
    w.u8(1)
    w.pad_to4(fill=b"\x64\x00\x00")
    assert w.getvalue() == b"\x01\x64\x00\x00"
    assert [pad4(n) for n in range(6)] == [0, 3, 2, 1, 0, 3]


@pytest.mark.parametrize(("method", "value"), [("u8", 256), ("u8", -1), ("u16", 65536), ("u32", -1)])
def test_writer_rejects_out_of_range(method: str, value: int) -> None:
    with pytest.raises(WireError):
        getattr(Writer(), method)(value)


@given(st.lists(st.tuples(st.sampled_from(["u8", "u16", "u32", "u64"]), st.integers(0, 2**64 - 1))))
def test_writer_reader_round_trip(ops: list[tuple[str, int]]) -> None:
    limits = {"u8": 0xFF, "u16": 0xFFFF, "u32": 0xFFFFFFFF, "u64": 2**64 - 1}
    ops = [(m, v & limits[m]) for m, v in ops]
    w = Writer()
    for method, value in ops:
        getattr(w, method)(value)
    r = Reader(w.getvalue())
    assert [getattr(r, method)() for method, _ in ops] == [v for _, v in ops]
    assert r.remaining == 0


@given(st.binary(max_size=64), st.integers(0, 80))
def test_any_read_gives_value_or_wire_error(data: bytes, n: int) -> None:
    r = Reader(data)
    for method in ("u8", "u16", "u32", "guid", "utf16z"):
        try:
            getattr(r, method)()
        except WireError:
            pass
    try:
        r.raw(n)
    except WireError:
        pass
