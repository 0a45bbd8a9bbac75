"""[MS-MQRR] 2.2.5 headers of the Message Packet Structure, as they also appear on TCP 1801.

* SRMPEnvelopeHeader (2.2.5.1.2.1) and CompoundMessageHeader (2.2.5.1.2.2): between DebugHeader
  and SoapHeader when UserHeader.Flags.AH is set (a message that first travelled over HTTP/SRMP).
* ExtensionHeader (2.2.5.2, 12 bytes), then SubqueueHeader (2.2.5.3, 148 bytes),
  DeadLetterHeader (2.2.5.4, variable) and ExtendedAddressHeader (2.2.5.5, 28 bytes), each present
  as ExtensionHeader.Flags says.

Real traffic (tests/vectors/queuejumper-*.bin, a public CVE-2023-21554 tool) carries SRMP
envelope, compound message and a 12-byte ExtensionHeader with Flags 0 after the
MessagePropertiesHeader of a UserMessage sent to port 1801.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure, read_padding, utf16_units, write_padding

__all__ = [
    "EXTENDED_ADDRESS_HEADER_SIZE",
    "EXTENSION_HEADER_SIZE",
    "SUBQUEUE_HEADER_SIZE",
    "AddressType",
    "CompoundMessageHeader",
    "DeadLetterHeader",
    "ExtendedAddressHeader",
    "ExtensionHeader",
    "ExtensionHeaderFlags",
    "SRMPEnvelopeHeader",
    "SubqueueHeader",
]

_ID_LEN: Final = struct.Struct("<HHI")
_COMPOUND: Final = struct.Struct("<HHIII")
_EXTENSION: Final = struct.Struct("<IIB3s")
_SUBQUEUE: Final = struct.Struct("<IIIII64s64s")
_EXT_ADDRESS: Final = struct.Struct("<IHHI16s")
_U32: Final = struct.Struct("<I")

EXTENSION_HEADER_SIZE: Final = 12
SUBQUEUE_HEADER_SIZE: Final = 148
EXTENDED_ADDRESS_HEADER_SIZE: Final = 28
_NAME_FIELD: Final = 64  # SubqueueName / TargetSubqueueName: 64 bytes, 32 WCHARs


# --------------------------------------------------------------------------------------------
# 2.2.5.1.2.1 SRMPEnvelopeHeader


@dataclass(frozen=True, slots=True)
class SRMPEnvelopeHeader(Structure):
    """The SOAP envelope of a message first sent over HTTP ([MS-MQRR] 2.2.5.1.2.1).

    DataLength counts WCHARs (the queuejumper vectors: DataLength 539 covers 1078 bytes of
    UTF-16 that end in the NUL the spec requires).  ``data`` holds all of them, terminator
    included, so any bytes re-encode exactly; ``envelope`` drops the terminator.  The header is
    padded to a 4-byte boundary (the vectors carry 2 pad bytes, ``64 00`` in one and ``00 00`` in
    the other).  A DataLength larger than what is left (e.g. 0x8000021B) is a WireError raised
    before anything is sliced or allocated.
    """

    data: str = "\x00"
    header_id: int = 0
    reserved: int = 0
    padding: bytes = b""

    @property
    def data_length(self) -> int:
        """DataLength: UTF-16 units in Data, terminator included."""
        return utf16_units(self.data)

    @property
    def envelope(self) -> str:
        """The SOAP envelope text without its terminating NUL."""
        return self.data.removesuffix("\x00")

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the header and its padding."""
        start = r.pos
        header_id, reserved, length = r.unpack(_ID_LEN, "SRMPEnvelopeHeader")
        # Reader.utf16 -> raw(2 * length) checks the length against the remaining input first.
        data = r.utf16(length, "SRMPEnvelopeHeader.Data")
        return cls(data, header_id, reserved, read_padding(r, start))

    def write(self, w: Writer) -> None:
        """Append the header and its padding."""
        start = len(w)
        raw = self.data.encode("utf-16-le", "surrogatepass")
        try:
            w.raw(_ID_LEN.pack(self.header_id, self.reserved, len(raw) >> 1))
        except struct.error as exc:
            raise WireError(f"SRMPEnvelopeHeader field out of range: {exc}") from exc
        w.raw(raw)
        write_padding(w, start, self.padding, "SRMPEnvelopeHeader")


# --------------------------------------------------------------------------------------------
# 2.2.5.1.2.2 CompoundMessageHeader

# The public CVE-2023-21554 tools use HeaderId 500 (0x01F4); [MS-MQRR] gives no value.
COMPOUND_MESSAGE_HEADER_ID: Final = 500


