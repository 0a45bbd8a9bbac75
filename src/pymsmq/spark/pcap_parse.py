"""Packet captures of MSMQ traffic -> whole MSMQ packets (pure Python: no pyspark, no scapy).

``read_pcap_packets(path)`` reads a classic pcap (microsecond or nanosecond, either byte order) or a
pcapng file, keeps the TCP segments of port 1801 ([MS-MQQB] 2.1.1), reassembles each direction of each
connection by sequence number (out-of-order segments are held until the gap fills; retransmitted and
overlapping bytes are delivered once, first copy wins) and cuts the byte stream into packets with the
[MS-MQMQ] 2.2.19.1 framing rule of ``pymsmq.wire.PacketFramer`` (PacketSize, plus the 16-byte
SessionHeader after a non-internal packet with BaseHeader.Flags.SH; ``pymsmq.wire.framing.framed_size``).

Nothing is dropped silently: bytes that cannot be framed (a capture that starts inside a connection, a
bad BaseHeader, a gap that never fills, a stream cut inside a packet) come out as a ``CapturedPacket``
whose ``error`` says why, and framing resumes at the next plausible BaseHeader (VersionNumber 0x10 and
Signature ``LIOR``).

Link types: Ethernet (with 802.1Q/802.1ad tags), raw IPv4/IPv6, Linux cooked (SLL, SLL2) and BSD
loopback.  IP fragments are skipped (TCP senders avoid them).  ``write_pcap`` and ``flow_segments``
build captures for tests.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final

from pymsmq.errors import WireError
from pymsmq.wire.base_header import BASE_HEADER_SIZE
from pymsmq.wire.framing import framed_size

__all__ = [
    "MSMQ_PORT",
    "CapturedPacket",
    "PcapError",
    "Segment",
    "flow_segments",
    "read_pcap_packets",
    "read_segments",
    "reassemble",
    "write_pcap",
]

#: [MS-MQQB] 2.1.1: the TCP port of the MSMQ binary protocol.
MSMQ_PORT: Final = 1801

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_SEQ_MOD: Final = 1 << 32
_SIGNATURE: Final = b"LIOR"  # BaseHeader.Signature 0x524F494C on the wire
# Unframeable bytes held back while looking for the next BaseHeader before they are reported.
_MAX_UNFRAMED: Final = 1 << 16
# TCP flags
_FIN: Final = 0x01
_SYN: Final = 0x02
_PSH: Final = 0x08
_ACK: Final = 0x10

# Link-layer types (https://www.tcpdump.org/linktypes.html numbering).
_LINK_NULL: Final = 0
_LINK_ETHERNET: Final = 1
_LINK_RAW: Final = 101
_LINK_LINUX_SLL: Final = 113
_LINK_IPV4: Final = 228
_LINK_IPV6: Final = 229
_LINK_LINUX_SLL2: Final = 276

_PCAP_MAGIC_US: Final = 0xA1B2C3D4
_PCAP_MAGIC_NS: Final = 0xA1B23C4D
_PCAPNG_SHB: Final = 0x0A0D0D0A
_PCAPNG_BOM: Final = 0x1A2B3C4D


class PcapError(ValueError):
    """The file is not a pcap/pcapng capture, or its container structure is broken."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One TCP segment of a capture (addresses as text)."""

    timestamp: dt.datetime
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    flags: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class CapturedPacket:
    """One MSMQ packet cut from a reassembled TCP stream.

    ``stream_offset`` is the position of its first byte in its direction's byte stream (0 = the first
    byte after the SYN, or the first byte captured when the SYN was not).  ``timestamp`` is the capture
    time of the segment that completed the packet.  ``error`` is None for a framed packet; otherwise
    ``data`` holds bytes that could not be framed and ``error`` says why.
    """

    timestamp: dt.datetime
    src: str
    sport: int
    dst: str
    dport: int
    stream_offset: int
    data: bytes
    error: str | None = None


# -- capture containers -----------------------------------------------------------------------------


