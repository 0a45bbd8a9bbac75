"""``take_entries`` removes head entries inline: the index is left as ``index.remove`` leaves it.

Two queue managers with the same messages (several priorities, some received by lookup id so the
head runs meet removed ids, enough of them to compact the order):
one takes with ``take_entries``, the other with single ``receive(0)`` calls; the messages taken and
the index internals (order lists from their heads, tombstones, bytes, counters) must be equal.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.qm.index import Entry, MessageIndex
from pymsmq.qm.receive_batch import take_entries
from pymsmq.qm.timers import FakeClock

_Q = r".\private$\runs"


def _state(index: MessageIndex) -> tuple[Any, ...]:
    # Every field index.remove maintains, exactly (order lists, heads, tombstone counts included).
    return (
        tuple(tuple(lst) for lst in index._lists),
        tuple(index._heads),
        tuple(index._dead),
        tuple(index._entries),
        index.total_bytes,
        index.locked,
        index.pending,
        index.pending_bytes,
    )


def _fill(qm: QueueManager, priorities: list[int], holes: list[int]) -> Any:
    q = qm.create_queue(_Q)
    for i, p in enumerate(priorities):
        q.send(Message(body=b"b" * (i % 7), priority=p))
    # Messages received by lookup id: removed ids (tombstones) inside the order the heads skip.
    ids = [e.lookup_id for e in q._index()._entries.values()]
    for k in holes:
        if ids:
            lid = ids.pop(k % len(ids))
            q.receive_by_lookup_id(lid)
    return q


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from([0, 3, 3, 3, 7]), min_size=0, max_size=2600),
    st.integers(0, 3000),
    st.lists(st.integers(0, 10**6), max_size=60),
)
def test_take_entries_leaves_the_index_as_single_receives(
    priorities: list[int], take: int, holes: list[int]
) -> None:
    clock = FakeClock(1000.25)
    one = QueueManager.open(":memory:", clock)
    fast = QueueManager.open(":memory:", clock)
    try:
        q1 = _fill(one, priorities, holes)
        q2 = _fill(fast, priorities, holes)
        got1: list[tuple[bytes, int, int]] = []
        for _ in range(take):
            try:
                m = q1.receive(0)
            except MSMQError:
                break
            got1.append((m.body, m.priority, m.lookup_id))
        got2: list[tuple[bytes, int, int]] = []

        def accept(entry: Entry) -> bool:
            m = entry.message
            got2.append((m.body, m.priority, m.lookup_id))
            return True

        take_entries(q2, take, accept)
        assert got1 == got2
        assert _state(q1._index()) == _state(q2._index())
        # What is left receives the same way.
        rest1 = [q1.receive(0).lookup_id for _ in range(len(q1._index()._entries))]
        rest2: list[int] = []
        take_entries(q2, len(priorities), lambda e: rest2.append(e.lookup_id) is None)
        assert rest1 == rest2
        assert _state(q1._index()) == _state(q2._index())
    finally:
        one.close()
        fast.close()
