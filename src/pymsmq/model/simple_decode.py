"""The fast decoder of the simple message shape: ``decode_simple`` (the model layer's half of it).

A UserMessage packet is *simple* when the only properties it carries live in the three
always-present headers ([MS-MQMQ] 2.2.19.1 BaseHeader, 2.2.19.2 UserHeader, 2.2.19.3
MessagePropertiesHeader), with no queue in the UserHeader (a TransactionHeader without
ConnectorQMGuid is allowed too).  ``decode_simple`` reads the 120 fixed bytes with ONE
precompiled ``struct.Struct`` instead of building and walking the header dataclasses, and returns
None for anything else; then the general mapping (``pymsmq.model.packet_mapping``) decides.

The contract, enforced by tests: ``decode_simple(data)`` is either None or equal to
``packet_to_message(data)``; it returns a message only for input the general decoder accepts.
``pymsmq.protocol.fast_packet`` (the client protocol's encoders and SEND decoder) and
``pymsmq.model.stored_packet`` (the queue manager's restart) use it.
"""

from __future__ import annotations

import struct
import uuid
from codecs import utf_16_le_decode
from typing import Final

from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.wire.base_header import BASE_HEADER_SIGNATURE, BASE_HEADER_VERSION, MAX_PACKET_SIZE
from pymsmq.wire.optional_headers import TransactionHeaderFlags
from pymsmq.wire.user_header import UserHeaderFlags

__all__ = ["decode_simple", "decode_simple_at", "object_id"]

#: BaseHeader (16) + UserHeader fixed part (48) + MessagePropertiesHeader fixed part (56).
_HEAD: Final = struct.Struct("<BBHIII16s16sIIIIBBH20sIIIIIIII")
_HEAD_SIZE: Final = 120
_INFINITE: Final = 0xFFFFFFFF
_U_MP: Final = 0x00200000  # UserHeader.Flags.MP: "MUST always be set"
# UserHeader.Flags bits that announce more bytes or headers (DQ, AQ, RQ, SH, TH, CQ, MQ, AH, HH):
# all clear in a simple packet.
_U_STRUCTURAL: Final = 0x1C00 | 0xE000 | 0x70000 | 0x80000 | 0x100000 | 0x400000 | 0x800000
_U_STRUCTURAL2: Final = 0x02000000 | 0x10000000
_U_TH: Final = int(UserHeaderFlags.TH)  # a TransactionHeader follows the UserHeader
# [MS-MQMQ] 2.2.20.5 TransactionHeader without ConnectorQMGuid: Flags, TxSequenceID (Ordinal,
# Timestamp), TxSequenceNumber, PreviousTxSequenceNumber; at offset 64 when no queue follows the
# UserHeader.
_TRANSACTION: Final = struct.Struct("<IIIII")
_U32: Final = struct.Struct("<I")
_TH_BYTE: Final = _U_TH >> 16
_T_CG: Final = int(TransactionHeaderFlags.CG)
_T_FM: Final = int(TransactionHeaderFlags.FM)
_T_LM: Final = int(TransactionHeaderFlags.LM)
_MAX_LABEL_LENGTH: Final = 0xFA  # 2.2.19.3 LabelLength: at most 250 units with the NUL
_ZERO_ID: Final = bytes(20)
_ZERO_GUID: Final = bytes(16)
_NUL2: Final = b"\x00\x00"

_GUIDS: Final[dict[bytes, uuid.UUID]] = {}
_new: Final = object.__new__
_set_lineage: Final = ObjectId.__dict__["lineage"].__set__
_set_uniquifier: Final = ObjectId.__dict__["uniquifier"].__set__


def object_id(lineage: uuid.UUID, uniquifier: int) -> ObjectId:
    """``ObjectId(lineage, uniquifier)`` of values known valid (a UUID, a u32 read by ``struct``)."""
    # The slot descriptors' setters (as model.ids.new_object_id): no frozen-dataclass detour.
    oid: ObjectId = _new(ObjectId)
    _set_lineage(oid, lineage)
    _set_uniquifier(oid, uniquifier)
    return oid


def _guid(raw: bytes) -> uuid.UUID:
    value = _GUIDS.get(raw)
    if value is None:
        value = uuid.UUID(bytes_le=raw)
        if len(_GUIDS) >= 1024:
            _GUIDS.clear()
        _GUIDS[raw] = value
    return value


