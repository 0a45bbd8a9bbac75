"""Packet data types shared by the MSMQ packet headers ([MS-MQMQ] 2.2.18.1).

TxSequenceID, MessageIdentifier, XACTUOW, the queue format types that UserHeader.Flags.DQ/AQ/RQ
select ([MS-MQMQ] 2.2.18.1.5 and 2.2.18.1.7) and the MQFFormatNameElement of the multiple-queue
headers ([MS-MQMQ] 2.2.18.1.4).

Alignment.  Some of these fields are padded "to the next 4-byte boundary relative to the start of the
header that contains" them.  Their ``read``/``write`` take ``base``: the offset, in the reader's
buffer (or the writer's buffer), from which 4-byte alignment is counted.  The default 0 is right for
a structure inside a whole packet (every header starts 4-aligned from the packet start) and for a
structure decoded on its own.  Padding bytes are kept (``padding``) so that re-encoding is byte
exact; they carry no meaning ("no restrictions on the value of the padding bytes", notes <1>, <2>)
and are left out of equality.
"""

from __future__ import annotations

import codecs
import struct
import uuid
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar, Final, Self, TypeAlias

from pymsmq.errors import WireError
from pymsmq.wire._buffer import NULL_GUID, Reader, Writer, pad4
from pymsmq.wire._structure import Structure

__all__ = [
    "XACTUOW",
    "DirectQueueFormatName",
    "MQFDirectQueueFormatName",
    "MQFDistributionQueueFormatName",
    "MQFFormatNameElement",
    "MQFFormatType",
    "MessageIdentifier",
    "PrivateQueueFormatName",
    "PrivateQueueFormatNameId",
    "PublicQueueFormatName",
    "QueueFormat",
    "QueueType",
    "TxSequenceID",
    "guid_from_le",
    "queue_format_class",
    "read_queue_format",
    "write_queue_format",
]

_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_U32X2: Final = struct.Struct("<II")
_GUID_U32: Final = struct.Struct("<16sI")
_NUL2: Final = b"\x00\x00"
_utf16_decode: Final = codecs.utf_16_le_decode


# Decoding a GUID (uuid.UUID(bytes_le=...)) costs about 1 us; a packet stream repeats the same few
# queue-manager GUIDs, so decoded GUIDs are memoised (bounded; the cache is pure, not I/O).
_GUID_CACHE: Final[dict[bytes, uuid.UUID]] = {bytes(16): NULL_GUID}
_CACHE_MAX: Final = 4096


def guid_from_le(raw: bytes) -> uuid.UUID:
    """The GUID in 16 bytes of [MS-DTYP] 2.3.4 packet layout (``uuid.UUID(bytes_le=raw)``), memoised."""
    value = _GUID_CACHE.get(raw)
    if value is None:
        if len(raw) != 16:
            raise WireError(f"a GUID is 16 bytes, not {len(raw)}")
        value = uuid.UUID(bytes_le=raw)
        if len(_GUID_CACHE) >= _CACHE_MAX:
            _GUID_CACHE.clear()
            _GUID_CACHE[bytes(16)] = NULL_GUID
        _GUID_CACHE[raw] = value
    return value


def _guid_bytes(value: uuid.UUID, what: str) -> bytes:
    if not isinstance(value, uuid.UUID):
        raise WireError(f"{what} must be a uuid.UUID, not {type(value).__name__}")
    return value.bytes_le


# --------------------------------------------------------------------------------------------------
# 2.2.18.1.2 TxSequenceID, 2.2.18.1.3 MessageIdentifier, 2.2.18.1.8 XACTUOW
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TxSequenceID(Structure):
    """[MS-MQMQ] 2.2.18.1.2: 8 bytes, Ordinal u32 then TimeStamp u32.

    "When comparing ... the structure is treated as a 64-bit unsigned integer with Ordinal being the
    low-order bytes and TimeStamp being the high-order bytes": ``key`` is that integer, and the
    comparison operators use it.
    """

    ordinal: int = 0
    timestamp: int = 0

    SIZE: ClassVar[int] = 8

    @property
    def key(self) -> int:
        """The 64-bit comparison value (TimeStamp high, Ordinal low)."""
        return (self.timestamp << 32) | self.ordinal

    @classmethod
    def from_key(cls, key: int) -> Self:
        """Build from the 64-bit comparison value."""
        if not 0 <= key <= 0xFFFFFFFFFFFFFFFF:
            raise WireError(f"TxSequenceID {key!r} does not fit 64 bits")
        return cls(key & 0xFFFFFFFF, key >> 32)

    def __lt__(self, other: TxSequenceID) -> bool:
        return self.key < other.key

    def __le__(self, other: TxSequenceID) -> bool:
        return self.key <= other.key

    def __gt__(self, other: TxSequenceID) -> bool:
        return self.key > other.key

    def __ge__(self, other: TxSequenceID) -> bool:
        return self.key >= other.key

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read 8 bytes at the reader's position."""
        ordinal, timestamp = r.unpack(_U32X2, "TxSequenceID")
        return cls(ordinal, timestamp)

    def write(self, w: Writer) -> None:
        """Append the 8 bytes."""
        try:
            w.buf += _U32X2.pack(self.ordinal, self.timestamp)
        except struct.error as exc:
            raise WireError(f"TxSequenceID field out of range: {exc}") from exc


