"""OrderAck and FinalAck ([MS-MQQB] 2.2.4, 2.2.5): the transactional acknowledgements.

Both packets are ordinary UserMessage packets addressed to the private queue ``order_queue$`` of the
queue manager that must receive them, labelled "QM Ordering Ack", whose 36-byte message body is an
``OrderAckBody`` (2.2.4.1) or a ``FinalAckBody`` (2.2.5.1).  This module declares the two bodies and the
identification rules of [MS-MQQB] 3.1.5.1.1 over already-decoded header values (plain ints and strings),
so that it does not depend on the UserMessage codec.

TxSequenceID ([MS-MQMQ] 2.2.18.1.2) is carried as one unsigned 64-bit int: the spec compares it "as a
64-bit unsigned integer with Ordinal being the low-order bytes and TimeStamp being the high-order bytes",
which is exactly the little-endian u64 of its 8 bytes.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from enum import Enum
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire.base_header import BaseHeaderFlags
from pymsmq.wire.message_class import MessageClass

__all__ = [
    "ACK_BODY_SIZE",
    "ORDER_ACK_LABEL",
    "ORDER_QUEUE_NAME",
    "ORDER_QUEUE_PRIVATE_ID",
    "FinalAckBody",
    "OrderAckBody",
    "OrderPacketKind",
    "classify_order_packet",
    "is_order_queue_direct_name",
    "order_queue_direct_name",
    "tx_sequence_id",
]

# [MS-MQQB] 2.2.4: MessagePropertiesHeader.MessageSize "MUST be set to 0x00000024"; both bodies are 36 bytes.
ACK_BODY_SIZE: Final = 0x24
# [MS-MQQB] 2.2.4 / 2.2.5: MessagePropertiesHeader.Label MUST be "QM Ordering Ack".
ORDER_ACK_LABEL: Final = "QM Ordering Ack"
ORDER_QUEUE_NAME: Final = "order_queue$"
# [MS-MQQB] 2.2.4: with UserHeader.Flags.DQ = 0x3 the DestinationQueue is a PrivateQueueFormatNameId whose
# PrivateQueueIdentifier is 0x00000004.
ORDER_QUEUE_PRIVATE_ID: Final = 0x00000004

_U32_MAX: Final = 0xFFFFFFFF
# TxSequenceID (as a u64), TxSequenceNumber, TxPreviousSequenceNumber, Reserved (20 bytes).
_ORDER_ACK: Final = struct.Struct("<QII20s")
# TxSequenceID (as a u64), TxSequenceNumber, TxPreviousSequenceNumber, SourceGUID, MessageID.
_FINAL_ACK: Final = struct.Struct("<QII16sI")
# BaseHeader flag bits an Order/FinalAck must have clear: "All bits in the BaseHeader.Flags field MUST be set
# to 0" ([MS-MQQB] 3.1.5.1.1), read together with [MS-MQMQ] 2.2.19.1, where the reserved bits "MUST be
# ignored on receipt" and SH marks a piggy-backed session acknowledgement that any UserMessage may carry
# ([MS-MQQB] 3.1.7.11).  So PR, IN, DH and TR must be 0.
_ORDER_FLAGS_MUST_BE_CLEAR: Final = int(
    BaseHeaderFlags.PR | BaseHeaderFlags.IN | BaseHeaderFlags.DH | BaseHeaderFlags.TR
)


def tx_sequence_id(ordinal: int, timestamp: int) -> int:
    """The u64 form of a TxSequenceID ([MS-MQMQ] 2.2.18.1.2): Ordinal low 32 bits, TimeStamp high 32 bits."""
    if not (0 <= ordinal <= _U32_MAX and 0 <= timestamp <= _U32_MAX):
        raise WireError("TxSequenceID Ordinal and TimeStamp are u32 values")
    return timestamp << 32 | ordinal


def _check_sequence(seq_id: int, number: int, previous: int, what: str) -> None:
    if not 0 <= seq_id <= 0xFFFFFFFFFFFFFFFF:
        raise WireError(f"{what}.TxSequenceID does not fit 8 bytes", 0)
    # [MS-MQQB] 2.2.4.1 / 2.2.5.1: TxSequenceNumber "has a valid range from 0x00000001 to 0xFFFFFFFF";
    # TxPreviousSequenceNumber "has a valid range from 0x00000000 to 0xFFFFFFFE".
    if not 1 <= number <= _U32_MAX:
        raise WireError(f"{what}.TxSequenceNumber {number} is outside 0x00000001..0xFFFFFFFF", 8)
    if not 0 <= previous <= 0xFFFFFFFE:
        raise WireError(f"{what}.TxPreviousSequenceNumber {previous} is outside 0..0xFFFFFFFE", 12)


@dataclass(frozen=True, slots=True)
class OrderAckBody:
    """OrderAck Body ([MS-MQQB] 2.2.4.1): the 36-byte message body of an OrderAck packet.

    ``reserved`` keeps the 20 reserved bytes as sent ("SHOULD be set to ... zeros"; Windows may send
    garbage, note <17>; "MUST be ignored on receipt").
    """

    tx_sequence_id: int
    tx_sequence_number: int
    tx_previous_sequence_number: int
    reserved: bytes = bytes(20)

    @classmethod
    def for_number(cls, tx_sequence_id: int, tx_sequence_number: int) -> Self:
        """The body acknowledging ``tx_sequence_number`` (TxPreviousSequenceNumber = number - 1)."""
        return cls(tx_sequence_id, tx_sequence_number, tx_sequence_number - 1)

    def _validate(self) -> None:
        _check_sequence(
            self.tx_sequence_id, self.tx_sequence_number, self.tx_previous_sequence_number, "OrderAck"
        )
        # [MS-MQQB] 2.2.4.1: TxPreviousSequenceNumber "MUST be set to (TxSequenceNumber - 1)".
        if self.tx_previous_sequence_number != self.tx_sequence_number - 1:
            raise WireError("OrderAck.TxPreviousSequenceNumber MUST be TxSequenceNumber - 1", 12)

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode exactly 36 bytes."""
        if len(data) != ACK_BODY_SIZE:
            raise WireError(f"an OrderAck body is 36 bytes, got {len(data)}", min(len(data), ACK_BODY_SIZE))
        value = cls(*_ORDER_ACK.unpack(data))
        value._validate()
        return value

    def encode(self) -> bytes:
        """The 36 bytes of this body."""
        self._validate()
        if len(self.reserved) != 20:
            raise WireError(f"OrderAck.Reserved is {len(self.reserved)} bytes, MUST be 20")
        return _ORDER_ACK.pack(
            self.tx_sequence_id, self.tx_sequence_number, self.tx_previous_sequence_number, self.reserved
        )


