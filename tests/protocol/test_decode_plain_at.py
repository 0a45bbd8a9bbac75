"""``batch_fast.decode_plain_at`` (the client's RECEIVE_MANY fast path) against ``decode_simple_at``, and
``decode_plain_for_send_at`` (the server's SEND_MANY fast path) against ``decode_for_send_at``.

For every packet it takes (plain messages, any simple message, damaged bytes) it must give a message
equal to ``decode_simple_at``'s, with the same attributes in the same order; it must take the packets
``encode_plain`` writes for queued messages.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol.batch_fast import decode_plain_at, decode_plain_for_send_at
from pymsmq.protocol.fast_packet import decode_for_send_at, decode_simple_at, encode_plain, encode_simple

sys.path.insert(0, str(Path(__file__).parent))

from test_client_fast_paths import GUID, simple_messages

_plain = st.builds(
    Message,
    body=st.binary(max_size=300),
    priority=st.integers(0, 7),
    delivery=st.integers(0, 1),
    id=st.none() | st.builds(ObjectId, st.sampled_from([GUID, uuid.UUID(int=0)]), st.integers(0, 0xFFFFFFFF)),
    source_machine_guid=st.sampled_from([None, GUID, GUID, uuid.UUID(int=5)]),
    sent_time=st.none() | st.floats(0, 2.0**32 - 1, allow_nan=False),
    max_time_to_receive=st.sampled_from([0xFFFFFFFF, 0, 30]),
    max_time_to_reach_queue=st.sampled_from([0xFFFFFFFF, 5]),
)


def _same(data: bytes, start: int, n: int) -> Message | None:
    sending = decode_plain_for_send_at(data, start, n)
    if sending is not None:
        general_send = decode_for_send_at(data, start, n)
        assert general_send is not None
        assert sending[1] == general_send[1]
        assert list(sending[0].__dict__.items()) == list(general_send[0].__dict__.items())
    fast = decode_plain_at(data, start, n)
    if fast is not None:
        general = decode_simple_at(data, start, n)
        assert general is not None
        assert fast == general
        assert list(fast.__dict__.items()) == list(general.__dict__.items())
    return fast


@settings(max_examples=300)
@given(st.one_of(_plain, _plain, simple_messages), st.binary(max_size=5), st.data())
def test_decode_plain_at_equals_decode_simple_at(m: Message, before: bytes, data: st.DataObject) -> None:
    try:
        m.validate()
        packet = encode_simple(m)
    except Exception:
        return
    if packet is None:
        return
    buf = before + packet + b"\x00\x00\x00\x00"
    _same(buf, len(before), len(packet))
    _same(buf, len(before), len(packet) + 4)
    # A damaged byte, mostly in the header.
    i = data.draw(st.integers(0, len(packet) - 1) | st.integers(0, 119))
    damaged = bytearray(packet)
    damaged[i] ^= data.draw(st.integers(1, 255))
    _same(before + bytes(damaged), len(before), len(packet))
    sending = decode_plain_for_send_at(buf, len(before), len(packet))
    if sending is not None:
        assert sending[1]  # what encode_simple writes is canonical


@given(st.binary(max_size=300), st.integers(0, 7), st.integers(0, 1), st.integers(1, 0xFFFFFFFF))
def test_decode_plain_at_takes_queued_plain_packets(
    body: bytes, priority: int, delivery: int, u: int
) -> None:
    m = Message(body=body, priority=priority, delivery=delivery)
    m.id = ObjectId(GUID, u)
    m.source_machine_guid = GUID
    m.sent_time = 1000.0
    m.validate()
    packet = encode_plain(m)
    assert packet is not None
    got = _same(packet, 0, len(packet))
    assert decode_plain_for_send_at(packet, 0, len(packet)) is not None
    assert got is not None and (got.body, got.id, got.priority, got.delivery) == (
        body,
        m.id,
        priority,
        delivery,
    )


def test_decode_plain_at_refuses_other_shapes() -> None:
    packet = encode_simple(Message(body=b"x", label="L", id=ObjectId(GUID, 1), source_machine_guid=GUID))
    assert packet is not None and decode_plain_at(packet, 0, len(packet)) is None
    packet = encode_simple(Message(body=b"x"))  # no source machine
    assert packet is not None and decode_plain_at(packet, 0, len(packet)) is None
    assert decode_plain_at(b"\x00" * 8, 0, 8) is None
