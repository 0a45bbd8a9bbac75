"""SEND_MANY and RECEIVE_MANY (pymsmq extension, docs/protocol.md 11): many messages per frame.

A SEND_MANY request carries N messages, each exactly what a SEND carries (an [MS-MQMQ] 2.2.20
UserMessage packet and a property array); its answer carries N send results (an HRESULT each, and
on success the facts a SEND answer carries).  A RECEIVE_MANY request asks for up to ``max_count``
messages from the head of a queue (or peeks at them); its answer carries them as RECEIVE answers
do: a packet and the wanted PROPID_M_* facts each.

The message lists travel in one BYTES field each (like READ_RANGE's MESSAGE_BATCH), so the frame
payloads keep the field types of docs/protocol.md 3; their inner layouts are:

* MESSAGE_LIST (``SendManyRequest.messages``, ``ReceiveManyResponse.messages``):
  u32 count, then count x (packet PACKET, properties PROPS);
* SEND_RESULTS (``SendManyResponse.results``): u32 count, then count x (hresult u32, properties
  PROPS, text STR) -- hresult 0 with the SEND facts, or an MSMQ HRESULT, no properties and its text.

``encode_*``/``decode_*`` are the codecs of these blobs (``decode_*`` raises ``WireError``, never
another exception); ``encode_packets`` and ``send_result`` are fast paths for the common shapes that
give the same bytes as the general encoders (tests compare both).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pymsmq.errors import WireError, reason
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol._fields import BYTES, PROPIDS, STR, U8, U32, XACT, Props, TransactionRef, check_packet
from pymsmq.protocol._payload import payload
from pymsmq.protocol.batch_fast import decode_plain_at
from pymsmq.protocol.codes import ManyFlags, Op
from pymsmq.protocol.fast_packet import decode_simple_at
from pymsmq.protocol.hot import _RECEIVE_FACTS, _pv, _read_props, _write_props
from pymsmq.protocol.message_codec import (
    _FACTS_1,
    _FACTS_2,
    _FACTS_3,
    _FACTS_4,
    _FACTS_5,
    _RECEIVE_FACT_RUNS,
    CLIENT_RECEIVE_PROPIDS,
    PROPID_M_ABORT_COUNT,
    PROPID_M_ARRIVEDTIME,
    PROPID_M_LAST_MOVE_TIME,
    PROPID_M_LOOKUPID,
    PROPID_M_MOVE_COUNT,
    _u32,
    decode_message,
    decode_packet_message,
    fact_properties,
)
from pymsmq.protocol.messages import REQUEST_TYPES, RESPONSE_TYPES, Request, Response
from pymsmq.wire._buffer import Reader
from pymsmq.wire.base_header import INFINITE, BaseHeaderFlags
from pymsmq.wire.propvariant import read_props
from pymsmq.wire.vartype import VarType

__all__ = [
    "ManyFlags",
    "ReceiveManyRequest",
    "ReceiveManyResponse",
    "SendManyRequest",
    "SendManyResponse",
    "SendResult",
    "client_receive_facts",
    "decode_messages",
    "decode_received",
    "decode_send_facts",
    "decode_send_results",
    "encode_messages",
    "encode_packets",
    "encode_send_results",
    "error_result",
    "receive_facts",
    "send_result",
    "sent_entry",
]

SendResult = tuple[int, Props, str]
"""One SEND_RESULTS entry: (hresult, properties, text); hresult 0 = sent, properties = its facts."""

_U32: Final = struct.Struct("<I")
_U32U32: Final = struct.Struct("<II")
_PACKET_HEAD: Final = struct.Struct("<BBHII")  # BaseHeader: version, reserved, flags, signature, size
_VERSION: Final = 0x10  # [MS-MQMQ] 2.2.19.1 VersionNumber
_SIGNATURE: Final = 0x524F494C  # [MS-MQMQ] 2.2.19.1 Signature "LIOR"
_MAX_PACKET: Final = 0x00400000  # [MS-MQMQ] 2.2.19.1 PacketSize limit
_B_IN: Final = int(BaseHeaderFlags.IN)  # an internal packet, not a UserMessage
_B_SH: Final = int(BaseHeaderFlags.SH)  # a 16-byte SessionHeader follows PacketSize bytes
_ZERO4: Final = b"\x00\x00\x00\x00"
_OK_HEAD: Final = _ZERO4  # hresult 0
_NO_TEXT: Final = b"\x00\x00"  # STR of length 0
# A SEND answer's facts (PROPID_M_MSGID VT_VECTOR_UI1 of 20 bytes, PROPID_M_SENTTIME VT_UI4) in
# one pack ([MS-MQCN] 2.2.3 PROPVALUE layouts), between hresult 0 and an empty text.
_SEND_OK: Final = struct.Struct("<IIIHI20sIHIH")
_SEND_OK_SPLIT: Final = struct.Struct("<IIIHI16sIIHIH")  # the same bytes, the id in two parts
_PROPID_M_MSGID: Final = 2
_PROPID_M_SENTTIME: Final = 31
_VT_VECTOR_UI1: Final = 0x1011
_VT_UI4: Final = 0x0013
_ZERO_ID: Final = bytes(20)
_VT_UI8: Final = 0x0015
_VECTOR_UI1: Final = VarType.VT_VECTOR_UI1
_UI4: Final = VarType.VT_UI4


# ---------------------------------------------------------------------------------- payloads


@payload(U32, XACT, BYTES)
@dataclass(frozen=True, slots=True)
class SendManyRequest(Request):
    """SEND_MANY: the MESSAGE_LIST ``messages`` to the queue behind ``handle``, in ``transaction``.

    Each message is handled as a SEND of its packet and properties would be, in list order.
    """

    OP = Op.SEND_MANY
    handle: int
    transaction: TransactionRef = None
    messages: bytes = b"\x00\x00\x00\x00"


@payload(BYTES)
@dataclass(frozen=True, slots=True)
class SendManyResponse(Response):
    """SEND_MANY answer: the SEND_RESULTS ``results``, one per message of the request, in order."""

    OP = Op.SEND_MANY
    results: bytes = b"\x00\x00\x00\x00"


@payload(U32, U32, U32, U32, XACT, PROPIDS)
@dataclass(frozen=True, slots=True)
class ReceiveManyRequest(Request):
    """RECEIVE_MANY: up to ``max_count`` messages from the head of the queue behind ``handle``.

    ``request_timeout`` (ms, 0xFFFFFFFF = INFINITE) bounds the wait for the FIRST message; then the
    server takes what is available, up to ``max_count``.  ``flags``: ``ManyFlags``.  ``transaction``
    and ``propids`` are those of RECEIVE.
    """

    OP = Op.RECEIVE_MANY
    handle: int
    max_count: int = 1
    request_timeout: int = INFINITE
    flags: int = ManyFlags.RECEIVE
    transaction: TransactionRef = None
    propids: tuple[int, ...] = ()


@payload(U8, U32, STR, BYTES)
@dataclass(frozen=True, slots=True)
class ReceiveManyResponse(Response):
    """RECEIVE_MANY answer: the MESSAGE_LIST ``messages`` (possibly empty: none came in time).

    ``more`` is 1 when the frame limit cut the batch short (more messages may be waiting);
    ``hresult`` (with ``text``) is non-zero when an error stopped the batch after these messages.
    """

    OP = Op.RECEIVE_MANY
    more: int = 0
    hresult: int = 0
    text: str = ""
    messages: bytes = b"\x00\x00\x00\x00"


# Registered here (this module is imported by pymsmq.protocol) because messages.py cannot import it.
for _cls in (SendManyRequest, ReceiveManyRequest):
    REQUEST_TYPES[_cls.OP] = _cls
for _rcls in (SendManyResponse, ReceiveManyResponse):
    RESPONSE_TYPES[_rcls.OP] = _rcls


# ---------------------------------------------------------------------------------- MESSAGE_LIST


def encode_messages(items: Sequence[tuple[bytes, Props]]) -> bytes:
    """MESSAGE_LIST bytes of (packet, properties) pairs (the packets are not re-checked here)."""
    parts = [_U32.pack(len(items))]
    append = parts.append
    pack = _U32.pack
    for packet, props in items:
        append(pack(len(packet)))
        append(packet)
        append(_write_props(props) if props else _ZERO4)
    return b"".join(parts)


def encode_packets(packets: Sequence[bytes]) -> bytes:
    """MESSAGE_LIST bytes of packets without properties (``encode_messages`` with empty arrays)."""
    pack = _U32.pack
    parts = [pack(len(packets))]
    append = parts.append
    for packet in packets:
        append(pack(len(packet)))
        append(packet)
        append(_ZERO4)
    return b"".join(parts)


def _bad_packet(data: bytes, pos: int, n: int) -> WireError:
    # The precise error of the PACKET codec for data[pos:pos+n] (known to be bad).
    try:
        check_packet(data[pos : pos + n])
    except WireError as exc:
        return WireError(reason(exc), pos)
    return WireError("MESSAGE_LIST: bad packet", pos)  # pragma: no cover - the caller found it bad


def _entry_packet(data: bytes, pos: int, end: int) -> tuple[bytes, int]:
    """The length-prefixed UserMessage packet of a MESSAGE_LIST entry at ``pos`` and the position after it.

    The BaseHeader is checked as ``check_packet`` does ([MS-MQMQ] 2.2.19.1: Version 0x10, Signature
    "LIOR", not an internal packet, PacketSize within 4 MB and equal to the bytes given).
    """
    if pos + 4 > end:
        raise WireError("truncated MESSAGE_LIST packet length", pos)
    (n,) = _U32.unpack_from(data, pos)
    pos += 4
    stop = pos + n
    if stop > end:
        raise WireError(f"truncated MESSAGE_LIST packet: need {n} bytes, {end - pos} left", pos)
    if n < 16:
        raise _bad_packet(data, pos, n)
    version, _, flags, signature, size = _PACKET_HEAD.unpack_from(data, pos)
    if not (
        version == _VERSION
        and signature == _SIGNATURE
        and not flags & _B_IN
        and 16 <= size <= _MAX_PACKET
        and n == size + (16 if flags & _B_SH else 0)
    ):
        raise _bad_packet(data, pos, n)
    return data[pos:stop], stop


def decode_messages(data: bytes) -> list[tuple[bytes, Props]]:
    """The (packet, properties) pairs of a MESSAGE_LIST; ``WireError`` if malformed (trailing bytes too)."""
    end = len(data)
    if end < 4:
        raise WireError(f"truncated MESSAGE_LIST count: {end} bytes", 0)
    (count,) = _U32.unpack_from(data, 0)
    if count * 8 > end - 4:  # each entry takes at least its 4-byte length and 4-byte PROPS count
        raise WireError(f"MESSAGE_LIST count {count} exceeds the {end - 4} bytes present", 0)
    out: list[tuple[bytes, Props]] = []
    append = out.append
    pos = 4
    for _ in range(count):
        packet, pos = _entry_packet(data, pos, end)
        if data[pos : pos + 4] == _ZERO4:
            append((packet, ()))
            pos += 4
            continue
        fast = _read_props(data, pos, end)
        if fast is None:  # not the common shape, or malformed: the generic reader decides
            r = Reader(data, pos)
            props: Props = tuple(read_props(r))
            pos = r.pos
        else:
            props, pos = fast
        append((packet, props))
    if pos != end:
        raise WireError(f"{end - pos} trailing bytes after the MESSAGE_LIST", pos)
    return out


def decode_received(data: bytes, destination: str | None = None) -> list[Message]:
    """The messages of a RECEIVE_MANY answer's MESSAGE_LIST: for each entry, what
    ``message_codec.decode_message(packet, properties)`` gives, with ``destination_queue`` set to
    ``destination`` when it has none (None or "", and ``destination`` is not None).  ``WireError``
    if malformed.

    Fast path: a simple packet (``decode_simple_at``, read in place: its checks include those of
    ``_entry_packet``) followed by the facts the pymsmq client asks for (``CLIENT_RECEIVE_PROPIDS``),
    read with one unpack and set directly, without building a property array.
    """
    end = len(data)
    if end < 4:
        raise WireError(f"truncated MESSAGE_LIST count: {end} bytes", 0)
    (count,) = _U32.unpack_from(data, 0)
    if count * 8 > end - 4:
        raise WireError(f"MESSAGE_LIST count {count} exceeds the {end - 4} bytes present", 0)
    out: list[Message] = []
    append = out.append
    unpack_facts = _RECEIVE_FACTS.unpack_from
    unpack_runs = _RECEIVE_FACT_RUNS.unpack_from
    unpack_u32 = _U32.unpack_from
    facts_size = _RECEIVE_FACTS.size
    pos = 4
    for _ in range(count):
        if pos + 4 <= end:
            (n,) = unpack_u32(data, pos)
            start = pos + 4
            stop = start + n
            if stop + facts_size <= end:
                # _RECEIVE_FACTS with its constant (count, propid, type) runs read as bytes.
                f1, lookup_id, f2, arrived, f3, aborts, f4, moves, f5, moved = unpack_runs(data, stop)
                if f1 == _FACTS_1 and f2 == _FACTS_2 and f3 == _FACTS_3 and f4 == _FACTS_4 and f5 == _FACTS_5:
                    m = decode_plain_at(data, start, n)
                    if m is None:
                        m = decode_simple_at(data, start, n)
                    if m is not None:
                        # message_codec.apply_facts of these five values, without the property array.
                        m.lookup_id = lookup_id
                        m.arrived_time = float(arrived)
                        m.abort_count = aborts
                        m.move_count = moves
                        if moved:
                            m.last_move_time = float(moved)
                        if destination is not None:
                            m.destination_queue = destination  # a simple packet carries none
                        append(m)
                        pos = stop + facts_size
                        continue
        packet, pos = _entry_packet(data, pos, end)
        if pos + facts_size <= end:
            facts = unpack_facts(data, pos)
            c, p1, v1, lookup_id, p2, v2, arrived, p3, v3, aborts, p4, v4, moves, p5, v5, moved = facts
            if (
                c == 5
                and p1 == PROPID_M_LOOKUPID
                and v1 == _VT_UI8
                and p2 == PROPID_M_ARRIVEDTIME
                and v2 == _VT_UI4
                and p3 == PROPID_M_ABORT_COUNT
                and v3 == _VT_UI4
                and p4 == PROPID_M_MOVE_COUNT
                and v4 == _VT_UI4
                and p5 == PROPID_M_LAST_MOVE_TIME
                and v5 == _VT_UI4
            ):
                m = decode_packet_message(packet)
                m.lookup_id = lookup_id
                m.arrived_time = float(arrived)
                m.abort_count = aborts
                m.move_count = moves
                if moved:
                    m.last_move_time = float(moved)
                if destination is not None and not m.destination_queue:
                    m.destination_queue = destination
                append(m)
                pos += facts_size
                continue
        fast = _read_props(data, pos, end)
        if fast is None:
            r = Reader(data, pos)
            props: Props = tuple(read_props(r))
            pos = r.pos
        else:
            props, pos = fast
        m = decode_message(packet, props)
        if destination is not None and not m.destination_queue:
            m.destination_queue = destination
        append(m)
    if pos != end:
        raise WireError(f"{end - pos} trailing bytes after the MESSAGE_LIST", pos)
    return out


# ---------------------------------------------------------------------------------- SEND_RESULTS


def encode_send_results(results: Sequence[SendResult]) -> bytes:
    """SEND_RESULTS bytes of (hresult, properties, text) entries."""
    parts = [_U32.pack(len(results))]
    append = parts.append
    for hresult, props, text in results:
        append(_U32.pack(hresult))
        append(_write_props(props))
        data = text.encode("utf-16-le", "surrogatepass")
        append(struct.pack("<H", len(data) >> 1))
        append(data)
    return b"".join(parts)


def send_result(message: Message) -> bytes:
    """The SEND_RESULTS entry of a sent ``message``: hresult 0, its SEND facts, no text.

    The same bytes as ``encode_send_results`` gives for ``(0, message_codec.send_facts(message), "")``.
    """
    mid = message.id
    if mid is None:
        raw = _ZERO_ID
    else:
        # bytes(mid) ([MS-MQMQ] 2.2.18.1.3), with the lineage's bytes_le cached (one queue manager's
        # ids share their lineage).
        lineage = mid.lineage
        head = _LINEAGE_BYTES.get(lineage)
        if head is None:
            if len(_LINEAGE_BYTES) > 1024:
                _LINEAGE_BYTES.clear()
            head = _LINEAGE_BYTES[lineage] = lineage.bytes_le
        raw = head + _U32.pack(mid.uniquifier)
    sent = message.sent_time
    return _SEND_OK.pack(
        0,
        2,
        _PROPID_M_MSGID,
        _VT_VECTOR_UI1,
        20,
        raw,
        _PROPID_M_SENTTIME,
        _VT_UI4,
        0 if sent is None else min(max(int(sent), 0), 0xFFFFFFFF),
        0,
    )


_LINEAGE_BYTES: Final[dict[uuid.UUID, bytes]] = {}
_LAST_LINEAGE: Final[list[tuple[uuid.UUID | None, bytes]]] = [(None, b"")]


def sent_entry(mid: ObjectId, sent: float) -> bytes:
    """``send_result`` of a message whose ``id`` is ``mid`` and ``sent_time`` is ``sent`` (both set)."""
    lineage = mid.lineage
    # One queue manager's ids share one GUID object: the last one's bytes_le, found by identity
    # (a UUID's hash is computed in Python at each dict lookup).
    last = _LAST_LINEAGE[0]
    if last[0] is lineage:
        head = last[1]
    else:
        cached = _LINEAGE_BYTES.get(lineage)
        if cached is None:
            if len(_LINEAGE_BYTES) > 1024:
                _LINEAGE_BYTES.clear()
            cached = _LINEAGE_BYTES[lineage] = lineage.bytes_le
        head = cached
        _LAST_LINEAGE[0] = (lineage, head)
    t = int(sent)
    if not 0 <= t <= 0xFFFFFFFF:
        t = min(max(t, 0), 0xFFFFFFFF)
    # _SEND_OK with the 20-byte id as its lineage bytes_le and uniquifier ([MS-MQMQ] 2.2.18.1.3).
    return _SEND_OK_SPLIT.pack(
        0, 2, _PROPID_M_MSGID, _VT_VECTOR_UI1, 20, head, mid.uniquifier, _PROPID_M_SENTTIME, _VT_UI4, t, 0
    )


def receive_facts(message: Message, propids: tuple[int, ...]) -> bytes:
    """PROPS bytes of the facts of a received ``message`` that ``propids`` asks for.

    The same bytes as ``_write_props(message_codec.fact_properties(message, propids))``; the pymsmq
    client's request (``CLIENT_RECEIVE_PROPIDS``) is packed in one call (``client_receive_facts``).
    """
    if propids == CLIENT_RECEIVE_PROPIDS:
        return client_receive_facts(message)
    return _write_props(fact_properties(message, propids))


def client_receive_facts(m: Message) -> bytes:
    """``receive_facts(m, CLIENT_RECEIVE_PROPIDS)``: the five facts the pymsmq client asks for, in one pack.

    [MS-MQCN] 2.2.3 PROPVALUE layouts: PROPID_M_LOOKUPID VT_UI8, then PROPID_M_ARRIVEDTIME,
    PROPID_M_ABORT_COUNT, PROPID_M_MOVE_COUNT and PROPID_M_LAST_MOVE_TIME VT_UI4; the constant
    (count, propid, type) runs are packed as bytes (``_RECEIVE_FACT_RUNS``, the same bytes as
    ``_RECEIVE_FACTS``).
    """
    arrived = m.arrived_time
    # fact_properties' clamping, with the in-range case (always, from a queue manager) first.
    t = 0 if arrived is None else int(arrived)
    if not 0 <= t <= 0xFFFFFFFF:
        t = min(max(t, 0), 0xFFFFFFFF)
    aborts = m.abort_count
    if not 0 <= aborts <= 0xFFFFFFFF:
        aborts = min(max(aborts, 0), 0xFFFFFFFF)
    moves = m.move_count
    if not 0 <= moves <= 0xFFFFFFFF:
        moves = min(max(moves, 0), 0xFFFFFFFF)
    lookup_id = m.lookup_id & 0xFFFFFFFFFFFFFFFF
    return _RECEIVE_FACT_RUNS.pack(
        _FACTS_1, lookup_id, _FACTS_2, t, _FACTS_3, aborts, _FACTS_4, moves, _FACTS_5, _u32(m.last_move_time)
    )


def receive_facts_size(propids: tuple[int, ...]) -> int | None:
    """``len(receive_facts(m, propids))``, the same for every message ``m``: known for the pymsmq
    client's request (``CLIENT_RECEIVE_PROPIDS``, fixed-size facts); None for other ``propids``."""
    return _RECEIVE_FACTS.size if propids == CLIENT_RECEIVE_PROPIDS else None


