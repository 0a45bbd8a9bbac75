"""``TimerHeap`` (deadline buckets) behaves exactly like a heap of ``(deadline, seq, queue, entry)``.

The reference below is the plain heap the queue manager used before the buckets; Hypothesis drives
both with the same pushes (many sharing a deadline, whole and fractional seconds), receives
(``removed``), compactions, deletions of queues and ``pop_due`` calls, and compares every answer,
the order of due items, and when the timer thread is woken.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pymsmq.qm.timers import TimerHeap


class _State:
    def __init__(self) -> None:
        self.deleted = False


class _Entry:
    def __init__(self, expires_at: float) -> None:
        self.expires_at: float | None = expires_at


class _ReferenceHeap:
    def __init__(self, wake: Any) -> None:
        self._heap: list[tuple[float, int, Any, Any]] = []
        self._counter = itertools.count()
        self._wake = wake
        self.stale = 0

    def __len__(self) -> int:
        return len(self._heap)

    @property
    def next_deadline(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def push(self, deadline: float, state: Any, entry: Any) -> None:
        heap = self._heap
        earliest = not heap or deadline < heap[0][0]
        heapq.heappush(heap, (deadline, next(self._counter), state, entry))
        if earliest and self._wake is not None:
            self._wake()

    def due(self, now: float) -> bool:
        return bool(self._heap) and self._heap[0][0] <= now

    def pop_due(self, now: float) -> list[tuple[Any, Any, float]]:
        out = []
        while self._heap and self._heap[0][0] <= now:
            deadline, _, state, entry = heapq.heappop(self._heap)
            out.append((state, entry, deadline))
        return out

    def removed(self, entry: Any) -> None:
        entry.expires_at = None
        self.stale += 1

    def compact(self) -> None:
        self._heap = [item for item in self._heap if item[3].expires_at == item[0] and not item[2].deleted]
        heapq.heapify(self._heap)
        self.stale = 0


deadlines = st.sampled_from([5, 5.0, 6.0, 7.5, 7.0, 10.0, 3.0, 1e9])
actions = st.lists(
    st.one_of(
        st.tuples(st.just("push"), deadlines, st.integers(0, 2)),
        st.tuples(st.just("remove"), st.integers(0, 1000)),
        st.tuples(st.just("pop"), st.sampled_from([0.0, 5.0, 6.5, 7.5, 20.0, 2e9])),
        st.tuples(st.just("delete_queue"), st.integers(0, 2)),
        st.tuples(st.just("compact")),
        st.tuples(st.just("clear")),
    ),
    max_size=80,
)


@given(actions)
def test_buckets_equal_the_plain_heap(steps: list[tuple[Any, ...]]) -> None:
    woken: list[str] = []
    fast = TimerHeap(lambda: woken.append("fast"))
    ref = _ReferenceHeap(lambda: woken.append("ref"))
    states = [_State() for _ in range(3)]
    # Each side gets its own entries (``removed`` clears expires_at), paired by position.
    live: list[tuple[_Entry, _Entry]] = []
    pair_of: dict[int, _Entry] = {}
    for step in steps:
        kind = step[0]
        if kind == "push":
            _, deadline, q = step
            a, b = _Entry(deadline), _Entry(deadline)
            live.append((a, b))
            pair_of[id(a)] = b
            fast.push(deadline, states[q], a)  # type: ignore[arg-type]
            ref.push(deadline, states[q], b)
        elif kind == "remove" and live:
            a, b = live.pop(step[1] % len(live))
            if a.expires_at is not None:
                fast.removed(a)  # type: ignore[arg-type]
                ref.removed(b)
        elif kind == "pop":
            got = fast.pop_due(step[1])
            want = ref.pop_due(step[1])
            assert [(s, pair_of[id(e)], d) for s, e, d in got] == want
        elif kind == "delete_queue":
            states[step[1]].deleted = True
        elif kind == "compact":
            fast.compact()
            ref.compact()
        elif kind == "clear":
            fast.clear()
            ref._heap.clear()
            ref.stale = 0
        assert len(fast) == len(ref) and fast.stale == ref.stale
        assert fast.next_deadline == ref.next_deadline
        assert woken.count("fast") == woken.count("ref")
        for now in (0.0, 5.0, 7.4, 1e10):
            assert fast.due(now) == ref.due(now)


def test_many_pushes_at_one_deadline_share_a_bucket() -> None:
    timers = TimerHeap()
    state = _State()
    entries = [_Entry(100.0) for _ in range(1000)]
    for e in entries:
        timers.push(100.0, state, e)  # type: ignore[arg-type]
    assert len(timers) == 1000 and len(timers._heap) == 1
    assert [e for _, e, _ in timers.pop_due(100.0)] == entries and len(timers) == 0
