"""Vectorised decoding of an Arrow array of MSMQ packets into the ``columns.COLUMNS`` record batch.

No pyspark here (numpy and pyarrow only), so the decoder can be tested and measured without a JVM.

How it works, per batch:

1. The fixed 64 bytes of every packet (BaseHeader, [MS-MQMQ] 2.2.19.1, and the UserHeader fixed part,
   2.2.19.2) are gathered at once into a numpy structured array.
2. A *fast path* covers the common UserMessage shape: no SecurityHeader, DebugHeader, SRMP, SOAP,
   multi-queue or extension headers; direct (or absent) queues (type code 7 or 0); an optional
   TransactionHeader (2.2.20.5) and ConnectorType; an optional trailing SessionHeader.  Every length
   field of those rows is walked vectorially and checked exactly as the codec checks it, so a row stays
   on the fast path only if ``pymsmq.wire.decode_packet`` would accept it and call it a UserMessage
   (message classes that could be an OrderAck/FinalAck leave it).  A batch whose rows share one header
   layout (``pymsmq.spark.arrow_walk.walk_uniform``) has its header offsets worked out once.
3. Every other row (internal packets, other shapes, anything malformed) goes through
   ``columns.packet_row``, the per-row reference decoder built on ``pymsmq.wire``.

Variable-length fields (body, extension) are cut out of the Arrow data buffer with one ``take`` over a
2n-value view whose offsets alternate field start / field end, so no Python loop runs per row; UTF-16
text (label, queue names) is checked and decoded once per batch by ``pymsmq.spark.arrow_texts``.
Message ids are written digit block by digit block into one buffer (``message_ids``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from pymsmq.spark.arrow_layout import PacketBytes as _Data
from pymsmq.spark.arrow_layout import fixed_offsets, repeat_text
from pymsmq.spark.arrow_texts import Texts as _Texts
from pymsmq.spark.arrow_texts import WindowTexts as _WindowTexts
from pymsmq.spark.arrow_texts import slice_ranges
from pymsmq.spark.arrow_texts import texts as _texts
from pymsmq.spark.arrow_walk import walk_rows, walk_uniform
from pymsmq.spark.columns import COLUMNS, DELIVERY_NAMES, packet_row

__all__ = ["ARROW_SCHEMA", "arrow_schema", "decode_array", "message_ids", "selected_columns", "slice_ranges"]

_ARROW_TYPES: Final[dict[str, pa.DataType]] = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "binary": pa.binary(),
    "boolean": pa.bool_(),
}

#: The Arrow schema of the decoded columns (matches ``columns.SPARK_SCHEMA``).
ARROW_SCHEMA: Final = pa.schema([pa.field(name, _ARROW_TYPES[kind]) for name, kind in COLUMNS])

_NAMES: Final = tuple(name for name, _ in COLUMNS)
_TEXT_NAMES: Final = ("destination", "admin_queue", "response_queue", "label")


def selected_columns(columns: Sequence[str] | None) -> tuple[str, ...]:
    """The decoded columns to produce: every ``COLUMNS`` name for ``None``, else ``columns`` as given.

    Raises ``ValueError`` (naming the bad names and the valid ones) for an empty sequence, a bare
    string, unknown names or duplicates.
    """
    if columns is None:
        return _NAMES
    if isinstance(columns, str | bytes):
        raise ValueError(
            f"columns must be a sequence of column names, not {columns!r}; valid: {list(_NAMES)}"
        )
    names = tuple(columns)
    if not names:
        raise ValueError(f"columns must name at least one column; valid: {list(_NAMES)}")
    unknown = [name for name in names if name not in ARROW_SCHEMA.names]
    if unknown:
        raise ValueError(f"unknown decoded columns {unknown}; valid: {list(_NAMES)}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"duplicate decoded columns {duplicates}; valid: {list(_NAMES)}")
    return names


def arrow_schema(names: Sequence[str]) -> pa.Schema:
    """The Arrow schema of the decoded columns ``names`` (``ARROW_SCHEMA``'s fields, in that order)."""
    return pa.schema([ARROW_SCHEMA.field(name) for name in names])


_FIXED: Final = np.dtype(
    [
        ("version", "u1"),
        ("reserved", "u1"),
        ("bflags", "<u2"),
        ("signature", "<u4"),
        ("packet_size", "<u4"),
        ("ttrq", "<u4"),
        ("sqm", "u1", (16,)),
        ("qma", "u1", (16,)),
        ("ttbr", "<u4"),
        ("sent", "<u4"),
        ("message_id", "<u4"),
        ("uflags", "<u4"),
    ]
)
_MPH: Final = np.dtype(
    [
        ("flags", "u1"),
        ("label_length", "u1"),
        ("message_class", "<u2"),
        ("correlation_id", "u1", (20,)),
        ("body_type", "<u4"),
        ("app", "<u4"),
        ("message_size", "<u4"),
        ("alloc", "<u4"),
        ("privacy", "<u4"),
        ("hash", "<u4"),
        ("encryption", "<u4"),
        ("ext_size", "<u4"),
    ]
)

_SIGNATURE: Final = 0x524F494C
_MAX_PACKET: Final = 0x00400000
# BaseHeader.Flags: IN (internal), SH (SessionHeader), DH (DebugHeader).
_B_IN: Final = 0x0008
_B_SH: Final = 0x0010
_B_DH: Final = 0x0020
# UserHeader.Flags: SH, MP, MQ, AH, HH (TH and CQ: arrow_walk).
_U_SH: Final = 0x00080000
_U_MP: Final = 0x00200000
_U_MQ: Final = 0x00800000
_U_AH: Final = 0x02000000
_U_HH: Final = 0x10000000
_U_OTHER_HEADERS: Final = _U_SH | _U_MQ | _U_AH | _U_HH


_TIMESTAMP: Final = _ARROW_TYPES["timestamp"]
_DELIVERY: Final = pa.array(list(DELIVERY_NAMES), pa.string())

_HEX: Final = b"0123456789abcdef"
# Byte -> its two lower-case hex digits as one little-endian u16 (first digit in the low byte).
_HEX2: Final = np.array([_HEX[b >> 4] | _HEX[b & 15] << 8 for b in range(256)], np.uint16)
_HEX2_UPPER: Final = np.array(
    [_HEX.upper()[b >> 4] | _HEX.upper()[b & 15] << 8 for b in range(256)], np.uint16
)


def _guid_text(raw: np.ndarray, table: np.ndarray = _HEX2) -> np.ndarray:
    """(n, 16) GUID bytes in the [MS-DTYP] 2.3.4 packet layout -> (n, 36) ASCII of the canonical text.

    Data1 (4 bytes), Data2 and Data3 (2 each) are little-endian, so the text prints them reversed.
    """
    n = len(raw)
    text = np.empty((n, 36), np.uint8)
    text[:, 8] = text[:, 13] = text[:, 18] = text[:, 23] = ord("-")
    for src, dst in (
        (raw[:, 3::-1], slice(0, 8)),
        (raw[:, 5:3:-1], slice(9, 13)),
        (raw[:, 7:5:-1], slice(14, 18)),
        (raw[:, 8:10], slice(19, 23)),
        (raw[:, 10:16], slice(24, 36)),
    ):
        text[:, dst] = table[src].view(np.uint8).reshape(n, -1)
    return text


def _same_words(words: np.ndarray, first: int) -> bool:
    """Whether words ``first`` and ``first + 1`` of every row of ``words`` ((n, k) u64) equal row 0's."""
    pair = words[:, first : first + 2]
    return bool((pair[:, 0] == pair[0, 0]).all() and (pair[:, 1] == pair[0, 1]).all())


def _direct_or_absent(code: np.ndarray) -> np.ndarray:
    """Queue type code 0 (absent) or 7 (direct) per row ([MS-MQMQ] 2.2.19.2 UserHeader.Flags)."""
    return (code == 0) | (code == 7)  # type: ignore[no-any-return]


def _guid_column(raw: np.ndarray, same: bool) -> pa.StringArray:
    """The GUID text column of ``raw``; a batch usually repeats one GUID (``same``): formatted once."""
    if same:
        text = _guid_text(raw[:1])[0].tobytes().decode("ascii")
        return repeat_text(text, len(raw))
    return _fixed_strings(_guid_text(raw))


def _fixed_strings(chars: np.ndarray) -> pa.StringArray:
    n, width = chars.shape
    return pa.Array.from_buffers(
        pa.string(), n, [None, fixed_offsets(n, width), pa.py_buffer(np.ascontiguousarray(chars))]
    )


# 10 ** 1 .. 10 ** 9: the number of these an u32 is at least, plus one, is its decimal digit count.
_POWERS_OF_TEN: Final = np.array([10**k for k in range(1, 10)], np.uint32)


def _decimal_digits(ordinals: np.ndarray, width: int) -> np.ndarray:
    """(n, ``width``) ASCII decimal digits of the u32 ``ordinals``, right-aligned (leading '0's)."""
    out = np.empty((len(ordinals), width), np.uint8)
    value = ordinals.astype(np.uint32)
    for j in range(width - 1, -1, -1):
        quotient = value // np.uint32(10)
        out[:, j] = value - quotient * np.uint32(10) + np.uint32(48)
        value = quotient
    return out


def _stride1(buffer: np.ndarray, width: int) -> np.ndarray:
    """Every ``width``-byte run of the u8 ``buffer`` as one opaque item (item i starts at byte i)."""
    return np.ndarray((len(buffer) - width + 1,), np.dtype(f"V{width}"), buffer=buffer, strides=(1,))


def message_ids(prefixes: np.ndarray, ordinals: np.ndarray) -> pa.StringArray:
    """The message id text "{QM GUID}\\ordinal" of each row, as ``columns.packet_row`` prints it (MSMQ
    message id form): ``prefixes`` is (1 or n, width) ASCII (one row: shared by every id),
    ``ordinals`` the n u32 ordinals.

    Built with numpy in one output buffer: the decimal digits of every ordinal are worked out
    right-aligned in a fixed width (leading '0's), each row's digit block is written so that it ends
    where the row's text ends (its leading '0's land on the row's prefix area), then the prefixes are
    written over them.  Each pass writes every row as one opaque item, and no two items of a pass
    overlap.  A prefix narrower than the digits less one (never the 39-byte "{GUID}\\") would let a
    digit block reach into the row before: then Arrow joins the decimal texts to the prefixes.
    """
    n = len(ordinals)
    width = prefixes.shape[1]
    if n == 0:
        return pa.array([], pa.string())
    ordinals = ordinals.astype(np.uint32)
    lengths = np.searchsorted(_POWERS_OF_TEN, ordinals, side="right") + 1  # digits per ordinal
    digits = int(lengths.max())
    if width == 0 or width < digits - 1:  # a digit block could reach into the row before: Arrow joins
        text = pc.cast(pa.array(ordinals), pa.string())
        if len(prefixes) == 1:
            head = pa.scalar(prefixes[0].tobytes().decode("ascii"), pa.string())
        else:
            head = _fixed_strings(prefixes)
        return pc.binary_join_element_wise(head, text, "")
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths + width, out=offsets[1:])
    out = np.empty(int(offsets[-1]), np.uint8)
    row_start = offsets[:-1]
    blocks = _decimal_digits(ordinals, digits).view(f"V{digits}")[:, 0]
    _stride1(out, digits)[row_start + width + lengths - digits] = blocks
    heads = np.ascontiguousarray(prefixes).view(f"V{width}")[:, 0]
    _stride1(out, width)[row_start] = heads[0] if len(prefixes) == 1 else heads
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(out)]
    )


