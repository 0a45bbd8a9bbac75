"""``pymsmq pipeline archive|report`` through the command line (shared SparkSession, real server)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from click.testing import CliRunner

import pymsmq
from pymsmq.cli import main


def test_cli_archive_then_report(msmq_spark: Any, msmq_server: Any, tmp_path: Path) -> None:
    name = f".\\private$\\cli_arch_{uuid.uuid4().hex[:8]}"
    qm = pymsmq.connect(msmq_server.url)
    try:
        q = qm.create_queue(name)
        q.send_many([pymsmq.Message(body=b"x" * i, label=f"cli{i % 2}") for i in range(12)])
    finally:
        qm.close()
    out, ck, rep = tmp_path / "archive", tmp_path / "ck", tmp_path / "report"
    runner = CliRunner()
    args = ["pipeline", "archive", "--url", msmq_server.url, "--queue", name, "--out", str(out)]
    r = runner.invoke(main, [*args, "--checkpoint", str(ck), "--master", "local[2]"])
    assert r.exit_code == 0, r.output
    assert "archived 12 messages" in r.stdout
    assert pq.read_table(out).num_rows == 12
    again = runner.invoke(main, [*args, "--checkpoint", str(ck), "--master", "local[2]"])
    assert again.exit_code == 0, again.output
    assert "archived 0 messages" in again.stdout  # incremental: nothing new arrived
    r = runner.invoke(main, ["pipeline", "report", "--archive", str(out), "--out", str(rep)])
    assert r.exit_code == 0, r.output
    assert "report of 12 messages" in r.stdout
    assert (rep / "index.html").read_text().count("<img") >= 1


def test_cli_report_without_archive_is_exit_2(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["pipeline", "report", "--archive", str(tmp_path / "none"), "--out", "x"])
    assert r.exit_code == 2
    assert "no archive" in r.stderr


def test_cli_archive_of_an_unknown_queue_or_server_is_one_line(msmq_server: Any, tmp_path: Path) -> None:
    # Checked before Spark starts: one Error line (it was a Spark trace of about 130 lines).
    base = ["pipeline", "archive", "--out", str(tmp_path / "a"), "--checkpoint", str(tmp_path / "ck")]
    r = CliRunner().invoke(main, [*base, "--url", msmq_server.url, "--queue", ".\\private$\\no_such_queue"])
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = CliRunner().invoke(main, [*base, "--url", "msmq://127.0.0.1:1", "--queue", ".\\private$\\q"])
    assert r.exit_code == 1 and "cannot connect" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "a").exists()
