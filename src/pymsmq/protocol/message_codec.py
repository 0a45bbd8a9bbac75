"""``Message`` <-> the SEND/RECEIVE payload fields: a UserMessage packet plus a property array.

docs/protocol.md 5, SEND and RECEIVE: a message travels as one [MS-MQMQ] 2.2.20 UserMessage packet;
queue-manager facts (lookup id, arrival time, abort/move counts) travel beside it as PROPID_M_*
values.  The packet carries the properties it has a place for:

==========================  ===================================================================
Message attribute           packet field ([MS-MQMQ] 2.2.19)
==========================  ===================================================================
priority                    BaseHeader.Flags.PR (0..7)
max_time_to_reach_queue     BaseHeader.TimeToReachQueue (seconds, 0xFFFFFFFF = INFINITE)
max_time_to_receive         UserHeader.TimeToBeReceived (seconds)
delivery                    UserHeader.Flags.DM (1 = recoverable)
journal                     UserHeader.Flags.JN (MQMSG_DEADLETTER) and JP (MQMSG_JOURNAL)
id, source_machine_guid     UserHeader.SourceQueueManager + MessageID
sent_time                   UserHeader.SentTime (whole seconds)
label, body, extension      MessagePropertiesHeader.Label / MessageBody / MessageExtension
msg_class, correlation_id   MessagePropertiesHeader.MessageClass / CorrelationID
body_type, app_specific     MessagePropertiesHeader.BodyType / ApplicationTag
==========================  ===================================================================

Every other property (admin/response queues, acknowledgements, security and transaction
properties, ...) that differs from its default makes the sender add ``PROPID_PYMSMQ_MESSAGE``
(VT_BLOB): the model's complete encoding of the message (``pymsmq.model.packet_mapping``), which
the receiver then uses instead of the packet fields.  This is a pymsmq extension (docs/protocol.md,
"pymsmq extensions"); peers that do not know it ignore it and read the packet.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Final

from pymsmq.errors import MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import message_to_packet, packet_to_message
from pymsmq.protocol._fields import Props
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.user_message import UserMessage
from pymsmq.wire.vartype import VarType

__all__ = [
    "CLIENT_RECEIVE_PROPIDS",
    "DEFAULT_RECEIVE_PROPIDS",
    "PROPID_M_ABORT_COUNT",
    "PROPID_M_ARRIVEDTIME",
    "PROPID_M_LAST_MOVE_TIME",
    "PROPID_M_LOOKUPID",
    "PROPID_M_MOVE_COUNT",
    "PROPID_M_MSGID",
    "PROPID_M_SENTTIME",
    "PROPID_PYMSMQ_MESSAGE",
    "decode_message",
    "encode_message",
    "fact_properties",
    "needs_blob",
    "props_dict",
]

# mq.h / [MS-MQMQ] 2.3.2 message property identifiers used beside the packet.
PROPID_M_MSGID: Final = 2
PROPID_M_SENTTIME: Final = 31
PROPID_M_ARRIVEDTIME: Final = 32
PROPID_M_LOOKUPID: Final = 60
PROPID_M_ABORT_COUNT: Final = 69
PROPID_M_MOVE_COUNT: Final = 70
PROPID_M_LAST_MOVE_TIME: Final = 75
#: pymsmq extension: the model's complete encoding of a message whose properties do not all fit
#: in the UserMessage packet (VT_BLOB).  Outside the mq.h PROPID ranges.
PROPID_PYMSMQ_MESSAGE: Final = 0x7F000001

#: What the pymsmq client asks for (the id and sent time are in the packet already).
CLIENT_RECEIVE_PROPIDS: Final = (
    PROPID_M_LOOKUPID,
    PROPID_M_ARRIVEDTIME,
    PROPID_M_ABORT_COUNT,
    PROPID_M_MOVE_COUNT,
)
#: docs/protocol.md 5, RECEIVE: the properties a server returns when ``propids`` is empty.
DEFAULT_RECEIVE_PROPIDS: Final = (
    PROPID_M_LOOKUPID,
    PROPID_M_ARRIVEDTIME,
    PROPID_M_ABORT_COUNT,
    PROPID_M_MOVE_COUNT,
    PROPID_M_LAST_MOVE_TIME,
    PROPID_M_MSGID,
    PROPID_M_SENTTIME,
)

_INFINITE: Final = 0xFFFFFFFF
_ZERO_ID: Final = bytes(20)
_NULL_GUID: Final = uuid.UUID(int=0)
# Attributes the packet carries (see the table above) and queue-manager facts (carried as PROPID_M_*).
_IN_PACKET: Final = frozenset(
    {
        "priority",
        "max_time_to_reach_queue",
        "max_time_to_receive",
        "delivery",
        "journal",
        "id",
        "source_machine_guid",
        "sent_time",
        "label",
        "body",
        "extension",
        "msg_class",
        "correlation_id",
        "body_type",
        "app_specific",
    }
)
_FACTS: Final = frozenset({"lookup_id", "arrived_time", "abort_count", "move_count", "destination_queue"})
_DEFAULT: Final = Message()
_EXTRA: Final = tuple(
    (name, getattr(_DEFAULT, name))
    for name in Message.__dataclass_fields__
    if name not in _IN_PACKET and name not in _FACTS
)


def _needs_blob(m: Message) -> bool:
    for name, default in _EXTRA:
        if getattr(m, name) != default:
            return True
    if m.journal & ~3 or m.msg_class > 0xFFFF:
        return True
    if m.correlation_id is not None and bytes(m.correlation_id) == _ZERO_ID:
        return True  # an explicit all-zero id must not come back as None
    mid = m.id
    if mid is not None and mid.lineage != (m.source_machine_guid or _NULL_GUID):
        return True
    # SentTime travels in whole seconds (UserHeader.SentTime, [MS-MQMQ] 2.2.19.2).
    st = m.sent_time
    return st is not None and not 0 <= st <= _INFINITE


def encode_message(message: Message) -> tuple[bytes, Props]:
    """The PACKET bytes and the extra properties (``PROPID_PYMSMQ_MESSAGE`` when needed) of ``message``.

    The packet has no destination queue: the server fills it in from the queue handle.  Raises
    ``MSMQError`` (MQ_ERROR_ILLEGAL_PROPERTY_VALUE) for values the packet cannot hold.
    """
    m = message
    mid = m.id
    source = m.source_machine_guid or (mid.lineage if mid is not None else _NULL_GUID)
    try:
        packet = UserMessage.build(
            destination=None,
            body=m.body,
            label=m.label or None,
            priority=m.priority,
            source_queue_manager=source,
            message_id=mid.uniquifier if mid is not None else 0,
            sent_time=int(m.sent_time) if m.sent_time is not None and 0 <= m.sent_time <= _INFINITE else 0,
            time_to_reach_queue=m.max_time_to_reach_queue,
            time_to_be_received=m.max_time_to_receive,
            recoverable=m.delivery == 1,
            journal_positive=bool(m.journal & 2),
            journal_negative=bool(m.journal & 1),
            message_class=m.msg_class & 0xFFFF,
            correlation_id=bytes(m.correlation_id) if m.correlation_id is not None else _ZERO_ID,
            body_type=m.body_type,
            application_tag=m.app_specific,
            extension=m.extension,
        ).encode()
    except WireError as exc:
        raise MSMQError(
            f"the message cannot be encoded: {exc}", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
        ) from None
    if _needs_blob(m):
        return packet, ((PROPID_PYMSMQ_MESSAGE, PropVariant(VarType.VT_BLOB, message_to_packet(m))),)
    return packet, ()


def props_dict(props: Iterable[tuple[int, PropVariant]]) -> dict[int, object]:
    """``{PROPID: value}`` of a property array (the last value wins)."""
    return {pid: pv.value for pid, pv in props}


def decode_message(packet: bytes | None, props: Props) -> Message:
    """The ``Message`` a RECEIVE answer (or a SEND request) carries; ``WireError`` if malformed.

    ``PROPID_PYMSMQ_MESSAGE`` wins over the packet; queue-manager facts come from ``props``.
    """
    values = props_dict(props)
    blob = values.get(PROPID_PYMSMQ_MESSAGE)
    if isinstance(blob, bytes):
        m = packet_to_message(blob)
    elif packet is not None:
        m = _from_packet(UserMessage.decode(packet))
    else:
        m = Message()
    lookup_id = values.get(PROPID_M_LOOKUPID)
    if isinstance(lookup_id, int):
        m.lookup_id = lookup_id
    arrived = values.get(PROPID_M_ARRIVEDTIME)
    if isinstance(arrived, int):
        m.arrived_time = float(arrived)
    count = values.get(PROPID_M_ABORT_COUNT)
    if isinstance(count, int):
        m.abort_count = count
    count = values.get(PROPID_M_MOVE_COUNT)
    if isinstance(count, int):
        m.move_count = count
    if blob is None:
        msgid = values.get(PROPID_M_MSGID)
        if isinstance(msgid, bytes) and len(msgid) == 20:
            m.id = ObjectId.from_bytes(msgid)
        sent = values.get(PROPID_M_SENTTIME)
        if isinstance(sent, int):
            m.sent_time = float(sent)
    return m


def _from_packet(um: UserMessage) -> Message:
    bh = um.base_header
    uh = um.user_header
    mp = um.message_properties_header
    if mp is None:
        raise WireError("the UserMessage has no MessagePropertiesHeader")
    flags = uh.flags
    correlation = bytes(mp.correlation_id)
    source = uh.source_queue_manager
    try:
        return Message(
            body=bytes(mp.body),
            label=mp.label or "",
            body_type=mp.body_type,
            extension=bytes(mp.extension),
            app_specific=mp.application_tag,
            correlation_id=None if correlation == _ZERO_ID else ObjectId.from_bytes(correlation),
            msg_class=mp.message_class,
            priority=bh.flags & 0x7,
            delivery=1 if flags & 0x20 else 0,
            journal=(1 if flags & 0x100 else 0) | (2 if flags & 0x200 else 0),
            max_time_to_reach_queue=bh.time_to_reach_queue,
            max_time_to_receive=uh.time_to_be_received,
            id=ObjectId(source, uh.message_id) if source != _NULL_GUID or uh.message_id else None,
            source_machine_guid=source if source != _NULL_GUID else None,
            sent_time=float(uh.sent_time) if uh.sent_time else None,
        )
    except MSMQError as exc:
        raise WireError(f"the packet's properties are invalid: {exc}") from None


def fact_properties(message: Message, propids: Iterable[int], blob: bool = False) -> Props:
    """The PROPID_M_* facts of a received ``message`` that ``propids`` asks for (+ the blob if asked)."""
    out: list[tuple[int, PropVariant]] = []
    for pid in propids:
        pv = _fact(message, pid)
        if pv is not None:
            out.append((pid, pv))
    if blob:
        out.append((PROPID_PYMSMQ_MESSAGE, PropVariant(VarType.VT_BLOB, message_to_packet(message))))
    return tuple(out)


def _u32(value: float | None) -> int:
    if value is None:
        return 0
    return min(max(int(value), 0), _INFINITE)


_new = object.__new__
_set = object.__setattr__


def _pv(vt: VarType, value: object) -> PropVariant:
    # The values below are in range by construction: skip PropVariant's validation (hot path).
    pv = _new(PropVariant)
    _set(pv, "vt", vt)
    _set(pv, "value", value)
    return pv


def _fact(m: Message, pid: int) -> PropVariant | None:
    if pid == PROPID_M_LOOKUPID:
        return _pv(VarType.VT_UI8, m.lookup_id & 0xFFFFFFFFFFFFFFFF)
    if pid == PROPID_M_ARRIVEDTIME:
        return _pv(VarType.VT_UI4, _u32(m.arrived_time))
    if pid == PROPID_M_ABORT_COUNT:
        return _pv(VarType.VT_UI4, min(max(m.abort_count, 0), _INFINITE))
    if pid == PROPID_M_MOVE_COUNT:
        return _pv(VarType.VT_UI4, min(max(m.move_count, 0), _INFINITE))
    if pid == PROPID_M_LAST_MOVE_TIME:
        return _pv(VarType.VT_UI4, 0)
    if pid == PROPID_M_MSGID:
        return _pv(VarType.VT_VECTOR_UI1, bytes(m.id) if m.id is not None else _ZERO_ID)
    if pid == PROPID_M_SENTTIME:
        return _pv(VarType.VT_UI4, _u32(m.sent_time))
    return None


def needs_blob(message: Message) -> bool:
    """True when ``message`` has properties the UserMessage packet cannot carry."""
    return _needs_blob(message)
