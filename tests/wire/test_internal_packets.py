"""[MS-MQQB] internal packets (InternalHeader, EstablishConnection, ConnectionParameters, SessionAck).

Three ways: the real frames of [MS-MQQB] 4.1 with every field asserted and re-encoded byte for byte;
Hypothesis round trips; any bytes (random, truncated, mutated, with trailing garbage) -> value or WireError.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire.base_header import BaseHeader, BaseHeaderFlags
from pymsmq.wire.internal_packets import (
    CONNECTION_PARAMETERS_SIZE,
    ESTABLISH_CONNECTION_PADDING,
    ESTABLISH_CONNECTION_SIZE,
    SESSION_ACK_SIZE,
    ConnectionParameters,
    EstablishConnection,
    InternalHeader,
    OperatingSystemFlags,
    PacketType,
    SessionAck,
    decode_internal_packet,
)
from pymsmq.wire.session_header import SessionHeader

Load = Callable[[str], bytes]

FRAME3 = "mqqb-4.1.3-frame3-establishconnection-request.bin"
FRAME4 = "mqqb-4.1.4-frame4-establishconnection-response.bin"
FRAME5 = "mqqb-4.1.5-frame5-connectionparameters-request.bin"
FRAME6 = "mqqb-4.1.6-frame6-connectionparameters-response.bin"
FRAME8 = "mqqb-4.1.8-frame8-sessionack.bin"
ALL_FRAMES = [FRAME3, FRAME4, FRAME5, FRAME6, FRAME8]
DECODERS: list[Callable[[bytes], object]] = [
    InternalHeader.decode,
    EstablishConnection.decode,
    ConnectionParameters.decode,
    SessionAck.decode,
    decode_internal_packet,
]

# GUIDs in the [MS-DTYP] packet layout (the spec's example text prints them byte-reversed, digest B0 #1).
CLIENT_GUID_3 = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
SERVER_GUID_3 = uuid.UUID("43cd8907-394c-8f11-4445-9078909ea0fc")
CLIENT_GUID_4 = uuid.UUID("1f742305-be5e-4177-bc77-c4dd7719e474")
SERVER_GUID_4 = uuid.UUID("3c3a6aeb-f567-4143-87d3-85cf4d68ceb4")


# --- real frames ---------------------------------------------------------------------------------------


def test_frame3_establish_connection_request(vector: Load) -> None:
    data = vector(FRAME3)
    pkt = EstablishConnection.decode(data)
    bh = pkt.base_header
    assert (bh.version_number, bh.reserved, bh.flags) == (0x10, 0xC0, 0x000B)
    assert bh.priority == 3 and bh.internal and not bh.session_header
    assert bh.packet_size == 572 == ESTABLISH_CONNECTION_SIZE
    assert bh.time_to_reach_queue == 0xFFFFFFFF
    assert pkt.internal_header.reserved == 0
    assert pkt.internal_header.flags == 0x0002
    assert pkt.internal_header.packet_type is PacketType.ESTABLISH_CONNECTION
    assert not pkt.connection_refused
    assert pkt.client_guid == CLIENT_GUID_3
    assert pkt.server_guid == SERVER_GUID_3
    assert pkt.time_stamp == 501140046
    # OperatingSystem bytes `10 03`: RE=0x10, SE=1 (no ping sent), OS=1 (server OS), QS=0.
    assert pkt.operating_system == 0x0310
    assert pkt.operating_system & OperatingSystemFlags.RE == 0x10
    assert not pkt.ping_sent and pkt.server_os and not pkt.qos
    assert pkt.reserved == 0
    assert pkt.padding == b"\x5a" * 512
    assert pkt.encode() == data
    assert decode_internal_packet(data) == pkt


def test_frame4_establish_connection_response(vector: Load) -> None:
    data = vector(FRAME4)
    pkt = EstablishConnection.decode(data)
    assert (pkt.base_header.reserved, pkt.base_header.flags, pkt.base_header.packet_size) == (0x5A, 0x0B, 572)
    assert pkt.internal_header.flags == 0x0002 and not pkt.connection_refused
    # Frame 4 comes from another capture than frame 3: its GUIDs differ (digest B0 #2).
    assert pkt.client_guid == CLIENT_GUID_4
    assert pkt.server_guid == SERVER_GUID_4
    assert pkt.time_stamp == 501140046
    assert pkt.operating_system == 0x0310
    assert pkt.padding == ESTABLISH_CONNECTION_PADDING
    assert pkt.encode() == data


@pytest.mark.parametrize("name", [FRAME5, FRAME6])
def test_frames5_and_6_connection_parameters(vector: Load, name: str) -> None:
    data = vector(name)
    pkt = ConnectionParameters.decode(data)
    bh = pkt.base_header
    assert (bh.reserved, bh.flags, bh.packet_size, bh.time_to_reach_queue) == (0xC0, 0x0B, 32, 0xFFFFFFFF)
    assert pkt.internal_header.flags == 0x0003
    assert pkt.internal_header.packet_type is PacketType.CONNECTION_PARAMETERS
    assert pkt.recoverable_ack_timeout == 1496
    assert pkt.ack_timeout == 120000
    assert pkt.reserved == 0
    # The spec's printed decode of frame 6 says 32; the bytes (identical to frame 5) say 64.
    assert pkt.window_size == 64
    assert pkt.encode() == data
    assert decode_internal_packet(data) == pkt


def test_frame8_session_ack(vector: Load) -> None:
    data = vector(FRAME8)
    pkt = SessionAck.decode(data)
    bh = pkt.base_header
    assert (bh.reserved, bh.flags, bh.packet_size) == (0xCD, 0x001B, 36)
    assert bh.priority == 3 and bh.internal and bh.session_header
    assert pkt.internal_header.flags == 0x0001
    assert pkt.internal_header.packet_type is PacketType.SESSION_ACK
    assert pkt.session_header == SessionHeader(
        ack_sequence_number=1,
        recoverable_msg_ack_seq_number=0,
        recoverable_msg_ack_flags=0,
        user_msg_sequence_number=0,
        recoverable_msg_seq_number=0,
        window_size=64,
        reserved=0,
    )
    assert pkt.encode() == data
    assert decode_internal_packet(data) == pkt


def test_build_reproduces_the_real_frames(vector: Load) -> None:
    # The frames' BaseHeader.Reserved bytes are uninitialised memory; everything else is what build() makes.
    ec = EstablishConnection.build(CLIENT_GUID_3, SERVER_GUID_3, 501140046, ping_sent=False, server_os=True)
    ec = dataclasses.replace(ec, base_header=dataclasses.replace(ec.base_header, reserved=0xC0))
    assert ec.encode() == vector(FRAME3)
    cp = ConnectionParameters.build(1496, 120000, 64)
    cp = dataclasses.replace(cp, base_header=dataclasses.replace(cp.base_header, reserved=0xC0))
    assert cp.encode() == vector(FRAME5)
    sa = SessionAck.build(SessionHeader(ack_sequence_number=1))
    sa = dataclasses.replace(sa, base_header=dataclasses.replace(sa.base_header, reserved=0xCD))
    assert sa.encode() == vector(FRAME8)


def test_refused_establish_connection_hand_built() -> None:
    # [MS-MQQB] 2.2.1: CS (bit 4 of InternalHeader.Flags, 0x0010) set in an EstablishConnection response.
    pkt = EstablishConnection.build(
        CLIENT_GUID_4, SERVER_GUID_4, 7, ping_sent=True, qos=True, connection_refused=True
    )
    data = pkt.encode()
    assert data[:16] == bytes.fromhex("10 00 0B 00 4C494F52 3C020000 FFFFFFFF")
    assert data[16:20] == bytes.fromhex("0000 1200")  # Reserved 0, Flags PT=2 | CS
    assert data[20:36] == CLIENT_GUID_4.bytes_le
    assert data[36:52] == SERVER_GUID_4.bytes_le
    assert data[52:56] == bytes.fromhex("07000000")
    assert data[56:60] == bytes.fromhex("1004 0000")  # RE=0x10, SE=0 (ping sent), QS=1; Reserved 0
    assert data[60:] == b"\x5a" * 512
    back = EstablishConnection.decode(data)
    assert back == pkt
    assert back.connection_refused and back.ping_sent and back.qos and not back.server_os


def test_reserved_fields_and_bits_are_kept(vector: Load) -> None:
    data = bytearray(vector(FRAME5))
    data[16:18] = b"\xab\xcd"  # InternalHeader.Reserved: "MUST be ignored on receipt"
    data[19] |= 0xE0  # InternalHeader.Flags X13..X15
    data[3] |= 0xC0  # BaseHeader.Flags reserved bits 14/15
    data[28:30] = b"\x01\x02"  # ConnectionParametersHeader.Reserved
    pkt = ConnectionParameters.decode(bytes(data))
    assert pkt.internal_header.reserved == 0xCDAB
    assert pkt.internal_header.flags == 0xE003
    assert pkt.internal_header.packet_type is PacketType.CONNECTION_PARAMETERS
    assert pkt.reserved == 0x0201
    assert pkt.encode() == bytes(data)


def test_request_padding_is_kept_as_sent(vector: Load) -> None:
    # Scanners send frame 3's first 60 bytes followed by zero padding (digest B8 side note).
    data = vector(FRAME3)[:60] + bytes(512)
    pkt = EstablishConnection.decode(data)
    assert pkt.padding == bytes(512)
    assert pkt.encode() == data


# --- MUST rules -----------------------------------------------------------------------------------------


def _patch(data: bytes, offset: int, value: bytes) -> bytes:
    out = bytearray(data)
    out[offset : offset + len(value)] = value
    return bytes(out)


@pytest.mark.parametrize(
    ("name", "offset", "value", "message"),
    [
        (FRAME3, 2, b"\x03\x00", "IN MUST be set"),
        (FRAME3, 2, b"\x1b\x00", "SH MUST be clear"),
        (FRAME5, 2, b"\x1b\x00", "SH MUST be clear"),
        (FRAME8, 2, b"\x0b\x00", "SH MUST be set"),
        (FRAME3, 2, b"\x2b\x00", "DH/TR"),
        (FRAME5, 2, b"\x0b\x01", "DH/TR"),
        (FRAME3, 8, b"\x3b\x02\x00\x00", "PacketSize"),
        (FRAME5, 8, b"\x24\x00\x00\x00", "PacketSize"),
        (FRAME8, 8, b"\x20\x00\x00\x00", "PacketSize"),
        (FRAME3, 12, b"\x00\x46\x05\x00", "TimeToReachQueue"),
        (FRAME8, 12, b"\xfe\xff\xff\xff", "TimeToReachQueue"),
        (FRAME3, 18, b"\x03\x00", "PT is 3, MUST be 2"),
        (FRAME5, 18, b"\x01\x00", "PT is 1, MUST be 3"),
        (FRAME8, 18, b"\x02\x00", "PT is 2, MUST be 1"),
        (FRAME3, 18, b"\x00\x00", "MUST be 1, 2 or 3"),
        (FRAME5, 18, b"\x04\x00", "MUST be 1, 2 or 3"),
        (FRAME8, 18, b"\x0f\x00", "MUST be 1, 2 or 3"),
        (FRAME8, 18, b"\x11\x00", "CS MUST NOT be set"),
        (FRAME3, 56, b"\x00\x03", "RE MUST be 0x10"),
        (FRAME3, 56, b"\x11\x03", "RE MUST be 0x10"),
        (FRAME5, 20, (0x1F3).to_bytes(4, "little"), "RecoverableAckTimeout"),
        (FRAME5, 20, (0x1D4C1).to_bytes(4, "little"), "RecoverableAckTimeout"),
        (FRAME5, 24, (0x4E1F).to_bytes(4, "little"), "AckTimeout"),
        (FRAME5, 24, (0x1D4C1).to_bytes(4, "little"), "AckTimeout"),
        (FRAME8, 32, b"\x00\x00", "WindowSize"),
        (FRAME3, 0, b"\x11", "VersionNumber"),
        (FRAME5, 4, b"LIOX", "Signature"),
    ],
)
def test_must_rules_are_enforced(vector: Load, name: str, offset: int, value: bytes, message: str) -> None:
    data = _patch(vector(name), offset, value)
    # decode_internal_packet dispatches on PT first, so its message may name another rule.
    with pytest.raises(WireError):
        decode_internal_packet(data)
    decoder = {FRAME3: EstablishConnection, FRAME5: ConnectionParameters, FRAME8: SessionAck}[name]
    with pytest.raises(WireError, match=message):
        decoder.decode(data)


def test_range_limits_are_accepted(vector: Load) -> None:
    for rec, ack in [(0x1F4, 0x4E20), (0x1D4C0, 0x1D4C0)]:
        data = _patch(_patch(vector(FRAME5), 20, rec.to_bytes(4, "little")), 24, ack.to_bytes(4, "little"))
        pkt = ConnectionParameters.decode(data)
        assert (pkt.recoverable_ack_timeout, pkt.ack_timeout) == (rec, ack)
    data = _patch(vector(FRAME5), 30, b"\x00\x00")  # WindowSize 0x0000 is in range for ConnectionParameters
    assert ConnectionParameters.decode(data).window_size == 0


@pytest.mark.parametrize("name", ALL_FRAMES)
def test_truncated_and_trailing_bytes_are_errors(vector: Load, name: str) -> None:
    data = vector(name)
    with pytest.raises(WireError, match="truncated"):
        decode_internal_packet(data[:-1])
    with pytest.raises(WireError):
        decode_internal_packet(data + b"\x00")
    with pytest.raises(WireError):
        decode_internal_packet(data[:15])


def test_wrong_packet_decoder_is_an_error(vector: Load) -> None:
    with pytest.raises(WireError):
        SessionAck.decode(vector(FRAME5))
    with pytest.raises(WireError):
        ConnectionParameters.decode(vector(FRAME8))
    with pytest.raises(WireError):
        EstablishConnection.decode(vector(FRAME5) + bytes(540))
    with pytest.raises(WireError, match="IN is clear"):
        decode_internal_packet(vector("queuejumper-nse-usermessage-srmp.bin"))


def test_internal_header_alone() -> None:
    assert InternalHeader.decode(b"\x00\x00\x12\x00") == InternalHeader(0, 0x12)
    ih = InternalHeader.create(PacketType.CONNECTION_PARAMETERS, connection_refused=True)
    assert ih.encode() == b"\x00\x00\x13\x00"
    assert ih.connection_refused and ih.packet_type is PacketType.CONNECTION_PARAMETERS
    for bad in (b"\x00\x00\x00\x00", b"\x00\x00\x05\x00", b"\x00\x00\x01", b"\x00\x00\x01\x00\x00"):
        with pytest.raises(WireError):
            InternalHeader.decode(bad)
    with pytest.raises(WireError):
        InternalHeader(0, 0x10000 | 1).encode()
    with pytest.raises(WireError):
        InternalHeader(0, 0x0007).encode()


def test_encoders_validate() -> None:
    ec = EstablishConnection.build(CLIENT_GUID_3)
    with pytest.raises(WireError, match="Padding"):
        dataclasses.replace(ec, padding=b"\x5a" * 511).encode()
    with pytest.raises(WireError):
        dataclasses.replace(ec, time_stamp=1 << 32).encode()
    with pytest.raises(WireError, match="RE MUST"):
        dataclasses.replace(ec, operating_system=0x0100).encode()
    with pytest.raises(WireError, match="PacketSize"):
        dataclasses.replace(ec, base_header=BaseHeader(flags=0x0B, packet_size=32)).encode()
    with pytest.raises(WireError, match="RecoverableAckTimeout"):
        ConnectionParameters.build(0, 120000)
    with pytest.raises(WireError, match="AckTimeout"):
        ConnectionParameters.build(500, 0)
    cp = ConnectionParameters.build(500, 20000)
    with pytest.raises(WireError):
        dataclasses.replace(cp, window_size=0x10000).encode()
    with pytest.raises(WireError):
        dataclasses.replace(cp, reserved=-1).encode()
    with pytest.raises(WireError, match="CS MUST NOT"):
        dataclasses.replace(
            SessionAck.build(SessionHeader()), internal_header=InternalHeader(0, 0x11)
        ).encode()
    with pytest.raises(WireError, match="priority"):
        SessionAck.build(SessionHeader(), priority=8)


def test_build_sets_the_identification_bits() -> None:
    sa = SessionAck.build(SessionHeader(ack_sequence_number=5), priority=0)
    assert sa.base_header.flags == BaseHeaderFlags.IN | BaseHeaderFlags.SH
    assert sa.base_header.packet_size == SESSION_ACK_SIZE == len(sa.encode())
    cp = ConnectionParameters.build(500, 20000, 1)
    assert cp.base_header.flags == 0x0B and cp.base_header.packet_size == CONNECTION_PARAMETERS_SIZE
    assert len(cp.encode()) == 32
    ec = EstablishConnection.build(CLIENT_GUID_3)
    assert ec.operating_system == 0x0110 and not ec.ping_sent
    assert ec.server_guid == uuid.UUID(int=0)


# --- Hypothesis round trips -----------------------------------------------------------------------------

u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
guids = st.builds(uuid.UUID, bytes=st.binary(min_size=16, max_size=16))
# Priority and the reserved BaseHeader flag bits (6, 7, 9..15) are free in an internal packet.
base_extra_flags = st.tuples(st.integers(0, 7), st.integers(0, 0x7F)).map(
    lambda t: t[0] | (t[1] & 0x3) << 6 | (t[1] >> 2) << 9
)
reserved_ih_bits = st.integers(0, 0x7FF).map(lambda x: x << 5)


def _base(size: int, sh: bool) -> st.SearchStrategy[BaseHeader]:
    return st.builds(
        lambda extra, reserved: BaseHeader(
            flags=extra | 0x08 | (0x10 if sh else 0), packet_size=size, reserved=reserved
        ),
        base_extra_flags,
        u8,
    )


establish_connections = st.builds(
    EstablishConnection,
    base_header=_base(ESTABLISH_CONNECTION_SIZE, False),
    internal_header=st.builds(
        lambda r, bits, cs: InternalHeader(r, 0x2 | bits | (0x10 if cs else 0)),
        u16,
        reserved_ih_bits,
        st.booleans(),
    ),
    client_guid=guids,
    server_guid=guids,
    time_stamp=u32,
    operating_system=st.integers(0, 0xFF).map(lambda hi: hi << 8 | 0x10),
    reserved=u16,
    padding=st.binary(min_size=512, max_size=512),
)
connection_parameters = st.builds(
    ConnectionParameters,
    base_header=_base(CONNECTION_PARAMETERS_SIZE, False),
    internal_header=st.builds(
        lambda r, bits, cs: InternalHeader(r, 0x3 | bits | (0x10 if cs else 0)),
        u16,
        reserved_ih_bits,
        st.booleans(),
    ),
    recoverable_ack_timeout=st.integers(0x1F4, 0x1D4C0),
    ack_timeout=st.integers(0x4E20, 0x1D4C0),
    reserved=u16,
    window_size=u16,
)
session_acks = st.builds(
    SessionAck,
    base_header=_base(SESSION_ACK_SIZE, True),
    internal_header=st.builds(lambda r, bits: InternalHeader(r, 0x1 | bits), u16, reserved_ih_bits),
    session_header=st.builds(
        SessionHeader,
        ack_sequence_number=u16,
        recoverable_msg_ack_seq_number=u16,
        recoverable_msg_ack_flags=u32,
        user_msg_sequence_number=u16,
        recoverable_msg_seq_number=u16,
        window_size=st.integers(1, 0xFFFF),
        reserved=u16,
    ),
)
internal_packets = st.one_of(establish_connections, connection_parameters, session_acks)


@given(internal_packets)
def test_round_trip(pkt: EstablishConnection | ConnectionParameters | SessionAck) -> None:
    data = pkt.encode()
    assert len(data) == pkt.base_header.packet_size
    assert type(pkt).decode(data) == pkt
    assert decode_internal_packet(data) == pkt
    assert decode_internal_packet(data).encode() == data


@given(u16, reserved_ih_bits, st.sampled_from(list(PacketType)), st.booleans())
def test_internal_header_round_trip(reserved: int, bits: int, pt: PacketType, cs: bool) -> None:
    ih = InternalHeader(reserved, int(pt) | bits | (0x10 if cs else 0))
    assert InternalHeader.decode(ih.encode()) == ih
    assert ih.packet_type is pt and ih.connection_refused == cs


# --- Hypothesis robustness: any bytes -> value or WireError ---------------------------------------------


def _value_or_wire_error(decoder: Callable[[bytes], object], data: bytes) -> None:
    try:
        value = decoder(data)
    except WireError:
        return
    # Whatever decodes re-encodes to the same bytes.
    assert value.encode() == data  # type: ignore[attr-defined]


@given(st.binary(max_size=700))
def test_arbitrary_bytes(data: bytes) -> None:
    for decoder in DECODERS:
        _value_or_wire_error(decoder, data)


@given(st.sampled_from(ALL_FRAMES), st.data())
def test_mutated_real_frames(name: str, data: st.DataObject) -> None:
    from pathlib import Path

    frame = bytearray((Path(__file__).parents[1] / "vectors" / name).read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, min(len(frame), 64) - 1))
        frame[index] = data.draw(u8)
    cut = data.draw(st.integers(0, len(frame)))
    tail = data.draw(st.binary(max_size=8))
    for candidate in (bytes(frame), bytes(frame[:cut]), bytes(frame) + tail):
        for decoder in DECODERS:
            _value_or_wire_error(decoder, candidate)


@given(internal_packets, st.integers(0, 600), st.binary(min_size=1, max_size=16))
def test_truncation_and_trailing_garbage(
    pkt: EstablishConnection | ConnectionParameters | SessionAck, cut: int, tail: bytes
) -> None:
    data = pkt.encode()
    with pytest.raises(WireError):
        decode_internal_packet(data + tail)
    if cut < len(data):
        with pytest.raises(WireError):
            decode_internal_packet(data[:cut])