def _empty_binary(n: int) -> pa.BinaryArray:
    """``n`` empty (not null) binary values: all-zero offsets, no data, no copy."""
    return pa.Array.from_buffers(pa.binary(), n, [None, fixed_offsets(n, 0), pa.py_buffer(b"")])


def _fixed_binary(raw: np.ndarray) -> pa.BinaryArray:
    n, width = raw.shape
    return pa.Array.from_buffers(
        pa.binary(), n, [None, fixed_offsets(n, width), pa.py_buffer(np.ascontiguousarray(raw))]
    )


def _scatter_strings(present: np.ndarray, values: pa.StringArray) -> pa.StringArray:
    """``values`` (one per present row) spread over ``len(present)`` rows, null where not present."""
    if present.all():
        return values
    index = np.cumsum(present, dtype=np.int64) - 1
    return values.take(pa.array(np.maximum(index, 0), mask=~present))


def _fast_columns(
    col_data: _Data,
    dbuf: pa.Buffer,
    starts: np.ndarray,
    lens: np.ndarray,
    fixed: np.ndarray,
    valid: np.ndarray,
    want: frozenset[str],
) -> tuple[np.ndarray, dict[str, pa.Array]]:
    """Walk the candidate rows; return (mask of fast rows, their ``want`` columns over the fast rows only).

    Which rows are fast never depends on ``want``: every check runs whatever columns are wanted (a
    column not wanted may still send its row to the reference decoder); only the output columns not
    wanted are not built.
    """
    n = len(starts)
    bflags = fixed["bflags"].astype(np.int64)
    uflags = fixed["uflags"].astype(np.int64)
    psize = fixed["packet_size"].astype(np.int64)
    ok = (
        valid
        & (lens >= 64)
        & (fixed["version"] == 0x10)
        & (fixed["signature"] == _SIGNATURE)
        & ((bflags & (_B_IN | _B_DH)) == 0)
        & (psize <= _MAX_PACKET)
        & ((psize & 3) == 0)
        & (lens == psize + np.where(bflags & _B_SH, 16, 0))
        & ((uflags & _U_MP) != 0)
        & ((uflags & _U_OTHER_HEADERS) == 0)
        & (((uflags >> 10) & 7) == 7)
        & _direct_or_absent((uflags >> 13) & 7)
        & _direct_or_absent((uflags >> 16) & 7)
    )
    end = starts + psize  # absolute end of PacketSize
    # The queue names and the TransactionHeader: the offsets worked out once when the batch shares
    # one layout, else row by row (the same answer, arrow_walk).
    walked = walk_uniform(col_data, starts, psize, uflags, ok)
    ok, names, pos, has_tx, tx_flags = walked or walk_rows(col_data, starts, end, uflags, ok)
    # MessagePropertiesHeader ([MS-MQMQ] 2.2.19.3).
    mph_start = pos
    ok &= pos + 56 <= end
    mph = col_data.gather(pos, _MPH)
    ll = mph["label_length"].astype(np.int64)
    label_start = pos + 56
    label_end = label_start + 2 * ll
    msize = mph["message_size"].astype(np.int64)
    alloc = mph["alloc"].astype(np.int64)
    ext = mph["ext_size"].astype(np.int64)
    mclass = mph["message_class"].astype(np.int64)
    ok &= (ll <= 0xFA) & (label_end <= end) & (alloc >= msize) & (ext <= end - label_end)
    ok &= alloc <= end - label_end - ext
    has_label = ll > 0
    ok &= ~has_label | (col_data.u16(label_end - 2) == 0)
    body_start = label_end + ext
    mph_end = body_start + alloc
    ok &= mph_end + ((-(mph_end - mph_start)) & 3) == end  # nothing after the MessagePropertiesHeader
    # Classes that could make the packet an OrderAck/FinalAck ([MS-MQQB] 2.2.4, 2.2.5) take the slow path.
    ok &= (mclass != 0xFF) & (mclass < 0x4000)
    # SessionHeader.WindowSize MUST be 1..0xFFFF ([MS-MQMQ] 2.2.20.4).
    has_session = (bflags & _B_SH) != 0
    if has_session.any():
        ok &= ~has_session | (col_data.u16(end + 12) != 0)

    # Text fields: NUL inside a label or a name sends the row to the slow path.
    texts: list[tuple[np.ndarray, _Texts | _WindowTexts | None]] = []
    for present, s, e in [*names, (has_label, label_start, label_end)]:
        sel = ok & present
        t = _texts(col_data, dbuf, s[sel], e[sel]) if sel.any() else None
        if t is not None:
            bad = t.inner_nul_rows()
            if len(bad):
                ok[np.flatnonzero(sel)[bad]] = False
        texts.append((present, t))

    fast = np.flatnonzero(ok)
    m = len(fast)
    if m == 0:
        return ok, {}
    out: dict[str, pa.Array] = {}
    everything = m == n
    # Structured rows are copied as opaque bytes (numpy copies subarray fields item by item).
    f = fixed if everything else fixed.view(f"V{_FIXED.itemsize}")[fast].view(_FIXED)
    for name, (present, t), (_, s, e), prefix in zip(
        _TEXT_NAMES,
        texts,
        [*names, (has_label, label_start, label_end)],
        ("DIRECT=", "DIRECT=", "DIRECT=", ""),
        strict=True,
    ):
        if name not in want:
            continue
        sel_fast = present if everything else present[fast]
        if not sel_fast.any():
            out[name] = pa.nulls(m, pa.string())
            continue
        # Rebuild the text arrays if rows were dropped after they were cut.
        if t is None or t.count != int(np.count_nonzero(sel_fast)):
            rows = fast[sel_fast]
            t = _texts(col_data, dbuf, s[rows], e[rows])
        out[name] = _scatter_strings(sel_fast, t.array(prefix))
    if "kind" in want:
        out["kind"] = repeat_text("UserMessage", m)
    if "packet_size" in want:
        out["packet_size"] = pa.array(psize if everything else psize[fast])
    if want & {"priority", "flags"}:
        bf = f["bflags"].astype(np.int32)
        out["priority"] = pa.array(bf & 7)
        out["flags"] = pa.array(bf)
    if "time_to_reach_queue" in want:
        out["time_to_reach_queue"] = pa.array(f["ttrq"].astype(np.int64))
    if want & {"source_queue_manager", "destination_queue_manager", "message_id"}:
        _guid_columns(out, f, m, want)
    if "sent_time" in want:
        sent = f["sent"].astype(np.int64)
        sent *= 1_000_000
        out["sent_time"] = pa.Array.from_buffers(_TIMESTAMP, m, [None, pa.py_buffer(sent)])
    if "time_to_be_received" in want:
        out["time_to_be_received"] = pa.array(f["ttbr"].astype(np.int64))
    if want & {"delivery", "user_flags"}:
        uf = uflags if everything else uflags[fast]
        out["delivery"] = _DELIVERY.take(pa.array((uf >> 5) & 3))
        out["user_flags"] = pa.array(uf)
    mf = mph if everything else mph.view(f"V{_MPH.itemsize}")[fast].view(_MPH)
    if "message_class" in want:
        out["message_class"] = pa.array(mf["message_class"].astype(np.int32))
    if "correlation_id" in want:
        out["correlation_id"] = _fixed_binary(mf["correlation_id"])

    def on_fast(values: np.ndarray) -> np.ndarray:  # values of the fast rows (all rows: no copy)
        return values if everything else values[fast]

    if "body" in want:
        bs = on_fast(body_start)
        out["body"] = slice_ranges(dbuf, bs, bs + on_fast(msize))
    if "body_type" in want:
        out["body_type"] = pa.array(mf["body_type"].astype(np.int64))
    if "app_specific" in want:
        out["app_specific"] = pa.array(mf["app"].astype(np.int64))
    if "extension" in want:
        ls = on_fast(label_end)
        ext_fast = on_fast(ext)
        out["extension"] = _empty_binary(m) if not ext_fast.any() else slice_ranges(dbuf, ls, ls + ext_fast)
    if "acknowledgements" in want:
        out["acknowledgements"] = pa.array(mf["flags"].astype(np.int32))
    if want & {"transactional", "first_in_transaction", "last_in_transaction"}:
        tx = on_fast(has_tx)
        txf = on_fast(tx_flags)
        out["transactional"] = pa.array(tx)
        out["first_in_transaction"] = pa.array(tx & ((txf & 4) != 0))
        out["last_in_transaction"] = pa.array(tx & ((txf & 8) != 0))
    if "error" in want:
        out["error"] = pa.nulls(m, pa.string())
    return ok, out


