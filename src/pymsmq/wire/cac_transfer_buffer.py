"""CACTransferBufferV1 ([MS-MQMP] 2.2.3.2): the message transfer record between client and queue manager.

Field names are the IDL member names in snake_case without the Hungarian prefix (``uTransferType``
-> ``transfer_type``, ``ppCorrelationID`` -> ``correlation_id``).  Where two members share a stem
the pointer member keeps ``p_`` (``pulTitleBufferSizeInWCHARs`` -> ``p_title_buffer_size_in_wchars``
beside ``ulTitleBufferSizeInWCHARs`` -> ``title_buffer_size_in_wchars``; likewise
``p_relative_time_to_live`` and ``p_authenticated`` beside ``authenticated`` (``bAuthenticated``)).
``pClass`` is ``msg_class`` (``class`` is a keyword).  Every IDL pointer is ``X | None``: ``None`` is
a NULL pointer, which on send means "use the default" and on receive "not requested"
([MS-MQMP] 3.1.5.2, 3.1.5.3).  ``pAdminQueueFormat``/``pResponseQueueFormat`` (QUEUE_FORMAT,
[MS-MQMQ] 2.2.7) are carried as their format-name text ([MS-MQMQ] 2.1).

Flat binary encoding (pymsmq's own; all integers little-endian, no padding)::

    u32  transfer_type                  TRANSFER_TYPE ([MS-MQMP] 2.2.2.1)
    u64  presence                       bit i set = optional member i present (see _OPTIONAL;
                                        bits 40.. are the arm's optional members); other bits 0
    arm  SEND:         [str admin_queue_format] [str response_queue_format]
         RECEIVE:      u32 request_timeout, action, asynchronous, cursor, then for response,
                       admin, dest, ordering: u32 <x>_format_name_len, [str name], [u32 len_prop]
         CREATECURSOR: u32 h_cursor, srv_h_ac_queue, cli_p_qm_queue
    the 15 scalar members in IDL order (``_SCALARS``)
    each present optional member in IDL order: u8/u16/u32 as typed; GUID 16 bytes ([MS-DTYP]
    2.3.4.2); OBJECTID/correlation 20 bytes; XACTUOW 16 bytes; byte buffers u32 length + bytes;
    strings u32 count of UTF-16 code units + UTF-16LE

Nothing may follow the record.  The [MS-MQMP] rules applied to a record (class word, send defaults,
receive filling) are in ``cac_transfer_rules``.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure

__all__ = [
    "MAX_FORMAT_NAME_LEN",
    "MAX_TITLE_WCHARS",
    "CACTransferBufferV1",
    "CreateCursorArm",
    "ReceiveAction",
    "ReceiveArm",
    "SendArm",
    "TransferType",
]

# [MS-MQMP] 2.2.3.2: "[range(0,1024)] DWORD ul...FormatNameLen".
MAX_FORMAT_NAME_LEN: Final = 1024
# [MS-MQMP] 2.2.3.2: ulTitleBufferSizeInWCHARs "MUST NOT exceed 250".
MAX_TITLE_WCHARS: Final = 250
_U32_MAX: Final = 0xFFFF_FFFF


class TransferType(IntEnum):
    """TRANSFER_TYPE ([MS-MQMP] 2.2.2.1): the CACTransferBufferV1 union discriminant."""

    CACTB_SEND = 0x00000000
    CACTB_RECEIVE = 0x00000001
    CACTB_CREATECURSOR = 0x00000002


class ReceiveAction(IntEnum):
    """Receive.Action ([MS-MQMP] 2.2.3.2): "MUST specify one of the values"."""

    MQ_ACTION_RECEIVE = 0x00000000
    MQ_ACTION_PEEK_CURRENT = 0x80000000
    MQ_ACTION_PEEK_NEXT = 0x80000001


def _bad(msg: str) -> WireError:
    return WireError(msg)


def _u32(name: str, value: object) -> None:
    if type(value) is not int or not 0 <= value <= _U32_MAX:
        raise _bad(f"{name} {value!r:.60} does not fit a DWORD")


def _opt_str(name: str, value: object) -> None:
    if value is not None and type(value) is not str:
        raise _bad(f"{name} must be a string or None")


@dataclass(frozen=True, slots=True)
class SendArm:
    """The Send union arm: admin and response queues (QUEUE_FORMAT, carried as format-name text)."""

    admin_queue_format: str | None = None
    response_queue_format: str | None = None

    def __post_init__(self) -> None:
        _opt_str("pAdminQueueFormat", self.admin_queue_format)
        _opt_str("pResponseQueueFormat", self.response_queue_format)


_NAMES: Final = ("response", "admin", "dest", "ordering")


@dataclass(frozen=True, slots=True)
class ReceiveArm:
    """The Receive union arm ([MS-MQMP] 2.2.3.2); ``*_format_name_len`` is the buffer size in WCHARs."""

    request_timeout: int = 0
    action: int = ReceiveAction.MQ_ACTION_RECEIVE
    asynchronous: int = 0
    cursor: int = 0
    response_format_name_len: int = 0
    response_format_name: str | None = None
    response_format_name_len_prop: int | None = None
    admin_format_name_len: int = 0
    admin_format_name: str | None = None
    admin_format_name_len_prop: int | None = None
    dest_format_name_len: int = 0
    dest_format_name: str | None = None
    dest_format_name_len_prop: int | None = None
    ordering_format_name_len: int = 0
    ordering_format_name: str | None = None
    ordering_format_name_len_prop: int | None = None

    def __post_init__(self) -> None:
        for name in ("request_timeout", "asynchronous", "cursor"):
            _u32(name, getattr(self, name))
        if self.action not in ReceiveAction._value2member_map_ or type(self.action) is bool:
            raise _bad(f"Receive.Action {self.action!r} MUST be 0x00000000, 0x80000000 or 0x80000001")
        object.__setattr__(self, "action", ReceiveAction(self.action))
        for stem in _NAMES:
            cap = getattr(self, f"{stem}_format_name_len")
            if type(cap) is not int or not 0 <= cap <= MAX_FORMAT_NAME_LEN:
                raise _bad(f"ul{stem}FormatNameLen {cap!r} is outside range(0,1024)")
            text = getattr(self, f"{stem}_format_name")
            _opt_str(f"pp{stem}FormatName", text)
            if text is not None and len(text) > cap:
                raise _bad(f"{stem} format name of {len(text)} WCHARs exceeds its buffer of {cap}")
            prop = getattr(self, f"{stem}_format_name_len_prop")
            if prop is not None:
                _u32(f"pul{stem}FormatNameLenProp", prop)


@dataclass(frozen=True, slots=True)
class CreateCursorArm:
    """The CreateCursor union arm: CACCreateRemoteCursor ([MS-MQMP] 2.2.3.4)."""

    h_cursor: int = 0
    srv_h_ac_queue: int = 0
    cli_p_qm_queue: int = 0

    def __post_init__(self) -> None:
        for f in ("h_cursor", "srv_h_ac_queue", "cli_p_qm_queue"):
            _u32(f, getattr(self, f))


# Value sets from [MS-MQMP] 2.2.3.2 (None = any value of the type).
_ACK_VALUES: Final = frozenset({0x00, 0x01, 0x02, 0x04, 0x05, 0x08, 0x0C, 0x0E})
_AUTHENTICATED_VALUES: Final = frozenset({0x00, 0x01, 0x03, 0x05, 0x09})
_HASH_VALUES: Final = frozenset({0x8001, 0x8002, 0x8003, 0x8004, 0x800C, 0x800E})
_ENCRYPT_VALUES: Final = frozenset({0x6602, 0x6801})
# MQMP lists 0, 1, 2; Windows' mq.h defines BODY_ENHANCED as 3 and AES as 5: both accepted.
_PRIV_VALUES: Final = frozenset({0, 1, 2, 3, 5})

# Optional (pointer) members in IDL order: (field, kind, allowed values or upper bound).
_OPTIONAL: Final[tuple[tuple[str, str, frozenset[int] | int | None], ...]] = (
    ("msg_class", "u16", None),
    ("message_id", "id20", None),
    ("correlation_id", "id20", None),
    ("sent_time", "u32", None),
    ("arrived_time", "u32", None),
    ("priority", "u8", 7),
    ("delivery", "u8", 1),
    ("acknowledge", "u8", _ACK_VALUES),
    ("auditing", "u8", 3),
    ("application_tag", "u32", None),
    ("body", "bytes", None),
    ("body_size", "u32", None),
    ("title", "str", None),
    ("p_title_buffer_size_in_wchars", "u32", None),
    ("relative_time_to_queue", "u32", None),
    ("p_relative_time_to_live", "u32", None),
    ("trace", "u8", 1),
    ("sender_id_type", "u32", 2),
    ("sender_id", "bytes", None),
    ("sender_id_len_prop", "u32", None),
    ("priv_level", "u32", _PRIV_VALUES),
    ("p_authenticated", "u8", _AUTHENTICATED_VALUES),
    ("hash_alg", "u32", _HASH_VALUES),
    ("encrypt_alg", "u32", _ENCRYPT_VALUES),
    ("sender_cert", "bytes", None),
    ("sender_cert_len_prop", "u32", None),
    ("prov_name", "str", None),
    ("auth_prov_name_len_prop", "u32", None),
    ("prov_type", "u32", None),
    ("symm_keys", "bytes", None),
    ("symm_keys_size_prop", "u32", None),
    ("signature", "bytes", None),
    ("signature_size_prop", "u32", None),
    ("src_qm_id", "guid", None),
    ("uow", "uow", None),
    ("msg_extension", "bytes", None),
    ("msg_extension_size", "u32", None),
    ("connector_type", "guid", None),
    ("body_type", "u32", None),
    ("version", "u32", None),
)
# Scalar members in IDL order, packed with one struct.
_SCALARS: Final = (
    "body_buffer_size_in_bytes",
    "alloc_body_buffer_in_bytes",
    "title_buffer_size_in_wchars",
    "absolute_time_to_queue",
    "relative_time_to_live",
    "auth_level",
    "sender_cert_len",
    "prov_name_len",
    "default_provider",
    "symm_keys_size",
    "encrypted",
    "authenticated",
    "sender_id_len",
    "signature_size",
    "msg_extension_buffer_in_bytes",
)
_SCALAR_LAYOUT: Final = struct.Struct("<IIIIIIIIiIBBHII")
_INT_MAX: Final = {"u8": 0xFF, "u16": 0xFFFF, "u32": _U32_MAX}
_FIXED_LEN: Final = {"id20": 20, "uow": 16}
# Buffers bounded by a capacity member: (buffer, capacity member).
_CAPACITY: Final = (
    ("sender_id", "sender_id_len"),
    ("sender_cert", "sender_cert_len"),
    ("prov_name", "prov_name_len"),
    ("symm_keys", "symm_keys_size"),
    ("signature", "signature_size"),
    ("msg_extension", "msg_extension_buffer_in_bytes"),
    ("body", "alloc_body_buffer_in_bytes"),
)
_HEAD: Final = struct.Struct("<IQ")
_ARM_BIT: Final = 40


@dataclass(frozen=True, slots=True)
class CACTransferBufferV1(Structure):
    """CACTransferBufferV1 ([MS-MQMP] 2.2.3.2) as a typed, validated record.

    Exactly the union arm that ``transfer_type`` selects is set (a missing one is filled with
    its defaults).  Construction enforces the IDL ranges and MUST rules and raises ``WireError``.
    """

    transfer_type: TransferType = TransferType.CACTB_SEND
    send: SendArm | None = None
    receive: ReceiveArm | None = None
    create_cursor: CreateCursorArm | None = None
    msg_class: int | None = None
    message_id: bytes | None = None
    correlation_id: bytes | None = None
    sent_time: int | None = None
    arrived_time: int | None = None
    priority: int | None = None
    delivery: int | None = None
    acknowledge: int | None = None
    auditing: int | None = None
    application_tag: int | None = None
    body: bytes | None = None
    body_buffer_size_in_bytes: int = 0
    alloc_body_buffer_in_bytes: int = 0
    body_size: int | None = None
    title: str | None = None
    title_buffer_size_in_wchars: int = 0
    p_title_buffer_size_in_wchars: int | None = None
    absolute_time_to_queue: int = 0
    relative_time_to_queue: int | None = None
    relative_time_to_live: int = 0
    p_relative_time_to_live: int | None = None
    trace: int | None = None
    sender_id_type: int | None = None
    sender_id: bytes | None = None
    sender_id_len_prop: int | None = None
    priv_level: int | None = None
    auth_level: int = 0
    p_authenticated: int | None = None
    hash_alg: int | None = None
    encrypt_alg: int | None = None
    sender_cert: bytes | None = None
    sender_cert_len: int = 0
    sender_cert_len_prop: int | None = None
    prov_name: str | None = None
    prov_name_len: int = 0
    auth_prov_name_len_prop: int | None = None
    prov_type: int | None = None
    default_provider: int = 0
    symm_keys: bytes | None = None
    symm_keys_size: int = 0
    symm_keys_size_prop: int | None = None
    encrypted: int = 0
    authenticated: int = 0
    sender_id_len: int = 0
    signature: bytes | None = None
    signature_size: int = 0
    signature_size_prop: int | None = None
    src_qm_id: uuid.UUID | None = None
    uow: bytes | None = None
    msg_extension: bytes | None = None
    msg_extension_buffer_in_bytes: int = 0
    msg_extension_size: int | None = None
    connector_type: uuid.UUID | None = None
    body_type: int | None = None
    version: int | None = None

    def __post_init__(self) -> None:
        tt = self.transfer_type
        if isinstance(tt, bool) or tt not in TransferType._value2member_map_:
            raise _bad(f"uTransferType {tt!r} is outside range(0,2)")
        tt = TransferType(tt)
        object.__setattr__(self, "transfer_type", tt)
        arms = (("send", SendArm), ("receive", ReceiveArm), ("create_cursor", CreateCursorArm))
        for i, (name, arm_type) in enumerate(arms):
            arm = getattr(self, name)
            if i == tt:
                if arm is None:
                    object.__setattr__(self, name, arm_type())
                elif type(arm) is not arm_type:
                    raise _bad(f"the {name} arm must be a {arm_type.__name__}")
            elif arm is not None:
                raise _bad(f"uTransferType {tt.name} selects the {arms[tt][0]} arm, not {name}")
        for name in _SCALARS:
            value = getattr(self, name)
            if name == "default_provider":
                ok = type(value) is int and -0x8000_0000 <= value <= 0x7FFF_FFFF
            else:
                hi = (
                    0xFF
                    if name in ("encrypted", "authenticated")
                    else 0xFFFF
                    if name == "sender_id_len"
                    else _U32_MAX
                )
                ok = type(value) is int and 0 <= value <= hi
            if not ok:
                raise _bad(f"{name} {value!r:.40} is out of range")
        for name, kind, allowed in _OPTIONAL:
            value = getattr(self, name)
            if value is None:
                continue
            if kind in _INT_MAX:
                if type(value) is not int or not 0 <= value <= _INT_MAX[kind]:
                    raise _bad(f"{name} {value!r:.40} does not fit its {kind} field")
                if isinstance(allowed, int) and value > allowed:
                    raise _bad(f"{name} {value} MUST be at most {allowed}")
                if isinstance(allowed, frozenset) and value not in allowed:
                    raise _bad(f"{name} 0x{value:X} is not one of the values [MS-MQMP] 2.2.3.2 allows")
            elif kind in _FIXED_LEN:
                if type(value) is not bytes or len(value) != _FIXED_LEN[kind]:
                    raise _bad(f"{name} MUST be exactly {_FIXED_LEN[kind]} bytes")
            elif kind == "bytes":
                if type(value) is not bytes:
                    raise _bad(f"{name} must be bytes or None")
            elif kind == "str":
                if type(value) is not str:
                    raise _bad(f"{name} must be a string or None")
            elif not isinstance(value, uuid.UUID):
                raise _bad(f"{name} must be a GUID or None")
        if self.title_buffer_size_in_wchars > MAX_TITLE_WCHARS:
            raise _bad(f"ulTitleBufferSizeInWCHARs {self.title_buffer_size_in_wchars} exceeds 250")
        if self.body_buffer_size_in_bytes > self.alloc_body_buffer_in_bytes:
            raise _bad("ulBodyBufferSizeInBytes MUST be <= ulAllocBodyBufferInBytes")
        if self.body_size is not None and self.body_size > self.alloc_body_buffer_in_bytes:
            raise _bad("pBodySize MUST be <= ulAllocBodyBufferInBytes")
        for buf, cap in _CAPACITY:
            data = getattr(self, buf)
            if data is not None and len(data) > getattr(self, cap):
                raise _bad(f"{buf} of {len(data)} units exceeds its buffer size {cap}={getattr(self, cap)}")
        if self.sender_id_type == 0 and self.sender_id is not None:
            raise _bad("ppSenderID MUST NOT be present when pulSenderIDType is MQMSG_SENDERID_TYPE_NONE")

    # ------------------------------------------------------------------ flat encoding

    def write(self, w: Writer) -> None:
        """Append the flat binary form to ``w``."""
        presence = 0
        tail = Writer()
        for bit, (name, kind, _) in enumerate(_OPTIONAL):
            value = getattr(self, name)
            if value is not None:
                presence |= 1 << bit
                _write_value(tail, kind, value)
        arm = Writer()
        bit = _ARM_BIT
        if self.send is not None:
            for value in (self.send.admin_queue_format, self.send.response_queue_format):
                if value is not None:
                    presence |= 1 << bit
                    _write_value(arm, "str", value)
                bit += 1
        elif self.receive is not None:
            rc = self.receive
            arm.raw(struct.pack("<IIII", rc.request_timeout, rc.action, rc.asynchronous, rc.cursor))
            for stem in _NAMES:
                arm.u32(getattr(rc, f"{stem}_format_name_len"))
                for kind, value in (
                    ("str", getattr(rc, f"{stem}_format_name")),
                    ("u32", getattr(rc, f"{stem}_format_name_len_prop")),
                ):
                    if value is not None:
                        presence |= 1 << bit
                        _write_value(arm, kind, value)
                    bit += 1
        elif self.create_cursor is not None:
            cc = self.create_cursor
            arm.raw(struct.pack("<III", cc.h_cursor, cc.srv_h_ac_queue, cc.cli_p_qm_queue))
        w.raw(_HEAD.pack(self.transfer_type, presence))
        w.raw(arm.buf)
        w.raw(_SCALAR_LAYOUT.pack(*(getattr(self, n) for n in _SCALARS)))
        w.raw(tail.buf)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one flat record at the reader's position."""
        start = r.pos
        r.need(_HEAD.size, "CACTransferBufferV1 header")
        tt, presence = _HEAD.unpack_from(r.data, start)
        r.pos += _HEAD.size
        if tt > 2:
            raise WireError(f"uTransferType {tt} is outside range(0,2)", start)
        arm_bits = {0: 2, 1: 8, 2: 0}[tt]
        if presence >> (_ARM_BIT + arm_bits):
            raise WireError(f"presence bits 0x{presence:016X} name members that do not exist", start + 4)
        kw: dict[str, Any] = {"transfer_type": TransferType(tt)}
        bit = _ARM_BIT
        if tt == TransferType.CACTB_SEND:
            names = ("admin_queue_format", "response_queue_format")
            vals = {}
            for n in names:
                vals[n] = _read_value(r, "str") if presence >> bit & 1 else None
                bit += 1
            kw["send"] = SendArm(**vals)
        elif tt == TransferType.CACTB_RECEIVE:
            r.need(16, "Receive")
            timeout, action, asynchronous, cursor = struct.unpack_from("<IIII", r.data, r.pos)
            r.pos += 16
            rvals: dict[str, Any] = {
                "request_timeout": timeout,
                "action": action,
                "asynchronous": asynchronous,
                "cursor": cursor,
            }
            for stem in _NAMES:
                rvals[f"{stem}_format_name_len"] = r.u32("format name length")
                rvals[f"{stem}_format_name"] = _read_value(r, "str") if presence >> bit & 1 else None
                rvals[f"{stem}_format_name_len_prop"] = (
                    _read_value(r, "u32") if presence >> bit + 1 & 1 else None
                )
                bit += 2
            kw["receive"] = ReceiveArm(**rvals)
        else:
            r.need(12, "CreateCursor")
            kw["create_cursor"] = CreateCursorArm(*struct.unpack_from("<III", r.data, r.pos))
            r.pos += 12
        r.need(_SCALAR_LAYOUT.size, "scalar members")
        kw.update(zip(_SCALARS, _SCALAR_LAYOUT.unpack_from(r.data, r.pos), strict=True))
        r.pos += _SCALAR_LAYOUT.size
        for i, (name, kind, _) in enumerate(_OPTIONAL):
            if presence >> i & 1:
                kw[name] = _read_value(r, kind)
        return cls(**kw)


def _write_value(w: Writer, kind: str, value: Any) -> None:
    if kind == "u32":
        w.u32(value)
    elif kind == "u8":
        w.u8(value)
    elif kind == "u16":
        w.u16(value)
    elif kind == "str":
        data = value.encode("utf-16-le", "surrogatepass")
        w.u32(len(data) // 2)
        w.raw(data)
    elif kind == "bytes":
        w.u32(len(value))
        w.raw(value)
    elif kind == "guid":
        w.guid(value)
    else:  # id20, uow: fixed-size raw bytes
        w.raw(value)


def _read_value(r: Reader, kind: str) -> Any:
    if kind == "u32":
        return r.u32(kind)
    if kind == "u8":
        return r.u8(kind)
    if kind == "u16":
        return r.u16(kind)
    if kind == "str":
        return r.utf16(r.u32("string length"))
    if kind == "bytes":
        return r.raw(r.u32("buffer length"))
    if kind == "guid":
        return r.guid()
    return r.raw(_FIXED_LEN[kind], kind)
