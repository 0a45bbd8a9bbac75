"""Cursors ([MS-MQDMPR] 3.2, [MC-MQAC] D3.8, D9 57-61): PeekCurrent, PeekNext, ReceiveCurrent, Reset."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import HResult, Message, MSMQError, QueueManager
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


def filled(qm: QueueManager, *bodies: bytes) -> Queue:
    q = qm.create_queue(r".\private$\c")
    for b in bodies:
        q.send(Message(body=b, delivery=1))
    return q


def test_scan_with_peek_current_and_peek_next(qm: QueueManager) -> None:
    q = filled(qm, b"A", b"B")
    assert q.peek_current(timeout=0).body == b"A"
    assert q.peek_current(timeout=0).body == b"A"  # Read state: same message again
    assert q.peek_next(timeout=0).body == b"B"
    assert hr(q.peek_next, timeout=0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert q.message_count == 2


def test_peek_next_after_open_or_reset_is_illegal(qm: QueueManager) -> None:
    q = filled(qm, b"A")
    assert hr(q.peek_next, timeout=0) == HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION == 0xC00E001C
    q.peek_current(timeout=0)
    q.reset()
    assert hr(q.peek_next, timeout=0) == HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION


def test_receive_current_then_peek_current_gives_the_following_message(qm: QueueManager) -> None:
    q = filled(qm, b"A", b"B", b"C")
    assert q.peek_current(timeout=0).body == b"A"
    assert q.receive_current(timeout=0).body == b"A"
    assert hr(q.peek_next, timeout=0) == HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION  # cursor is Unread
    assert q.peek_current(timeout=0).body == b"B"
    assert q.peek_next(timeout=0).body == b"C"
    assert q.receive_current(timeout=0).body == b"C"
    assert [m.body for m in (q.receive(timeout=0),)] == [b"B"]


def test_receive_current_in_unread_state_takes_the_next_message(qm: QueueManager) -> None:
    q = filled(qm, b"A", b"B")
    assert q.receive_current(timeout=0).body == b"A"
    assert q.receive_current(timeout=0).body == b"B"
    assert hr(q.receive_current, timeout=0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND


def test_message_removed_under_the_cursor(qm: QueueManager) -> None:
    q = filled(qm, b"A", b"B")
    other = qm.queue(q.format_name)
    assert q.peek_current(timeout=0).body == b"A"
    other.receive(timeout=0)
    assert hr(q.peek_current, timeout=0) == HResult.MQ_ERROR_MESSAGE_ALREADY_RECEIVED == 0xC00E001D
    assert hr(q.receive_current, timeout=0) == HResult.MQ_ERROR_MESSAGE_ALREADY_RECEIVED
    assert q.peek_next(timeout=0).body == b"B"  # Read state: seek on from the removed position


def test_reset_goes_back_to_the_first_message(qm: QueueManager) -> None:
    q = filled(qm, b"A", b"B")
    q.peek_current(timeout=0)
    q.peek_next(timeout=0)
    q.reset()
    assert q.peek_current(timeout=0).body == b"A"


def test_independent_cursors(qm: QueueManager) -> None:
    q = filled(qm, b"A", b"B")
    c1, c2 = q.cursor(), q.cursor()
    assert c1.peek_current(timeout=0).body == b"A"
    assert c1.peek_next(timeout=0).body == b"B"
    assert c2.peek_current(timeout=0).body == b"A"
    assert q.peek_current(timeout=0).body == b"A"  # the handle's own cursor is separate too


def test_cursor_respects_priority_order(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\p")
    for p in (1, 5, 3):
        q.send(Message(priority=p))
    c = q.cursor()
    got = [c.peek_current(timeout=0).priority]
    got += [c.peek_next(timeout=0).priority for _ in range(2)]
    assert got == [5, 3, 1]


def test_peek_current_waits_for_arrival(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\w")
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(q.peek_current(timeout=10).body))
    t.start()
    time.sleep(0.05)
    q.send(Message(body=b"new"))
    t.join(5)
    assert got == [b"new"]
    assert q.peek_current(timeout=0).body == b"new"  # the cursor is Read on it now


def test_peek_next_waits_for_a_later_message(qm: QueueManager) -> None:
    q = filled(qm, b"A")
    q.peek_current(timeout=0)
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(q.peek_next(timeout=10).body))
    t.start()
    time.sleep(0.05)
    q.send(Message(body=b"B"))
    t.join(5)
    assert got == [b"B"]


def test_receive_current_timeout_moves_to_end(qm: QueueManager) -> None:
    q = filled(qm, b"A")
    q.receive_current(timeout=0)
    assert hr(q.receive_current, timeout=0.05) == HResult.MQ_ERROR_IO_TIMEOUT
    q.send(Message(body=b"later"))
    assert q.receive_current(timeout=0).body == b"later"  # arrivals after End are still found


def test_receive_current_with_transaction_locks(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"A"), transaction=tx)
        q.send(Message(body=b"B"), transaction=tx)
    tx = qm.begin_transaction()
    assert q.peek_current(timeout=0).body == b"A"
    assert q.receive_current(timeout=0, transaction=tx).body == b"A"
    assert q.peek(timeout=0).body == b"B"  # A is locked
    tx.abort()
    assert q.peek(timeout=0).body == b"A"


def test_cursor_on_closed_handle(qm: QueueManager) -> None:
    q = filled(qm, b"A")
    c = q.cursor()
    q.close()
    assert hr(c.peek_current, timeout=0) == HResult.MQ_ERROR_INVALID_HANDLE
    assert hr(q.reset) == HResult.MQ_ERROR_INVALID_HANDLE


def test_a_no_wait_receive_that_finds_nothing_leaves_the_cursor(qm: QueueManager) -> None:
    # [MS-MQDMPR] 3.2.7.4 with iNoWait: NotFound, nothing else; only a wait that times out moves the
    # cursor to End (3.2.7.6).  It was moved past the tail: the messages locked at that moment were
    # never seen by that cursor after their transaction aborted.
    q = qm.create_queue(r".\private$\t", transactional=True)
    with qm.begin_transaction() as tx:
        for b in (b"m0", b"m1", b"m2"):
            q.send(Message(body=b), tx)
    other = qm.begin_transaction()
    for _ in range(3):
        q.receive(0, other)
    cursor = q.cursor()
    assert hr(cursor.receive_current, 0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    other.abort()
    assert cursor.peek_current(0).body == b"m0"
    assert cursor.receive_current(0).body == b"m0"
    assert cursor.receive_current(0).body == b"m1"


def test_a_failed_receive_current_does_not_move_the_cursor(qm: QueueManager) -> None:
    # "Errors never reset the cursor" ([MC-MQAC] D3.8): a refused transaction argument left the
    # cursor Unread on m0, so the next peek_current returned m1 and a scan never saw m0.
    q = filled(qm, b"m0", b"m1", b"m2")
    cursor = q.cursor()
    assert cursor.peek_current(0).body == b"m0"
    tx = qm.begin_transaction()  # a transaction on a non-transactional queue: TRANSACTION_USAGE
    assert hr(cursor.receive_current, 0, tx) == HResult.MQ_ERROR_TRANSACTION_USAGE
    tx.abort()
    assert cursor.peek_current(0).body == b"m0"
    assert hr(cursor.receive_current, 0, 7) == HResult.MQ_ERROR_INVALID_PARAMETER
    assert cursor.peek_current(0).body == b"m0"
    assert cursor.peek_next(0).body == b"m1"


def test_a_cursor_timed_out_before_a_transaction_commits_sees_its_message(qm: QueueManager) -> None:
    # End ([MS-MQDMPR] 3.2.7.6) was past the messages of transactions not committed yet: a cursor
    # whose wait expired while a transactional send was being committed never saw that message.
    q = qm.create_queue(r".\private$\t", transactional=True)
    cursor = q.cursor()
    sending = qm.begin_transaction()
    q.send(Message(body=b"committed later"), sending)
    with qm.begin_transaction() as tx:
        assert hr(cursor.receive_current, 0.05, tx) == HResult.MQ_ERROR_IO_TIMEOUT
    sending.commit()
    assert cursor.peek_current(0).body == b"committed later"


def test_a_wait_that_expired_elsewhere_does_not_move_the_cursor_past_a_message(qm: QueueManager) -> None:
    # The server parks a cursor receive and moves the cursor to End when the wait's time is up, a
    # moment after its last look: a message that came meanwhile was skipped (QA 2026-11-27, 13 of
    # 76 timeouts).  The cursor stays before it; with nothing there, it moves to End.
    from pymsmq.qm.cursor import cursor_wait_expired

    q = qm.create_queue(r".\private$\t", transactional=True)
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"first"), tx)
    cursor = q.cursor()
    cursor_wait_expired(cursor)
    assert cursor.peek_current(0).body == b"first"
    with qm.begin_transaction() as tx:
        assert cursor.receive_current(0, tx).body == b"first"
        q.send(Message(body=b"locked"), tx)
    tx = qm.begin_transaction()
    assert q.receive(0, tx).body == b"locked"  # not available: the wait expires, to End
    cursor_wait_expired(cursor)
    tx.abort()
    assert hr(cursor.peek_current, 0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # behind End
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"later"), tx)
    assert cursor.peek_current(0).body == b"later"


def test_what_becomes_available_while_cursors_wait_is_listed_and_bounded() -> None:
    # Outside QA: the list stopped growing at 4,096 entries, and a wait that outlived that many
    # commits missed a message made available ahead of it afterwards.  Now entries taken since go
    # first, then the older half; what is still available and new is always there.
    from pymsmq.qm.index import AVAILABLE, LOCKED, MADE_AVAILABLE_KEPT, Entry, MessageIndex

    index = MessageIndex()
    index.cursor_waits = 1
    m = Message(body=b"x")
    for lid in range(1, 3 * MADE_AVAILABLE_KEPT):
        entry = Entry(lid, 0, m, 1, LOCKED)
        index.add(entry)
        index.set_state(entry, AVAILABLE)  # listed
        if lid % 5:
            index.remove(entry)  # taken by another consumer at once
    assert len(index.made_available) <= MADE_AVAILABLE_KEPT
    kept = {e.lookup_id for _, e in index.made_available}
    recent = range(3 * MADE_AVAILABLE_KEPT - MADE_AVAILABLE_KEPT // 2, 3 * MADE_AVAILABLE_KEPT)
    assert {lid for lid in recent if lid % 5 == 0} <= kept  # the newest still available: all there
    seqs = [n for n, _ in index.made_available]
    assert seqs == sorted(seqs) and index.made_available_seq == 3 * MADE_AVAILABLE_KEPT - 1


def test_a_text_packet_in_a_row_leaves_that_message_unread_not_the_store(tmp_path: Path) -> None:
    # Outside QA: a packet column holding text that is not UTF-8 made SQLite's read of the rows
    # fail and the open refuse the whole store; it is one damaged message.
    import sqlite3

    with QueueManager.open(tmp_path / "qm") as qm:
        q = qm.create_queue(r".\private$\q")
        q.send_many([Message(body=b"%d" % i, delivery=1) for i in range(3)])
    with sqlite3.connect(tmp_path / "qm" / "pymsmq.db") as db:
        (lid,) = db.execute("SELECT lookup_id FROM messages ORDER BY lookup_id LIMIT 1 OFFSET 1").fetchone()
        db.execute("UPDATE messages SET packet = CAST(x'ff00fe' AS TEXT) WHERE lookup_id = ?", (lid,))
    with QueueManager.open(tmp_path / "qm") as qm:
        assert qm.unreadable_messages == 1
        assert [m.body for m in qm.queue(r".\private$\q").receive_many(5, timeout=0)] == [b"0", b"2"]
