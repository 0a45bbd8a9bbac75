"""``fast_packet.decode_for_send`` and ``batch_ops.sent_entry``: the SEND_MANY owned fast path.

``decode_for_send(p)`` must be ``decode_simple(p)`` without the three properties sending overwrites
(id, source machine, sent time), only for messages ``Message.validate`` leaves as they are.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import message_to_packet, packet_with_destination
from pymsmq.protocol._fields import Props
from pymsmq.protocol.batch_fast import decode_for_send_list
from pymsmq.protocol.batch_ops import (
    decode_messages,
    encode_messages,
    send_result,
    sent_entry,
)
from pymsmq.protocol.fast_packet import (
    decode_for_send,
    decode_for_send_at,
    decode_simple,
    encode_simple,
    queued_packet,
)
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.vartype import VarType

sys.path.insert(0, str(Path(__file__).parent))

from test_client_fast_paths import GUID, simple_messages

_OVERWRITTEN = ("id", "source_machine_guid", "sent_time")


def _check(packet: bytes) -> None:
    decoded = decode_for_send(packet)
    if decoded is None:
        return
    fast, canonical = decoded
    general = decode_simple(packet)
    assert general is not None
    for name in _OVERWRITTEN:
        general.__dict__.pop(name, None)
    assert fast == general
    assert fast.__dict__ == general.__dict__
    before = dict(fast.__dict__)
    fast.validate()  # valid by construction: no error, nothing normalised
    assert fast.__dict__ == before
    if canonical:
        _queue(fast)
        assert queued_packet(packet, fast) == encode_simple(fast)


def _queue(m: Message, ordinal: int = 7, now: float = 1234.5, destination: str = "PRIVATE=x") -> None:
    # What Queue._enqueue sets on a queued message ([MC-MQAC] 3.17.4.1.48 steps 7-12).
    m.id = ObjectId(GUID, ordinal)
    m.source_machine_guid = GUID
    m.destination_queue = destination
    m.sent_time = float(int(now))
    m.arrived_time = now
    m.lookup_id = 99
    if 0xFFFFFFFF != m.max_time_to_reach_queue > m.max_time_to_receive:
        m.max_time_to_receive = m.max_time_to_reach_queue


@given(simple_messages)
def test_decode_for_send_is_decode_simple_minus_what_sending_sets(m: Message) -> None:
    m.validate()
    packet = message_to_packet(m)
    _check(packet)
    if m.priv_level == 0:
        decoded = decode_for_send(packet)
        assert decoded is not None and decoded[1]  # what encode_simple writes is canonical
    else:
        assert decode_for_send(packet) is None  # validate decides PrivacyLevel: the general path


@given(simple_messages, st.data())
def test_decode_for_send_on_damaged_packets(m: Message, data: st.DataObject) -> None:
    m.validate()
    packet = bytearray(message_to_packet(m))
    i = data.draw(st.integers(0, len(packet) - 1))
    packet[i] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(packet)))
    for candidate in (bytes(packet), bytes(packet[:cut]), bytes(packet) + b"\x00\x00\x00\x00"):
        _check(candidate)


@given(st.binary(max_size=300))
def test_decode_for_send_on_arbitrary_bytes(data: bytes) -> None:
    _check(data)


@given(st.uuids(), st.integers(0, 0xFFFFFFFF), st.floats(-10.0, 2.0**33, allow_nan=False))
def test_sent_entry_is_send_result(lineage: uuid.UUID, ordinal: int, sent: float) -> None:
    m = Message(body=b"x")
    m.id = mid = ObjectId(lineage, ordinal)
    m.sent_time = sent
    assert sent_entry(mid, sent) == send_result(m)


@given(simple_messages, st.integers(0, 119), st.integers(1, 255))
def test_canonical_only_when_the_kept_packet_is_what_encode_simple_writes(
    m: Message, i: int, flip: int
) -> None:
    m.validate()
    packet = bytearray(message_to_packet(m))
    packet[i] ^= flip  # any header byte, the fields sending sets included
    _check(bytes(packet))
    if len(packet) % 4 == 0 and len(packet) > 120 and decode_for_send(bytes(packet)) is not None:
        packet[-1] ^= flip  # a padding byte, a body byte or the label terminator
        _check(bytes(packet))


def test_non_canonical_vectors() -> None:
    m = Message(body=b"abc", label="L")
    m.validate()
    good = encode_simple(m)
    assert good is not None
    assert decode_for_send(good) is not None and decode_for_send(good)[1]  # type: ignore[index]
    for pos, value in ((1, 1), (60, 0x40), (len(good) - 1, 1)):  # reserved, DeliveryMode 2, padding
        bad = bytearray(good)
        bad[pos] |= value
        decoded = decode_for_send(bytes(bad))
        assert decoded is not None and not decoded[1]


def _reference_list(data: bytes, limit: int) -> tuple[list[Message], list[bytes | None]] | None:
    # decode_for_send_list spelled with decode_messages and decode_for_send.
    try:
        items = decode_messages(data)
    except WireError:
        return None
    messages: list[Message] = []
    packets: list[bytes | None] = []
    for packet, props in items:
        decoded = None if props or len(packet) > limit else decode_for_send(packet)
        if decoded is None or decoded[0].delivery:
            return None
        messages.append(decoded[0])
        packets.append(packet if decoded[1] else None)
    return messages, packets


def _same(
    a: tuple[list[Message], list[bytes | None]] | None, b: tuple[list[Message], list[bytes | None]] | None
) -> bool:
    if a is None or b is None:
        return a is b
    return [m.__dict__ for m in a[0]] == [m.__dict__ for m in b[0]] and a[1] == b[1]


_list_items = st.lists(
    st.tuples(simple_messages, st.sampled_from([(), ((2, PropVariant(VarType.VT_UI4, 1)),)])), max_size=5
)


@given(_list_items, st.sampled_from([0x400000, 400]), st.data())
def test_decode_for_send_list_equals_decode_messages_then_decode_for_send(
    items: list[tuple[Message, Props]], limit: int, data: st.DataObject
) -> None:
    for m, _ in items:
        m.validate()
    blob = encode_messages([(message_to_packet(m), props) for m, props in items])
    assert _same(decode_for_send_list(blob, limit), _reference_list(blob, limit))
    if blob:
        damaged = bytearray(blob)
        i = data.draw(st.integers(0, len(damaged) - 1))
        damaged[i] = data.draw(st.integers(0, 255))
        cut = data.draw(st.integers(0, len(damaged)))
        for candidate in (bytes(damaged), bytes(damaged[:cut]), blob + b"\x00"):
            assert _same(decode_for_send_list(candidate, limit), _reference_list(candidate, limit))


@given(st.binary(max_size=200))
def test_decode_for_send_list_on_arbitrary_bytes(blob: bytes) -> None:
    assert _same(decode_for_send_list(blob, 0x400000), _reference_list(blob, 0x400000))


@given(simple_messages, st.binary(max_size=9), st.binary(max_size=9), st.integers(-1, 1))
def test_decode_for_send_at_is_decode_for_send_of_the_slice(
    m: Message, before: bytes, after: bytes, skew: int
) -> None:
    m.validate()
    packet = message_to_packet(m)
    data = before + packet + after
    n = min(len(packet) + skew, len(packet) + len(after))
    a = decode_for_send_at(data, len(before), n)
    b = decode_for_send(data[len(before) : len(before) + n])
    assert (a is None and b is None) or (
        a is not None and b is not None and a[0].__dict__ == b[0].__dict__ and a[1] == b[1]
    )


# Destinations as the queue manager names its queues (DIRECT=OS for a private path, PRIVATE=,
# PUBLIC=), of lengths that leave every padding to 4 bytes.
_DESTINATIONS = st.sampled_from(
    [
        f"PRIVATE={GUID}\\0000000a",
        f"PUBLIC={GUID}",
        "DIRECT=OS:host\\private$\\q",
        "DIRECT=OS:host\\private$\\qu",
        "DIRECT=OS:host\\private$\\que",
        "DIRECT=OS:host\\private$\\queu",
        "DIRECT=TCP:10.0.0.1\\private$\\orders",
    ]
)


def _sent_and_queued(m: Message, **queued_as: Any) -> tuple[bytes, Message] | None:
    # The packet a client sends for m (what encode_simple writes) and the message the queue manager
    # queues from it (``_queue``'s facts); None when the packet is not canonical.
    m.validate()
    packet = message_to_packet(m)
    decoded = decode_for_send(packet)
    if decoded is None or not decoded[1]:
        return None
    _queue(decoded[0], **queued_as)
    return packet, decoded[0]


@given(simple_messages, _DESTINATIONS, st.integers(1, 0xFFFFFFFF), st.floats(0.0, 2.0**32 - 1))
def test_stored_packet_from_the_sent_packet(m: Message, destination: str, ordinal: int, now: float) -> None:
    # What the queue manager stores for a recoverable SEND of a canonical packet (the packet with its
    # destination put in) is what it would store for the queued message.
    pair = _sent_and_queued(m, ordinal=ordinal, now=now, destination=destination)
    if pair is not None:
        packet, queued = pair
        assert packet_with_destination(packet, queued) == message_to_packet(queued)


@given(simple_messages)
def test_packet_with_destination_declines_a_transaction(m: Message) -> None:
    pair = _sent_and_queued(m)
    if pair is not None:
        packet, queued = pair
        queued.transaction_id = ObjectId(GUID, 5)  # queued with MQ_SINGLE_MESSAGE: a TransactionHeader
        assert packet_with_destination(packet, queued) is None  # message_to_packet writes it


def test_stored_packet_leaves_the_queued_message_without_a_dict() -> None:
    # A message decoded from a packet keeps its values inline (no __dict__ until one is asked for):
    # deriving its stored packet must not give it one (184 bytes per queued message).
    pair = _sent_and_queued(Message(body=b"abc", label="x", delivery=1), destination=f"PUBLIC={GUID}")
    assert pair is not None
    packet, queued = pair
    before = sys.getsizeof(queued) + _dict_size(queued)
    assert packet_with_destination(packet, queued) is not None
    assert sys.getsizeof(queued) + _dict_size(queued) == before


def _dict_size(m: Message) -> int:
    # The size of m's materialised __dict__, 0 while its values are inline (CPython 3.11+), read
    # through gc so as not to create it.
    import gc

    return sum(sys.getsizeof(r) for r in gc.get_referents(m) if type(r) is dict)
