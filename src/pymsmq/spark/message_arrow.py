"""MESSAGE_BATCH blobs (READ_RANGE answers) -> Arrow record batches, vectorised with numpy.

The fixed-size records become numpy structured arrays (one view, no per-message loop); each
variable-length column becomes an Arrow binary/string array built straight from the blob's bytes
(offsets = cumulative sum of the lengths, nulls from the 0xFFFFFFFF length).  GUIDs shared by many
rows (the source machine) are formatted once per distinct value.

``MESSAGE_COLUMNS`` is the data source's schema: one column per ``Message`` attribute the queue
manager keeps (DESIGN.md: column names are the Message attribute names) plus ``queue``.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from pymsmq.errors import WireError
from pymsmq.protocol.message_batch import (
    NULL_LENGTH,
    RECORD_FIELDS,
    RECORD_SIZE,
    VAR_COLUMNS,
    Bits,
    split_batch,
)

__all__ = ["ARROW_SCHEMA", "MESSAGE_COLUMNS", "SPARK_SCHEMA", "batch_to_arrow", "empty_batch"]

#: (column, Spark SQL type) in output order.
MESSAGE_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("queue", "string"),
    ("lookup_id", "bigint"),
    ("id", "binary"),
    ("label", "string"),
    ("body", "binary"),
    ("body_type", "bigint"),
    ("priority", "int"),
    ("msg_class", "bigint"),
    ("correlation_id", "binary"),
    ("app_specific", "bigint"),
    ("extension", "binary"),
    ("sent_time", "timestamp"),
    ("arrived_time", "timestamp"),
    ("source_machine_guid", "string"),
    ("destination_queue", "string"),
    ("destination_format_name", "string"),
    ("response_queue", "string"),
    ("admin_queue", "string"),
    ("delivery", "int"),
    ("journal", "int"),
    ("ack", "int"),
    ("trace", "int"),
    ("max_time_to_reach_queue", "bigint"),
    ("max_time_to_receive", "bigint"),
    ("transaction_id", "binary"),
    ("is_first_in_transaction", "boolean"),
    ("is_last_in_transaction", "boolean"),
    ("abort_count", "bigint"),
    ("move_count", "bigint"),
    ("last_move_time", "timestamp"),
    ("priv_level", "int"),
    ("auth_level", "int"),
)
SPARK_SCHEMA: Final = ", ".join(f"{name} {kind}" for name, kind in MESSAGE_COLUMNS)
_ARROW_TYPES: Final = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "binary": pa.binary(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "boolean": pa.bool_(),
}
ARROW_SCHEMA: Final = pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in MESSAGE_COLUMNS])
_DTYPE: Final = np.dtype(
    [(name, "<" + code if code[-1] != "s" else "V" + code[:-1]) for name, code in RECORD_FIELDS]
)
_STRINGS: Final = frozenset({"label", "destination_queue", "response_queue", "admin_queue"})

if _DTYPE.itemsize != RECORD_SIZE:  # pragma: no cover - a change of RECORD_FIELDS without this module
    raise ImportError("pymsmq.spark.message_arrow: record dtype does not match MESSAGE_BATCH")


def empty_batch() -> pa.RecordBatch:
    """A record batch with the schema and no rows."""
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in ARROW_SCHEMA], schema=ARROW_SCHEMA)


def _var(
    buf: pa.Buffer, raw: np.ndarray, count: int, col: tuple[int, int, int], kind: pa.DataType
) -> pa.Array:
    lengths = raw[col[0] : col[0] + 4 * count].view("<u4")
    nulls = lengths == NULL_LENGTH
    sizes = np.where(nulls, 0, lengths).astype(np.int64)
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    data = buf.slice(col[1], col[2] - col[1])
    validity = None
    null_count = int(nulls.sum())
    if null_count:
        validity = pa.array(~nulls).buffers()[1]
    if offsets[-1] < 2**31:
        arr = pa.Array.from_buffers(
            kind, count, [validity, pa.py_buffer(offsets.astype(np.int32)), data], null_count
        )
        if kind == pa.string():
            try:
                arr.validate(full=True)
            except pa.ArrowInvalid as exc:
                raise WireError(f"MESSAGE_BATCH text column is not UTF-8: {exc}") from None
        return arr
    large = pa.large_string() if kind == pa.string() else pa.large_binary()
    arr = pa.Array.from_buffers(large, count, [validity, pa.py_buffer(offsets), data], null_count)
    return arr.cast(kind)  # pragma: no cover - > 2 GiB in one batch


def _fixed(records: np.ndarray, name: str, width: int, present: np.ndarray) -> pa.Array:
    raw = np.ascontiguousarray(records[name]).view(np.uint8)
    values = pa.py_buffer(raw.tobytes())
    arr = pa.Array.from_buffers(pa.binary(width), len(records), [None, values])
    arr = arr.cast(pa.binary())
    if not present.all():
        arr = pc.if_else(pa.array(present), arr, pa.nulls(len(records), pa.binary()))
    return arr


def _guid_text(records: np.ndarray, present: np.ndarray) -> pa.Array:
    raw = np.ascontiguousarray(records["source_machine_guid"]).view("V16").reshape(-1)
    if (raw == raw[0]).all():  # the usual case: one source queue manager for the whole batch
        text = str(uuid.UUID(bytes_le=bytes(raw[0])))
        arr = pa.repeat(pa.scalar(text, pa.string()), len(raw))
        return arr if present.all() else pc.if_else(pa.array(present), arr, pa.nulls(len(raw), pa.string()))
    uniques, inverse = np.unique(raw, return_inverse=True)
    texts = [str(uuid.UUID(bytes_le=bytes(u))) for u in uniques]
    arr = pa.array(texts, pa.string()).take(pa.array(inverse.reshape(-1).astype(np.int32)))
    if not present.all():
        arr = pc.if_else(pa.array(present), arr, pa.nulls(len(records), pa.string()))
    return arr


def _times(values: np.ndarray, present: np.ndarray) -> pa.Array:
    ok = present & np.isfinite(values)
    micros = np.where(ok, np.round(values * 1e6), 0).astype(np.int64)
    return pa.array(micros, type=pa.int64(), mask=~ok).cast(pa.timestamp("us", tz="UTC"))


def _move_times(blob: bytes, raw: np.ndarray, n: int, col: tuple[int, int, int] | None) -> pa.Array:
    # The last_move_time column (8-byte float64 values or null); all null from a server without it.
    if col is None:
        return pa.nulls(n, pa.timestamp("us", tz="UTC"))
    lengths = raw[col[0] : col[0] + 4 * n].view("<u4")
    present = lengths != NULL_LENGTH
    if (lengths[present] != 8).any():
        raise WireError("MESSAGE_BATCH last_move_time values are not 8 bytes each")
    values = np.zeros(n, dtype=np.float64)
    values[present] = np.frombuffer(blob, dtype="<f8", count=int(present.sum()), offset=col[1])
    return _times(values, present)


def batch_to_arrow(blob: bytes, queue: str) -> pa.RecordBatch:
    """The record batch (``ARROW_SCHEMA``) of a MESSAGE_BATCH blob read from ``queue``."""
    parts = split_batch(blob)
    n = parts.count
    if n == 0:
        return empty_batch()
    buf = pa.py_buffer(blob)
    raw = np.frombuffer(blob, dtype=np.uint8)
    records = raw[parts.records[0] : parts.records[1]].view(_DTYPE)
    bits = records["bits"]
    var = {
        name: _var(buf, raw, n, col, pa.string() if name in _STRINGS else pa.binary())
        for name, col in zip(VAR_COLUMNS, parts.columns[: len(VAR_COLUMNS)], strict=True)
    }
    moved = parts.columns[len(VAR_COLUMNS)] if len(parts.columns) > len(VAR_COLUMNS) else None
    # The multiple-element names the messages were sent to: all null from a server without them.
    dest_sets = (
        _var(buf, raw, n, parts.columns[len(VAR_COLUMNS) + 1], pa.string())
        if len(parts.columns) > len(VAR_COLUMNS) + 1
        else pa.nulls(n, pa.string())
    )

    def u32(name: str) -> pa.Array:
        return pa.array(records[name].astype(np.int64))

    def u8(name: str) -> pa.Array:
        return pa.array(records[name].astype(np.int32))

    def has(bit: int) -> np.ndarray:
        return np.asarray((bits & int(bit)) != 0)

    columns: dict[str, Any] = {
        "queue": pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, dtype=np.int32)), pa.array([queue], pa.string())
        ).cast(pa.string()),
        "lookup_id": pa.array(records["lookup_id"].astype(np.int64)),
        "id": _fixed(records, "id", 20, has(Bits.HAS_ID)),
        "label": var["label"],
        "body": var["body"],
        "body_type": u32("body_type"),
        "priority": u8("priority"),
        "msg_class": u32("msg_class"),
        "correlation_id": _fixed(records, "correlation_id", 20, has(Bits.HAS_CORRELATION_ID)),
        "app_specific": u32("app_specific"),
        "extension": var["extension"],
        "sent_time": _times(records["sent_time"], has(Bits.HAS_SENT_TIME)),
        "arrived_time": _times(records["arrived_time"], has(Bits.HAS_ARRIVED_TIME)),
        "source_machine_guid": _guid_text(records, has(Bits.HAS_SOURCE_MACHINE)),
        "destination_queue": var["destination_queue"],
        "destination_format_name": dest_sets,
        "response_queue": var["response_queue"],
        "admin_queue": var["admin_queue"],
        "delivery": u8("delivery"),
        "journal": u8("journal"),
        "ack": u8("ack"),
        "trace": u8("trace"),
        "max_time_to_reach_queue": u32("max_time_to_reach_queue"),
        "max_time_to_receive": u32("max_time_to_receive"),
        "transaction_id": _fixed(records, "transaction_id", 20, has(Bits.HAS_TRANSACTION_ID)),
        "is_first_in_transaction": pa.array(has(Bits.FIRST_IN_TRANSACTION)),
        "is_last_in_transaction": pa.array(has(Bits.LAST_IN_TRANSACTION)),
        "abort_count": u32("abort_count"),
        "move_count": u32("move_count"),
        "last_move_time": _move_times(blob, raw, n, moved),
        "priv_level": u8("priv_level"),
        "auth_level": u8("auth_level"),
    }
    return pa.RecordBatch.from_arrays([columns[f.name] for f in ARROW_SCHEMA], schema=ARROW_SCHEMA)
