"""``Message`` <-> the [MS-MQMQ] 2.2.20 UserMessage packet: the one canonical message encoding.

DESIGN.md: the UserMessage packet is what is stored, what travels between queue managers and what a
remote client ships.  The rules are [MS-MQDMPR] 3.1.7.1.30 "Construct a UserMessage Packet" and the
serialization tables of 3.1.7.1.31/32 (digest D8):

==================================  =============================================================
Message                             packet
==================================  =============================================================
priority                            BaseHeader.Flags.PR (0 when a TransactionHeader is present)
trace                               BaseHeader.Flags.TR + a DebugHeader (Flags.QT = 0)
max_time_to_reach_queue             BaseHeader.TimeToReachQueue
id, source_machine_guid             UserHeader.SourceQueueManager + UserHeader.MessageID
max_time_to_receive, sent_time      UserHeader.TimeToBeReceived, UserHeader.SentTime
delivery, journal                   UserHeader.Flags.DM; Flags.JN (MQMSG_DEADLETTER), JP (MQMSG_JOURNAL)
destination/admin/response_queue    UserHeader queues + QueueManagerAddress, MultiQueueFormatHeader
                                    (see ``pymsmq.model.packet_queues``)
connector_type_guid                 UserHeader.ConnectorType (Flags.CQ)
ack, msg_class, correlation_id      MessagePropertiesHeader.Flags, MessageClass, CorrelationID
body_type, app_specific, label      MessagePropertiesHeader.BodyType, ApplicationTag, Label
extension, body                     MessagePropertiesHeader.ExtensionData, MessageBody
priv_level, hash/encrypt_algorithm  MessagePropertiesHeader.PrivacyLevel, HashAlgorithm, ...
transaction_id, first/last          TransactionHeader (Flags.ID, FM, LM; see below)
sender_id(_type), certificate,      SecurityHeader (SecurityID + Flags.ST, SenderCert, Signature,
signature, symmetric key, provider  EncryptionKey, ProviderInfo / Flags.DE, Flags.EB)
auth_level                          SecurityHeader.Flags.AS (see below)
soap_envelope, compound_message     SRMPEnvelopeHeader + CompoundMessageHeader (UserHeader.Flags.AH)
dead_letter_queue (a path name)     [MS-MQRR] 2.2.5.4 DeadLetterHeader (ExtensionHeader.Flags.DL)
==================================  =============================================================

Not in the packet: the queue-manager facts ``lookup_id``, ``arrived_time``, ``abort_count``,
``move_count`` (and the subqueue), which the store keeps beside the packet; and two facts a
*receiving* queue manager derives and that no header holds: ``transaction_status_queue``
([MS-MQDMPR] "set by QM; read-only to apps") and ``received_authentication_level`` (the result
of verifying the signature).  Both decode as their defaults.

Decisions where the packet is narrower than the model (each documented at its code):

* Times: TimeToReachQueue/TimeToBeReceived are relative seconds (0xFFFFFFFF = INFINITE), exactly
  the model's values; the absolute expiry deadline is a queue-manager fact kept beside the packet.
  SentTime is whole POSIX seconds: a fractional ``sent_time`` is floored; ``None`` <-> 0.
* Ids: ``id`` is None iff MessageID is 0; ``source_machine_guid`` is None iff SourceQueueManager
  is the null GUID; ``id.lineage`` and ``source_machine_guid`` share SourceQueueManager (a message
  whose two differ cannot be encoded).  ``correlation_id`` None <-> 20 zero bytes.
* Transactions: Flags.ID holds the low 20 bits of ``transaction_id.uniquifier`` (the spec field).
  The whole uniquifier goes in TxSequenceID.Ordinal -- session state that [MS-MQQB] refills when the
  message leaves the queue manager -- and decoding takes Ordinal when its low 20 bits equal Flags.ID,
  else Flags.ID.  The lineage is SourceQueueManager; a different lineage goes in ConnectorQMGuid
  (Flags.CG).  A transactional packet has priority 0 and DM=1 (2.2.19.1 PR, 2.2.19.2 TH).
* Security: the header is present when any security property differs from its default.  The
  default provider (``DEFAULT_PROVIDER_NAME``, PROV_RSA_FULL) is Flags.DE with no ProviderInfo; a
  ``None`` provider name is Flags.DE clear with no ProviderInfo (the provider type then reads back as
  PROV_RSA_FULL).  ``auth_level`` (MQMSGAUTHLEVEL 0/1/2/4/8) is kept in the 4-bit Flags.AS field,
  which [MS-MQMQ] reserves for the receiver's verification result.
* Empty optional byte strings are None (``Message.validate`` normalises them): an item of size 0
  "occupies no space" on the wire.  A label of "" is LabelLength 0.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final

from pymsmq.errors import MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId, guid_bytes_le
from pymsmq.model.message import DEFAULT_PROVIDER_NAME, Message
from pymsmq.model.packet_queues import canonical_format_name, decode_queues, encode_queues
from pymsmq.wire._buffer import NULL_GUID
from pymsmq.wire.base_header import BASE_HEADER_SIGNATURE, BASE_HEADER_VERSION, MAX_PACKET_SIZE
from pymsmq.wire.mqrr_headers import CompoundMessageHeader, DeadLetterHeader, SRMPEnvelopeHeader
from pymsmq.wire.optional_headers import DebugHeader, TransactionHeader
from pymsmq.wire.packet_types import TxSequenceID
from pymsmq.wire.security_header import ProviderInfo, SecurityHeader
from pymsmq.wire.user_header import UserHeaderFlags
from pymsmq.wire.user_message import UserMessage

__all__ = [
    "INTERIM_MAGIC",
    "canonical_queues",
    "message_to_packet",
    "packet_to_message",
    "packet_to_user_message",
    "user_message_to_message",
]

# The tag of the pre-release JSON rows; they are refused with a clear message.
INTERIM_MAGIC: Final = b"PYMSMQ-INTERIM-1\n"
_BAD: Final = HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
_INFINITE: Final = 0xFFFFFFFF
_ZERO_ID: Final = bytes(20)
_PROV_RSA_FULL: Final = 1
_SID: Final = 1  # MQMSG_SENDERID_TYPE_SID, the Message default
# SecurityHeader.Flags ([MS-MQMQ] 2.2.20.6)
_S_EB: Final = 0x0020
_S_DE: Final = 0x0040
_S_AI: Final = 0x0080
# TransactionHeader.Flags ([MS-MQMQ] 2.2.20.5)
_T_CG: Final = 0x1
_T_FM: Final = 0x4
_T_LM: Final = 0x8
_B_TR: Final = 0x0100
_ID_CACHE: Final[dict[bytes, ObjectId]] = {}
_new: Final = object.__new__
_setattr: Final = object.__setattr__


def _fail(what: str) -> MSMQError:
    return MSMQError(f"the message cannot be encoded: {what}", _BAD)


# -- encode -----------------------------------------------------------------------------------------


def _security_header(m: Message) -> SecurityHeader | None:
    sender_id = m.sender_id
    cert = m.sender_certificate
    signature = m.signature
    key = m.destination_symmetric_key
    name = m.authentication_provider_name
    ptype = m.authentication_provider_type
    default_provider = name == DEFAULT_PROVIDER_NAME and ptype == _PROV_RSA_FULL
    if (
        sender_id is None
        and cert is None
        and signature is None
        and key is None
        and default_provider
        and m.sender_id_type == _SID
        and not m.auth_level
    ):
        return None
    if m.sender_id_type == 0 and sender_id is not None:
        raise _fail("sender_id_type MQMSG_SENDERID_TYPE_NONE with a sender_id ([MS-MQMQ] 2.2.20.6 ST)")
    # [MS-MQDMPR] 3.1.7.1.32: ST = SenderIdentifierType, EB iff PrivacyLevel != None, DE iff the
    # default provider; AU = 0.  AS holds auth_level (module docstring).  AI: SecurityData present.
    flags = m.sender_id_type | _S_AI | (m.auth_level << 8)
    if m.priv_level:
        flags |= _S_EB
    provider: ProviderInfo | None = None
    if default_provider:
        flags |= _S_DE
    elif name is not None:
        provider = ProviderInfo(ptype, name)
    if provider is None and not (sender_id or cert or signature or key):
        # "At least one of the fields ... MUST be nonzero": state the provider explicitly.
        provider = ProviderInfo(ptype, DEFAULT_PROVIDER_NAME if name is None else name)
    return SecurityHeader(flags, sender_id or b"", key or b"", signature or b"", cert or b"", provider)


def _transaction_header(m: Message, source: uuid.UUID) -> TransactionHeader | None:
    xid = m.transaction_id
    if xid is None:
        return None
    # [MS-MQDMPR] 3.1.7.1.32: Flags.ID / FM / LM from TransactionIdentifier / First / Last.
    u = xid.uniquifier
    flags = (u & 0xFFFFF) << 4
    if m.is_first_in_transaction:
        flags |= _T_FM
    if m.is_last_in_transaction:
        flags |= _T_LM
    connector: uuid.UUID | None = None
    if xid.lineage != source:
        flags |= _T_CG
        connector = xid.lineage
    return TransactionHeader(flags, TxSequenceID(u, 0), 1, 0, connector)


def message_to_packet(message: Message) -> bytes:
    """The UserMessage packet bytes of every non-fact property of ``message`` (MSMQError if impossible)."""
    packet = _simple_packet(message)
    if packet is not None:
        return packet
    return _general_packet(message)


def _general_packet(message: Message) -> bytes:
    # [MS-MQDMPR] 3.1.7.1.30-32 through the header dataclasses: every message shape.
    m = message
    mid = m.id
    source = m.source_machine_guid
    if mid is not None:
        if source is None:
            source = mid.lineage
        elif mid.lineage != source:
            raise _fail("id.lineage and source_machine_guid differ (both are UserHeader.SourceQueueManager)")
        if not mid.uniquifier:
            raise _fail("a message id ordinal of 0 means 'no id' on the wire")
    elif source is None:
        source = NULL_GUID
    sent = m.sent_time
    sent_time = 0 if sent is None else int(sent)
    if sent_time > _INFINITE:
        raise _fail(f"sent_time {sent!r} does not fit UserHeader.SentTime (u32 seconds)")
    try:
        dest, admin, resp, qm_address, mqf = encode_queues(
            m.destination_queue, m.admin_queue, m.response_queue
        )
        dlq = m.dead_letter_queue
        envelope = m.soap_envelope
        compound = m.compound_message
        srmp = compound_header = None
        if envelope is not None or compound is not None:
            srmp = SRMPEnvelopeHeader("" if envelope is None else envelope + "\x00")
            compound_header = CompoundMessageHeader(compound or b"")
        correlation = m.correlation_id
        label = m.label
        admin_value = admin[1]
        ack = m.ack
        packet = UserMessage.build(
            destination=dest[1],
            body=m.body,
            label=label or None,
            priority=m.priority,
            source_queue_manager=source,
            destination_queue_manager=qm_address,
            message_id=0 if mid is None else mid.uniquifier,
            sent_time=sent_time,
            time_to_reach_queue=m.max_time_to_reach_queue,
            time_to_be_received=m.max_time_to_receive,
            recoverable=m.delivery == 1,
            journal_positive=bool(m.journal & 2),
            journal_negative=bool(m.journal & 1),
            admin_queue=admin_value,
            admin_queue_type=admin[0] if admin_value is not None else None,
            response_queue=resp[1],
            response_queue_type=resp[0] or None,
            # 2.2.19.2 AdminQueue "MUST be specified if" ack bits are set: the model may hold an ack
            # request without an admin queue (the queue manager then sends no ack); keep it anyway.
            acknowledgements=ack if admin_value is not None or not ack else 0,
            message_class=m.msg_class,
            correlation_id=_ZERO_ID if correlation is None else bytes(correlation),
            body_type=m.body_type,
            application_tag=m.app_specific,
            extension=m.extension,
            privacy_level=m.priv_level,
            hash_algorithm=m.hash_algorithm,
            encryption_algorithm=m.encrypt_algorithm,
            trace=bool(m.trace),
            connector_type=m.connector_type_guid,
            transaction_header=_transaction_header(m, source),
            security_header=_security_header(m),
            debug_header=DebugHeader() if m.trace else None,
            srmp_envelope_header=srmp,
            compound_message_header=compound_header,
            multi_queue_format_header=mqf,
            dead_letter_header=None if dlq is None else DeadLetterHeader(dlq),
        )
        if ack and admin_value is None:
            props = packet.message_properties_header
            patched = type(props)._make(
                ack,
                props.message_class,
                props.correlation_id,
                props.body_type,
                props.application_tag,
                props.privacy_level,
                props.hash_algorithm,
                props.encryption_algorithm,
                props.label,
                props.extension,
                props.body,
                props.allocation_slack,
                props.padding,
            )
            _setattr(packet, "__dict__", {**packet.__dict__, "message_properties_header": patched})
        return packet.encode()
    except WireError as exc:
        raise _fail(str(exc)) from None


# -- encode, fast path ------------------------------------------------------------------------------
#
# The queue manager stores every recoverable message, nearly always of one shape: only the
# properties that live in the three always-present headers ([MS-MQMQ] 2.2.19.1 BaseHeader, 2.2.19.2
# UserHeader, 2.2.19.3 MessagePropertiesHeader) plus a destination queue.  For that shape the packet
# is: 64 fixed bytes (BaseHeader + UserHeader fixed part), the destination queue bytes, 56 fixed
# bytes (MessagePropertiesHeader fixed part), label, extension, body, padding to 4.  Everything that
# depends on the destination alone (the DQ code in UserHeader.Flags, QueueManagerAddress and the
# queue bytes) comes from a per-destination template cut from a packet the general mapping built, and
# the template is accepted only if the fast encoder then reproduces the general mapping byte for byte
# for a probe message that sets every simple property.  What the fast path skips is building and
# walking the header dataclasses; any other shape (queues, acks, security, transactions, trace,
# SRMP, dead-letter queue...), or a value the general mapping would reject, takes the general path.

#: The simple message shape: the attributes a message may hold (an instance ``__dict__`` holds only
#: the attributes set away from their class defaults) for the fast packet encoders here and in
#: ``pymsmq.protocol.fast_packet``.  ``lookup_id``, ``arrived_time``, ``abort_count`` and
#: ``move_count`` are queue-manager facts that travel beside the packet, not in it.
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


def _simple_packet(m: Message) -> bytes | None:
    # ``m`` is validated (send validates), so types and enumerations are right; values the general
    # mapping refuses or writes differently (ids, times, long labels, NUL in a label, size) go there.
    keys = m.__dict__.keys()
    transactional = False
    if not keys <= SIMPLE_ATTRIBUTES:
        if not keys <= _SIMPLE_TRANSACTIONAL_ATTRIBUTES:
            return None
        transactional = m.transaction_id is not None
    dest = m.destination_queue
    template = _TEMPLATES[dest] if dest in _TEMPLATES else _make_template(dest)
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


def packet_with_destination(data: bytes, m: Message) -> bytes | None:
    """``message_to_packet(m)`` built from ``data``, the packet of ``m`` without its destination.

    ``data`` must be ``message_to_packet`` of ``m`` with ``destination_queue`` None, except for the
    BaseHeader and UserHeader fixed fields, which are rewritten from ``m`` ([MS-MQMQ] 2.2.19.1,
    2.2.19.2: priority, TimeToReachQueue, SourceQueueManager, TimeToBeReceived, SentTime, MessageID,
    delivery and journal flags): e.g. the packet a client sent, for the message queued from it.  The
    destination queue goes after the UserHeader fixed part ([MS-MQMQ] 2.2.20.1 UserMessage).  None
    when ``m`` is not of the simple shape: then use ``message_to_packet``.
    """
    if not m.__dict__.keys() <= SIMPLE_ATTRIBUTES:
        return None
    dest = m.destination_queue
    template = _TEMPLATES[dest] if dest in _TEMPLATES else _make_template(dest)
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


def _make_template(dest: str | None) -> _Template | None:
    # Cut the destination-dependent parts out of a general packet with no label, extension or body,
    # then check the fast encoder against the general one on a probe that sets every simple property.
    if len(_TEMPLATES) >= 1024:
        _TEMPLATES.clear()
    try:
        bare = _general_packet(Message(destination_queue=dest))
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
        if _simple_packet(probe) != _general_packet(probe):
            template = None
    _TEMPLATES[dest] = template
    return template


def canonical_queues(message: Message) -> None:
    """Rewrite ``admin_queue``/``response_queue`` as canonical ``FormatName`` text, in place.

    Called on send, before the message is queued: text that is not a format name is
    MQ_ERROR_ILLEGAL_FORMATNAME there (as MQSendMessage answers), not a failure when the packet is
    written.
    """
    admin = message.admin_queue
    if admin is not None:
        message.admin_queue = canonical_format_name(admin, "admin_queue")
    response = message.response_queue
    if response is not None:
        message.response_queue = canonical_format_name(response, "response_queue")


# -- decode -----------------------------------------------------------------------------------------


def _object_id(raw: bytes) -> ObjectId | None:
    if raw == _ZERO_ID:
        return None
    value = _ID_CACHE.get(raw)
    if value is None:
        value = ObjectId.from_bytes(raw)
        if len(_ID_CACHE) >= 4096:
            _ID_CACHE.clear()
        _ID_CACHE[raw] = value
    return value


def packet_to_user_message(data: bytes | bytearray | memoryview) -> UserMessage:
    """Decode stored/received bytes as a UserMessage (``WireError`` for anything else)."""
    if bytes(data[: len(INTERIM_MAGIC)]) == INTERIM_MAGIC:
        raise WireError(
            "this is a pre-release pymsmq row (tagged JSON, 'PYMSMQ-INTERIM-1'): the store now keeps "
            "[MS-MQMQ] UserMessage packets; export the queue with the old version and import it again",
            0,
        )
    return UserMessage.decode(data)


def user_message_to_message(um: UserMessage) -> Message:
    """The ``Message`` a decoded UserMessage carries (the inverse of ``message_to_packet``)."""
    base = um.base_header
    user = um.user_header
    props = um.message_properties_header
    uflags = user.flags
    source = user.source_queue_manager
    m: Message = _new(Message)
    m.body = props.body
    m.label = props.label or ""
    m.body_type = props.body_type
    m.extension = props.extension
    m.app_specific = props.application_tag
    m.correlation_id = _object_id(props.correlation_id)
    m.msg_class = props.message_class
    m.priority = base.flags & 7
    m.delivery = 1 if (uflags >> 5) & 3 == 1 else 0
    m.ack = props.flags & 0x0F
    m.journal = (uflags >> 8) & 3  # JN (bit 8) = MQMSG_DEADLETTER 1, JP (bit 9) = MQMSG_JOURNAL 2
    m.trace = 1 if base.flags & _B_TR else 0
    m.max_time_to_reach_queue = base.time_to_reach_queue
    m.max_time_to_receive = user.time_to_be_received
    m.destination_queue, m.admin_queue, m.response_queue = decode_queues(
        uflags,
        source,
        user.queue_manager_address,
        user.destination_queue,
        user.admin_queue,
        user.response_queue,
        um.multi_queue_format_header,
    )
    dead = um.dead_letter_header
    m.dead_letter_queue = None if dead is None else dead.dead_letter_path_name
    m.priv_level = props.privacy_level
    m.hash_algorithm = props.hash_algorithm
    m.encrypt_algorithm = props.encryption_algorithm
    sec = um.security_header
    if sec is None:
        m.auth_level = 0
        m.sender_id = m.sender_certificate = m.signature = m.destination_symmetric_key = None
        m.sender_id_type = _SID
        m.authentication_provider_type = _PROV_RSA_FULL
        m.authentication_provider_name = DEFAULT_PROVIDER_NAME
    else:
        sflags = sec.flags
        m.auth_level = (sflags >> 8) & 0xF
        m.sender_id = sec.security_id or None
        m.sender_id_type = sflags & 0xF
        m.sender_certificate = sec.sender_cert or None
        m.signature = sec.signature or None
        m.destination_symmetric_key = sec.encryption_key or None
        info = sec.provider_info
        if info is not None:
            m.authentication_provider_type = info.provider_type
            m.authentication_provider_name = info.provider_name
        else:
            m.authentication_provider_type = _PROV_RSA_FULL
            m.authentication_provider_name = DEFAULT_PROVIDER_NAME if sflags & _S_DE else None
    m.connector_type_guid = user.connector_type
    m.id = ObjectId(source, user.message_id) if user.message_id else None
    m.lookup_id = 0
    m.sent_time = float(user.sent_time) if user.sent_time else None
    m.arrived_time = None
    m.source_machine_guid = None if source == NULL_GUID else source
    m.transaction_status_queue = None
    tx = um.transaction_header
    if tx is None:
        m.transaction_id = None
        m.is_first_in_transaction = m.is_last_in_transaction = False
    else:
        tflags = tx.flags
        ident = (tflags >> 4) & 0xFFFFF
        ordinal = tx.tx_sequence_id.ordinal
        lineage = tx.connector_qm_guid if tflags & _T_CG and tx.connector_qm_guid is not None else source
        m.transaction_id = ObjectId(lineage, ordinal if ordinal & 0xFFFFF == ident else ident)
        m.is_first_in_transaction = bool(tflags & _T_FM)
        m.is_last_in_transaction = bool(tflags & _T_LM)
    m.received_authentication_level = 0
    m.abort_count = m.move_count = 0
    srmp = um.srmp_envelope_header
    if srmp is None:
        m.soap_envelope = None
        m.compound_message = None
    else:
        data = srmp.data
        m.soap_envelope = data[:-1] if data else None
        compound = um.compound_message_header
        m.compound_message = (compound.data or None) if compound is not None else None
    # No ``validate()``: every value is type-correct by construction, and values a sender may put
    # on the wire but MC-MQAC's property puts reject (e.g. Flags.PA|PR|NA|NR = 0xF, as in
    # [MS-MQQB] 4.1.7) are kept as plain ints, as received.
    return m


def packet_to_message(data: bytes | bytearray | memoryview) -> Message:
    """Decode bytes made by ``message_to_packet`` (or any UserMessage); anything else raises ``WireError``."""
    return user_message_to_message(packet_to_user_message(data))
