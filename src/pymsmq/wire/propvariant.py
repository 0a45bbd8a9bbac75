"""Typed PROPVARIANT values ([MS-MQMQ] 2.2.12-2.2.16) and their two byte encodings.

A ``PropVariant`` is a VARTYPE tag plus a Python value of the type that tag implies:

==========================  ===================================================================
VARTYPE                     Python value
==========================  ===================================================================
VT_EMPTY, VT_NULL           ``None`` ([MS-MQMQ] 2.2.12: "MUST NOT contain a data field")
VT_I1/UI1/I2/UI2/I4/UI4     ``int`` in the range of the C type
VT_I8, VT_UI8               ``int`` in the range of the C type
VT_BOOL                     ``bool`` (VARIANT_BOOL, [MS-MQMQ] 2.2.14)
VT_LPWSTR                   ``str`` without U+0000
VT_BLOB                     ``bytes``
VT_CLSID                    ``uuid.UUID``
VT_VECTOR|VT_UI1 (CAUB)     ``bytes``
VT_VECTOR|VT_UI2/I4/UI4/UI8 ``tuple[int, ...]`` (CAUI, CAL, CAUL, CAUH)
VT_VECTOR|VT_CLSID          ``tuple[uuid.UUID, ...]`` (CACLSID)
VT_VECTOR|VT_LPWSTR         ``tuple[str, ...]`` (CALPWSTR)
VT_VECTOR|VT_VARIANT        ``tuple[PropVariant, ...]`` (CAPROPVARIANT)
==========================  ===================================================================

Encoding 1, PROPVALUE ([MS-MQCN] 2.2.3): the value alone, no VARTYPE tag (the type comes from
the PROPID), little-endian, no padding anywhere.  [MS-MQCN] 2.2.3.1-2.2.3.15 define VT_I2, VT_I4,
VT_BOOL, VT_I1, VT_UI1, VT_UI2, VT_UI4, VT_I8, VT_UI8, VT_LPWSTR, VT_BLOB, VT_CLSID and the
VT_VECTOR forms of UI4, CLSID and LPWSTR.  pymsmq extends the same scheme to every other arm:

* VT_EMPTY, VT_NULL: zero bytes.
* VT_VECTOR|VT_UI1: ``Size`` (u32) then ``Size`` bytes, i.e. laid out exactly like VT_BLOB
  (the [MS-MQCN] digest's recommendation for PROPID_QM_ENCRYPTION_PK).
* VT_VECTOR|VT_UI2, VT_VECTOR|VT_I4, VT_VECTOR|VT_UI8: ``Size`` (u32, element count) then the
  elements back to back, as [MS-MQCN] 2.2.3.13 does for VT_VECTOR|VT_UI4.
* VT_VECTOR|VT_VARIANT: ``Size`` (u32) then per element its VARTYPE (u16) and its PROPVALUE;
  the element tag is needed because the elements' types vary.  Nesting is limited to
  ``MAX_NESTING`` levels so that hostile input cannot exhaust the stack.

Encoding 2, property array (pymsmq's request vocabulary, see DESIGN.md): ``Count`` (u32) then
``Count`` entries of ``PROPID`` (u32), ``VARTYPE`` (u16), PROPVALUE; no padding, nothing after
the last entry.  At most ``MAX_PROPERTIES`` (128) entries; more gives MQ_ERROR_TOO_MANY_PROPERTIES.

Any VARTYPE without a PROPVARIANT arm ([MS-MQMQ] 2.2.13.1), including VT_VARIANT without
VT_VECTOR ([MS-MQMQ] 2.2.12: it "MUST appear with the bit flag VT_VECTOR"), is a ``WireError``
carrying MQ_ERROR_ILLEGAL_PROPERTY_VT; a value of the wrong Python type or out of range carries
MQ_ERROR_ILLEGAL_PROPERTY_VALUE.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from pymsmq.errors import WireError
from pymsmq.hresult import HResult
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire.element_budget import charge_elements
from pymsmq.wire.vartype import VarType

__all__ = [
    "MAX_NESTING",
    "MAX_PROPERTIES",
    "VARIANT_FALSE",
    "VARIANT_TRUE",
    "PropValue",
    "PropVariant",
    "decode_props",
    "decode_propvalue",
    "encode_props",
    "encode_propvalue",
    "read_props",
    "read_propvalue",
    "write_props",
    "write_propvalue",
]

PropValue: TypeAlias = (
    "bool | int | str | bytes | uuid.UUID | tuple[int, ...] | tuple[uuid.UUID, ...]"
    " | tuple[str, ...] | tuple[PropVariant, ...] | None"
)

# [MS-MQMQ] 2.2.14: VARIANT_TRUE is 0xFFFF, VARIANT_FALSE is 0x0000 (a 16-bit short).
VARIANT_TRUE: Final = 0xFFFF
VARIANT_FALSE: Final = 0x0000
# [MS-MQMQ] 2.4 MQ_ERROR_TOO_MANY_PROPERTIES: "Too many properties" (MSMQ caps a property array).
MAX_PROPERTIES: Final = 128
# pymsmq limit on VT_VECTOR|VT_VARIANT recursion (the spec's deepest use is two levels:
# PROPID_MGMT_QUEUE_EOD_SOURCE_INFO is a vector of variants that are themselves vectors).
MAX_NESTING: Final = 8

_ILLEGAL_VT: Final = HResult.MQ_ERROR_ILLEGAL_PROPERTY_VT
_ILLEGAL_VALUE: Final = HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE

_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_ENTRY: Final = struct.Struct("<IH")

# Fixed-size integer arms: VARTYPE -> struct, low bound, high bound ([MS-MQCN] 2.2.3.1-2.2.3.9).
_INT_ARMS: Final[dict[int, tuple[struct.Struct, int, int]]] = {
    VarType.VT_I1: (struct.Struct("<b"), -0x80, 0x7F),
    VarType.VT_UI1: (struct.Struct("<B"), 0, 0xFF),
    VarType.VT_I2: (struct.Struct("<h"), -0x8000, 0x7FFF),
    VarType.VT_UI2: (struct.Struct("<H"), 0, 0xFFFF),
    VarType.VT_I4: (struct.Struct("<i"), -0x8000_0000, 0x7FFF_FFFF),
    VarType.VT_UI4: (struct.Struct("<I"), 0, 0xFFFF_FFFF),
    VarType.VT_I8: (struct.Struct("<q"), -0x8000_0000_0000_0000, 0x7FFF_FFFF_FFFF_FFFF),
    VarType.VT_UI8: (struct.Struct("<Q"), 0, 0xFFFF_FFFF_FFFF_FFFF),
}
# Vector arms with fixed-size integer elements: VARTYPE -> struct code, element size, bounds.
_INT_VECTORS: Final[dict[int, tuple[str, int, int, int]]] = {
    VarType.VT_VECTOR_UI2: ("H", 2, 0, 0xFFFF),
    VarType.VT_VECTOR_I4: ("i", 4, -0x8000_0000, 0x7FFF_FFFF),  # CAL: IDL element is `long`
    VarType.VT_VECTOR_UI4: ("I", 4, 0, 0xFFFF_FFFF),
    VarType.VT_VECTOR_UI8: ("Q", 8, 0, 0xFFFF_FFFF_FFFF_FFFF),
}
_VT_BY_VALUE: Final[dict[int, VarType]] = {int(v): v for v in VarType}


def _illegal_vt(vt: int, offset: int | None = None) -> WireError:
    return WireError(f"VARTYPE 0x{vt:04X} has no PROPVARIANT arm", offset, _ILLEGAL_VT)


def _bad_value(vt: int, value: object, why: str = "") -> WireError:
    name = _VT_BY_VALUE[vt].name if vt in _VT_BY_VALUE else f"0x{vt:04X}"
    return WireError(f"{value!r:.80} is not a valid {name} value{why}", None, _ILLEGAL_VALUE)


def _check_str(vt: int, value: object) -> str:
    if type(value) is not str:
        raise _bad_value(vt, value)
    # [MS-MQCN] 2.2.3.10: the string ends at the first 0x0000, so it cannot contain one.
    if "\x00" in value:
        raise _bad_value(vt, value, " (contains U+0000)")
    return value


def _validate(vt: int, value: object) -> None:
    """Raise ``WireError`` unless ``value`` is a valid Python value for ``vt``."""
    arm = _INT_ARMS.get(vt)
    if arm is not None:
        if type(value) is not int or not arm[1] <= value <= arm[2]:
            raise _bad_value(vt, value)
        return
    if vt == VarType.VT_EMPTY or vt == VarType.VT_NULL:
        if value is not None:
            raise _bad_value(vt, value, " (MUST NOT contain a data field)")
    elif vt == VarType.VT_BOOL:
        if type(value) is not bool:
            raise _bad_value(vt, value)
    elif vt == VarType.VT_LPWSTR:
        _check_str(vt, value)
    elif vt == VarType.VT_BLOB or vt == VarType.VT_VECTOR_UI1:
        if type(value) is not bytes or len(value) > 0xFFFF_FFFF:
            raise _bad_value(vt, value)
    elif vt == VarType.VT_CLSID:
        if not isinstance(value, uuid.UUID):
            raise _bad_value(vt, value)
    elif vt in _INT_VECTORS:
        _, _, lo, hi = _INT_VECTORS[vt]
        if type(value) is not tuple or not all(type(x) is int and lo <= x <= hi for x in value):
            raise _bad_value(vt, value)
    elif vt == VarType.VT_VECTOR_CLSID:
        if type(value) is not tuple or not all(isinstance(x, uuid.UUID) for x in value):
            raise _bad_value(vt, value)
    elif vt == VarType.VT_VECTOR_LPWSTR:
        if type(value) is not tuple:
            raise _bad_value(vt, value)
        for item in value:
            _check_str(vt, item)
    elif vt == VarType.VT_VECTOR_VARIANT:
        if type(value) is not tuple or not all(isinstance(x, PropVariant) for x in value):
            raise _bad_value(vt, value)
        if 1 + max((x.depth() for x in value), default=0) > MAX_NESTING:
            raise _bad_value(vt, "...", f" (nested deeper than {MAX_NESTING} levels)")
    else:
        raise _illegal_vt(vt)


@dataclass(frozen=True, slots=True)
class PropVariant:
    """One typed property value: a VARTYPE ([MS-MQMQ] 2.2.12) and its Python value.

    Construction validates the value against ``vt`` (type and range) and raises ``WireError``
    with MQ_ERROR_ILLEGAL_PROPERTY_VT or MQ_ERROR_ILLEGAL_PROPERTY_VALUE.
    """

    vt: VarType
    value: PropValue = None

    def __post_init__(self) -> None:
        vt = self.vt
        if type(vt) is not VarType:
            known = _VT_BY_VALUE.get(vt) if type(vt) is int else None
            if known is None:
                raise _illegal_vt(vt if type(vt) is int else -1)
            object.__setattr__(self, "vt", known)
        _validate(self.vt, self.value)

    def depth(self) -> int:
        """Levels of VT_VECTOR|VT_VARIANT nesting (0 for a value that is not a variant vector)."""
        if self.vt != VarType.VT_VECTOR_VARIANT:
            return 0
        items: tuple[PropVariant, ...] = self.value  # type: ignore[assignment]
        return 1 + max((x.depth() for x in items), default=0)

    def encode(self) -> bytes:
        """The PROPVALUE bytes of this value ([MS-MQCN] 2.2.3; no VARTYPE tag)."""
        return encode_propvalue(self)

    @classmethod
    def decode(cls, vt: int, data: bytes) -> PropVariant:
        """Decode a whole PROPVALUE of type ``vt``; trailing bytes are an error."""
        return decode_propvalue(vt, data)


def _make(vt: VarType, value: PropValue) -> PropVariant:
    """Build a PropVariant from values the decoder already knows are valid (skips validation)."""
    pv = object.__new__(PropVariant)
    object.__setattr__(pv, "vt", vt)
    object.__setattr__(pv, "value", value)
    return pv


def _wstr(value: str) -> bytes:
    return value.encode("utf-16-le", "surrogatepass") + b"\x00\x00"


def write_propvalue(w: Writer, pv: PropVariant) -> None:
    """Append the PROPVALUE encoding of ``pv`` to ``w``."""
    w.buf += encode_propvalue(pv)


def encode_propvalue(pv: PropVariant) -> bytes:
    """The PROPVALUE bytes of ``pv`` ([MS-MQCN] 2.2.3 and the extensions in the module docstring)."""
    vt = pv.vt
    value = pv.value
    arm = _INT_ARMS.get(vt)
    try:
        if arm is not None:
            return arm[0].pack(value)
        if vt == VarType.VT_LPWSTR:
            # [MS-MQCN] 2.2.3.10: UTF-16 code units then a 0x0000 NullTerminator; no length prefix.
            return _wstr(value)  # type: ignore[arg-type]
        if vt == VarType.VT_CLSID:
            # [MS-MQCN] 2.2.3.12: the GUID inline, [MS-DTYP] 2.3.4.2 layout.
            return value.bytes_le  # type: ignore[union-attr]
        if vt == VarType.VT_BLOB or vt == VarType.VT_VECTOR_UI1:
            # [MS-MQCN] 2.2.3.11: Size (u32) then Size bytes.
            data: bytes = value  # type: ignore[assignment]
            return _U32.pack(len(data)) + data
        if vt == VarType.VT_BOOL:
            # [MS-MQCN] 2.2.3.3: 0xFFFF true, 0x0000 false.
            return b"\xff\xff" if value else b"\x00\x00"
        if vt == VarType.VT_EMPTY or vt == VarType.VT_NULL:
            return b""
        vec = _INT_VECTORS.get(vt)
        if vec is not None:
            # [MS-MQCN] 2.2.3.13: Size (element count) then the elements, no padding.
            items: tuple[int, ...] = value  # type: ignore[assignment]
            n = len(items)
            return _U32.pack(n) + struct.pack(f"<{n}{vec[0]}", *items)
        if vt == VarType.VT_VECTOR_CLSID:
            # [MS-MQCN] 2.2.3.14: Size then Size GUIDs.
            guids: tuple[uuid.UUID, ...] = value  # type: ignore[assignment]
            return _U32.pack(len(guids)) + b"".join(g.bytes_le for g in guids)
        if vt == VarType.VT_VECTOR_LPWSTR:
            # [MS-MQCN] 2.2.3.15: Size then Size null-terminated strings back to back.
            strs: tuple[str, ...] = value  # type: ignore[assignment]
            return _U32.pack(len(strs)) + b"".join(_wstr(s) for s in strs)
        if vt == VarType.VT_VECTOR_VARIANT:
            # pymsmq extension: Size then per element VARTYPE (u16) + PROPVALUE.
            elems: tuple[PropVariant, ...] = value  # type: ignore[assignment]
            parts = [_U32.pack(len(elems))]
            for e in elems:
                parts.append(_U16.pack(e.vt))
                parts.append(encode_propvalue(e))
            return b"".join(parts)
    except (struct.error, TypeError, AttributeError, UnicodeError) as exc:
        # Only reachable for a PropVariant whose value was altered behind the validator's back.
        raise _bad_value(vt, value) from exc
    raise _illegal_vt(vt)


def _read_wstr(r: Reader) -> str:
    # [MS-MQCN] 2.2.3.10: scan for 0x0000 in 2-byte steps from the value's own start.
    return r.utf16z("VT_LPWSTR")


def read_propvalue(r: Reader, vt: int, depth: int = 0) -> PropVariant:
    """Read one PROPVALUE of type ``vt`` at the reader's position."""
    known = _VT_BY_VALUE.get(vt)
    if known is None or known == VarType.VT_VARIANT:
        # [MS-MQMQ] 2.2.12: VT_VARIANT "MUST appear with the bit flag VT_VECTOR".
        raise _illegal_vt(vt, r.pos)
    arm = _INT_ARMS.get(known)
    if arm is not None:
        s = arm[0]
        pos = r.pos
        if pos + s.size > r.end:
            raise WireError(f"truncated {known.name}: need {s.size} bytes, {r.end - pos} left", pos)
        r.pos = pos + s.size
        return _make(known, s.unpack_from(r.data, pos)[0])
    if known == VarType.VT_LPWSTR:
        return _make(known, _read_wstr(r))
    if known == VarType.VT_CLSID:
        return _make(known, r.guid("VT_CLSID"))
    if known == VarType.VT_BLOB or known == VarType.VT_VECTOR_UI1:
        size = r.u32("BLOB Size")
        return _make(known, r.raw(size, known.name))
    if known == VarType.VT_BOOL:
        raw = r.u16("VT_BOOL")
        if raw == VARIANT_TRUE:
            return _make(known, True)
        if raw == VARIANT_FALSE:
            return _make(known, False)
        raise WireError(f"VT_BOOL value 0x{raw:04X} is neither 0xFFFF nor 0x0000", r.pos - 2, _ILLEGAL_VALUE)
    if known == VarType.VT_EMPTY or known == VarType.VT_NULL:
        return _make(known, None)
    count_pos = r.pos
    count = r.u32("vector Size")
    vec = _INT_VECTORS.get(known)
    if vec is not None:
        r.need(count * vec[1], known.name)
        items = struct.unpack_from(f"<{count}{vec[0]}", r.data, r.pos)
        r.pos += count * vec[1]
        return _make(known, items)
    if known == VarType.VT_VECTOR_CLSID:
        raw_guids = r.raw(16 * count, "VT_VECTOR|VT_CLSID")
        charge_elements(count, count_pos, "VT_VECTOR|VT_CLSID")
        return _make(
            known, tuple(uuid.UUID(bytes_le=raw_guids[i : i + 16]) for i in range(0, 16 * count, 16))
        )
    if known == VarType.VT_VECTOR_LPWSTR:
        # Each string takes at least its 2-byte terminator: check before looping.
        r.need(2 * count, "VT_VECTOR|VT_LPWSTR")
        charge_elements(count, count_pos, "VT_VECTOR|VT_LPWSTR")
        return _make(known, tuple(_read_wstr(r) for _ in range(count)))
    if known == VarType.VT_VECTOR_VARIANT:
        if depth >= MAX_NESTING:
            raise WireError(f"VT_VECTOR|VT_VARIANT nested deeper than {MAX_NESTING} levels", count_pos)
        r.need(2 * count, "VT_VECTOR|VT_VARIANT")
        charge_elements(count, count_pos, "VT_VECTOR|VT_VARIANT")
        elems = []
        for _ in range(count):
            elems.append(read_propvalue(r, r.u16("VARTYPE"), depth + 1))
        return _make(known, tuple(elems))
    raise _illegal_vt(vt, count_pos)


