"""One-pass fast paths of the SEND_MANY / RECEIVE_MANY blobs (docs/protocol.md 11).

``decode_for_send_list`` (server: a SEND_MANY MESSAGE_LIST of express simple packets, decoded in
place), ``decode_sent_ids`` (client: SEND_RESULTS of a batch sent without errors) and
``decode_plain_at`` (client: a received packet of the plain shape ``fast_packet.encode_plain``
writes).  Each gives what the general codecs give, or None when the input is not its shape (the
caller then uses the general codec, which also reports malformed input); tests compare both.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final

from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol.fast_packet import decode_for_send_at
from pymsmq.wire.base_header import BASE_HEADER_SIGNATURE, BASE_HEADER_VERSION, MAX_PACKET_SIZE

__all__ = ["decode_for_send_list", "decode_plain_at", "decode_plain_for_send_at", "decode_sent_ids"]

_U32: Final = struct.Struct("<I")
# A sent message's SEND_RESULTS entry (batch_ops.send_result: hresult 0, PROPID_M_MSGID
# VT_VECTOR_UI1 of 20 bytes, PROPID_M_SENTTIME VT_UI4, empty text; [MS-MQCN] 2.2.3 PROPVALUE
# layouts), with the 20-byte id split in its lineage GUID and its uniquifier.
_SEND_OK_IDS: Final = struct.Struct("<IIIHI16sIIHIH")
_PROPID_M_MSGID: Final = 2
_PROPID_M_SENTTIME: Final = 31
_VT_VECTOR_UI1: Final = 0x1011
_VT_UI4: Final = 0x0013
_SEND_OK_RUNS: Final = struct.Struct("<18s16sI6sI2s")
_SEND_OK_HEAD: Final = struct.pack("<IIIHI", 0, 2, _PROPID_M_MSGID, _VT_VECTOR_UI1, 20)
_SEND_OK_MIDDLE: Final = struct.pack("<IH", _PROPID_M_SENTTIME, _VT_UI4)
_SEND_OK_UNITS: Final = bytes(2)
_new: Final = object.__new__
_set_lineage: Final = ObjectId.__dict__["lineage"].__set__
_set_uniquifier: Final = ObjectId.__dict__["uniquifier"].__set__


def decode_for_send_list(data: bytes, limit: int) -> tuple[list[Message], list[bytes | None]] | None:
    """A SEND_MANY MESSAGE_LIST of express simple packets, in one pass: the messages and packets.

    For a list that ``batch_ops.decode_messages`` accepts, whose every entry has no properties, a packet of
    at most ``limit`` bytes that ``fast_packet.decode_for_send`` takes and a message that is not
    recoverable: the messages ``decode_for_send`` gives for the packets and, for each, its packet
    when canonical (else None).  None for anything else (malformed included: ``batch_ops.decode_messages``
    then decides).  Packets are read in place (``decode_for_send_at``: its checks include those of
    ``batch_ops._entry_packet``).
    """
    end = len(data)
    if end < 4:
        return None
    (count,) = _U32.unpack_from(data, 0)
    if count * 8 > end - 4:
        return None
    messages: list[Message] = []
    packets: list[bytes | None] = []
    add = messages.append
    keep = packets.append
    unpack = _U32.unpack_from
    pos = 4
    for _ in range(count):
        if pos + 4 > end:
            return None
        (n,) = unpack(data, pos)
        start = pos + 4
        pos = start + n + 4
        if pos > end or n > limit or unpack(data, pos - 4)[0]:  # no room, too large, or properties
            return None
        decoded = decode_plain_for_send_at(data, start, n) or decode_for_send_at(data, start, n)
        if decoded is None:
            return None
        m, canonical = decoded
        if m.delivery:
            return None
        add(m)
        keep(data[start : start + n] if canonical else None)
    return (messages, packets) if pos == end else None


def decode_sent_ids(data: bytes) -> list[tuple[bytes, int, int]] | None:
    """For SEND_RESULTS whose every entry is ``send_result``'s shape with hresult 0 (a batch sent
    without errors): each message's (id lineage GUID bytes_le, id uniquifier, sent time); None for
    anything else (``batch_ops.decode_send_facts`` then decides).

    The same values as ``batch_ops.decode_send_facts`` gives (``mid[:16]``, ``mid[16:]`` as a u32, ``sent``).
    """
    end = len(data)
    size = _SEND_OK_IDS.size
    if end < 4 or end != 4 + _U32.unpack_from(data, 0)[0] * size:
        return None
    out: list[tuple[bytes, int, int]] = []
    append = out.append
    # _SEND_OK_IDS with its constant runs (hresult .. id length, the sent time's propid and type,
    # the empty text) read as bytes: three compares per entry.
    for head, lineage, ordinal, middle, sent, units in _SEND_OK_RUNS.iter_unpack(memoryview(data)[4:]):
        if head != _SEND_OK_HEAD or middle != _SEND_OK_MIDDLE or units != _SEND_OK_UNITS:
            return None
        append((lineage, ordinal, sent))
    return out


# The simple packet header (fast_packet._HEAD, [MS-MQMQ] 2.2.19.1 BaseHeader, 2.2.19.2 UserHeader,
# 2.2.19.3 MessagePropertiesHeader) with the fields a plain message leaves at their defaults read as
# two byte runs: MessagePropertiesHeader.Flags .. ApplicationTag (offsets 64-95) and PrivacyLevel ..
# ExtensionSize (104-119).  Source and QueueManagerAddress are read as one 32-byte run.
_PLAIN_HEAD: Final = struct.Struct("<BBHIII32sIIII32sII16s")
_PLAIN_MIDDLE: Final = bytes(32)  # no flags, label, class, correlation, body type, application tag
_PLAIN_TAIL: Final = struct.pack("<IIII", 0, 0x8004, 0x6801, 0)  # privacy 0, default algorithms, no extension
_INFINITE: Final = 0xFFFFFFFF
_U_MP: Final = 0x00200000  # UserHeader.Flags.MP
#: Source GUID + zero QueueManagerAddress (32 bytes) -> the source GUID.
_SOURCES: Final[dict[bytes, uuid.UUID]] = {}


def decode_plain_at(data: bytes, start: int, n: int) -> Message | None:
    """``fast_packet.decode_simple_at(data, start, n)`` for a *plain* packet, None for any other.

    *Plain*: what ``encode_plain`` writes for a queued message: no label, extension, class,
    correlation, body type, application tag, privacy or acknowledgement flags, the default
    algorithms, journal 0, a source machine (SourceQueueManager not zero).  The message has the same
    attributes, set in the same order, as ``decode_simple_at`` gives (tests compare both).
    """
    if n < 120:
        return None
    (
        version,
        _reserved,
        bflags,
        signature,
        packet_size,
        ttrq,
        addresses,
        ttbr,
        sent_time,
        message_id,
        uflags,
        middle,
        message_size,
        alloc_size,
        tail,
    ) = _PLAIN_HEAD.unpack_from(data, start)
    if (
        version != BASE_HEADER_VERSION
        or signature != BASE_HEADER_SIGNATURE
        or packet_size != n
        or n > MAX_PACKET_SIZE
        or bflags & ~7
        or (uflags != _U_MP and uflags != _U_MP | 0x20)
        or middle != _PLAIN_MIDDLE
        or tail != _PLAIN_TAIL
        or alloc_size != message_size
        or (message_size + 123) & ~3 != n  # the body ends the packet (plus 4-padding)
    ):
        return None
    source = _SOURCES.get(addresses)
    if source is None:
        if addresses[16:] != bytes(16) or addresses[:16] == bytes(16):
            return None
        if len(_SOURCES) >= 1024:
            _SOURCES.clear()
        source = _SOURCES[addresses] = uuid.UUID(bytes_le=addresses[:16])
    m: Message = Message.__new__(Message)
    m.body = data[start + 120 : start + 120 + message_size]
    m.priority = bflags
    if ttrq != _INFINITE:
        m.max_time_to_reach_queue = ttrq
    if ttbr != _INFINITE:
        m.max_time_to_receive = ttbr
    if uflags & 0x20:
        m.delivery = 1
    m.source_machine_guid = source
    if message_id:
        # object_id(source, message_id), inline (the slot setters of ObjectId).
        oid: ObjectId = _new(ObjectId)
        _set_lineage(oid, source)
        _set_uniquifier(oid, message_id)
        m.id = oid
    if sent_time:
        m.sent_time = float(sent_time)
    return m


# _PLAIN_HEAD with QueueManagerAddress apart; SourceQueueManager, SentTime and MessageID (set by
# the sending queue manager, ignored here) skipped as pad bytes.
_SEND_HEAD: Final = struct.Struct("<BBHIII16x16sI8xI32sII16s")
_ZERO_GUID: Final = bytes(16)
_PADDING: Final = (b"", b"\x00\x00\x00", b"\x00\x00", b"\x00")


def decode_plain_for_send_at(data: bytes, start: int, n: int) -> tuple[Message, bool] | None:
    """``fast_packet.decode_for_send_at(data, start, n)`` for a *plain* packet (``decode_plain_at``'s
    shape, any SourceQueueManager), None for any other (then ``decode_for_send_at`` decides).

    The same message (same attributes, same order) and the same canonical flag (tests compare both).
    """
    if n < 120:
        return None
    (
        version,
        reserved,
        bflags,
        signature,
        packet_size,
        ttrq,
        qm_address,
        ttbr,
        uflags,
        middle,
        message_size,
        alloc_size,
        tail,
    ) = _SEND_HEAD.unpack_from(data, start)
    end = 120 + message_size
    if (
        version != BASE_HEADER_VERSION
        or signature != BASE_HEADER_SIGNATURE
        or packet_size != n
        or n > MAX_PACKET_SIZE
        or bflags & ~7
        or (uflags != _U_MP and uflags != _U_MP | 0x20)
        or qm_address != _ZERO_GUID
        or middle != _PLAIN_MIDDLE
        or tail != _PLAIN_TAIL
        or alloc_size != message_size
        or (end + 3) & ~3 != n  # the body ends the packet (plus 4-padding)
    ):
        return None
    m: Message = Message.__new__(Message)
    m.body = data[start + 120 : start + end]
    m.priority = bflags
    if ttrq != _INFINITE:
        m.max_time_to_reach_queue = ttrq
    if ttbr != _INFINITE:
        m.max_time_to_receive = ttbr
    if uflags & 0x20:
        m.delivery = 1
    # Canonical (what encode_simple writes, fast_packet.decode_for_send): reserved byte 0, zero padding.
    return m, not reserved and (end == n or data[start + end : start + n] == _PADDING[end & 3])