def decode_simple(data: bytes) -> Message | None:
    """``packet_to_message(data)`` for a simple packet; None for anything else (malformed included)."""
    return decode_simple_at(data, 0, len(data))


def decode_simple_at(data: bytes, start: int, n: int) -> Message | None:
    """``decode_simple(data[start:start + n])`` without the copy (a packet inside a larger buffer).

    ``data`` must hold at least ``start + n`` bytes.  A simple packet may also carry a
    TransactionHeader without ConnectorQMGuid (a message received in a transaction of the queue
    manager that sent it).
    """
    if n < _HEAD_SIZE:
        return None
    if data[start + 62] & _TH_BYTE:  # UserHeader.Flags.TH, in the third byte of the u32 at offset 60
        return _decode_transactional_at(data, start, n)
    (
        version,
        _reserved,
        bflags,
        signature,
        packet_size,
        ttrq,
        source_raw,
        qm_address,
        ttbr,
        sent_time,
        message_id,
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
    ):
        return None
    pos = _HEAD_SIZE
    m: Message = _new(Message)
    if label_length:
        end = pos + 2 * label_length
        if end > n or data[start + end - 2 : start + end] != _NUL2:
            return None
        label = utf_16_le_decode(data[start + pos : start + end - 2], "surrogatepass", True)[0]
        if "\x00" in label:
            return None
        if label:
            m.label = label
        pos = end
    end = pos + ext_size + message_size
    # The MessagePropertiesHeader starts 4-aligned (at 64), so its padding ends at the next multiple of 4.
    if end > n or (end + 3) & ~3 != n:
        return None  # the body must end the packet (plus 4-padding): no extension section
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
    if source_raw != _ZERO_GUID:
        source = _guid(source_raw)
        m.source_machine_guid = source
        if message_id:
            m.id = object_id(source, message_id)
    elif message_id:
        m.id = object_id(_guid(source_raw), message_id)
    if sent_time:
        m.sent_time = float(sent_time)
    if msg_class:
        m.msg_class = msg_class
    if correlation != _ZERO_ID:
        m.correlation_id = object_id(_guid(correlation[:16]), int.from_bytes(correlation[16:], "little"))
    if body_type:
        m.body_type = body_type
    if app_tag:
        m.app_specific = app_tag
    if privacy:
        m.priv_level = privacy
    if hash_alg != 0x8004:
        m.hash_algorithm = hash_alg
    if enc_alg != 0x6801:
        m.encrypt_algorithm = enc_alg
    return m


def _decode_transactional_at(data: bytes, start: int, n: int) -> Message | None:
    # The packet without its TransactionHeader is a simple one (PacketSize 20 less, Flags.TH clear):
    # decode that, then the header as packet_mapping.user_message_to_message does ([MS-MQMQ] 2.2.20.5;
    # docs in packet_mapping: Flags.ID is the low 20 bits of the identifier, TxSequenceID.Ordinal the
    # whole of it when its low 20 bits agree).
    size = _TRANSACTION.size
    if n < _HEAD_SIZE + size:
        return None
    tflags, ordinal, _timestamp, _number, _previous = _TRANSACTION.unpack_from(data, start + 64)
    if tflags & _T_CG:
        return None  # ConnectorQMGuid follows: the general decoder
    (packet_size,) = _U32.unpack_from(data, start + 8)
    (uflags,) = _U32.unpack_from(data, start + 60)
    if packet_size != n:
        return None
    rest = bytearray(data[start : start + 64])
    _U32.pack_into(rest, 8, n - size)
    _U32.pack_into(rest, 60, uflags & ~_U_TH)
    rest += data[start + 64 + size : start + n]
    m = decode_simple_at(bytes(rest), 0, n - size)
    if m is None:
        return None
    ident = (tflags >> 4) & 0xFFFFF
    uniquifier = ordinal if ordinal & 0xFFFFF == ident else ident
    if not uniquifier:
        return None  # no identifier: the general decoder says what that is
    m.transaction_id = object_id(_guid(data[start + 16 : start + 32]), uniquifier)
    if tflags & _T_FM:
        m.is_first_in_transaction = True
    if tflags & _T_LM:
        m.is_last_in_transaction = True
    return m
