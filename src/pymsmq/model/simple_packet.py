"""The fast encoder of the simple message shape, for the packets the queue manager stores.

The queue manager stores every recoverable message, nearly always of one shape: only the
properties that live in the three always-present headers ([MS-MQMQ] 2.2.19.1 BaseHeader, 2.2.19.2
UserHeader, 2.2.19.3 MessagePropertiesHeader) plus a destination queue.  For that shape the packet
is: 64 fixed bytes (BaseHeader + UserHeader fixed part), the destination queue bytes, 56 fixed
bytes (MessagePropertiesHeader fixed part), label, extension, body, padding to 4.  Everything that
depends on the destination alone (the DQ code in UserHeader.Flags, QueueManagerAddress and the
queue bytes) comes from a per-destination template cut from a packet the general mapping built, and
the template is accepted only if the fast encoder then reproduces the general mapping byte for byte
for a probe message that sets every simple property.  What the fast path skips is building and
walking the header dataclasses; any other shape (queues, acks, security, transactions, trace,
SRMP, dead-letter queue...), or a value the general mapping would reject, takes the general path.

``pymsmq.model.packet_mapping`` uses it (``message_to_packet``) and gives it its general mapping.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.model.ids import ObjectId, guid_bytes_le
from pymsmq.model.message import Message
from pymsmq.wire._buffer import NULL_GUID
from pymsmq.wire.base_header import BASE_HEADER_SIGNATURE, BASE_HEADER_VERSION, MAX_PACKET_SIZE
from pymsmq.wire.user_header import UserHeaderFlags

__all__ = ["SIMPLE_ATTRIBUTES", "packet_with_destination", "simple_packet"]

_INFINITE: Final = 0xFFFFFFFF
_ZERO_ID: Final = bytes(20)
# TransactionHeader.Flags ([MS-MQMQ] 2.2.20.5)
_T_FM: Final = 0x4
_T_LM: Final = 0x8

#: The simple message shape: the attributes a message may hold (an instance ``__dict__`` holds only
#: the attributes set away from their class defaults) for the fast packet encoders here and in
#: ``pymsmq.protocol.fast_packet``.  ``lookup_id``, ``arrived_time``, ``abort_count``,
#: ``move_count`` and ``last_move_time`` are queue-manager facts that travel beside the packet, not in it.
SIMPLE_ATTRIBUTES: Final = frozenset(
    {
        "body",
        "label",
        "priority",
        "delivery",
        "journal",
        "max_time_to_reach_queue",
        "max_time_to_receive",
        "id",
        "source_machine_guid",
        "sent_time",
        "msg_class",
        "correlation_id",
        "body_type",
        "app_specific",
        "extension",
        "priv_level",
        "hash_algorithm",
        "encrypt_algorithm",
        "lookup_id",
        "arrived_time",
        "abort_count",
        "move_count",
        "last_move_time",
        "destination_queue",
    }
)
# BaseHeader: VersionNumber, Reserved, Flags, Signature, PacketSize, TimeToReachQueue; UserHeader
# fixed part: SourceQueueManager, QueueManagerAddress, TimeToBeReceived, SentTime, MessageID, Flags.
_FRONT: Final = struct.Struct("<BBHII I16s16sIIII")
# MessagePropertiesHeader fixed part: Flags, LabelLength, MessageClass, CorrelationID, BodyType,
# ApplicationTag, MessageSize, AllocationBodySize, PrivacyLevel, HashAlgorithm, EncryptionAlgorithm,
# ExtensionSize.
_PROPS: Final = struct.Struct("<BBH20sIIIIIIII")
_MAX_LABEL_LENGTH: Final = 0xFA  # 2.2.19.3 LabelLength: at most 250 units with the NUL
_U_DM: Final = 0x20  # UserHeader.Flags.DM: recoverable
_U_TH: Final = int(UserHeaderFlags.TH)  # a TransactionHeader follows the UserHeader
# 2.2.20.5 TransactionHeader without ConnectorQMGuid: Flags, TxSequenceID (Ordinal, Timestamp),
# TxSequenceNumber, PreviousTxSequenceNumber.
_TRANSACTION: Final = struct.Struct("<IIIII")
#: The simple shape of a message sent in a transaction: what ``Queue._enqueue`` adds to it.
_SIMPLE_TRANSACTIONAL_ATTRIBUTES: Final = SIMPLE_ATTRIBUTES | {
    "transaction_id",
    "is_first_in_transaction",
    "is_last_in_transaction",
}
_PAD: Final = (b"", b"\x00\x00\x00", b"\x00\x00", b"\x00")
# destination -> (BaseHeader.Flags, UserHeader.Flags, QueueManagerAddress, queue bytes), or None
# when the destination has no simple template.
_Template = tuple[int, int, bytes, bytes]
_TEMPLATES: Final[dict[str | None, _Template | None]] = {}
_PROBE_GUID: Final = uuid.UUID("8d4f3b5e-2a61-4c7e-9f10-3b2a1c0d9e87")


def simple_packet(m: Message, general: Callable[[Message], bytes]) -> bytes | None:
    """``message_to_packet(m)`` for a message of the simple shape, else None (use the general mapping).

    ``general`` is the general mapping (``packet_mapping``'s), from which the per-destination
    templates are cut.
    """
    # ``m`` is validated (send validates), so types and enumerations are right; values the general
    # mapping refuses or writes differently (ids, times, long labels, NUL in a label, size) go there.
    keys = m.__dict__.keys()
    transactional = False
    if not keys <= SIMPLE_ATTRIBUTES:
        if not keys <= _SIMPLE_TRANSACTIONAL_ATTRIBUTES:
            return None
        transactional = m.transaction_id is not None
    dest = m.destination_queue
    template = _TEMPLATES[dest] if dest in _TEMPLATES else _make_template(dest, general)
    if template is None:
        return None
    queue_bytes = template[3]
    label = m.label
    if label:
        if "\x00" in label:
            return None
        raw_label = label.encode("utf-16-le", "surrogatepass") + b"\x00\x00"
        label_length = len(raw_label) >> 1
        if label_length > _MAX_LABEL_LENGTH:
            return None
    else:
        raw_label = b""
        label_length = 0
    correlation = m.correlation_id
    body = m.body
    extension = m.extension
    transaction = b""
    if transactional:
        # 2.2.20.5 TransactionHeader, as _transaction_header writes it for a transaction of the
        # sending queue manager (no ConnectorQMGuid: the identifier's lineage is the source).
        xid = m.transaction_id
        assert xid is not None
        if xid.lineage != (m.id.lineage if m.id is not None else m.source_machine_guid or NULL_GUID):
            return None
        xu = xid.uniquifier
        flags = ((xu & 0xFFFFF) << 4) | (_T_FM if m.is_first_in_transaction else 0)
        if m.is_last_in_transaction:
            flags |= _T_LM
        transaction = _TRANSACTION.pack(flags, xu, 0, 1, 0)  # TxSequenceID(xu, 0), number 1, previous 0
    size = (
        _FRONT.size
        + len(queue_bytes)
        + len(transaction)
        + _PROPS.size
        + len(raw_label)
        + len(extension)
        + len(body)
    )
    pad = _PAD[size & 3]
    size += len(pad)
    if size > MAX_PACKET_SIZE:
        return None
    front = _front(m, template, size, transactional)
    if front is None:
        return None
    try:
        props = _PROPS.pack(
            0,  # Flags: no acknowledgements
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
    return b"".join((front, queue_bytes, transaction, props, raw_label, extension, body, pad))


def _front(m: Message, template: _Template, size: int, transactional: bool) -> bytes | None:
    # BaseHeader and the UserHeader fixed part of a simple packet of ``size`` bytes for ``m`` with
    # ``template``'s destination (None: a value the general mapping refuses or writes differently).
    base_flags, user_flags, qm_address, _ = template
    mid = m.id
    source = m.source_machine_guid
    if mid is not None:
        # 2.2.19.2: id.lineage and source_machine_guid share SourceQueueManager; ordinal 0 is "no id".
        u = mid.uniquifier
        if not 0 < u <= _INFINITE or (source is not None and source != mid.lineage):
            return None
        source_bytes = guid_bytes_le(mid.lineage)
    else:
        u = 0
        source_bytes = guid_bytes_le(NULL_GUID if source is None else source)
    sent = m.sent_time
    sent_time = 0 if sent is None else int(sent)  # SentTime is whole seconds (floored)
    if not 0 <= sent_time <= _INFINITE:
        return None
    if transactional:
        user_flags |= _U_TH
    try:
        return _FRONT.pack(
            BASE_HEADER_VERSION,
            0,
            # 2.2.19.1 PR: "MUST be set to a value of 0x0 if the packet contains a transactional message"
            base_flags | (0 if transactional else m.priority),
            BASE_HEADER_SIGNATURE,
            size,
            m.max_time_to_reach_queue,
            source_bytes,
            qm_address,
            m.max_time_to_receive,
            sent_time,
            u,
            # DM, JN, JP (2.2.19.2 TH: "If this flag is set the DM flag MUST NOT be 0x0")
            user_flags | (_U_DM if m.delivery == 1 or transactional else 0) | (m.journal << 8),
        )
    except struct.error:
        return None  # out of range: the general mapping raises the right error


def packet_with_destination(data: bytes, m: Message, general: Callable[[Message], bytes]) -> bytes | None:
    """``message_to_packet(m)`` built from ``data``, the packet of ``m`` without its destination.

    ``data`` is a simple packet (only the three always-present headers), and ``m`` the message decoded
    from it and then queued: ``data`` is ``message_to_packet`` of ``m`` with ``destination_queue``
    None, except for the BaseHeader and UserHeader fixed fields, which are rewritten from ``m``
    ([MS-MQMQ] 2.2.19.1, 2.2.19.2: priority, TimeToReachQueue, SourceQueueManager, TimeToBeReceived,
    SentTime, MessageID, delivery and journal flags).  The destination queue goes after the UserHeader
    fixed part ([MS-MQMQ] 2.2.20.1 UserMessage).  None when queuing gave ``m`` a transaction (its
    packet has a TransactionHeader) or its values do not fit: then use ``message_to_packet``.
    """
    # Queuing adds only simple properties to a message, and a transaction's.  (``m.__dict__`` is not
    # read: that would give the queued message a dict of its own, 184 bytes more per message.)
    if m.transaction_id is not None:
        return None
    dest = m.destination_queue
    template = _TEMPLATES[dest] if dest in _TEMPLATES else _make_template(dest, general)
    if template is None:
        return None
    queue_bytes = template[3]
    size = len(data) + len(queue_bytes)
    if len(queue_bytes) & 3 or size > MAX_PACKET_SIZE:
        return None  # (queue bytes are padded to 4: the padding of ``data`` stays right)
    front = _front(m, template, size, False)
    if front is None:
        return None
    return b"".join((front, queue_bytes, data[_FRONT.size :]))


def _make_template(dest: str | None, general: Callable[[Message], bytes]) -> _Template | None:
    # Cut the destination-dependent parts out of a general packet with no label, extension or body,
    # then check the fast encoder against the general one on a probe that sets every simple property.
    if len(_TEMPLATES) >= 1024:
        _TEMPLATES.clear()
    try:
        bare = general(Message(destination_queue=dest))
    except MSMQError:
        return None  # the general path raises the right error
    template: _Template | None = None
    queue_end = len(bare) - _PROPS.size
    if queue_end >= _FRONT.size and len(bare) % 4 == 0:
        fields = _FRONT.unpack_from(bare, 0)
        # Without the per-message bits: BaseHeader.Flags.PR (the bare message has priority 3) and
        # UserHeader.Flags.DM/JN/JP.
        template = (fields[2] & ~0x7, fields[11] & ~0x320, fields[7], bare[_FRONT.size : queue_end])
        _TEMPLATES[dest] = template
        probe = Message(
            body=b"probe body",
            label="probe",
            priority=5,
            delivery=1,
            journal=3,
            max_time_to_reach_queue=77,
            max_time_to_receive=99,
            id=ObjectId(_PROBE_GUID, 12345),
            sent_time=1234567.0,
            msg_class=0x4000,
            correlation_id=ObjectId(_PROBE_GUID, 7),
            body_type=8,
            app_specific=0xDEADBEEF,
            extension=b"ext",
            priv_level=1,
            hash_algorithm=0x800C,
            encrypt_algorithm=0x6610,
            destination_queue=dest,
        )
        if simple_packet(probe, general) != general(probe):
            template = None
    _TEMPLATES[dest] = template
    return template
