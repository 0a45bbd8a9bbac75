"""Pipeline jobs: archive a queue to Parquet, report on an archive (HTML page with PNG plots).

``archive`` streams a queue (a journal, a dead-letter queue, any queue) through the ``msmq`` source
into Parquet partitioned by ``date`` (the arrival date, UTC), with ``Trigger.AvailableNow``: each run
archives what arrived since the previous run, because the streaming checkpoint remembers the lookup
id it reached.  ``mode="receive"`` also removes archived messages from the queue (on Spark's commit).

``report`` reads an archive and writes ``index.html`` plus PNG plots (matplotlib, Agg backend):
volume per queue and hour, sent-to-arrived latency percentiles per queue, dead letters by class
(messages archived from ``;DEADLETTER`` / ``;DEADXACT`` queues, grouped by ``msg_class``) and the top
labels.  ``progress(step, total)`` is called after each step (the CLI draws a progress bar with it).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

__all__ = ["REPORT_STEPS", "ArchiveResult", "Report", "archive", "last_committed_offset", "report"]

REPORT_STEPS = ("load", "volume", "latency", "dead letters", "labels", "page")


@dataclass(frozen=True, slots=True)
class ArchiveResult:
    """What one ``archive`` run did."""

    rows: int
    batches: int
    output: str


@dataclass(slots=True)
class Report:
    """The report's numbers (also rendered into the HTML page) and the files written."""

    messages: int = 0
    volume: list[tuple[str, str, int]] = field(default_factory=list)  # queue, hour, count
    latency: list[tuple[str, float, float, float, int]] = field(default_factory=list)  # p50, p90, p99
    dead_letters: list[tuple[int, int]] = field(default_factory=list)  # msg_class, count
    top_labels: list[tuple[str, int]] = field(default_factory=list)
    html: str = ""
    images: list[str] = field(default_factory=list)


