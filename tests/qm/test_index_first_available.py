"""``MessageIndex.first`` skips the entries locked at the head without rescanning them (receives and peeks).

A state machine drives one index through every operation that changes states or positions (adds in
and out of order, tombstone revival, state changes, removals, head removals, list cuts and
compactions made frequent by a small ``_COMPACT_MIN``) and checks it against a plain model: the
first AVAILABLE entry (highest priority, then lowest lookup id) and, for peeks, the first one that is
AVAILABLE or LOCKED with AllowPeekWhenLocked.  After every step, the mark a receive starts from must
have nothing AVAILABLE before it, and the mark a peek starts from nothing a peek could return.
Scaling checks (lookups counted, nothing timed) show the point of the marks: a transaction that
receives n messages one by one, and peeks repeated while it holds them, visit each entry a bounded
number of times.

The same machine checks the tables of entries by message id and correlation id
(``MessageIndex.by_field``, built the first time a read by that field looks, at a random step, and
kept up to date by every later operation) and ``first_matching`` against the model: the first
suitable entry whose message has the value, by the table and by the scan it falls back to.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import pymsmq.qm.index as index_module
import pymsmq.qm.matching as matching_module
from pymsmq import Message, QueueManager
from pymsmq.model.ids import ObjectId
from pymsmq.qm.index import AVAILABLE, LOCKED, PENDING, Entry, MessageIndex
from pymsmq.qm.queue import Queue

_STATES = st.sampled_from([AVAILABLE, AVAILABLE, LOCKED, PENDING])
_PRIORITIES = st.sampled_from([0, 3, 3, 7])
#: Message ids and correlation ids are drawn from this small pool, so that values are shared.
_POOL = [ObjectId(uuid.UUID(int=i + 1), i) for i in range(3)]
_KEYS = st.integers(0, len(_POOL) - 1)
_FIELDS = ("id", "correlation_id")


def _message(key: int = 0) -> Any:
    # Key 0: no correlation id (None: not filed in the table).
    return Message(body=b"x", id=_POOL[key], correlation_id=_POOL[key] if key else None)


class FirstAvailableMachine(RuleBasedStateMachine):
    """One MessageIndex against a dict model of its live entries."""

    def __init__(self) -> None:
        super().__init__()
        self.index = MessageIndex()
        self.live: dict[int, Entry] = {}
        self.removed: dict[int, Entry] = {}  # taken out: may come back (a subqueue move back)
        self.next_lid = 10  # new ids go up by 3; the gaps take out-of-order adds
        self._saved = index_module._COMPACT_MIN
        self._saved_scan = matching_module.SCAN_ABOVE

    @initialize(scan_above=st.sampled_from([0, 1, 64]))
    def small_compaction_threshold(self, scan_above: int) -> None:
        index_module._COMPACT_MIN = 4  # type: ignore[misc]  # cut and compact the lists often
        matching_module.SCAN_ABOVE = scan_above  # type: ignore[misc]  # the table, the scan, both

    def teardown(self) -> None:
        index_module._COMPACT_MIN = self._saved  # type: ignore[misc]
        matching_module.SCAN_ABOVE = self._saved_scan  # type: ignore[misc]

    # ------------------------------------------------------------------ the model
    def _expected(self, peek: bool, wanted: Any = None) -> Entry | None:
        suitable = [
            e
            for e in self.live.values()
            if (e.state == AVAILABLE or (peek and e.state == LOCKED and e.allow_peek))
            and (wanted is None or wanted(e))
        ]
        return min(suitable, key=lambda e: (-e.priority, e.lookup_id), default=None)

    def _add(self, lid: int, priority: int, state: int, key: int = 0) -> None:
        entry = Entry(lid, priority, _message(key), lid % 7 + 1, state)  # sizes differ: byte sums
        self.index.add(entry)
        self.live[lid] = entry

    # ------------------------------------------------------------------ rules
    @rule(priority=_PRIORITIES, state=_STATES, key=_KEYS)
    def add_new(self, priority: int, state: int, key: int = 0) -> None:
        lid = self.next_lid
        self.next_lid += 3
        self.index.add_new(lid, priority, _message(key), 1, state, None)
        entry = self.index.get(lid)
        assert entry is not None
        self.live[lid] = entry

    @rule(data=st.data(), state=_STATES)
    def add_out_of_order(self, data: st.DataObject, state: int) -> None:
        # An id in a gap below the newest: bisect and insert (or the slot before the head).
        lid = data.draw(st.integers(1, self.next_lid - 1))
        if lid in self.live or lid in self.removed:
            return
        self._add(lid, data.draw(_PRIORITIES), state, data.draw(_KEYS))

    @precondition(lambda self: self.removed)
    @rule(data=st.data(), state=_STATES)
    def add_back(self, data: st.DataObject, state: int) -> None:
        # A removed id added again: a tombstone revived, or an insert after a compaction.
        lid = data.draw(st.sampled_from(sorted(self.removed)))
        entry = self.removed.pop(lid)
        entry.state = state
        entry.allow_peek = entry.allow_peek and state == LOCKED
        self.index.add(entry)
        self.live[lid] = entry

    @precondition(lambda self: self.live)
    @rule(data=st.data(), state=_STATES, allow_peek=st.booleans())
    def set_state(self, data: st.DataObject, state: int, allow_peek: bool) -> None:
        entry = self.live[data.draw(st.sampled_from(sorted(self.live)))]
        if state == LOCKED and entry.state == AVAILABLE:
            self.index.lock(entry, allow_peek)  # a transaction's receive, peekable or not
            return
        if entry.state == LOCKED and state != LOCKED:
            entry.allow_peek = False  # the lock ends (commit, abort) before the state changes
        self.index.set_state(entry, state)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        lid = data.draw(st.sampled_from(sorted(self.live)))
        assert self.index.remove(self.live[lid])
        self.removed[lid] = self.live.pop(lid)

    @precondition(lambda self: self.live)
    @rule(data=st.data(), k=st.integers(2, 8))
    def remove_several(self, data: st.DataObject, k: int) -> None:
        # Bursts of removals away from the head: the tombstones that trigger cuts and compactions.
        for _ in range(k):
            if not self.live:
                return
            lid = data.draw(st.sampled_from(sorted(self.live)))
            assert self.index.remove(self.live[lid])
            self.removed[lid] = self.live.pop(lid)

    @rule(priority=_PRIORITIES, k=st.integers(2, 12), state=_STATES)
    def add_several(self, priority: int, k: int, state: int) -> None:
        for _ in range(k):
            self.add_new(priority, state)

    @rule(k=st.integers(2, 8))
    def receive_several_in_a_transaction(self, k: int) -> None:
        for _ in range(k):
            self.receive_in_a_transaction(False)

    @rule(allow_peek=st.booleans())
    def receive_in_a_transaction(self, allow_peek: bool) -> None:
        # What Queue._take does inside a transaction: the first AVAILABLE entry becomes LOCKED.
        entry = self.index.first()
        assert entry is self._expected(False)
        if entry is not None:
            self.index.lock(entry, allow_peek)

    @rule()
    def receive_express(self) -> None:
        # What take_entries does: the first AVAILABLE entry leaves by remove_head (or remove).
        entry = self.index.first()
        assert entry is self._expected(False)
        if entry is not None:
            if not self.index.remove_head(entry):
                assert self.index.remove(entry)
            self.removed[entry.lookup_id] = self.live.pop(entry.lookup_id)

    @rule(peek=st.booleans())
    def first(self, peek: bool) -> None:
        assert self.index.first(peek) is self._expected(peek)

    @rule(field=st.sampled_from(_FIELDS), key=_KEYS, peek=st.booleans())
    def first_matching(self, field: str, key: int, peek: bool) -> None:
        # A read by id or correlation id (the first one of a field builds its table).
        wanted = _POOL[key]
        found = matching_module.first_matching(self.index, field, wanted, peek)
        expected = self._expected(peek, lambda e: getattr(e.message, field) == wanted)
        assert found is expected
        assert matching_module._scan(self.index, field, wanted, peek) is expected

    # ------------------------------------------------------------------ invariants
    def _before(self, marks: list[int]) -> list[Entry]:
        # The live entries between each priority's head and its mark in ``marks``.
        index = self.index
        found = []
        for p in range(8):
            lst = index._lists[p]
            for i in range(index._heads[p], min(marks[p], len(lst))):
                entry = index._entries.get(lst[i])
                if entry is not None:
                    found.append(entry)
        return found

    @invariant()
    def nothing_available_before_the_mark(self) -> None:
        assert all(e.state != AVAILABLE for e in self._before(self.index._skip))

    @invariant()
    def nothing_peekable_before_the_peek_mark(self) -> None:
        assert not any(e.visible(True) for e in self._before(self.index._peek_skip))

    @invariant()
    def tables_hold_the_live_entries(self) -> None:
        for field, table in self.index._tables.items():
            for key in _POOL:
                expected = {lid for lid, e in self.live.items() if getattr(e.message, field) == key}
                assert set(table.group(key)) == expected
                assert all(table.group(key)[lid] is self.live[lid] for lid in expected)
            values = {getattr(e.message, field) for e in self.live.values()}
            assert len(table) == len(values - {None})

    @invariant()
    def counters_and_order(self) -> None:
        index = self.index
        assert len(index) == sum(1 for e in self.live.values() if e.state != PENDING)
        assert index.locked == sum(1 for e in self.live.values() if e.state == LOCKED)
        assert index.total_bytes == sum(e.size for e in self.live.values())
        assert index.shown_bytes == sum(e.size for e in self.live.values() if e.state != PENDING)
        assert [e.lookup_id for e in index] == [
            e.lookup_id for e in sorted(self.live.values(), key=lambda e: (-e.priority, e.lookup_id))
        ]


FirstAvailableMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
TestFirstAvailable = FirstAvailableMachine.TestCase


class _CountingDict(dict[int, Entry]):
    """The index's entry dict, counting lookups (``first`` reads entries with ``get``)."""

    gets = 0

    def get(self, key: int, default: Any = None) -> Any:  # type: ignore[override]
        _CountingDict.gets += 1
        return super().get(key, default)


