"""Sans-I/O packet framing for the [MS-MQQB] TCP 1801 byte stream.

``PacketFramer`` cuts a byte stream into whole packets: feed it whatever the socket delivered, then
iterate the complete packets (``bytes``) it has found.  No I/O happens here.

Rules ([MS-MQQB] 3.1.5.1, [MS-MQMQ] 2.2.19.1):

- Every packet starts with a 16-byte BaseHeader.  VersionNumber MUST be 0x10 and Signature MUST be
  0x524F494C; otherwise the packet is discarded and the session MUST be closed (3.1.5.1.2), so the framer
  raises ``WireError`` and stays broken: every later call raises too.
- BaseHeader.PacketSize is the length of the packet including the BaseHeader, at least 16 and at most
  0x00400000.
- PacketSize "MUST NOT include the SessionHeader size when the SessionHeader is present" ([MS-MQMQ]
  2.2.19.1): a UserMessage (Flags.IN clear) with Flags.SH set is followed by a 16-byte SessionHeader
  beyond PacketSize, which belongs to the packet.  A SessionAck (an internal packet, Flags.IN set) counts
  its SessionHeader inside PacketSize ([MS-MQQB] 4.1.8: PacketSize 36 = 16 + 4 + 16), so internal packets
  are exactly PacketSize bytes.
- The Ping Packet travels over UDP ([MS-MQQB] 2.1.2) and is never framed here.

Memory: a packet is only buffered once its BaseHeader has been validated, so an incomplete packet never
holds more than ``max_packet_size + 16`` bytes; ``feed`` frames eagerly, and the complete packets wait in
a queue until they are iterated.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator
from typing import Final

from pymsmq.errors import WireError
from pymsmq.wire.base_header import (
    BASE_HEADER_SIGNATURE,
    BASE_HEADER_SIZE,
    BASE_HEADER_VERSION,
    MAX_PACKET_SIZE,
    BaseHeaderFlags,
)
from pymsmq.wire.session_header import SESSION_HEADER_SIZE

__all__ = ["PacketFramer", "framed_size"]

# VersionNumber, Reserved, Flags, Signature, PacketSize (TimeToReachQueue is not needed to frame).
_PREFIX: Final = struct.Struct("<BBHII")
_IN: Final = int(BaseHeaderFlags.IN)
_SH: Final = int(BaseHeaderFlags.SH)


def framed_size(
    header: bytes | bytearray | memoryview, max_packet_size: int = MAX_PACKET_SIZE, offset: int = 0
) -> int:
    """How many stream bytes the packet whose BaseHeader starts at ``header[offset]`` occupies.

    At least 16 bytes must follow ``offset``.  The result is PacketSize, plus 16 for the trailing
    SessionHeader of a non-internal packet with Flags.SH set.  Raises ``WireError`` for a bad version,
    signature or size.
    """
    if len(header) - offset < BASE_HEADER_SIZE:
        raise WireError(f"truncated BaseHeader: need 16 bytes, {len(header) - offset} left", offset)
    version, _reserved, flags, signature, packet_size = _PREFIX.unpack_from(header, offset)
    if version != BASE_HEADER_VERSION:
        raise WireError(f"BaseHeader.VersionNumber is 0x{version:02X}, MUST be 0x10", offset)
    if signature != BASE_HEADER_SIGNATURE:
        raise WireError(f"BaseHeader.Signature is 0x{signature:08X}, MUST be 0x524F494C", offset + 4)
    if packet_size < BASE_HEADER_SIZE:
        raise WireError(f"BaseHeader.PacketSize {packet_size} is smaller than the header", offset + 8)
    if packet_size > max_packet_size:
        raise WireError(
            f"BaseHeader.PacketSize {packet_size} exceeds the limit {max_packet_size}", offset + 8
        )
    if flags & _SH and not flags & _IN:
        return int(packet_size) + SESSION_HEADER_SIZE
    return int(packet_size)


class PacketFramer:
    """Incremental splitter of a TCP 1801 stream into whole packets.

    >>> framer = PacketFramer()
    >>> framer.feed(data)          # any chunking of the stream
    >>> for packet in framer:      # complete packets, in order, each exactly as it was on the wire
    ...     handle(packet)

    A malformed BaseHeader raises ``WireError`` from ``feed``; afterwards the framer is broken and every
    call raises ``WireError`` (the session must be closed).  Packets completed before the bad header stay
    available to iteration.  ``end_of_stream()`` checks that the stream did not stop inside a packet.
    """

    __slots__ = ("_broken", "_buffer", "_max_packet_size", "_need", "_packets")

    def __init__(self, max_packet_size: int = MAX_PACKET_SIZE) -> None:
        if not BASE_HEADER_SIZE <= max_packet_size <= MAX_PACKET_SIZE:
            raise ValueError(f"max_packet_size must be in 16..{MAX_PACKET_SIZE}")
        self._max_packet_size = max_packet_size
        self._buffer = bytearray()
        self._packets: deque[bytes] = deque()
        # Bytes the packet at the start of the buffer occupies; 0 while its BaseHeader is incomplete.
        self._need = 0
        self._broken: WireError | None = None

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete packet held back (never more than max_packet_size + 16)."""
        return len(self._buffer)

    @property
    def pending(self) -> int:
        """Complete packets not yet taken."""
        return len(self._packets)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Add stream bytes and frame every packet they complete."""
        if self._broken is not None:
            raise WireError(f"the stream is already broken: {self._broken}")
        if not data:
            return
        buf = self._buffer
        need = self._need
        if need and len(buf) + len(data) < need:
            # Common case for big packets: still inside the current packet, nothing to frame.
            buf += data
            return
        buf += data
        pos = 0
        end = len(buf)
        packets = self._packets
        max_size = self._max_packet_size
        try:
            while True:
                if not need:
                    if end - pos < BASE_HEADER_SIZE:
                        break
                    need = framed_size(buf, max_size, pos)
                if end - pos < need:
                    break
                packets.append(bytes(buf[pos : pos + need]))
                pos += need
                need = 0
        except WireError as exc:
            # [MS-MQQB] 3.1.5.1.2: discard the packet and close the session; nothing more is framed.
            self._broken = exc
            del buf[:]
            self._need = 0
            raise
        del buf[:pos]
        self._need = need

    def next_packet(self) -> bytes | None:
        """The next complete packet, or ``None`` when more bytes are needed."""
        if self._packets:
            return self._packets.popleft()
        if self._broken is not None:
            raise WireError(f"the stream is broken: {self._broken}")
        return None

    def __iter__(self) -> Iterator[bytes]:
        """Yield the complete packets available now (iteration stops when more bytes are needed)."""
        while True:
            packet = self.next_packet()
            if packet is None:
                return
            yield packet

    def end_of_stream(self) -> None:
        """Declare the stream closed; raises ``WireError`` if it stopped inside a packet."""
        if self._broken is not None:
            raise WireError(f"the stream is broken: {self._broken}")
        if self._buffer:
            raise WireError(
                f"stream ended inside a packet: {len(self._buffer)} of "
                f"{self._need or BASE_HEADER_SIZE} bytes received"
            )
