"""The store's schema versions: a store made by an earlier pymsmq (schema 1, before
``messages.last_move_time``) opens, is brought to the current schema in one transaction, and keeps
every message; a store of a version this pymsmq does not know is refused with a clear error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.hresult import HResult
from pymsmq.qm.store import DEFAULT_DB_NAME
from pymsmq.qm.store.sqlite import SCHEMA_VERSION

Q = ".\\private$\\orders"

# The messages table as schema 1 had it (pymsmq up to the twentieth session).
_TO_SCHEMA_1 = """
BEGIN;
CREATE TABLE m1 (
    queue_id INTEGER NOT NULL,
    lookup_id INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    arrived_time REAL NOT NULL,
    subqueue TEXT NOT NULL,
    abort_count INTEGER NOT NULL,
    move_count INTEGER NOT NULL,
    expires_at REAL,
    external TEXT,
    packet BLOB NOT NULL,
    PRIMARY KEY (queue_id, lookup_id)
) WITHOUT ROWID;
INSERT INTO m1 SELECT queue_id, lookup_id, priority, arrived_time, subqueue, abort_count, move_count,
    expires_at, external, packet FROM messages;
DROP TABLE messages;
ALTER TABLE m1 RENAME TO messages;
CREATE INDEX messages_external ON messages (external) WHERE external IS NOT NULL;
PRAGMA user_version=1;
COMMIT;
"""


def _version(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _columns(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[1] for row in conn.execute("PRAGMA table_info(messages)")]


def test_a_schema_1_store_is_brought_to_the_current_schema_with_its_messages(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    qm = QueueManager.open(data)
    q = qm.create_queue(Q)
    q.send_many([Message(body=b"%d" % i, delivery=1) for i in range(4)])
    q.send(Message(body=b"b" * 100_000, delivery=1))  # a big one, in a file beside the database
    q.move(q.peek(0).lookup_id, "retry")
    qm.close()
    db = data / DEFAULT_DB_NAME
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(_TO_SCHEMA_1)
    conn.close()
    assert _version(db) == 1 and "last_move_time" not in _columns(db)

    qm = QueueManager.open(data)  # opens, migrates
    assert _version(db) == SCHEMA_VERSION == 3 and _columns(db)[-2:] == ["last_move_time", "packet_crc"]
    q = qm.queue(Q)
    retry = q.subqueue("retry")
    kept = retry.peek(0)
    # Schema 1 kept no move time: the message moved before reads as never timed, its count kept.
    assert (kept.body, kept.move_count, kept.last_move_time) == (b"0", 1, None)
    retry.move(kept.lookup_id, None)  # a move now is timed, and stored
    qm.close()
    qm = QueueManager.open(data)  # a second open does nothing more
    q = qm.queue(Q)
    got = q.receive_many(10)
    assert sorted(m.body for m in got) == [b"0", b"1", b"2", b"3", b"b" * 100_000]
    moved = next(m for m in got if m.body == b"0")
    assert moved.move_count == 2 and moved.last_move_time is not None
    qm.close()


def test_a_store_of_an_unknown_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    QueueManager.open(data).close()
    db = data / DEFAULT_DB_NAME
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(MSMQError) as refused:
        QueueManager.open(data)
    assert refused.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
    assert f"unknown store schema version {SCHEMA_VERSION + 1}" in str(refused.value)
    assert "newer pymsmq" in str(refused.value)
    assert _version(db) == SCHEMA_VERSION + 1
