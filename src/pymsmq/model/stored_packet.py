"""``restore_message``: the message a stored packet holds, fast for the simple shape (restarts).

The queue manager stores each recoverable message as its UserMessage packet with the destination
queue in the UserHeader (``packet_mapping.packet_with_destination``), and decodes every stored
packet again when it opens.  The general decoder builds and walks every header dataclass, about
100 times the cost of ``simple_decode.decode_simple``; but ``decode_simple`` takes only packets
without a queue in the UserHeader.  ``restore_message`` therefore cuts the destination out: the
UserHeader's DestinationQueue bytes (after its 48 fixed bytes, [MS-MQMQ] 2.2.19.2), with Flags.DQ
and QueueManagerAddress cleared and PacketSize reduced, make the packet ``decode_simple`` reads,
and the destination's format name is the general mapping's text for those bytes (computed once per
distinct destination, then cached).  Any other packet takes the general decoder, so the result is
always ``packet_to_message(packet)`` (tests/model/test_stored_packet.py checks this on generated
messages and destinations).
"""

from __future__ import annotations

import struct
from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import packet_to_message
from pymsmq.model.simple_decode import decode_simple

__all__ = ["restore_message"]

_U32: Final = struct.Struct("<I")
# UserHeader fields by offset in the packet (BaseHeader is 16 bytes): QueueManagerAddress at 32,
# Flags at 60; the DestinationQueue bytes start at 64.
_QM_ADDRESS: Final = slice(32, 48)
_FLAGS_AT: Final = 60
_QUEUE_AT: Final = 64
_DQ: Final = 0x1C00  # UserHeader.Flags.DQ: the destination queue's type
# Other UserHeader.Flags fields that add bytes after the destination (AQ, RQ, CQ: ConnectorType)
# or a header of queues (MQ: MultiQueueFormat): packets that carry them take the general decoder.
_OTHER_QUEUES: Final = 0xE000 | 0x70000 | 0x400000 | 0x800000
_ZERO_GUID: Final = bytes(16)
_CACHE_LIMIT: Final = 4096
# (Flags.DQ, QueueManagerAddress, the DestinationQueue bytes) -> the destination's format name.
# (Single dict operations: safe to share between threads without a lock.)
_destinations: dict[tuple[int, bytes, bytes], str] = {}


def restore_message(packet: bytes) -> Message:
    """``packet_to_message(packet)``, fast for a simple packet with a destination queue.

    Raises what ``packet_to_message`` raises for a packet it rejects.
    """
    if len(packet) >= _QUEUE_AT + 2:
        (flags,) = _U32.unpack_from(packet, _FLAGS_AT)
        dq = (flags >> 10) & 7
        if dq and not flags & _OTHER_QUEUES:
            m = _without_destination(packet, flags, dq)
            if m is not None:
                return m
    return packet_to_message(packet)


def _queue_length(packet: bytes, dq: int) -> int:
    """Bytes of the DestinationQueue of type ``dq`` ([MS-MQMQ] 2.2.19.2 DQ), 0 for another type."""
    if dq == 3:  # PrivateQueueFormatNameId: the queue's number on the destination host
        return 4
    if dq == 5:  # PublicQueueFormatName: the queue's GUID
        return 16
    if dq == 7:  # DirectQueueFormatName: Count, the string, padding to 4 from the UserHeader start
        count = packet[_QUEUE_AT] | packet[_QUEUE_AT + 1] << 8
        return 2 + count + (-(2 + count) & 3)
    return 0


def _without_destination(packet: bytes, flags: int, dq: int) -> Message | None:
    length = _queue_length(packet, dq)
    end = _QUEUE_AT + length
    if not length or end > len(packet):
        return None
    key = (dq, packet[_QM_ADDRESS], packet[_QUEUE_AT:end])
    text = _destinations.get(key)
    if text is None:
        text = _destination(packet)
        if text is None:
            return None
        if len(_destinations) >= _CACHE_LIMIT:
            _destinations.clear()
        _destinations[key] = text
    front = bytearray(packet[:_QUEUE_AT])
    _U32.pack_into(front, 8, len(packet) - length)  # BaseHeader.PacketSize
    front[_QM_ADDRESS] = _ZERO_GUID
    _U32.pack_into(front, _FLAGS_AT, flags & ~_DQ)
    m = decode_simple(bytes(front) + packet[end:])
    if m is None:
        return None
    m.destination_queue = text
    return m


def _destination(packet: bytes) -> str | None:
    """The general mapping's format name for the destination queue of ``packet``."""
    try:
        return packet_to_message(packet).destination_queue
    except (MSMQError, ValueError):  # the general decoder raises it again for the caller
        return None
