"""Hand-written payload codecs for the four payloads on the message path (docs/protocol.md 5).

SEND and RECEIVE requests and responses are most of the traffic, so they skip the generic field
loop of ``Payload.read``/``Payload.write``: each is read with a few precompiled ``struct`` calls and
built without re-running the per-field checks.  The layouts are exactly those of ``messages.py``
(``SendRequest``: U32 PACKET XACT PROPS; ``SendResponse``: PROPS; ``ReceiveRequest``: U32 U32 U32
U32 U64 XACT U32 PROPIDS; ``ReceiveResponse``: OPT_PACKET PROPS).

Every ``read_*`` returns the decoded payload or None; None means "not the common shape, or
malformed", and the caller then decodes with the generic ``Payload.decode``, which raises the
precise ``WireError``.  So a fast reader never accepts bytes the generic one refuses, and never
raises.  ``PAYLOAD_WRITERS`` maps a payload type to a function giving its bytes (the same bytes
``Payload.encode`` gives).  ``send_request``/``receive_request``/``receive_response`` build values
from arguments the caller already knows to be valid (no per-field checks).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, Final

from pymsmq.protocol._fields import Props, TransactionRef
from pymsmq.protocol.codes import ACTIONS
from pymsmq.protocol.messages import ReceiveRequest, ReceiveResponse, SendRequest, SendResponse
from pymsmq.wire.base_header import BaseHeaderFlags
from pymsmq.wire.propvariant import MAX_PROPERTIES, PropVariant, encode_props
from pymsmq.wire.vartype import VarType

__all__ = [
    "PAYLOAD_READERS",
    "PAYLOAD_WRITERS",
    "receive_request",
    "receive_request_body",
    "receive_response",
    "send_request",
    "send_request_body",
    "send_response",
]

_U32: Final = struct.Struct("<I")
_U32U32: Final = struct.Struct("<II")
_RECEIVE_HEAD: Final = struct.Struct("<IIIIQ")
_PACKET_HEAD: Final = struct.Struct("<BBHII")  # BaseHeader: version, reserved, flags, signature, size
_ENTRY: Final = struct.Struct("<IH")
_VERSION: Final = 0x10  # [MS-MQMQ] 2.2.19.1
_SIGNATURE: Final = 0x524F494C
_MAX_PACKET: Final = 0x00400000
# [MS-MQMQ] 2.2.19.1 BaseHeader.Flags (as _fields.check_packet reads them; these were 0x80 and 0x800,
# which let the hot reader take IN packets the general reader refuses).
_B_IN: Final = int(BaseHeaderFlags.IN)  # internal packet: not a UserMessage
_B_SH: Final = int(BaseHeaderFlags.SH)  # a SessionHeader follows PacketSize
_ZERO4: Final = b"\x00\x00\x00\x00"
_MAXU32: Final = 0xFFFFFFFF
_XACT_NONE: Final = b"\x00"
_NO_XACT_NO_PROPS: Final = b"\x00\x00\x00\x00\x00"  # XACT kind 0, then a property count of 0
_U32X5: Final = struct.Struct("<5I")  # the pymsmq client's propids (CLIENT_RECEIVE_PROPIDS)
_new: Final = object.__new__
_set: Final = object.__setattr__

# The fixed-size PROPVALUE types a fact array uses ([MS-MQCN] 2.2.3 PROPVALUE): VT -> struct.
_FIXED_VT: Final[dict[int, tuple[VarType, struct.Struct]]] = {
    int(VarType.VT_UI1): (VarType.VT_UI1, struct.Struct("<B")),
    int(VarType.VT_UI2): (VarType.VT_UI2, struct.Struct("<H")),
    int(VarType.VT_UI4): (VarType.VT_UI4, struct.Struct("<I")),
    int(VarType.VT_UI8): (VarType.VT_UI8, struct.Struct("<Q")),
    int(VarType.VT_I4): (VarType.VT_I4, struct.Struct("<i")),
}
_FIXED_WRITE: Final[dict[VarType, struct.Struct]] = {
    VarType.VT_UI4: struct.Struct("<IHI"),
    VarType.VT_UI8: struct.Struct("<IHQ"),
}
# Counted byte strings: u32 Size, then Size bytes (PROPID_M_MSGID is a VT_VECTOR_UI1 of 20).
_SIZED_VT: Final[dict[int, VarType]] = {
    int(VarType.VT_VECTOR_UI1): VarType.VT_VECTOR_UI1,
    int(VarType.VT_BLOB): VarType.VT_BLOB,
}
_SIZED_HEAD: Final = struct.Struct("<IHI")

# The two fact arrays on every SEND/RECEIVE answer ([MS-MQCN] 2.2.3 PROPVALUE layouts), each one
# struct: a SEND answer's (MSGID VT_VECTOR_UI1 of 20 bytes, SENTTIME VT_UI4) and a pymsmq RECEIVE
# answer's (LOOKUPID VT_UI8, then four VT_UI4).  Keyed by byte size (44 and 58 differ).
_VT_V = int(VarType.VT_VECTOR_UI1)
_VT_4 = int(VarType.VT_UI4)
_VT_8 = int(VarType.VT_UI8)
_SEND_FACTS: Final = struct.Struct("<IIHI20sIHI")
_RECEIVE_FACTS: Final = struct.Struct("<IIHQIHIIHIIHIIHI")
_FACT_SHAPES: Final[dict[int, tuple[struct.Struct, int]]] = {
    _SEND_FACTS.size: (_SEND_FACTS, 2),
    _RECEIVE_FACTS.size: (_RECEIVE_FACTS, 5),
}


def _pv(vt: VarType, value: object) -> PropVariant:
    pv: PropVariant = _new(PropVariant)
    _set(pv, "vt", vt)
    _set(pv, "value", value)
    return pv


def _packet_ok(data: bytes, start: int, n: int) -> bool:
    # The PACKET checks of _fields.check_packet ([MS-MQMQ] 2.2.19.1, 2.2.20) on data[start:start+n].
    if n < 16:
        return False
    version, _, flags, signature, size = _PACKET_HEAD.unpack_from(data, start)
    return (
        version == _VERSION
        and signature == _SIGNATURE
        and not flags & _B_IN
        and 16 <= size <= _MAX_PACKET
        and n == size + (16 if flags & _B_SH else 0)
    )


def _read_fact_shape(data: bytes, pos: int, end: int) -> tuple[Props, int] | None:
    # Fast path: the whole rest is one of the two fact arrays of _FACT_SHAPES (one unpack).
    shape = _FACT_SHAPES.get(end - pos)
    if shape is None:
        return None
    st, count = shape
    values = st.unpack_from(data, pos)
    if values[0] != count:
        return None
    if values[0] == 2:
        if values[2] != _VT_V or values[3] != 20 or values[6] != _VT_4:
            return None
        return (
            (values[1], _pv(VarType.VT_VECTOR_UI1, values[4])),
            (values[5], _pv(VarType.VT_UI4, values[7])),
        ), end
    if values[2] != _VT_8 or not values[5] == values[8] == values[11] == values[14] == _VT_4:
        return None
    return (
        (values[1], _pv(VarType.VT_UI8, values[3])),
        (values[4], _pv(VarType.VT_UI4, values[6])),
        (values[7], _pv(VarType.VT_UI4, values[9])),
        (values[10], _pv(VarType.VT_UI4, values[12])),
        (values[13], _pv(VarType.VT_UI4, values[15])),
    ), end


def _write_fact_shape(props: Props) -> bytes | None:
    # Fast path: the two fact arrays of _FACT_SHAPES in one pack; None for anything else (or a value
    # out of range: the generic writer then raises the precise WireError).
    n = len(props)
    try:
        if n == 2:
            (p1, v1), (p2, v2) = props
            if (
                type(v1) is PropVariant
                and type(v2) is PropVariant
                and v1.vt is VarType.VT_VECTOR_UI1
                and v2.vt is VarType.VT_UI4
                and type(v1.value) is bytes
                and len(v1.value) == 20
            ):
                return _SEND_FACTS.pack(2, p1, _VT_V, 20, v1.value, p2, _VT_4, v2.value)
        elif n == 5:
            (p1, v1), (p2, v2), (p3, v3), (p4, v4), (p5, v5) = props
            if (
                type(v1) is PropVariant
                and type(v2) is PropVariant
                and type(v3) is PropVariant
                and type(v4) is PropVariant
                and type(v5) is PropVariant
                and v1.vt is VarType.VT_UI8
                and v2.vt is VarType.VT_UI4
                and v3.vt is VarType.VT_UI4
                and v4.vt is VarType.VT_UI4
                and v5.vt is VarType.VT_UI4
            ):
                return _RECEIVE_FACTS.pack(
                    5,
                    p1,
                    _VT_8,
                    v1.value,
                    p2,
                    _VT_4,
                    v2.value,
                    p3,
                    _VT_4,
                    v3.value,
                    p4,
                    _VT_4,
                    v4.value,
                    p5,
                    _VT_4,
                    v5.value,
                )
    except (struct.error, TypeError, ValueError):
        return None
    return None


def _read_props(data: bytes, pos: int, end: int) -> tuple[Props, int] | None:
    # A property array of fixed-size integer values only; anything else -> None (generic reader).
    fast = _read_fact_shape(data, pos, end)
    if fast is not None:
        return fast
    if pos + 4 > end:
        return None
    (count,) = _U32.unpack_from(data, pos)
    pos += 4
    if not count:
        return (), pos
    if count > MAX_PROPERTIES:
        return None
    out: list[tuple[int, PropVariant]] = []
    for _ in range(count):
        if pos + 6 > end:
            return None
        propid, vt = _ENTRY.unpack_from(data, pos)
        pos += 6
        arm = _FIXED_VT.get(vt)
        if arm is None:
            sized = _SIZED_VT.get(vt)
            if sized is None or pos + 4 > end:
                return None
            (size,) = _U32.unpack_from(data, pos)
            pos += 4
            if pos + size > end:
                return None
            out.append((propid, _pv(sized, data[pos : pos + size])))
            pos += size
            continue
        s = arm[1]
        if pos + s.size > end:
            return None
        out.append((propid, _pv(arm[0], s.unpack_from(data, pos)[0])))
        pos += s.size
    return tuple(out), pos


def _read_xact(data: bytes, pos: int, end: int) -> tuple[TransactionRef, int] | None:
    if pos >= end:
        return None
    kind = data[pos]
    if kind == 0:
        return None, pos + 1
    if kind == 1:
        if pos + 2 > end:
            return None
        return data[pos + 1], pos + 2
    if kind == 2 and pos + 17 <= end:
        return uuid.UUID(bytes_le=data[pos + 1 : pos + 17]), pos + 17
    return None


def _write_xact(value: TransactionRef) -> bytes:
    if value is None:
        return _XACT_NONE
    if isinstance(value, int):
        return bytes((1, value))
    return b"\x02" + value.bytes_le


def _write_props(props: Props) -> bytes:
    if not props:
        return _ZERO4
    fast = _write_fact_shape(props)
    if fast is not None:
        return fast
    if len(props) > MAX_PROPERTIES:
        return encode_props(props)  # raises the generic WireError
    parts = [_U32.pack(len(props))]
    for propid, pv in props:
        s = _FIXED_WRITE.get(pv.vt) if type(pv) is PropVariant else None
        if s is None:
            if (
                type(pv) is PropVariant
                and pv.vt in _SIZED_VT
                and type(propid) is int
                and 0 <= propid <= _MAXU32
            ):
                value = pv.value
                if type(value) is not bytes:
                    return encode_props(props)
                parts.append(_SIZED_HEAD.pack(propid, pv.vt, len(value)))
                parts.append(value)
                continue
            return encode_props(props)
        try:
            parts.append(s.pack(propid, pv.vt, pv.value))
        except struct.error:
            return encode_props(props)  # raises the generic WireError
    return b"".join(parts)


# ---------------------------------------------------------------------------- readers
def read_send_request(data: bytes) -> SendRequest | None:
    """SEND request payload: U32 handle, PACKET, XACT, PROPS."""
    end = len(data)
    if end < 8:
        return None
    handle, n = _U32U32.unpack_from(data, 0)
    pos = 8 + n
    if pos > end or not _packet_ok(data, 8, n):
        return None
    packet = data[8:pos]
    if end - pos == 5 and data[pos:end] == _NO_XACT_NO_PROPS:
        # The common tail: no transaction, no properties.
        transaction: TransactionRef = None
        properties: Props = ()
    else:
        xact = _read_xact(data, pos, end)
        if xact is None:
            return None
        props = _read_props(data, xact[1], end)
        if props is None or props[1] != end:
            return None
        transaction, properties = xact[0], props[0]
    req: SendRequest = _new(SendRequest)
    _set(req, "handle", handle)
    _set(req, "packet", packet)
    _set(req, "transaction", transaction)
    _set(req, "properties", properties)
    return req


#: The last RECEIVE payload (bytes) read and its request: a client with one request in flight sends
#: the same RECEIVE payload again and again, and a ``ReceiveRequest`` is immutable (frozen), so an
#: equal payload gets the same object back.  One tuple, replaced whole (no torn read across threads).
_LAST_RECEIVE: tuple[bytes, ReceiveRequest | None] = (b"", None)


def read_receive_request(data: bytes) -> ReceiveRequest | None:
    """RECEIVE request payload: U32 handle/action/timeout/cursor, U64 lookup id, XACT, U32 flags, PROPIDS."""
    global _LAST_RECEIVE
    last = _LAST_RECEIVE
    if data == last[0] and last[1] is not None:
        return last[1]
    req = _read_receive_request(data)
    if req is not None and type(data) is bytes:  # a bytes key only: a buffer could change under it
        _LAST_RECEIVE = (data, req)
    return req


def _read_receive_request(data: bytes) -> ReceiveRequest | None:
    end = len(data)
    if end < 24:
        return None
    handle, action, timeout, cursor, lookup_id = _RECEIVE_HEAD.unpack_from(data, 0)
    if action not in ACTIONS:
        return None
    xact = _read_xact(data, 24, end)
    if xact is None:
        return None
    pos = xact[1]
    if pos + 8 > end:
        return None
    flags, count = _U32U32.unpack_from(data, pos)
    pos += 8
    if count > MAX_PROPERTIES or pos + 4 * count != end:
        return None
    req: ReceiveRequest = _new(ReceiveRequest)
    _set(req, "handle", handle)
    _set(req, "action", action)
    _set(req, "request_timeout", timeout)
    _set(req, "cursor", cursor)
    _set(req, "lookup_id", lookup_id)
    _set(req, "transaction", xact[0])
    _set(req, "flags", flags)
    if count == 5:
        propids = _U32X5.unpack_from(data, pos)
    else:
        propids = struct.unpack_from(f"<{count}I", data, pos) if count else ()
    _set(req, "propids", propids)
    return req


def read_send_response(data: bytes) -> SendResponse | None:
    """SEND response payload: PROPS."""
    props = _read_props(data, 0, len(data))
    if props is None or props[1] != len(data):
        return None
    return send_response(props[0])


def read_receive_response(data: bytes) -> ReceiveResponse | None:
    """RECEIVE response payload: OPT_PACKET (length 0: none), PROPS."""
    end = len(data)
    if end < 4:
        return None
    (n,) = _U32.unpack_from(data, 0)
    pos = 4 + n
    if n:
        if pos > end or not _packet_ok(data, 4, n):
            return None
        packet: bytes | None = data[4:pos]
    else:
        packet = None
    props = _read_props(data, pos, end)
    if props is None or props[1] != end:
        return None
    return receive_response(packet, props[0])


# ---------------------------------------------------------------------------- writers
def _w_send_request(req: SendRequest) -> bytes:
    packet = req.packet
    return b"".join(
        (
            _U32U32.pack(req.handle, len(packet)),
            packet,
            _write_xact(req.transaction),
            _write_props(req.properties),
        )
    )


def send_request_body(handle: int, packet: bytes, transaction: TransactionRef = None) -> bytes:
    """The payload of ``send_request(handle, packet, transaction)`` (no properties), built directly."""
    if transaction is None:
        return b"".join((_U32U32.pack(handle, len(packet)), packet, _NO_XACT_NO_PROPS))
    return b"".join((_U32U32.pack(handle, len(packet)), packet, _write_xact(transaction), _ZERO4))


def _w_receive_request(req: ReceiveRequest) -> bytes:
    return receive_request_body(
        req.handle,
        req.action,
        req.request_timeout,
        req.cursor,
        req.lookup_id,
        req.transaction,
        req.propids,
        req.flags,
    )


def receive_request_body(
    handle: int,
    action: int,
    request_timeout: int,
    cursor: int,
    lookup_id: int,
    transaction: TransactionRef,
    propids: tuple[int, ...],
    flags: int = 0,
) -> bytes:
    """The payload of ``receive_request(...)`` with these values, built directly."""
    n = len(propids)
    return b"".join(
        (
            _RECEIVE_HEAD.pack(handle, action, request_timeout, cursor, lookup_id),
            _write_xact(transaction),
            _U32U32.pack(flags, n),
            struct.pack(f"<{n}I", *propids) if n else b"",
        )
    )


def _w_send_response(resp: SendResponse) -> bytes:
    return _write_props(resp.properties)


def _w_receive_response(resp: ReceiveResponse) -> bytes:
    packet = resp.packet
    if packet is None:
        return _ZERO4 + _write_props(resp.properties)
    return b"".join((_U32.pack(len(packet)), packet, _write_props(resp.properties)))


#: Payload type -> its bytes (equal to ``Payload.encode``).
PAYLOAD_WRITERS: Final[dict[type, Callable[[Any], bytes]]] = {
    SendRequest: _w_send_request,
    ReceiveRequest: _w_receive_request,
    SendResponse: _w_send_response,
    ReceiveResponse: _w_receive_response,
}
#: Payload type -> fast reader (None: use ``Payload.decode``).
PAYLOAD_READERS: Final[dict[type, Callable[[bytes], Any]]] = {
    SendRequest: read_send_request,
    ReceiveRequest: read_receive_request,
    SendResponse: read_send_response,
    ReceiveResponse: read_receive_response,
}


# ---------------------------------------------------------------------------- trusted builders
def send_request(handle: int, packet: bytes, transaction: TransactionRef = None) -> SendRequest:
    """A ``SendRequest`` of a packet made by ``message_codec.encode_packet`` (not re-checked)."""
    req: SendRequest = _new(SendRequest)
    _set(req, "handle", handle)
    _set(req, "packet", packet)
    _set(req, "transaction", transaction)
    _set(req, "properties", ())
    return req


def receive_request(
    handle: int,
    action: int,
    request_timeout: int,
    cursor: int,
    lookup_id: int,
    transaction: TransactionRef,
    propids: tuple[int, ...],
    flags: int = 0,
) -> ReceiveRequest:
    """A ``ReceiveRequest`` of values the caller has checked (not re-checked)."""
    req: ReceiveRequest = _new(ReceiveRequest)
    _set(req, "handle", handle)
    _set(req, "action", action)
    _set(req, "request_timeout", request_timeout)
    _set(req, "cursor", cursor)
    _set(req, "lookup_id", lookup_id)
    _set(req, "transaction", transaction)
    _set(req, "flags", flags)
    _set(req, "propids", propids)
    return req


def receive_response(packet: bytes | None, properties: Props) -> ReceiveResponse:
    """A ``ReceiveResponse`` of a packet from ``encode_packet`` and fact properties (not re-checked)."""
    resp: ReceiveResponse = _new(ReceiveResponse)
    _set(resp, "packet", packet)
    _set(resp, "properties", properties)
    return resp


def send_response(properties: Props) -> SendResponse:
    """A ``SendResponse`` of fact properties made by ``message_codec.fact_properties`` (not re-checked)."""
    resp: SendResponse = _new(SendResponse)
    _set(resp, "properties", properties)
    return resp
