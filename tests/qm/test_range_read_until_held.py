"""READ_RANGE ``until_held``: the high water stops at a message a receive holds and may give back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymsmq
from pymsmq.qm.hold import Hold
from pymsmq.qm.range_read import read_range


@pytest.fixture()
def qm(tmp_path: Path) -> Iterator[pymsmq.QueueManager]:
    manager = pymsmq.QueueManager.open(tmp_path / "qm")
    yield manager
    manager.close()


def _queue(qm: pymsmq.QueueManager, n: int, transactional: bool = True) -> pymsmq.Queue:
    q = qm.create_queue(".\\private$\\held", transactional=transactional)
    if transactional:
        with qm.begin_transaction() as tx:
            for i in range(n):
                q.send(
                    pymsmq.Message(body=b"x", label=str(i), delivery=pymsmq.MQMSG_DELIVERY_RECOVERABLE), tx
                )
    else:
        for i in range(n):
            q.send(pymsmq.Message(body=b"x", label=str(i), delivery=pymsmq.MQMSG_DELIVERY_RECOVERABLE))
    return q


def test_a_transaction_s_receive_holds_the_high_water(qm: pymsmq.QueueManager) -> None:
    q = _queue(qm, 5)  # lookup ids 1..5
    tx = qm.begin_transaction()
    taken = q.receive_by_lookup_id(3, tx)
    assert taken.lookup_id == 3
    assert read_range(q, 1, 0, 0).high_water == 6  # without the flag: the send high water only
    assert read_range(q, 1, 0, 0, until_held=True).high_water == 3
    assert read_range(q, 4, 0, 0, until_held=True).high_water == 6  # held below the start: not counted
    r = read_range(q, 1, 0, until_held=True)
    assert [m.label for m in r.messages] == ["0", "1"]  # the read stops before the held one
    assert (r.more, r.next_lookup_id) == (False, 3)
    # Counting (max_count, NO_DATA's use) stops there too.
    r = read_range(q, 1, 6, max_count=10, until_held=True)
    assert (len(r.messages), r.more, r.next_lookup_id) == (2, False, 3)
    tx.abort()  # back in the queue: the stream can pass it now
    r = read_range(q, 1, 0, until_held=True)
    assert [m.label for m in r.messages] == ["0", "1", "2", "3", "4"]
    assert r.high_water == 6


def test_a_committed_receive_frees_the_high_water(qm: pymsmq.QueueManager) -> None:
    q = _queue(qm, 3)
    with qm.begin_transaction() as tx:
        q.receive_by_lookup_id(2, tx)
        assert read_range(q, 1, 0, 0, until_held=True).high_water == 2
    assert read_range(q, 1, 0, 0, until_held=True).high_water == 4


def test_a_two_phase_hold_holds_the_high_water(qm: pymsmq.QueueManager) -> None:
    q = _queue(qm, 4, transactional=False)
    hold = Hold()
    r = read_range(q, 2, 3, receive=True, transaction=hold)
    assert [m.label for m in r.messages] == ["1"] and hold.held
    assert read_range(q, 1, 0, 0, until_held=True).high_water == 2
    hold.release()
    assert read_range(q, 1, 0, 0, until_held=True).high_water == 5


def test_peekable_and_purged_locks_do_not_hold(qm: pymsmq.QueueManager) -> None:
    q = _queue(qm, 4)
    tx = qm.begin_transaction()
    q.receive_by_lookup_id_allow_peek(2, tx)  # a peek still sees it: a reader delivers it
    assert read_range(q, 1, 0, 0, until_held=True).high_water == 5
    q.receive_by_lookup_id(3, tx)
    assert read_range(q, 1, 0, 0, until_held=True).high_water == 3
    q.purge()  # purged while locked: deleted when the transaction ends, whatever it does
    assert read_range(q, 1, 0, 0, until_held=True).high_water == 5
    tx.abort()
    assert read_range(q, 1, 0, 0).queue_count == 0


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 7), min_size=1, max_size=30),
    held=st.sets(st.integers(0, 29)),
    start=st.integers(0, 35),
)
def test_until_held_is_the_lowest_held_id_at_or_after_start(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], held: set[int], start: int
) -> None:
    manager = pymsmq.QueueManager.open(tmp_path_factory.mktemp("h") / "qm")
    try:
        q = manager.create_queue(".\\private$\\p", transactional=True)
        with manager.begin_transaction() as tx:
            ids = [q.send(pymsmq.Message(body=b"x", priority=p), tx) for p in sizes]
        lookup = [m.lookup_id for m in read_range(q, 0, 0).messages]
        assert len(lookup) == len(ids)
        tx = manager.begin_transaction()
        locked = sorted(lookup[i] for i in held if i < len(lookup))
        for lid in locked:
            q.receive_by_lookup_id(lid, tx)
        high = read_range(q, 0, 0, 0).high_water
        expected = min([lid for lid in locked if lid >= start] + [high])
        assert read_range(q, start, 0, 0, until_held=True).high_water == expected
        visible = [m.lookup_id for m in read_range(q, start, 0, until_held=True).messages]
        assert visible == [lid for lid in sorted(lookup) if start <= lid < expected and lid not in locked]
        tx.abort()
    finally:
        manager.close()


def test_past_pending_reads_what_was_committed_after_an_open_send(qm: pymsmq.QueueManager) -> None:
    q = _queue(qm, 2)  # lookup ids 1, 2
    tx = qm.begin_transaction()
    q.send(pymsmq.Message(body=b"open", label="open"), tx)  # pending: no lookup id before its commit
    with qm.begin_transaction() as later:
        q.send(pymsmq.Message(body=b"x", label="later"), later)  # lookup id 3, committed
    # An open transaction's send holds no reader back (outside QA: a stream waited as long as the
    # transaction stayed open): it will arrive after everything there, at its commit.
    assert read_range(q, 0, 0, 0).high_water == 4
    assert [m.label for m in read_range(q, 0, 0).messages] == ["0", "1", "later"]
    r = read_range(q, 0, 0, past_pending=True)
    assert [m.label for m in r.messages] == ["0", "1", "later"]  # the pending one is not visible
    assert (r.high_water, r.first_lookup_id, r.queue_count) == (4, 1, 3)
    tx.commit()  # its message arrives now: after "later", with the next lookup id (grouped in commit order)
    after = read_range(q, 0, 0, past_pending=True).messages
    assert [(m.label, m.lookup_id) for m in after] == [("0", 1), ("1", 2), ("later", 3), ("open", 4)]
