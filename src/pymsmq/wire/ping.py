"""The UDP Ping Packet ([MS-MQQB] 2.1.2, 2.2.7): 24 bytes, no BaseHeader, request and response alike.

An initiator may probe an acceptor's UDP port 3527 before opening a TCP 1801 session; the acceptor
echoes the Cookie and the RC flag and says in RF whether it would refuse a session.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from enum import IntFlag
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import NULL_GUID

__all__ = ["PING_PORT", "PING_SIGNATURE", "PING_SIZE", "PingFlags", "PingPacket"]

PING_SIZE: Final = 24
# [MS-MQQB] 2.2.7: "Signature (2 bytes): ... MUST be set to 0x5548" (bytes 48 55 on the wire).
PING_SIGNATURE: Final = 0x5548
# [MS-MQQB] 2.1.2: the acceptor listens for Ping Requests on UDP port 3527.
PING_PORT: Final = 3527

# Flags, Signature, Cookie, QMGuid.
_LAYOUT: Final = struct.Struct("<HHI16s")


class PingFlags(IntFlag):
    """Ping Packet Flags ([MS-MQQB] 2.2.7); the other 14 bits are unused, "MUST be ignored on receipt"."""

    RC = 0x0001  # the initiator is a client OS (neither WinServer nor WinEnt); echoed in the response
    RF = 0x0002  # response only: the acceptor would refuse a session now


@dataclass(frozen=True, slots=True)
class PingPacket:
    """A Ping Request or Ping Response ([MS-MQQB] 2.2.7).

    ``flags`` keeps the whole 16-bit word: Windows fills the unused bits with garbage (frame 1 sends
    0x7D01, frame 2 answers 0xB295), which a byte-exact re-encode must reproduce.
    """

    flags: int = 0
    signature: int = PING_SIGNATURE
    cookie: int = 0
    qm_guid: uuid.UUID = NULL_GUID

    @classmethod
    def request(cls, cookie: int, qm_guid: uuid.UUID, *, client: bool = False) -> Self:
        """A Ping Request ([MS-MQQB] 3.1.7.6): the initiator's PingCookie and QM GUID; RC for a client OS."""
        return cls(PingFlags.RC if client else 0, PING_SIGNATURE, cookie, qm_guid)

    def response(self, qm_guid: uuid.UUID, *, refuse: bool = False) -> PingPacket:
        """The Ping Response to this request ([MS-MQQB] 3.1.7.7).

        RC echoes the request's RC, Cookie echoes its Cookie, QMGuid is the acceptor's, and RF is set
        exactly when the acceptor would refuse a session.
        """
        flags = (self.flags & PingFlags.RC) | (PingFlags.RF if refuse else 0)
        return PingPacket(int(flags), PING_SIGNATURE, self.cookie, qm_guid)

    @property
    def client(self) -> bool:
        """Flags.RC: the initiator is not a server-class OS."""
        return bool(self.flags & PingFlags.RC)

    @property
    def refuses(self) -> bool:
        """Flags.RF: the acceptor would refuse a session."""
        return bool(self.flags & PingFlags.RF)

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode exactly one 24-byte datagram.

        [MS-MQQB] 3.1.7.7: "If the Request.Signature field is not 0x5548, the protocol MUST ignore the
        packet" -- a wrong signature is a WireError, which the caller turns into "ignore".
        """
        if len(data) != PING_SIZE:
            raise WireError(f"a Ping Packet is {PING_SIZE} bytes, got {len(data)}", min(len(data), PING_SIZE))
        flags, signature, cookie, guid = _LAYOUT.unpack_from(data)
        if signature != PING_SIGNATURE:
            raise WireError(f"Ping Packet Signature is 0x{signature:04X}, MUST be 0x5548", 2)
        return cls(flags, signature, cookie, uuid.UUID(bytes_le=guid))

    def encode(self) -> bytes:
        """The 24 bytes of this datagram."""
        if self.signature != PING_SIGNATURE:
            raise WireError(f"Ping Packet Signature MUST be 0x5548, not {self.signature!r}")
        try:
            return _LAYOUT.pack(self.flags, self.signature, self.cookie, self.qm_guid.bytes_le)
        except struct.error as exc:
            raise WireError(f"Ping Packet field out of range: {exc}") from exc