def _frames(f: BinaryIO) -> Iterator[tuple[dt.datetime, int, bytes]]:
    """(timestamp, link type, frame bytes) of every captured frame, pcap or pcapng."""
    head = f.read(24)
    if len(head) < 4:
        raise PcapError("file too short for a capture header")
    magic_le = struct.unpack_from("<I", head)[0]
    magic_be = struct.unpack_from(">I", head)[0]
    if magic_le == _PCAPNG_SHB:
        yield from _pcapng_frames(head, f)
        return
    if magic_le in (_PCAP_MAGIC_US, _PCAP_MAGIC_NS):
        order = "<"
        nanos = magic_le == _PCAP_MAGIC_NS
    elif magic_be in (_PCAP_MAGIC_US, _PCAP_MAGIC_NS):
        order = ">"
        nanos = magic_be == _PCAP_MAGIC_NS
    else:
        raise PcapError(f"not a pcap or pcapng file (magic 0x{magic_le:08X})")
    if len(head) < 24:
        raise PcapError("truncated pcap file header")
    linktype = struct.unpack_from(order + "I", head, 20)[0] & 0x0FFFFFFF
    record = struct.Struct(order + "IIII")
    divisor = 1_000_000_000 if nanos else 1_000_000
    while True:
        rh = f.read(16)
        if not rh:
            return
        if len(rh) < 16:
            raise PcapError("truncated pcap record header")
        sec, frac, incl, _orig = record.unpack(rh)
        if incl > 0x10000000:
            raise PcapError(f"pcap record of {incl} bytes is implausible")
        data = f.read(incl)
        if len(data) < incl:
            raise PcapError("truncated pcap record")
        yield _timestamp(sec * 1_000_000 + frac * 1_000_000 // divisor), linktype, data


def _pcapng_frames(head: bytes, f: BinaryIO) -> Iterator[tuple[dt.datetime, int, bytes]]:
    buf = head + f.read()
    pos = 0
    order = "<"
    interfaces: list[tuple[int, int]] = []  # (linktype, ticks per second)
    while pos + 12 <= len(buf):
        block_type = struct.unpack_from(order + "I", buf, pos)[0]
        if block_type == _PCAPNG_SHB:
            bom = buf[pos + 8 : pos + 12]
            if bom == struct.pack("<I", _PCAPNG_BOM):
                order = "<"
            elif bom == struct.pack(">I", _PCAPNG_BOM):
                order = ">"
            else:
                raise PcapError("pcapng section header with a bad byte-order magic")
            interfaces = []
        length = struct.unpack_from(order + "I", buf, pos + 4)[0]
        if length < 12 or length % 4 or pos + length > len(buf):
            raise PcapError(f"pcapng block of length {length} at {pos} is broken")
        body = buf[pos + 8 : pos + length - 4]
        if block_type == 1 and len(body) >= 8:  # Interface Description Block
            linktype = struct.unpack_from(order + "H", body, 0)[0]
            interfaces.append((linktype, _if_tsresol(body[8:], order)))
        elif block_type == 6 and len(body) >= 20:  # Enhanced Packet Block
            iface, hi, lo, incl, _orig = struct.unpack_from(order + "IIIII", body, 0)
            if iface >= len(interfaces):
                raise PcapError(f"pcapng packet on undeclared interface {iface}")
            linktype, per_second = interfaces[iface]
            ts = _timestamp((hi << 32 | lo) * 1_000_000 // per_second)
            yield ts, linktype, body[20 : 20 + incl]
        elif block_type == 3 and len(body) >= 4 and interfaces:  # Simple Packet Block (no timestamp)
            yield _EPOCH, interfaces[0][0], body[4:]
        pos += length


def _timestamp(micros: int) -> dt.datetime:
    try:
        return _EPOCH + dt.timedelta(microseconds=micros)
    except OverflowError:
        raise PcapError(f"capture timestamp of {micros} microseconds is out of range") from None


def _if_tsresol(options: bytes, order: str) -> int:
    pos = 0
    while pos + 4 <= len(options):
        code, length = struct.unpack_from(order + "HH", options, pos)
        if code == 0:
            break
        if code == 9 and length >= 1 and pos + 4 < len(options):  # if_tsresol
            value = options[pos + 4]
            exponent = value & 0x7F
            return int(2**exponent if value & 0x80 else 10**exponent)
        pos += 4 + length + (-length & 3)
    return 1_000_000


# -- link, network and transport layers -------------------------------------------------------------


def _network(linktype: int, frame: bytes) -> tuple[int, bytes] | None:
    """(IP version, IP packet) of a frame, or None when it carries no IP."""
    if linktype == _LINK_ETHERNET:
        pos = 12
        while pos + 2 <= len(frame):
            ethertype = frame[pos] << 8 | frame[pos + 1]
            if ethertype in (0x8100, 0x88A8):  # VLAN tags
                pos += 4
                continue
            return _by_ethertype(ethertype, frame[pos + 2 :])
        return None
    if linktype in (_LINK_RAW, _LINK_IPV4, _LINK_IPV6):
        return (frame[0] >> 4, frame) if frame else None
    if linktype == _LINK_LINUX_SLL and len(frame) >= 16:
        return _by_ethertype(frame[14] << 8 | frame[15], frame[16:])
    if linktype == _LINK_LINUX_SLL2 and len(frame) >= 20:
        return _by_ethertype(frame[0] << 8 | frame[1], frame[20:])
    if linktype == _LINK_NULL and len(frame) >= 4:
        return (frame[4] >> 4, frame[4:]) if len(frame) > 4 else None
    return None


def _by_ethertype(ethertype: int, payload: bytes) -> tuple[int, bytes] | None:
    if ethertype == 0x0800:
        return 4, payload
    if ethertype == 0x86DD:
        return 6, payload
    return None


def _tcp_of_ip(version: int, ip: bytes) -> tuple[str, str, bytes] | None:
    """(src, dst, TCP segment) of an unfragmented IP packet carrying TCP."""
    if version == 4:
        if len(ip) < 20:
            return None
        ihl = (ip[0] & 0x0F) * 4
        total = ip[2] << 8 | ip[3]
        frag = (ip[6] << 8 | ip[7]) & 0x3FFF  # MF flag and fragment offset
        if ip[9] != 6 or frag or ihl < 20 or total < ihl or len(ip) < total:
            return None
        return str(ipaddress.IPv4Address(ip[12:16])), str(ipaddress.IPv4Address(ip[16:20])), ip[ihl:total]
    if version == 6:
        if len(ip) < 40:
            return None
        length = ip[4] << 8 | ip[5]
        next_header = ip[6]
        pos = 40
        end = 40 + length
        if len(ip) < end:
            return None
        while next_header in (0, 43, 60):  # hop-by-hop, routing, destination options
            if pos + 8 > end:
                return None
            next_header, hlen = ip[pos], (ip[pos + 1] + 1) * 8
            pos += hlen
        if next_header != 6 or pos > end:  # not TCP (or a fragment header, 44)
            return None
        return str(ipaddress.IPv6Address(ip[8:24])), str(ipaddress.IPv6Address(ip[24:40])), ip[pos:end]
    return None


def read_segments(
    source: str | Path | BinaryIO, ports: Iterable[int] | None = (MSMQ_PORT,)
) -> Iterator[Segment]:
    """Every TCP segment of a capture whose source or destination port is in ``ports`` (None: all)."""
    wanted = None if ports is None else frozenset(ports)
    if isinstance(source, str | Path):
        with open(source, "rb") as f:
            yield from read_segments(f, ports)
        return
    for ts, linktype, frame in _frames(source):
        net = _network(linktype, frame)
        if net is None:
            continue
        tcp = _tcp_of_ip(*net)
        if tcp is None:
            continue
        src, dst, seg = tcp
        if len(seg) < 20:
            continue
        sport, dport, seq, _ack, off_flags = struct.unpack_from(">HHIIH", seg, 0)
        header = (off_flags >> 12) * 4
        if header < 20 or header > len(seg):
            continue
        if wanted is not None and sport not in wanted and dport not in wanted:
            continue
        yield Segment(ts, src, dst, sport, dport, seq, off_flags & 0x3F, seg[header:])


# -- TCP reassembly and MSMQ framing ----------------------------------------------------------------


@dataclass(slots=True)
class _Direction:
    """Reassembly and framing state of one direction of one connection."""

    key: tuple[str, int, str, int]
    next_seq: int | None = None  # sequence number of the next byte to deliver
    syn_seq: int | None = None  # sequence number of the SYN, when it was captured
    delivered: int = 0  # stream bytes delivered so far
    held: dict[int, tuple[bytes, dt.datetime]] = field(default_factory=dict)  # offset -> out-of-order
    buffer: bytearray = field(default_factory=bytearray)  # delivered, not yet framed
    buffer_offset: int = 0  # stream offset of buffer[0]
    last_seen: dt.datetime = _EPOCH  # capture time of the last delivered bytes
    unframed: str | None = None  # why buffer[0:] cannot be framed, while waiting for a BaseHeader

    def packet(self, ts: dt.datetime, offset: int, data: bytes, error: str | None = None) -> CapturedPacket:
        src, sport, dst, dport = self.key
        return CapturedPacket(ts, src, sport, dst, dport, offset, data, error)

    def deliver(self, data: bytes, ts: dt.datetime) -> Iterator[CapturedPacket]:
        self.last_seen = ts
        self.buffer += data
        self.delivered += len(data)
        yield from self.frame(ts)

    def frame(self, ts: dt.datetime) -> Iterator[CapturedPacket]:
        buf = self.buffer
        pos = 0
        while len(buf) - pos >= BASE_HEADER_SIZE:
            try:
                need = framed_size(buf, offset=pos)
            except WireError as exc:
                # Skip to the next plausible BaseHeader; wait for more bytes while none is in sight.
                nxt = _next_header(buf, pos + 1)
                if nxt < 0 and len(buf) - pos <= _MAX_UNFRAMED:
                    self.unframed = f"cannot frame: {exc}"
                    break
                stop = nxt if nxt >= 0 else len(buf) - 7
                yield self.packet(ts, self.buffer_offset + pos, bytes(buf[pos:stop]), f"cannot frame: {exc}")
                pos = stop
                continue
            self.unframed = None
            if len(buf) - pos < need:
                break
            yield self.packet(ts, self.buffer_offset + pos, bytes(buf[pos : pos + need]))
            pos += need
        if pos:
            del buf[:pos]
            self.buffer_offset += pos

    def segment(self, seg: Segment) -> Iterator[CapturedPacket]:
        payload = seg.payload
        seq = seg.seq
        if seg.flags & _SYN:
            seq = (seq + 1) % _SEQ_MOD  # the SYN takes one sequence number
            if self.next_seq is None:
                self.next_seq = seq
                self.syn_seq = seg.seq
        if not payload:
            return
        if self.next_seq is None:
            self.next_seq = seq  # capture started mid-connection: the first byte seen is offset 0
        # Signed distance (mod 2**32) from the next expected byte: handles sequence wrap-around.
        delta = (seq - self.next_seq + (1 << 31)) % _SEQ_MOD - (1 << 31)
        offset = self.delivered + delta
        end = offset + len(payload)
        if end <= self.delivered:
            return  # a retransmission of delivered bytes
        if offset > self.delivered:
            kept = self.held.get(offset)
            if kept is None or len(kept[0]) < len(payload):
                self.held[offset] = (payload, seg.timestamp)
            return
        yield from self._accept(payload[self.delivered - offset :], seg.timestamp)

    def _accept(self, data: bytes, ts: dt.datetime) -> Iterator[CapturedPacket]:
        assert self.next_seq is not None
        yield from self.deliver(data, ts)
        self.next_seq = (self.next_seq + len(data)) % _SEQ_MOD
        while self.held:
            ready = [o for o in self.held if o <= self.delivered]
            if not ready:
                return
            for o in sorted(ready):
                data, when = self.held.pop(o)
                if o + len(data) > self.delivered:
                    tail = data[self.delivered - o :]
                    yield from self.deliver(tail, when)
                    self.next_seq = (self.next_seq + len(tail)) % _SEQ_MOD

    def finish(self) -> Iterator[CapturedPacket]:
        """End of capture: step over gaps that never filled, then report an unfinished packet."""
        while self.held:
            first = min(self.held)
            gap = first - self.delivered
            data, when = self.held.pop(first)
            if self.buffer:
                error = f"{gap} bytes after this are missing from the capture"
                yield self.packet(when, self.buffer_offset, bytes(self.buffer), error)
                del self.buffer[:]
            self.unframed = None
            # Continue after the gap; ``frame`` re-synchronises on the next BaseHeader.
            self.delivered = self.buffer_offset = first
            assert self.next_seq is not None
            self.next_seq = (self.next_seq + gap) % _SEQ_MOD
            yield from self._accept(data, when)
        if self.buffer:
            error = self.unframed or "the capture ends inside this packet"
            yield self.packet(self.last_seen, self.buffer_offset, bytes(self.buffer), error)
            del self.buffer[:]


def _next_header(buf: bytes | bytearray, start: int) -> int:
    """Position of the next plausible BaseHeader (VersionNumber 0x10, Signature LIOR) at or after
    ``start``, or -1 when there is none (yet)."""
    pos = start + 4
    while True:
        hit = buf.find(_SIGNATURE, pos)
        if hit < 0:
            return -1
        if buf[hit - 4] == 0x10:
            return hit - 4
        pos = hit + 1


def reassemble(segments: Iterable[Segment]) -> Iterator[CapturedPacket]:
    """Reassemble TCP segments per (src, sport, dst, dport) and yield the MSMQ packets they carry."""
    directions: dict[tuple[str, int, str, int], _Direction] = {}
    for seg in segments:
        key = (seg.src, seg.sport, seg.dst, seg.dport)
        d = directions.get(key)
        if d is not None and seg.flags & _SYN and d.delivered and seg.seq != d.syn_seq:
            # A new connection on the same addresses and ports (not a retransmitted SYN): a new stream.
            yield from d.finish()
            d = None
        if d is None:
            d = directions[key] = _Direction(key)
        yield from d.segment(seg)
    for d in directions.values():
        yield from d.finish()


def read_pcap_packets(
    source: str | Path | BinaryIO,
    ports: Iterable[int] | None = (MSMQ_PORT,),
    errors: list[str] | None = None,
) -> Iterator[CapturedPacket]:
    """The MSMQ packets of a capture file (pcap or pcapng), in the order they were completed.

    A capture that is not one, is broken part way or cannot be read raises ``PcapError`` or
    ``OSError``; with an ``errors`` list the packets end there instead (those still being
    reassembled come out with their ``error``) and the reason is appended to the list.
    """
    if errors is None:
        yield from reassemble(read_segments(source, ports))
        return

    def until_broken() -> Iterator[Segment]:
        try:
            yield from read_segments(source, ports)
        except (PcapError, OSError) as exc:
            errors.append(str(exc) or type(exc).__name__)

    yield from reassemble(until_broken())


# -- writing captures (for tests and tools) ---------------------------------------------------------


def flow_segments(
    timestamp: dt.datetime,
    src: str,
    dst: str,
    sport: int,
    dport: int,
    payload: bytes,
    segment_sizes: Iterable[int],
    *,
    isn: int = 1000,
    syn: bool = True,
) -> list[Segment]:
    """One direction of a connection: an optional SYN, then ``payload`` cut into ``segment_sizes``.

    The sizes are used in turn and the last one repeats until the payload is spent (an empty list
    sends everything in one segment).  Timestamps advance by one microsecond per segment.
    """
    sizes = list(segment_sizes) or [max(1, len(payload))]
    if any(s <= 0 for s in sizes):
        raise ValueError("segment sizes must be positive")
    out: list[Segment] = []
    step = dt.timedelta(microseconds=1)
    ts = timestamp
    seq = isn % _SEQ_MOD
    if syn:
        out.append(Segment(ts, src, dst, sport, dport, seq, _SYN, b""))
        seq = (seq + 1) % _SEQ_MOD
        ts += step
    pos = 0
    i = 0
    while pos < len(payload):
        size = sizes[min(i, len(sizes) - 1)]
        chunk = payload[pos : pos + size]
        out.append(Segment(ts, src, dst, sport, dport, seq, _ACK | _PSH, chunk))
        seq = (seq + len(chunk)) % _SEQ_MOD
        pos += len(chunk)
        i += 1
        ts += step
    return out


def _ip_packet(seg: Segment) -> tuple[int, bytes]:
    src = ipaddress.ip_address(seg.src)
    dst = ipaddress.ip_address(seg.dst)
    tcp = struct.pack(">HHIIHHHH", seg.sport, seg.dport, seg.seq, 0, (5 << 12) | seg.flags, 65535, 0, 0)
    tcp += seg.payload
    if src.version == 4 and dst.version == 4:
        header = struct.pack(
            ">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src.packed, dst.packed
        )
        return 0x0800, header + tcp
    if src.version == 6 and dst.version == 6:
        header = struct.pack(">IHBB16s16s", 6 << 28, len(tcp), 6, 64, src.packed, dst.packed)
        return 0x86DD, header + tcp
    raise ValueError(f"mixed address families: {seg.src} -> {seg.dst}")


def write_pcap(target: str | Path | BinaryIO, segments: Iterable[Segment]) -> None:
    """Write ``segments`` as a classic little-endian microsecond pcap of Ethernet frames."""
    if isinstance(target, str | Path):
        with open(target, "wb") as f:
            write_pcap(f, segments)
        return
    target.write(struct.pack("<IHHiIII", _PCAP_MAGIC_US, 2, 4, 0, 0, 262144, _LINK_ETHERNET))
    for seg in segments:
        ethertype, ip = _ip_packet(seg)
        frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01" + struct.pack(">H", ethertype) + ip
        delta = seg.timestamp - _EPOCH
        micros = delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
        target.write(struct.pack("<IIII", micros // 1_000_000, micros % 1_000_000, len(frame), len(frame)))
        target.write(frame)