@dataclass(frozen=True, slots=True)
class MessageIdentifier(Structure):
    """[MS-MQMQ] 2.2.18.1.3: 20 bytes, QueueManagerGuid (sender QM) then Ordinal u32.

    ``str()`` gives the MSMQ text form ``{GUID}\\ordinal`` (the form of PROPID_M_MSGID displays).
    """

    queue_manager_guid: uuid.UUID = NULL_GUID
    ordinal: int = 0

    SIZE: ClassVar[int] = 20

    def __str__(self) -> str:
        return f"{{{str(self.queue_manager_guid).upper()}}}\\{self.ordinal}"

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read 20 bytes at the reader's position."""
        guid, ordinal = r.unpack(_GUID_U32, "MessageIdentifier")
        return cls(guid_from_le(guid), ordinal)

    def write(self, w: Writer) -> None:
        """Append the 20 bytes."""
        try:
            w.buf += _GUID_U32.pack(_guid_bytes(self.queue_manager_guid, "QueueManagerGuid"), self.ordinal)
        except struct.error as exc:
            raise WireError(f"MessageIdentifier.Ordinal out of range: {exc}") from exc


@dataclass(frozen=True, slots=True)
class XACTUOW(Structure):
    """[MS-MQMQ] 2.2.18.1.8: a unit-of-work identifier, ``unsigned char rgb[16]`` holding a GUID.

    The 16 bytes are kept verbatim; ``guid`` reads them in the [MS-DTYP] 2.3.4 layout.
    """

    rgb: bytes = bytes(16)

    SIZE: ClassVar[int] = 16

    @property
    def guid(self) -> uuid.UUID:
        """The GUID the bytes hold ([MS-DTYP] 2.3.4 packet layout)."""
        return uuid.UUID(bytes_le=self.rgb)

    @classmethod
    def from_guid(cls, value: uuid.UUID) -> Self:
        """The XACTUOW holding ``value``."""
        return cls(_guid_bytes(value, "XACTUOW"))

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read 16 bytes at the reader's position."""
        return cls(r.raw(16, "XACTUOW"))

    def write(self, w: Writer) -> None:
        """Append the 16 bytes."""
        if len(self.rgb) != 16:
            raise WireError(f"XACTUOW.rgb must be 16 bytes, not {len(self.rgb)}")
        w.buf += self.rgb


# --------------------------------------------------------------------------------------------------
# 2.2.18.1.5 Queue Format Type and 2.2.18.1.7 Common Queue Formats (UserHeader queue fields)
# --------------------------------------------------------------------------------------------------


class QueueType(IntEnum):
    """The 3-bit codes of UserHeader.Flags.DQ / AQ / RQ ([MS-MQMQ] 2.2.19.2 tables).

    Names follow [MS-MQDMPR] 3.1.7.1.31 (DestinationQueueType, AdministrationQueueType,
    ResponseQueueType).  Which codes are legal depends on the field: DQ {0,3,5,7}, AQ {0,2,3,5,6,7},
    RQ {0..7}.
    """

    NONE = 0
    SAME_AS_ADMINISTRATION_QUEUE = 1  # RQ only: no bytes on the wire
    PRIVATE_QUEUE_ON_SOURCE = 2  # PrivateQueueFormatNameId
    PRIVATE_QUEUE_ON_DESTINATION = 3  # PrivateQueueFormatNameId
    PRIVATE_QUEUE_ON_ADMIN = 4  # RQ only: PrivateQueueFormatNameId on the admin queue's host
    PUBLIC_QUEUE = 5  # PublicQueueFormatName
    PRIVATE_QUEUE_ON_OTHER = 6  # PrivateQueueFormatName
    DIRECT_QUEUE = 7  # DirectQueueFormatName


