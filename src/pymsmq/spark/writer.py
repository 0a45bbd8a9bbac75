"""Batch and streaming write: DataFrame rows become messages, one transaction per partition.

Rows -> messages: ``body`` is required (binary, or a string sent as UTF-8); every other column named
after a settable ``Message`` attribute (``WRITABLE_COLUMNS``) is optional, null meaning the default.
Columns the queue manager assigns (``READ_ONLY_COLUMNS``: ``lookup_id``, ``id``, times, ...) are
ignored, so a DataFrame read from one queue can be written to another as it is; any other column is
an error when the write is planned.

Rows are sent as ``delivery`` says, and its default is MSMQ's: express (kept in the server's memory,
lost when it stops).  Give a ``delivery`` column of 1 (``F.lit(1)``), or write to a transactional
queue, for messages that survive a restart.

Commit protocol.  A Python data source cannot keep an executor's transaction open until the driver's
``commit`` (the driver only receives picklable commit messages), so each task validates its rows as
a send would (the packet's limits included) and returns them as one MESSAGE_BATCH blob (``Staged``);
nothing reaches the queue before the driver's ``commit``.  Into a transactional queue ``commit``
sends every partition's messages in one transaction: a failed task, job or commit leaves nothing
behind (``abort`` has nothing to undo).  Into a non-transactional queue it sends them without one,
partition after partition: a refusal there (a quota) leaves the partitions sent before it.  The
messages pass through the driver: size a write to fit in the driver's memory and
``spark.driver.maxResultSize``.

Exactly-once for streaming writes (``writerId`` option, required): inside the commit's
transaction a marker message per partition is sent to the transactional queue
``.\\private$\\pymsmq_spark_commits`` with the label ``<writerId>|<batchId>|<partition>``.  Before
sending, ``commit`` looks the markers up and skips partitions already committed, so a micro-batch
replayed after a failure is not written twice.  Markers of batches more than ``KEEP_MARKERS`` batches
old are received (removed).  Into a non-transactional queue the messages and then the marker are
sent without a transaction: at-least-once.  The markers belong to the query: two streaming queries
writing to one queue need different ``writerId`` values, and so does a query started again with a
new checkpoint (its batch ids start at 0 again) -- with the same one, their batches are taken for
replays and silently not written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from pymsmq.client.range_read import iter_range, queue_position, read_range
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message, label_units
from pymsmq.model.packet_mapping import check_unencoded
from pymsmq.protocol.message_batch import decode_batch, encode_batch
from pymsmq.spark.options import SourceOptions, open_queue
from pymsmq.spark.reconnect import with_reconnect

__all__ = [
    "KEEP_MARKERS",
    "MARKER_QUEUE",
    "READ_ONLY_COLUMNS",
    "WRITABLE_COLUMNS",
    "MsmqBatchWriter",
    "MsmqStreamWriter",
    "Staged",
    "check_columns",
    "commit_staged",
    "row_to_message",
]

MARKER_QUEUE: Final = ".\\private$\\pymsmq_spark_commits"
KEEP_MARKERS: Final = 16
_ID_UNITS: Final = 249 - 32  # a marker label's room for the writer id (_marker_label)
WRITABLE_COLUMNS: Final = frozenset(
    {
        "body",
        "label",
        "body_type",
        "priority",
        "msg_class",
        "correlation_id",
        "app_specific",
        "extension",
        "response_queue",
        "admin_queue",
        "delivery",
        "journal",
        "ack",
        "trace",
        "max_time_to_reach_queue",
        "max_time_to_receive",
        "priv_level",
        "auth_level",
    }
)
READ_ONLY_COLUMNS: Final = frozenset(
    {
        "queue",
        "lookup_id",
        "id",
        "sent_time",
        "arrived_time",
        "source_machine_guid",
        "destination_queue",
        "destination_format_name",
        "transaction_id",
        "is_first_in_transaction",
        "is_last_in_transaction",
        "abort_count",
        "move_count",
        "last_move_time",
    }
)


def _bad(text: str) -> MSMQError:
    return MSMQError(f"msmq data source: {text}", HResult.MQ_ERROR_INVALID_PARAMETER)


def check_columns(names: list[str]) -> None:
    """``MSMQError`` unless ``names`` has ``body`` and only writable or read-only message columns."""
    if "body" not in names:
        raise _bad("a write needs a body column")
    unknown = [n for n in names if n not in WRITABLE_COLUMNS and n not in READ_ONLY_COLUMNS]
    if unknown:
        raise _bad(f"columns {unknown} are not message properties (writable: {sorted(WRITABLE_COLUMNS)})")


def _binary(name: str, value: Any) -> bytes:
    # A binary column (bytes, or bytearray as PySpark may give it); a string body is sent as UTF-8.
    # Anything else is refused: bytes(42) would be 42 zero bytes, bytes(2**40) a MemoryError.
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if name == "body" and isinstance(value, str):
        return value.encode("utf-8")
    kind = "binary or string" if name == "body" else "binary"
    raise _bad(f"column {name} must be {kind}, not {type(value).__name__} ({value!r:.40})")


def row_to_message(row: Mapping[str, Any]) -> Message:
    """The ``Message`` of one row (``MSMQError`` for a missing body or an invalid value).

    The message is checked as a send checks it, the packet's limits included (a label over 249
    UTF-16 units, a packet over 4 MB): a row the queue manager would refuse fails its task, before
    anything is sent.
    """
    body = row.get("body")
    if body is None:
        raise _bad("a row has a null body")
    kwargs: dict[str, Any] = {"body": _binary("body", body)}
    for name, value in row.items():
        if value is None or name == "body" or name not in WRITABLE_COLUMNS:
            continue
        if name == "correlation_id":
            value = ObjectId.from_bytes(_binary(name, value))
        elif name == "extension":
            value = _binary(name, value)
        kwargs[name] = value
    try:
        m = Message(**kwargs)
    except TypeError as exc:  # a value of the wrong type for its property
        raise _bad(f"a row has a value of the wrong type: {exc}") from None
    # Refused while staged what a send would refuse (the label in UTF-16 units, NULs, the 4 MB).
    check_unencoded(m, len(m.body) + len(m.extension) + 2 * len(m.label), m.__dict__)
    return m


@dataclass
class Staged(WriterCommitMessage):
    """One task's validated messages (a MESSAGE_BATCH blob) and its partition id."""

    partition: int
    count: int
    batch: bytes


