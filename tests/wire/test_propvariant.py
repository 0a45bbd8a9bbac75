"""PropVariant, the PROPVALUE encoding ([MS-MQCN] 2.2.3) and the property-array codec."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.hresult import HResult
from pymsmq.wire.propvariant import (
    MAX_NESTING,
    MAX_PROPERTIES,
    PropVariant,
    decode_props,
    decode_propvalue,
    encode_props,
    encode_propvalue,
)
from pymsmq.wire.vartype import VarType as V

Q = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
Q_WIRE = bytes.fromhex("67452301ab89efcd0123456789abcdef")

# (vt, value, PROPVALUE bytes) checked against [MS-MQCN] 2.2.3.x and [MS-MQMQ] 2.2.14-2.2.16.
VECTORS = [
    (V.VT_EMPTY, None, b""),
    (V.VT_NULL, None, b""),
    (V.VT_I1, -1, b"\xff"),  # 2.2.3.4 signed 8-bit
    (V.VT_I1, 127, b"\x7f"),
    (V.VT_UI1, 0xFE, b"\xfe"),  # 2.2.3.5
    (V.VT_I2, -1, b"\xff\xff"),  # 2.2.3.1 signed LE (TV-5 BasePriority -1)
    (V.VT_I2, 0x1234, b"\x34\x12"),
    (V.VT_UI2, 0xBEEF, b"\xef\xbe"),  # 2.2.3.6
    (V.VT_I4, 1700000000, bytes.fromhex("00f15365")),  # 2.2.3.2 (TV-5 CREATE_TIME)
    (V.VT_I4, -2, b"\xfe\xff\xff\xff"),
    (V.VT_UI4, 1024, bytes.fromhex("00040000")),  # 2.2.3.7 (TV-2 QUOTA)
    (V.VT_I8, -(2**63), bytes.fromhex("0000000000000080")),  # 2.2.3.8
    (V.VT_UI8, 0x0102030405060708, bytes.fromhex("0807060504030201")),  # 2.2.3.9
    (V.VT_BOOL, True, b"\xff\xff"),  # 2.2.3.3 VARIANT_TRUE 0xFFFF
    (V.VT_BOOL, False, b"\x00\x00"),
    (V.VT_LPWSTR, "orders", "orders".encode("utf-16-le") + b"\0\0"),  # 2.2.3.10, no length prefix
    (V.VT_LPWSTR, "", b"\0\0"),
    (V.VT_LPWSTR, "\u0100A", b"\x00\x01\x41\x00\x00\x00"),  # a 0x00 byte pair straddling code units
    (V.VT_BLOB, b"\x01\x00\x04\x80", bytes.fromhex("0400000001000480")),  # 2.2.3.11 Size + bytes
    (V.VT_CLSID, Q, Q_WIRE),  # 2.2.3.12 inline GUID, bytes_le
    (V.VT_VECTOR_UI4, (1, 0xFFFFFFFF), bytes.fromhex("0200000001000000ffffffff")),  # 2.2.3.13
    (V.VT_VECTOR_CLSID, (Q,), bytes.fromhex("01000000") + Q_WIRE),  # 2.2.3.14
    (V.VT_VECTOR_LPWSTR, ("a", "bc"), bytes.fromhex("0200000061000000620063000000")),  # 2.2.3.15
    # pymsmq extensions (module docstring):
    (V.VT_VECTOR_UI1, b"\xaa\xbb", bytes.fromhex("02000000aabb")),
    (V.VT_VECTOR_UI2, (1, 0xFFFF), bytes.fromhex("020000000100ffff")),
    (V.VT_VECTOR_I4, (-1,), bytes.fromhex("01000000ffffffff")),
    (V.VT_VECTOR_UI8, (2,), bytes.fromhex("010000000200000000000000")),
    (
        V.VT_VECTOR_VARIANT,
        (PropVariant(V.VT_UI1, 7), PropVariant(V.VT_VECTOR_VARIANT, (PropVariant(V.VT_NULL),))),
        bytes.fromhex("020000001100070c10010000000100"),
    ),
]


@pytest.mark.parametrize(("vt", "value", "wire"), VECTORS)
def test_propvalue_vectors_both_ways(vt: V, value: object, wire: bytes) -> None:
    pv = PropVariant(vt, value)  # type: ignore[arg-type]
    assert encode_propvalue(pv) == wire
    assert pv.encode() == wire
    back = decode_propvalue(vt, wire)
    assert back == pv
    assert type(back.value) is type(value)
    assert PropVariant.decode(int(vt), wire) == pv


def test_every_vartype_has_a_vector() -> None:
    assert {v for v, _, _ in VECTORS} == set(V) - {V.VT_VARIANT}


def test_lpwstr_terminator_found_at_even_offset_only() -> None:
    # "\u0100A" is 00 01 41 00: bytes.find(b"\0\0") would hit offset 3; the real end is 4.
    data = b"\x00\x01\x41\x00\x00\x00"
    assert decode_propvalue(V.VT_LPWSTR, data).value == "\u0100A"


@pytest.mark.parametrize(
    "vt",
    [0x0004, 0x0008, 0x000C, 0x1002, 0x100B, 0x1014, 0x1000, 0x2011, 0xFFFF, 0x0041 | 0x1000],
)
def test_illegal_vartype(vt: int) -> None:
    with pytest.raises(WireError) as err:
        decode_propvalue(vt, b"\x00" * 16)
    assert err.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VT
    with pytest.raises(WireError) as err2:
        PropVariant(vt, None)  # type: ignore[arg-type]
    assert err2.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VT
    with pytest.raises(WireError) as err3:
        decode_props(b"\x01\x00\x00\x00" + b"\x01\x00\x00\x00" + vt.to_bytes(2, "little") + b"\x00" * 8)
    assert err3.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VT


def test_int_vartype_is_coerced_to_enum() -> None:
    pv = PropVariant(0x13, 5)  # type: ignore[arg-type]
    assert pv.vt is V.VT_UI4


@pytest.mark.parametrize(
    ("vt", "value"),
    [
        (V.VT_I1, 128),
        (V.VT_I1, -129),
        (V.VT_UI1, 256),
        (V.VT_UI1, -1),
        (V.VT_I2, 0x8000),
        (V.VT_UI2, 0x10000),
        (V.VT_I4, 2**31),
        (V.VT_UI4, -1),
        (V.VT_UI4, 2**32),
        (V.VT_I8, 2**63),
        (V.VT_UI8, 2**64),
        (V.VT_UI4, True),
        (V.VT_UI4, "1"),
        (V.VT_UI4, None),
        (V.VT_BOOL, 1),
        (V.VT_EMPTY, 0),
        (V.VT_NULL, b""),
        (V.VT_LPWSTR, "a\x00b"),
        (V.VT_LPWSTR, b"ab"),
        (V.VT_BLOB, "ab"),
        (V.VT_BLOB, bytearray(b"ab")),
        (V.VT_CLSID, Q_WIRE),
        (V.VT_VECTOR_UI1, (1, 2)),
        (V.VT_VECTOR_UI2, (0x10000,)),
        (V.VT_VECTOR_UI2, [1]),
        (V.VT_VECTOR_I4, (2**31,)),
        (V.VT_VECTOR_UI8, (-1,)),
        (V.VT_VECTOR_CLSID, (Q_WIRE,)),
        (V.VT_VECTOR_LPWSTR, ("a\x00",)),
        (V.VT_VECTOR_LPWSTR, ("a", 1)),
        (V.VT_VECTOR_VARIANT, (1,)),
        (V.VT_VECTOR_VARIANT, [PropVariant(V.VT_NULL)]),
    ],
)
def test_bad_values_rejected(vt: V, value: object) -> None:
    with pytest.raises(WireError) as err:
        PropVariant(vt, value)  # type: ignore[arg-type]
    assert err.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE


def _nest(levels: int) -> PropVariant:
    pv = PropVariant(V.VT_NULL)
    for _ in range(levels):
        pv = PropVariant(V.VT_VECTOR_VARIANT, (pv,))
    return pv


def test_nesting_limit() -> None:
    deepest = _nest(MAX_NESTING)
    assert deepest.depth() == MAX_NESTING
    assert decode_propvalue(V.VT_VECTOR_VARIANT, deepest.encode()) == deepest
    with pytest.raises(WireError):
        PropVariant(V.VT_VECTOR_VARIANT, (deepest,))
    too_deep = b"\x01\x00\x00\x00\x0c\x10" * MAX_NESTING + b"\x00\x00\x00\x00"
    assert decode_propvalue(V.VT_VECTOR_VARIANT, b"\x01\x00\x00\x00\x0c\x10" * (MAX_NESTING - 1) + b"\0" * 4)
    with pytest.raises(WireError):
        decode_propvalue(V.VT_VECTOR_VARIANT, too_deep)
    # A deep chain of 10k levels is refused without a RecursionError.
    with pytest.raises(WireError):
        decode_propvalue(V.VT_VECTOR_VARIANT, b"\x01\x00\x00\x00\x0c\x10" * 10_000)


@pytest.mark.parametrize(
    ("vt", "data"),
    [
        (V.VT_BOOL, b"\x01\x00"),  # VARIANT_BOOL MUST be 0xFFFF or 0x0000
        (V.VT_BOOL, b"\xff\x7f"),
        (V.VT_UI4, b"\x00\x00\x00"),
        (V.VT_LPWSTR, b"a\x00b\x00"),  # no terminator
        (V.VT_LPWSTR, b"a\x00\x00"),  # odd: terminator not on a code-unit boundary
        (V.VT_BLOB, b"\x05\x00\x00\x00abcd"),  # Size beyond the input
        (V.VT_BLOB, b"\xff\xff\xff\xff"),
        (V.VT_VECTOR_UI4, b"\xff\xff\xff\x3f"),  # 1G elements claimed: refused before allocating
        (V.VT_VECTOR_CLSID, b"\x02\x00\x00\x00" + Q_WIRE),
        (V.VT_VECTOR_LPWSTR, b"\xff\xff\xff\xff\x00\x00"),
        (V.VT_VECTOR_VARIANT, b"\xff\xff\xff\xff\x01\x00"),
        (V.VT_UI1, b"\x01\x02"),  # trailing byte
    ],
)
def test_malformed_propvalue(vt: V, data: bytes) -> None:
    with pytest.raises(WireError):
        decode_propvalue(vt, data)


# Property array: Count u32, then PROPID u32 + VARTYPE u16 + PROPVALUE per entry.
def test_props_vector_both_ways() -> None:
    props = [
        (105, PropVariant(V.VT_UI4, 1024)),
        (108, PropVariant(V.VT_LPWSTR, "x")),
        (101, PropVariant(V.VT_CLSID, Q)),
    ]
    wire = (
        bytes.fromhex("03000000")
        + bytes.fromhex("69000000130000040000")
        + bytes.fromhex("6c0000001f0078000000")
        + bytes.fromhex("650000004800")
        + Q_WIRE
    )
    assert encode_props(props) == wire
    assert encode_props(iter(props)) == wire
    assert decode_props(wire) == props
    assert encode_props([]) == b"\x00\x00\x00\x00"
    assert decode_props(b"\x00\x00\x00\x00") == []


def test_props_limit() -> None:
    ok = [(i, PropVariant(V.VT_NULL)) for i in range(MAX_PROPERTIES)]
    assert decode_props(encode_props(ok)) == ok
    with pytest.raises(WireError) as err:
        encode_props([*ok, (999, PropVariant(V.VT_NULL))])
    assert err.value.hresult == HResult.MQ_ERROR_TOO_MANY_PROPERTIES
    data = (MAX_PROPERTIES + 1).to_bytes(4, "little") + b"\x01\x00\x00\x00\x01\x00" * (MAX_PROPERTIES + 1)
    with pytest.raises(WireError) as err2:
        decode_props(data)
    assert err2.value.hresult == HResult.MQ_ERROR_TOO_MANY_PROPERTIES


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x01\x00\x00",
        b"\x01\x00\x00\x00",  # count 1, no entry
        b"\x02\x00\x00\x00\x01\x00\x00\x00\x01\x00",  # count 2, one entry
        b"\x00\x00\x00\x00\x00",  # trailing byte
        b"\x01\x00\x00\x00\x01\x00\x00\x00\x13\x00\x01\x00",  # truncated VT_UI4
    ],
)
def test_malformed_props(data: bytes) -> None:
    with pytest.raises(WireError):
        decode_props(data)


def test_encode_props_rejects_bad_entries() -> None:
    with pytest.raises(WireError):
        encode_props([(2**32, PropVariant(V.VT_NULL))])
    with pytest.raises(WireError):
        encode_props([(-1, PropVariant(V.VT_NULL))])
    with pytest.raises(WireError):
        encode_props([(1, 5)])  # type: ignore[list-item]


# ---------------------------------------------------------------- Hypothesis

_text = st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=20)
_guids = st.uuids()


def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(min_value=lo, max_value=hi)


_SCALARS: dict[V, st.SearchStrategy[object]] = {
    V.VT_EMPTY: st.none(),
    V.VT_NULL: st.none(),
    V.VT_I1: _ints(-128, 127),
    V.VT_UI1: _ints(0, 255),
    V.VT_I2: _ints(-(2**15), 2**15 - 1),
    V.VT_UI2: _ints(0, 2**16 - 1),
    V.VT_I4: _ints(-(2**31), 2**31 - 1),
    V.VT_UI4: _ints(0, 2**32 - 1),
    V.VT_I8: _ints(-(2**63), 2**63 - 1),
    V.VT_UI8: _ints(0, 2**64 - 1),
    V.VT_BOOL: st.booleans(),
    V.VT_LPWSTR: _text,
    V.VT_BLOB: st.binary(max_size=40),
    V.VT_CLSID: _guids,
    V.VT_VECTOR_UI1: st.binary(max_size=40),
    V.VT_VECTOR_UI2: st.lists(_ints(0, 2**16 - 1), max_size=8).map(tuple),
    V.VT_VECTOR_I4: st.lists(_ints(-(2**31), 2**31 - 1), max_size=8).map(tuple),
    V.VT_VECTOR_UI4: st.lists(_ints(0, 2**32 - 1), max_size=8).map(tuple),
    V.VT_VECTOR_UI8: st.lists(_ints(0, 2**64 - 1), max_size=8).map(tuple),
    V.VT_VECTOR_CLSID: st.lists(_guids, max_size=4).map(tuple),
    V.VT_VECTOR_LPWSTR: st.lists(_text, max_size=4).map(tuple),
}

_flat: st.SearchStrategy[PropVariant] = st.one_of(
    *[v.map(lambda x, vt=vt: PropVariant(vt, x)) for vt, v in _SCALARS.items()]  # type: ignore[misc]
)
propvariants: st.SearchStrategy[PropVariant] = st.recursive(
    _flat,
    lambda inner: st.lists(inner, max_size=4).map(lambda xs: PropVariant(V.VT_VECTOR_VARIANT, tuple(xs))),
    max_leaves=12,
)


@given(propvariants)
def test_propvalue_round_trip(pv: PropVariant) -> None:
    data = encode_propvalue(pv)
    back = decode_propvalue(pv.vt, data)
    assert back == pv
    assert encode_propvalue(back) == data


@given(st.sampled_from(sorted(_SCALARS)), st.data())
def test_every_vartype_round_trips(vt: V, data: st.DataObject) -> None:
    pv = PropVariant(vt, data.draw(_SCALARS[vt]))  # type: ignore[arg-type]
    assert decode_propvalue(vt, pv.encode()) == pv


@given(st.lists(st.tuples(_ints(0, 2**32 - 1), propvariants), max_size=10))
def test_props_round_trip(props: list[tuple[int, PropVariant]]) -> None:
    assert decode_props(encode_props(props)) == props


@given(st.integers(0, 0xFFFF), st.binary(max_size=64))
def test_arbitrary_propvalue_bytes(vt: int, data: bytes) -> None:
    try:
        pv = decode_propvalue(vt, data)
    except WireError:
        return
    assert encode_propvalue(pv) == data


@given(st.sampled_from([int(v) for v in V]), st.binary(max_size=64))
def test_arbitrary_bytes_for_known_vartypes(vt: int, data: bytes) -> None:
    try:
        pv = decode_propvalue(vt, data)
    except WireError:
        return
    assert encode_propvalue(pv) == data


@given(st.binary(max_size=200))
def test_arbitrary_props_bytes(data: bytes) -> None:
    try:
        props = decode_props(data)
    except WireError:
        return
    assert encode_props(props) == data


@given(st.lists(st.tuples(_ints(0, 2**32 - 1), propvariants), min_size=1, max_size=6), st.data())
def test_props_truncated_and_trailing(props: list[tuple[int, PropVariant]], data: st.DataObject) -> None:
    wire = encode_props(props)
    cut = data.draw(st.integers(0, len(wire) - 1))
    with pytest.raises(WireError):
        decode_props(wire[:cut])
    extra = data.draw(st.binary(min_size=1, max_size=8))
    with pytest.raises(WireError):
        decode_props(wire + extra)
