"""The pcap/pcapng reader, TCP reassembly and MSMQ framing (pure Python), then ``read_pcap`` on Spark."""

from __future__ import annotations

import datetime as dt
import io
import random
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.spark.columns import packet_row
from pymsmq.spark.pcap_parse import (
    CapturedPacket,
    PcapError,
    Segment,
    flow_segments,
    read_pcap_packets,
    read_segments,
    reassemble,
    write_pcap,
)
from pymsmq.wire import ConnectionParameters, SessionHeader, UserMessage

VECTORS = Path(__file__).parents[1] / "vectors"
T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def messages(n: int, seed: int = 1) -> list[bytes]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        msg = UserMessage.build(
            destination="OS:server\\private$\\orders",
            body=rnd.randbytes(rnd.randrange(0, 120)),
            label=f"m{i}",
            message_id=i,
            session_header=SessionHeader(window_size=64) if i % 3 == 0 else None,
        )
        out.append(msg.encode())
    return out


def capture(segments: list[Segment]) -> list[CapturedPacket]:
    buf = io.BytesIO()
    write_pcap(buf, segments)
    buf.seek(0)
    return list(read_pcap_packets(buf))


def payloads(packets: list[CapturedPacket], src: str = "10.0.0.1") -> list[bytes]:
    return [p.data for p in packets if p.src == src]


def test_one_stream_round_trip_with_offsets() -> None:
    pkts = messages(5)
    got = capture(flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, b"".join(pkts), [40]))
    assert [p.data for p in got] == pkts
    assert all(p.error is None for p in got)
    offsets = [0]
    for p in pkts[:-1]:
        offsets.append(offsets[-1] + len(p))
    assert [p.stream_offset for p in got] == offsets
    assert {(p.src, p.sport, p.dst, p.dport) for p in got} == {("10.0.0.1", 50000, "10.0.0.2", 1801)}
    assert all(p.timestamp >= T0 for p in got)


def test_session_header_packets_are_framed_with_it() -> None:
    # [MS-MQMQ] 2.2.19.1: PacketSize excludes the trailing SessionHeader; the frame includes it.
    pkts = messages(3)
    got = capture(flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, b"".join(pkts), []))
    assert [p.data for p in got] == pkts
    assert len(got[0].data) == struct.unpack_from("<I", got[0].data, 8)[0] + 16


def test_split_at_every_boundary() -> None:
    pkts = messages(3, seed=2)
    payload = b"".join(pkts)
    for cut in range(1, len(payload)):
        first = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, payload, [cut])
        assert payloads(capture(first)) == pkts, cut


def test_one_byte_segments() -> None:
    pkts = messages(2, seed=3)
    assert payloads(capture(flow_segments(T0, "10.0.0.1", "10.0.0.2", 1, 1801, b"".join(pkts), [1]))) == pkts


@given(st.randoms(use_true_random=False), st.lists(st.integers(1, 90), min_size=1, max_size=6))
def test_out_of_order_and_retransmitted_segments(rnd: random.Random, sizes: list[int]) -> None:
    pkts = messages(4, seed=4)
    segs = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, b"".join(pkts), sizes)
    syn, data = segs[0], segs[1:]
    shuffled = data + rnd.sample(data, k=min(len(data), 5))  # retransmissions
    rnd.shuffle(shuffled)
    assert payloads(capture([syn, *shuffled])) == pkts


def test_overlapping_retransmission_with_new_boundaries() -> None:
    pkts = messages(3, seed=5)
    payload = b"".join(pkts)
    a = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, payload, [50])
    b = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, payload, [33], isn=1001, syn=False)
    mixed = [
        a[0],
        a[1],
        b[3],
        a[3],
        b[2],
        b[1],
        *a[4:],
        *b[4:],
    ]  # a[2]'s bytes arrive only inside b's segments
    assert payloads(capture(mixed)) == pkts


def test_sequence_numbers_wrap_around() -> None:
    pkts = messages(4, seed=6)
    segs = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, b"".join(pkts), [37], isn=2**32 - 50)
    segs = [segs[0], *reversed(segs[1:])]
    assert payloads(capture(segs)) == pkts


def test_two_interleaved_streams_ipv4_and_ipv6() -> None:
    a_pkts = messages(4, seed=7)
    b_pkts = messages(3, seed=8)
    a = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, b"".join(a_pkts), [29])
    b = flow_segments(T0, "fe80::1", "fe80::2", 1801, 40000, b"".join(b_pkts), [41])
    mixed = [seg for pair in zip(a, b, strict=False) for seg in pair] + a[len(b) :] + b[len(a) :]
    got = capture(mixed)
    assert payloads(got, "10.0.0.1") == a_pkts
    assert payloads(got, "fe80::1") == b_pkts
    assert {p.sport for p in got if p.src == "fe80::1"} == {1801}


