"""The field encodings every client-protocol payload is built from (docs/protocol.md, "Field types").

Each ``Codec`` reads a value from a ``Reader``, appends it to a ``Writer`` and checks that a Python
value is valid for it; a payload class lists one codec per dataclass field, in wire order.  All
integers are little-endian; nothing is padded or aligned.  Every read is bounds-checked by the
``Reader`` (``WireError``, never ``struct.error``/``IndexError``), every count is checked against the
bytes left before anything is allocated, and every text decode uses ``surrogatepass`` so that no
byte sequence raises ``UnicodeDecodeError``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from pymsmq.errors import WireError, reason
from pymsmq.hresult import HResult
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire.base_header import (
    BASE_HEADER_SIGNATURE,
    BASE_HEADER_SIZE,
    BASE_HEADER_VERSION,
    MAX_PACKET_SIZE,
)
from pymsmq.wire.element_budget import charge_elements
from pymsmq.wire.propvariant import MAX_PROPERTIES, PropVariant, read_props, write_props
from pymsmq.wire.session_header import SESSION_HEADER_SIZE

__all__ = [
    "BYTES",
    "GUID",
    "MAX_STR_UNITS",
    "MAX_VERSIONS",
    "OPT_PACKET",
    "PACKET",
    "PROPIDS",
    "PROPS",
    "PROPS_LIST",
    "STR",
    "STRS",
    "U8",
    "U16",
    "U16S",
    "U32",
    "U64",
    "XACT",
    "Codec",
    "Props",
    "TransactionRef",
    "XactKind",
    "check_packet",
]

Props = tuple[tuple[int, PropVariant], ...]
"""A property array as a value: ``((PROPID, PropVariant), ...)`` in wire order."""

TransactionRef = int | uuid.UUID | None
"""``None`` (no transaction argument), an MQTRANSACTION constant (int) or an internal transaction id."""

# STR: a u16 count of UTF-16 code units, so at most 65535 units.
MAX_STR_UNITS: Final = 0xFFFF
# U16S (the hello's version list): at most 64 entries.
MAX_VERSIONS: Final = 64

_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_U64: Final = struct.Struct("<Q")
_PKT: Final = struct.Struct("<BBHII")
_B_IN: Final = 0x0008  # BaseHeader.Flags.IN ([MS-MQMQ] 2.2.19.1)
_B_SH: Final = 0x0010  # BaseHeader.Flags.SH


class XactKind:
    """The first byte of an XACT field."""

    NONE: Final = 0  # no transaction argument; nothing follows
    CONSTANT: Final = 1  # a u8 MQTRANSACTION constant follows ([MC-MQAC] 2.2.2.16)
    INTERNAL: Final = 2  # a 16-byte transaction id (from BEGIN_TRANSACTION) follows


@dataclass(frozen=True, slots=True)
class Codec:
    """One field encoding: its name in docs/protocol.md and its read/write/check functions."""

    name: str
    read: Callable[[Reader], Any]
    write: Callable[[Writer, Any], None]
    check: Callable[[Any, str], None]


def _fail(what: str, value: object, why: str = "") -> WireError:
    return WireError(f"{what}: {value!r:.80} {why or 'is not valid'}")


def _uint_check(bits: int) -> Callable[[Any, str], None]:
    top = (1 << bits) - 1

    def check(value: Any, what: str) -> None:
        if not isinstance(value, int) or type(value) is bool or not 0 <= value <= top:
            raise _fail(what, value, f"does not fit a u{bits}")

    return check


def _w_u8(w: Writer, value: int) -> None:
    w.buf.append(value)


def _w_u16(w: Writer, value: int) -> None:
    w.buf += _U16.pack(value)


def _w_u32(w: Writer, value: int) -> None:
    w.buf += _U32.pack(value)


def _w_u64(w: Writer, value: int) -> None:
    w.buf += _U64.pack(value)


U8: Final = Codec("u8", Reader.u8, _w_u8, _uint_check(8))
U16: Final = Codec("u16", Reader.u16, _w_u16, _uint_check(16))
U32: Final = Codec("u32", Reader.u32, _w_u32, _uint_check(32))
U64: Final = Codec("u64", Reader.u64, _w_u64, _uint_check(64))


# -- GUID: 16 bytes, [MS-DTYP] 2.3.4.2 layout (Data1..Data3 little-endian) --------------------------
def _r_guid(r: Reader) -> uuid.UUID:
    return uuid.UUID(bytes_le=r.raw(16, "GUID"))


def _w_guid(w: Writer, value: uuid.UUID) -> None:
    w.buf += value.bytes_le


def _c_guid(value: Any, what: str) -> None:
    if not isinstance(value, uuid.UUID):
        raise _fail(what, value, "is not a uuid.UUID")


GUID: Final = Codec("GUID", _r_guid, _w_guid, _c_guid)


# -- STR: u16 count of UTF-16 code units, then the UTF-16LE code units (no terminator) ---------------
def _r_str(r: Reader) -> str:
    n = r.u16("STR length")
    return r.raw(2 * n, "STR").decode("utf-16-le", "surrogatepass")


def _w_str(w: Writer, value: str) -> None:
    data = value.encode("utf-16-le", "surrogatepass")
    w.buf += _U16.pack(len(data) >> 1)
    w.buf += data


def _c_str(value: Any, what: str) -> None:
    if type(value) is not str:
        raise _fail(what, value, "is not a str")
    # Fast path: fewer characters than the limit/2 cannot exceed it even if all are astral.
    if (
        len(value) > MAX_STR_UNITS // 2
        and len(value.encode("utf-16-le", "surrogatepass")) > 2 * MAX_STR_UNITS
    ):
        raise _fail(what, value, f"is longer than {MAX_STR_UNITS} UTF-16 code units")


STR: Final = Codec("STR", _r_str, _w_str, _c_str)


# -- BYTES: u32 length, then the bytes ---------------------------------------------------------------
def _r_bytes(r: Reader) -> bytes:
    return r.raw(r.u32("BYTES length"), "BYTES")


def _w_bytes(w: Writer, value: bytes) -> None:
    w.buf += _U32.pack(len(value))
    w.buf += value


def _c_bytes(value: Any, what: str) -> None:
    if type(value) is not bytes:
        raise _fail(what, value, "is not bytes")


BYTES: Final = Codec("BYTES", _r_bytes, _w_bytes, _c_bytes)


# -- PACKET: u32 length, then one whole [MS-MQMQ] 2.2.20 UserMessage packet --------------------------
def check_packet(data: bytes, what: str = "packet") -> None:
    """Check the BaseHeader of a UserMessage packet and that ``len(data)`` is exactly its size.

    Only the 16-byte BaseHeader is examined ([MS-MQMQ] 2.2.19.1: VersionNumber 0x10, Signature
    0x524F494C, PacketSize <= 0x00400000, Flags.IN clear for a UserMessage ([MS-MQMQ] 2.2.20)); the
    length must be PacketSize, plus 16 when Flags.SH announces a trailing SessionHeader.  The rest
    of the packet is decoded by whoever needs it (``UserMessage.decode``).
    """
    n = len(data)
    if n < BASE_HEADER_SIZE:
        raise WireError(f"{what}: {n} bytes cannot hold a BaseHeader")
    version, _, flags, signature, size = _PKT.unpack_from(data, 0)
    if version != BASE_HEADER_VERSION or signature != BASE_HEADER_SIGNATURE:
        raise WireError(
            f"{what}: not an MSMQ packet (VersionNumber 0x{version:02X}, Signature 0x{signature:08X})"
        )
    if flags & _B_IN:
        raise WireError(f"{what}: BaseHeader.Flags.IN is set, not a UserMessage")
    if size > MAX_PACKET_SIZE or size < BASE_HEADER_SIZE:
        raise WireError(f"{what}: BaseHeader.PacketSize {size} is out of range")
    expected = size + (SESSION_HEADER_SIZE if flags & _B_SH else 0)
    if n != expected:
        raise WireError(f"{what}: {n} bytes but PacketSize (+SessionHeader) says {expected}")


def _r_packet(r: Reader) -> bytes:
    n = r.u32("PACKET length")
    pos = r.pos
    data = r.raw(n, "PACKET")
    try:
        check_packet(data)
    except WireError as exc:
        raise WireError(reason(exc), pos) from None
    return data


def _c_packet(value: Any, what: str) -> None:
    if type(value) is not bytes:
        raise _fail(what, value, "is not bytes")
    check_packet(value, what)


PACKET: Final = Codec("PACKET", _r_packet, _w_bytes, _c_packet)


# -- OPT_PACKET: like PACKET; length 0 means "no packet" (None) ----------------------------------------
def _r_opt_packet(r: Reader) -> bytes | None:
    pos = r.pos
    if pos + 4 <= r.end and r.data[pos : pos + 4] == b"\x00\x00\x00\x00":
        r.pos = pos + 4
        return None
    return _r_packet(r)


def _w_opt_packet(w: Writer, value: bytes | None) -> None:
    if value is None:
        w.buf += b"\x00\x00\x00\x00"
    else:
        _w_bytes(w, value)


def _c_opt_packet(value: Any, what: str) -> None:
    if value is not None:
        _c_packet(value, what)


OPT_PACKET: Final = Codec("OPT_PACKET", _r_opt_packet, _w_opt_packet, _c_opt_packet)


# -- PROPS: a property array (pymsmq.wire.propvariant, [MS-MQCN] 2.2.3 PROPVALUE entries) --------------
def _r_props(r: Reader) -> Props:
    return tuple(read_props(r))


def _w_props(w: Writer, value: Props) -> None:
    if value:
        write_props(w, value)
    else:
        w.buf += b"\x00\x00\x00\x00"


def _c_props(value: Any, what: str) -> None:
    if type(value) is not tuple:
        raise _fail(what, value, "is not a tuple of (PROPID, PropVariant) pairs")
    if len(value) > MAX_PROPERTIES:
        raise WireError(
            f"{what}: {len(value)} properties exceed {MAX_PROPERTIES}",
            None,
            HResult.MQ_ERROR_TOO_MANY_PROPERTIES,
        )
    for item in value:
        if (
            type(item) is not tuple
            or len(item) != 2
            or type(item[0]) is not int
            or not 0 <= item[0] <= 0xFFFF_FFFF
            or type(item[1]) is not PropVariant
        ):
            raise _fail(what, item, "is not a (PROPID u32, PropVariant) pair")


PROPS: Final = Codec("PROPS", _r_props, _w_props, _c_props)


# -- PROPS_LIST: u32 count, then count PROPS -----------------------------------------------------------
def _r_props_list(r: Reader) -> tuple[Props, ...]:
    n = r.u32("PROPS_LIST count")
    r.need(4 * n, "PROPS_LIST")  # every PROPS takes at least its 4-byte count
    charge_elements(n, r.pos - 4, "PROPS_LIST")
    return tuple(_r_props(r) for _ in range(n))


def _w_props_list(w: Writer, value: tuple[Props, ...]) -> None:
    w.buf += _U32.pack(len(value))
    for props in value:
        _w_props(w, props)


def _c_props_list(value: Any, what: str) -> None:
    if type(value) is not tuple:
        raise _fail(what, value, "is not a tuple of property arrays")
    for props in value:
        _c_props(props, what)


PROPS_LIST: Final = Codec("PROPS_LIST", _r_props_list, _w_props_list, _c_props_list)


# -- PROPIDS: u32 count (<= 128), then count u32 property identifiers --------------------------------
def _r_propids(r: Reader) -> tuple[int, ...]:
    pos = r.pos
    n = r.u32("PROPIDS count")
    if n > MAX_PROPERTIES:
        raise WireError(
            f"{n} property ids exceed {MAX_PROPERTIES}", pos, HResult.MQ_ERROR_TOO_MANY_PROPERTIES
        )
    return struct.unpack(f"<{n}I", r.raw(4 * n, "PROPIDS"))


def _w_propids(w: Writer, value: tuple[int, ...]) -> None:
    n = len(value)
    w.buf += _U32.pack(n)
    if n:
        w.buf += struct.pack(f"<{n}I", *value)


def _c_propids(value: Any, what: str) -> None:
    if type(value) is not tuple or not all(type(x) is int and 0 <= x <= 0xFFFF_FFFF for x in value):
        raise _fail(what, value, "is not a tuple of u32 property ids")
    if len(value) > MAX_PROPERTIES:
        raise WireError(
            f"{what}: {len(value)} property ids exceed {MAX_PROPERTIES}",
            None,
            HResult.MQ_ERROR_TOO_MANY_PROPERTIES,
        )


PROPIDS: Final = Codec("PROPIDS", _r_propids, _w_propids, _c_propids)


# -- U16S: u16 count (<= 64), then count u16 values (the hello's version list) ------------------------
def _r_u16s(r: Reader) -> tuple[int, ...]:
    pos = r.pos
    n = r.u16("U16S count")
    if n > MAX_VERSIONS:
        raise WireError(f"{n} entries exceed {MAX_VERSIONS}", pos)
    return struct.unpack(f"<{n}H", r.raw(2 * n, "U16S"))


def _w_u16s(w: Writer, value: tuple[int, ...]) -> None:
    w.buf += _U16.pack(len(value))
    w.buf += struct.pack(f"<{len(value)}H", *value)


def _c_u16s(value: Any, what: str) -> None:
    if type(value) is not tuple or not all(type(x) is int and 0 <= x <= 0xFFFF for x in value):
        raise _fail(what, value, "is not a tuple of u16 values")
    if len(value) > MAX_VERSIONS:
        raise _fail(what, value, f"has more than {MAX_VERSIONS} entries")


U16S: Final = Codec("U16S", _r_u16s, _w_u16s, _c_u16s)


# -- STRS: u32 count, then count STR -----------------------------------------------------------------
def _r_strs(r: Reader) -> tuple[str, ...]:
    n = r.u32("STRS count")
    r.need(2 * n, "STRS")  # every STR takes at least its 2-byte length
    charge_elements(n, r.pos - 4, "STRS")
    return tuple(_r_str(r) for _ in range(n))


def _w_strs(w: Writer, value: tuple[str, ...]) -> None:
    w.buf += _U32.pack(len(value))
    for s in value:
        _w_str(w, s)


def _c_strs(value: Any, what: str) -> None:
    if type(value) is not tuple:
        raise _fail(what, value, "is not a tuple of str")
    for s in value:
        _c_str(s, what)


STRS: Final = Codec("STRS", _r_strs, _w_strs, _c_strs)


# -- XACT: u8 kind, then nothing (NONE), a u8 MQTRANSACTION constant (CONSTANT) or a GUID (INTERNAL) ---
def _r_xact(r: Reader) -> TransactionRef:
    pos = r.pos
    kind = r.u8("XACT kind")
    if kind == XactKind.NONE:
        return None
    if kind == XactKind.CONSTANT:
        return r.u8("XACT constant")
    if kind == XactKind.INTERNAL:
        return _r_guid(r)
    raise WireError(f"XACT kind {kind} is not 0, 1 or 2", pos)


def _w_xact(w: Writer, value: TransactionRef) -> None:
    if value is None:
        w.buf.append(XactKind.NONE)
    elif isinstance(value, int):
        w.buf.append(XactKind.CONSTANT)
        w.buf.append(value)
    else:
        w.buf.append(XactKind.INTERNAL)
        w.buf += value.bytes_le


def _c_xact(value: Any, what: str) -> None:
    if value is None or isinstance(value, uuid.UUID):
        return
    if not isinstance(value, int) or type(value) is bool or not 0 <= value <= 0xFF:
        raise _fail(what, value, "is not None, an MQTRANSACTION constant (u8) or a transaction id")


XACT: Final = Codec("XACT", _r_xact, _w_xact, _c_xact)