def error_result(hresult: int, text: str) -> bytes:
    """The SEND_RESULTS entry of a message that was not sent."""
    data = text.encode("utf-16-le", "surrogatepass")[: 2 * 0xFFFF]
    return b"".join((_U32.pack(hresult & 0xFFFFFFFF), _ZERO4, struct.pack("<H", len(data) >> 1), data))


def decode_send_facts(data: bytes) -> list[tuple[int, bytes | None, int | None, str]]:
    """SEND_RESULTS as (hresult, PROPID_M_MSGID bytes or None, PROPID_M_SENTTIME or None, text).

    The last value of each property wins, as in ``message_codec.props_dict``; ``WireError`` if malformed.
    """
    end = len(data)
    size = _SEND_OK.size
    if end >= 4:
        (count,) = _U32.unpack_from(data, 0)
        if end == 4 + count * size:
            # Fast path: every entry has send_result's shape (a batch without errors).
            out: list[tuple[int, bytes | None, int | None, str]] = []
            append = out.append
            for hresult, n, p1, vt1, n1, mid, p2, vt2, sent, units in _SEND_OK.iter_unpack(data[4:]):
                if not (
                    n == 2
                    and p1 == _PROPID_M_MSGID
                    and vt1 == _VT_VECTOR_UI1
                    and n1 == 20
                    and p2 == _PROPID_M_SENTTIME
                    and vt2 == _VT_UI4
                    and not units
                ):
                    break
                append((hresult, mid, sent, ""))
            else:
                return out
    result: list[tuple[int, bytes | None, int | None, str]] = []
    for hresult, props, text in decode_send_results(data):
        values = {pid: pv.value for pid, pv in props}
        mid = values.get(_PROPID_M_MSGID)
        sent = values.get(_PROPID_M_SENTTIME)
        result.append(
            (
                hresult,
                mid if type(mid) is bytes else None,
                sent if type(sent) is int else None,
                text,
            )
        )
    return result


