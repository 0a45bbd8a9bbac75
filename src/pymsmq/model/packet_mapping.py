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
``move_count``, ``last_move_time`` (and the subqueue), which the store keeps beside the packet; and
two facts a *receiving* queue manager derives and that no header holds: ``transaction_status_queue``
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

import uuid
from collections.abc import Mapping
from typing import Final

from pymsmq.errors import MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.model import simple_packet as _fast
from pymsmq.model.constants import MQ_MAX_MSG_LABEL_LEN
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import DEFAULT_PROVIDER_NAME, Message, label_units
from pymsmq.model.packet_queues import (
    canonical_format_name,
    check_element_count,
    decode_queues,
    encode_queues,
)
from pymsmq.model.simple_packet import SIMPLE_ATTRIBUTES
from pymsmq.wire._buffer import NULL_GUID
from pymsmq.wire.base_header import MAX_PACKET_SIZE
from pymsmq.wire.mqrr_headers import CompoundMessageHeader, DeadLetterHeader, SRMPEnvelopeHeader
from pymsmq.wire.optional_headers import DebugHeader, TransactionHeader
from pymsmq.wire.packet_types import TxSequenceID
from pymsmq.wire.security_header import ProviderInfo, SecurityHeader
from pymsmq.wire.user_message import UserMessage

