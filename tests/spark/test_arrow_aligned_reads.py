"""The vectorised decoder's aligned reads prove themselves against the byte-wise gathers.

When every packet of a batch starts 4-aligned in memory (the usual Arrow layout), ``_Data`` reads u16
and u32 header fields through typed numpy views.  A batch of the same packets laid out unaligned (a
1-byte row before them) takes the byte-wise gathers; both must decode exactly as the per-row reference
(``columns.packet_row``), including corrupted packets (counts, lengths and flags mutated in place, so the
batch stays aligned) and an all-empty extension column.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.spark.arrow_decode import _Data, decode_array
from pymsmq.spark.arrow_layout import U16, U32, PacketBytes
from pymsmq.spark.columns import packet_row
from pymsmq.wire import UserMessage

ascii_names = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)


def aligned(packets: list[bytes | None]) -> bool:
    arr = pa.array(packets, pa.binary())
    _, obuf, dbuf = arr.buffers()
    starts = np.frombuffer(obuf, np.int32, count=len(arr) + 1)[:-1].astype(np.int64)
    return _Data(dbuf if dbuf is not None else pa.py_buffer(b""), starts).aligned  # type: ignore[no-any-return]


def decode_both_ways(packets: list[bytes | None]) -> list[dict[str, Any]]:
    """Rows of ``packets`` decoded aligned and unaligned (after a 1-byte row); both checked equal."""
    plain = decode_array(pa.array(packets, pa.binary())).to_pylist()
    shifted = decode_array(pa.array([b"x", *packets], pa.binary()).slice(1)).to_pylist()
    assert plain == shifted
    return plain  # type: ignore[no-any-return]


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    return UserMessage.build(
        destination="OS:" + draw(ascii_names),
        label=draw(st.none() | ascii_names),
        admin_queue=draw(st.none() | ascii_names.map(lambda s: "OS:a" + s)),
        body=draw(st.binary(max_size=40)),
        extension=draw(st.sampled_from([b"", b"", b"ext!"])),
        source_queue_manager=uuid.UUID(int=draw(st.integers(0, 3))),
        message_id=draw(st.integers(0, 2**32 - 1)),
        recoverable=draw(st.booleans()),
    ).encode()


@settings(max_examples=300)
@given(st.lists(messages(), min_size=1, max_size=6), st.data())
def test_aligned_batches_with_mutated_fields_match_the_reference(
    packets: list[bytes], data: st.DataObject
) -> None:
    mutated: list[bytes | None] = []
    for packet in packets:
        raw = bytearray(packet)
        for _ in range(data.draw(st.integers(0, 3))):
            # Mostly the header region, where the counts and lengths are.
            raw[data.draw(st.integers(0, min(len(raw), 160) - 1))] = data.draw(st.integers(0, 255))
        mutated.append(bytes(raw))
    assert aligned(mutated)
    got = decode_both_ways(mutated)
    for i, (packet, row) in enumerate(zip(mutated, got, strict=True)):
        assert row == packet_row(packet), f"row {i}"


def test_unaligned_layout_is_detected() -> None:
    packet = UserMessage.build(destination="OS:q", body=b"abc").encode()
    assert aligned([packet, packet])
    assert not aligned([b"x", packet])
    assert not _Data(pa.py_buffer(packet)).aligned  # no starts given: byte-wise reads


def test_empty_extension_column_is_empty_not_null() -> None:
    packets: list[bytes | None] = [
        UserMessage.build(destination="OS:q", body=bytes([i])).encode() for i in range(5)
    ]
    got = decode_both_ways(packets)
    assert [row["extension"] for row in got] == [b""] * 5
    assert got == [packet_row(p) for p in packets]


@given(st.binary(min_size=0, max_size=200), st.lists(st.integers(0, 199), max_size=20))
def test_packet_bytes_typed_reads_match_the_byte_gathers(raw: bytes, positions: list[int]) -> None:
    # Typed reads are exact at even (u16) / 4-aligned (u32) positions, on any buffer length.
    buffer = pa.py_buffer(raw)
    typed = PacketBytes(buffer, np.zeros(1, np.int64))
    plain = PacketBytes(buffer)
    assert typed.aligned and not plain.aligned
    pos = np.array(positions, np.int64)
    even, quad = pos & ~1, pos & ~3
    assert typed.u16(even).tolist() == plain.u16(even).tolist() == plain.gather(even, U16).tolist()
    assert typed.u32(quad).tolist() == plain.u32(quad).tolist() == plain.gather(quad, U32).tolist()
