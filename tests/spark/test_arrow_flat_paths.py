"""The flat (whole-batch) builds of the vectorised decoder prove themselves against the general paths.

- ``arrow_texts.WindowTexts`` checks power-of-two windows with one bit per code unit: on fields of any
  length the windowed path takes (up to 256 units: one to four 64-bit words of bits per row), it gives
  exactly what ``arrow_texts.Texts`` gives; the bit masks match a plain Python reference.
- ``arrow_decode.message_ids`` writes digits and prefixes into one buffer: any prefix width (also
  narrower than the digits) and any mix of digit counts give the Python text.
- Whole batches whose message ids cross a power of ten, with one row differing in layout, decode
  exactly as the per-row reference (``columns.packet_row``) does.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.spark.arrow_decode import _Data, decode_array, message_ids
from pymsmq.spark.arrow_texts import Texts, WindowTexts, _bit_masks, _packed, _window_units, texts
from pymsmq.spark.columns import packet_row
from pymsmq.wire import UserMessage

units = st.one_of(
    st.integers(0x20, 0x7E),
    st.sampled_from([0x0000, 0x00E9, 0x20AC, 0xD800, 0x7F, 0x80]),
)


def layout(values: list[list[int]], gaps: list[int], tail: int) -> tuple[bytes, list[int], list[int]]:
    """The fields laid out in one buffer (gaps of 0xAB bytes between them); their starts and ends."""
    data = bytearray()
    starts, ends = [], []
    for field, gap in zip(values, gaps, strict=True):
        data += b"\xab" * gap
        starts.append(len(data))
        data += np.array(field, "<u2").tobytes()
        ends.append(len(data))
    data += b"\xcd" * tail
    return bytes(data), starts, ends


@settings(max_examples=200)
@given(
    st.integers(1, 255),  # characters of the longest field: every window size, 8 to 256 units
    st.integers(1, 8),
    st.data(),
    st.sampled_from(["", "DIRECT=", "p"]),
)
def test_long_window_texts_match_the_general_path(
    longest: int, count: int, data: st.DataObject, prefix: str
) -> None:
    plain = data.draw(st.booleans())
    unit = st.integers(0x20, 0x7E) if plain else units
    first = data.draw(st.lists(unit, min_size=longest, max_size=longest))
    values = [first]
    for _ in range(count - 1):
        if data.draw(st.booleans()):  # the same field (the repeated-value shortcut), maybe one unit changed
            field = list(first)
            if data.draw(st.booleans()):
                field[data.draw(st.integers(0, longest - 1))] = data.draw(unit)
        else:  # a field of similar length, so the windowed path still fits
            field = data.draw(st.lists(unit, min_size=max(longest // 2, 0), max_size=longest))
        values.append(field)
    fields = [[*v, 0] for v in values]
    gaps = data.draw(st.lists(st.integers(0, 9), min_size=count, max_size=count))
    raw, starts, ends = layout(fields, gaps, data.draw(st.integers(0, 40)))
    buffer = pa.py_buffer(raw)
    s, e = np.array(starts, np.int64), np.array(ends, np.int64)
    if not WindowTexts.fits(s, e):
        return
    windowed, general = WindowTexts(_Data(buffer), buffer, s, e), Texts(buffer, s, e)
    assert windowed.inner_nul_rows().tolist() == general.inner_nul_rows().tolist()
    assert windowed.array(prefix).to_pylist() == general.array(prefix).to_pylist()


@given(st.lists(st.integers(0, 255), min_size=1, max_size=20))
def test_bit_masks_and_packed_bits_agree_with_python(lengths: list[int]) -> None:
    width = _window_units(max(lengths) + 1)
    masks = _bit_masks(np.array(lengths, np.int64), width)
    chars = np.arange(width) < np.array(lengths)[:, None]  # unit j of row i is a character
    assert np.array_equal(_packed(chars, width), masks)
    for row, length in enumerate(lengths):
        bits = int.from_bytes(masks[row].tobytes(), "little")
        assert bits == (1 << length) - 1


def test_texts_picks_the_window_for_short_similar_fields_only() -> None:
    short = [[0x41] * 5 + [0], [0x42] * 6 + [0]]
    raw, starts, ends = layout(short, [0, 2], 0)
    buffer = pa.py_buffer(raw)
    s, e = np.array(starts, np.int64), np.array(ends, np.int64)
    assert isinstance(texts(_Data(buffer), buffer, s, e), WindowTexts)
    mixed = [[0x41, 0], [0x42] * 300 + [0]]  # one field far longer than the other: the general path
    raw, starts, ends = layout(mixed, [0, 0], 0)
    buffer = pa.py_buffer(raw)
    s, e = np.array(starts, np.int64), np.array(ends, np.int64)
    chosen = texts(_Data(buffer), buffer, s, e)
    assert isinstance(chosen, Texts)
    assert chosen.array().to_pylist() == ["A", "B" * 300]


def test_window_units_are_powers_of_two() -> None:
    assert [_window_units(n) for n in (1, 8, 9, 16, 17, 64, 65, 256)] == [8, 8, 16, 16, 32, 64, 128, 256]


@settings(max_examples=300)
@given(
    st.lists(st.integers(0, 2**32 - 1) | st.integers(0, 12_000), min_size=1, max_size=30),
    st.integers(0, 12),
    st.booleans(),
    st.data(),
)
def test_message_ids_any_prefix_width(
    ordinals: list[int], width: int, shared: bool, data: st.DataObject
) -> None:
    rows = 1 if shared else len(ordinals)
    prefixes = [
        bytes(data.draw(st.lists(st.integers(0x20, 0x7E), min_size=width, max_size=width)))
        for _ in range(rows)
    ]
    block = np.frombuffer(b"".join(prefixes), np.uint8).reshape(rows, width)
    got = message_ids(block, np.array(ordinals, np.uint32)).to_pylist()
    assert got == [(prefixes[0 if shared else i]).decode("ascii") + str(o) for i, o in enumerate(ordinals)]


def test_message_ids_empty() -> None:
    assert message_ids(np.zeros((1, 39), np.uint8), np.zeros(0, np.uint32)).to_pylist() == []


QM = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")


@settings(max_examples=60)
@given(
    st.integers(0, 10**6),
    st.integers(2, 40),
    st.sampled_from(["none", "destination", "response", "connector", "long label"]),
    st.data(),
)
def test_batches_crossing_a_power_of_ten_match_the_reference(
    first_id: int, count: int, change: str, data: st.DataObject
) -> None:
    # Consecutive message ids (digit counts change inside the batch when they cross a power of ten),
    # one queue, one label length; maybe one row differs in its layout.
    first_id = data.draw(st.sampled_from([first_id, 9 - count // 2, 99_995, 999_990]))
    first_id = max(first_id, 0)
    odd = data.draw(st.integers(0, count - 1))
    packets = []
    for i in range(count):
        changed = i == odd
        packets.append(
            UserMessage.build(
                destination="OS:host\\private$\\another-queue"
                if changed and change == "destination"
                else "OS:host\\private$\\orders",
                response_queue="OS:host\\private$\\replies" if changed and change == "response" else None,
                connector_type=QM if changed and change == "connector" else None,
                label="L" * 200 if changed and change == "long label" else f"order {i % 10}",
                source_queue_manager=QM,
                message_id=first_id + i,
                body=bytes([i % 256]) * (64 + i % 3),
            ).encode()
        )
    got = decode_array(pa.array(packets, pa.binary())).to_pylist()
    for i, (packet, decoded) in enumerate(zip(packets, got, strict=True)):
        assert decoded == packet_row(packet), f"row {i}"
