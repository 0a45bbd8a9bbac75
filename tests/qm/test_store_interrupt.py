"""A Ctrl-C as the store's COMMIT returns (QA round 4: a committed removal was reported as
"batch not stored: committer failure", MQ_ERROR_MESSAGE_STORAGE_FAILED): the caller gets the
KeyboardInterrupt, and the batch, durable, is not called failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pymsmq import Message, MSMQError, QueueManager

Q = r".\private$\interrupted"


class _InterruptAfterCommit:
    """A cursor whose next COMMIT is followed by a KeyboardInterrupt (a Ctrl-C that came during it)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.armed = True

    def execute(self, sql: str, *args: Any) -> Any:
        result = self.real.execute(sql, *args)
        if sql == "COMMIT" and self.armed:
            self.armed = False
            raise KeyboardInterrupt
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_ctrl_c_as_the_commit_returns_is_an_interrupt_not_a_storage_failure(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    with QueueManager.open(data) as qm:
        q = qm.create_queue(Q)
        q.send(
            Message(body=b"first", delivery=1)
        )  # (ids and lookup ids reserved: the next commit is the send's)
        store: Any = qm._store  # type: ignore[attr-defined]
        store._cursor = _InterruptAfterCommit(store._cursor)
        with pytest.raises(KeyboardInterrupt):
            q.send(Message(body=b"durable", delivery=1))
        store._cursor = store._cursor.real
        q.send(Message(body=b"next", delivery=1))  # the store goes on
    with QueueManager.open(data) as qm, qm.queue(Q) as q:
        assert [m.body for m in q.receive_many(5, timeout=0)] == [b"first", b"durable", b"next"]


def test_a_ctrl_c_before_the_commit_leaves_nothing_and_says_so(tmp_path: Path) -> None:
    data = tmp_path / "qm"

    class InterruptBeforeCommit(_InterruptAfterCommit):
        def execute(self, sql: str, *args: Any) -> Any:
            if sql == "COMMIT" and self.armed:
                self.armed = False
                raise KeyboardInterrupt
            return self.real.execute(sql, *args)

    with QueueManager.open(data) as qm:
        q = qm.create_queue(Q)
        q.send(Message(body=b"first", delivery=1))
        store: Any = qm._store  # type: ignore[attr-defined]
        store._cursor = InterruptBeforeCommit(store._cursor)
        with pytest.raises((KeyboardInterrupt, MSMQError)):
            q.send(Message(body=b"lost", delivery=1))
        store._cursor = store._cursor.real
        if store._writer.in_transaction:
            store._writer.rollback()
        q.send(Message(body=b"next", delivery=1))
    with QueueManager.open(data) as qm, qm.queue(Q) as q:
        assert [m.body for m in q.receive_many(5, timeout=0)] == [b"first", b"next"]
