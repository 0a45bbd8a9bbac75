"""archive then report on a generated workload (shared SparkSession, real server)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pymsmq
from pymsmq.client import connect
from pymsmq.spark.pipeline import REPORT_STEPS, archive, last_committed_offset, report


def test_archive_then_report(msmq_spark: Any, msmq_server: Any, tmp_path: Path) -> None:
    name = f".\\private$\\arch_{uuid.uuid4().hex[:8]}"
    qm = connect(msmq_server.url)
    try:
        q = qm.create_queue(name)
        q.send_many([pymsmq.Message(body=b"b" * i, label=f"L{i % 3}", msg_class=0) for i in range(30)])
        fmt = q.format_name
        out, ck = str(tmp_path / "archive"), str(tmp_path / "ck")
        first = archive(msmq_spark, msmq_server.url, name, out, ck, max_messages_per_trigger=20)
        assert (first.rows, first.batches) == (30, 2)
        q.send_many([pymsmq.Message(body=b"late", label="L9") for _ in range(5)])
        second = archive(msmq_spark, msmq_server.url, name, out, ck)  # incremental: only the new ones
        assert second.rows == 5
    finally:
        qm.close()
    parts = [p.name for p in Path(out).iterdir() if p.name.startswith("date=")]
    assert parts and all(re.fullmatch(r"date=\d{4}-\d{2}-\d{2}", p) for p in parts)
    df = msmq_spark.read.parquet(out)
    rows = df.select("lookup_id", "label", "body", "queue").collect()
    assert len(rows) == 35 and len({r["lookup_id"] for r in rows}) == 35
    assert sum(1 for r in rows if r["label"] == "L9" and r["body"] == b"late") == 5
    assert {r["queue"] for r in rows} == {fmt}
    steps: list[str] = []
    rep = report(msmq_spark, out, str(tmp_path / "report"), progress=lambda s, n: steps.append(s))
    assert steps == list(REPORT_STEPS)
    assert rep.messages == 35
    assert sum(n for _, _, n in rep.volume) == 35
    assert dict(rep.top_labels)["L9"] == 5 and dict(rep.top_labels)["L0"] == 10
    assert rep.latency and rep.latency[0][0] == fmt and rep.latency[0][4] == 35
    assert rep.dead_letters == []  # no dead-letter queue archived
    page = (tmp_path / "report" / "index.html").read_text()
    images = re.findall(r'<img src="([^"]+)"', page)
    assert sorted(images) == sorted(rep.images)
    for img in images:
        data = (tmp_path / "report" / img).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000


def test_archive_in_receive_mode_leaves_nothing_it_archived(
    msmq_spark: Any, msmq_server: Any, tmp_path: Path
) -> None:
    # Spark tells the source a batch is written when it plans the next: the last micro-batch of a
    # run stayed in the queue until the next run.  The job removes it once the run is over.
    name = f".\\private$\\archrecv_{uuid.uuid4().hex[:8]}"
    qm = connect(msmq_server.url)
    try:
        q = qm.create_queue(name, transactional=True)
        with qm.begin_transaction() as tx:
            q.send_many([pymsmq.Message(body=b"r%d" % i) for i in range(25)], tx)
        out, ck = str(tmp_path / "archive"), str(tmp_path / "ck")
        first = archive(
            msmq_spark, msmq_server.url, name, out, ck, mode="receive", max_messages_per_trigger=10
        )
        assert (first.rows, first.batches) == (25, 3)
        assert q.message_count == 0  # the last batch's 5 too
        offset = last_committed_offset(ck)
        assert offset is not None and offset["lookup_id"] > 0
        with qm.begin_transaction() as tx:
            q.send_many([pymsmq.Message(body=b"late") for _ in range(4)], tx)
        second = archive(msmq_spark, msmq_server.url, name, out, ck, mode="receive")
        assert second.rows == 4 and q.message_count == 0
        assert archive(msmq_spark, msmq_server.url, name, out, ck, mode="receive").rows == 0
    finally:
        qm.close()
    bodies = sorted(r["body"] for r in msmq_spark.read.parquet(out).select("body").collect())
    assert bodies == sorted([b"r%d" % i for i in range(25)] + [b"late"] * 4)  # each once
    assert last_committed_offset(str(tmp_path / "nothing")) is None
    assert last_committed_offset("s3a://bucket/ck") is None
