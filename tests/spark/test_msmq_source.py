"""The ``msmq`` data source on the shared SparkSession against a real ``pymsmq serve`` subprocess."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import pymsmq
from pymsmq.client import connect
from pymsmq.client.range_read import read_range
from pymsmq.model.ids import ObjectId
from pymsmq.spark.message_arrow import MESSAGE_COLUMNS
from pymsmq.spark.writer import MARKER_QUEUE


def _name(prefix: str) -> str:
    return f".\\private$\\{prefix}_{uuid.uuid4().hex[:8]}"


def _messages(n: int) -> list[pymsmq.Message]:
    out = []
    for i in range(n):
        out.append(
            pymsmq.Message(
                body=bytes([i % 256]) * (i % 50),
                label=f"label {i % 7}",
                priority=i % 8,
                msg_class=i % 3,
                app_specific=i,
                body_type=i % 4,
                correlation_id=ObjectId(uuid.UUID(int=i + 1), i) if i % 2 else None,
                response_queue="DIRECT=OS:host\\private$\\replies" if i % 5 == 0 else None,
                extension=b"ext" if i % 9 == 0 else b"",
            )
        )
    return out


def _fill(url: str, name: str, n: int, transactional: bool = False) -> list[pymsmq.Message]:
    qm = connect(url)
    try:
        q = qm.create_queue(name, transactional=transactional)
        batch = _messages(n)
        if transactional:
            with qm.begin_transaction() as tx:
                q.send_many(batch, tx)
        else:
            q.send_many(batch)
        return read_range(q).messages()  # what the queue holds, with its facts
    finally:
        qm.close()


def _count(url: str, name: str) -> int:
    qm = connect(url)
    try:
        q = qm.queue(name)
        return sum(1 for _ in read_range(q, max_count=10**9, max_bytes=1 << 30).messages())
    finally:
        qm.close()


def _labels(url: str, name: str) -> list[str]:
    qm = connect(url)
    try:
        return [m.label for m in read_range(qm.queue(name), max_bytes=1 << 30).messages()]
    finally:
        qm.close()


def _ts(t: float | None) -> dt.datetime | None:
    return None if t is None else dt.datetime.fromtimestamp(round(t * 1e6) / 1e6, dt.UTC).replace(tzinfo=None)


def test_batch_read_every_column(msmq_spark: Any, msmq_server: Any) -> None:
    name = _name("read")
    stored = _fill(msmq_server.url, name, 60)
    df = msmq_spark.read.format("msmq").option("url", msmq_server.url).option("queue", name).load()
    assert df.columns == [c for c, _ in MESSAGE_COLUMNS]
    rows = sorted(df.collect(), key=lambda r: r["lookup_id"])
    assert len(rows) == 60
    for row, m in zip(rows, stored, strict=True):
        assert row["lookup_id"] == m.lookup_id
        assert row["id"] == bytes(m.id)
        assert row["label"] == m.label and row["body"] == m.body and row["extension"] == m.extension
        assert (row["priority"], row["msg_class"], row["app_specific"], row["body_type"]) == (
            m.priority,
            m.msg_class,
            m.app_specific,
            m.body_type,
        )
        assert row["correlation_id"] == (None if m.correlation_id is None else bytes(m.correlation_id))
        assert row["response_queue"] == m.response_queue and row["admin_queue"] is None
        assert row["sent_time"] == _ts(m.sent_time) and row["arrived_time"] == _ts(m.arrived_time)
        assert row["source_machine_guid"] == str(m.source_machine_guid)
        assert row["destination_queue"] == m.destination_queue
        assert row["destination_format_name"] is None  # sent to one queue
        assert row["transaction_id"] is None and row["is_first_in_transaction"] is False
        assert row["max_time_to_receive"] == 0xFFFFFFFF and row["delivery"] == 0
        assert row["queue"] == m.destination_queue  # the handle's format name
    assert _count(msmq_server.url, name) == 60  # a batch read only peeks


def test_batch_read_filters_are_exact_on_a_reused_dataframe(msmq_spark: Any, msmq_server: Any) -> None:
    # One DataFrame for every query (a fresh one hid the bug): PySpark 4.3 keeps the read plan a
    # pushdown made for the DataFrame and uses it for its later queries, so a filter one query
    # pushed narrowed the next one (df.count() after df.where(...).count() gave the filtered count).
    # Nothing is pushed now: Spark evaluates every filter.
    name = _name("filters")
    stored = _fill(msmq_server.url, name, 200)
    df = msmq_spark.read.format("msmq").option("url", msmq_server.url).option("numPartitions", 3).load(name)
    lo = stored[50].lookup_id
    mid_time = stored[100].arrived_time
    assert mid_time is not None
    cases = {
        f"lookup_id >= {lo} AND lookup_id < {lo + 20}": lambda m: lo <= m.lookup_id < lo + 20,
        "priority IN (1, 6) AND msg_class = 2": lambda m: m.priority in (1, 6) and m.msg_class == 2,
        "priority > 5 OR app_specific = 3": lambda m: m.priority > 5 or m.app_specific == 3,
        f"lookup_id = {lo + 3}": lambda m: m.lookup_id == lo + 3,
        "app_specific <= 10 AND body_type > 1": lambda m: m.app_specific <= 10 and m.body_type > 1,
    }
    for where, keep in cases.items():
        got = sorted(r["lookup_id"] for r in df.where(where).select("lookup_id").collect())
        assert got == [m.lookup_id for m in stored if keep(m)], where
        assert df.count() == 200, where
    t = dt.datetime.fromtimestamp(mid_time, dt.UTC).replace(tzinfo=None)
    got_t = df.where(df.arrived_time >= t).select("lookup_id").collect()
    assert sorted(r["lookup_id"] for r in got_t) == [
        m.lookup_id
        for m in stored
        if m.arrived_time is not None and _ts(m.arrived_time) >= t  # type: ignore[operator]
    ]
    # A self-join with a filter on one side only: each side keeps its own rows.
    one = [m for m in stored if m.priority == 1]
    joined = df.where("priority = 1").alias("a").join(df.alias("b"), "lookup_id")
    assert joined.count() == len(one)
    assert len(df.collect()) == 200


def _stream(spark: Any, url: str, name: str, mode: str, per_trigger: int) -> Any:
    return (
        spark.readStream.format("msmq")
        .option("url", url)
        .option("queue", name)
        .option("mode", mode)
        .option("maxMessagesPerTrigger", per_trigger)
        .load()
    )


def test_streaming_peek_admission_control(msmq_spark: Any, msmq_server: Any, tmp_path: Path) -> None:
    name = _name("peek")
    stored = _fill(msmq_server.url, name, 250)
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")
    q = (
        _stream(msmq_spark, msmq_server.url, name, "peek", 100)
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", ck)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sizes == [100, 100, 50]
    ids = [r["lookup_id"] for r in msmq_spark.read.parquet(out).select("lookup_id").collect()]
    assert sorted(ids) == [m.lookup_id for m in stored]
    assert _count(msmq_server.url, name) == 250  # peek leaves the messages
    # More messages arrive; the next run on the same checkpoint reads only those.
    _send_more(msmq_server.url, name, 30)
    q2 = (
        _stream(msmq_spark, msmq_server.url, name, "peek", 100)
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", ck)
        .trigger(availableNow=True)
        .start()
    )
    q2.awaitTermination()
    ids = [r["lookup_id"] for r in msmq_spark.read.parquet(out).select("lookup_id").collect()]
    assert len(ids) == 280 and len(set(ids)) == 280


def _send_more(url: str, name: str, n: int, transactional: bool = False) -> None:
    qm = connect(url)
    try:
        q = qm.queue(name)
        batch = [pymsmq.Message(body=b"more", label=f"more {i}") for i in range(n)]
        if transactional:
            with qm.begin_transaction() as tx:
                q.send_many(batch, tx)
        else:
            q.send_many(batch)
    finally:
        qm.close()


def test_streaming_receive_failed_batch_is_replayed(
    msmq_spark: Any, msmq_server: Any, tmp_path: Path
) -> None:
    name = _name("receive")
    stored = _fill(msmq_server.url, name, 90, transactional=True)
    out = tmp_path / "out"
    flag = tmp_path / "fail-batch-1"
    flag.touch()

    def sink(df: Any, batch_id: int) -> None:
        if batch_id == 1 and flag.exists():
            raise RuntimeError("injected failure in batch 1")
        # Idempotent per batch id: a replayed batch overwrites its own directory.
        df.select("lookup_id", "label").write.mode("overwrite").parquet(str(out / f"batch={batch_id}"))

    def run() -> Any:
        return (
            _stream(msmq_spark, msmq_server.url, name, "receive", 40)
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )

    q = run()
    with pytest.raises(Exception, match="injected failure"):
        q.awaitTermination()
    # Batch 0 (40 messages) succeeded and was consumed when batch 1 was planned; batch 1 failed, so
    # its 40 messages and the 10 after it are all still there.
    assert _count(msmq_server.url, name) == 50
    flag.unlink()
    run().awaitTermination()
    ids = [r["lookup_id"] for r in msmq_spark.read.parquet(str(out)).select("lookup_id").collect()]
    assert sorted(ids) == [m.lookup_id for m in stored]  # no loss, no duplicate
    # Spark commits the source when a next batch has data; the source commits the last batch itself
    # when Spark asks for the next one (here at the end of the AvailableNow run): nothing is left.
    # (It was left as long as no new message came: 10 here, outside QA 2026-11-28.)
    assert _count(msmq_server.url, name) == 0
    _send_more(msmq_server.url, name, 5, transactional=True)
    run().awaitTermination()
    assert _count(msmq_server.url, name) == 0
    ids = [r["lookup_id"] for r in msmq_spark.read.parquet(str(out)).select("lookup_id").collect()]
    assert len(ids) == 95 and len(set(ids)) == 95


def test_a_streaming_receive_rides_out_a_server_crash(
    msmq_spark: Any, own_msmq_server: Any, tmp_path: Path
) -> None:
    # The server is SIGKILLed while a batch is read and started again a second later: the query
    # goes on (option reconnectTimeout) and delivers every message once (outside QA 2026-11-28:
    # a server restart failed the query).
    server = own_msmq_server
    name = _name("crash")
    stored = _fill(server.url, name, 300, transactional=True)
    out = tmp_path / "out"
    restarts: list[threading.Thread] = []

    def sink(df: Any, batch_id: int) -> None:
        if batch_id == 1:
            server.kill()
            restarts.append(threading.Thread(target=lambda: (time.sleep(1.0), server.start())))
            restarts[0].start()
        df.select("lookup_id", "label").write.mode("overwrite").parquet(str(out / f"batch={batch_id}"))

    q = (
        _stream(msmq_spark, server.url, name, "receive", 100)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    restarts[0].join()
    ids = [r["lookup_id"] for r in msmq_spark.read.parquet(str(out)).select("lookup_id").collect()]
    assert sorted(ids) == [m.lookup_id for m in stored]  # no loss, no duplicate
    assert _count(server.url, name) == 0


def test_batch_write_partition_failure_leaves_nothing(msmq_spark: Any, msmq_server: Any) -> None:
    name = _name("write")
    _fill(msmq_server.url, name, 0, transactional=True)
    rows = [(f"body {i}".encode(), f"w{i}", i % 8, i) for i in range(40)]
    bad = [*rows[:30], (b"x", "bad", 9, 30), *rows[31:]]  # priority 9 is invalid: one task fails
    schema = "body binary, label string, priority int, app_specific long"
    writer = (
        msmq_spark.createDataFrame(bad, schema)
        .repartition(2)
        .write.format("msmq")
        .option("url", msmq_server.url)
        .option("queue", name)
        .mode("append")
    )
    with pytest.raises(Exception, match=r"priority|ILLEGAL|invalid"):
        writer.save()
    assert _count(msmq_server.url, name) == 0  # no partition's transaction was committed
    (
        msmq_spark.createDataFrame(rows, schema)
        .repartition(2)
        .write.format("msmq")
        .option("url", msmq_server.url)
        .option("queue", name)
        .mode("append")
        .save()
    )
    assert sorted(_labels(msmq_server.url, name)) == sorted(f"w{i}" for i in range(40))
    with pytest.raises(Exception, match="not message properties"):
        msmq_spark.createDataFrame([(b"x", 1)], "body binary, colour int").write.format("msmq").option(
            "url", msmq_server.url
        ).option("queue", name).mode("append").save()


def test_a_streaming_write_needs_its_own_writer_id(msmq_spark: Any, msmq_server: Any, tmp_path: Path) -> None:
    # The markers were keyed on the queue by default: a second query into the same queue (or one
    # started again with a new checkpoint) had its batches taken for replays and dropped.
    source, target = _name("wid_src"), _name("wid_dst")
    _fill(msmq_server.url, source, 3)
    qm = connect(msmq_server.url)
    try:
        qm.create_queue(target, transactional=True)
    finally:
        qm.close()
    with pytest.raises(Exception, match="needs option writerId"):
        query = (
            _stream(msmq_spark, msmq_server.url, source, "peek", 10)
            .select("body")
            .writeStream.format("msmq")
            .option("url", msmq_server.url)
            .option("queue", target)
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
    assert _count(msmq_server.url, target) == 0


def test_streaming_write_exactly_once(msmq_spark: Any, msmq_server: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as sf
    from pyspark.sql.types import StringType

    source, target = _name("src"), _name("dst")
    _fill(msmq_server.url, source, 60)
    _fill(msmq_server.url, target, 0, transactional=True)
    flag = tmp_path / "fail"
    flag_path = str(flag)
    flag.touch()

    @sf.udf(StringType())
    def check(label: str) -> str:
        if label == "label 3" and os.path.exists(flag_path):
            raise RuntimeError("injected task failure")
        return label

    def run() -> Any:
        return (
            _stream(msmq_spark, msmq_server.url, source, "peek", 25)
            .select("body", sf.col("priority"), check("label").alias("label"))
            .writeStream.format("msmq")
            .option("url", msmq_server.url)
            .option("queue", target)
            .option("writerId", "test-writer")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )

    q = run()
    with pytest.raises(Exception, match="injected task failure"):
        q.awaitTermination()
    assert _count(msmq_server.url, target) == 0  # the failed batch left no partial transaction
    flag.unlink()
    run().awaitTermination()
    assert _count(msmq_server.url, target) == 60
    # Forget that the last batch was committed: the restart replays it, the markers make it a no-op.
    commits = sorted((tmp_path / "ck" / "commits").iterdir(), key=lambda p: p.name)
    last = [p for p in commits if p.name.isdigit()][-1]
    last.unlink()
    for crc in (tmp_path / "ck" / "commits").glob(f".{last.name}.crc"):
        crc.unlink()
    run().awaitTermination()
    assert _count(msmq_server.url, target) == 60
    qm = connect(msmq_server.url)
    try:
        labels = [m.label for m in read_range(qm.queue(MARKER_QUEUE)).messages()]
    finally:
        qm.close()
    assert any(lbl.startswith("test-writer|") for lbl in labels)


def test_a_batch_write_to_a_multiple_element_name_puts_every_row_in_each_queue(
    msmq_spark: Any, msmq_server: Any
) -> None:
    # [MS-MQMQ] 2.1.7: the queue option may name several queues; each row goes to every one of them
    # (one id a row), whose destination_format_name column is the list (PROPID_M_DEST_FORMAT_NAME),
    # and a read of such a name is refused (only sends may use it).
    a, b = _name("fan"), _name("fan")
    _fill(msmq_server.url, a, 0)
    _fill(msmq_server.url, b, 0)
    qm = connect(msmq_server.url)
    both = f"{qm.format_name(a)},{qm.format_name(b)}"
    qm.close()
    rows = [(f"body {i}".encode(), f"r{i}") for i in range(20)]
    (
        msmq_spark.createDataFrame(rows, "body binary, label string")
        .repartition(2)
        .write.format("msmq")
        .option("url", msmq_server.url)
        .option("queue", both)
        .mode("append")
        .save()
    )
    for name in (a, b):
        assert sorted(_labels(msmq_server.url, name)) == sorted(f"r{i}" for i in range(20))
    got = msmq_spark.read.format("msmq").option("url", msmq_server.url).option("queue", a).load()
    with connect(msmq_server.url) as qm:
        received = qm.queue(b).receive(timeout=0)
    assert received.destination_format_name is not None
    read = got.collect()
    assert {r.destination_queue for r in read} == {both.split(",")[0]}
    assert {r.destination_format_name for r in read} == {received.destination_format_name}
    assert {r.id for r in read} >= {bytes(received.id)}  # every row's copies share one id
    # A DataFrame read from a queue writes back: the column is read-only (not sent).
    c = _name("fan")
    _fill(msmq_server.url, c, 0)
    got.write.format("msmq").option("url", msmq_server.url).option("queue", c).mode("append").save()
    with connect(msmq_server.url) as qm:
        again = qm.queue(c).receive_many(100, timeout=0)
    assert len(again) == 20 and {m.destination_format_name for m in again} == {None}
    with pytest.raises(Exception, match="only sends may use it"):
        msmq_spark.read.format("msmq").option("url", msmq_server.url).option("queue", both).load().collect()
