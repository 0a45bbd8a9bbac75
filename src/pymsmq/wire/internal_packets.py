"""[MS-MQQB] internal packets: InternalHeader (2.2.1), ConnectionParameters (2.2.2), EstablishConnection
(2.2.3) and SessionAck (2.2.6).

Internal packets are the session-control packets of a TCP 1801 session.  Each one is a BaseHeader with
Flags.IN set, a 4-byte InternalHeader whose PT field names the packet, and a fixed-size body, so every
packet here has exactly one valid size.  Decoding enforces the MUST rules that make a packet what it
claims to be (IN, SH, DH/TR, PT, CS, PacketSize, TimeToReachQueue, field ranges); reserved fields,
reserved flag bits and padding are kept as sent so that ``decode(x).encode() == x`` for real traffic.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import NULL_GUID, Reader, Writer
from pymsmq.wire._structure import Structure
from pymsmq.wire.base_header import (
    BASE_HEADER_SIGNATURE,
    BASE_HEADER_SIZE,
    BASE_HEADER_VERSION,
    INFINITE,
    BaseHeader,
    BaseHeaderFlags,
)
from pymsmq.wire.session_header import SESSION_HEADER_SIZE, SessionHeader

__all__ = [
    "CONNECTION_PARAMETERS_SIZE",
    "ESTABLISH_CONNECTION_PADDING",
    "ESTABLISH_CONNECTION_SIZE",
    "INTERNAL_HEADER_SIZE",
    "OPERATING_SYSTEM_RE",
    "SESSION_ACK_SIZE",
    "ConnectionParameters",
    "EstablishConnection",
    "InternalHeader",
    "InternalHeaderFlags",
    "InternalPacket",
    "OperatingSystemFlags",
    "PacketType",
    "SessionAck",
    "decode_internal_packet",
]

INTERNAL_HEADER_SIZE: Final = 4
# [MS-MQQB] 2.2.3: BaseHeader (16) + InternalHeader (4) + EstablishConnectionHeader (552).
ESTABLISH_CONNECTION_SIZE: Final = 572
# [MS-MQQB] 2.2.2: BaseHeader (16) + InternalHeader (4) + ConnectionParametersHeader (12).
CONNECTION_PARAMETERS_SIZE: Final = 32
# [MS-MQQB] 2.2.6: BaseHeader (16) + InternalHeader (4) + SessionHeader (16).  Unlike a UserMessage, the
# SessionAck's PacketSize counts its SessionHeader (frame 8, [MS-MQQB] 4.1.8: PacketSize 0x24).
SESSION_ACK_SIZE: Final = BASE_HEADER_SIZE + INTERNAL_HEADER_SIZE + SESSION_HEADER_SIZE
# [MS-MQQB] 2.2.3.1: Padding (512 bytes); the acceptor fills it with 0x5A, and Windows initiators do too.
ESTABLISH_CONNECTION_PADDING: Final = b"\x5a" * 512
# [MS-MQQB] 2.2.3.1: "RE (1 byte): This field is reserved. MUST be set to 0x10."
OPERATING_SYSTEM_RE: Final = 0x10
# The priority real peers put in internal packets (all of [MS-MQQB] 4.1: BaseHeader.Flags 0x000B / 0x001B).
_INTERNAL_PRIORITY: Final = 3

# [MS-MQQB] 2.2.2.1 valid ranges.
_RECOVERABLE_ACK_TIMEOUT_MIN: Final = 0x000001F4
_ACK_TIMEOUT_MIN: Final = 0x00004E20
_TIMEOUT_MAX: Final = 0x0001D4C0

_BASE: Final = struct.Struct("<BBHIII")
_INTERNAL: Final = struct.Struct("<HH")
# InternalHeader + EstablishConnectionHeader: Reserved, Flags, ClientGuid, ServerGuid, TimeStamp,
# OperatingSystem, Reserved, Padding.
_EC_BODY: Final = struct.Struct("<HH16s16sIHH512s")
# InternalHeader + ConnectionParametersHeader: Reserved, Flags, RecoverableAckTimeout, AckTimeout,
# Reserved, WindowSize.
_CP_BODY: Final = struct.Struct("<HHIIHH")


class PacketType(IntEnum):
    """InternalHeader.Flags.PT ([MS-MQQB] 2.2.1)."""

    SESSION_ACK = 0x1
    ESTABLISH_CONNECTION = 0x2
    CONNECTION_PARAMETERS = 0x3


class InternalHeaderFlags(IntFlag):
    """InternalHeader.Flags bits ([MS-MQQB] 2.2.1); diagram bit n is mask ``1 << n``."""

    PT = 0x000F  # packet type, a 4-bit field (read with ``InternalHeader.packet_type``)
    CS = 0x0010  # connection state: set = the connection is refused
    # bits 5..15 (X5..X15): reserved, "SHOULD NOT be set when sent and MUST be ignored on receipt"


_PT_MASK: Final = int(InternalHeaderFlags.PT)
_CS_BIT: Final = int(InternalHeaderFlags.CS)


class OperatingSystemFlags(IntFlag):
    """EstablishConnectionHeader.OperatingSystem bits ([MS-MQQB] 2.2.3.1); frame 3 confirms them (0x0310)."""

    RE = 0x00FF  # reserved byte, MUST be 0x10
    SE = 0x0100  # session flag: set when no Ping Request was sent while creating this session
    OS = 0x0200  # the initiator runs a server-class operating system
    QS = 0x0400  # the transport supports Quality of Service (informational)
    # bits 11..15: unused; kept as sent


def _check_internal_base(bh: BaseHeader, size: int, session_header: bool, what: str) -> None:
    """MUST rules shared by every internal packet, checked on decode and on encode."""
    flags = bh.flags
    # [MS-MQMQ] 2.2.19.1 IN: "MUST be set if the packet is an EstablishConnection Packet ...,
    # a ConnectionParameters Packet ..., or a SessionAck Packet".
    if not flags & BaseHeaderFlags.IN:
        raise WireError(f"{what}: BaseHeader.Flags.IN MUST be set", 2)
    # [MS-MQQB] 3.1.5.1.1: a SessionAck has IN and SH set.  [MS-MQMQ] 2.2.19.1 SH: "If set, the packet MUST
    # contain a SessionHeader"; EstablishConnection and ConnectionParameters have none (fixed layouts).
    if bool(flags & BaseHeaderFlags.SH) != session_header:
        state = "set" if session_header else "clear"
        raise WireError(f"{what}: BaseHeader.Flags.SH MUST be {state}", 2)
    # [MS-MQMQ] 2.2.19.1 DH: "MUST NOT be set if the BaseHeader is part of a packet other than a UserMessage
    # Packet"; TR: "If this field is set, the DH field MUST also be set" -- so neither in an internal packet.
    if flags & (BaseHeaderFlags.DH | BaseHeaderFlags.TR):
        raise WireError(f"{what}: BaseHeader.Flags.DH/TR MUST NOT be set in an internal packet", 2)
    if bh.packet_size != size:
        raise WireError(f"{what}: BaseHeader.PacketSize is {bh.packet_size}, MUST be {size}", 8)
    # [MS-MQMQ] 2.2.19.1: "When the BaseHeader is not part of a UserMessage Packet, this value MUST be set
    # to 0xFFFFFFFF."  Every real internal frame of [MS-MQQB] 4.1 follows this.
    if bh.time_to_reach_queue != INFINITE:
        raise WireError(f"{what}: BaseHeader.TimeToReachQueue MUST be 0xFFFFFFFF", 12)


def _read_base(data: bytes) -> BaseHeader:
    """The BaseHeader at the start of ``data`` (at least 16 bytes), with BaseHeader.read's checks."""
    version, reserved, flags, signature, packet_size, ttrq = _BASE.unpack_from(data)
    if version != BASE_HEADER_VERSION or signature != BASE_HEADER_SIGNATURE:
        return BaseHeader.read(Reader(data))  # raises the precise WireError
    return BaseHeader(flags, packet_size, ttrq, version, reserved, signature)


