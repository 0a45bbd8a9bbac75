"""Waiting reads by message id or correlation id (``qm.matching.MatchingSeek`` on
``notifications.watch``): an arrival looks at the waits for its own value only, and no arrival,
commit or abort that makes a wanted message readable leaves a waiting read asleep."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq import Message
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.qm import matching
from pymsmq.qm.matching import MatchingSeek
from pymsmq.qm.notifications import Notification, watch
from pymsmq.qm.queue_manager import QueueManager

VALUES = [ObjectId(uuid.UUID(int=i + 1), i) for i in range(4)]


@contextmanager
def _counting_looks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    # Every look a waiting read by value makes (MatchingSeek calls first_matching).
    looks = [0]
    real = matching.first_matching

    def counted(*args: Any, **kwargs: Any) -> Any:
        looks[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(matching, "first_matching", counted)
    yield looks


def _round(q: Any) -> None:
    # A round of the queue's notifications, as a waiting receive passing its turn on does.
    with q._qm._lock:
        q._state.cond.poll_watchers()


def test_an_arrival_looks_at_the_waits_for_its_own_value_only(monkeypatch: pytest.MonkeyPatch) -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\replies")
        wanted = [ObjectId(uuid.UUID(int=1000 + i), 1) for i in range(300)]
        waits = [watch(q, MatchingSeek("correlation_id", w, False), _noop, None, None, True) for w in wanted]
        cond = q._state.cond
        assert len(cond.matching) == 300 and not cond.groups and not cond.watchers
        with _counting_looks(monkeypatch) as looks:
            q.send_many([Message(body=b"unrelated") for _ in range(20)])
            q.send_many([Message(body=b"other", correlation_id=VALUES[0]) for _ in range(20)])
            assert looks[0] == 0  # 40 arrivals, none for a waiting read: no look at all
            q.send(Message(body=b"reply 7", correlation_id=wanted[7]))
            assert looks[0] == 1 and waits[7].done and sum(w.done for w in waits) == 1
        # The group of the value fired went; the table no longer watches it.
        table = q._index().by_field("correlation_id")
        assert len(cond.matching) == 299 and wanted[7] not in table.watched and not table.arrived
        for w in waits:
            w.cancel()
        assert not cond.matching and not cond.by_value and not cond.tables and not table.watched
    finally:
        qm.close()


def test_receives_waiting_for_one_value_take_turns_and_peeks_all_wake() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\replies")
        value = VALUES[1]
        receives = [
            watch(q, MatchingSeek("correlation_id", value, False), _noop, None, None, True) for _ in range(3)
        ]
        peeks = [watch(q, MatchingSeek("correlation_id", value, True), _noop, None, None) for _ in range(2)]
        q.send(Message(body=b"one", correlation_id=value))
        # One arrival wakes one receive (the first armed) and every peek.
        assert [r.done for r in receives] == [True, False, False] and all(p.done for p in peeks)
        # The woken receive passes its turn on without taking the message: the next one wakes.
        _round(q)
        assert [r.done for r in receives] == [True, True, False]
        q.receive_by_correlation_id(value)  # taken: the last one keeps waiting
        _round(q)
        _round(q)
        assert not receives[2].done
        assert value not in q._index().by_field("correlation_id").arrived
        q.send(Message(body=b"two", correlation_id=value))
        assert receives[2].done
    finally:
        qm.close()


def test_commit_abort_release_and_subqueue_moves_wake_waits_by_value() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\replies", transactional=True)
        value = VALUES[2]
        w = watch(q, MatchingSeek("correlation_id", value, False), _noop, None, None, True)
        with qm.begin_transaction() as tx:
            q.send(Message(body=b"reply", correlation_id=value), transaction=tx)
            assert not w.done  # not readable before the commit
        assert w.done  # the commit made it Available
        tx = qm.begin_transaction()
        taken = q.receive_by_correlation_id(value, transaction=tx)
        w = watch(q, MatchingSeek("correlation_id", value, False), _noop, None, None, True)
        tx.abort()
        assert w.done  # back in its place
        with q.subqueue("poison") as sub:
            w = watch(sub, MatchingSeek("id", taken.id, True), _noop, None, None)
            q.move(taken.lookup_id, "poison")
            assert w.done  # moved into the subqueue the wait looks at
    finally:
        qm.close()


def test_a_closed_handle_or_a_deleted_queue_ends_the_waits_by_value() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\replies")
        errors: list[int] = []
        done = threading.Event()

        def failed(_q: object, hresult: int, _c: int) -> None:
            errors.append(hresult)
            done.set()

        h = qm.queue(r".\private$\replies")
        mine = watch(h, MatchingSeek("correlation_id", VALUES[0], False), _noop, None, failed, True)
        other = watch(q, MatchingSeek("correlation_id", VALUES[0], False), _noop, None, failed, True)
        h.close()
        # [MS-MQDMPR] 3.1.7.1.6 Close Queue cancels the waiting reads: MQ_ERROR_OPERATION_CANCELLED.
        assert done.wait(10) and errors == [HResult.MQ_ERROR_OPERATION_CANCELLED]
        assert mine.done and not other.done
        done.clear()
        qm.delete_queue(r".\private$\replies")
        assert done.wait(10) and errors[1:] == [HResult.MQ_ERROR_QUEUE_DELETED] and other.done
    finally:
        qm.close()


def _noop(*_args: object) -> None:
    pass


# Stateful check against the seeks themselves: after every operation and the rounds its waiting
# receives pass on, no armed wait's seek finds a message (none stays asleep beside a message it
# may read).  Operations: sends with or without a value, sends and receives in transactions
# committed or aborted, receives, waits armed and cancelled, moves to a subqueue and back.
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("arm"), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("send"), st.integers(-1, 3), st.booleans()),
        st.tuples(st.just("tx_send"), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("tx_receive"), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("receive"), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("cancel"), st.integers(0, 20), st.booleans()),
        st.tuples(st.just("move"), st.integers(0, 3), st.booleans()),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(ops=_OPS)
def test_no_wait_by_value_sleeps_beside_a_message_it_may_read(ops: list[tuple[str, int, bool]]) -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\replies", transactional=True)
        sub = q.subqueue("side")
        waits: list[tuple[Notification, MatchingSeek, Any]] = []
        for op, k, flag in ops:
            if op == "arm":
                handle = sub if flag and k == 3 else q
                seek = MatchingSeek("correlation_id", VALUES[k], flag)
                waits.append((watch(handle, seek, _noop, None, None, not flag), seek, handle))
            elif op == "send":
                with qm.begin_transaction() as tx:
                    q.send(Message(body=b"m", correlation_id=None if k < 0 else VALUES[k]), transaction=tx)
            elif op == "tx_send":
                tx = qm.begin_transaction()
                q.send(Message(body=b"t", correlation_id=VALUES[k]), transaction=tx)
                tx.commit() if flag else tx.abort()
            elif op in ("tx_receive", "receive"):
                tx = qm.begin_transaction()
                try:
                    q.receive_by_correlation_id(VALUES[k], transaction=tx)
                except Exception:
                    tx.abort()
                    continue
                tx.commit() if op == "receive" or flag else tx.abort()
            elif op == "cancel" and waits:
                waits[k % len(waits)][0].cancel()
            elif op == "move":
                try:
                    m = q.peek_by_correlation_id(VALUES[k])
                except Exception:
                    continue
                with qm.begin_transaction() as tx:
                    q.move(m.lookup_id, "side", transaction=tx)
                if flag:
                    with qm.begin_transaction() as tx:
                        sub.move(m.lookup_id, None, transaction=tx)
            for _ in range(len(waits) + 1):  # the turns woken receives pass on
                _round(q)
            with qm._lock:
                for n, seek, handle in waits:
                    assert n.done or seek(handle._index()) is None, (op, k, flag)
    finally:
        qm.close()