__all__ = [
    "INTERIM_MAGIC",
    "NEAR_PACKET_LIMIT",
    "SIMPLE_ATTRIBUTES",
    "UNBOUNDED_PROPERTIES",
    "canonical_queues",
    "check_unencoded",
    "message_to_packet",
    "packet_to_message",
    "packet_to_user_message",
    "packet_with_destination",
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
    if provider is None and not _secures_anything(m):
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
    packet = _fast.simple_packet(message, _general_packet)
    if packet is not None:
        return packet
    return _general_packet(message)


#: An express message (never encoded when sent) is checked against the 4 MB PacketSize maximum by
#: encoding it when its body, extension and label (``message_size``) come within 64 KiB of it, the
#: room the headers and queue names of a message take, or when it holds one of these properties,
#: whose size has no bound of its own.
NEAR_PACKET_LIMIT: Final = MAX_PACKET_SIZE - 0x10000
UNBOUNDED_PROPERTIES: Final = frozenset(
    {
        "soap_envelope",
        "compound_message",
        "sender_id",
        "sender_certificate",
        "signature",
        "destination_symmetric_key",
    }
)


def check_unencoded(m: Message, size: int, attributes: Mapping[str, object]) -> None:
    """Refuse what no packet of ``m`` could hold, for a send that queues it without encoding it (an
    express message), as ``message_to_packet`` would refuse it: its strings (``check_strings``) when
    the label is not ASCII or holds a NUL, or a dead-letter queue is named; its size
    (``check_packet_size``) when ``size`` (its ``message_size``) comes within 64 KiB of the 4 MB or
    ``attributes`` (the message's ``__dict__``) hold a property of ``UNBOUNDED_PROPERTIES``.  For every
    send path (``Queue._enqueue``, the batched express sends), so that they judge a message alike.
    It also gives ``m`` what its packet would: the default provider name where a packet must state
    one (``authentication_provider_name`` None with nothing else to secure)."""
    label = m.label
    if (label and not label.isascii()) or "\x00" in label or m.dead_letter_queue is not None:
        check_strings(m)
    if m.authentication_provider_name is None and not _secures_anything(m):
        # Its packet states the provider (_security_header): the default one.  An express message,
        # never encoded, kept None where the same message through a server or a restart had it.
        m.authentication_provider_name = DEFAULT_PROVIDER_NAME
    if size > NEAR_PACKET_LIMIT or not UNBOUNDED_PROPERTIES.isdisjoint(attributes):
        check_packet_size(m)


def _secures_anything(m: Message) -> bool:
    # False when a SecurityHeader of ``m`` would carry nothing but the provider (_security_header).
    return bool(m.sender_id or m.sender_certificate or m.signature or m.destination_symmetric_key)


def check_packet_size(message: Message) -> None:
    """Raise MQ_ERROR_INSUFFICIENT_RESOURCES if the packet of ``message`` would exceed 4 MB.

    [MS-MQMQ] 2.2.19.1 PacketSize is at most 0x00400000, and MSMQ refuses to send a larger message
    ("insufficient resources").  ``message_to_packet`` raises that error itself; this is for a
    message that is queued without being encoded (an express message stays in memory), so that it
    is refused as a recoverable one would be.  Other encoding errors are not raised here.
    """
    try:
        message_to_packet(message)
    except MSMQError as exc:
        if exc.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES:
            raise


def check_strings(message: Message) -> None:
    """Raise what ``message_to_packet`` would for the message's strings, without encoding it (for a
    send that is refused before it gets an id; an express message is never encoded):
    MQ_ERROR_LABEL_TOO_LONG for a label over 249 UTF-16 units ([MS-MQMQ] 2.2.20.6 LabelLength),
    MQ_ERROR_ILLEGAL_PROPERTY_VALUE for a NUL in the label or in the dead-letter queue name."""
    label = message.label
    if "\x00" in label:
        raise _fail("label cannot contain NUL")
    units = label_units(label)
    if units > MQ_MAX_MSG_LABEL_LEN:
        # [MC-MQAC] 3.17.4.1.37 put_Label (characters are WCHARs).
        raise MSMQError(f"label has {units} UTF-16 units (max 249)", HResult.MQ_ERROR_LABEL_TOO_LONG)
    dead_letter = message.dead_letter_queue
    if dead_letter is not None and "\x00" in dead_letter:
        raise _fail("dead_letter_queue cannot contain NUL")


def packet_with_destination(data: bytes, message: Message) -> bytes | None:
    """``message_to_packet(message)`` from ``data``, its packet without the destination queue.

    See ``pymsmq.model.simple_packet.packet_with_destination``: ``data`` is the simple packet a
    client sent and ``message`` the message queued from it, whose header fields sending set are
    rewritten; None when queuing gave it a transaction or its values do not fit (then use
    ``message_to_packet``).
    """
    return _fast.packet_with_destination(data, message, _general_packet)


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
            m.destination_queue, m.admin_queue, m.response_queue, m.destination_format_name
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
        if exc.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES:  # over the 4 MB PacketSize maximum
            # (the packet as the queue manager writes it, which can be larger than one a client
            # sent: a "private queue of the source computer" reply queue names that computer;
            # outside QA, the size named was not one the client knew of)
            raise MSMQError(
                f"the message is larger than MSMQ allows: {exc.message} (its packet as stored, with its"
                " queue names and headers as this queue manager writes them)",
                exc.hresult,
            ) from None
        raise _fail(str(exc)) from None


def check_reply_queue_sizes(message: Message) -> None:
    """MQ_ERROR_ILLEGAL_FORMATNAME when ``message``'s administration or response queue name has more
    than ``MAX_NAME_ELEMENTS`` elements (counted, not parsed), as ``canonical_queues`` would refuse
    it: for a sender that leaves the rest of the check to the queue manager (the remote client; a
    server would refuse the packet's lists as over its decoding limit, MQ_ERROR_INSUFFICIENT_RESOURCES)."""
    if message.admin_queue is not None:
        check_element_count(message.admin_queue, "admin_queue")
    if message.response_queue is not None:
        check_element_count(message.response_queue, "response_queue")


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
    m.body = um.body  # an SRMP message's body may be in its CompoundMessageHeader
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
    m.destination_queue, m.admin_queue, m.response_queue, dest_set = decode_queues(
        uflags,
        source,
        user.queue_manager_address,
        user.destination_queue,
        user.admin_queue,
        user.response_queue,
        um.multi_queue_format_header,
    )
    if dest_set is not None:
        m.destination_format_name = dest_set
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
