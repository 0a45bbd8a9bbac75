"""Streaming read of a queue: lookup-id offsets, admission control, peek or receive-on-commit.

Offsets are JSON dicts ``{"lookup_id": L, "origin": O}``: the micro-batch ``[start, end)`` holds the
messages with ``start.lookup_id <= lookup_id < end.lookup_id``.  ``origin`` is where the stream
started (it never changes), so that ``mode=receive`` knows which messages belong to it.

- ``latestOffset(start, limit)`` asks the server where the queue is settled from ``start`` (one
  READ_RANGE with no data and ``UNTIL_HELD``; nothing is sent back): the lowest of the high water (a
  send being written or committed holds it; an open transaction's do not, as their messages take
  their lookup ids at its commit, after every one there) and the first message at or after ``start``
  that a receive holds and may give back (another consumer's open transaction, or its two-phase
  receive not yet acknowledged). So a batch never ends past a message that may still appear there,
  and the stream waits at a held message until its holder commits (the message is gone) or aborts
  (the stream delivers it). With ``maxMessagesPerTrigger`` the server counts that many visible
  messages from ``start`` (again without sending them) and the batch ends after the last of them.
  ``Trigger.AvailableNow`` freezes the end of the run once (a held message ends the run early).
- ``read`` peeks at the partition's range, so a failed or retried batch reads the same messages
  again.  A message of the range that a receive took between ``latestOffset`` and the read is waited
  for (up to ``heldTimeout`` seconds, then the task fails with MQ_ERROR_IO_TIMEOUT), so the batch
  holds it if it comes back.
- ``commit(end)`` (called by Spark once the batch is durably processed): with ``mode=receive`` it
  receives every message of the batch's range ``[from, end)`` still in the queue, inside one
  transaction on a transactional queue (one durable delete otherwise).  A batch that fails is never
  committed, so its messages stay and the replay reads them again: no loss and no duplicate
  consumption.  Spark calls ``commit`` when it plans a next batch with data; ``latestOffset(start)``
  commits the batch that ended at ``start`` itself (Spark asks for it once that batch is in its
  commit log), so the last batch's messages leave the queue at the next trigger, not when new
  messages arrive.  Every message
  it removes was read by a batch: a message held while its batch was read was waited for.  A
  message moved into the queue from a subqueue keeps its lookup id: behind the stream's position it
  is not delivered and stays in the queue; moved into a batch's range after the batch was planned,
  less ``maxClockSkew``, it is left by the commit (``RangeFlags.MOVED_BEFORE``), delivered or not:
  such a message stays in the queue for another reader.  Against a server older than the flag
  (it ignores it) such a message is removed, as the first commit of a checkpoint written before
  ``from`` existed removes ``[origin, end)``.  A commit that fails (the server unreachable) leaves
  its batch's messages in the queue, already delivered.

Another consumer of the same queue still takes messages for itself: a message it receives and
commits before a batch reads it is not in the stream, and one it receives after the batch read it is
in both.  Let one reader own a queue that a ``mode=receive`` stream consumes.  Against a server that
does not know ``UNTIL_HELD`` (pymsmq before it; the bit is reserved and ignored) a held message is
skipped as before.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow

from pymsmq.client.range_read import queue_position, read_range
from pymsmq.spark.options import SourceOptions
from pymsmq.spark.reader import RangePartition, plan_partitions, read_partition
from pymsmq.spark.reconnect import with_reconnect

__all__ = ["MsmqStreamReader", "admitted_end", "receive_committed", "settled_from"]


def settled_from(q: Any, start: int) -> int:
    """The lookup id up to which the queue is settled from ``start``: its high water, or the first
    held message at or after ``start`` if lower (``RangeFlags.UNTIL_HELD``)."""
    return read_range(q, start, 0, max_count=0, no_data=True, until_held=True).high_water


def admitted_end(q: Any, start: int, high: int, max_messages: int | None) -> int:
    """The end of the next batch from ``start``: ``high`` (where the queue is settled from
    ``start``: ``settled_from``, which ``latestOffset`` has just asked), or just after
    ``max_messages`` messages, never past a message held at the time of asking (``until_held``)."""
    if high <= start:
        return start
    if max_messages is None:
        return high
    rb = read_range(q, start, high, max_count=max_messages, no_data=True, until_held=True)
    return rb.next_lookup_id


def receive_committed(q: Any, qm: Any, origin: int, end: int, moved_before: int | None = None) -> int:
    """Receive every message of ``[origin, end)`` (one transaction on a transactional queue) but
    those moved into the queue from a subqueue at ``moved_before`` (POSIX seconds) or later."""
    if end <= origin:
        return 0

    def receive_all(tx: Any) -> int:
        total = 0
        a = origin
        while True:
            rb = read_range(q, a, end, receive=True, transaction=tx, no_data=True, moved_before=moved_before)
            total += rb.count
            if not rb.more:
                return total
            a = rb.next_lookup_id

    if q.transactional:
        with qm.begin_transaction() as tx:
            return receive_all(tx)
    return receive_all(None)


class MsmqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("msmq")``."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._target: int | None = None  # the frozen high water of Trigger.AvailableNow
        self._origin: int | None = None
        self._committed: dict[str, int] | None = None  # the last end ``latestOffset`` committed

    def _position(self) -> tuple[int, int]:
        pos = with_reconnect(self.opts, lambda _, q: queue_position(q))
        return pos.first_lookup_id, pos.high_water

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - the PySpark name
        """Where a new query starts: ``startingLookupId`` (earliest, latest or an id)."""
        if self._origin is None:
            first, high = self._position()
            start = self.opts.starting_lookup_id
            self._origin = first if start == "earliest" else high if start == "latest" else int(start)
        return {"lookup_id": self._origin, "origin": self._origin}

    def getDefaultReadLimit(self) -> Any:  # noqa: N802 - the PySpark name
        """``ReadMaxRows(maxMessagesPerTrigger)`` when the option is set."""
        from pyspark.sql.streaming.datasource import ReadAllAvailable

        n = self.opts.max_messages_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - the PySpark name
        """Freeze the end of an AvailableNow run at the current high water."""
        self._target = self._position()[1]

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:  # noqa: N802
        """The end of the next micro-batch (admission control by ``limit``).

        In receive mode, first the batch that ended at ``start`` is committed (``commit``): Spark
        asks for the next batch's end only once the previous batch is in its commit log, but calls
        the source's ``commit`` only when a next batch has data, so the last batch's messages
        stayed in the queue as long as no new message came (outside QA, 2026-11-28).  Spark's own
        ``commit`` of it later finds nothing left to remove.
        """
        if self.opts.mode == "receive" and "from" in start and start != self._committed:
            self.commit(start)
            self._committed = dict(start)
        a = start["lookup_id"]
        n = limit.max_rows if isinstance(limit, ReadMaxRows) else None

        def next_end(_: Any, q: Any) -> int:
            high = settled_from(q, a)
            if self._target is not None:
                high = min(high, self._target)
            return admitted_end(q, a, high, n)

        end = with_reconnect(self.opts, next_end)
        if end <= a:
            return start  # (no new data: the same offset, so Spark plans no batch)
        # ``from``: the batch's start, the lowest lookup id its commit removes; ``planned``: when
        # (the commit leaves messages moved into the queue since; see ``commit``).
        return {"lookup_id": end, "origin": start.get("origin", a), "from": a, "planned": int(time.time())}

    def reportLatestOffset(self) -> dict[str, int] | None:  # noqa: N802 - the PySpark name
        """The queue's high water (for the query progress only)."""
        return {"lookup_id": self._position()[1]}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        """The batch's lookup ids cut into ``numPartitions`` ranges."""
        ranges = plan_partitions(start["lookup_id"], end["lookup_id"], self.opts.num_partitions)
        return [RangePartition(a, b) for a, b in ranges]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Arrow batches of the partition's messages (peek: replayable)."""
        assert isinstance(partition, RangePartition)
        yield from read_partition(self.opts, partition.start, partition.end, self.opts.held_timeout)

    def commit(self, end: dict[str, int]) -> None:
        """Spark processed the batch that ends at ``end``: in receive mode, remove its messages,
        those of ``[from, end)`` (its own range) still in the queue.

        Not from the stream's origin: a message moved back into the queue from a subqueue keeps its
        lookup id, behind the stream's position, and a commit from the origin removed it unread
        (outside QA, 2026-11-28; the retry pattern of docs/api.md "Poison messages").  Nor one
        moved into the batch's range after the batch was planned (``maxClockSkew`` before, for the
        clocks): the batch may not have read it (``RangeFlags.MOVED_BEFORE``).  An offset written
        before ``from`` existed (an older checkpoint) is committed from its origin."""
        if self.opts.mode != "receive":
            return
        planned = end.get("planned")
        moved_before = None if planned is None else max(0, int(planned - self.opts.max_clock_skew))
        origin = end.get("from", end.get("origin", 0))
        with_reconnect(
            self.opts, lambda qm, q: receive_committed(q, qm, origin, end["lookup_id"], moved_before)
        )
