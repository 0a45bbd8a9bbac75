"""``decode_packet``: identify and decode any MSMQ packet by the [MS-MQQB] 3.1.5.1.1 rules.

| packet               | rule                                                                   |
|----------------------|------------------------------------------------------------------------|
| EstablishConnection  | BaseHeader.Flags.IN = 1 and InternalHeader.Flags.PT = 0x2              |
| ConnectionParameters | IN = 1 and PT = 0x3                                                    |
| SessionAck           | IN = 1 and SH = 1 and PT = 0x1                                         |
| OrderAck             | IN = 0; destination ``order_queue$``; label "QM Ordering Ack";        |
|                      | MessageSize 0x24; class MQMSG_CLASS_ORDER_ACK                          |
| FinalAck             | IN = 0; destination ``order_queue$``; label "QM Ordering Ack";        |
|                      | class >= 0x4000                                                        |
| UserMessage          | IN = 0 (every other message class, admin acks and reports included)    |
| Ping (UDP 3527)      | no BaseHeader: 24 bytes with Signature 0x5548 at offset 2 ([MS-MQQB] 2.2.7) |

Every packet value has ``encode()``; ``decode_packet(x).encode() == x`` for well-formed input.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, TypeAlias

from pymsmq.errors import WireError
from pymsmq.wire.base_header import BASE_HEADER_SIGNATURE, BASE_HEADER_SIZE, BaseHeader, BaseHeaderFlags
from pymsmq.wire.internal_packets import (
    ConnectionParameters,
    EstablishConnection,
    SessionAck,
    decode_internal_packet,
)
from pymsmq.wire.message_class import MessageClass
from pymsmq.wire.order_ack import (
    ORDER_QUEUE_PRIVATE_ID,
    FinalAckBody,
    OrderAckBody,
    OrderPacketKind,
    classify_order_packet,
    is_order_queue_direct_name,
)
from pymsmq.wire.packet_types import DirectQueueFormatName, PrivateQueueFormatNameId, QueueFormat
from pymsmq.wire.ping import PING_SIGNATURE, PING_SIZE, PingPacket
from pymsmq.wire.user_message import UserMessage

__all__ = ["FinalAck", "OrderAck", "Packet", "decode_packet", "is_order_queue"]

_SIGNATURES: Final = struct.Struct("<2xH I")


@dataclass(frozen=True, slots=True)
class OrderAck:
    """An OrderAck ([MS-MQQB] 2.2.4): a UserMessage to ``order_queue$`` whose body is an OrderAckBody."""

    message: UserMessage
    body: OrderAckBody

    @property
    def base_header(self) -> BaseHeader:
        return self.message.base_header

    def encode(self) -> bytes:
        return self.message.encode()


@dataclass(frozen=True, slots=True)
class FinalAck:
    """A FinalAck ([MS-MQQB] 2.2.5): a UserMessage to ``order_queue$`` whose body is a FinalAckBody."""

    message: UserMessage
    body: FinalAckBody

    @property
    def base_header(self) -> BaseHeader:
        return self.message.base_header

    def encode(self) -> bytes:
        return self.message.encode()


Packet: TypeAlias = (
    UserMessage | EstablishConnection | ConnectionParameters | SessionAck | OrderAck | FinalAck | PingPacket
)


def is_order_queue(queue: QueueFormat | None) -> bool:
    """True when a UserHeader queue field addresses the order queue ([MS-MQQB] 2.2.4: private queue 4)."""
    if isinstance(queue, PrivateQueueFormatNameId):
        return queue.private_queue_identifier == ORDER_QUEUE_PRIVATE_ID
    if isinstance(queue, DirectQueueFormatName):
        return is_order_queue_direct_name(queue.direct_format_name)
    return False


def _classify_user_message(msg: UserMessage) -> Packet:
    mph = msg.message_properties_header
    kind = classify_order_packet(
        base_header_flags=msg.base_header.flags,
        destination_is_order_queue=is_order_queue(msg.user_header.destination_queue),
        label=mph.label or "",
        message_size=mph.message_size,
        message_class=mph.message_class,
    )
    if kind is OrderPacketKind.ORDER_ACK:
        return OrderAck(msg, OrderAckBody.decode(mph.body))
    if kind is OrderPacketKind.FINAL_ACK:
        return FinalAck(msg, FinalAckBody.decode(mph.body))
    return msg


def decode_packet(data: bytes | bytearray | memoryview) -> Packet:
    """Decode one whole packet (exactly its bytes), choosing the kind by the spec's rules.

    Raises ``WireError`` for anything that is not a well-formed MSMQ packet.
    """
    data = bytes(data)
    if len(data) < 8:
        raise WireError(f"{len(data)} bytes are too few for any MSMQ packet", 0)
    ping_signature, base_signature = _SIGNATURES.unpack_from(data, 0)
    if base_signature != BASE_HEADER_SIGNATURE:
        if ping_signature == PING_SIGNATURE and len(data) == PING_SIZE:
            return PingPacket.decode(data)
        raise WireError("neither a BaseHeader (Signature 'LIOR') nor a Ping packet (Signature 0x5548)", 0)
    if len(data) < BASE_HEADER_SIZE:
        raise WireError(f"truncated BaseHeader: {len(data)} of 16 bytes", 0)
    if data[2] & BaseHeaderFlags.IN:
        return decode_internal_packet(data)
    msg = UserMessage.decode(data)
    message_class = msg.message_properties_header.message_class
    # Only these classes can be an OrderAck (0x00FF) or a FinalAck (>= 0x4000): skip the rest cheaply.
    if message_class == MessageClass.MQMSG_CLASS_ORDER_ACK or message_class >= 0x4000:
        return _classify_user_message(msg)
    return msg
