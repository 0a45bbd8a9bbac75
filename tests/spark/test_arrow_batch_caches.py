"""The per-length arrays a worker builds once (``arrow_layout.repeat_text``, ``even_indices``,
``fixed_offsets``) equal what they replace, and batches of one length decoded one after another (the
caches shared between them) still decode exactly as the per-row reference (``columns.packet_row``)."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.spark.arrow_decode import decode_array
from pymsmq.spark.arrow_layout import even_indices, fixed_offsets, repeat_text
from pymsmq.spark.arrow_texts import slice_ranges
from pymsmq.spark.columns import packet_row
from pymsmq.wire import UserMessage

QM_A = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
QM_B = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")


@given(st.text(max_size=20), st.integers(0, 300))
def test_repeat_text_is_the_text_n_times(text: str, n: int) -> None:
    got = repeat_text(text, n)
    assert got.type == pa.string()
    assert got.to_pylist() == [text] * n
    assert repeat_text(text, n) is got  # built once per (text, n)


@given(st.integers(0, 300), st.integers(0, 64))
def test_fixed_offsets_and_even_indices(n: int, width: int) -> None:
    offsets = np.frombuffer(fixed_offsets(n, width), np.int32)
    assert offsets.tolist() == [i * width for i in range(n + 1)]
    assert even_indices(n).to_pylist() == list(range(0, 2 * n, 2))
    assert even_indices(n).type == pa.int32()


@given(st.lists(st.binary(max_size=12), max_size=30))
def test_slice_ranges_with_shared_indices(values: list[bytes]) -> None:
    data = b"".join(b"<" + v + b">" for v in values)
    starts, ends, pos = [], [], 0
    for v in values:
        starts.append(pos + 1)
        ends.append(pos + 1 + len(v))
        pos += len(v) + 2
    got = slice_ranges(pa.py_buffer(data), np.array(starts, np.int64), np.array(ends, np.int64))
    assert got.to_pylist() == values


def _batch(count: int, seed: int, qm: uuid.UUID, destination: str) -> list[bytes]:
    return [
        UserMessage.build(
            destination=destination,
            label=f"l{seed}-{i}",
            source_queue_manager=qm,
            message_id=seed * 1000 + i,
            body=bytes([(seed + i) % 256]) * (16 + i % 5),
            sent_time=1_700_000_000 + seed + i,
        ).encode()
        for i in range(count)
    ]


@settings(max_examples=40)
@given(st.integers(1, 30), st.lists(st.integers(0, 50), min_size=2, max_size=4))
def test_batches_of_one_length_in_a_row_match_the_reference(count: int, seeds: list[int]) -> None:
    # Batches of the same length, each with its own queue manager, queue and texts: nothing cached
    # for one batch's length shows through in the next batch's values.
    for k, seed in enumerate(seeds):
        qm = QM_A if k % 2 else QM_B
        packets = _batch(count, seed, qm, f"OS:host\\private$\\q{seed}")
        got = decode_array(pa.array(packets, pa.binary())).to_pylist()
        for i, (packet, decoded) in enumerate(zip(packets, got, strict=True)):
            assert decoded == packet_row(packet), f"batch {k} row {i}"


def test_batches_longer_than_the_cache_limit_are_built_fresh() -> None:
    n = (1 << 16) + 3
    assert repeat_text("q", n) is not repeat_text("q", n)
    assert repeat_text("q", n).to_pylist()[-1] == "q" and len(repeat_text("q", n)) == n
    assert np.frombuffer(fixed_offsets(n, 3), np.int32)[-1] == 3 * n
    assert even_indices(n)[-1].as_py() == 2 * n - 2