@dataclass(frozen=True, slots=True)
class PrivateQueueFormatNameId(Structure):
    """[MS-MQMQ] 2.2.18.1.5.1: PrivateQueueIdentifier u32 (the host QM is implied by the type code)."""

    private_queue_identifier: int

    SIZE: ClassVar[int] = 4

    @classmethod
    def read(cls, r: Reader, base: int = 0) -> Self:
        """Read 4 bytes (``base`` is accepted for symmetry with the variable-length types)."""
        return cls(r.u32("PrivateQueueFormatNameId"))

    def write(self, w: Writer, base: int = 0) -> None:
        """Append 4 bytes."""
        try:
            w.buf += _U32.pack(self.private_queue_identifier)
        except struct.error as exc:
            raise WireError(f"PrivateQueueIdentifier out of range: {exc}") from exc

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return 4


@dataclass(frozen=True, slots=True)
class PublicQueueFormatName(Structure):
    """[MS-MQMQ] 2.2.18.1.7.1: PublicQueueIdentifier, the GUID of the public queue (16 bytes)."""

    public_queue_identifier: uuid.UUID

    SIZE: ClassVar[int] = 16

    @classmethod
    def read(cls, r: Reader, base: int = 0) -> Self:
        """Read 16 bytes."""
        return cls(guid_from_le(r.raw(16, "PublicQueueIdentifier")))

    def write(self, w: Writer, base: int = 0) -> None:
        """Append 16 bytes."""
        w.buf += _guid_bytes(self.public_queue_identifier, "PublicQueueIdentifier")

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return 16


@dataclass(frozen=True, slots=True)
class PrivateQueueFormatName(Structure):
    """[MS-MQMQ] 2.2.18.1.7.2: SourceQueueManager GUID + PrivateQueueIdentifier u32 (20 bytes).

    In a UserHeader the field always starts 4-aligned, so the "rounded up to the next 4-byte
    boundary" rule for SourceQueueManager adds nothing there; the MQF element handles its own
    alignment (see ``MQFFormatNameElement``).
    """

    source_queue_manager: uuid.UUID
    private_queue_identifier: int

    SIZE: ClassVar[int] = 20

    @classmethod
    def read(cls, r: Reader, base: int = 0) -> Self:
        """Read 20 bytes."""
        guid, ident = r.unpack(_GUID_U32, "PrivateQueueFormatName")
        return cls(guid_from_le(guid), ident)

    def write(self, w: Writer, base: int = 0) -> None:
        """Append 20 bytes."""
        guid = _guid_bytes(self.source_queue_manager, "SourceQueueManager")
        try:
            w.buf += _GUID_U32.pack(guid, self.private_queue_identifier)
        except struct.error as exc:
            raise WireError(f"PrivateQueueIdentifier out of range: {exc}") from exc

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return 20


def _check_name(text: str, what: str) -> bytes:
    """UTF-16LE bytes of a NUL-terminated name's text (without the NUL); no NUL allowed inside."""
    if "\x00" in text:
        raise WireError(f"{what} must not contain a NUL character")
    try:
        return text.encode("utf-16-le", "surrogatepass")
    except UnicodeEncodeError as exc:  # pragma: no cover - surrogatepass encodes every str
        raise WireError(f"{what} cannot be encoded as UTF-16: {exc}") from exc


