"""One-pass fast paths of the SEND_MANY / RECEIVE_MANY blobs (docs/protocol.md 11).

``decode_for_send_list`` (server: a SEND_MANY MESSAGE_LIST of express simple packets, decoded in
place) and ``decode_sent_ids`` (client: SEND_RESULTS of a batch sent without errors).  Each gives
what the general codecs of ``batch_ops`` give, or None when the input is not its shape (the caller
then uses the general codec, which also reports malformed input); tests compare both.
"""

from __future__ import annotations

import struct
from typing import Final

from pymsmq.model.message import Message
from pymsmq.protocol.fast_packet import decode_for_send_at

__all__ = ["decode_for_send_list", "decode_sent_ids"]

_U32: Final = struct.Struct("<I")
# A sent message's SEND_RESULTS entry (batch_ops.send_result: hresult 0, PROPID_M_MSGID
# VT_VECTOR_UI1 of 20 bytes, PROPID_M_SENTTIME VT_UI4, empty text; [MS-MQCN] 2.2.3 PROPVALUE
# layouts), with the 20-byte id split in its lineage GUID and its uniquifier.
_SEND_OK_IDS: Final = struct.Struct("<IIIHI16sIIHIH")
_PROPID_M_MSGID: Final = 2
_PROPID_M_SENTTIME: Final = 31
_VT_VECTOR_UI1: Final = 0x1011
_VT_UI4: Final = 0x0013


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
        decoded = decode_for_send_at(data, start, n)
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
    for hresult, n, p1, vt1, n1, lineage, ordinal, p2, vt2, sent, units in _SEND_OK_IDS.iter_unpack(
        memoryview(data)[4:]
    ):
        if not (
            hresult == 0
            and n == 2
            and p1 == _PROPID_M_MSGID
            and vt1 == _VT_VECTOR_UI1
            and n1 == 20
            and p2 == _PROPID_M_SENTTIME
            and vt2 == _VT_UI4
            and not units
        ):
            return None
        append((lineage, ordinal, sent))
    return out