def _stage(iterator: Iterator[Any]) -> Staged:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else 0
    messages: list[Message] = []
    for batch in iterator:
        columns = batch.schema.names
        data = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for values in zip(*data, strict=True):
            messages.append(row_to_message(dict(zip(columns, values, strict=True))))
    return Staged(partition, len(messages), encode_batch(messages))


def _marker_label(writer_id: str, batch_id: int, partition: int) -> str:
    # A label holds 249 UTF-16 units (MQ_MAX_MSG_LABEL_LEN); "|batch|partition" takes up to 32.  A
    # longer id goes by its hash: 160 code points as before, or (outside QA, 2026-11-28: 159
    # characters beyond the BMP made a 322-unit label, refused at the first commit) 217 units.
    if len(writer_id) > 160 or label_units(writer_id) > _ID_UNITS:
        writer_id = hashlib.sha256(writer_id.encode()).hexdigest()
    return f"{writer_id}|{batch_id}|{partition}"


def _markers(qm: Any, writer_id: str) -> tuple[Any, dict[str, int]]:
    """The marker queue (created when missing) and ``{label: lookup id}`` of this writer's markers."""
    try:
        mq = qm.queue(MARKER_QUEUE)
    except MSMQError as exc:
        if exc.hresult != HResult.MQ_ERROR_QUEUE_NOT_FOUND:
            raise
        try:
            mq = qm.create_queue(MARKER_QUEUE, transactional=True, label="pymsmq spark commits")
        except MSMQError as exc2:
            if exc2.hresult != HResult.MQ_ERROR_QUEUE_EXISTS:
                raise
            mq = qm.queue(MARKER_QUEUE)
    prefix = _marker_label(writer_id, 0, 0).rsplit("|", 2)[0] + "|"
    found: dict[str, int] = {}
    # Every committed marker, also those past a send still pending (another writer's open commit
    # transaction holds the high water; outside QA: a replayed batch found no marker behind it
    # and was sent twice).
    pos = queue_position(mq)
    end = read_range(mq, 0, 0, max_count=0, no_data=True, past_pending=True).high_water
    for rb in iter_range(mq, pos.first_lookup_id, max(end, pos.high_water), past_pending=True):
        for m in rb.messages():
            if m.label.startswith(prefix):
                found[m.label] = m.lookup_id
    return mq, found


