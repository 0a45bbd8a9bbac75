"""The hot path of ``Message`` <-> UserMessage packet for the common, "simple" message shape.

A message is *simple* when the only properties it sets are the ones that live in the three
always-present headers of a UserMessage ([MS-MQMQ] 2.2.20): BaseHeader (2.2.19.1: Flags.PR,
TimeToReachQueue), UserHeader (2.2.19.2: SourceQueueManager, TimeToBeReceived, SentTime, MessageID,
Flags.DM/JN/JP/MP, no queues) and MessagePropertiesHeader (2.2.19.3: MessageClass, CorrelationID,
BodyType, ApplicationTag, PrivacyLevel, HashAlgorithm, EncryptionAlgorithm, Label, extension, body).
For those, ``encode_simple`` packs the 120 fixed bytes with ONE precompiled ``struct.Struct`` and
``decode_simple`` reads them back the same way, instead of building and walking the header
dataclasses.  Anything else (queues, acknowledgements, security, transactions, trace, SRMP, ...)
returns ``None`` and the caller uses ``pymsmq.model.packet_mapping``, the general mapping.

The contract, enforced by tests: ``encode_simple(m)`` is either None or byte-for-byte
``message_to_packet(m)`` (destination omitted), and ``decode_simple(data)`` is either None or equal
to ``packet_to_message(data)``; it returns a message only for input the general decoder accepts.
"""

from __future__ import annotations

import struct
import uuid
from codecs import utf_16_le_decode
from typing import Final

from pymsmq.model.ids import guid_bytes_le
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import SIMPLE_ATTRIBUTES
from pymsmq.model.simple_decode import (  # shared with the decoder (the model layer's half)
    _HEAD,
    _HEAD_SIZE,
    _INFINITE,
    _MAX_LABEL_LENGTH,
    _NUL2,
    _U_MP,
    _U_STRUCTURAL,
    _U_STRUCTURAL2,
    _ZERO_GUID,
    _ZERO_ID,
    _guid,
    _new,
    decode_simple,
    decode_simple_at,
    object_id,
)
from pymsmq.wire.base_header import BASE_HEADER_SIGNATURE, BASE_HEADER_VERSION, MAX_PACKET_SIZE

__all__ = [
    "SIMPLE_ATTRIBUTES",
    "decode_for_send",
    "decode_for_send_at",
    "decode_simple",
    "decode_simple_at",
    "encode_plain",
    "encode_simple",
    "guid_bytes_le",
    "object_id",
]

# _HEAD as encode_plain packs it: MessagePropertiesHeader.Flags .. ApplicationTag as one 32-byte run
# (all zero but LabelLength: no acknowledgement flags, class, correlation, body type or application tag)
# and PrivacyLevel .. ExtensionSize (privacy 0, the default algorithms, no extension) as byte runs.
_PLAIN_HEAD: Final = struct.Struct("<BBHIII16s16sIIII32sII16s")
_PLAIN_MIDDLE: Final = bytes(32)
# The same 32 bytes with a label: Flags (0), LabelLength, MessageClass (0), CorrelationID (zero),
# BodyType (0) and ApplicationTag (0) ([MS-MQMQ] 2.2.19.3 MessagePropertiesHeader).
_LABEL_MIDDLE: Final = struct.Struct("<BBH20sII")
_PLAIN_TAIL: Final = struct.pack("<IIII", 0, 0x8004, 0x6801, 0)
_PAD: Final = (b"", b"\x00\x00\x00", b"\x00\x00", b"\x00")

# UserHeader SourceQueueManager, QueueManagerAddress (zero), TimeToBeReceived, SentTime, MessageID
# (offsets 16-59 of a UserMessage packet).
_SENT_FIELDS: Final = struct.Struct("<16s16xIII")
#: ``_lineage_bytes``'s last (lineage, its bytes_le), replaced as one tuple (threads may share it).
_LAST_LINEAGE: Final[list[tuple[uuid.UUID | None, bytes]]] = [(None, b"")]

#: encode_plain's shape: the attributes a plain message may hold (see ``encode_plain``).
_PLAIN_ATTRIBUTES: Final = frozenset(
    {
        "body",
        "label",
        "priority",
        "delivery",
        "id",
        "source_machine_guid",
        "sent_time",
        "lookup_id",
        "arrived_time",
        "abort_count",
        "move_count",
        "last_move_time",
        "destination_queue",
    }
)


