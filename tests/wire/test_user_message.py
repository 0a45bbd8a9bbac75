"""UserMessage packet ([MS-MQMQ] 2.2.20): real vectors, frame 7, build(), round trips, fuzzing."""

from __future__ import annotations

import tracemalloc
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader
from pymsmq.wire.base_header import BaseHeader
from pymsmq.wire.message_properties_header import EncryptionAlgorithm, HashAlgorithm
from pymsmq.wire.mqrr_headers import (
    CompoundMessageHeader,
    DeadLetterHeader,
    ExtendedAddressHeader,
    SRMPEnvelopeHeader,
    SubqueueHeader,
)
from pymsmq.wire.optional_headers import (
    DebugHeader,
    MQFAddressHeader,
    MQFHeaderId,
    MultiQueueFormatHeader,
    SoapHeader,
    TransactionHeader,
)
from pymsmq.wire.packet_types import (
    DirectQueueFormatName,
    MQFDirectQueueFormatName,
    MQFFormatNameElement,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueType,
    TxSequenceID,
)
from pymsmq.wire.security_header import SecurityHeader
from pymsmq.wire.session_header import SessionHeader
from pymsmq.wire.user_message import UserMessage

GUID = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")

# [MS-MQQB] 4.1.7 frame 7 as printed (first 0xE0 bytes); the rest is rebuilt from the length fields
# (digest part B7: body = "a" x 1000 in UTF-16LE, then 2 padding bytes; 2224 bytes in all).
FRAME7_HEAD = bytes.fromhex(
    """
    10 00 03 00 4C 49 4F 52 B0 08 00 00 00 46 05 00
    D1 58 73 55 50 91 95 95 49 97 B6 E6 11 EA 26 C6
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    FF FF FF FF 4C 49 4F 52 EE 08 00 00 00 1C 28 00
    1A 00 4F 00 53 00 3A 00 61 00 30 00 34 00 62 00
    6D 00 30 00 32 00 5C 00 71 00 00 00 01 00 1C 00
    00 00 00 00 00 00 00 00 00 00 00 00 01 05 00 00
    00 00 00 05 15 00 00 00 AD 4A 9E BD 36 D9 FA 3D
    63 A6 56 DA E8 03 00 00 0F 0F 00 00 00 00 00 00
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    08 00 00 00 00 00 00 00 D0 07 00 00 D0 07 00 00
    00 00 00 00 04 80 00 00 01 68 00 00 00 00 00 00
    6D 00 71 00 73 00 65 00 6E 00 64 00 65 00 72 00
    20 00 6C 00 61 00 62 00 65 00 6C 00 00 00 61 00
    """
)


def frame7_bytes() -> bytes:
    """The 2224-byte frame 7 UserMessage rebuilt from the spec text."""
    return FRAME7_HEAD[:0xDE] + b"a\x00" * 1000 + b"\x00\x00"


QUEUEJUMPER = ["queuejumper-msf-usermessage-srmp.bin", "queuejumper-nse-usermessage-srmp.bin"]
MALFORMED = [
    "queuejumper-msf-usermessage-srmp-malformed-datalength.bin",
    "queuejumper-nse-usermessage-srmp-malformed-datalength.bin",
]
ALL_REAL = [*QUEUEJUMPER, "mqqb-4.1.7-frame7-usermessage.bin"]


# -- frame 7 ----------------------------------------------------------------------------------------


def test_frame7_vector_file_matches_the_spec_text(vector: Callable[[str], bytes]) -> None:
    data = vector("mqqb-4.1.7-frame7-usermessage.bin")
    assert data == frame7_bytes()
    assert len(data) == 2224
    assert data[:0xE0] == FRAME7_HEAD


