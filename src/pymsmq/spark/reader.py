"""Batch read of a queue: lookup-id range partitions, filter pushdown, Arrow batches over READ_RANGE.

A scan is non-destructive (READ_RANGE peeks).  The driver asks the queue for its lowest live lookup id
and its high water (``queue_position``) and cuts ``[first, high)`` -- narrowed by pushed ``lookup_id``
filters -- into ``numPartitions`` ranges; each task reads its range with pipelined READ_RANGE requests
and turns every MESSAGE_BATCH into an Arrow record batch.

Pushed filters (needs ``spark.sql.python.filterPushdown.enabled=true``): comparisons (=, <, <=, >,
>=, IN) of a literal with ``lookup_id``, ``priority``, ``msg_class``, ``app_specific``, ``body_type``,
``sent_time`` or ``arrived_time``.  ``lookup_id`` bounds narrow the ranges read and ``priority``
bounds are applied by the server; every pushed filter is also applied exactly to each Arrow batch in
the task, so Spark does not evaluate them again.  Other filters are left to Spark.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pyspark.sql.datasource import DataSourceReader, InputPartition

from pymsmq.client.range_read import iter_range, queue_position
from pymsmq.spark.options import SourceOptions, open_queue

__all__ = [
    "PUSHABLE_COLUMNS",
    "MsmqBatchReader",
    "Pushdown",
    "RangePartition",
    "plan_partitions",
    "read_partition",
]

PUSHABLE_COLUMNS: Final = frozenset(
    {"lookup_id", "priority", "msg_class", "app_specific", "body_type", "sent_time", "arrived_time"}
)
_TIMES: Final = frozenset({"sent_time", "arrived_time"})
_OPS: Final = {
    "EqualTo": "eq",
    "GreaterThan": "gt",
    "GreaterThanOrEqual": "ge",
    "LessThan": "lt",
    "LessThanOrEqual": "le",
    "In": "in",
}
_MAX_ID: Final = (1 << 64) - 1


@dataclass
class RangePartition(InputPartition):
    """One task's lookup ids: ``start <= lookup_id < end``."""

    start: int
    end: int


def plan_partitions(start: int, end: int, parts: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into at most ``parts`` contiguous, non-empty ranges of about equal width."""
    if end <= start or parts < 1:
        return []
    width = end - start
    parts = min(parts, width)
    step, extra = divmod(width, parts)
    out: list[tuple[int, int]] = []
    a = start
    for i in range(parts):
        b = a + step + (1 if i < extra else 0)
        out.append((a, b))
        a = b
    return out


def _micros(value: object) -> int | None:
    if isinstance(value, dt.datetime):
        # Naive datetimes are what PySpark gives for the session's local time; .timestamp() agrees.
        return round(value.timestamp() * 1_000_000)
    if isinstance(value, dt.date):
        return None
    return None


@dataclass
class Pushdown:
    """The pushed filters: ``(column, op, value)`` conditions, all of which a row must meet."""

    conditions: list[tuple[str, str, Any]] = field(default_factory=list)

    def accept(self, column: str, op: str, value: Any) -> bool:
        """Record one condition; False when it cannot be pushed (Spark keeps it)."""
        if column not in PUSHABLE_COLUMNS or op not in _OPS.values():
            return False
        values = list(value) if op == "in" else [value]
        if column in _TIMES:
            converted = [_micros(v) for v in values]
            if any(v is None for v in converted):
                return False
            values = converted
        elif any(not isinstance(v, int) or isinstance(v, bool) for v in values):
            return False
        self.conditions.append((column, op, tuple(values) if op == "in" else values[0]))
        return True

    def _bounds(self, column: str, low: int, high: int) -> tuple[int, int]:
        # Inclusive [low, high] implied by the conditions on ``column``.
        for col, op, v in self.conditions:
            if col != column:
                continue
            if op == "eq":
                low, high = max(low, v), min(high, v)
            elif op == "gt":
                low = max(low, v + 1)
            elif op == "ge":
                low = max(low, v)
            elif op == "lt":
                high = min(high, v - 1)
            elif op == "le":
                high = min(high, v)
            elif op == "in":
                low, high = max(low, min(v, default=high + 1)), min(high, max(v, default=low - 1))
        return low, high

    def lookup_range(self) -> tuple[int, int]:
        """``[low, high)`` of lookup ids the conditions allow (empty when low >= high)."""
        low, high = self._bounds("lookup_id", 0, _MAX_ID)
        return low, high + 1

    def priority_range(self) -> tuple[int, int]:
        """Inclusive ``(min_priority, max_priority)`` within 0..7 (min > max: nothing matches)."""
        low, high = self._bounds("priority", 0, 7)
        return max(low, 0), min(high, 7)

    def apply(self, batch: Any) -> Any:
        """``batch`` (a ``pyarrow.RecordBatch``) without the rows that fail a condition."""
        if not self.conditions or batch.num_rows == 0:
            return batch
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.compute as pc  # type: ignore[import-untyped]

        mask = None
        for col, op, v in self.conditions:
            arr = batch.column(col).cast(pa.int64())  # every pushable column is an integer or a time
            if op == "in":
                cond = pc.is_in(arr, value_set=pa.array(list(v), pa.int64()))
                cond = pc.and_kleene(cond, pc.is_valid(arr))
            else:
                fn = {"eq": pc.equal, "gt": pc.greater, "ge": pc.greater_equal, "lt": pc.less}.get(
                    op, pc.less_equal
                )
                cond = fn(arr, pa.scalar(v, pa.int64()))
            mask = cond if mask is None else pc.and_kleene(mask, cond)
        return batch.filter(mask)


def read_partition(opts: SourceOptions, start: int, end: int, pushdown: Pushdown) -> Iterator[Any]:
    """Arrow record batches of the messages with ``start <= lookup_id < end`` (peek)."""
    from pymsmq.spark.message_arrow import batch_to_arrow

    lo, hi = pushdown.priority_range()
    if start >= end or lo > hi:
        return
    with open_queue(opts) as (_, q):
        name = q.format_name
        for rb in iter_range(q, start, end, chunk=opts.chunk, min_priority=lo, max_priority=hi):
            batch = pushdown.apply(batch_to_arrow(rb.batch, name))
            if batch.num_rows:
                yield batch


class MsmqBatchReader(DataSourceReader):
    """``spark.read.format("msmq")``: the queue's messages, partitioned by lookup-id ranges."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.pushdown = Pushdown()

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:  # noqa: N802 - the PySpark name
        """Keep the filters this source applies itself; yield the others back to Spark."""
        self.pushdown = Pushdown()  # Spark may reuse a reader across queries: start afresh
        for f in filters:
            op = _OPS.get(type(f).__name__)
            attribute: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
            if op is None or len(attribute) != 1 or not self.pushdown.accept(attribute[0], op, f.value):
                yield f

    def partitions(self) -> Sequence[InputPartition]:
        """Lookup-id ranges covering what the queue holds now (and the pushed bounds allow)."""
        with open_queue(self.opts) as (_, q):
            pos = queue_position(q)
        low, high = self.pushdown.lookup_range()
        ranges = plan_partitions(
            max(pos.first_lookup_id, low), min(pos.high_water, high), self.opts.num_partitions
        )
        return [RangePartition(a, b) for a, b in ranges] or [RangePartition(0, 0)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's Arrow record batches (runs in an executor)."""
        assert isinstance(partition, RangePartition)
        yield from read_partition(self.opts, partition.start, partition.end, self.pushdown)