def _bodies(*numbers: int) -> list[bytes]:
    return [str(i).encode() for i in numbers]


@pytest.fixture
def qm() -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:")
    yield m
    m.close()


def _filled(qm: QueueManager, count: int, counted: bool = False) -> Queue:
    """A transactional queue holding messages "0", "1", ... (sent in one transaction); ``counted``:
    its index's entry lookups are counted in ``_CountingDict.gets``."""
    q = qm.create_queue(r".\private$\marks", transactional=True)
    with qm.begin_transaction() as tx:
        q.send_many([Message(body=b) for b in _bodies(*range(count))], transaction=tx)
    if counted:
        index = q._index()
        index._entries = _CountingDict(index._entries)
    return q


@pytest.mark.parametrize("n", [200, 2000])
def test_a_transaction_receiving_n_messages_visits_each_entry_a_bounded_number_of_times(
    qm: QueueManager, n: int
) -> None:
    q = _filled(qm, n, counted=True)
    _CountingDict.gets = 0
    with qm.begin_transaction() as tx:
        got = [q.receive(0, tx) for _ in range(n)]
        visits = _CountingDict.gets
    assert [m.body for m in got] == _bodies(*range(n))
    assert len(q._index()) == 0
    # One transaction locks every message it receives; each receive must not rescan them
    # (n * n / 2 lookups without the mark).
    assert visits <= 4 * n, visits


