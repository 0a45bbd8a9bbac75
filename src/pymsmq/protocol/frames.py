"""The frame header of the pymsmq client protocol (docs/protocol.md, "Frames").

Every frame is a 16-byte header followed by ``length`` payload bytes::

    offset size field        value
    0      2    magic        0x4D 0x51 ("MQ")
    2      1    version      0x01 (the framing version; the protocol version is negotiated)
    3      1    frame_type   FrameType
    4      2    op           Op of a REQUEST/RESPONSE/ERROR frame; 0 in the other frames
    6      2    flags        reserved: MUST be 0
    8      4    request_id   chosen by the client, non-zero, echoed by the answer; 0 in the other frames
    12     4    length       payload bytes that follow (at most the negotiated max_payload)

All integers little-endian.  ``FrameHeader.decode`` checks everything that can be checked from the
16 bytes alone, so that an oversized or foreign frame is refused before its payload is buffered.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.protocol.handshake import MAX_PAYLOAD
from pymsmq.wire._buffer import Reader, Writer

__all__ = [
    "FRAME_HEADER_SIZE",
    "FRAME_MAGIC",
    "FRAME_VERSION",
    "FrameHeader",
    "FrameType",
    "encode_frame",
]

FRAME_HEADER_SIZE: Final = 16
FRAME_MAGIC: Final = b"MQ"
FRAME_VERSION: Final = 1

_HEADER: Final = struct.Struct("<2sBBHHII")


class FrameType(IntEnum):
    """FrameHeader.frame_type."""

    CLIENT_HELLO = 0x01
    SERVER_HELLO = 0x02
    REQUEST = 0x03
    RESPONSE = 0x04
    ERROR = 0x05
    GOODBYE = 0x06


_TYPES: Final = {int(t): t for t in FrameType}
#: Frame types that answer or carry a request: they have an op and a non-zero request id.
_WITH_REQUEST: Final = frozenset({FrameType.REQUEST, FrameType.RESPONSE, FrameType.ERROR})


@dataclass(frozen=True, slots=True)
class FrameHeader:
    """The 16-byte frame header; construction and ``decode`` enforce the per-type rules."""

    frame_type: FrameType
    length: int = 0
    op: int = 0
    request_id: int = 0
    flags: int = 0
    version: int = FRAME_VERSION
    magic: bytes = FRAME_MAGIC

    def __post_init__(self) -> None:
        if self.magic != FRAME_MAGIC:
            raise WireError(
                f"frame magic {self.magic!r} is not b'MQ' (not a pymsmq client-protocol frame)", 0
            )
        if self.version != FRAME_VERSION:
            raise WireError(f"frame version {self.version} is not {FRAME_VERSION}", 2)
        kind = _TYPES.get(self.frame_type)
        if kind is None:
            raise WireError(f"unknown frame type {self.frame_type!r}", 3)
        if self.flags != 0:
            raise WireError(f"frame flags 0x{self.flags:04X}: reserved bits MUST be 0", 6)
        if not 0 <= self.length <= MAX_PAYLOAD:
            raise WireError(f"frame length {self.length} exceeds the maximum {MAX_PAYLOAD}", 12)
        if kind in _WITH_REQUEST:
            if not 0 < self.op <= 0xFFFF:
                raise WireError(f"{kind.name} frame with op {self.op}", 4)
            if not 0 < self.request_id <= 0xFFFF_FFFF:
                raise WireError(f"{kind.name} frame with request id {self.request_id}", 8)
        elif self.op != 0 or self.request_id != 0:
            raise WireError(f"{kind.name} frame MUST have op 0 and request id 0", 4)
        if kind is not self.frame_type:
            object.__setattr__(self, "frame_type", kind)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read and check a header at the reader's position."""
        r.need(FRAME_HEADER_SIZE, "frame header")
        magic, version, kind, op, flags, request_id, length = _HEADER.unpack_from(r.data, r.pos)
        r.pos += FRAME_HEADER_SIZE
        return cls(kind, length, op, request_id, flags, version, magic)

    def write(self, w: Writer) -> None:
        """Append the 16 header bytes."""
        w.buf += _HEADER.pack(
            self.magic, self.version, self.frame_type, self.op, self.flags, self.request_id, self.length
        )

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        """Decode exactly 16 bytes."""
        r = Reader(data)
        header = cls.read(r)
        if r.pos != r.end:
            raise WireError(f"{r.end - r.pos} trailing bytes after the frame header", r.pos)
        return header

    def encode(self) -> bytes:
        """The 16 header bytes."""
        return _HEADER.pack(
            self.magic, self.version, self.frame_type, self.op, self.flags, self.request_id, self.length
        )


def encode_frame(frame_type: FrameType, payload: bytes, op: int = 0, request_id: int = 0) -> bytes:
    """Header + payload.  Raises ``WireError`` when the header rules are broken (e.g. too long)."""
    return FrameHeader(frame_type, len(payload), op, request_id).encode() + payload