def decode_send_results(data: bytes) -> list[SendResult]:
    """The entries of a SEND_RESULTS blob; ``WireError`` if malformed (trailing bytes too)."""
    end = len(data)
    if end < 4:
        raise WireError(f"truncated SEND_RESULTS count: {end} bytes", 0)
    (count,) = _U32.unpack_from(data, 0)
    if count * 10 > end - 4:  # hresult, PROPS count and STR length at least
        raise WireError(f"SEND_RESULTS count {count} exceeds the {end - 4} bytes present", 0)
    out: list[SendResult] = []
    append = out.append
    pos = 4
    size = _SEND_OK.size
    unpack = _SEND_OK.unpack_from
    for _ in range(count):
        if pos + size <= end:
            # Fast path: the entry of a sent message (send_result's shape), in one unpack.
            hresult, n, p1, vt1, n1, mid, p2, vt2, sent, units = unpack(data, pos)
            if n == 2 and vt1 == _VT_VECTOR_UI1 and n1 == 20 and vt2 == _VT_UI4 and not units:
                append((hresult, ((p1, _pv(_VECTOR_UI1, mid)), (p2, _pv(_UI4, sent))), ""))
                pos += size
                continue
        if pos + 4 > end:
            raise WireError("truncated SEND_RESULTS hresult", pos)
        (hresult,) = _U32.unpack_from(data, pos)
        pos += 4
        r = Reader(data, pos)
        props = tuple(read_props(r))
        n = r.u16("STR length")
        text = r.raw(2 * n, "STR").decode("utf-16-le", "surrogatepass")
        pos = r.pos
        append((hresult, props, text))
    if pos != end:
        raise WireError(f"{end - pos} trailing bytes after the SEND_RESULTS", pos)
    return out
