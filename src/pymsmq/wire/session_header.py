"""SessionHeader ([MS-MQMQ] 2.2.20.4): the 16-byte session acknowledgement block.

It is present iff BaseHeader.Flags.SH is set: alone in a SessionAck packet ([MS-MQQB] 2.2.6) or
piggy-backed as the last header of a UserMessage.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer

__all__ = ["DEFAULT_WINDOW_SIZE", "SESSION_HEADER_SIZE", "SessionHeader"]

SESSION_HEADER_SIZE: Final = 16
# [MS-MQMQ] 2.2.20.4: "WindowSize ... SHOULD be set to 0x0040"; range 0x0001 to 0xFFFF.
DEFAULT_WINDOW_SIZE: Final = 0x0040

_LAYOUT: Final = struct.Struct("<HHIHHHH")


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """Session-level acknowledgement counters ([MS-MQMQ] 2.2.20.4)."""

    ack_sequence_number: int = 0
    recoverable_msg_ack_seq_number: int = 0
    recoverable_msg_ack_flags: int = 0
    user_msg_sequence_number: int = 0
    recoverable_msg_seq_number: int = 0
    window_size: int = DEFAULT_WINDOW_SIZE
    reserved: int = 0

    def acknowledged_recoverable(self) -> list[int]:
        """Recoverable sequence numbers this header acknowledges as persisted.

        [MS-MQMQ] 2.2.20.4: bit k of RecoverableMsgAckFlags acknowledges message number
        RecoverableMsgAckSeqNumber + k (a 32-message window; numbers wrap at 16 bits).
        """
        base = self.recoverable_msg_ack_seq_number
        flags = self.recoverable_msg_ack_flags
        return [(base + k) & 0xFFFF for k in range(32) if flags >> k & 1]

    @classmethod
    def read(cls, r: Reader) -> Self:
        start = r.pos
        r.need(SESSION_HEADER_SIZE, "SessionHeader")
        fields = _LAYOUT.unpack_from(r.data, start)
        r.pos = start + SESSION_HEADER_SIZE
        if fields[5] == 0:
            raise WireError("SessionHeader.WindowSize MUST be in 0x0001..0xFFFF", start + 12)
        return cls(*fields)

    def write(self, w: Writer) -> None:
        if not 1 <= self.window_size <= 0xFFFF:
            raise WireError("SessionHeader.WindowSize MUST be in 0x0001..0xFFFF")
        try:
            w.raw(
                _LAYOUT.pack(
                    self.ack_sequence_number,
                    self.recoverable_msg_ack_seq_number,
                    self.recoverable_msg_ack_flags,
                    self.user_msg_sequence_number,
                    self.recoverable_msg_seq_number,
                    self.window_size,
                    self.reserved,
                )
            )
        except struct.error as exc:
            raise WireError(f"SessionHeader field out of range: {exc}") from exc

    @classmethod
    def decode(cls, data: bytes) -> Self:
        r = Reader(data)
        value = cls.read(r)
        if r.remaining:
            raise WireError(f"{r.remaining} trailing bytes after SessionHeader", r.pos)
        return value

    def encode(self) -> bytes:
        w = Writer()
        self.write(w)
        return w.getvalue()
