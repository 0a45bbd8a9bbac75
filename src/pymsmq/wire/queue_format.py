"""QUEUE_FORMAT ([MS-MQMQ] 2.2.6-2.2.11) with OBJECTID, DL_ID and MULTICAST_ID, in NDR form.

These are IDL types that travel only inside RPC calls ([MS-MQMP], [MS-MQMR], [MS-MQRR]), so their
bytes are NDR (C706 chapter 14, NDR 2.0, little-endian data representation), marshalled as a
top-level structure argument would be: the fixed part first, then the deferred referents of
embedded pointers.  Layout chosen (digest D0.5), offsets in bytes:

QUEUE_FORMAT::

    0  u8   m_qft
    1  u8   m_SuffixAndFlags     suffix = low nibble, flags = high nibble (0x00 or 0x80)
    2  u16  m_reserved
    4  u8   union discriminant   the non-encapsulated union's copy of m_qft (its switch type)
    5  3    alignment padding    union arms align to 4 (absent for UNKNOWN, whose arm is empty)
    8       arm:  PUBLIC/MACHINE/CONNECTOR  GUID (16)
                  PRIVATE                   OBJECTID: GUID Lineage (16), u32 Uniquifier
                  DIRECT/SUBQUEUE           u32 referent ID of the [string] wchar_t* (non-zero)
                  DL                        DL_ID: GUID m_DlGuid (16), u32 referent ID (0 = NULL)
                  MULTICAST                 MULTICAST_ID: u32 m_address, u32 m_port
    then, for a non-NULL string pointer, its deferred referent (a conformant varying string):
            u32 MaxCount, u32 Offset (= 0), u32 ActualCount (UTF-16 units incl. the NUL),
            ActualCount UTF-16LE units, the last one 0x0000; no trailing padding.

OBJECTID is 20 bytes (GUID, u32), MULTICAST_ID 8 bytes (u32, u32); DL_ID alone is GUID, u32
referent ID, then the deferred string as above.  Referent IDs are arbitrary non-zero values
(MIDL starts at 0x00020000); they and the padding bytes are kept so that decode/encode is byte
exact.  The decoder requires MaxCount == ActualCount (what MIDL sends for ``[string]``) and
Offset == 0.

MULTICAST_ID.m_address: the spec does not give its byte order (digest D2.10).  pymsmq keeps it
as Windows does, an ``in_addr`` in network order in memory, so the four wire bytes are the octets
a, b, c, d in order (``m_address == int.from_bytes(bytes([a, b, c, d]), "little")``).

Direct strings (digest D1.8 AMBIGUITY): m_pDirectID is the direct format name without ``DIRECT=``
and without the ``;JOURNAL``/``;DEADLETTER``/``;DEADXACT`` token, which m_SuffixAndFlags carries
(``OS:srv\\q`` + 0x81, ``OS:srv\\SYSTEM$`` + 0x82); m_pDirectSubqueueID keeps ``;subqueue``.
``to_format_name`` also accepts strings that keep the token (if it agrees with the suffix) or a
``DIRECT=`` prefix.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import KW_ONLY, dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, ClassVar, Final, Self

from pymsmq.errors import FormatNameError, WireError
from pymsmq.hresult import HResult
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure

if TYPE_CHECKING:
    from pymsmq.wire.format_name import FormatName

__all__ = [
    "DEFAULT_REFERENT_ID",
    "QUEUE_FORMAT_FLAG_NOT_SYSTEM",
    "QUEUE_FORMAT_FLAG_SYSTEM",
    "DlId",
    "MulticastId",
    "ObjectId",
    "QueueFormat",
    "QueueFormatType",
    "QueueSuffixType",
    "required_flags",
]

# [MS-MQMQ] 2.2.7 Flags subfield values.
QUEUE_FORMAT_FLAG_NOT_SYSTEM: Final = 0x00
QUEUE_FORMAT_FLAG_SYSTEM: Final = 0x80
# The first referent ID MIDL assigns in a call (any non-zero value is valid NDR).
DEFAULT_REFERENT_ID: Final = 0x00020000

_HEAD: Final = struct.Struct("<BBHB")
_GUID_U32: Final = struct.Struct("<16sI")
_U32X2: Final = struct.Struct("<II")
_U32X3: Final = struct.Struct("<III")
_U32: Final = struct.Struct("<I")
_DERIVE: Final = -1


class QueueFormatType(IntEnum):
    """QUEUE_FORMAT_TYPE ([MS-MQMQ] 2.2.6): the kind of name in QUEUE_FORMAT, its union discriminant."""

    QUEUE_FORMAT_TYPE_UNKNOWN = 0
    QUEUE_FORMAT_TYPE_PUBLIC = 1
    QUEUE_FORMAT_TYPE_PRIVATE = 2
    QUEUE_FORMAT_TYPE_DIRECT = 3
    QUEUE_FORMAT_TYPE_MACHINE = 4
    QUEUE_FORMAT_TYPE_CONNECTOR = 5
    QUEUE_FORMAT_TYPE_DL = 6
    QUEUE_FORMAT_TYPE_MULTICAST = 7
    QUEUE_FORMAT_TYPE_SUBQUEUE = 8  # MSMQ 4.0+


class QueueSuffixType(IntEnum):
    """QUEUE_SUFFIX_TYPE ([MS-MQMQ] 2.2.11): which queue of the named object (the ``;`` part)."""

    QUEUE_SUFFIX_TYPE_NONE = 0
    QUEUE_SUFFIX_TYPE_JOURNAL = 1
    QUEUE_SUFFIX_TYPE_DEADLETTER = 2
    QUEUE_SUFFIX_TYPE_DEADXACT = 3
    QUEUE_SUFFIX_TYPE_XACTONLY = 4
    QUEUE_SUFFIX_TYPE_SUBQUEUE = 5


_T = QueueFormatType
_S = QueueSuffixType

# [MS-MQMQ] 2.2.7 suffix table: (required Flags or None if not stated, m_qft values allowed).
_SUFFIX_RULES: Final[dict[QueueSuffixType, tuple[int | None, frozenset[int]]]] = {
    # "The Flags subfield MUST be set to 0x00. The m_qft member MUST NOT be set to 0x04."
    _S.QUEUE_SUFFIX_TYPE_NONE: (0x00, frozenset(range(9)) - {4}),
    # "The Flags subfield MUST be set to 0x80. The m_qft member MUST NOT be set to 0x05, 0x06, or 0x07."
    _S.QUEUE_SUFFIX_TYPE_JOURNAL: (0x80, frozenset(range(9)) - {5, 6, 7}),
    # "... MUST be set to 0x80. The m_qft member MUST NOT be set to 0x01, 0x02, 0x05, 0x06, or 0x07."
    _S.QUEUE_SUFFIX_TYPE_DEADLETTER: (0x80, frozenset(range(9)) - {1, 2, 5, 6, 7}),
    # "... MUST be set to 0x80. The m_qft member MUST be set to 0x03 or 0x04."
    _S.QUEUE_SUFFIX_TYPE_DEADXACT: (0x80, frozenset((3, 4))),
    # "The m_qft member MUST be set to 0x05." (Flags not stated: 0x00 or 0x80 accepted, 0x00 sent.)
    _S.QUEUE_SUFFIX_TYPE_XACTONLY: (None, frozenset((5,))),
    # "The Flags subfield MUST be 0x00. The m_qft member MUST be set to 0x08."
    _S.QUEUE_SUFFIX_TYPE_SUBQUEUE: (0x00, frozenset((8,))),
}

# Which union arm (attribute of QueueFormat) each m_qft selects.
_ARMS: Final = (
    "public_id",
    "private_id",
    "direct_id",
    "machine_id",
    "connector_id",
    "dl_id",
    "multicast_id",
    "direct_subqueue_id",
)
_ARM_OF: Final[dict[int, str | None]] = {0: None, **{i + 1: name for i, name in enumerate(_ARMS)}}


def required_flags(suffix: QueueSuffixType) -> int:
    """The Flags value ([MS-MQMQ] 2.2.7) to send with ``suffix`` (0x80 for journal/dead-letter)."""
    flags = _SUFFIX_RULES[suffix][0]
    return QUEUE_FORMAT_FLAG_NOT_SYSTEM if flags is None else flags


def _read_string(r: Reader, what: str) -> str:
    """A deferred ``[string] wchar_t*`` referent: MaxCount, Offset, ActualCount, units."""
    start = r.pos
    max_count, offset, actual = r.unpack(_U32X3, what)
    if offset != 0:
        raise WireError(f"{what}: NDR string Offset is {offset}, MUST be 0", start + 4)
    if actual != max_count:
        raise WireError(f"{what}: NDR string ActualCount {actual} != MaxCount {max_count}", start + 8)
    if actual == 0:
        raise WireError(f"{what}: NDR string has no terminating NUL", start + 8)
    raw = r.raw(2 * actual, what)
    if raw[-2:] != b"\x00\x00":
        raise WireError(f"{what}: string is not NUL-terminated", r.pos - 2)
    try:
        text = raw[:-2].decode("utf-16-le", "surrogatepass")
    except UnicodeDecodeError as exc:  # pragma: no cover - surrogatepass decodes every unit pair
        raise WireError(f"{what}: bad UTF-16: {exc}", start + 12) from exc
    if "\x00" in text:
        raise WireError(f"{what}: string contains an embedded NUL", start + 12)
    return text


def _write_string(w: Writer, text: str) -> None:
    data = text.encode("utf-16-le", "surrogatepass") + b"\x00\x00"
    n = len(data) // 2
    w.raw(_U32X3.pack(n, 0, n))
    w.raw(data)


def _check_text(text: object, what: str) -> None:
    if not isinstance(text, str):
        raise WireError(f"{what} must be a str, not {type(text).__name__}")
    if "\x00" in text:
        raise WireError(f"{what} contains a NUL character")


def _check_referent(value: int, what: str) -> None:
    if not isinstance(value, int) or not 0 < value <= 0xFFFFFFFF:
        raise WireError(f"{what} referent ID {value!r} must be a non-zero u32")


@dataclass(frozen=True, slots=True)
class ObjectId(Structure):
    """OBJECTID ([MS-MQMQ] 2.2.8): ``Lineage`` (group GUID) and ``Uniquifier`` (u32); 20 bytes.

    For a private queue Lineage is the queue manager's GUID and Uniquifier the queue number.
    """

    _wire_name: ClassVar[str] = "OBJECTID"

    lineage: uuid.UUID
    uniquifier: int

    def __post_init__(self) -> None:
        if not isinstance(self.uniquifier, int) or not 0 <= self.uniquifier <= 0xFFFFFFFF:
            raise WireError(f"OBJECTID.Uniquifier {self.uniquifier!r} does not fit a DWORD")

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read 20 bytes: GUID, u32."""
        guid, uniquifier = r.unpack(_GUID_U32, "OBJECTID")
        return cls(uuid.UUID(bytes_le=guid), uniquifier)

    def write(self, w: Writer) -> None:
        """Append the 20 bytes."""
        w.raw(_GUID_U32.pack(self.lineage.bytes_le, self.uniquifier))


