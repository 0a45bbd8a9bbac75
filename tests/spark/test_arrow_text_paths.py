"""The vectorised decoder's shortcuts prove themselves against the general paths.

- ``_WindowTexts`` (short text fields read through one fixed-width window, a repeated field decoded
  once) must give exactly what ``_Texts`` (the general text path) gives, on any fields.
- ``_Data.window`` reads past the end of the data as zeros.
- Whole batches repeating one queue name / queue manager (the repeated-value shortcuts), with one row
  differing anywhere, decode exactly as the per-row reference (``columns.packet_row``) does.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.spark.arrow_decode import _Data, _Texts, _WindowTexts, decode_array
from pymsmq.spark.columns import packet_row
from pymsmq.wire import UserMessage

# Text code units: mostly ASCII, with NULs, non-ASCII and lone surrogates mixed in.
units = st.one_of(
    st.integers(0x20, 0x7E),
    st.sampled_from([0x0000, 0x00E9, 0x20AC, 0xD800, 0xDC00, 0x7F, 0x80]),
)
fields = st.lists(units, max_size=12).map(lambda us: [*us, 0])  # each field ends with its terminator


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


def both_paths(data: bytes, starts: list[int], ends: list[int]) -> tuple[_Texts, _WindowTexts]:
    buffer = pa.py_buffer(data)
    s = np.array(starts, np.int64)
    e = np.array(ends, np.int64)
    return _Texts(buffer, s, e), _WindowTexts(_Data(buffer), buffer, s, e)


@settings(max_examples=300)
@given(
    st.lists(fields, min_size=1, max_size=10),
    st.data(),
    st.sampled_from(["", "DIRECT=", "p"]),
    st.booleans(),
)
def test_window_texts_match_the_general_path(
    values: list[list[int]], data: st.DataObject, prefix: str, repeat: bool
) -> None:
    if repeat:  # one value in every row (the shortcut), sometimes with one row changed
        values = [values[0]] * len(values)
        if data.draw(st.booleans()) and len(values[0]) > 1:
            row = data.draw(st.integers(0, len(values) - 1))
            changed = list(values[row])
            # Not the terminator: the decoder checks it before it cuts a field.
            changed[data.draw(st.integers(0, len(changed) - 2))] ^= data.draw(st.sampled_from([1, 0x41]))
            values[row] = changed
    gaps = data.draw(st.lists(st.integers(0, 9), min_size=len(values), max_size=len(values)))
    raw, starts, ends = layout(values, gaps, data.draw(st.integers(0, 80)))
    general, windowed = both_paths(raw, starts, ends)
    assert windowed.inner_nul_rows().tolist() == general.inner_nul_rows().tolist()
    assert windowed.array(prefix).to_pylist() == general.array(prefix).to_pylist()
    assert windowed.array(prefix).type == pa.string()


def test_window_texts_repeated_value_is_decoded_once() -> None:
    value = [*b"TCP:10.0.0.1\\PRIVATE$\\orders", 0]
    raw, starts, ends = layout([value] * 50, [3] * 50, 0)  # the last field ends the buffer
    general, windowed = both_paths(raw, starts, ends)
    assert windowed.same
    assert windowed.array("DIRECT=").to_pylist() == ["DIRECT=TCP:10.0.0.1\\PRIVATE$\\orders"] * 50
    assert windowed.array("DIRECT=").to_pylist() == general.array("DIRECT=").to_pylist()
    assert windowed.inner_nul_rows().tolist() == []


def test_window_texts_repeated_value_with_an_inner_nul_marks_every_row() -> None:
    raw, starts, ends = layout([[0x41, 0, 0x42, 0]] * 4, [0] * 4, 0)
    general, windowed = both_paths(raw, starts, ends)
    assert windowed.same
    assert windowed.inner_nul_rows().tolist() == general.inner_nul_rows().tolist() == [0, 1, 2, 3]


def test_window_texts_fit_only_short_similar_fields() -> None:
    s = np.array([0, 100], np.int64)
    assert _WindowTexts.fits(s, s + np.array([20, 30]))
    assert not _WindowTexts.fits(s, s + np.array([2, 2000]))  # far longer than the average
    assert not _WindowTexts.fits(s[:0], s[:0])


@given(st.binary(max_size=100), st.lists(st.integers(0, 99), min_size=1, max_size=6), st.integers(1, 120))
def test_data_window_reads_zeros_past_the_end(data: bytes, positions: list[int], width: int) -> None:
    d = _Data(pa.py_buffer(data))
    padded = np.frombuffer(data.ljust(64, b"\0") + bytes(200), np.uint8)  # _Data pads short data to 64
    pos = np.array([p % max(len(data), 1) for p in positions], np.int64)
    got = d.window(pos, width)
    assert got.shape == (len(pos), width)
    for row, p in enumerate(pos.tolist()):
        assert got[row].tobytes() == padded[p : p + width].tobytes()


QM = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")


@settings(max_examples=100)
@given(
    st.integers(2, 12),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=40),
    st.data(),
)
def test_batches_repeating_one_queue_match_the_reference(count: int, dest: str, data: st.DataObject) -> None:
    # Every row to one queue, from one queue manager, with one label; then maybe one row differs in one
    # character of its queue name (any position: the comparison is by 8-byte words plus a tail) or in
    # its queue manager.
    dests = [dest] * count
    qms = [QM] * count
    labels = ["same"] * count
    change = data.draw(st.sampled_from(["none", "dest", "qm", "label"]))
    row = data.draw(st.integers(0, count - 1))
    if change == "dest":
        at = data.draw(st.integers(0, len(dest) - 1))
        dests[row] = dest[:at] + ("a" if dest[at] != "a" else "b") + dest[at + 1 :]
    elif change == "qm":
        qms[row] = uuid.UUID(int=QM.int ^ (1 << data.draw(st.integers(0, 127))))
    elif change == "label":
        labels[row] = "sane"
    packets: list[bytes | None] = [
        UserMessage.build(
            destination="OS:" + d,
            label=label,
            source_queue_manager=qm,
            destination_queue_manager=qm,
            message_id=i,
            body=bytes([i]) * i,
        ).encode()
        for i, (d, qm, label) in enumerate(zip(dests, qms, labels, strict=True))
    ]
    got = decode_array(pa.array(packets, pa.binary())).to_pylist()
    for i, (packet, decoded) in enumerate(zip(packets, got, strict=True)):
        assert decoded == packet_row(packet), f"row {i}"