@dataclass(frozen=True, slots=True)
class FinalAckBody:
    """FinalAck Body ([MS-MQQB] 2.2.5.1): the 36-byte message body of a FinalAck packet.

    ``message_id`` is the acknowledged message's UserHeader.MessageID (the uniquifier of its OBJECTID);
    with ``source_guid`` it names the message.
    """

    tx_sequence_id: int
    tx_sequence_number: int
    tx_previous_sequence_number: int
    source_guid: uuid.UUID
    message_id: int

    def _validate(self) -> None:
        _check_sequence(
            self.tx_sequence_id, self.tx_sequence_number, self.tx_previous_sequence_number, "FinalAck"
        )
        if not 0 <= self.message_id <= _U32_MAX:
            raise WireError(f"FinalAck.MessageID {self.message_id} does not fit a u32", 32)

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode exactly 36 bytes."""
        if len(data) != ACK_BODY_SIZE:
            raise WireError(f"a FinalAck body is 36 bytes, got {len(data)}", min(len(data), ACK_BODY_SIZE))
        seq_id, number, previous, guid, message_id = _FINAL_ACK.unpack(data)
        value = cls(seq_id, number, previous, uuid.UUID(bytes_le=guid), message_id)
        value._validate()
        return value

    def encode(self) -> bytes:
        """The 36 bytes of this body."""
        self._validate()
        return _FINAL_ACK.pack(
            self.tx_sequence_id,
            self.tx_sequence_number,
            self.tx_previous_sequence_number,
            self.source_guid.bytes_le,
            self.message_id,
        )


class OrderPacketKind(Enum):
    """What ``classify_order_packet`` found."""

    ORDER_ACK = "OrderAck"
    FINAL_ACK = "FinalAck"


def order_queue_direct_name(address: str, protocol: str = "TCP") -> str:
    r"""The DirectFormatName of the order queue at ``address`` ([MS-MQQB] 2.2.4 ABNF ``orderQueueName``).

    ``order_queue_direct_name("10.0.0.1")`` is ``TCP:10.0.0.1\PRIVATE$\order_queue$`` (on the wire the
    ``DIRECT=`` prefix is absent).  ``protocol`` is "TCP" (IPv4/IPv6 address) or "SPX" (network.node).
    """
    if protocol not in ("TCP", "SPX"):
        raise WireError(f"order queue protocol must be TCP or SPX, not {protocol!r}")
    if not address or "\\" in address:
        raise WireError(f"bad order queue address {address!r}")
    return f"{protocol}:{address}\\PRIVATE$\\{ORDER_QUEUE_NAME}"


def is_order_queue_direct_name(direct_format_name: str) -> bool:
    r"""True when a DirectFormatName names an order queue: ``TCP:<addr>\PRIVATE$\order_queue$`` (or SPX).

    Format names compare case-insensitively in MSMQ, so ``tcp:...\private$\ORDER_QUEUE$`` matches too.
    The trailing NUL of the wire string, if still present, is ignored.
    """
    name = direct_format_name.rstrip("\x00")
    protocol, sep, rest = name.partition(":")
    if not sep or protocol.upper() not in ("TCP", "SPX"):
        return False
    address, sep, queue = rest.partition("\\")
    return bool(address) and bool(sep) and queue.lower() == f"private$\\{ORDER_QUEUE_NAME}"


def classify_order_packet(
    *,
    base_header_flags: int,
    destination_is_order_queue: bool,
    label: str,
    message_size: int,
    message_class: int,
) -> OrderPacketKind | None:
    """Tell an OrderAck or FinalAck from other UserMessages ([MS-MQQB] 3.1.5.1.1), or ``None``.

    Takes the already-decoded values: BaseHeader.Flags, whether UserHeader.DestinationQueue addresses the
    local ``order_queue$`` (a PrivateQueueFormatNameId with ``ORDER_QUEUE_PRIVATE_ID``, or a direct name for
    which ``is_order_queue_direct_name`` holds), MessagePropertiesHeader.Label (a trailing NUL is ignored),
    MessageSize and MessageClass.

    - OrderAck: flags 0, order queue, label "QM Ordering Ack", MessageSize 0x24, class MQMSG_CLASS_ORDER_ACK.
    - FinalAck: flags 0, order queue, label "QM Ordering Ack", class >= 0x4000.

    "Flags 0" tolerates the reserved bits (which [MS-MQMQ] 2.2.19.1 says MUST be ignored on receipt) and SH
    (a piggy-backed session acknowledgement, [MS-MQQB] 3.1.7.11); PR, IN, DH and TR must be 0.
    """
    if base_header_flags & _ORDER_FLAGS_MUST_BE_CLEAR or not destination_is_order_queue:
        return None
    if label.rstrip("\x00") != ORDER_ACK_LABEL:
        return None
    if message_class == MessageClass.MQMSG_CLASS_ORDER_ACK:
        return OrderPacketKind.ORDER_ACK if message_size == ACK_BODY_SIZE else None
    if message_class >= 0x4000:
        return OrderPacketKind.FINAL_ACK
    return None