def _internal_base(size: int, session_header: bool, priority: int) -> BaseHeader:
    if not 0 <= priority <= 7:
        raise WireError(f"priority {priority} is outside 0..7")
    flags = priority | BaseHeaderFlags.IN | (BaseHeaderFlags.SH if session_header else 0)
    return BaseHeader(flags=int(flags), packet_size=size)


def _pack_base(bh: BaseHeader) -> bytes:
    try:
        return _BASE.pack(
            bh.version_number, bh.reserved, bh.flags, bh.signature, bh.packet_size, bh.time_to_reach_queue
        )
    except struct.error as exc:
        raise WireError(f"BaseHeader field out of range: {exc}") from exc


@dataclass(frozen=True, slots=True)
class InternalHeader(Structure):
    """The 4-byte header after the BaseHeader of every internal packet ([MS-MQQB] 2.2.1).

    ``flags`` keeps the whole 16-bit word (reserved bits X5..X15 included) and ``reserved`` the first
    u16 as sent ("MUST be set to zero when sent and MUST be ignored on receipt").
    """

    reserved: int = 0
    flags: int = PacketType.SESSION_ACK

    @classmethod
    def create(cls, packet_type: PacketType, connection_refused: bool = False) -> Self:
        """A header for ``packet_type`` with CS set when ``connection_refused``."""
        return cls(0, int(packet_type) | (_CS_BIT if connection_refused else 0))

    @property
    def packet_type(self) -> PacketType:
        """Flags.PT; decoding guarantees it is one of the three defined values."""
        return PacketType(self.flags & _PT_MASK)

    @property
    def connection_refused(self) -> bool:
        """Flags.CS: the acceptor refuses the connection."""
        return bool(self.flags & _CS_BIT)

    def _validate(self, offset: int = 0) -> None:
        # [MS-MQQB] 2.2.1 PT: "Any value not specified in the preceding table MUST be treated as an error
        # by closing the session."
        if not 0 <= self.flags <= 0xFFFF or not 0 <= self.reserved <= 0xFFFF:
            raise WireError("InternalHeader field does not fit a u16", offset)
        if self.flags & _PT_MASK not in PacketType._value2member_map_:
            raise WireError(f"InternalHeader.Flags.PT is {self.flags & 0xF}, MUST be 1, 2 or 3", offset + 2)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read an InternalHeader; an undefined PT is a WireError."""
        start = r.pos
        reserved, flags = r.unpack(_INTERNAL, "InternalHeader")
        value = cls(reserved, flags)
        value._validate(start)
        return value

    def write(self, w: Writer) -> None:
        """Append the 4 bytes."""
        self._validate()
        w.raw(_INTERNAL.pack(self.reserved, self.flags))


def _check_internal_header(ih: InternalHeader, expected: PacketType, cs_allowed: bool, what: str) -> None:
    ih._validate(BASE_HEADER_SIZE)
    if ih.flags & _PT_MASK != expected:
        raise WireError(f"{what}: InternalHeader.Flags.PT is {ih.flags & 0xF}, MUST be {int(expected)}", 18)
    # [MS-MQQB] 2.2.1 CS: "MUST NOT be set in any packet other than an EstablishConnection Packet or a
    # ConnectionParameters Packet."
    if not cs_allowed and ih.flags & _CS_BIT:
        raise WireError(f"{what}: InternalHeader.Flags.CS MUST NOT be set", 18)


def _check_size(data: bytes, size: int, what: str) -> None:
    if len(data) < size:
        raise WireError(f"truncated {what}: need {size} bytes, {len(data)} given", len(data))
    if len(data) > size:
        raise WireError(f"{len(data) - size} trailing bytes after {what}", size)


def _u32_in(value: int, low: int, high: int, name: str, offset: int | None) -> None:
    if not low <= value <= high:
        raise WireError(f"{name} {value} is outside 0x{low:X}..0x{high:X}", offset)


@dataclass(frozen=True, slots=True)
class EstablishConnection:
    """EstablishConnection Packet ([MS-MQQB] 2.2.3): 572 bytes, request and response alike.

    The EstablishConnectionHeader (2.2.3.1) fields are attributes of the packet.  ``padding`` keeps the
    512 padding bytes as sent (a request "MAY" carry anything; a response MUST be 0x5A throughout).
    """

    base_header: BaseHeader
    internal_header: InternalHeader
    client_guid: uuid.UUID
    server_guid: uuid.UUID
    time_stamp: int
    operating_system: int = 0x0110  # RE=0x10, SE=1 (no Ping Request sent)
    reserved: int = 0
    padding: bytes = field(default=ESTABLISH_CONNECTION_PADDING, repr=False)

    @classmethod
    def build(
        cls,
        client_guid: uuid.UUID,
        server_guid: uuid.UUID = NULL_GUID,
        time_stamp: int = 0,
        *,
        ping_sent: bool = False,
        server_os: bool = False,
        qos: bool = False,
        connection_refused: bool = False,
        priority: int = _INTERNAL_PRIORITY,
    ) -> Self:
        """A consistent packet: IN set, PT=2, PacketSize 572, TimeToReachQueue infinite, 0x5A padding.

        [MS-MQQB] 3.1.5.2.3: OperatingSystem.SE "MUST be set to 0 if a Ping Request ... was sent;
        otherwise, it MUST be set to 1".
        """
        os_flags = OPERATING_SYSTEM_RE
        if not ping_sent:
            os_flags |= OperatingSystemFlags.SE
        if server_os:
            os_flags |= OperatingSystemFlags.OS
        if qos:
            os_flags |= OperatingSystemFlags.QS
        return cls(
            _internal_base(ESTABLISH_CONNECTION_SIZE, False, priority),
            InternalHeader.create(PacketType.ESTABLISH_CONNECTION, connection_refused),
            client_guid,
            server_guid,
            time_stamp,
            int(os_flags),
        )

    @property
    def connection_refused(self) -> bool:
        """InternalHeader.Flags.CS."""
        return self.internal_header.connection_refused

    @property
    def ping_sent(self) -> bool:
        """OperatingSystem.SE clear: a Ping Request was sent while creating this session."""
        return not self.operating_system & OperatingSystemFlags.SE

    @property
    def server_os(self) -> bool:
        """OperatingSystem.OS: the initiator runs a server-class OS."""
        return bool(self.operating_system & OperatingSystemFlags.OS)

    @property
    def qos(self) -> bool:
        """OperatingSystem.QS: the transport supports Quality of Service."""
        return bool(self.operating_system & OperatingSystemFlags.QS)

    def _validate(self) -> None:
        _check_internal_base(self.base_header, ESTABLISH_CONNECTION_SIZE, False, "EstablishConnection")
        _check_internal_header(
            self.internal_header, PacketType.ESTABLISH_CONNECTION, True, "EstablishConnection"
        )
        if self.operating_system & OperatingSystemFlags.RE != OPERATING_SYSTEM_RE:
            raise WireError("EstablishConnectionHeader.OperatingSystem.RE MUST be 0x10", 56)

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode exactly one 572-byte EstablishConnection packet."""
        _check_size(data, ESTABLISH_CONNECTION_SIZE, "EstablishConnection")
        bh = _read_base(data)
        reserved_ih, flags_ih, client, server, ts, os_flags, reserved, padding = _EC_BODY.unpack_from(
            data, BASE_HEADER_SIZE
        )
        value = cls(
            bh,
            InternalHeader(reserved_ih, flags_ih),
            uuid.UUID(bytes_le=client),
            uuid.UUID(bytes_le=server),
            ts,
            os_flags,
            reserved,
            padding,
        )
        value._validate()
        return value

    def encode(self) -> bytes:
        """The 572 bytes of this packet."""
        self._validate()
        if len(self.padding) != 512:
            raise WireError(f"EstablishConnectionHeader.Padding is {len(self.padding)} bytes, MUST be 512")
        ih = self.internal_header
        try:
            body = _EC_BODY.pack(
                ih.reserved,
                ih.flags,
                self.client_guid.bytes_le,
                self.server_guid.bytes_le,
                self.time_stamp,
                self.operating_system,
                self.reserved,
                self.padding,
            )
        except struct.error as exc:
            raise WireError(f"EstablishConnection field out of range: {exc}") from exc
        return _pack_base(self.base_header) + body


