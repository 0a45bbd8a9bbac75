"""PacketFramer: a TCP 1801 byte stream cut into whole packets, at any chunking; bad headers -> WireError."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire.base_header import MAX_PACKET_SIZE, BaseHeader
from pymsmq.wire.framing import PacketFramer, framed_size
from pymsmq.wire.internal_packets import SessionAck
from pymsmq.wire.session_header import SessionHeader

Load = Callable[[str], bytes]

VECTORS = Path(__file__).parents[1] / "vectors"
STREAM_FRAMES = [
    "mqqb-4.1.3-frame3-establishconnection-request.bin",
    "mqqb-4.1.4-frame4-establishconnection-response.bin",
    "mqqb-4.1.5-frame5-connectionparameters-request.bin",
    "mqqb-4.1.6-frame6-connectionparameters-response.bin",
    "queuejumper-nse-usermessage-srmp.bin",
    "mqqb-4.1.8-frame8-sessionack.bin",
    "queuejumper-msf-usermessage-srmp.bin",
]


def _load(name: str) -> bytes:
    return (VECTORS / name).read_bytes()


def _user_message_with_session_header(priority: int = 3) -> bytes:
    """A non-internal packet with Flags.SH: PacketSize excludes the trailing 16-byte SessionHeader."""
    body = bytes(range(20))
    bh = BaseHeader(flags=priority | 0x10, packet_size=16 + len(body), time_to_reach_queue=60)
    return bh.encode() + body + SessionHeader(ack_sequence_number=7).encode()


def _frame_all(chunks: list[bytes]) -> list[bytes]:
    framer = PacketFramer()
    out: list[bytes] = []
    for chunk in chunks:
        framer.feed(chunk)
        out.extend(framer)
        assert framer.buffered <= MAX_PACKET_SIZE + 16
    framer.end_of_stream()
    return out


def test_real_frames_back_to_back() -> None:
    packets = [_load(name) for name in STREAM_FRAMES]
    assert _frame_all([b"".join(packets)]) == packets
    assert _frame_all(packets) == packets


def test_session_ack_counts_its_session_header_in_packet_size(vector: Load) -> None:
    data = vector("mqqb-4.1.8-frame8-sessionack.bin")
    assert framed_size(data) == 36  # internal packet: exactly PacketSize ([MS-MQQB] 4.1.8)
    framer = PacketFramer()
    framer.feed(data + data[:20])
    assert list(framer) == [data]
    assert framer.buffered == 20


def test_user_message_trailing_session_header_is_taken() -> None:
    packet = _user_message_with_session_header()
    assert len(packet) == 16 + 20 + 16
    assert framed_size(packet) == 52  # [MS-MQMQ] 2.2.19.1: PacketSize 36 excludes the SessionHeader
    ack = SessionAck.build(SessionHeader(ack_sequence_number=1)).encode()
    assert _frame_all([packet + ack + packet]) == [packet, ack, packet]


def test_every_split_point_of_a_small_stream() -> None:
    packets = [
        _load("mqqb-4.1.5-frame5-connectionparameters-request.bin"),
        _user_message_with_session_header(),
        _load("mqqb-4.1.8-frame8-sessionack.bin"),
        BaseHeader().encode(),  # a bare 16-byte packet is legal framing-wise
    ]
    stream = b"".join(packets)
    for i in range(len(stream) + 1):
        for j in range(i, len(stream) + 1):
            assert _frame_all([stream[:i], stream[i:j], stream[j:]]) == packets


def test_byte_at_a_time() -> None:
    packets = [_load(name) for name in STREAM_FRAMES[:6]]
    stream = b"".join(packets)
    framer = PacketFramer()
    out: list[bytes] = []
    for k in range(len(stream)):
        framer.feed(stream[k : k + 1])
        out.extend(framer)
    assert out == packets
    assert framer.buffered == 0 and framer.pending == 0


def test_next_packet_and_pending() -> None:
    framer = PacketFramer()
    assert framer.next_packet() is None
    ack = _load("mqqb-4.1.8-frame8-sessionack.bin")
    framer.feed(ack * 3)
    assert framer.pending == 3
    assert framer.next_packet() == ack
    assert list(framer) == [ack, ack]
    assert framer.next_packet() is None
    framer.feed(b"")
    assert framer.pending == 0


@pytest.mark.parametrize(
    ("offset", "value", "message"),
    [
        (0, b"\x11", "VersionNumber"),
        (4, b"RIOL", "Signature"),
        (8, (MAX_PACKET_SIZE + 1).to_bytes(4, "little"), "exceeds"),
        (8, (0xFFFFFFFF).to_bytes(4, "little"), "exceeds"),
        (8, (15).to_bytes(4, "little"), "smaller"),
        (8, (0).to_bytes(4, "little"), "smaller"),
    ],
)
def test_bad_header_breaks_the_stream(offset: int, value: bytes, message: str) -> None:
    good = _load("mqqb-4.1.5-frame5-connectionparameters-request.bin")
    bad = bytearray(good)
    bad[offset : offset + len(value)] = value
    framer = PacketFramer()
    with pytest.raises(WireError, match=message):
        framer.feed(good + bytes(bad))
    assert framer.buffered == 0
    # The packet completed before the bad header stays available; then the broken stream raises.
    assert framer.next_packet() == good
    with pytest.raises(WireError, match="broken"):
        framer.next_packet()
    with pytest.raises(WireError, match="broken"):
        framer.feed(good)
    with pytest.raises(WireError, match="broken"):
        framer.end_of_stream()


def test_bad_header_split_across_feeds_is_detected_once_complete() -> None:
    framer = PacketFramer()
    framer.feed(b"\x10\x00\x03\x00LIO")
    assert framer.pending == 0 and framer.buffered == 7
    with pytest.raises(WireError, match="Signature"):
        framer.feed(b"X" + bytes(8))


def test_oversized_packet_size_is_rejected_before_buffering() -> None:
    bh = bytearray(BaseHeader(packet_size=MAX_PACKET_SIZE).encode())
    framer = PacketFramer()
    framer.feed(bytes(bh))  # a maximum-size packet is legal: its header is accepted and buffered
    assert framer.buffered == 16
    framer.feed(bytes(1 << 20))
    assert framer.buffered == 16 + (1 << 20)
    bh[8:12] = (MAX_PACKET_SIZE + 1).to_bytes(4, "little")
    with pytest.raises(WireError):
        PacketFramer().feed(bytes(bh))


def test_smaller_configured_limit() -> None:
    framer = PacketFramer(max_packet_size=64)
    framer.feed(_load("mqqb-4.1.5-frame5-connectionparameters-request.bin"))
    assert framer.pending == 1
    with pytest.raises(WireError, match="exceeds"):
        framer.feed(_load("mqqb-4.1.3-frame3-establishconnection-request.bin"))
    with pytest.raises(ValueError):
        PacketFramer(max_packet_size=MAX_PACKET_SIZE + 1)
    with pytest.raises(ValueError):
        PacketFramer(max_packet_size=15)


def test_end_of_stream_inside_a_packet() -> None:
    framer = PacketFramer()
    framer.feed(_load("mqqb-4.1.8-frame8-sessionack.bin")[:10])
    with pytest.raises(WireError, match="inside a packet"):
        framer.end_of_stream()
    framer = PacketFramer()
    framer.feed(_load("mqqb-4.1.8-frame8-sessionack.bin")[:30])
    with pytest.raises(WireError, match="30 of 36"):
        framer.end_of_stream()


def test_framed_size_needs_a_whole_header() -> None:
    with pytest.raises(WireError, match="truncated"):
        framed_size(b"\x10\x00")


# --- Hypothesis ---------------------------------------------------------------------------------------

generated_packets = st.one_of(
    st.sampled_from([_load(name) for name in STREAM_FRAMES]),
    st.builds(_user_message_with_session_header, st.integers(0, 7)),
    st.builds(
        lambda flags, body, ttrq: (
            BaseHeader(flags=flags & ~0x18, packet_size=16 + len(body), time_to_reach_queue=ttrq).encode()
            + body
        ),
        st.integers(0, 0xFFFF),
        st.binary(max_size=64),
        st.integers(0, 0xFFFFFFFF),
    ),
)


@given(st.lists(generated_packets, max_size=8), st.data())
def test_any_chunking_gives_the_packets_back(packets: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(packets)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert _frame_all(chunks) == packets


@given(st.binary(max_size=200), st.lists(st.integers(1, 50), max_size=10))
def test_arbitrary_bytes_give_packets_or_wire_error(data: bytes, sizes: list[int]) -> None:
    framer = PacketFramer()
    out: list[bytes] = []
    pos = 0
    try:
        for size in [*sizes, len(data)]:
            framer.feed(data[pos : pos + size])
            pos += size
            out.extend(framer)
        framer.end_of_stream()
    except WireError:
        return
    # Everything that framed cleanly is the input, cut at packet boundaries.
    assert b"".join(out) == data
    for packet in out:
        assert framed_size(packet) == len(packet)