def _shared_fields(m: Message) -> tuple[int, bytes, int, bytes, int] | None:
    """(uniquifier, SourceQueueManager bytes, SentTime, label bytes, LabelLength) of ``m`` as the
    packet holds them, or None when the packet cannot (then the general mapping decides)."""
    mid = m.id
    source = m.source_machine_guid
    if mid is not None:
        # 2.2.19.2: id.lineage and source_machine_guid share SourceQueueManager; ordinal 0 is "no id".
        u = mid.uniquifier
        lineage = mid.lineage
        if not 0 < u <= _INFINITE or (source is not None and source is not lineage and source != lineage):
            return None
        source_bytes = _lineage_bytes(lineage)
    else:
        u = 0
        source_bytes = _ZERO_GUID if source is None else guid_bytes_le(source)
    sent = m.sent_time
    if sent is None:
        sent_time = 0
    else:
        sent_time = int(sent)  # SentTime is whole seconds: floored, as the general mapping does
        if not 0 <= sent_time <= _INFINITE:
            return None
    label = m.label
    if not label:
        return u, source_bytes, sent_time, b"", 0
    if "\x00" in label:
        return None
    raw_label = label.encode("utf-16-le", "surrogatepass") + _NUL2
    label_length = len(raw_label) >> 1
    if label_length > _MAX_LABEL_LENGTH:
        return None
    return u, source_bytes, sent_time, raw_label, label_length


def encode_simple(m: Message) -> bytes | None:
    """``message_to_packet(m)`` without a destination for a simple message; None when not simple.

    ``m`` must be validated (``Message.validate``); its ``destination_queue`` is ignored.
    """
    d = m.__dict__
    if not d.keys() <= SIMPLE_ATTRIBUTES:
        return None
    journal = m.journal
    if journal & ~3:
        return None
    fields = _shared_fields(m)
    if fields is None:
        return None
    u, source_bytes, sent_time, raw_label, label_length = fields
    correlation = m.correlation_id
    body = m.body
    extension = m.extension
    size = _HEAD_SIZE + len(raw_label) + len(extension) + len(body)
    pad = _PAD[size & 3]
    size += len(pad)
    if size > MAX_PACKET_SIZE:
        return None
    try:
        head = _HEAD.pack(
            BASE_HEADER_VERSION,
            0,
            m.priority,  # BaseHeader.Flags: PR only
            BASE_HEADER_SIGNATURE,
            size,
            m.max_time_to_reach_queue,
            source_bytes,
            _ZERO_GUID,  # QueueManagerAddress: no destination queue manager
            m.max_time_to_receive,
            sent_time,
            u,
            _U_MP | (0x20 if m.delivery == 1 else 0) | (journal << 8),  # MP, DM, JN, JP
            0,  # MessagePropertiesHeader.Flags: no acknowledgements
            label_length,
            m.msg_class,
            _ZERO_ID if correlation is None else bytes(correlation),
            m.body_type,
            m.app_specific,
            len(body),
            len(body),  # AllocationBodySize = MessageSize
            m.priv_level,
            m.hash_algorithm,
            m.encrypt_algorithm,
            len(extension),
        )
    except struct.error:
        return None  # out of range: the general mapping raises the right error
    return b"".join((head, raw_label, extension, body, pad))


def encode_plain(m: Message) -> bytes | None:
    """``encode_simple(m)`` for the most common shape, or None (then ``encode_simple`` decides).

    *Plain*: besides body, label, priority, delivery, id, source machine and sent time, the message
    holds only queue-manager facts and its destination (which the packet omits, as in
    ``encode_simple``); every other property is at its default, so the MessagePropertiesHeader and
    the time limits are constants and only 7 properties are read.  ``m`` must be validated.
    """
    if not m.__dict__.keys() <= _PLAIN_ATTRIBUTES:
        return None
    fields = _shared_fields(m)
    if fields is None:
        return None
    u, source_bytes, sent_time, raw_label, label_length = fields
    body = m.body
    size = _HEAD_SIZE + len(raw_label) + len(body)
    pad = _PAD[size & 3]
    size += len(pad)
    priority = m.priority
    if size > MAX_PACKET_SIZE or not 0 <= priority <= 7:
        return None
    n = len(body)
    uflags = _U_MP | 0x20 if m.delivery == 1 else _U_MP  # journal at its default (0)
    # _HEAD's fields in one pack: the 32 bytes from MessagePropertiesHeader.Flags are all zero
    # but LabelLength (tests compare the bytes with encode_simple's).
    middle = _LABEL_MIDDLE.pack(0, label_length, 0, _ZERO_ID, 0, 0) if label_length else _PLAIN_MIDDLE
    head = _PLAIN_HEAD.pack(
        BASE_HEADER_VERSION,
        0,
        priority,
        BASE_HEADER_SIGNATURE,
        size,
        _INFINITE,  # max_time_to_reach_queue at its default
        source_bytes,
        _ZERO_GUID,
        _INFINITE,  # max_time_to_receive at its default
        sent_time,
        u,
        uflags,
        middle,
        n,
        n,
        _PLAIN_TAIL,
    )
    return b"".join((head, raw_label, body, pad))


def _lineage_bytes(lineage: uuid.UUID) -> bytes:
    """``guid_bytes_le(lineage)`` of an id's lineage: one queue manager's ids share one GUID object,
    so the last one's bytes are found by identity (no UUID int hash per message)."""
    last = _LAST_LINEAGE[0]
    if last[0] is lineage:
        return last[1]
    raw = guid_bytes_le(lineage)
    _LAST_LINEAGE[0] = (lineage, raw)
    return raw