def commit_staged(opts: SourceOptions, staged: list[WriterCommitMessage | None], batch_id: int | None) -> int:
    """Send each partition's staged messages in one transaction; returns the messages sent.

    ``batch_id`` (streaming) makes the commit idempotent through the marker messages.
    """
    parts = sorted((s for s in staged if isinstance(s, Staged) and s.count), key=lambda s: s.partition)
    if not parts:
        return 0
    if batch_id is None:
        with open_queue(opts, send=True) as (qm, q):
            return _commit_on(qm, q, opts, parts, None)
    # A streaming write's commit is tried again when the server is unreachable (a restart: option
    # reconnectTimeout): the markers it looks up first make the new try skip the partitions a
    # lost try committed (into a transactional queue, all of them or none).  A batch write is not:
    # a commit whose answer was lost may have happened, and nothing would tell.
    return with_reconnect(opts, lambda qm, q: _commit_on(qm, q, opts, parts, batch_id), send=True)


def _commit_on(qm: Any, q: Any, opts: SourceOptions, parts: list[Staged], batch_id: int | None) -> int:
    sent = 0
    mq, done = _markers(qm, opts.writer_id) if batch_id is not None else (None, {})
    old = []
    if batch_id is not None:
        for label, lid in done.items():
            bid = label.rsplit("|", 2)[1]
            if bid.isdigit() and int(bid) < batch_id - KEEP_MARKERS:
                old.append(lid)
    todo = []
    for s in parts:
        label = _marker_label(opts.writer_id, batch_id, s.partition) if batch_id is not None else ""
        if not (label and label in done):  # else committed before (a replay)
            todo.append((label, decode_batch(s.batch)))
    if q.transactional:
        # One transaction for the whole write: a refusal (a quota) leaves nothing behind.
        with qm.begin_transaction() as tx:
            for label, messages in todo:
                q.send_many(messages, tx)
                if mq is not None:
                    mq.send(Message(body=b"", label=label), tx)
                sent += len(messages)
            if mq is not None:
                for lid in old:
                    read_range(mq, lid, lid + 1, receive=True, transaction=tx, no_data=True)
    else:
        for label, messages in todo:
            q.send_many(messages)
            if mq is not None:
                with qm.begin_transaction() as tx:
                    mq.send(Message(body=b"", label=label), tx)
                    # Old markers go too (only transactional targets removed them: they piled up).
                    for lid in old:
                        read_range(mq, lid, lid + 1, receive=True, transaction=tx, no_data=True)
                    old = []
            sent += len(messages)
    if mq is not None:
        mq.close()
    return sent


class MsmqBatchWriter(DataSourceArrowWriter):
    """``df.write.format("msmq")``: each task stages its rows, the driver sends them."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> Staged:
        """Validate and stage one partition's rows (executor)."""
        return _stage(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Send every partition's messages, one transaction per partition (driver)."""
        commit_staged(self.opts, messages, None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing was sent before ``commit``: nothing to undo."""


class MsmqStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("msmq")``: exactly-once per micro-batch into transactional queues."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> Staged:
        """Validate and stage one partition's rows (executor)."""
        return _stage(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Send the micro-batch unless its markers say it was sent already (driver)."""
        commit_staged(self.opts, messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing was sent before ``commit``: nothing to undo."""