def test_frame7_fields() -> None:
    data = frame7_bytes()
    m = UserMessage.decode(data)
    b = m.base_header
    assert (b.version_number, b.reserved, b.flags, b.packet_size) == (0x10, 0, 0x0003, 2224)
    assert b.time_to_reach_queue == 345600 and m.priority == 3
    u = m.user_header
    assert u.source_queue_manager == GUID
    assert u.queue_manager_address == uuid.UUID(int=0)
    assert u.time_to_be_received == 0xFFFFFFFF and u.message_id == 2286
    assert u.flags == 0x00281C00 and u.dq == QueueType.DIRECT_QUEUE
    assert u.destination_queue == DirectQueueFormatName("OS:a04bm02\\q")
    assert m.destination_queue is u.destination_queue
    s = m.security_header
    assert s is not None and s.flags == 0x0001 and len(s.security_id) == 28
    assert s.security_id[:8] == bytes.fromhex("0105000000000005")  # S-1-5-21-...
    p = m.message_properties_header
    assert (p.flags, p.label_length, p.message_class) == (0x0F, 15, 0)
    assert p.correlation_id == bytes(20) and p.body_type == 8 and p.application_tag == 0
    assert (p.message_size, p.allocation_body_size, p.privacy_level) == (2000, 2000, 0)
    assert p.hash_algorithm == HashAlgorithm.SHA1 and p.encryption_algorithm == EncryptionAlgorithm.RC4
    assert m.label == "mqsender label" and m.body == "a".encode("utf-16-le") * 1000
    for name in (
        "transaction_header",
        "debug_header",
        "srmp_envelope_header",
        "compound_message_header",
        "soap_header",
        "multi_queue_format_header",
        "extension_header",
        "subqueue_header",
        "dead_letter_header",
        "extended_address_header",
        "session_header",
    ):
        assert getattr(m, name) is None, name
    assert m.encode() == data


# -- the real queuejumper vectors (tests/vectors/README.md) --------------------------------------------


@pytest.mark.parametrize("name", QUEUEJUMPER)
def test_queuejumper_fields(name: str, vector: Callable[[str], bytes]) -> None:
    data = vector(name)
    m = UserMessage.decode(data)
    msf = "msf" in name
    b = m.base_header
    assert b.flags == (0x1003 if msf else 0x0003)  # reserved bit 12 kept
    assert b.priority == 3 and b.packet_size == len(data) == (2404 if msf else 2380)
    if msf:
        assert b.time_to_reach_queue == 0x6C097663  # absolute ([MS-MQRR] use), kept as sent
    else:
        assert b.time_to_reach_queue == 0xFFFFFFFF
    u = m.user_header
    assert u.flags == 0x02201C01 and u.dq == QueueType.DIRECT_QUEUE and u.ah and u.rc == 1
    host = "192.168.56.113" if msf else "192.168.10.100"
    assert u.destination_queue == DirectQueueFormatName(f"http://{host}/msmq/private$/queuejumper")
    assert m.label == "poc" and m.message_properties_header.body == b""
    assert m.body == b"Message"  # the SRMP body, inside the CompoundMessageHeader
    srmp = m.srmp_envelope_header
    assert srmp is not None and srmp.data_length == 539
    assert srmp.envelope.startswith("<se:Envelope")
    assert srmp.padding == (b"\x64\x00" if msf else b"")
    c = m.compound_message_header
    assert c is not None and c.header_id == 500
    assert c.http_body_size == (1060 if msf else 1036)
    assert (c.msg_body_size, c.msg_body_offset, c.message_body) == (7, 995, b"Message")
    e = m.extension_header
    assert e is not None and e.header_size == 12 and e.flags == 0 and e.remaining_headers_size == 0
    assert m.subqueue_header is None and m.dead_letter_header is None and m.extended_address_header is None
    assert m.transaction_header is None and m.security_header is None and m.session_header is None
    assert m.encode() == data


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_datalength_rejected_quickly(name: str, vector: Callable[[str], bytes]) -> None:
    data = vector(name)
    assert data[232:236] == bytes.fromhex("1B020080")  # DataLength 0x8000021B
    tracemalloc.start()
    try:
        with pytest.raises(WireError, match="SRMPEnvelopeHeader"):
            UserMessage.decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing near the 4 GiB the length field claims


@pytest.mark.parametrize("name", ALL_REAL)
def test_every_truncation_is_a_wire_error(name: str, vector: Callable[[str], bytes]) -> None:
    data = vector(name)
    for n in range(len(data)):
        with pytest.raises(WireError):
            UserMessage.decode(data[:n])


@pytest.mark.parametrize("name", ALL_REAL)
def test_trailing_bytes_are_a_wire_error(name: str, vector: Callable[[str], bytes]) -> None:
    data = vector(name)
    for extra in (b"\x00", b"\x00" * 4, b"\x00" * 16):
        with pytest.raises(WireError):
            UserMessage.decode(data + extra)