@dataclass(frozen=True, slots=True)
class CompoundMessageHeader(Structure):
    """The whole SRMP message, HTTP POST included ([MS-MQRR] 2.2.5.1.2.2).

    HTTPBodySize is ``len(data)`` (not stored).  MsgBodySize/MsgBodyOffset locate the message
    body inside ``data``; a body that runs past ``data`` is rejected (checked only when
    MsgBodySize is nonzero: an empty body has no meaningful offset).
    """

    data: bytes = b""
    msg_body_size: int = 0
    msg_body_offset: int = 0
    header_id: int = COMPOUND_MESSAGE_HEADER_ID
    reserved: int = 0
    padding: bytes = b""

    @property
    def http_body_size(self) -> int:
        """HTTPBodySize: bytes in Data."""
        return len(self.data)

    @property
    def message_body(self) -> bytes:
        """The message body: ``data[MsgBodyOffset : MsgBodyOffset + MsgBodySize]``."""
        if not self.msg_body_size:
            return b""
        return self.data[self.msg_body_offset : self.msg_body_offset + self.msg_body_size]

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the header and its padding."""
        start = r.pos
        header_id, reserved, http_size, body_size, body_offset = r.unpack(_COMPOUND, "CompoundMessageHeader")
        data = r.raw(http_size, "CompoundMessageHeader.Data")
        if body_size and body_offset + body_size > http_size:
            raise WireError(
                f"CompoundMessageHeader body {body_offset}+{body_size} runs past HTTPBodySize {http_size}",
                start + 8,
            )
        return cls(data, body_size, body_offset, header_id, reserved, read_padding(r, start))

    def write(self, w: Writer) -> None:
        """Append the header and its padding."""
        if self.msg_body_size and self.msg_body_offset + self.msg_body_size > len(self.data):
            raise WireError("CompoundMessageHeader: the message body runs past Data")
        start = len(w)
        try:
            w.raw(
                _COMPOUND.pack(
                    self.header_id, self.reserved, len(self.data), self.msg_body_size, self.msg_body_offset
                )
            )
        except struct.error as exc:
            raise WireError(f"CompoundMessageHeader field out of range: {exc}") from exc
        w.raw(self.data)
        write_padding(w, start, self.padding, "CompoundMessageHeader")


# --------------------------------------------------------------------------------------------
# 2.2.5.2 ExtensionHeader


class ExtensionHeaderFlags(IntFlag):
    """ExtensionHeader.Flags ([MS-MQRR] 2.2.5.2); diagram bit n is mask ``1 << n``."""

    DL = 0x01  # a DeadLetterHeader follows
    SQ = 0x02  # a SubqueueHeader follows ("MUST be set to 1")
    X2 = 0x04
    DI = 0x08  # the DeadLetterHeader's dead-letter queue is invalid
    EA = 0x10  # an ExtendedAddressHeader follows ("MUST be set to 1")
    X5 = 0x20
    X6 = 0x40
    X7 = 0x80


@dataclass(frozen=True, slots=True)
class ExtensionHeader(Structure):
    """Presence and total size of the headers after it ([MS-MQRR] 2.2.5.2): 12 bytes.

    The spec says SQ and EA "MUST be set to 1", yet the real 1801 traffic in the vectors sends
    Flags 0 with RemainingHeadersSize 0 (no header follows).  The decoder therefore reports the
    flags as they are and lets the ``has_*`` properties drive what is read next:
    SubqueueHeader, then DeadLetterHeader, then ExtendedAddressHeader (2.2.5 order).
    """

    remaining_headers_size: int = 0
    flags: int = 0
    header_size: int = EXTENSION_HEADER_SIZE
    reserved: bytes = b"\x00\x00\x00"

    @property
    def has_dead_letter_header(self) -> bool:
        """Flags.DL: a DeadLetterHeader follows."""
        return bool(self.flags & ExtensionHeaderFlags.DL)

    @property
    def has_subqueue_header(self) -> bool:
        """Flags.SQ: a SubqueueHeader follows."""
        return bool(self.flags & ExtensionHeaderFlags.SQ)

    @property
    def dead_letter_queue_invalid(self) -> bool:
        """Flags.DI (meaningful only with DL)."""
        return bool(self.flags & ExtensionHeaderFlags.DI) and self.has_dead_letter_header

    @property
    def has_extended_address_header(self) -> bool:
        """Flags.EA: an ExtendedAddressHeader follows."""
        return bool(self.flags & ExtensionHeaderFlags.EA)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the 12-byte header."""
        start = r.pos
        header_size, remaining, flags, reserved = r.unpack(_EXTENSION, "ExtensionHeader")
        # 2.2.5: "ExtensionHeader (12 bytes)"; HeaderSize "specifies the size in bytes of the
        # ExtensionHeader".
        if header_size != EXTENSION_HEADER_SIZE:
            raise WireError(f"ExtensionHeader.HeaderSize is {header_size}, MUST be 12", start)
        return cls(remaining, flags, header_size, reserved)

    def write(self, w: Writer) -> None:
        """Append the 12-byte header."""
        if self.header_size != EXTENSION_HEADER_SIZE or len(self.reserved) != 3:
            raise WireError("ExtensionHeader: HeaderSize MUST be 12 and Reserved 3 bytes")
        try:
            w.raw(_EXTENSION.pack(self.header_size, self.remaining_headers_size, self.flags, self.reserved))
        except struct.error as exc:
            raise WireError(f"ExtensionHeader field out of range: {exc}") from exc