@dataclass(frozen=True, slots=True)
class ConnectionParameters:
    """ConnectionParameters Packet ([MS-MQQB] 2.2.2): 32 bytes; ConnectionParametersHeader fields inline."""

    base_header: BaseHeader
    internal_header: InternalHeader
    recoverable_ack_timeout: int
    ack_timeout: int
    reserved: int = 0
    window_size: int = 64

    @classmethod
    def build(
        cls,
        recoverable_ack_timeout: int,
        ack_timeout: int,
        window_size: int = 64,
        *,
        connection_refused: bool = False,
        priority: int = _INTERNAL_PRIORITY,
    ) -> Self:
        """A consistent packet: IN set, PT=3, PacketSize 32, TimeToReachQueue infinite."""
        value = cls(
            _internal_base(CONNECTION_PARAMETERS_SIZE, False, priority),
            InternalHeader.create(PacketType.CONNECTION_PARAMETERS, connection_refused),
            recoverable_ack_timeout,
            ack_timeout,
            0,
            window_size,
        )
        value._validate()
        return value

    @property
    def connection_refused(self) -> bool:
        """InternalHeader.Flags.CS."""
        return self.internal_header.connection_refused

    def _validate(self) -> None:
        _check_internal_base(self.base_header, CONNECTION_PARAMETERS_SIZE, False, "ConnectionParameters")
        _check_internal_header(
            self.internal_header, PacketType.CONNECTION_PARAMETERS, True, "ConnectionParameters"
        )
        # [MS-MQQB] 2.2.2.1: "RecoverableAckTimeout ... has a valid range from 0x000001F4 to 0x0001D4C0";
        # "AckTimeout ... has a valid range from 0x00004E20 to 0x0001D4C0"; WindowSize 0x0000..0xFFFF.
        _u32_in(
            self.recoverable_ack_timeout,
            _RECOVERABLE_ACK_TIMEOUT_MIN,
            _TIMEOUT_MAX,
            "ConnectionParametersHeader.RecoverableAckTimeout",
            20,
        )
        _u32_in(self.ack_timeout, _ACK_TIMEOUT_MIN, _TIMEOUT_MAX, "ConnectionParametersHeader.AckTimeout", 24)

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode exactly one 32-byte ConnectionParameters packet."""
        _check_size(data, CONNECTION_PARAMETERS_SIZE, "ConnectionParameters")
        bh = _read_base(data)
        reserved_ih, flags_ih, rec_timeout, timeout, reserved, window = _CP_BODY.unpack_from(
            data, BASE_HEADER_SIZE
        )
        value = cls(bh, InternalHeader(reserved_ih, flags_ih), rec_timeout, timeout, reserved, window)
        value._validate()
        return value

    def encode(self) -> bytes:
        """The 32 bytes of this packet."""
        self._validate()
        ih = self.internal_header
        try:
            body = _CP_BODY.pack(
                ih.reserved,
                ih.flags,
                self.recoverable_ack_timeout,
                self.ack_timeout,
                self.reserved,
                self.window_size,
            )
        except struct.error as exc:
            raise WireError(f"ConnectionParameters field out of range: {exc}") from exc
        return _pack_base(self.base_header) + body


@dataclass(frozen=True, slots=True)
class SessionAck:
    """SessionAck Packet ([MS-MQQB] 2.2.6): BaseHeader (IN, SH) + InternalHeader (PT=1) + SessionHeader."""

    base_header: BaseHeader
    internal_header: InternalHeader
    session_header: SessionHeader

    @classmethod
    def build(cls, session_header: SessionHeader, *, priority: int = _INTERNAL_PRIORITY) -> Self:
        """A consistent packet around ``session_header``: PacketSize 36, TimeToReachQueue infinite."""
        return cls(
            _internal_base(SESSION_ACK_SIZE, True, priority),
            InternalHeader.create(PacketType.SESSION_ACK),
            session_header,
        )

    def _validate(self) -> None:
        _check_internal_base(self.base_header, SESSION_ACK_SIZE, True, "SessionAck")
        _check_internal_header(self.internal_header, PacketType.SESSION_ACK, False, "SessionAck")

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode exactly one 36-byte SessionAck packet."""
        _check_size(data, SESSION_ACK_SIZE, "SessionAck")
        bh = _read_base(data)
        reserved_ih, flags_ih = _INTERNAL.unpack_from(data, BASE_HEADER_SIZE)
        value = cls(bh, InternalHeader(reserved_ih, flags_ih), SessionHeader.read(Reader(data, 20)))
        value._validate()
        return value

    def encode(self) -> bytes:
        """The 36 bytes of this packet."""
        self._validate()
        w = Writer()
        w.raw(_pack_base(self.base_header))
        self.internal_header.write(w)
        self.session_header.write(w)
        return w.getvalue()


InternalPacket = EstablishConnection | ConnectionParameters | SessionAck


def decode_internal_packet(data: bytes) -> InternalPacket:
    """Decode one whole internal packet, choosing its type by InternalHeader.Flags.PT ([MS-MQQB] 3.1.5.1.1).

    ``data`` must be exactly the packet (as ``PacketFramer`` yields it) and its BaseHeader must have IN set.
    """
    r = Reader(data)
    bh = BaseHeader.read(r)
    if not bh.flags & BaseHeaderFlags.IN:
        raise WireError("not an internal packet: BaseHeader.Flags.IN is clear", 2)
    ih = InternalHeader.read(r)
    packet_type = ih.flags & _PT_MASK
    if packet_type == PacketType.ESTABLISH_CONNECTION:
        return EstablishConnection.decode(data)
    if packet_type == PacketType.CONNECTION_PARAMETERS:
        return ConnectionParameters.decode(data)
    return SessionAck.decode(data)
