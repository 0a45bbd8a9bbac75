"""SEQUENCE_INFO ([MS-MQMQ] 2.2.5) and its flat packet form SEQUENCE_INFO (Packet) (2.2.5.1).

The value of the management properties PROPID_MGMT_QUEUE_EOD_LAST_ACK (13), _FIRST_NON_ACK (16),
_LAST_NON_ACK (17) and _NEXT_SEQ (18), carried in a VT_BLOB.  The IDL struct and the packet
layout have the same three fields in the same order; the packet form is 16 bytes, little-endian
([MS-MQMQ] 2.2.5.1: SeqID 8 bytes, SeqNo 4 bytes, PrevNo 4 bytes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar, Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure

__all__ = ["SEQUENCE_INFO", "SEQUENCE_INFO_SIZE", "SequenceInfo"]

SEQUENCE_INFO_SIZE: Final = 16

# [MS-MQMQ] 2.2.5.1: SeqID "64-bit signed integer", SeqNo and PrevNo "32-bit unsigned integer".
_LAYOUT: Final = struct.Struct("<qII")


@dataclass(frozen=True, slots=True)
class SequenceInfo(Structure):
    """Where a message sits in a transactional stream ([MS-MQMQ] 2.2.5, 2.2.5.1).

    ``seq_id`` identifies the sequence (signed 64-bit), ``seq_no`` is this message's number in
    it and ``prev_no`` the number of the message before it (both unsigned 32-bit).
    """

    _wire_name: ClassVar[str] = "SEQUENCE_INFO"

    seq_id: int = 0
    seq_no: int = 0
    prev_no: int = 0

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the 16-byte packet form."""
        seq_id, seq_no, prev_no = r.unpack(_LAYOUT, "SEQUENCE_INFO")
        return cls(seq_id, seq_no, prev_no)

    def write(self, w: Writer) -> None:
        """Append the 16-byte packet form; ``WireError`` if a field is out of range."""
        try:
            w.raw(_LAYOUT.pack(self.seq_id, self.seq_no, self.prev_no))
        except struct.error as exc:
            raise WireError(f"SEQUENCE_INFO field out of range: {exc}") from exc


SEQUENCE_INFO = SequenceInfo