def decode_for_send(data: bytes) -> tuple[Message, bool] | None:
    """The message a SEND of the simple packet ``data`` gives the queue manager to queue, and whether
    ``data`` is canonical; None otherwise.

    The message is ``decode_simple(data)`` without the three properties sending overwrites
    ([MC-MQAC] 3.17.4.1.48 steps 7, 9 and 11: source machine, id, sent time -- so SourceQueueManager,
    MessageID and SentTime are not decoded), only for messages that ``Message.validate`` accepts
    unchanged: None (take ``decode_simple``, then ``validate``) for anything else, and when
    PrivacyLevel is not 0 (its set of valid values is checked by ``validate``).  It is a fresh object
    the caller may give away (the queue manager may queue it as it is).

    *Canonical*: ``data`` is exactly what ``encode_simple`` writes for the message (reserved byte,
    flags, label terminator and padding included) but for the header fields sending sets, so that
    ``queued_packet(data, queued)`` is ``encode_simple(queued)`` once the message is queued.
    """
    return decode_for_send_at(data, 0, len(data))


def decode_for_send_at(data: bytes, start: int, n: int) -> tuple[Message, bool] | None:
    """``decode_for_send(data[start:start + n])`` without the copy; ``data`` holds ``start + n`` bytes."""
    if n < _HEAD_SIZE:
        return None
    (
        version,
        reserved,
        bflags,
        signature,
        packet_size,
        ttrq,
        _source,
        qm_address,
        ttbr,
        _sent,
        _message_id,
        uflags,
        mflags,
        label_length,
        msg_class,
        correlation,
        body_type,
        app_tag,
        message_size,
        alloc_size,
        privacy,
        hash_alg,
        enc_alg,
        ext_size,
    ) = _HEAD.unpack_from(data, start)
    if (
        version != BASE_HEADER_VERSION
        or signature != BASE_HEADER_SIGNATURE
        or packet_size != n
        or n & 3
        or n > MAX_PACKET_SIZE
        or bflags & ~7
        or not uflags & _U_MP
        or uflags & _U_STRUCTURAL
        or uflags & _U_STRUCTURAL2
        or qm_address != _ZERO_GUID
        or mflags
        or alloc_size != message_size
        or label_length > _MAX_LABEL_LENGTH
        or privacy
    ):
        return None
    pos = _HEAD_SIZE
    m: Message = _new(Message)
    canonical = not reserved
    if label_length:
        end = pos + 2 * label_length
        if end > n or data[start + end - 2 : start + end] != _NUL2:
            return None
        label = utf_16_le_decode(data[start + pos : start + end - 2], "surrogatepass", True)[0]
        if "\x00" in label:
            return None
        if label:
            m.label = label
        else:
            canonical = False  # a lone terminator: encode_simple writes no label at all
        pos = end
    end = pos + ext_size + message_size
    if end > n or (end + 3) & ~3 != n:
        return None
    if canonical and data[start + end : start + n] != _PAD[end & 3]:
        canonical = False
    if ext_size:
        m.extension = data[start + pos : start + pos + ext_size]
        pos += ext_size
    m.body = data[start + pos : start + end]
    m.priority = bflags
    if ttrq != _INFINITE:
        m.max_time_to_reach_queue = ttrq
    if ttbr != _INFINITE:
        m.max_time_to_receive = ttbr
    if (uflags >> 5) & 3 == 1:
        m.delivery = 1
    journal = (uflags >> 8) & 3
    if journal:
        m.journal = journal
    if canonical and uflags != _U_MP | (uflags & 0x20) | (journal << 8):
        canonical = False  # other flag bits, or a DeliveryMode encode_simple would not write
    if msg_class:
        m.msg_class = msg_class
    if correlation != _ZERO_ID:
        m.correlation_id = object_id(_guid(correlation[:16]), int.from_bytes(correlation[16:], "little"))
    if body_type:
        m.body_type = body_type
    if app_tag:
        m.app_specific = app_tag
    if hash_alg != 0x8004:
        m.hash_algorithm = hash_alg
    if enc_alg != 0x6801:
        m.encrypt_algorithm = enc_alg
    return m, canonical


def queued_packet(data: bytes, m: Message) -> bytes:
    """``encode_simple(m)`` for the queued message ``m`` of a canonical ``decode_for_send(data)``.

    ``data`` with the UserHeader fields sending set ([MS-MQMQ] 2.2.19.2: SourceQueueManager,
    TimeToBeReceived, SentTime, MessageID) replaced by ``m``'s, with one pack.  ``m`` must have been
    queued (its id, source machine and sent time set, its id's lineage the source machine).
    """
    mid = m.id
    assert mid is not None and m.sent_time is not None
    packet = bytearray(data)
    # QueueManagerAddress (32-47) is zero in a simple packet: rewritten as it is.
    raw = _lineage_bytes(mid.lineage)
    _SENT_FIELDS.pack_into(packet, 16, raw, m.max_time_to_receive, int(m.sent_time), mid.uniquifier)
    return bytes(packet)