def decode_propvalue(vt: int, data: bytes) -> PropVariant:
    """Decode ``data`` as exactly one PROPVALUE of type ``vt``."""
    r = Reader(data)
    pv = read_propvalue(r, vt)
    if r.remaining:
        raise WireError(f"{r.remaining} trailing bytes after PROPVALUE", r.pos)
    return pv


def _too_many(n: int, offset: int | None = None) -> WireError:
    return WireError(
        f"{n} properties exceed the limit of {MAX_PROPERTIES}", offset, HResult.MQ_ERROR_TOO_MANY_PROPERTIES
    )


def write_props(w: Writer, props: Sequence[tuple[int, PropVariant]]) -> None:
    """Append a property array: Count (u32) then (PROPID u32, VARTYPE u16, PROPVALUE) entries."""
    if len(props) > MAX_PROPERTIES:
        raise _too_many(len(props))
    buf = w.buf
    buf += _U32.pack(len(props))
    for propid, pv in props:
        if type(pv) is not PropVariant:
            raise WireError(f"property {propid!r}: {pv!r:.80} is not a PropVariant", None, _ILLEGAL_VALUE)
        try:
            buf += _ENTRY.pack(propid, pv.vt)
        except struct.error as exc:
            raise WireError(f"PROPID {propid!r} does not fit a u32", None, HResult.MQ_ERROR_PROPERTY) from exc
        buf += encode_propvalue(pv)


def encode_props(props: Iterable[tuple[int, PropVariant]]) -> bytes:
    """Encode a property array (see the module docstring for the framing)."""
    w = Writer()
    write_props(w, props if isinstance(props, Sequence) else list(props))
    return w.getvalue()


def read_props(r: Reader) -> list[tuple[int, PropVariant]]:
    """Read a property array at the reader's position."""
    start = r.pos
    count = r.u32("property Count")
    if count > MAX_PROPERTIES:
        raise _too_many(count, start)
    # Each entry is at least 6 bytes (PROPID + VARTYPE): check before looping.
    r.need(6 * count, "property array")
    out: list[tuple[int, PropVariant]] = []
    data = r.data
    for _ in range(count):
        pos = r.pos
        if pos + 6 > r.end:
            raise WireError("truncated property entry", pos)
        propid, vt = _ENTRY.unpack_from(data, pos)
        r.pos = pos + 6
        out.append((propid, read_propvalue(r, vt)))
    return out


def decode_props(data: bytes) -> list[tuple[int, PropVariant]]:
    """Decode a whole property array; trailing bytes are an error."""
    r = Reader(data)
    props = read_props(r)
    if r.remaining:
        raise WireError(f"{r.remaining} trailing bytes after property array", r.pos)
    return props
