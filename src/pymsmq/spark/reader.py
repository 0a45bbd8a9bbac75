"""Batch read of a queue: lookup-id range partitions, Arrow batches over READ_RANGE.

A scan is non-destructive (READ_RANGE peeks; a batch read takes no ``mode``).  The driver asks the
queue for its lowest live lookup id and its next lookup id (``queue_position`` with
``past_pending``) and cuts ``[first, next)`` into ``numPartitions`` ranges; each task reads its range
with pipelined READ_RANGE requests (``PAST_PENDING``: messages committed after a send still inside
an open transaction are read, the pending ones are not visible) and turns every MESSAGE_BATCH into an
Arrow record batch.  A scan is a read of what is visible, not a snapshot: a message another
consumer holds in an open transaction is not in it (a stream waits for such messages instead).

No filter is pushed down: Spark evaluates every filter itself.  PySpark keeps the read plan a
pushdown made (partitions and read function) for the DataFrame it was made on and uses it again
for the DataFrame's other queries, so a filter one query pushed narrowed the next query's rows
(``df.where(...).count()`` then ``df.count()`` counted the filtered rows).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from pymsmq.client.range_read import iter_range, queue_position
from pymsmq.errors import MSMQError
from pymsmq.spark.options import SourceOptions, open_queue
from pymsmq.spark.reconnect import Retry, with_reconnect

__all__ = ["MsmqBatchReader", "RangePartition", "plan_partitions", "read_partition"]


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


def read_partition(
    opts: SourceOptions, start: int, end: int, held_timeout: float | None = None
) -> Iterator[Any]:
    """Arrow record batches of the messages with ``start <= lookup_id < end`` (peek).

    ``held_timeout``: wait (that many seconds at most) for held messages of the range to settle
    (a stream's batch, ``iter_range``); ``None`` reads what is visible now, past sends still
    pending too (a batch read).
    """
    from pymsmq.spark.message_arrow import batch_to_arrow

    stream = held_timeout is not None
    retry = Retry(opts.reconnect_timeout)
    while start < end:
        try:
            with open_queue(opts) as (_, q):
                name = q.format_name
                retry.reset()  # the server answers: a later outage has a timeout of its own
                for rb in iter_range(
                    q, start, end, chunk=opts.chunk, held_timeout=held_timeout, past_pending=not stream
                ):
                    batch = batch_to_arrow(rb.batch, name)
                    # Every message before ``next_lookup_id`` is in this batch or an earlier one:
                    # a connection lost after it goes on from there (``reconnect``).
                    start = max(start, rb.next_lookup_id)
                    if batch.num_rows:
                        yield batch
                return
        except MSMQError as exc:
            retry.wait_or_raise(exc)


class MsmqBatchReader(DataSourceReader):
    """``spark.read.format("msmq")``: the queue's messages, partitioned by lookup-id ranges."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        """Lookup-id ranges covering what the queue holds now, up to its next lookup id."""
        pos = with_reconnect(self.opts, lambda _, q: queue_position(q, past_pending=True))
        ranges = plan_partitions(pos.first_lookup_id, pos.high_water, self.opts.num_partitions)
        return [RangePartition(a, b) for a, b in ranges] or [RangePartition(0, 0)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's Arrow record batches (runs in an executor)."""
        assert isinstance(partition, RangePartition)
        yield from read_partition(self.opts, partition.start, partition.end)
