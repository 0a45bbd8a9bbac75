"""Lookup ids ([MS-MQDMPR] 3.1.7.1.13, [MC-MQAC] 3.11 lookup-id family, D9 62-68, 74): 64-bit,
strictly increasing per queue, never reused after a restart; peek/receive first/last/next/previous/by id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import HResult, Message, MSMQError, QueueManager
from pymsmq.model.constants import MQ_PEEK_ACCESS
from pymsmq.qm.queue import Queue


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:" if request.param == "memory" else tmp_path / "qm")
    yield m
    m.close()


def hr(fn: object, *args: object, **kwargs: object) -> int:
    with pytest.raises(MSMQError) as e:
        fn(*args, **kwargs)  # type: ignore[operator]
    return e.value.hresult


def abc(qm: QueueManager, transactional: bool = False) -> tuple[Queue, list[int]]:
    q = qm.create_queue(r".\private$\l", transactional=transactional)
    for body in (b"A", b"B", b"C"):
        q.send(Message(body=body), transaction=3 if transactional else None)
    ids = []
    c = q.cursor()
    ids.append(c.peek_current(timeout=0).lookup_id)
    ids += [c.peek_next(timeout=0).lookup_id for _ in range(2)]
    return q, ids


def test_lookup_ids_are_nonzero_and_increasing(qm: QueueManager) -> None:
    q, ids = abc(qm)
    assert 0 < ids[0] < ids[1] < ids[2] < 1 << 64
    m = q.peek(timeout=0)
    assert q.peek_by_lookup_id(m.lookup_id).id == m.id


def test_navigation(qm: QueueManager) -> None:
    q, (a, b, c) = abc(qm)
    assert q.peek_next_by_lookup_id(a).body == b"B"
    assert q.peek_previous_by_lookup_id(c).body == b"B"
    assert q.peek_first_by_lookup_id().body == b"A"
    assert q.peek_last_by_lookup_id().body == b"C"
    assert hr(q.peek_next_by_lookup_id, c) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert hr(q.peek_previous_by_lookup_id, a) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert str(b) and q.peek_by_lookup_id(str(b)).body == b"B"  # type: ignore[arg-type]


def test_receive_family(qm: QueueManager) -> None:
    q, (a, b, _c) = abc(qm)
    assert q.receive_by_lookup_id(b).body == b"B"
    assert hr(q.peek_by_lookup_id, b) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # D9 67
    assert hr(q.receive_by_lookup_id, b) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert hr(q.peek_next_by_lookup_id, b) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # anchor is gone
    assert q.receive_next_by_lookup_id(a).body == b"C"
    q.send(Message(body=b"D"))
    assert q.receive_last_by_lookup_id().body == b"D"
    assert q.receive_first_by_lookup_id().body == b"A"
    assert hr(q.receive_first_by_lookup_id) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert hr(q.peek_last_by_lookup_id) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND


def test_receive_previous(qm: QueueManager) -> None:
    q, (_a, _b, c) = abc(qm)
    assert q.receive_previous_by_lookup_id(c).body == b"B"
    assert q.receive_previous_by_lookup_id(c).body == b"A"


def test_navigation_crosses_priorities(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\p")
    for p in (1, 6, 3):
        q.send(Message(priority=p))
    first = q.peek_first_by_lookup_id()
    assert first.priority == 6
    nxt = q.peek_next_by_lookup_id(first.lookup_id)
    assert nxt.priority == 3
    assert q.peek_next_by_lookup_id(nxt.lookup_id).priority == 1
    assert q.peek_previous_by_lookup_id(q.peek_last_by_lookup_id().lookup_id).priority == 3


@pytest.mark.parametrize("bad", [0, -1, 1 << 64, "abc", None, 1.5])
def test_invalid_lookup_id_first_even_on_closed_handle(qm: QueueManager, bad: object) -> None:
    q = qm.create_queue(r".\private$\z")
    q.close()
    for fn in (
        q.peek_by_lookup_id,
        q.receive_by_lookup_id,
        q.peek_next_by_lookup_id,
        q.receive_by_lookup_id_allow_peek,
    ):
        assert hr(fn, bad) == HResult.MQ_ERROR_INVALID_PARAMETER
    assert hr(q.peek_by_lookup_id, 5) == HResult.MQ_ERROR_INVALID_HANDLE


def test_unknown_lookup_id_never_blocks(qm: QueueManager) -> None:
    q, _ = abc(qm)
    assert hr(q.receive_by_lookup_id, 123456789) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND


def test_peek_access_cannot_receive_by_lookup_id(qm: QueueManager) -> None:
    abc(qm)
    p = qm.queue(r".\private$\l", access=MQ_PEEK_ACCESS)
    assert hr(p.receive_first_by_lookup_id) == HResult.MQ_ERROR_ACCESS_DENIED
    assert p.peek_first_by_lookup_id().body == b"A"


def test_locked_message_and_allow_peek(qm: QueueManager) -> None:
    q, (a, b, _c) = abc(qm, transactional=True)
    tx = qm.begin_transaction()
    assert q.receive_by_lookup_id(a, transaction=tx).body == b"A"
    # Locked: MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION, as Windows answers (WCF retries on it and
    # faults its channel on the MQ_ERROR_TRANSACTION_USAGE of MS-MQDMPR 3.1.7.3.3; outside QA).
    assert hr(q.peek_by_lookup_id, a) == HResult.MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION
    assert hr(q.receive_by_lookup_id, a) == HResult.MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION
    assert hr(q.move, a, "retry") == HResult.MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION
    assert q.peek_first_by_lookup_id().body == b"B"
    assert q.peek_next_by_lookup_id(a).body == b"B"  # a locked anchor still anchors
    assert q.receive_by_lookup_id_allow_peek(b, transaction=tx).body == b"B"
    other = qm.queue(q.format_name)
    assert other.peek(timeout=0).body == b"B"  # D9 74: visible to peek
    assert other.peek_by_lookup_id(b).body == b"B"
    assert other.receive(timeout=0).body == b"C"  # ... but not to receive
    tx.commit()
    assert hr(other.peek, timeout=0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND


def test_allow_peek_ends_with_abort(qm: QueueManager) -> None:
    q, (a, _b, _c) = abc(qm, transactional=True)
    with pytest.raises(RuntimeError), qm.begin_transaction() as tx:
        q.receive_by_lookup_id_allow_peek(a, transaction=tx)
        raise RuntimeError("boom")
    assert q.peek(timeout=0).body == b"A" and q.peek(timeout=0).abort_count == 1
    assert q.receive(timeout=0).body == b"A"


def test_lookup_ids_never_reused_after_restart(tmp_path: Path) -> None:
    path = tmp_path / "qm"
    with QueueManager.open(path) as qm:
        q = qm.create_queue(r".\private$\r")
        q.send(Message(body=b"express"))
        q.send(Message(body=b"durable", delivery=1))
        seen = [m.lookup_id for m in (q.receive(timeout=0), q.receive(timeout=0))]
    with QueueManager.open(path) as qm:
        q = qm.queue(r".\private$\r")
        q.send(Message(body=b"x"))
        q.send(Message(body=b"y", delivery=1))
        later = [m.lookup_id for m in (q.receive(timeout=0), q.receive(timeout=0))]
    assert min(later) > max(seen) and later[0] < later[1]


def test_lookup_ids_are_per_queue(qm: QueueManager) -> None:
    q1 = qm.create_queue(r".\private$\one")
    q2 = qm.create_queue(r".\private$\two")
    q1.send(Message())
    q1.send(Message())
    q2.send(Message())
    assert q2.peek(timeout=0).lookup_id == 1
    assert q1.peek_last_by_lookup_id().lookup_id == 2