# --------------------------------------------------------------------------------------------
# 2.2.5.3 SubqueueHeader


def _name_field(raw: bytes) -> str:
    # All 32 WCHARs, trailing NUL units dropped: "abc" plus zero fill re-encodes to the same bytes.
    return raw.decode("utf-16-le", "surrogatepass").rstrip("\x00")


def _name_bytes(name: str, what: str) -> bytes:
    raw = name.encode("utf-16-le", "surrogatepass")
    if len(raw) > _NAME_FIELD:
        raise WireError(f"SubqueueHeader.{what} is {len(raw)} bytes, the field holds 64")
    return raw + bytes(_NAME_FIELD - len(raw))


@dataclass(frozen=True, slots=True)
class SubqueueHeader(Structure):
    """Subqueue, abort/move counters and acknowledgement class ([MS-MQRR] 2.2.5.3): 148 bytes.

    The second 32-bit word packs TM (bit 0), AcknowledgementClass (bits 1-16) and 15 reserved bits
    (bits 17-31), with diagram bit n as mask ``1 << n`` as everywhere else in MSMQ.  The two names
    are 64-byte zero-filled UTF-16 fields; they are held as text without the trailing zero fill
    (``subqueue_name`` of an ordinary message is ``""``: "this header MUST be ignored if its
    SubqueueName field is an empty string").
    """

    subqueue_name: str = ""
    target_subqueue_name: str = ""
    acknowledgement_class: int = 0
    abort_counter: int = 0
    move_counter: int = 0
    last_move_time: int = 0
    tm: int = 0
    reserved: int = 0
    header_size: int = SUBQUEUE_HEADER_SIZE

    @property
    def subqueue(self) -> str:
        """SubqueueName up to its NUL terminator."""
        return self.subqueue_name.partition("\x00")[0]

    @property
    def target_subqueue(self) -> str:
        """TargetSubqueueName up to its NUL terminator."""
        return self.target_subqueue_name.partition("\x00")[0]

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the 148-byte header."""
        start = r.pos
        size, word, abort, move, last_move, name, target = r.unpack(_SUBQUEUE, "SubqueueHeader")
        if size != SUBQUEUE_HEADER_SIZE:
            raise WireError(f"SubqueueHeader.HeaderSize is {size}, MUST be 148", start)
        return cls(
            _name_field(name),
            _name_field(target),
            (word >> 1) & 0xFFFF,
            abort,
            move,
            last_move,
            word & 1,
            word >> 17,
            size,
        )

    def write(self, w: Writer) -> None:
        """Append the 148-byte header."""
        if self.header_size != SUBQUEUE_HEADER_SIZE:
            raise WireError("SubqueueHeader.HeaderSize MUST be 148")
        if not (
            0 <= self.tm <= 1 and 0 <= self.acknowledgement_class <= 0xFFFF and 0 <= self.reserved <= 0x7FFF
        ):
            raise WireError("SubqueueHeader: TM is 1 bit, AcknowledgementClass 16 bits, Reserved 15 bits")
        word = self.tm | self.acknowledgement_class << 1 | self.reserved << 17
        name = _name_bytes(self.subqueue_name, "SubqueueName")
        target = _name_bytes(self.target_subqueue_name, "TargetSubqueueName")
        try:
            w.raw(
                _SUBQUEUE.pack(
                    self.header_size,
                    word,
                    self.abort_counter,
                    self.move_counter,
                    self.last_move_time,
                    name,
                    target,
                )
            )
        except struct.error as exc:
            raise WireError(f"SubqueueHeader field out of range: {exc}") from exc


# --------------------------------------------------------------------------------------------
# 2.2.5.4 DeadLetterHeader


@dataclass(frozen=True, slots=True)
class DeadLetterHeader(Structure):
    """The application-specified dead-letter queue ([MS-MQRR] 2.2.5.4).

    HeaderSize u32 (the whole header, zero padding included) then DeadLetterPathName, a
    NUL-terminated UTF-16 path name "zero-padded to a 4-byte boundary".  HeaderSize must be a
    multiple of 4 and cover the terminator; ``padding`` keeps the bytes after the terminator
    (``b""``: zeros) and HeaderSize is computed from the name and that padding.
    """

    dead_letter_path_name: str = ""
    padding: bytes = b""

    @property
    def header_size(self) -> int:
        """HeaderSize: 4 + name + NUL, rounded up to a multiple of 4."""
        n = 4 + 2 * utf16_units(self.dead_letter_path_name) + 2
        return n + (-n & 3)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the header (its HeaderSize bytes)."""
        start = r.pos
        size = r.u32("DeadLetterHeader.HeaderSize")
        if size < 8 or size & 3:
            raise WireError(f"DeadLetterHeader.HeaderSize {size} is not a multiple of 4 of at least 8", start)
        body = r.sub(size - 4, "DeadLetterHeader.DeadLetterPathName")
        name = body.utf16z("DeadLetterHeader.DeadLetterPathName")
        pad = body.rest()
        if len(pad) > 3:
            raise WireError(
                f"DeadLetterHeader: {len(pad)} bytes after the path name exceed the padding", body.pos
            )
        return cls(name, pad if pad.strip(b"\x00") else b"")

    def write(self, w: Writer) -> None:
        """Append the header."""
        if "\x00" in self.dead_letter_path_name:
            raise WireError("DeadLetterHeader.DeadLetterPathName cannot contain NUL")
        start = len(w)
        size = self.header_size
        w.u32(size)
        w.utf16z(self.dead_letter_path_name)
        write_padding(w, start, self.padding, "DeadLetterHeader")


