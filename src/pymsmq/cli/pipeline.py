"""``pymsmq pipeline archive|report``: the Spark pipeline jobs (needs the ``spark`` extra).

    pymsmq pipeline archive --url msmq://127.0.0.1:2103 --queue 'system:journal' \\
        --out ./archive --checkpoint ./archive/_checkpoint
    pymsmq pipeline report --archive ./archive --out ./report
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from pymsmq.cli._common import BadInput, NoMessage, msmq_command, progress

__all__ = ["pipeline"]


def _session(master: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise BadInput("pymsmq pipeline needs the spark extra: pip install 'pymsmq[spark]'") from exc
    spark = (
        SparkSession.builder.master(master)
        .appName("pymsmq-pipeline")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _jobs() -> Any:
    """The Spark jobs, imported when a command runs so the CLI starts without the spark extra."""
    try:
        from pymsmq.spark import pipeline as jobs
    except ImportError as exc:
        raise BadInput("pymsmq pipeline needs the spark extra: pip install 'pymsmq[spark]'") from exc
    return jobs


@click.group()
def pipeline() -> None:
    """Spark pipeline jobs: archive queues to Parquet, report on archives.

    \b
    Example:
      pymsmq pipeline archive --url msmq://127.0.0.1:2103 --queue system:journal --out a --checkpoint ck
      pymsmq pipeline report --archive a --out ./report
    """


@pipeline.command()
@click.option("--url", envvar="PYMSMQ_URL", required=True, help="msmq://host:port of a pymsmq server.")
@click.option("--token", envvar="PYMSMQ_TOKEN", default="", help="Server token.")
@click.option(
    "--queue",
    required=True,
    help="Queue path or format name, or system:journal / system:deadletter / system:deadxact.",
)
@click.option("--out", "output", required=True, help="Parquet archive directory (partitioned by date).")
@click.option("--checkpoint", required=True, help="Streaming checkpoint directory (makes runs incremental).")
@click.option("--mode", type=click.Choice(["peek", "receive"]), default="peek", show_default=True)
@click.option("--max-per-trigger", type=int, default=None, help="Messages per micro-batch.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master.")
@msmq_command
def archive(
    url: str,
    token: str,
    queue: str,
    output: str,
    checkpoint: str,
    mode: str,
    max_per_trigger: int | None,
    master: str,
) -> None:
    """Archive what arrived in QUEUE since the last run into Parquet (Trigger.AvailableNow).

    Runs are incremental through the checkpoint: each run archives only what arrived since the last.

    \b
    Example:
      pymsmq pipeline archive --url msmq://127.0.0.1:2103 --queue system:deadletter \\
          --out ./archive --checkpoint ./archive/_checkpoint
    """
    run = _jobs().archive
    from pymsmq.spark.options import SourceOptions, open_queue

    # An unknown queue or an unreachable server is one line here, before Spark starts (inside the
    # streaming query it was a Spark trace of a hundred lines with the cause in its middle).
    with open_queue(SourceOptions.parse({"url": url, "queue": queue, "token": token})):
        pass
    spark = _session(master)
    with progress(f"archiving {queue}", 1) as bar:
        result = run(
            spark,
            url,
            queue,
            output,
            checkpoint,
            token=token,
            mode=mode,
            max_messages_per_trigger=max_per_trigger,
        )
        bar.update()
    click.echo(f"archived {result.rows} messages in {result.batches} batches into {result.output}")


@pipeline.command()
@click.option("--archive", "archive_dir", required=True, help="Parquet archive written by `archive`.")
@click.option("--out", "output", required=True, help="Directory for index.html and the PNG plots.")
@click.option("--top", type=int, default=20, show_default=True, help="How many labels to list.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master.")
@msmq_command
def report(archive_dir: str, output: str, top: int, master: str) -> None:
    """Write an HTML report (volume, latency, dead letters, labels) of an archive.

    \b
    Example:
      pymsmq pipeline report --archive ./archive --out ./report && xdg-open ./report/index.html
    """
    jobs = _jobs()
    run, steps = jobs.report, jobs.REPORT_STEPS
    if not os.path.isdir(archive_dir):
        raise BadInput(f"no archive at {archive_dir}")
    if not _has_parquet(archive_dir):  # Spark cannot infer a schema from nothing (a traceback)
        raise NoMessage(f"the archive at {archive_dir} has no messages yet (nothing was archived)")
    spark = _session(master)
    with progress("report", len(steps)) as bar:
        rep = run(spark, archive_dir, output, top=top, progress=lambda _step, _total: bar.update())
    click.echo(f"report of {rep.messages} messages: {os.path.join(output, 'index.html')}")


def _has_parquet(directory: str) -> bool:
    """True when ``directory`` holds a Parquet data file (the archive's checkpoint is not data)."""
    for _root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        if any(f.endswith(".parquet") for f in files):
            return True
    return False
