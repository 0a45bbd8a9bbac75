"""decode_packet: every shipped vector by the [MS-MQQB] 3.1.5.1.1 identification rules, OrderAck and
FinalAck recognition, and arbitrary bytes (truncated, extended, mutated) giving a packet or WireError."""

from __future__ import annotations

import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire.internal_packets import ConnectionParameters, EstablishConnection, SessionAck
from pymsmq.wire.message_class import MessageClass
from pymsmq.wire.order_ack import FinalAckBody, OrderAckBody
from pymsmq.wire.packet import FinalAck, OrderAck, decode_packet
from pymsmq.wire.packet_types import DirectQueueFormatName, PrivateQueueFormatNameId
from pymsmq.wire.ping import PingPacket
from pymsmq.wire.user_message import UserMessage

VECTORS = Path(__file__).parents[1] / "vectors"
WELL_FORMED = sorted(p.name for p in VECTORS.glob("*.bin") if "malformed" not in p.name)
MALFORMED = sorted(p.name for p in VECTORS.glob("*malformed*.bin"))
Load = Callable[[str], bytes]

EXPECTED_KIND = {
    "mqqb-4.1.1-frame1-ping-request.bin": PingPacket,
    "mqqb-4.1.2-frame2-ping-response.bin": PingPacket,
    "mqqb-4.1.3-frame3-establishconnection-request.bin": EstablishConnection,
    "mqqb-4.1.4-frame4-establishconnection-response.bin": EstablishConnection,
    "mqqb-4.1.5-frame5-connectionparameters-request.bin": ConnectionParameters,
    "mqqb-4.1.6-frame6-connectionparameters-response.bin": ConnectionParameters,
    "mqqb-4.1.8-frame8-sessionack.bin": SessionAck,
    "queuejumper-msf-usermessage-srmp.bin": UserMessage,
    "queuejumper-nse-usermessage-srmp.bin": UserMessage,
}


def test_every_shipped_vector_is_classified() -> None:
    assert set(WELL_FORMED) <= set(EXPECTED_KIND) | {"mqqb-4.1.7-frame7-usermessage.bin"}
    assert len(MALFORMED) == 2


@pytest.mark.parametrize("name", WELL_FORMED)
def test_vector_decodes_to_its_kind_and_reencodes_byte_exact(name: str, vector: Load) -> None:
    data = vector(name)
    packet = decode_packet(data)
    assert isinstance(packet, EXPECTED_KIND.get(name, UserMessage))
    assert packet.encode() == data


def test_queuejumper_fields_through_decode_packet(vector: Load) -> None:
    packet = decode_packet(vector("queuejumper-msf-usermessage-srmp.bin"))
    assert isinstance(packet, UserMessage)
    assert packet.base_header.flags == 0x1003
    assert packet.base_header.packet_size == 2404
    assert packet.user_header.flags == 0x02201C01
    dest = packet.user_header.destination_queue
    assert isinstance(dest, DirectQueueFormatName)
    assert dest.direct_format_name == "http://192.168.56.113/msmq/private$/queuejumper"
    assert packet.label == "poc"
    assert packet.compound_message_header is not None
    assert packet.compound_message_header.http_body_size == 1060


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_datalength_is_rejected_fast(name: str, vector: Load) -> None:
    data = vector(name)
    assert data[235] == 0x80
    tracemalloc.start()
    try:
        with pytest.raises(WireError, match="SRMPEnvelopeHeader"):
            decode_packet(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing near the 2 GB the length field claims


QM = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")


def _order_message(body: bytes, message_class: int, destination: object) -> bytes:
    return UserMessage.build(
        destination=destination,  # type: ignore[arg-type]
        body=body,
        label="QM Ordering Ack",
        priority=0,
        message_class=message_class,
        source_queue_manager=QM,
    ).encode()


def test_order_ack_is_recognised_and_round_trips() -> None:
    body = OrderAckBody.for_number(tx_sequence_id=(7 << 32) | 1, tx_sequence_number=5)
    data = _order_message(body.encode(), MessageClass.MQMSG_CLASS_ORDER_ACK, PrivateQueueFormatNameId(4))
    packet = decode_packet(data)
    assert isinstance(packet, OrderAck)
    assert packet.body == body
    assert packet.body.tx_previous_sequence_number == 4
    assert packet.encode() == data


def test_final_ack_is_recognised_by_direct_order_queue_name() -> None:
    body = FinalAckBody(
        tx_sequence_id=(7 << 32) | 1,
        tx_sequence_number=5,
        tx_previous_sequence_number=4,
        source_guid=QM,
        message_id=77,
    )
    dest = "TCP:10.0.0.1\\PRIVATE$\\order_queue$"
    data = _order_message(body.encode(), MessageClass.MQMSG_CLASS_ACK_RECEIVE, dest)
    packet = decode_packet(data)
    assert isinstance(packet, FinalAck)
    assert packet.body.message_id == 77
    assert packet.base_header.priority == 0


def test_same_label_to_an_ordinary_queue_is_a_user_message() -> None:
    body = OrderAckBody.for_number(tx_sequence_id=1, tx_sequence_number=2).encode()
    data = _order_message(body, MessageClass.MQMSG_CLASS_ORDER_ACK, PrivateQueueFormatNameId(9))
    assert isinstance(decode_packet(data), UserMessage)


@pytest.mark.parametrize(
    "data", [b"", b"\x10", b"\x10\x00\x03\x00LIO", b"\x00" * 24, b"\x10\x00\x00\x00LIOR"]
)
def test_short_or_unknown_input_is_a_wire_error(data: bytes) -> None:
    with pytest.raises(WireError):
        decode_packet(data)


@given(st.binary(max_size=600))
def test_arbitrary_bytes_give_packet_or_wire_error(data: bytes) -> None:
    try:
        decode_packet(data)
    except WireError:
        pass


@given(st.sampled_from(WELL_FORMED), st.data())
def test_vector_truncations_extensions_and_mutations(name: str, data: st.DataObject) -> None:
    raw = (VECTORS / name).read_bytes()
    cut = data.draw(st.integers(0, len(raw) - 1), label="cut")
    garbage = data.draw(st.binary(min_size=1, max_size=32), label="garbage")
    flip_at = data.draw(st.integers(0, len(raw) - 1), label="flip_at")
    flip_to = data.draw(st.integers(0, 255), label="flip_to")
    mutated = bytearray(raw)
    mutated[flip_at] = flip_to
    for candidate in (raw[:cut], raw + garbage, bytes(mutated)):
        try:
            packet = decode_packet(candidate)
        except WireError:
            continue
        # Whatever decodes must re-encode to a packet that decodes to the same value.
        assert decode_packet(packet.encode()) == packet