# --------------------------------------------------------------------------------------------
# 2.2.5.5 ExtendedAddressHeader


class AddressType(IntEnum):
    """ExtendedAddressHeader.AddressType ([MS-MQRR] 2.2.5.5)."""

    NONE = 0x0000  # ignore the header
    IP_ADDRESS_TYPE = 0x0001  # IPv4
    IPV6_ADDRESS_TYPE = 0x0006  # IPv6


@dataclass(frozen=True, slots=True)
class ExtendedAddressHeader(Structure):
    """The address of the host the message was received from ([MS-MQRR] 2.2.5.5): 28 bytes.

    ``address`` is the raw 16-byte field; ``ip_address`` interprets it by AddressType
    (None for AddressType 0, "ignore", or an unknown type, which is kept as an int).
    """

    address_type: int = AddressType.NONE
    address_length: int = 0
    address_scope: int = 0
    address: bytes = bytes(16)
    header_size: int = EXTENDED_ADDRESS_HEADER_SIZE

    @property
    def ip_address(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        """The sender host as an ``ipaddress`` value, when AddressType says IPv4 or IPv6."""
        if self.address_type == AddressType.IP_ADDRESS_TYPE:
            return ipaddress.IPv4Address(self.address[:4])
        if self.address_type == AddressType.IPV6_ADDRESS_TYPE:
            return ipaddress.IPv6Address(self.address)
        return None

    @classmethod
    def from_ip(cls, ip: ipaddress.IPv4Address | ipaddress.IPv6Address, scope: int = 0) -> Self:
        """Build the header for ``ip`` (IPv4 in the first 4 bytes, zero-filled)."""
        packed = ip.packed
        kind = AddressType.IP_ADDRESS_TYPE if ip.version == 4 else AddressType.IPV6_ADDRESS_TYPE
        return cls(kind, len(packed), scope, packed + bytes(16 - len(packed)))

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the 28-byte header."""
        start = r.pos
        size, length, kind, scope, address = r.unpack(_EXT_ADDRESS, "ExtendedAddressHeader")
        if size != EXTENDED_ADDRESS_HEADER_SIZE:
            raise WireError(f"ExtendedAddressHeader.HeaderSize is {size}, MUST be 28", start)
        return cls(kind, length, scope, address, size)

    def write(self, w: Writer) -> None:
        """Append the 28-byte header."""
        if self.header_size != EXTENDED_ADDRESS_HEADER_SIZE or len(self.address) != 16:
            raise WireError("ExtendedAddressHeader: HeaderSize MUST be 28 and Address 16 bytes")
        try:
            w.raw(
                _EXT_ADDRESS.pack(
                    self.header_size, self.address_length, self.address_type, self.address_scope, self.address
                )
            )
        except struct.error as exc:
            raise WireError(f"ExtendedAddressHeader field out of range: {exc}") from exc
