"""BaseHeader ([MS-MQMQ] 2.2.19.1) and SessionHeader (2.2.20.4) against real frames and generated values."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire.base_header import BaseHeader, BaseHeaderFlags
from pymsmq.wire.session_header import SessionHeader

Load = Callable[[str], bytes]


def test_establish_connection_frame_base_header(vector: Load) -> None:
    data = vector("mqqb-4.1.3-frame3-establishconnection-request.bin")
    bh = BaseHeader.decode(data[:16])
    assert bh.version_number == 0x10
    assert bh.reserved == 0xC0
    assert bh.flags == 0x000B
    assert bh.priority == 3
    assert bh.internal and not bh.session_header and not bh.debug_header
    assert bh.packet_size == 572 == len(data)
    assert bh.time_to_reach_queue == 0xFFFFFFFF
    assert bh.encode() == data[:16]


def test_session_ack_frame_base_and_session_header(vector: Load) -> None:
    data = vector("mqqb-4.1.8-frame8-sessionack.bin")
    bh = BaseHeader.decode(data[:16])
    assert (bh.reserved, bh.flags, bh.packet_size) == (0xCD, 0x001B, 36)
    assert bh.flags & BaseHeaderFlags.SH and bh.flags & BaseHeaderFlags.IN
    sh = SessionHeader.decode(data[20:36])
    assert sh.ack_sequence_number == 1
    assert sh.recoverable_msg_ack_seq_number == 0
    assert sh.recoverable_msg_ack_flags == 0
    assert sh.user_msg_sequence_number == 0
    assert sh.recoverable_msg_seq_number == 0
    assert sh.window_size == 64
    assert sh.encode() == data[20:36]


def test_reserved_flag_bits_are_kept(vector: Load) -> None:
    # The CVE-2023-21554 tool sets reserved bit 12 (flags 0x1003): decode it, never validate it.
    data = vector("queuejumper-msf-usermessage-srmp.bin")
    bh = BaseHeader.decode(data[:16])
    assert bh.flags == 0x1003
    assert bh.priority == 3
    assert bh.packet_size == 2404
    assert bh.encode() == data[:16]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ((0, b"\x11"), "VersionNumber"),
        ((4, b"LIOX"), "Signature"),
        ((8, (0x00400001).to_bytes(4, "little")), "exceeds"),
        ((8, (15).to_bytes(4, "little")), "smaller"),
    ],
)
def test_base_header_must_rules(patch: tuple[int, bytes], message: str) -> None:
    data = bytearray(BaseHeader().encode())
    offset, value = patch
    data[offset : offset + len(value)] = value
    with pytest.raises(WireError, match=message):
        BaseHeader.decode(bytes(data))


def test_session_header_acknowledged_window() -> None:
    sh = SessionHeader(recoverable_msg_ack_seq_number=0xFFFE, recoverable_msg_ack_flags=0b1011)
    assert sh.acknowledged_recoverable() == [0xFFFE, 0xFFFF, 0x0001]
    with pytest.raises(WireError):
        SessionHeader(window_size=0).encode()
    with pytest.raises(WireError):
        SessionHeader.decode(bytes(16))


base_headers = st.builds(
    BaseHeader,
    flags=st.integers(0, 0xFFFF),
    packet_size=st.integers(16, 0x00400000),
    time_to_reach_queue=st.integers(0, 0xFFFFFFFF),
    reserved=st.integers(0, 0xFF),
)
session_headers = st.builds(
    SessionHeader,
    ack_sequence_number=st.integers(0, 0xFFFF),
    recoverable_msg_ack_seq_number=st.integers(0, 0xFFFF),
    recoverable_msg_ack_flags=st.integers(0, 0xFFFFFFFF),
    user_msg_sequence_number=st.integers(0, 0xFFFF),
    recoverable_msg_seq_number=st.integers(0, 0xFFFF),
    window_size=st.integers(1, 0xFFFF),
    reserved=st.integers(0, 0xFFFF),
)


@given(base_headers)
def test_base_header_round_trip(bh: BaseHeader) -> None:
    assert BaseHeader.decode(bh.encode()) == bh


@given(session_headers)
def test_session_header_round_trip(sh: SessionHeader) -> None:
    assert SessionHeader.decode(sh.encode()) == sh


@given(st.binary(max_size=40))
def test_arbitrary_bytes_give_value_or_wire_error(data: bytes) -> None:
    for cls in (BaseHeader, SessionHeader):
        try:
            cls.decode(data)
        except WireError:
            pass