def archive(
    spark: Any,
    url: str,
    queue: str,
    output: str,
    checkpoint: str,
    *,
    token: str = "",
    mode: str = "peek",
    max_messages_per_trigger: int | None = None,
) -> ArchiveResult:
    """Archive ``queue`` into Parquet under ``output`` (incremental through ``checkpoint``)."""
    from pyspark.sql import functions as sf

    from pymsmq.spark.datasource import register

    register(spark)
    reader = spark.readStream.format("msmq").option("url", url).option("queue", queue).option("mode", mode)
    if token:
        reader = reader.option("token", token)
    if max_messages_per_trigger:
        reader = reader.option("maxMessagesPerTrigger", str(max_messages_per_trigger))
    df = reader.load().withColumn("date", sf.to_date(sf.coalesce("arrived_time", "sent_time")))
    query = (
        df.writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .partitionBy("date")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if mode == "receive":
        _receive_last_batch(url, queue, token, checkpoint)
    progress = query.recentProgress
    rows = sum(
        int(p.get("numInputRows", 0)) if isinstance(p, dict) else int(p.numInputRows) for p in progress
    )
    batches = sum(
        1 for p in progress if (p.get("numInputRows", 0) if isinstance(p, dict) else p.numInputRows) > 0
    )
    return ArchiveResult(rows, batches, output)


def _receive_last_batch(url: str, queue: str, token: str, checkpoint: str) -> None:
    # Spark tells a source that a batch is written (``commit``) when it plans the next one, so the
    # last micro-batch of a run stayed in the queue until the next run (a queue drained by
    # ``archive --mode receive`` kept its newest messages).  The run is over and its last batch is
    # in the commit log: the source's own ``commit`` of it now, as the next run would have done
    # (idempotent).
    end = last_committed_offset(checkpoint)
    if end is None:
        return
    from pymsmq.spark.options import SourceOptions
    from pymsmq.spark.stream import MsmqStreamReader

    opts = SourceOptions.parse({"url": url, "queue": queue, "token": token, "mode": "receive"})
    MsmqStreamReader(opts).commit(end)


def last_committed_offset(checkpoint: str) -> dict[str, int] | None:
    """The ``msmq`` source's offset at the end of the last batch Spark committed (``offsets/N`` of
    a checkpoint, N the highest batch in ``commits/``), or None: no batch committed, or a checkpoint
    that is not a local directory."""
    parsed = urlparse(checkpoint)
    if parsed.scheme not in ("", "file"):
        return None
    root = Path(parsed.path if parsed.scheme else checkpoint)
    try:
        batches = [int(p.name) for p in (root / "commits").iterdir() if p.name.isdigit()]
        if not batches:
            return None
        lines = (root / "offsets" / str(max(batches))).read_text().splitlines()
    except OSError:
        return None
    # "v1", the batch's metadata, then one line per source: this query's one msmq source.
    try:
        offset = json.loads(lines[-1]) if len(lines) >= 3 else None
    except ValueError:
        return None
    if not isinstance(offset, dict) or not isinstance(offset.get("lookup_id"), int):
        return None
    return {k: v for k, v in offset.items() if isinstance(v, int)}


def _plot_bars(path: Path, title: str, labels: list[str], values: list[float], xlabel: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.35 * len(labels) + 1)))
    ax.barh(labels or ["(none)"], values or [0])
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _plot_volume(path: Path, volume: list[tuple[str, str, int]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.5))
    hours = sorted({h for _, h, _ in volume})
    for queue in sorted({q for q, _, _ in volume}):
        counts = {h: n for q, h, n in volume if q == queue}
        ax.plot(range(len(hours)), [counts.get(h, 0) for h in hours], marker="o", label=queue[-40:])
    ax.set_xticks(range(len(hours)), [h[5:13] for h in hours], rotation=45, fontsize=7)
    ax.set_title("messages per queue and hour (arrival time, UTC)")
    if volume:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _table(headers: list[str], rows: list[tuple[Any, ...]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def report(
    spark: Any,
    archive_dir: str,
    output: str,
    *,
    top: int = 20,
    progress: Callable[[str, int], None] | None = None,
) -> Report:
    """Write ``output/index.html`` and its PNG plots from the Parquet archive ``archive_dir``."""
    from pyspark.sql import functions as sf

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    rep = Report()

    def step(name: str) -> None:
        if progress is not None:
            progress(name, len(REPORT_STEPS))

    df = spark.read.parquet(archive_dir).drop("body", "extension").cache()
    rep.messages = df.count()
    step("load")
    vol = (
        df.groupBy(
            "queue", sf.date_format(sf.date_trunc("hour", "arrived_time"), "yyyy-MM-dd HH:00").alias("h")
        )
        .count()
        .orderBy("queue", "h")
        .collect()
    )
    rep.volume = [(r["queue"], r["h"] or "", int(r["count"])) for r in vol]
    _plot_volume(out / "volume.png", rep.volume)
    step("volume")
    lat = (
        df.where(sf.col("sent_time").isNotNull() & sf.col("arrived_time").isNotNull())
        .withColumn("latency", sf.unix_micros("arrived_time") / 1e6 - sf.unix_micros("sent_time") / 1e6)
        .groupBy("queue")
        .agg(sf.percentile_approx("latency", [0.5, 0.9, 0.99]).alias("p"), sf.count("*").alias("n"))
        .orderBy("queue")
        .collect()
    )
    rep.latency = [
        (r["queue"], float(r["p"][0]), float(r["p"][1]), float(r["p"][2]), int(r["n"])) for r in lat
    ]
    _plot_bars(
        out / "latency.png",
        "sent-to-arrived latency p99 per queue",
        [q[-40:] for q, *_ in rep.latency],
        [p99 for _, _, _, p99, _ in rep.latency],
        "seconds",
    )
    step("latency")
    dead = (
        df.where(sf.upper("queue").endswith(";DEADLETTER") | sf.upper("queue").endswith(";DEADXACT"))
        .groupBy("msg_class")
        .count()
        .orderBy(sf.desc("count"), "msg_class")
        .collect()
    )
    rep.dead_letters = [(int(r["msg_class"]), int(r["count"])) for r in dead]
    _plot_bars(
        out / "dead_letters.png",
        "dead letters by class",
        [f"0x{c:04X}" for c, _ in rep.dead_letters],
        [float(n) for _, n in rep.dead_letters],
        "messages",
    )
    step("dead letters")
    labels = df.groupBy("label").count().orderBy(sf.desc("count"), "label").limit(top).collect()
    rep.top_labels = [(r["label"] or "", int(r["count"])) for r in labels]
    _plot_bars(
        out / "labels.png",
        f"top {top} labels",
        [lbl[:40] for lbl, _ in rep.top_labels],
        [float(n) for _, n in rep.top_labels],
        "messages",
    )
    step("labels")
    df.unpersist()
    rep.images = ["volume.png", "latency.png", "dead_letters.png", "labels.png"]
    sections = [
        ("Volume per queue and hour", "volume.png", _table(["queue", "hour", "messages"], rep.volume)),
        (
            "Sent-to-arrived latency (seconds)",
            "latency.png",
            _table(["queue", "p50", "p90", "p99", "messages"], rep.latency),
        ),
        ("Dead letters by class", "dead_letters.png", _table(["msg_class", "messages"], rep.dead_letters)),
        ("Top labels", "labels.png", _table(["label", "messages"], rep.top_labels)),
    ]
    body = "".join(
        f'<h2>{html.escape(title)}</h2><img src="{img}" alt="{html.escape(title)}">{table}'
        for title, img, table in sections
    )
    rep.html = (
        "<!doctype html><html><head><meta charset='utf-8'><title>pymsmq archive report</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:2px 6px}</style></head><body>"
        f"<h1>pymsmq archive report</h1><p>{rep.messages} messages in {html.escape(archive_dir)}</p>"
        f"{body}</body></html>"
    )
    (out / "index.html").write_text(rep.html, encoding="utf-8")
    step("page")
    return rep