def test_an_aborted_transaction_gives_its_messages_back_before_later_ones(qm: QueueManager) -> None:
    # The mark moves back when a transaction that locked the head aborts: the next receive takes the
    # first message in queue order again, not the first one after what the other transaction holds.
    q = _filled(qm, 300)
    first = qm.begin_transaction()
    held = [q.receive(0, first) for _ in range(100)]
    second = qm.begin_transaction()
    taken = [q.receive(0, second) for _ in range(50)]
    assert [m.body for m in held + taken] == _bodies(*range(150))
    first.abort()
    with qm.begin_transaction() as tx:
        again = [q.receive(0, tx) for _ in range(100)]
        assert [m.body for m in again] == _bodies(*range(100))
        nxt = q.receive(0, tx)
        assert nxt.body == b"150"  # 100-149 are still locked by the second transaction
    second.commit()
    assert len(q._index()) == 149


@pytest.mark.parametrize("n", [200, 2000])
def test_peeks_while_a_transaction_holds_n_messages_visit_each_entry_boundedly(
    qm: QueueManager, n: int
) -> None:
    q = _filled(qm, n + 1, counted=True)
    with qm.begin_transaction() as tx:
        held = [q.receive(0, tx) for _ in range(n)]
        _CountingDict.gets = 0
        peeked = [q.peek(0) for _ in range(n)]
        visits = _CountingDict.gets
        # Each peek returns the first message the transaction does not hold, without walking
        # over the n it holds (n * n lookups without the mark).
        assert {m.body for m in peeked} == set(_bodies(n))
        assert visits <= 4 * n, visits
        assert [m.body for m in held] == _bodies(*range(n))
    assert q.peek(0).body == str(n).encode()


def test_a_message_received_with_allow_peek_stays_peekable_until_its_transaction_ends(
    qm: QueueManager,
) -> None:
    # [MS-MQDMPR] 3.1.1.12 AllowPeekWhenLocked: found behind both marks while its transaction runs.
    q = _filled(qm, 20)
    probe = qm.begin_transaction()
    ids = [q.receive(0, probe).lookup_id for _ in range(20)]
    probe.abort()
    tx = qm.begin_transaction()
    assert [q.receive(0, tx).body for _ in range(10)] == _bodies(*range(10))
    assert q.peek(0).body == b"10"  # the peek mark now sits after the ten locked messages
    assert q.receive_by_lookup_id_allow_peek(ids[12], tx).body == b"12"
    assert q.peek(0).body == b"10"
    other = qm.begin_transaction()
    assert [q.receive(0, other).body for _ in range(2)] == _bodies(10, 11)
    assert q.peek(0).body == b"12"  # locked, but peekable
    assert q.receive(0, other).body == b"13"  # a receive still skips it
    other.abort()
    tx.abort()
    assert q.peek(0).body == b"0"
