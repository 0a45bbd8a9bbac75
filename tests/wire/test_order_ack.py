"""OrderAck / FinalAck bodies ([MS-MQQB] 2.2.4.1, 2.2.5.1) and the identification rules of 3.1.5.1.1."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire.message_class import MessageClass
from pymsmq.wire.order_ack import (
    ACK_BODY_SIZE,
    ORDER_ACK_LABEL,
    ORDER_QUEUE_PRIVATE_ID,
    FinalAckBody,
    OrderAckBody,
    OrderPacketKind,
    classify_order_packet,
    is_order_queue_direct_name,
    order_queue_direct_name,
    tx_sequence_id,
)

SOURCE = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")

# Hand-built from the 2.2.4.1 table: TxSequenceID (Ordinal 1, TimeStamp 2 as in the [MS-MQMQ] 2.2.18.1.2
# example bytes `01 00 00 00 02 00 00 00`), TxSequenceNumber 8, TxPreviousSequenceNumber 7, 20 reserved bytes.
ORDER_ACK_BYTES = bytes.fromhex("0100000002000000 08000000 07000000") + bytes(20)
# Hand-built from the 2.2.5.1 table: same sequence, previous 5, SourceGUID, MessageID 2286.
FINAL_ACK_BYTES = (
    bytes.fromhex("0100000002000000 08000000 05000000") + SOURCE.bytes_le + bytes.fromhex("EE080000")
)


def test_order_ack_body_bytes() -> None:
    body = OrderAckBody.decode(ORDER_ACK_BYTES)
    assert body.tx_sequence_id == tx_sequence_id(1, 2) == 0x0000000200000001
    assert body.tx_sequence_number == 8
    assert body.tx_previous_sequence_number == 7
    assert body.reserved == bytes(20)
    assert body == OrderAckBody.for_number(tx_sequence_id(1, 2), 8)
    assert body.encode() == ORDER_ACK_BYTES
    assert len(ORDER_ACK_BYTES) == ACK_BODY_SIZE == 36


def test_order_ack_reserved_garbage_is_kept() -> None:
    # [MS-MQQB] note <17>: Windows may send garbage in Reserved; it MUST be ignored, so it is kept.
    data = ORDER_ACK_BYTES[:16] + bytes(range(1, 21))
    body = OrderAckBody.decode(data)
    assert body.reserved == bytes(range(1, 21))
    assert body.encode() == data


def test_final_ack_body_bytes() -> None:
    body = FinalAckBody.decode(FINAL_ACK_BYTES)
    assert body.tx_sequence_id == 0x0000000200000001
    assert body.tx_sequence_number == 8
    assert body.tx_previous_sequence_number == 5  # "previous message received", not necessarily n - 1
    assert body.source_guid == SOURCE
    assert body.message_id == 2286
    assert body.encode() == FINAL_ACK_BYTES


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (ORDER_ACK_BYTES[:8] + bytes(4) + bytes(4) + bytes(20), "TxSequenceNumber"),
        (
            ORDER_ACK_BYTES[:8] + bytes.fromhex("08000000 06000000") + bytes(20),
            "MUST be TxSequenceNumber - 1",
        ),
        (ORDER_ACK_BYTES[:35], "36 bytes"),
        (ORDER_ACK_BYTES + b"\x00", "36 bytes"),
    ],
)
def test_order_ack_must_rules(data: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        OrderAckBody.decode(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (FINAL_ACK_BYTES[:8] + bytes(4) + FINAL_ACK_BYTES[12:], "TxSequenceNumber"),
        (FINAL_ACK_BYTES[:12] + b"\xff\xff\xff\xff" + FINAL_ACK_BYTES[16:], "TxPreviousSequenceNumber"),
        (FINAL_ACK_BYTES[:-1], "36 bytes"),
        (FINAL_ACK_BYTES + b"\x00", "36 bytes"),
    ],
)
def test_final_ack_must_rules(data: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        FinalAckBody.decode(data)


def test_encoders_validate() -> None:
    body = OrderAckBody.for_number(1, 1)
    assert body.tx_previous_sequence_number == 0
    with pytest.raises(WireError):
        dataclasses.replace(body, reserved=bytes(19)).encode()
    with pytest.raises(WireError):
        OrderAckBody.for_number(1 << 64, 1).encode()
    with pytest.raises(WireError):
        OrderAckBody.for_number(1, 0).encode()
    final = FinalAckBody.decode(FINAL_ACK_BYTES)
    with pytest.raises(WireError):
        dataclasses.replace(final, message_id=1 << 32).encode()
    with pytest.raises(WireError):
        dataclasses.replace(final, tx_sequence_number=1 << 32).encode()
    with pytest.raises(WireError):
        tx_sequence_id(1 << 32, 0)


def test_order_queue_names() -> None:
    assert order_queue_direct_name("10.0.0.1") == "TCP:10.0.0.1\\PRIVATE$\\order_queue$"
    assert order_queue_direct_name("fe80::1") == "TCP:fe80::1\\PRIVATE$\\order_queue$"
    assert order_queue_direct_name("0000000A.00A0C9123456", "SPX").startswith("SPX:0000000A.")
    for good in (
        "TCP:10.0.0.1\\PRIVATE$\\order_queue$",
        "tcp:10.0.0.1\\private$\\ORDER_QUEUE$",
        "TCP:fe80::1\\PRIVATE$\\order_queue$\x00",
        "SPX:0000000A.00A0C9123456\\PRIVATE$\\order_queue$",
    ):
        assert is_order_queue_direct_name(good), good
    for bad in (
        "OS:host\\PRIVATE$\\order_queue$",
        "TCP:\\PRIVATE$\\order_queue$",
        "TCP:10.0.0.1\\PRIVATE$\\orders",
        "TCP:10.0.0.1\\order_queue$",
        "TCP:10.0.0.1",
        "order_queue$",
        "",
    ):
        assert not is_order_queue_direct_name(bad), bad
    for protocol, address in (("UDP", "1.2.3.4"), ("TCP", ""), ("TCP", "a\\b")):
        with pytest.raises(WireError):
            order_queue_direct_name(address, protocol)
    assert ORDER_QUEUE_PRIVATE_ID == 4


def _classify(**overrides: object) -> OrderPacketKind | None:
    values: dict[str, object] = {
        "base_header_flags": 0,
        "destination_is_order_queue": True,
        "label": ORDER_ACK_LABEL,
        "message_size": 0x24,
        "message_class": MessageClass.MQMSG_CLASS_ORDER_ACK,
    }
    values.update(overrides)
    return classify_order_packet(**values)  # type: ignore[arg-type]


def test_classify_order_ack_and_final_ack() -> None:
    assert _classify() is OrderPacketKind.ORDER_ACK
    assert _classify(label="QM Ordering Ack\x00") is OrderPacketKind.ORDER_ACK
    for cls in (
        MessageClass.MQMSG_CLASS_ACK_RECEIVE,
        MessageClass.MQMSG_CLASS_NACK_BAD_DST_Q,
        MessageClass.MQMSG_CLASS_NACK_Q_PURGED,
        MessageClass.MQMSG_CLASS_NACK_RECEIVE_TIMEOUT,
    ):
        assert _classify(message_class=cls) is OrderPacketKind.FINAL_ACK
    # SH (piggy-backed session ack) and reserved bits do not change the identification.
    assert _classify(base_header_flags=0x0010) is OrderPacketKind.ORDER_ACK
    assert _classify(base_header_flags=0xFE00 | 0x00C0) is OrderPacketKind.ORDER_ACK


@pytest.mark.parametrize(
    "overrides",
    [
        {"base_header_flags": 0x0003},  # priority 3
        {"base_header_flags": 0x0008},  # IN
        {"base_header_flags": 0x0020},  # DH
        {"base_header_flags": 0x0100},  # TR
        {"destination_is_order_queue": False},
        {"label": "QM Ordering Ack2"},
        {"label": "qm ordering ack"},
        {"message_size": 0x23},
        {"message_class": MessageClass.MQMSG_CLASS_NORMAL},
        {"message_class": MessageClass.MQMSG_CLASS_REPORT},
        {"message_class": MessageClass.MQMSG_CLASS_ACK_REACH_QUEUE},
        {"message_class": 0x3FFF},
    ],
)
def test_classify_rejects(overrides: dict[str, object]) -> None:
    assert _classify(**overrides) is None


u32 = st.integers(0, 0xFFFFFFFF)
seq_ids = st.integers(0, 0xFFFFFFFFFFFFFFFF)
order_acks = st.builds(OrderAckBody.for_number, seq_ids, st.integers(1, 0xFFFFFFFF)).flatmap(
    lambda b: st.builds(dataclasses.replace, st.just(b), reserved=st.binary(min_size=20, max_size=20))
)
final_acks = st.builds(
    FinalAckBody,
    tx_sequence_id=seq_ids,
    tx_sequence_number=st.integers(1, 0xFFFFFFFF),
    tx_previous_sequence_number=st.integers(0, 0xFFFFFFFE),
    source_guid=st.builds(uuid.UUID, bytes=st.binary(min_size=16, max_size=16)),
    message_id=u32,
)


@given(order_acks)
def test_order_ack_round_trip(body: OrderAckBody) -> None:
    assert OrderAckBody.decode(body.encode()) == body


@given(final_acks)
def test_final_ack_round_trip(body: FinalAckBody) -> None:
    assert FinalAckBody.decode(body.encode()) == body


@given(st.binary(max_size=48))
def test_arbitrary_bytes(data: bytes) -> None:
    for decoder in (OrderAckBody.decode, FinalAckBody.decode):
        try:
            value = decoder(data)
        except WireError:
            continue
        assert value.encode() == data


@given(st.one_of(order_acks, final_acks), st.integers(0, 35), st.binary(min_size=1, max_size=8))
def test_truncation_and_trailing_garbage(body: OrderAckBody | FinalAckBody, cut: int, tail: bytes) -> None:
    data = body.encode()
    with pytest.raises(WireError):
        type(body).decode(data[:cut])
    with pytest.raises(WireError):
        type(body).decode(data + tail)


@given(st.integers(0, 0xFFFF), st.booleans(), st.text(max_size=20), u32, st.integers(0, 0xFFFF))
def test_classify_is_total(flags: int, dest: bool, label: str, size: int, cls: int) -> None:
    kind = classify_order_packet(
        base_header_flags=flags,
        destination_is_order_queue=dest,
        label=label,
        message_size=size,
        message_class=cls,
    )
    if kind is not None:
        assert dest and label.rstrip("\x00") == ORDER_ACK_LABEL and flags & 0x012F == 0
        assert (kind is OrderPacketKind.ORDER_ACK) == (cls == 0xFF)