def test_same_addresses_both_directions_are_separate_streams() -> None:
    req = messages(2, seed=9)
    resp = messages(2, seed=10)
    a = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, b"".join(req), [20])
    b = flow_segments(T0, "10.0.0.2", "10.0.0.1", 1801, 50000, b"".join(resp), [20])
    got = capture(a + b)
    assert payloads(got, "10.0.0.1") == req
    assert payloads(got, "10.0.0.2") == resp


def test_other_ports_are_ignored_unless_asked() -> None:
    pkts = messages(2)
    segs = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 2103, b"".join(pkts), [])
    assert capture(segs) == []
    buf = io.BytesIO()
    write_pcap(buf, segs)
    buf.seek(0)
    assert [p.data for p in read_pcap_packets(buf, ports=None)] == pkts
    buf.seek(0)
    assert [p.data for p in read_pcap_packets(buf, ports=(2103,))] == pkts


def test_capture_starting_inside_a_packet_resynchronises() -> None:
    pkts = messages(4, seed=11)
    payload = b"".join(pkts)
    start = len(pkts[0]) // 2
    segs = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, payload[start:], [64], syn=False)
    got = capture(segs)
    assert got[0].error is not None and "cannot frame" in got[0].error
    assert got[0].data == payload[start : len(pkts[0])]
    assert [p.data for p in got[1:]] == pkts[1:]
    assert got[1].stream_offset == len(pkts[0]) - start


def test_gap_that_never_fills() -> None:
    pkts = messages(4, seed=12)
    payload = b"".join(pkts)
    segs = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, payload, [len(pkts[0]) + 10, 10])
    got = capture([s for i, s in enumerate(segs) if i != 2])  # lose bytes inside packet 1
    good = [p.data for p in got if p.error is None]
    assert good[0] == pkts[0]
    assert good[-2:] == pkts[-2:]
    assert any(p.error and "missing" in p.error for p in got)


def test_capture_ending_inside_a_packet() -> None:
    pkts = messages(2, seed=13)
    payload = b"".join(pkts)[:-5]
    got = capture(flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, payload, [30]))
    assert got[0].data == pkts[0] and got[0].error is None
    assert got[1].error == "the capture ends inside this packet"
    assert got[1].data == pkts[1][:-5]


def test_internal_packets_and_vectors_in_a_stream() -> None:
    frames = [
        (VECTORS / name).read_bytes()
        for name in (
            "mqqb-4.1.3-frame3-establishconnection-request.bin",
            "mqqb-4.1.5-frame5-connectionparameters-request.bin",
            "mqqb-4.1.7-frame7-usermessage.bin",
            "mqqb-4.1.8-frame8-sessionack.bin",
            "queuejumper-msf-usermessage-srmp.bin",
        )
    ]
    got = capture(flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, b"".join(frames), [100]))
    assert [p.data for p in got] == frames
    assert ConnectionParameters.decode(got[1].data).encode() == frames[1]


def test_write_then_read_segments() -> None:
    segs = flow_segments(T0, "192.168.1.1", "192.168.1.2", 1234, 1801, b"abc", [])
    buf = io.BytesIO()
    write_pcap(buf, segs)
    buf.seek(0)
    assert list(read_segments(buf)) == segs


def test_file_paths(tmp_path: Path) -> None:
    pkts = messages(2)
    path = tmp_path / "x.pcap"
    write_pcap(path, flow_segments(T0, "10.0.0.1", "10.0.0.2", 5, 1801, b"".join(pkts), [10]))
    assert [p.data for p in read_pcap_packets(path)] == pkts
    assert [p.data for p in read_pcap_packets(str(path))] == pkts


def _ethernet_ipv4_tcp(payload: bytes, seq: int, flags: int = 0x18, vlan: bool = False) -> bytes:
    tcp = struct.pack(">HHIIHHHH", 50000, 1801, seq, 0, (5 << 12) | flags, 1000, 0, 0) + payload
    ip = struct.pack(
        ">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    )
    tag = b"\x81\x00\x00\x05" if vlan else b""
    return bytes(12) + tag + b"\x08\x00" + ip + tcp


def test_big_endian_nanosecond_pcap_with_vlan() -> None:
    pkt = messages(1)[0]
    frame = _ethernet_ipv4_tcp(pkt, 7, vlan=True)
    data = struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
    data += struct.pack(">IIII", 1_700_000_000, 123_456_789, len(frame), len(frame)) + frame
    got = list(read_pcap_packets(io.BytesIO(data)))
    assert [p.data for p in got] == [pkt]
    assert got[0].timestamp == dt.datetime.fromtimestamp(1_700_000_000, dt.UTC) + dt.timedelta(
        microseconds=123456
    )


def test_linux_cooked_capture() -> None:
    pkt = messages(1)[0]
    ip_tcp = _ethernet_ipv4_tcp(pkt, 7)[14:]
    frame = bytes(14) + b"\x08\x00" + ip_tcp
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 113)
    data += struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame
    assert [p.data for p in read_pcap_packets(io.BytesIO(data))] == [pkt]