@dataclass(frozen=True, slots=True)
class MulticastId(Structure):
    """MULTICAST_ID ([MS-MQMQ] 2.2.10): ``m_address`` and ``m_port`` as ULONGs; 8 bytes.

    ``address`` holds the octets a.b.c.d as ``int.from_bytes(bytes([a, b, c, d]), "little")``
    (an ``in_addr`` in network byte order, see the module docstring).
    """

    _wire_name: ClassVar[str] = "MULTICAST_ID"

    address: int
    port: int

    def __post_init__(self) -> None:
        for name in ("address", "port"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v <= 0xFFFFFFFF:
                raise WireError(f"MULTICAST_ID.m_{name} {v!r} does not fit a ULONG")

    @classmethod
    def from_text(cls, address: str, port: int) -> MulticastId:
        """From dotted text ``a.b.c.d`` and a port number."""
        try:
            octets = bytes(int(o) for o in address.split("."))
        except ValueError as exc:
            raise WireError(f"{address!r} is not a dotted IPv4 address") from exc
        if len(octets) != 4:
            raise WireError(f"{address!r} is not a dotted IPv4 address")
        return cls(int.from_bytes(octets, "little"), port)

    @property
    def address_text(self) -> str:
        """The address as ``a.b.c.d``."""
        return ".".join(str(b) for b in self.address.to_bytes(4, "little"))

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read 8 bytes: m_address, m_port."""
        address, port = r.unpack(_U32X2, "MULTICAST_ID")
        return cls(address, port)

    def write(self, w: Writer) -> None:
        """Append the 8 bytes."""
        w.raw(_U32X2.pack(self.address, self.port))


@dataclass(frozen=True, slots=True)
class DlId(Structure):
    """DL_ID ([MS-MQMQ] 2.2.9): ``m_DlGuid`` and ``m_pwzDomain`` (``None`` = NULL pointer).

    ``ndr_referent_id`` is the referent ID sent for a non-NULL domain.
    """

    _wire_name: ClassVar[str] = "DL_ID"

    dl_guid: uuid.UUID
    domain: str | None = None
    ndr_referent_id: int = DEFAULT_REFERENT_ID

    def __post_init__(self) -> None:
        if self.domain is not None:
            _check_text(self.domain, "DL_ID.m_pwzDomain")
        else:
            # A NULL pointer is sent as referent ID 0; the stored value is then meaningless.
            object.__setattr__(self, "ndr_referent_id", DEFAULT_REFERENT_ID)
        _check_referent(self.ndr_referent_id, "DL_ID.m_pwzDomain")

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the fixed part (GUID, referent ID) and, for a non-NULL pointer, the string."""
        guid, referent = cls._read_fixed(r)
        domain = _read_string(r, "DL_ID.m_pwzDomain") if referent else None
        return cls(guid, domain, referent or DEFAULT_REFERENT_ID)

    @staticmethod
    def _read_fixed(r: Reader) -> tuple[uuid.UUID, int]:
        guid, referent = r.unpack(_GUID_U32, "DL_ID")
        return uuid.UUID(bytes_le=guid), referent

    def _write_fixed(self, w: Writer) -> None:
        referent = 0 if self.domain is None else self.ndr_referent_id
        w.raw(_GUID_U32.pack(self.dl_guid.bytes_le, referent))

    def _write_deferred(self, w: Writer) -> None:
        if self.domain is not None:
            _write_string(w, self.domain)

    def write(self, w: Writer) -> None:
        """Append the fixed part and the deferred domain string."""
        self._write_fixed(w)
        self._write_deferred(w)


@dataclass(frozen=True, slots=True)
class QueueFormat(Structure):
    """QUEUE_FORMAT ([MS-MQMQ] 2.2.7): a queue's kind, suffix, flags and identifier.

    ``qft`` is m_qft; ``suffix`` and ``flags`` are the low and high nibbles of m_SuffixAndFlags
    (``flags`` is the byte value 0x00 or 0x80; leave it out to get the value the spec requires
    for ``suffix``).  Exactly the union arm ``qft`` selects is set: ``public_id`` (m_gPublicID),
    ``private_id`` (m_oPrivateID), ``direct_id`` (m_pDirectID), ``machine_id`` (m_gMachineID),
    ``connector_id`` (m_GConnectorID), ``dl_id`` (m_DlID), ``multicast_id`` (m_MulticastID) or
    ``direct_subqueue_id`` (m_pDirectSubqueueID).  Every MUST rule of the 2.2.7 suffix table is
    checked on construction and decode (WireError).
    """

    _wire_name: ClassVar[str] = "QUEUE_FORMAT"

    qft: QueueFormatType
    suffix: QueueSuffixType = QueueSuffixType.QUEUE_SUFFIX_TYPE_NONE
    flags: int = _DERIVE
    _: KW_ONLY
    public_id: uuid.UUID | None = None
    private_id: ObjectId | None = None
    direct_id: str | None = None
    machine_id: uuid.UUID | None = None
    connector_id: uuid.UUID | None = None
    dl_id: DlId | None = None
    multicast_id: MulticastId | None = None
    direct_subqueue_id: str | None = None
    reserved: int = 0
    ndr_referent_id: int = DEFAULT_REFERENT_ID
    ndr_padding: bytes = b"\x00\x00\x00"

    def __post_init__(self) -> None:
        # [MS-MQMQ] 2.2.7 m_qft: "It MUST be set to one of the values of QUEUE_FORMAT_TYPE."
        if self.qft not in QueueFormatType._value2member_map_:
            raise WireError(f"QUEUE_FORMAT.m_qft {self.qft!r} is not a QUEUE_FORMAT_TYPE (0-8)")
        qft = QueueFormatType(self.qft)
        if self.suffix not in QueueSuffixType._value2member_map_:
            raise WireError(f"QUEUE_FORMAT suffix type {self.suffix!r} is not a QUEUE_SUFFIX_TYPE (0-5)")
        suffix = QueueSuffixType(self.suffix)
        object.__setattr__(self, "qft", qft)
        object.__setattr__(self, "suffix", suffix)
        need_flags, allowed = _SUFFIX_RULES[suffix]
        if self.flags == _DERIVE:
            object.__setattr__(self, "flags", required_flags(suffix))
        flags = self.flags
        if flags not in (QUEUE_FORMAT_FLAG_NOT_SYSTEM, QUEUE_FORMAT_FLAG_SYSTEM):
            raise WireError(f"QUEUE_FORMAT flags {flags!r} are not 0x00 or 0x80")
        if need_flags is not None and flags != need_flags:
            raise WireError(f"QUEUE_FORMAT flags MUST be 0x{need_flags:02X} with {suffix.name}")
        if qft not in allowed:
            raise WireError(f"{suffix.name} is not allowed with m_qft {qft.name}")
        if not isinstance(self.reserved, int) or not 0 <= self.reserved <= 0xFFFF:
            raise WireError(f"QUEUE_FORMAT.m_reserved {self.reserved!r} does not fit a u16")
        arm = _ARM_OF[qft]
        for name in _ARMS:
            if (getattr(self, name) is not None) != (name == arm):
                state = "needs" if name == arm else "cannot have"
                raise WireError(f"QUEUE_FORMAT with m_qft {qft.name} {state} {name}")
        if arm in ("direct_id", "direct_subqueue_id"):
            _check_text(getattr(self, arm), f"QUEUE_FORMAT.{arm}")
        if not isinstance(self.ndr_padding, bytes) or len(self.ndr_padding) != 3:
            raise WireError("QUEUE_FORMAT.ndr_padding must be 3 bytes")
        _check_referent(self.ndr_referent_id, "QUEUE_FORMAT direct string")

    @property
    def suffix_and_flags(self) -> int:
        """m_SuffixAndFlags: ``flags | suffix``."""
        return self.flags | self.suffix

    @property
    def is_system(self) -> bool:
        """QUEUE_FORMAT_FLAG_SYSTEM: the queue is a system queue (journal, dead-letter)."""
        return self.flags == QUEUE_FORMAT_FLAG_SYSTEM

    @property
    def value(self) -> uuid.UUID | ObjectId | str | DlId | MulticastId | None:
        """The selected union arm (``None`` for UNKNOWN)."""
        arm = _ARM_OF[self.qft]
        return None if arm is None else getattr(self, arm)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one NDR-marshalled QUEUE_FORMAT (fixed part and deferred referent)."""
        start = r.pos
        qft, suffix_and_flags, reserved, discriminant = r.unpack(_HEAD, "QUEUE_FORMAT")
        if discriminant != qft:
            raise WireError(f"QUEUE_FORMAT union discriminant {discriminant} != m_qft {qft}", start + 4)
        if qft not in _ARM_OF:
            raise WireError(f"QUEUE_FORMAT.m_qft {qft} is not a QUEUE_FORMAT_TYPE (0-8)", start)
        suffix, flags = suffix_and_flags & 0x0F, suffix_and_flags & 0xF0
        arm = _ARM_OF[qft]
        padding = b"\x00\x00\x00"
        if arm is not None:
            padding = r.raw(3, "QUEUE_FORMAT union padding")
        kwargs: dict[str, object] = {}
        referent = DEFAULT_REFERENT_ID
        if arm in ("public_id", "machine_id", "connector_id"):
            kwargs[arm] = r.guid(f"QUEUE_FORMAT.{arm}")
        elif arm == "private_id":
            kwargs[arm] = ObjectId.read(r)
        elif arm == "multicast_id":
            kwargs[arm] = MulticastId.read(r)
        elif arm == "dl_id":
            guid, dl_referent = DlId._read_fixed(r)
            domain = _read_string(r, "DL_ID.m_pwzDomain") if dl_referent else None
            kwargs[arm] = DlId(guid, domain, dl_referent or DEFAULT_REFERENT_ID)
        elif arm is not None:  # direct_id, direct_subqueue_id
            referent = r.u32("QUEUE_FORMAT string referent ID")
            if referent == 0:
                raise WireError(f"QUEUE_FORMAT.{arm} is a NULL pointer", r.pos - 4)
            kwargs[arm] = _read_string(r, f"QUEUE_FORMAT.{arm}")
        try:
            return cls(
                qft,
                suffix,
                flags,
                reserved=reserved,
                ndr_referent_id=referent,
                ndr_padding=padding,
                **kwargs,  # type: ignore[arg-type]
            )
        except WireError as exc:
            raise WireError(exc.message, start) from None

    def write(self, w: Writer) -> None:
        """Append the NDR form."""
        w.raw(_HEAD.pack(self.qft, self.flags | self.suffix, self.reserved, self.qft))
        arm = _ARM_OF[self.qft]
        if arm is None:
            return
        w.raw(self.ndr_padding)
        value = getattr(self, arm)
        if isinstance(value, uuid.UUID):
            w.raw(value.bytes_le)
        elif isinstance(value, ObjectId | MulticastId | DlId):
            value.write(w)
        else:
            w.raw(_U32.pack(self.ndr_referent_id))
            _write_string(w, value)

    # -- conversions to and from text ---------------------------------------------------------

    @classmethod
    def from_format_name(cls, fn: FormatName) -> QueueFormat:
        """The QUEUE_FORMAT for a single format name (digest D1.8 mapping).

        A multiple-element name has one QUEUE_FORMAT per element (``fn.elements``); passing the
        list itself raises FormatNameError (MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION).
        """
        from pymsmq.wire import format_name as f  # format_name imports this module

        suffix = fn.suffix
        if isinstance(fn, f.PublicFormatName):
            return cls(_T.QUEUE_FORMAT_TYPE_PUBLIC, suffix, public_id=fn.queue_id)
        if isinstance(fn, f.PrivateFormatName):
            oid = ObjectId(fn.computer_id, fn.queue_number)
            return cls(_T.QUEUE_FORMAT_TYPE_PRIVATE, suffix, private_id=oid)
        if isinstance(fn, f.DirectFormatName):
            if fn.subqueue is not None:
                return cls(_T.QUEUE_FORMAT_TYPE_SUBQUEUE, suffix, direct_subqueue_id=fn.direct_id)
            return cls(_T.QUEUE_FORMAT_TYPE_DIRECT, suffix, direct_id=fn.format_direct_id(False))
        if isinstance(fn, f.MachineFormatName):
            return cls(_T.QUEUE_FORMAT_TYPE_MACHINE, suffix, machine_id=fn.machine_id)
        if isinstance(fn, f.ConnectorFormatName):
            return cls(_T.QUEUE_FORMAT_TYPE_CONNECTOR, suffix, connector_id=fn.connector_id)
        if isinstance(fn, f.DistributionListFormatName):
            return cls(_T.QUEUE_FORMAT_TYPE_DL, suffix, dl_id=DlId(fn.dl_id, fn.domain))
        if isinstance(fn, f.MulticastFormatName):
            mid = MulticastId.from_text(fn.address, fn.port)
            return cls(_T.QUEUE_FORMAT_TYPE_MULTICAST, suffix, multicast_id=mid)
        raise FormatNameError(
            f"{fn} names more than one queue; convert each of its elements",
            HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION,
        )

    def to_format_name(self) -> FormatName:
        """The format name this QUEUE_FORMAT describes; FormatNameError if it names none."""
        from pymsmq.wire import format_name as f  # format_name imports this module

        qft, suffix = self.qft, self.suffix
        if qft == _T.QUEUE_FORMAT_TYPE_PUBLIC and self.public_id is not None:
            return f.PublicFormatName(self.public_id, suffix)
        if qft == _T.QUEUE_FORMAT_TYPE_PRIVATE and self.private_id is not None:
            oid = self.private_id
            return f.PrivateFormatName(oid.lineage, oid.uniquifier, suffix)
        if qft == _T.QUEUE_FORMAT_TYPE_MACHINE and self.machine_id is not None:
            return f.MachineFormatName(self.machine_id, suffix)
        if qft == _T.QUEUE_FORMAT_TYPE_CONNECTOR and self.connector_id is not None:
            return f.ConnectorFormatName(self.connector_id, suffix)
        if qft == _T.QUEUE_FORMAT_TYPE_DL and self.dl_id is not None:
            return f.DistributionListFormatName(self.dl_id.dl_guid, self.dl_id.domain or None)
        if qft == _T.QUEUE_FORMAT_TYPE_MULTICAST and self.multicast_id is not None:
            mid = self.multicast_id
            return f.MulticastFormatName(mid.address_text, mid.port)
        if qft == _T.QUEUE_FORMAT_TYPE_SUBQUEUE and self.direct_subqueue_id is not None:
            # [MS-MQMQ] 2.2.7: "MUST conform to the ABNF for DirectName and contain the ... Subqueue".
            fn = f.FormatName.parse_direct_id(_strip_direct(self.direct_subqueue_id))
            if fn.subqueue is None:
                raise FormatNameError(f"m_pDirectSubqueueID {self.direct_subqueue_id!r} has no subqueue")
            return fn
        if qft == _T.QUEUE_FORMAT_TYPE_DIRECT and self.direct_id is not None:
            return _direct_to_format_name(_strip_direct(self.direct_id), suffix)
        raise FormatNameError("a QUEUE_FORMAT of type UNKNOWN names no queue")


def _strip_direct(text: str) -> str:
    return text[7:] if text[:7].upper() == "DIRECT=" else text


def _direct_to_format_name(text: str, suffix: QueueSuffixType) -> FormatName:
    from pymsmq.wire import format_name as f  # format_name imports this module

    if suffix == _S.QUEUE_SUFFIX_TYPE_SUBQUEUE:  # pragma: no cover - excluded by the suffix table
        raise FormatNameError("a SUBQUEUE suffix needs m_qft SUBQUEUE")
    try:
        fn = f.FormatName.parse_direct_id(text)
    except FormatNameError:
        fn = None  # e.g. "OS:srv\SYSTEM$": the token lives in the suffix nibble
    if fn is not None and fn.subqueue is not None:
        raise FormatNameError(f"m_pDirectID {text!r} has a subqueue; that needs m_qft SUBQUEUE")
    if fn is not None and fn.suffix == suffix:
        return fn
    if fn is not None and fn.suffix != _S.QUEUE_SUFFIX_TYPE_NONE:
        raise FormatNameError(f"m_pDirectID {text!r} disagrees with suffix {suffix.name}")
    if suffix == _S.QUEUE_SUFFIX_TYPE_NONE:
        return f.FormatName.parse_direct_id(text)  # raises the parse error
    token = {1: "JOURNAL", 2: "DEADLETTER", 3: "DEADXACT"}[suffix]
    return f.FormatName.parse_direct_id(f"{text};{token}")