def _guid_columns(out: dict[str, pa.Array], f: np.ndarray, m: int, want: frozenset[str]) -> None:
    """The wanted GUID text columns (the two queue managers, the message id) of the fast rows ``f``."""
    sqm = f["sqm"]
    # The GUIDs as two u64 words each of the contiguous 64-byte rows (SQM words 2-3, QMA words 4-5):
    # compared in place, without copying the (strided) GUID fields out first.
    words = np.ascontiguousarray(f).view(np.uint64).reshape(m, _FIXED.itemsize // 8)
    same_sqm = _same_words(words, 2)
    if "source_queue_manager" in want:
        out["source_queue_manager"] = _guid_column(sqm, same_sqm)
    if "destination_queue_manager" in want:
        out["destination_queue_manager"] = _guid_column(f["qma"], _same_words(words, 4))
    if "message_id" not in want:
        return
    if same_sqm:  # one sending queue manager: one "{GUID}\" prefix
        braced = np.empty((1, 39), np.uint8)
        braced[:, 1:37] = _guid_text(sqm[:1], _HEX2_UPPER)
    else:
        braced = np.empty((m, 39), np.uint8)
        braced[:, 1:37] = _guid_text(sqm, _HEX2_UPPER)
    braced[:, 0] = ord("{")
    braced[:, 37] = ord("}")
    braced[:, 38] = ord("\\")
    out["message_id"] = message_ids(braced, f["message_id"])


def _slow_columns(rows: list[dict[str, Any]], names: Sequence[str]) -> dict[str, pa.Array]:
    return {name: pa.array([r[name] for r in rows], ARROW_SCHEMA.field(name).type) for name in names}


def decode_array(packets: pa.Array, columns: Sequence[str] | None = None) -> pa.RecordBatch:
    """Decode a ``binary`` (or ``large_binary``) Arrow array of packets into ``ARROW_SCHEMA`` columns.

    Row i of the result describes packet i; a null or malformed packet gives ``kind="error"``.
    ``columns`` (names of ``COLUMNS``, see ``selected_columns``) keeps only those columns, in that
    order, each equal to the same column of the full decode; the work for the others is skipped where
    it can be (which rows take the reference decoder does not change).
    """
    names = selected_columns(columns)
    schema = ARROW_SCHEMA if columns is None else arrow_schema(names)
    if pa.types.is_large_binary(packets.type):
        packets = packets.cast(pa.binary())
    if not pa.types.is_binary(packets.type):
        raise TypeError(f"packets must be a binary array, not {packets.type}")
    n = len(packets)
    if n == 0:
        return pa.RecordBatch.from_pylist([], schema=schema)
    _validity, obuf, dbuf = packets.buffers()
    offsets = np.frombuffer(obuf, np.int32, count=n + 1, offset=4 * packets.offset).astype(np.int64)
    if dbuf is None:
        dbuf = pa.py_buffer(b"")
    starts = offsets[:-1]
    col_data = _Data(dbuf, starts)
    lens = offsets[1:] - starts
    fixed = col_data.gather(starts, _FIXED)
    valid = np.asarray(packets.is_valid()) if packets.null_count else np.ones(n, np.bool_)
    ok, fast_cols = _fast_columns(col_data, dbuf, starts, lens, fixed, valid, frozenset(names))
    if ok.all():
        return pa.RecordBatch.from_arrays([fast_cols[name] for name in names], schema=schema)
    slow = np.flatnonzero(~ok)
    # The per-row reference decoder gives every column; only the wanted ones are kept.
    slow_cols = _slow_columns([packet_row(packets[i].as_py()) for i in slow.tolist()], names)
    if not fast_cols:
        return pa.RecordBatch.from_arrays([slow_cols[name] for name in names], schema=schema)
    # Row i comes from position order[i] of fast + slow.
    order = np.empty(n, np.int64)
    fast = np.flatnonzero(ok)
    order[fast] = np.arange(len(fast))
    order[slow] = len(fast) + np.arange(len(slow))
    take = pa.array(order)
    arrays = []
    for name in names:
        fast_col = fast_cols[name]
        if len(fast_col) != len(fast):  # pragma: no cover - a fast row dropped after its columns were cut
            raise AssertionError("fast path column length mismatch")
        arrays.append(pa.concat_arrays([fast_col, slow_cols[name]]).take(take))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
