"""``Message`` <-> the SEND/RECEIVE payload fields: a UserMessage packet plus a property array.

docs/protocol.md 5, SEND and RECEIVE: a message travels as one [MS-MQMQ] 2.2.20 UserMessage packet,
the canonical encoding of ``pymsmq.model.packet_mapping`` (every non-fact property has a place in
it); queue-manager facts (lookup id, arrival time, abort/move counts) travel beside it as
PROPID_M_* values.  The common message shape takes the ``fast_packet`` path (one ``struct`` pack
or unpack), everything else the general mapping; both give the same bytes and the same message.

The packet of a SEND has no destination queue (the server takes it from the queue handle); the
packet of a RECEIVE answer has none when the message's destination is the handle's queue (the
client fills it in).  ``PROPID_PYMSMQ_MESSAGE`` (VT_BLOB, the whole message again) is what servers
before the lossless mapping sent beside the packet: it is still understood when received (it then
wins over the packet) but never sent.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final

from pymsmq.errors import MSMQError, WireError, reason
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import message_to_packet, packet_to_message
from pymsmq.protocol._fields import Props
from pymsmq.protocol.batch_fast import decode_plain_at
from pymsmq.protocol.fast_packet import (
    decode_simple,
    decode_simple_at,
    encode_plain,
    encode_simple,
    guid_bytes_le,
)
from pymsmq.protocol.hot import _RECEIVE_FACTS, _SEND_FACTS
from pymsmq.wire.propvariant import PropVariant
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
    "PROPID_PYMSMQ_HELD",
    "PROPID_PYMSMQ_MESSAGE",
    "apply_facts",
    "decode_message",
    "decode_packet_message",
    "encode_message",
    "encode_packet",
    "fact_properties",
    "held_properties",
    "is_held",
    "needs_blob",
    "parse_receive_answer",
    "parse_send_answer",
    "props_dict",
    "receive_answer_body",
    "send_answer_body",
    "send_facts",
    "sent_packet_size",
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
#: In a RECEIVE answer to ReceiveFlags.CONFIRM: VT_UI1 1 when the message is held until END_RECEIVE
#: (a recoverable message received outside a transaction; docs/protocol.md, END_RECEIVE).
PROPID_PYMSMQ_HELD: Final = 0x7F000003

#: What the pymsmq client asks for (the id and sent time are in the packet already).
CLIENT_RECEIVE_PROPIDS: Final = (
    PROPID_M_LOOKUPID,
    PROPID_M_ARRIVEDTIME,
    PROPID_M_ABORT_COUNT,
    PROPID_M_MOVE_COUNT,
    PROPID_M_LAST_MOVE_TIME,
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
_copy = Message.copy


def needs_blob(message: Message) -> bool:
    """Always False: the UserMessage packet carries every property since the lossless mapping."""
    return False


def encode_packet(message: Message, destination: str | None = None) -> bytes:
    """The UserMessage packet of a validated ``message``.

    ``destination``: the queue the receiver knows the message is in (the handle's format name); a
    ``destination_queue`` equal to it is left out of the packet, any other one is kept.  SEND
    packets pass ``destination=None`` and never carry one.  Raises ``MSMQError``
    (MQ_ERROR_ILLEGAL_PROPERTY_VALUE) for values the packet cannot hold.
    """
    dest = message.destination_queue
    if dest is None or dest == destination or destination is None:
        # The plain shape first (most queued messages), then the simple one (same bytes).
        packet = encode_plain(message) or encode_simple(message)
        if packet is not None:
            return packet
        if dest is not None and message.destination_format_name is None:
            # (A copy of a message sent to several queues keeps its queue: the packet names the set.)
            message = _copy(message)
            message.destination_queue = None
    return message_to_packet(message)


def encode_message(message: Message, destination: str | None = None) -> tuple[bytes, Props]:
    """``(encode_packet(message, destination), ())``: the PACKET bytes and the extra properties (none)."""
    return encode_packet(message, destination), ()


def props_dict(props: Iterable[tuple[int, PropVariant]]) -> dict[int, object]:
    """``{PROPID: value}`` of a property array (the last value wins)."""
    return {pid: pv.value for pid, pv in props}


def decode_packet_message(packet: bytes) -> Message:
    """The ``Message`` a UserMessage packet carries (``WireError`` if malformed)."""
    m = decode_simple(packet)
    if m is not None:
        return m
    try:
        return packet_to_message(packet)
    except MSMQError as exc:
        # (a reader's element budget that ran out keeps its MQ_ERROR_INSUFFICIENT_RESOURCES)
        code = exc.hresult if exc.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES else None
        raise WireError(f"the packet's properties are invalid: {reason(exc)}", None, code) from None


def sent_packet_size(packet: bytes, props: Props) -> int:
    """The size of the packet a SEND's message is decoded from (``decode_message``): the legacy
    ``PROPID_PYMSMQ_MESSAGE`` blob's when ``props`` hold one, else ``packet``'s; what a server's
    message size limit applies to (outside QA: the blob went around it)."""
    for propid, pv in props:
        if propid == PROPID_PYMSMQ_MESSAGE and isinstance(pv.value, bytes):
            return len(pv.value)
    return len(packet)


def decode_message(packet: bytes | None, props: Props) -> Message:
    """The ``Message`` a RECEIVE answer (or a SEND request) carries; ``WireError`` if malformed.

    A ``PROPID_PYMSMQ_MESSAGE`` blob (from an older server) wins over the packet; queue-manager
    facts come from ``props``.
    """
    if packet is not None and not props:
        return decode_packet_message(packet)
    values = props_dict(props)
    blob = values.get(PROPID_PYMSMQ_MESSAGE)
    if isinstance(blob, bytes):
        m = decode_packet_message(blob)
    elif packet is not None:
        m = decode_packet_message(packet)
    else:
        m = Message()
    apply_facts(m, values, blob is None)
    return m


def held_properties(props: Props) -> Props:
    """``props`` with the mark of a message held until END_RECEIVE (``PROPID_PYMSMQ_HELD``)."""
    return (*props, (PROPID_PYMSMQ_HELD, PropVariant(VarType.VT_UI1, 1)))


def is_held(props: Props) -> bool:
    """True when a RECEIVE answer's ``props`` say that its message waits for END_RECEIVE."""
    return any(pid == PROPID_PYMSMQ_HELD and pv.value == 1 for pid, pv in props)


def apply_facts(m: Message, values: dict[int, object], ids: bool = True) -> None:
    """Set the queue-manager facts of ``values`` (``props_dict`` of a RECEIVE answer) on ``m``."""
    lookup_id = values.get(PROPID_M_LOOKUPID)
    if type(lookup_id) is int:
        m.lookup_id = lookup_id
    arrived = values.get(PROPID_M_ARRIVEDTIME)
    if type(arrived) is int:
        m.arrived_time = float(arrived)
    count = values.get(PROPID_M_ABORT_COUNT)
    if type(count) is int:
        m.abort_count = count
    count = values.get(PROPID_M_MOVE_COUNT)
    if type(count) is int:
        m.move_count = count
    moved = values.get(PROPID_M_LAST_MOVE_TIME)
    if type(moved) is int and moved:  # 0: never moved
        m.last_move_time = float(moved)
    if ids:
        msgid = values.get(PROPID_M_MSGID)
        if isinstance(msgid, bytes) and len(msgid) == 20:
            m.id = ObjectId.from_bytes(msgid)
        sent = values.get(PROPID_M_SENTTIME)
        if type(sent) is int:
            m.sent_time = float(sent)


def fact_properties(message: Message, propids: Iterable[int], blob: bool = False) -> Props:
    """The PROPID_M_* facts of a received ``message`` that ``propids`` asks for (+ the blob if asked)."""
    if propids == CLIENT_RECEIVE_PROPIDS and not blob:
        # The pymsmq client's request: straight-line (the hot path of every receive).
        m = message
        return (
            (PROPID_M_LOOKUPID, _pv(_UI8, m.lookup_id & 0xFFFFFFFFFFFFFFFF)),
            (PROPID_M_ARRIVEDTIME, _pv(_UI4, _u32(m.arrived_time))),
            (PROPID_M_ABORT_COUNT, _pv(_UI4, min(max(m.abort_count, 0), _INFINITE))),
            (PROPID_M_MOVE_COUNT, _pv(_UI4, min(max(m.move_count, 0), _INFINITE))),
            (PROPID_M_LAST_MOVE_TIME, _pv(_UI4, _u32(m.last_move_time))),
        )
    out: list[tuple[int, PropVariant]] = []
    for pid in propids:
        pv = _fact(message, pid)
        if pv is not None:
            out.append((pid, pv))
    if blob:
        out.append((PROPID_PYMSMQ_MESSAGE, PropVariant(VarType.VT_BLOB, encode_packet(message, ""))))
    return tuple(out)


def send_facts(message: Message) -> Props:
    """The facts a SEND answer carries: PROPID_M_MSGID and PROPID_M_SENTTIME of the sent ``message``."""
    mid = message.id
    return (
        (PROPID_M_MSGID, _pv(_VECTOR_UI1, bytes(mid) if mid is not None else _ZERO_ID)),
        (PROPID_M_SENTTIME, _pv(_UI4, _u32(message.sent_time))),
    )


def _u32(value: float | None) -> int:
    if value is None:
        return 0
    return min(max(int(value), 0), _INFINITE)


_new = object.__new__
_set = object.__setattr__
_UI4: Final = VarType.VT_UI4
_UI8: Final = VarType.VT_UI8
_VECTOR_UI1: Final = VarType.VT_VECTOR_UI1


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
        return _pv(VarType.VT_UI4, _u32(m.last_move_time))
    if pid == PROPID_M_MSGID:
        return _pv(VarType.VT_VECTOR_UI1, bytes(m.id) if m.id is not None else _ZERO_ID)
    if pid == PROPID_M_SENTTIME:
        return _pv(VarType.VT_UI4, _u32(m.sent_time))
    return None


# ---------------------------------------------------------------------------- payload fast lanes
# The SEND and RECEIVE answers of the common shape packed/unpacked in one ``struct`` call, without
# PropVariant objects (docs/protocol.md 5; the fact arrays are [MS-MQCN] 2.2.3 PROPVALUE arrays).
# Each builder gives exactly the bytes of the general writer, each parser exactly what the general
# reader plus ``decode_message``/``apply_facts`` give, or None ("not this shape": use the general path).
_U32S: Final = struct.Struct("<I")
_VT_V: Final = int(VarType.VT_VECTOR_UI1)
_VT_4: Final = int(VarType.VT_UI4)
_VT_8: Final = int(VarType.VT_UI8)
_MASK64: Final = 0xFFFFFFFFFFFFFFFF


def send_answer_body(message: Message) -> bytes:
    """The SEND answer payload carrying ``send_facts(message)`` (the bytes ``SendResponse.encode`` gives)."""
    mid = message.id
    return _SEND_FACTS.pack(
        2,
        PROPID_M_MSGID,
        _VT_V,
        20,
        guid_bytes_le(mid.lineage) + _U32S.pack(mid.uniquifier) if mid is not None else _ZERO_ID,
        PROPID_M_SENTTIME,
        _VT_4,
        _u32(message.sent_time),
    )


def receive_answer_body(packet: bytes | None, message: Message) -> bytes | None:
    """The RECEIVE answer payload: ``packet`` and ``fact_properties(message, CLIENT_RECEIVE_PROPIDS)``.

    The bytes ``ReceiveResponse.encode`` gives; None when a fact is not an int (general path).
    """
    m = message
    try:
        facts = _RECEIVE_FACTS.pack(
            5,
            PROPID_M_LOOKUPID,
            _VT_8,
            m.lookup_id & _MASK64,
            PROPID_M_ARRIVEDTIME,
            _VT_4,
            _u32(m.arrived_time),
            PROPID_M_ABORT_COUNT,
            _VT_4,
            min(max(m.abort_count, 0), _INFINITE),
            PROPID_M_MOVE_COUNT,
            _VT_4,
            min(max(m.move_count, 0), _INFINITE),
            PROPID_M_LAST_MOVE_TIME,
            _VT_4,
            _u32(m.last_move_time),
        )
    except (struct.error, TypeError):
        return None
    if packet is None:
        return b"\x00\x00\x00\x00" + facts
    return b"".join((_U32S.pack(len(packet)), packet, facts))


def parse_send_answer(payload: bytes) -> tuple[bytes, int] | None:
    """``(message id bytes, sent time)`` of a SEND answer payload of the common shape, else None."""
    if len(payload) != _SEND_FACTS.size:
        return None
    count, p1, vt1, size, msgid, p2, vt2, sent = _SEND_FACTS.unpack(payload)
    if (
        count != 2
        or p1 != PROPID_M_MSGID
        or vt1 != _VT_V
        or size != 20
        or p2 != PROPID_M_SENTTIME
        or vt2 != _VT_4
    ):
        return None
    return msgid, sent


# _RECEIVE_FACTS with its constant (count, propid, type) runs read as bytes: one 10-field unpack and
# five compares ([MS-MQCN] 2.2.3 PROPVALUE array of CLIENT_RECEIVE_PROPIDS: VT_UI8 lookup id, VT_UI4
# arrived time, abort count, move count, last move time).
_RECEIVE_FACT_RUNS: Final = struct.Struct("<10sQ6sI6sI6sI6sI")
_FACTS_1: Final = struct.pack("<IIH", 5, PROPID_M_LOOKUPID, _VT_8)
_FACTS_2: Final = struct.pack("<IH", PROPID_M_ARRIVEDTIME, _VT_4)
_FACTS_3: Final = struct.pack("<IH", PROPID_M_ABORT_COUNT, _VT_4)
_FACTS_4: Final = struct.pack("<IH", PROPID_M_MOVE_COUNT, _VT_4)
_FACTS_5: Final = struct.pack("<IH", PROPID_M_LAST_MOVE_TIME, _VT_4)


def parse_receive_answer(payload: bytes) -> Message | None:
    """The message of a RECEIVE answer payload of the common shape (a simple packet and the facts
    of ``CLIENT_RECEIVE_PROPIDS``), as ``decode_message`` makes it; None for anything else."""
    n = len(payload)
    if n < 4:
        return None
    size = _U32S.unpack_from(payload, 0)[0]
    end = 4 + size
    # No _packet_ok (the general reader's PACKET check) here: every packet decode_simple accepts
    # passes it (version, signature, no IN/SH flags, PacketSize = its length, at most 4 MiB).
    if n != end + _RECEIVE_FACTS.size or end == 4:
        return None
    f1, lookup, f2, arrived, f3, aborts, f4, moves, f5, moved = _RECEIVE_FACT_RUNS.unpack_from(payload, end)
    if f1 != _FACTS_1 or f2 != _FACTS_2 or f3 != _FACTS_3 or f4 != _FACTS_4 or f5 != _FACTS_5:
        return None
    # The plain shape first (what the server writes for a plain queued message), in place.
    m = decode_plain_at(payload, 4, size) or decode_simple_at(payload, 4, size)
    if m is None:
        return None
    m.lookup_id = lookup
    m.arrived_time = float(arrived)
    m.abort_count = aborts
    m.move_count = moves
    if moved:
        m.last_move_time = float(moved)
    return m