@dataclass(frozen=True, slots=True)
class DirectQueueFormatName(Structure):
    """[MS-MQMQ] 2.2.18.1.5.2: Count u16, DirectFormatName (NUL-terminated UTF-16LE), padding.

    ``direct_format_name`` is the text without its terminating NUL and without a ``DIRECT=`` prefix
    as it appears on the wire (e.g. ``OS:host\\private$\\q``, ``http://h/msmq/private$/q``).
    "Count ... specifies the length, in bytes, of the following null-terminated WCHAR buffer ... up
    to and including the terminating null character"; the field "is padded up to the next 4-byte
    boundary relative to the start of the header that contains the queue format name" and "The
    Count value does not include the padding bytes".
    """

    direct_format_name: str
    padding: bytes = field(default=b"", compare=False, repr=False)

    @classmethod
    def read(cls, r: Reader, base: int = 0) -> Self:
        """Read Count, the string and the padding up to a 4-byte boundary counted from ``base``."""
        start = r.pos
        end = r.end
        data = r.data
        if start + 2 > end:
            raise WireError("truncated DirectQueueFormatName.Count", start)
        count = data[start] | data[start + 1] << 8
        if count < 2 or count & 1:
            raise WireError(f"DirectQueueFormatName.Count {count} is not a NUL-terminated string", start)
        stop = start + 2 + count  # end of the string, NUL included
        if stop > end:
            raise WireError(f"truncated DirectFormatName: Count {count}, {end - start - 2} bytes left", start)
        n = -(stop - base) & 3
        if stop + n > end:
            raise WireError("truncated DirectQueueFormatName padding", stop)
        r.pos = stop + n
        # A stream repeats the same few destinations: the decoded (immutable) value is memoised by
        # its exact bytes, padding included.
        key = data[start : stop + n]
        value = _DIRECT_CACHE.get(key)
        if value is not None and type(value) is cls:
            return value
        if data[stop - 2] or data[stop - 1]:
            raise WireError("DirectQueueFormatName.DirectFormatName is not NUL-terminated", stop - 2)
        text = _utf16_decode(data[start + 2 : stop - 2], "surrogatepass", True)[0]
        if "\x00" in text:
            raise WireError("DirectQueueFormatName.DirectFormatName has a NUL inside", start + 2)
        value = cls(text, data[stop : stop + n]) if n else cls(text)
        if len(_DIRECT_CACHE) >= _CACHE_MAX:
            _DIRECT_CACHE.clear()
        _DIRECT_CACHE[key] = value
        return value

    def write(self, w: Writer, base: int = 0) -> None:
        """Append Count, the string, its NUL and the padding (kept bytes, else zeros)."""
        raw = _check_name(self.direct_format_name, "DirectFormatName")
        count = len(raw) + 2
        if count > 0xFFFF:
            raise WireError(f"DirectFormatName is {count} bytes; Count is a u16")
        buf = w.buf
        buf += _U16.pack(count)
        buf += raw
        buf += _NUL2
        n = pad4(len(buf) - base)
        if n:
            buf += (self.padding + bytes(n))[:n] if self.padding else bytes(n)

    @property
    def size(self) -> int:
        """Bytes on the wire when the field starts 4-aligned (as it does in a UserHeader)."""
        n = 4 + len(self.direct_format_name.encode("utf-16-le", "surrogatepass"))
        return n + pad4(n)


_DIRECT_CACHE: Final[dict[bytes, DirectQueueFormatName]] = {}

QueueFormat: TypeAlias = (
    PrivateQueueFormatNameId | PublicQueueFormatName | PrivateQueueFormatName | DirectQueueFormatName
)

# [MS-MQMQ] 2.2.19.2 tables: data type per queue type code (None = no bytes on the wire).
_QUEUE_CLASSES: Final[tuple[type[QueueFormat] | None, ...]] = (
    None,  # 0 none
    None,  # 1 same as the administration queue (RQ only)
    PrivateQueueFormatNameId,  # 2 private queue on source host
    PrivateQueueFormatNameId,  # 3 private queue on destination host
    PrivateQueueFormatNameId,  # 4 private queue on the admin queue's host (RQ only)
    PublicQueueFormatName,  # 5 public queue
    PrivateQueueFormatName,  # 6 private queue on another host
    DirectQueueFormatName,  # 7 direct
)


def queue_format_class(code: int) -> type[QueueFormat] | None:
    """The data type a DQ/AQ/RQ code selects ([MS-MQMQ] 2.2.19.2), or None when it carries no bytes."""
    if not 0 <= code <= 7:
        raise WireError(f"queue type code {code!r} is not a 3-bit value")
    return _QUEUE_CLASSES[code]


def read_queue_format(r: Reader, code: int, base: int = 0) -> QueueFormat | None:
    """Read the queue field a DQ/AQ/RQ ``code`` selects (None for codes 0 and 1)."""
    cls = _QUEUE_CLASSES[code]
    return None if cls is None else cls.read(r, base)


def write_queue_format(
    w: Writer, code: int, value: QueueFormat | None, base: int = 0, what: str = "queue"
) -> None:
    """Write ``value`` as the data type ``code`` selects; the two must agree."""
    cls = queue_format_class(code)
    if cls is None:
        if value is not None:
            raise WireError(
                f"{what} type code {code} carries no queue, but a {type(value).__name__} was given"
            )
        return
    if type(value) is not cls:
        raise WireError(f"{what} type code {code} needs a {cls.__name__}, not {type(value).__name__}")
    value.write(w, base)


# --------------------------------------------------------------------------------------------------
# 2.2.18.1.4 MQFFormatNameElement (multiple-element format names in MQFAddressHeader)
# --------------------------------------------------------------------------------------------------


class MQFFormatType(IntEnum):
    """MQFFormatNameElement.FormatType ([MS-MQMQ] 2.2.18.1.4): "MUST be set to one of" these."""

    PUBLIC = 0x0001
    PRIVATE = 0x0002
    DIRECT = 0x0003
    DISTRIBUTION_LIST = 0x0006


