"""The ``msmq`` PySpark data source: queues as DataFrames, batch and streaming, read and write.

    import pymsmq.spark
    pymsmq.spark.register(spark)
    df = spark.read.format("msmq").option("url", "msmq://127.0.0.1:2103").load(".\\private$\\orders")
    q = (spark.readStream.format("msmq").option("url", url).option("queue", name)
         .option("mode", "receive").option("maxMessagesPerTrigger", 10_000).load())
    df.write.format("msmq").option("url", url).option("queue", target).mode("append").save()

Options: ``pymsmq.spark.options``.  Columns (``MESSAGE_COLUMNS``): the ``Message`` attribute names
(``lookup_id``, ``id``, ``label``, ``body``, ``priority``, ``msg_class``, ``sent_time``, ...) plus
``queue``.  Batch reads: ``pymsmq.spark.reader``; streaming reads: ``pymsmq.spark.stream``; writes:
``pymsmq.spark.writer``.  Spark evaluates every filter itself (``pymsmq.spark.reader`` says why none
is pushed down).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.spark.message_arrow import SPARK_SCHEMA
from pymsmq.spark.options import SourceOptions
from pymsmq.spark.reader import MsmqBatchReader
from pymsmq.spark.reconnect import with_reconnect
from pymsmq.spark.stream import MsmqStreamReader
from pymsmq.spark.writer import MsmqBatchWriter, MsmqStreamWriter, check_columns

__all__ = ["MsmqDataSource", "register"]


class MsmqDataSource(DataSource):
    """The data source class registered under the short name ``msmq``."""

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("msmq")``."""
        return "msmq"

    def schema(self) -> str:
        """One column per message property (DDL)."""
        return SPARK_SCHEMA

    def _opts(self) -> SourceOptions:
        return SourceOptions.parse(dict(self.options))

    def reader(self, schema: Any) -> MsmqBatchReader:
        """Batch read (peek) of the queue."""
        _check_schema(schema)
        opts = self._opts()
        if opts.mode == "receive":
            # (It peeked and said nothing: the queue was left as it was, outside QA 2026-11-28.)
            raise MSMQError(
                "msmq data source: a batch read peeks; mode=receive is for streaming reads "
                "(spark.readStream), which remove what their committed batches read",
                HResult.MQ_ERROR_INVALID_PARAMETER,
            )
        return MsmqBatchReader(opts)

    def streamReader(self, schema: Any) -> MsmqStreamReader:  # noqa: N802 - the PySpark name
        """Streaming read (peek or receive-on-commit) of a queue, a journal or a system queue."""
        _check_schema(schema)
        opts = self._opts()
        subqueue = with_reconnect(opts, lambda _, q: q.subqueue_name)
        if subqueue:
            # Messages come into a subqueue only by moves, which keep the lookup id they had in the
            # queue: behind the stream's position, none was ever delivered (outside QA, 2026-11-28).
            raise MSMQError(
                f"msmq data source: a stream cannot follow the subqueue {subqueue!r}: a message moved "
                "into it keeps its lookup id, behind the stream's position; read a subqueue with "
                "spark.read (a batch read), or move its messages back to the queue",
                HResult.MQ_ERROR_INVALID_PARAMETER,
            )
        return MsmqStreamReader(opts)

    def writer(self, schema: Any, overwrite: bool) -> MsmqBatchWriter:
        """Batch write (append; ``overwrite`` is refused: queues are not truncated by a write)."""
        if overwrite:
            raise ValueError("msmq data source: only mode('append') is supported")
        check_columns(list(schema.names))
        return MsmqBatchWriter(self._opts())

    def streamWriter(self, schema: Any, overwrite: bool) -> MsmqStreamWriter:  # noqa: N802
        """Streaming write, idempotent per micro-batch (needs ``writerId``: ``pymsmq.spark.writer``)."""
        check_columns(list(schema.names))
        if not any(key.lower() == "writerid" and value for key, value in self.options.items()):
            # Its exactly-once markers are the query's own: a shared or reused name (the queue's,
            # as the default was) made another query's batches look written, and they were dropped.
            raise MSMQError(
                "msmq data source: a streaming write needs option writerId, a name of this query "
                "alone (a new checkpoint needs a new one)",
                HResult.MQ_ERROR_INVALID_PARAMETER,
            )
        return MsmqStreamWriter(self._opts())


def _check_schema(schema: Any) -> None:
    # A schema given with ``.schema(...)`` must be the source's own: the reader makes its columns,
    # and another one failed late, in a worker, with DATA_SOURCE_RETURN_SCHEMA_MISMATCH.
    # (Names and types: the same names with other types failed the same way, outside QA 2026-11-28.)
    fields = getattr(schema, "fields", None)
    if fields is None:
        return
    given = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in fields)
    if given != SPARK_SCHEMA:
        raise MSMQError(
            "msmq data source: the schema is the source's own (leave .schema() out and select "
            f"the columns you need); got {given!r}",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )


def register(spark: Any) -> None:
    """Register the ``msmq`` source with ``spark``."""
    spark.dataSource.register(MsmqDataSource)