def _pcapng(frames: list[bytes], tsresol: int | None = None) -> bytes:
    def block(kind: int, body: bytes) -> bytes:
        body += bytes(-len(body) & 3)
        n = len(body) + 12
        return struct.pack("<II", kind, n) + body + struct.pack("<I", n)

    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    options = b""
    if tsresol is not None:
        options = struct.pack("<HHB3x", 9, 1, tsresol) + struct.pack("<HH", 0, 0)
    out += block(1, struct.pack("<HHI", 1, 0, 65535) + options)
    for i, frame in enumerate(frames):
        ticks = 1_700_000_000_000_000 + i
        if tsresol == 9:
            ticks *= 1000
        out += block(
            6, struct.pack("<IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, len(frame), len(frame)) + frame
        )
    return out


@pytest.mark.parametrize("tsresol", [None, 9])
def test_pcapng(tsresol: int | None) -> None:
    pkts = messages(2)
    payload = b"".join(pkts)
    frames = [_ethernet_ipv4_tcp(payload[:100], 1), _ethernet_ipv4_tcp(payload[100:], 101)]
    got = list(read_pcap_packets(io.BytesIO(_pcapng(frames, tsresol))))
    assert [p.data for p in got] == pkts
    assert got[0].timestamp.year == 2023


def test_ip_fragments_and_non_tcp_are_skipped() -> None:
    pkt = messages(1)[0]
    good = _ethernet_ipv4_tcp(pkt, 1)
    fragment = bytearray(_ethernet_ipv4_tcp(b"junk" * 10, 1))
    fragment[14 + 6] = 0x20  # More Fragments
    udp = bytearray(_ethernet_ipv4_tcp(b"junk", 1))
    udp[14 + 9] = 17
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for frame in (bytes(fragment), bytes(udp), arp, good):
        data += struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame
    assert [p.data for p in read_pcap_packets(io.BytesIO(data))] == [pkt]


def test_not_a_capture() -> None:
    with pytest.raises(PcapError):
        list(read_pcap_packets(io.BytesIO(b"hello world, not a capture")))
    with pytest.raises(PcapError):
        list(read_pcap_packets(io.BytesIO(b"")))
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    with pytest.raises(PcapError, match="truncated"):
        list(read_pcap_packets(io.BytesIO(head + b"\x01\x00")))


def test_a_broken_capture_ends_its_packets_with_an_error_when_asked() -> None:
    pkts = messages(6, seed=5)
    buf = io.BytesIO()
    write_pcap(buf, flow_segments(T0, "10.0.0.1", "10.0.0.2", 1, 1801, b"".join(pkts), [150]))
    data = buf.getvalue()
    cut = data[: len(data) - 40]  # the last record is cut short
    with pytest.raises(PcapError, match="truncated"):
        list(read_pcap_packets(io.BytesIO(cut)))
    errors: list[str] = []
    got = list(read_pcap_packets(io.BytesIO(cut), errors=errors))
    assert errors == ["truncated pcap record"]
    framed = [p.data for p in got if p.error is None]
    assert framed == pkts[: len(framed)] and len(framed) >= 4
    assert got[-1].error == "the capture ends inside this packet"  # flushed, not dropped
    errors = []
    assert list(read_pcap_packets(io.BytesIO(b"hello world, not a capture"), errors=errors)) == []
    assert errors and "not a pcap or pcapng file" in errors[0]
    errors = []
    assert list(read_pcap_packets("/nonexistent/x.pcap", errors=errors)) == []
    assert errors and "No such file" in errors[0]


def test_flow_segments_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError):
        flow_segments(T0, "10.0.0.1", "10.0.0.2", 1, 2, b"x", [0])
    with pytest.raises(ValueError):
        write_pcap(io.BytesIO(), [Segment(T0, "10.0.0.1", "fe80::1", 1, 2, 0, 0, b"")])


@given(st.binary(max_size=400))
def test_arbitrary_bytes_after_a_pcap_header(data: bytes) -> None:
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    try:
        out = list(read_pcap_packets(io.BytesIO(head + data)))
    except PcapError:
        return
    assert all(isinstance(p, CapturedPacket) for p in out)


