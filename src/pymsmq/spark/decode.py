"""``decode_packets``: a binary column of MSMQ packets -> typed columns, with ``mapInArrow``.

The work runs in the Python workers, one Arrow batch at a time, through ``pymsmq.spark.arrow_decode``
(vectorised fixed-layout fields, per-row ``pymsmq.wire`` fallback).  A malformed packet never fails the
job: its row has ``kind = "error"`` and the ``WireError`` text in ``error``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pymsmq.spark.arrow_decode import ARROW_SCHEMA, arrow_schema, decode_array, selected_columns
from pymsmq.spark.columns import COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DECODED_SCHEMA", "decode_packets"]

_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "bigint": LongType(),
    "int": IntegerType(),
    "timestamp": TimestampType(),
    "binary": BinaryType(),
    "boolean": BooleanType(),
}

#: The Spark schema of the decoded columns (``pymsmq.spark.columns.COLUMNS``).
DECODED_SCHEMA = StructType([StructField(name, _TYPES[kind], True) for name, kind in COLUMNS])


class _Decoder:
    """The picklable function given to ``mapInArrow`` (a class in an importable module, not a closure)."""

    def __init__(self, column: str, keep: tuple[str, ...], columns: tuple[str, ...] | None = None) -> None:
        self.column = column
        self.keep = keep
        self.columns = columns  # the decoded columns to produce (None: all of them)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        schema: pa.Schema | None = None  # the output schema, built once from the first batch's input fields
        decoded_schema = ARROW_SCHEMA if self.columns is None else arrow_schema(self.columns)
        for batch in batches:
            decoded = decode_array(batch.column(self.column), self.columns)
            if schema is None:
                schema = pa.schema([batch.schema.field(name) for name in self.keep] + list(decoded_schema))
            arrays = [batch.column(name) for name in self.keep] + decoded.columns
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_packets(
    df: DataFrame,
    column: str = "packet",
    *,
    keep_input: bool = True,
    columns: Sequence[str] | None = None,
) -> DataFrame:
    """Decode the binary ``column`` of ``df`` ([MS-MQMQ]/[MS-MQQB] packets, one whole packet per row).

    The result has the input columns (unless ``keep_input=False``) followed by the columns of
    ``pymsmq.spark.columns.COLUMNS``: kind, packet_size, priority, flags, time_to_reach_queue,
    source_queue_manager, destination_queue_manager, message_id, sent_time, time_to_be_received,
    delivery, user_flags, destination, admin_queue, response_queue, message_class, correlation_id,
    label, body, body_type, app_specific, extension, acknowledgements, transactional,
    first_in_transaction, last_in_transaction, error.  Raises ``ValueError`` if ``column`` is missing or
    not binary, or if an input column to keep has the name of a decoded column.

    ``columns`` (optional) names the decoded columns wanted, in the order wanted; the result (and its
    declared schema) then holds only those, each with the values the full decode gives it (``kind`` is
    still ``"error"`` for a malformed packet even when ``error`` is not wanted).  Fewer columns cost
    less: the workers skip building the others (texts, GUIDs, bodies) and the JVM converts fewer fields
    to rows.  An empty sequence, unknown names or duplicates raise ``ValueError``.  Example::

        wanted = ["kind", "message_id", "sent_time", "priority", "destination", "label"]
        decoded = decode_packets(df, keep_input=False, columns=wanted)

    Throughput: most of the cost is Spark moving the packets to the Python workers and the decoded
    columns back (Arrow batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows).  Setting
    ``spark.sql.execution.arrow.maxBytesPerBatch`` to 2147483647 (Int.MaxValue) stops Spark from
    re-measuring the batch after every row it writes, and the session settings
    ``spark.python.unix.domain.socket.enabled=true`` and ``spark.buffer.size=1048576`` make the transfer
    itself cheaper (see bench/spark.py).  Measured on 2 cores (local[2], 27 columns, noop sink), on
    two hosts: 1.06-1.09M and 0.91-0.94M packets/s with default settings, 1.11-1.16M and 1.06-1.09M/s
    with ``maxBytesPerBatch`` at Int.MaxValue (``docs/benchmarks.md``).  That setting bounds a batch
    by ``maxRecordsPerBatch`` rows only: lower that too when packets can be large (4 MB each at most).
    """
    fields = {f.name: f for f in df.schema.fields}
    if column not in fields:
        raise ValueError(f"no column {column!r} in {list(fields)}")
    if not isinstance(fields[column].dataType, BinaryType):
        raise ValueError(f"column {column!r} is {fields[column].dataType.simpleString()}, not binary")
    names = selected_columns(columns)
    keep = tuple(fields) if keep_input else ()
    clash = sorted(set(keep) & set(names))
    if clash:
        raise ValueError(f"input columns {clash} clash with decoded columns; rename them or keep_input=False")
    decoded = {f.name: f for f in DECODED_SCHEMA.fields}
    schema = StructType([fields[name] for name in keep] + [decoded[name] for name in names])
    return df.mapInArrow(_Decoder(column, keep, None if columns is None else names), schema)
