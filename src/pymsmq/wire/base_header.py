"""BaseHeader ([MS-MQMQ] 2.2.19.1): the 16 bytes at the start of every MSMQ packet on port 1801."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntFlag
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer

__all__ = [
    "BASE_HEADER_SIGNATURE",
    "BASE_HEADER_SIZE",
    "BASE_HEADER_VERSION",
    "INFINITE",
    "MAX_PACKET_SIZE",
    "BaseHeader",
    "BaseHeaderFlags",
]

BASE_HEADER_SIZE: Final = 16
# [MS-MQMQ] 2.2.19.1: "VersionNumber (1 byte): ... MUST be set to 0x10."
BASE_HEADER_VERSION: Final = 0x10
# [MS-MQMQ] 2.2.19.1: "Signature (4 bytes): ... MUST be set to 0x524F494C" (ASCII "LIOR" on the wire).
BASE_HEADER_SIGNATURE: Final = 0x524F494C
# [MS-MQMQ] 2.2.19.1: "PacketSize ... MUST be less than or equal to 0x00400000."
MAX_PACKET_SIZE: Final = 0x00400000
# [MS-MQMQ] 2.2.19.1: TimeToReachQueue "0xFFFFFFFF ... indicates an infinite timeout".
INFINITE: Final = 0xFFFFFFFF

_LAYOUT: Final = struct.Struct("<BBHIII")


class BaseHeaderFlags(IntFlag):
    """BaseHeader.Flags bits ([MS-MQMQ] 2.2.19.1); diagram bit n is mask ``1 << n``."""

    PR = 0x0007  # priority 0..7 (a 3-bit field, read with ``priority``)
    IN = 0x0008  # internal packet ([MS-MQQB] EstablishConnection, ConnectionParameters, SessionAck)
    SH = 0x0010  # a SessionHeader is present
    DH = 0x0020  # a DebugHeader is present
    X9 = 0x0040  # reserved
    X8 = 0x0080  # reserved
    TR = 0x0100  # message tracing (requires DH)


@dataclass(frozen=True, slots=True)
class BaseHeader:
    """The first 16 bytes of every packet.

    ``flags`` keeps the whole 16-bit word, reserved bits included (real traffic sets them: the
    CVE-2023-21554 tool sends 0x1003), so that decode/encode is byte exact.  ``reserved`` is
    likewise kept as sent ("any value on send; MUST ignore on receipt").
    """

    flags: int = 0
    packet_size: int = BASE_HEADER_SIZE
    time_to_reach_queue: int = INFINITE
    version_number: int = BASE_HEADER_VERSION
    reserved: int = 0
    signature: int = BASE_HEADER_SIGNATURE

    @property
    def priority(self) -> int:
        """BaseHeader.Flags.PR: the message priority 0..7."""
        return self.flags & 0x7

    @property
    def internal(self) -> bool:
        return bool(self.flags & BaseHeaderFlags.IN)

    @property
    def session_header(self) -> bool:
        return bool(self.flags & BaseHeaderFlags.SH)

    @property
    def debug_header(self) -> bool:
        return bool(self.flags & BaseHeaderFlags.DH)

    @property
    def trace(self) -> bool:
        return bool(self.flags & BaseHeaderFlags.TR)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read and validate a BaseHeader at the reader's position."""
        start = r.pos
        r.need(BASE_HEADER_SIZE, "BaseHeader")
        version, reserved, flags, signature, packet_size, ttrq = _LAYOUT.unpack_from(r.data, start)
        r.pos = start + BASE_HEADER_SIZE
        if version != BASE_HEADER_VERSION:
            raise WireError(f"BaseHeader.VersionNumber is 0x{version:02X}, MUST be 0x10", start)
        if signature != BASE_HEADER_SIGNATURE:
            raise WireError(f"BaseHeader.Signature is 0x{signature:08X}, MUST be 0x524F494C", start + 4)
        if packet_size > MAX_PACKET_SIZE:
            raise WireError(f"BaseHeader.PacketSize {packet_size} exceeds 0x00400000", start + 8)
        if packet_size < BASE_HEADER_SIZE:
            raise WireError(f"BaseHeader.PacketSize {packet_size} is smaller than the header", start + 8)
        return cls(flags, packet_size, ttrq, version, reserved, signature)

    def write(self, w: Writer) -> None:
        try:
            w.raw(
                _LAYOUT.pack(
                    self.version_number,
                    self.reserved,
                    self.flags,
                    self.signature,
                    self.packet_size,
                    self.time_to_reach_queue,
                )
            )
        except struct.error as exc:
            raise WireError(f"BaseHeader field out of range: {exc}") from exc

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode exactly one BaseHeader from the first 16 bytes of ``data``."""
        return cls.read(Reader(data))

    def encode(self) -> bytes:
        w = Writer()
        self.write(w)
        return w.getvalue()
