"""The UDP Ping Packet ([MS-MQQB] 2.2.7) against frames 1 and 2, round trips and arbitrary bytes."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire.ping import PING_PORT, PING_SIGNATURE, PING_SIZE, PingFlags, PingPacket

Load = Callable[[str], bytes]

FRAME1 = "mqqb-4.1.1-frame1-ping-request.bin"
FRAME2 = "mqqb-4.1.2-frame2-ping-response.bin"
CLIENT_GUID = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
SERVER_GUID = uuid.UUID("43cd8907-394c-8f11-4445-9078909ea0fc")


def test_frame1_ping_request(vector: Load) -> None:
    data = vector(FRAME1)
    assert len(data) == PING_SIZE == 24
    ping = PingPacket.decode(data)
    # Flags bytes `01 7D`: RC set ("client"), the unused bits carry garbage that is kept.
    assert ping.flags == 0x7D01
    assert ping.client and not ping.refuses
    assert ping.signature == PING_SIGNATURE == 0x5548
    assert ping.cookie == 4
    assert ping.qm_guid == CLIENT_GUID
    assert ping.encode() == data


def test_frame2_ping_response(vector: Load) -> None:
    data = vector(FRAME2)
    ping = PingPacket.decode(data)
    # Flags bytes `95 B2`: RC echoed (bit 0 set), RF clear ("will accept").
    assert ping.flags == 0xB295
    assert ping.client and not ping.refuses
    assert ping.cookie == 4
    assert ping.qm_guid == SERVER_GUID
    assert ping.encode() == data


def test_response_echoes_the_request(vector: Load) -> None:
    request = PingPacket.decode(vector(FRAME1))
    response = request.response(SERVER_GUID)
    assert response == PingPacket(PingFlags.RC, PING_SIGNATURE, 4, SERVER_GUID)
    # Same meaning as frame 2, without Windows' garbage bits.
    frame2 = PingPacket.decode(vector(FRAME2))
    assert (response.client, response.refuses, response.cookie, response.qm_guid) == (
        frame2.client,
        frame2.refuses,
        frame2.cookie,
        frame2.qm_guid,
    )
    refused = PingPacket.request(9, CLIENT_GUID).response(SERVER_GUID, refuse=True)
    assert refused.flags == PingFlags.RF and refused.refuses and not refused.client
    assert refused.cookie == 9


def test_hand_built_request_bytes() -> None:
    data = PingPacket.request(0x01020304, CLIENT_GUID, client=True).encode()
    assert data == bytes.fromhex("0100 4855 04030201") + CLIENT_GUID.bytes_le
    assert PING_PORT == 3527


def test_bad_signature_length_and_fields(vector: Load) -> None:
    data = bytearray(vector(FRAME1))
    data[2:4] = b"\x48\x56"
    with pytest.raises(WireError, match="Signature"):
        PingPacket.decode(bytes(data))
    with pytest.raises(WireError):
        PingPacket.decode(vector(FRAME1)[:23])
    with pytest.raises(WireError):
        PingPacket.decode(vector(FRAME1) + b"\x00")
    with pytest.raises(WireError):
        PingPacket(signature=0x4855).encode()
    with pytest.raises(WireError):
        PingPacket(cookie=1 << 32).encode()
    with pytest.raises(WireError):
        PingPacket(flags=-1).encode()


pings = st.builds(
    PingPacket,
    flags=st.integers(0, 0xFFFF),
    cookie=st.integers(0, 0xFFFFFFFF),
    qm_guid=st.builds(uuid.UUID, bytes=st.binary(min_size=16, max_size=16)),
)


@given(pings)
def test_round_trip(ping: PingPacket) -> None:
    data = ping.encode()
    assert len(data) == 24
    assert PingPacket.decode(data) == ping


@given(st.binary(max_size=40))
def test_arbitrary_bytes(data: bytes) -> None:
    try:
        ping = PingPacket.decode(data)
    except WireError:
        assert len(data) != 24 or data[2:4] != b"\x48\x55"
        return
    assert ping.encode() == data


@given(pings, st.integers(0, 23), st.binary(min_size=1, max_size=8))
def test_truncation_and_trailing_garbage(ping: PingPacket, cut: int, tail: bytes) -> None:
    data = ping.encode()
    with pytest.raises(WireError):
        PingPacket.decode(data[:cut])
    with pytest.raises(WireError):
        PingPacket.decode(data + tail)
