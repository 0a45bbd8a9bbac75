"""``restore_message`` (a queue manager's restart) decodes exactly what the general decoder does.

It cuts the destination queue out of a stored packet and reads the rest with ``decode_simple``;
for every packet it must return ``packet_to_message(packet)``, and it must take the fast path for
the shapes the queue manager stores most (so that a restart is fast).
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_packet_fast_path import simple_messages
from test_packet_mapping import messages, single_names

from pymsmq.errors import MSMQError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import message_to_packet, packet_to_message
from pymsmq.model.stored_packet import _without_destination, restore_message

_SOURCE = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")


def _same(packet: bytes) -> Message:
    restored = restore_message(packet)
    assert restored == packet_to_message(packet)
    return restored


@given(simple_messages(), single_names())
def test_simple_stored_packets_decode_as_the_general_decoder_does(m: Message, destination: str) -> None:
    m.destination_queue = destination
    _same(message_to_packet(m))


@given(messages())
def test_every_other_packet_decodes_as_the_general_decoder_does(m: Message) -> None:
    _same(message_to_packet(m))


@given(simple_messages(), single_names(), st.integers(1, 2**32 - 1))
def test_transactional_stored_packets_decode_as_the_general_decoder_does(
    m: Message, destination: str, xact: int
) -> None:
    m.destination_queue = destination
    m.transaction_id = ObjectId(m.source_machine_guid or _SOURCE, xact)
    m.is_first_in_transaction = True
    _same(message_to_packet(m))


@pytest.mark.parametrize(
    "destination",
    [
        f"PRIVATE={_SOURCE}\\0000002a",
        "PUBLIC=2f2d6a4f-3c4e-4f5a-8d8e-9a0b1c2d3e4f",
        "DIRECT=OS:host\\private$\\orders",
        "DIRECT=TCP:10.0.0.7\\orders-with-a-long-name-to-pass-sixty-four-bytes-of-queue-text",
    ],
)
def test_the_common_stored_shapes_take_the_fast_path(destination: str) -> None:
    m = Message(
        body=b"x" * 200,
        label="order",
        delivery=1,
        destination_queue=destination,
        id=ObjectId(_SOURCE, 7),
        source_machine_guid=_SOURCE,
        sent_time=1_700_000_000.0,
    )
    packet = message_to_packet(m)
    flags = int.from_bytes(packet[60:64], "little")
    fast = _without_destination(packet, flags, (flags >> 10) & 7)
    assert fast is not None
    assert fast == packet_to_message(packet) == _same(packet)
    assert fast.destination_queue is not None


def test_a_damaged_packet_is_refused_as_the_general_decoder_refuses_it() -> None:
    m = Message(body=b"x" * 20, destination_queue=f"PRIVATE={_SOURCE}\\00000001", id=ObjectId(_SOURCE, 1))
    packet = bytearray(message_to_packet(m))
    packet[8:12] = (len(packet) + 4).to_bytes(4, "little")  # PacketSize no longer the length
    with pytest.raises(MSMQError) as general:
        packet_to_message(bytes(packet))
    with pytest.raises(MSMQError) as restored:
        restore_message(bytes(packet))
    assert restored.value.hresult == general.value.hresult