@dataclass(frozen=True, slots=True)
class MQFDirectQueueFormatName:
    """[MS-MQMQ] 2.2.18.1.4.1: a NUL-terminated UTF-16LE direct format name with no count field.

    "The size of the field is the WCHAR string's length in bytes"; the text is kept without the NUL.
    """

    direct_format_name: str

    @classmethod
    def read(cls, r: Reader, base: int = 0) -> Self:
        """Scan for the NUL terminator (bounded by the reader's end)."""
        return cls(r.utf16z("MQFDirectQueueFormatName"))

    def write(self, w: Writer, base: int = 0) -> None:
        """Append the string and its NUL."""
        w.buf += _check_name(self.direct_format_name, "MQFDirectQueueFormatName")
        w.buf += _NUL2


@dataclass(frozen=True, slots=True)
class MQFDistributionQueueFormatName:
    """[MS-MQMQ] 2.2.18.1.4.2: DistributionListIdentifier, the GUID of a distribution list."""

    distribution_list_identifier: uuid.UUID

    @classmethod
    def read(cls, r: Reader, base: int = 0) -> Self:
        """Read 16 bytes."""
        return cls(guid_from_le(r.raw(16, "DistributionListIdentifier")))

    def write(self, w: Writer, base: int = 0) -> None:
        """Append 16 bytes."""
        w.buf += _guid_bytes(self.distribution_list_identifier, "DistributionListIdentifier")


MQFFormatName: TypeAlias = (
    PublicQueueFormatName | PrivateQueueFormatName | MQFDirectQueueFormatName | MQFDistributionQueueFormatName
)

_MQF_CLASSES: Final[dict[int, type[MQFFormatName]]] = {
    MQFFormatType.PUBLIC: PublicQueueFormatName,
    MQFFormatType.PRIVATE: PrivateQueueFormatName,
    MQFFormatType.DIRECT: MQFDirectQueueFormatName,
    MQFFormatType.DISTRIBUTION_LIST: MQFDistributionQueueFormatName,
}
_MQF_TYPES: Final[dict[type[MQFFormatName], int]] = {v: k for k, v in _MQF_CLASSES.items()}


@dataclass(frozen=True, slots=True)
class MQFFormatNameElement(Structure):
    """[MS-MQMQ] 2.2.18.1.4: FormatType u16, then FormatName laid out by FormatType.

    Alignment of FormatName, counted from ``base``:
    - PRIVATE and DISTRIBUTION_LIST: the GUID "start ... is rounded up to the next 4-byte boundary";
    - PUBLIC: the spec states no rule; like every other GUID in these lists it is 4-aligned
      (decision recorded here, following the digest's recommendation);
    - DIRECT: "The start of this field is rounded up to the next 2-byte boundary".
    The alignment bytes between FormatType and FormatName are kept in ``padding``.  The element
    itself is not padded at its end (FormatNameList as a whole is, by its header).
    """

    format_name: MQFFormatName
    padding: bytes = field(default=b"", compare=False, repr=False)

    @property
    def format_type(self) -> MQFFormatType:
        """FormatType, derived from the class of ``format_name``."""
        return MQFFormatType(_MQF_TYPES[type(self.format_name)])

    @classmethod
    def read(cls, r: Reader, base: int = 0) -> Self:
        """Read FormatType, the alignment padding and the FormatName."""
        pos = r.pos
        format_type = r.u16("MQFFormatNameElement.FormatType")
        kind = _MQF_CLASSES.get(format_type)
        if kind is None:
            raise WireError(f"MQFFormatNameElement.FormatType 0x{format_type:04X} is not 1, 2, 3 or 6", pos)
        n = (r.pos - base) & 1 if kind is MQFDirectQueueFormatName else pad4(r.pos - base)
        padding = r.raw(n, "MQFFormatNameElement padding") if n else b""
        return cls(kind.read(r, base), padding)

    def write(self, w: Writer, base: int = 0) -> None:
        """Append FormatType, alignment padding and FormatName."""
        kind = type(self.format_name)
        format_type = _MQF_TYPES.get(kind)
        if format_type is None:
            raise WireError(f"{kind.__name__} cannot be an MQFFormatNameElement")
        w.buf += _U16.pack(format_type)
        n = (len(w.buf) - base) & 1 if kind is MQFDirectQueueFormatName else pad4(len(w.buf) - base)
        if n:
            w.buf += (self.padding + bytes(n))[:n]
        self.format_name.write(w, base)
