"""Stores made before ``auto_vacuum=INCREMENTAL`` are converted at open when that is cheap.

On a full disk the store gives free pages back with ``PRAGMA incremental_vacuum`` (docs/lifecycle.md,
"A full disk"), which needs that mode; a store made before it kept ``auto_vacuum=NONE``.  Opening it
converts it (a VACUUM) when its live data is small and its disk has room; otherwise it opens as it is.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from pymsmq import Message, QueueManager
from pymsmq.qm.store import sqlite as store_module
from pymsmq.qm.store.sqlite import SQLiteStore

Q = r".\private$\old"


def _old_store(path: Path, messages: int) -> Path:
    """A queue manager's store with ``messages`` recoverable messages, then set back to auto_vacuum NONE."""
    with QueueManager.open(path) as qm:
        q = qm.create_queue(Q)
        q.send_many([Message(body=b"%d" % i + b"x" * 300, delivery=1) for i in range(messages)])
    db = next(path.glob("*.db"))
    c = sqlite3.connect(db, isolation_level=None)
    c.execute("PRAGMA auto_vacuum=NONE")
    c.execute("VACUUM")
    assert c.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    c.close()
    return db


def _mode(db: Path) -> int:
    c = sqlite3.connect(db)
    try:
        return int(c.execute("PRAGMA auto_vacuum").fetchone()[0])
    finally:
        c.close()


def test_a_small_old_store_is_converted_at_open_and_keeps_its_messages(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = _old_store(tmp_path, 500)
    with caplog.at_level(logging.INFO, logger="pymsmq.store"), SQLiteStore(db) as s:
        assert s._incremental
    assert _mode(db) == 2  # INCREMENTAL
    assert any("converted to auto_vacuum=INCREMENTAL" in r.getMessage() for r in caplog.records)
    with QueueManager.open(tmp_path) as qm:
        got = qm.queue(Q).receive_many(1000)
    assert [m.body[:3] for m in got[:2]] == [b"0xx", b"1xx"] and len(got) == 500


def test_a_large_old_store_opens_as_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _old_store(tmp_path, 500)
    monkeypatch.setattr(store_module, "CONVERT_LIVE_MAX", 4096)  # "large": more live data than this
    with caplog.at_level(logging.INFO, logger="pymsmq.store"), SQLiteStore(db) as s:
        assert not s._incremental
    assert _mode(db) == 0
    assert any("not converted" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()
    with SQLiteStore(db) as s:  # a later open, with the default limit, converts it
        assert s._incremental
