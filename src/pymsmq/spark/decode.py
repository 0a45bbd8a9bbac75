"""``decode_packets``: a binary column of MSMQ packets -> typed columns, with ``mapInArrow``.

The work runs in the Python workers, one Arrow batch at a time, through ``pymsmq.spark.arrow_decode``
(vectorised fixed-layout fields, per-row ``pymsmq.wire`` fallback).  A malformed packet never fails the
job: its row has ``kind = "error"`` and the ``WireError`` text in ``error``.
"""

from __future__ import annotations

from collections.abc import Iterator
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

from pymsmq.spark.arrow_decode import ARROW_SCHEMA, decode_array
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

    def __init__(self, column: str, keep: tuple[str, ...]) -> None:
        self.column = column
        self.keep = keep

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        schema: pa.Schema | None = None  # the output schema, built once from the first batch's input fields
        for batch in batches:
            decoded = decode_array(batch.column(self.column))
            if schema is None:
                schema = pa.schema([batch.schema.field(name) for name in self.keep] + list(ARROW_SCHEMA))
            arrays = [batch.column(name) for name in self.keep] + decoded.columns
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_packets(df: DataFrame, column: str = "packet", *, keep_input: bool = True) -> DataFrame:
    """Decode the binary ``column`` of ``df`` ([MS-MQMQ]/[MS-MQQB] packets, one whole packet per row).

    The result has the input columns (unless ``keep_input=False``) followed by the columns of
    ``pymsmq.spark.columns.COLUMNS``: kind, packet_size, priority, flags, time_to_reach_queue,
    source_queue_manager, destination_queue_manager, message_id, sent_time, time_to_be_received,
    delivery, user_flags, destination, admin_queue, response_queue, message_class, correlation_id,
    label, body, body_type, app_specific, extension, acknowledgements, transactional,
    first_in_transaction, last_in_transaction, error.  Raises ``ValueError`` if ``column`` is missing or
    not binary, or if an input column to keep has the name of a decoded column.

    Throughput: most of the cost is Spark moving the packets to the Python workers and the decoded
    columns back (Arrow batches of ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows).  Setting
    ``spark.sql.execution.arrow.maxBytesPerBatch`` to 2147483647 (Int.MaxValue) stops Spark from
    re-measuring the batch after every row it writes, and the session settings
    ``spark.python.unix.domain.socket.enabled=true`` and ``spark.buffer.size=1048576`` make the transfer
    itself cheaper (see bench/spark.py).
    """
    fields = {f.name: f for f in df.schema.fields}
    if column not in fields:
        raise ValueError(f"no column {column!r} in {list(fields)}")
    if not isinstance(fields[column].dataType, BinaryType):
        raise ValueError(f"column {column!r} is {fields[column].dataType.simpleString()}, not binary")
    keep = tuple(fields) if keep_input else ()
    clash = sorted(set(keep) & {name for name, _ in COLUMNS})
    if clash:
        raise ValueError(f"input columns {clash} clash with decoded columns; rename them or keep_input=False")
    schema = StructType([fields[name] for name in keep] + DECODED_SCHEMA.fields)
    return df.mapInArrow(_Decoder(column, keep), schema)