@pytest.mark.parametrize("name", ALL_REAL)
@given(st.data())
def test_flipped_bytes_give_value_or_wire_error(name: str, data: st.DataObject) -> None:
    from pathlib import Path

    raw = bytearray((Path(__file__).parent.parent / "vectors" / name).read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    try:
        m = UserMessage.decode(bytes(raw))
    except WireError:
        return
    assert m.encode() == bytes(raw)


def test_user_message_rules() -> None:
    good = UserMessage.build(destination="OS:m\\q", body=b"x").encode()
    # IN set -> not a UserMessage ([MS-MQMQ] 2.2.20).
    with pytest.raises(WireError, match="IN"):
        UserMessage.decode(good[:2] + bytes([good[2] | 0x08]) + good[3:])
    # MP clear.
    flags = int.from_bytes(good[60:64], "little") & ~0x00200000
    with pytest.raises(WireError, match="MP"):
        UserMessage.decode(good[:60] + flags.to_bytes(4, "little") + good[64:])
    # PacketSize not a multiple of 4, above the maximum, or below 16.
    for size in (len(good) - 1, 0x00400004, 12):
        with pytest.raises(WireError):
            UserMessage.decode(good[:8] + size.to_bytes(4, "little") + good[12:])
    # Bytes left inside PacketSize that do not form an ExtensionHeader.
    padded = good[:8] + (len(good) + 4).to_bytes(4, "little") + good[12:] + b"\x0c\x00\x00\x00"
    with pytest.raises(WireError):
        UserMessage.decode(padded)
    # Bad version / signature.
    with pytest.raises(WireError):
        UserMessage.decode(b"\x11" + good[1:])
    with pytest.raises(WireError):
        UserMessage.decode(good[:4] + b"LIOS" + good[8:])


def test_session_header_after_packet_size() -> None:
    session = SessionHeader(ack_sequence_number=5, window_size=64)
    m = UserMessage.build(destination="OS:m\\q", body=b"abc", session_header=session)
    data = m.encode()
    assert m.base_header.flags & 0x10
    assert m.base_header.packet_size == len(data) - 16  # [MS-MQMQ] 2.2.19.1: SessionHeader excluded
    assert int.from_bytes(data[8:12], "little") == len(data) - 16
    assert data[-16:] == session.encode()
    assert UserMessage.decode(data) == m
    with pytest.raises(WireError):
        UserMessage.decode(data[:-16])


def test_read_from_a_stream() -> None:
    a = UserMessage.build(destination="OS:m\\q", body=b"first", session_header=SessionHeader())
    b = UserMessage.build(destination="OS:m\\q", body=b"second")
    r = Reader(a.encode() + b.encode())
    assert UserMessage.read(r) == a
    assert UserMessage.read(r) == b
    assert r.remaining == 0


# -- build --------------------------------------------------------------------------------------------


def test_build_minimal_size_arithmetic() -> None:
    # digest D7.4 #5: 16 + (48 + 48) + align4(56 + 10) = 180.
    m = UserMessage.build(destination="OS:host\\private$\\queue", body=b"0123456789")
    data = m.encode()
    assert len(data) == 180 == m.base_header.packet_size
    assert m.user_header.flags == 0x00201C00
    assert m.base_header.flags == 0x0003 and m.base_header.time_to_reach_queue == 0xFFFFFFFF
    assert UserMessage.decode(data) == m
    # "DIRECT=" is accepted and dropped.
    assert UserMessage.build(destination="DIRECT=OS:host\\private$\\queue", body=b"0123456789") == m


def test_build_rebuilds_frame7() -> None:
    ref = UserMessage.decode(frame7_bytes())
    assert ref.security_header is not None
    m = UserMessage.build(
        destination="OS:a04bm02\\q",
        body="a".encode("utf-16-le") * 1000,
        label="mqsender label",
        priority=3,
        source_queue_manager=GUID,
        message_id=2286,
        sent_time=0x524F494C,
        time_to_reach_queue=345600,
        acknowledgements=0x0F,
        admin_queue="OS:a04bm02\\admin",
        body_type=8,
        hash_algorithm=HashAlgorithm.SHA1,
        encryption_algorithm=EncryptionAlgorithm.RC4,
        security_header=ref.security_header,
    )
    # Same packet except the admin queue that build() insists on when acks are requested.
    assert m.user_header.flags == ref.user_header.flags | 7 << 13
    assert m.message_properties_header == ref.message_properties_header
    assert m.security_header == ref.security_header
    assert UserMessage.decode(m.encode()) == m


def test_build_transactional_forces_recoverable_and_priority_zero() -> None:
    tx = TransactionHeader(tx_sequence_id=TxSequenceID(1, 2), tx_sequence_number=1)
    m = UserMessage.build(destination=PrivateQueueFormatNameId(4), priority=7, transaction_header=tx)
    assert m.priority == 0
    assert m.user_header.th and m.user_header.recoverable
    assert m.user_header.flags == 0x00300C20  # digest D7.4 #3 with DQ=3
    assert UserMessage.decode(m.encode()) == m


def test_build_queue_types() -> None:
    m = UserMessage.build(
        destination=PublicQueueFormatName(GUID),
        destination_queue_manager=GUID,
        admin_queue=PrivateQueueFormatNameId(9),
        admin_queue_type=QueueType.PRIVATE_QUEUE_ON_SOURCE,
        response_queue_type=QueueType.SAME_AS_ADMINISTRATION_QUEUE,
        acknowledgements=0x01,
        connector_type=GUID,
        journal_positive=True,
        journal_negative=True,
        recoverable=True,
        routing_count=2,
    )
    u = m.user_header
    assert (u.dq, u.aq, u.rq, u.cq, u.jp, u.jn, u.rc) == (5, 2, 1, True, True, True, 2)
    assert u.response_queue is None and u.connector_type == GUID
    assert UserMessage.decode(m.encode()) == m
    m = UserMessage.build(destination="OS:x\\q", response_queue=PrivateQueueFormatName(GUID, 1))
    assert m.user_header.rq == QueueType.PRIVATE_QUEUE_ON_OTHER


@pytest.mark.parametrize(
    "kwargs",
    [
        {"priority": 8},
        {"acknowledgements": 1},  # acks need an admin queue
        {"admin_queue": PrivateQueueFormatNameId(1)},  # ambiguous without admin_queue_type
        {"admin_queue": "OS:a\\q", "admin_queue_type": 4},  # AQ=4 is not allowed
        {"response_queue_type": 1},  # same as admin, but no admin queue
        {"trace": True},  # TR needs a DebugHeader
        {"srmp_envelope_header": SRMPEnvelopeHeader()},  # without the CompoundMessageHeader
        {"label": "x" * 250},
        {"label": "a\x00b"},
        {"routing_count": 0x1E},
    ],
)
def test_build_rejects(kwargs: dict[str, object]) -> None:
    with pytest.raises(WireError):
        UserMessage.build(destination="OS:m\\q", **kwargs)  # type: ignore[arg-type]


def test_build_rejects_bad_destination_type() -> None:
    with pytest.raises(WireError):
        UserMessage.build(destination=PrivateQueueFormatName(GUID, 1))  # DQ=6 is not allowed


def test_encode_checks_presence_flags() -> None:
    import dataclasses

    m = UserMessage.build(destination="OS:m\\q")
    for change in (
        {"transaction_header": TransactionHeader()},
        {"security_header": SecurityHeader(security_id=b"\x01")},
        {"debug_header": DebugHeader()},
        {"soap_header": SoapHeader()},
        {"multi_queue_format_header": MultiQueueFormatHeader()},
        {"session_header": SessionHeader()},
        {"srmp_envelope_header": SRMPEnvelopeHeader()},
        {"subqueue_header": SubqueueHeader()},
        {"base_header": BaseHeader(flags=0x08)},
    ):
        with pytest.raises(WireError):
            dataclasses.replace(m, **change).encode()  # type: ignore[arg-type]


def test_encode_writes_the_true_packet_size() -> None:
    import dataclasses

    m = UserMessage.build(destination="OS:m\\q", body=b"12345")
    stale = dataclasses.replace(m, base_header=BaseHeader(flags=3, packet_size=16))
    assert stale.encode() == m.encode()
    assert stale.with_packet_size() == m
    assert m.with_packet_size() is m


def test_build_extension_section() -> None:
    m = UserMessage.build(
        destination="OS:m\\q",
        subqueue_header=SubqueueHeader(subqueue_name="poison"),
        dead_letter_header=DeadLetterHeader("OS:m\\private$\\dlq"),
        extended_address_header=ExtendedAddressHeader(1, 4, 0, bytes([10, 0, 0, 1]) + bytes(12)),
    )
    e = m.extension_header
    assert e is not None and e.flags == 0x13  # DL | SQ | EA
    assert e.remaining_headers_size == 148 + m.dead_letter_header.header_size + 28  # type: ignore[union-attr]
    data = m.encode()
    assert m.base_header.packet_size == len(data)
    assert UserMessage.decode(data) == m


# -- Hypothesis: built packets with random optional headers ---------------------------------------------

guids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
u32 = st.integers(0, 0xFFFFFFFF)
texts = st.text(st.characters(min_codepoint=1, max_codepoint=0xFFFF), max_size=30)
destinations = st.one_of(
    texts.map(DirectQueueFormatName),
    u32.map(PrivateQueueFormatNameId),
    guids.map(PublicQueueFormatName),
)
optional = {
    "transaction_header": st.builds(
        TransactionHeader,
        flags=st.integers(0, 0xFFFFFFFF).map(lambda f: f & ~1),
        tx_sequence_id=st.builds(TxSequenceID, u32, u32),
        tx_sequence_number=u32,
        previous_tx_sequence_number=u32,
    ),
    "security_header": st.builds(
        SecurityHeader, flags=st.just(0x81), security_id=st.binary(min_size=1, max_size=30)
    ),
    "debug_header": st.sampled_from([DebugHeader(), DebugHeader(1, 0, GUID)]),
    "soap_header": st.builds(
        SoapHeader, header=texts.map(lambda t: t + "\x00"), body=texts.map(lambda t: t + "\x00")
    ),
    "multi_queue_format_header": st.builds(
        MultiQueueFormatHeader,
        destination=st.lists(texts.map(MQFDirectQueueFormatName), max_size=3).map(
            lambda xs: MQFAddressHeader(MQFHeaderId.DESTINATION, tuple(MQFFormatNameElement(x) for x in xs))
        ),
    ),
    "session_header": st.builds(SessionHeader, ack_sequence_number=st.integers(0, 0xFFFF)),
    "subqueue_header": st.builds(
        SubqueueHeader,
        subqueue_name=st.text(st.characters(min_codepoint=0x41, max_codepoint=0x5A), max_size=31),
    ),
    "dead_letter_header": st.builds(DeadLetterHeader, texts),
}


@st.composite
def built_messages(draw: st.DrawFn) -> UserMessage:
    kwargs: dict[str, object] = {
        "destination": draw(destinations),
        "body": draw(st.binary(max_size=300)),
        "label": draw(st.none() | texts),
        "priority": draw(st.integers(0, 7)),
        "source_queue_manager": draw(guids),
        "message_id": draw(u32),
        "sent_time": draw(u32),
        "time_to_reach_queue": draw(u32),
        "time_to_be_received": draw(u32),
        "recoverable": draw(st.booleans()),
        "message_class": draw(st.integers(0, 0xFFFF)),
        "correlation_id": draw(st.binary(min_size=20, max_size=20)),
        "application_tag": draw(u32),
        "extension": draw(st.binary(max_size=10)),
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            kwargs[name] = draw(strategy)
    if draw(st.booleans()):
        kwargs["srmp_envelope_header"] = SRMPEnvelopeHeader(draw(texts) + "\x00")
        kwargs["compound_message_header"] = CompoundMessageHeader(draw(st.binary(max_size=40)))
    if draw(st.booleans()):
        kwargs["admin_queue"] = draw(texts.map(DirectQueueFormatName))
        kwargs["acknowledgements"] = draw(st.integers(0, 0xFF))
    return UserMessage.build(**kwargs)  # type: ignore[arg-type]


@given(built_messages())
def test_built_message_round_trip(m: UserMessage) -> None:
    data = m.encode()
    assert len(data) == m.base_header.packet_size + (16 if m.session_header else 0)
    decoded = UserMessage.decode(data)
    assert decoded == m
    assert decoded.encode() == data


@given(built_messages(), st.data())
def test_built_message_truncations_and_garbage(m: UserMessage, data: st.DataObject) -> None:
    raw = m.encode()
    n = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(WireError):
        UserMessage.decode(raw[:n])
    with pytest.raises(WireError):
        UserMessage.decode(raw + data.draw(st.binary(min_size=1, max_size=20)))


@given(st.binary(max_size=400))
def test_arbitrary_bytes(data: bytes) -> None:
    try:
        UserMessage.decode(data)
    except WireError:
        pass


@given(st.binary(max_size=300))
def test_arbitrary_bytes_after_a_valid_base_header(tail: bytes) -> None:
    size = 16 + len(tail)
    head = bytes.fromhex("10000300 4C494F52") + size.to_bytes(4, "little") + b"\xff\xff\xff\xff"
    data = head + tail
    try:
        m = UserMessage.decode(data)
    except WireError:
        return
    assert m.encode() == data