@given(st.binary(max_size=300), st.sampled_from([0x0A0D0D0A, 0xA1B2C3D4, 0xD4C3B2A1, 0x4D3CB2A1]))
def test_arbitrary_capture_bodies(data: bytes, magic: int) -> None:
    try:
        list(read_pcap_packets(io.BytesIO(struct.pack("<I", magic) + data), ports=None))
    except PcapError:
        pass


@given(st.lists(st.binary(max_size=80), max_size=8), st.randoms(use_true_random=False))
def test_arbitrary_stream_bytes_are_never_lost(chunks: list[bytes], rnd: random.Random) -> None:
    """Whatever the stream holds, the packets and error records together cover it, in order."""
    payload = b"".join(chunks)
    if not payload:
        return
    segs = flow_segments(T0, "10.0.0.1", "10.0.0.2", 1, 1801, payload, [rnd.randrange(1, 50)])
    got = list(reassemble(segs))
    assert b"".join(p.data for p in got) == payload
    assert [p.stream_offset for p in got] == sorted(p.stream_offset for p in got)


# -- on Spark ---------------------------------------------------------------------------------------


def test_read_pcap_on_spark(spark: Any, tmp_path: Path) -> None:
    from pymsmq.spark import read_pcap

    rnd = random.Random(20)
    a_pkts = [
        UserMessage.build(
            destination="TCP:10.0.0.2\\private$\\orders",
            body=rnd.randbytes(50),
            label=f"a{i}",
            source_queue_manager=uuid.UUID(int=7),
            message_id=i,
        ).encode()
        for i in range(30)
    ]
    b_pkts = messages(10, seed=21)
    a = flow_segments(T0, "10.0.0.1", "10.0.0.2", 50000, 1801, b"".join(a_pkts), [77, 13])
    b = flow_segments(T0, "fe80::1", "fe80::2", 50001, 1801, b"".join(b_pkts), [101])
    mixed = [a[0], b[0], *sorted(a[1:] + b[1:], key=lambda s: rnd.random())]
    write_pcap(tmp_path / "one.pcap", mixed)
    write_pcap(tmp_path / "two.pcap", a)
    df = read_pcap(spark, str(tmp_path / "*.pcap"))
    rows = [r.asDict() for r in df.orderBy("path", "src", "stream_offset").collect()]
    one = [r for r in rows if r["path"].endswith("one.pcap")]
    two = [r for r in rows if r["path"].endswith("two.pcap")]
    assert [r["packet"] for r in one if r["src"] == "10.0.0.1"] == a_pkts
    assert [r["packet"] for r in one if r["src"] == "fe80::1"] == b_pkts
    assert [r["packet"] for r in two] == a_pkts
    for r in rows:
        assert r["capture_error"] is None
        assert r["kind"] == "UserMessage"
        expected = packet_row(r["packet"])
        assert r["label"] == expected["label"]
        assert r["message_id"] == expected["message_id"]
        assert r["destination"] == expected["destination"]
    assert {r["dport"] for r in rows} == {1801}
    assert one[0]["timestamp"].replace(tzinfo=dt.UTC) >= T0
    with pytest.raises(FileNotFoundError):
        read_pcap(spark, str(tmp_path / "none*.pcap"))
    raw = read_pcap(spark, tmp_path / "two.pcap", decode=False)
    assert raw.columns[-2:] == ["packet", "capture_error"]
    assert raw.count() == len(a_pkts)
    # One file of a glob that is not a capture, one cut short: the job used to fail on them.
    (tmp_path / "three.pcap").write_bytes(b"not a capture at all")
    whole = (tmp_path / "two.pcap").read_bytes()
    (tmp_path / "four.pcap").write_bytes(whole[: len(whole) - 30])
    rows = [r.asDict() for r in read_pcap(spark, str(tmp_path / "*.pcap")).collect()]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_file.setdefault(Path(r["path"]).name, []).append(r)
    assert len(by_file["one.pcap"]) == len(a_pkts) + len(b_pkts)
    assert len(by_file["two.pcap"]) == len(a_pkts)
    (three,) = by_file["three.pcap"]
    assert three["packet"] is None and three["kind"] == "error"
    assert three["capture_error"].startswith("capture file: not a pcap or pcapng file")
    four = by_file["four.pcap"]
    assert four[-1]["capture_error"] == "capture file: truncated pcap record" and four[-1]["packet"] is None
    assert [r["packet"] for r in four if r["capture_error"] is None] == a_pkts[: len(four) - 2]
    with pytest.raises(Exception, match="not a pcap or pcapng file"):
        read_pcap(spark, str(tmp_path / "three.pcap"), strict=True).collect()
