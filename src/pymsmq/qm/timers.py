"""Expiry timers of the queue manager: one heap, one thread, an injectable clock.

[MS-MQDMPR] 3.1.2.4 / 3.1.7.2.7: a Time To Be Received timer starts when a message is enqueued;
[MC-MQAC] 3.1.6.1.1 says what happens when it expires (see ``pymsmq.qm.lifecycle``).  pymsmq keeps
every deadline in ONE binary heap per queue manager (no thread or timer object per message):

* ``TimerHeap.push`` appends ``(queue, entry)`` to the bucket of its deadline (a heap of distinct
  deadlines orders the buckets): O(1) for a deadline already present, O(log n) for a new one, and
  no per-message object, so messages with timers cost about the same to send as messages without.
* Receives do not search the heap: an entry that left its queue stays in the heap as a stale item
  and is skipped when it comes due (lazy deletion).  ``stale`` counts the known stale items; when
  they are more than half of the heap it is rebuilt (amortised O(1)).
* Driving the heap: with the real clock a single daemon thread (``TimerThread``) sleeps until the
  earliest deadline and is woken early when an earlier one is pushed.  Tests inject a
  ``FakeClock``: no thread is started and ``clock.advance(seconds)`` (or ``qm.run_timers()``) runs
  every timer that is due at the new time, synchronously, in the caller's thread.
* Reads also sweep due timers before they look at a queue, so a receive at time ``t`` never returns
  a message whose deadline is ``<= t`` even if the timer thread has not woken yet.
"""

from __future__ import annotations

import heapq
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pymsmq.qm.index import Entry
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.queue_state import QueueState

__all__ = ["DEADLINE_STEP", "DEADLINE_STEPS", "FakeClock", "TimerHeap", "TimerThread", "expiry_deadline"]

#: A send's expiry deadline is rounded up to a multiple of this many seconds (1/64 s: exact in
#: binary, so deadlines compare equal): a message expires up to 15.6 ms after its instant plus its
#: TimeToBeReceived, never before; the sends of one such step share a timer bucket.
DEADLINE_STEPS: Final = 64.0
DEADLINE_STEP: Final = 1.0 / DEADLINE_STEPS


def expiry_deadline(now: float, ttbr: int) -> float:
    """The expiry deadline of a message sent at ``now`` with the finite TimeToBeReceived ``ttbr``
    (seconds): ``now + ttbr`` rounded up to ``DEADLINE_STEP``, so that the sends of a burst share a
    timer bucket; a TTBR of 0 is not rounded (expired at once: rounded, it was receivable for up to
    15.6 ms, outside QA 2026-11-27)."""
    return -(-(now + ttbr) * DEADLINE_STEPS // 1.0) / DEADLINE_STEPS if ttbr else now


_MIN_COMPACT: Final = 1 << 14


class FakeClock:
    """A manual clock for tests: ``QueueManager.open(dir, clock=FakeClock(t0))``.

    Calling it returns the current fake time (POSIX seconds).  ``advance(seconds)`` moves time
    forward and then runs the due timers of every queue manager opened with this clock, so expiry
    happens synchronously inside ``advance``.  ``set(t)`` jumps to an absolute time (same effect).
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()
        self._qms: weakref.WeakSet[QueueManager] = weakref.WeakSet()

    def __call__(self) -> float:
        return self._now

    def __repr__(self) -> str:
        return f"FakeClock({self._now!r})"

    def attach(self, qm: QueueManager) -> None:
        """Called by ``QueueManager``: ``advance`` will run ``qm``'s timers."""
        self._qms.add(qm)

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (>= 0) and run every timer that is now due."""
        if seconds < 0:
            raise ValueError("a FakeClock never goes backwards")
        self.set(self._now + seconds)

    def set(self, now: float) -> None:
        """Jump to ``now`` (not earlier than the current time) and run due timers."""
        with self._lock:
            if now < self._now:
                raise ValueError("a FakeClock never goes backwards")
            self._now = float(now)
        for qm in list(self._qms):
            if not qm.closed:
                qm.run_timers()


class TimerHeap:
    """Deadlines of messages (absolute clock seconds) in a binary heap with lazy deletion.

    Items with the same deadline share one bucket: the heap holds each distinct deadline once and
    ``_buckets`` maps it to a flat list ``[queue, entry, queue, entry, ...]`` in push order.  A send's
    deadline is its instant plus its TimeToBeReceived rounded up to ``DEADLINE_STEP``, so a burst of
    sends fills a few buckets: a push is a dict look-up and two list appends, with no per-message
    heap item for the garbage collector to track.  (Exact deadlines, one bucket each, made a million
    sends with timers 36% slower; whole seconds, counted from SentTime, expired messages up to a
    second early.)  The order is
    that of a heap of ``(deadline, push sequence)``.

    Not thread-safe by itself: the queue manager calls it with its lock held.
    """

    __slots__ = ("_buckets", "_count", "_heap", "_wake", "stale")

    def __init__(self, wake: Callable[[], None] | None = None) -> None:
        #: The distinct deadlines that have a bucket (a heap: ``_heap[0]`` is the earliest).
        self._heap: list[float] = []
        self._buckets: dict[float, list[QueueState | Entry]] = {}
        self._count = 0
        self._wake = wake
        #: Items known to be stale (their entry left its queue); drives compaction.
        self.stale = 0

    def __len__(self) -> int:
        """Timer items held, stale ones included."""
        return self._count

    @property
    def next_deadline(self) -> float | None:
        """The earliest deadline in the heap (stale items included), or None."""
        return self._heap[0] if self._heap else None

    def push(self, deadline: float, state: QueueState, entry: Entry) -> None:
        """Arm a timer for ``entry`` of queue ``state``; wakes the timer thread if it is earliest."""
        bucket = self._buckets.get(deadline)
        if bucket is None:
            bucket = self._buckets[deadline] = []
            heap = self._heap
            earliest = not heap or deadline < heap[0]
            heapq.heappush(heap, deadline)
            if earliest and self._wake is not None:
                self._wake()
        bucket.append(state)
        bucket.append(entry)
        self._count += 1

    def due(self, now: float) -> bool:
        """True when at least one item's deadline is ``<= now``."""
        heap = self._heap
        return bool(heap) and heap[0] <= now

    def pop_due(self, now: float) -> list[tuple[QueueState, Entry, float]]:
        """Remove and return (queue, entry, deadline) of every item due at ``now``, earliest first."""
        heap = self._heap
        buckets = self._buckets
        out: list[tuple[QueueState, Entry, float]] = []
        pop = heapq.heappop
        while heap and heap[0] <= now:
            deadline = pop(heap)
            bucket = buckets.pop(deadline)
            self._count -= len(bucket) // 2
            items = iter(bucket)
            for state, entry in zip(items, items, strict=True):
                out.append((state, entry, deadline))  # type: ignore[arg-type]
        return out

    def removed(self, entry: Entry) -> None:
        """``entry`` left its queue for good: its heap item becomes stale (rebuild when most are)."""
        entry.expires_at = None
        self.stale += 1
        if self.stale > _MIN_COMPACT and self.stale * 2 > self._count:
            self.compact()

    def compact(self) -> None:
        """Drop stale items (entries whose deadline was cleared, or that left their queue)."""
        buckets: dict[float, list[QueueState | Entry]] = {}
        count = 0
        for deadline, bucket in self._buckets.items():
            kept: list[QueueState | Entry] = []
            items = iter(bucket)
            for state, entry in zip(items, items, strict=True):
                if entry.expires_at == deadline and not state.deleted:  # type: ignore[union-attr]
                    kept.append(state)
                    kept.append(entry)
            if kept:
                buckets[deadline] = kept
                count += len(kept) // 2
        self._buckets = buckets
        self._heap = list(buckets)
        heapq.heapify(self._heap)
        self._count = count
        self.stale = 0

    def clear(self) -> None:
        """Forget every timer."""
        self._heap.clear()
        self._buckets.clear()
        self._count = 0
        self.stale = 0


class TimerThread:
    """The one timer thread of a queue manager on the real clock.

    Sleeps on a condition of the queue manager's lock until the earliest deadline, is notified
    when an earlier deadline is pushed, and calls ``run`` (which runs due timers) on waking.
    """

    def __init__(
        self,
        lock: threading.RLock,
        clock: Callable[[], float],
        heap: Callable[[], TimerHeap],
        run: Callable[[], object],
    ) -> None:
        self._cond = threading.Condition(lock)
        self._clock = clock
        self._heap = heap
        self._run = run
        self._stop = False
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        """Start the thread on first use; otherwise wake it to re-read the earliest deadline."""
        with self._cond:
            if self._thread is None:
                if self._stop:
                    return
                self._thread = threading.Thread(target=self._loop, name="pymsmq-timers", daemon=True)
                self._thread.start()
            self._cond.notify()

    def stop(self) -> None:
        """Stop the thread (idempotent); called by ``QueueManager.close``."""
        with self._cond:
            self._stop = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _loop(self) -> None:
        cond = self._cond
        while True:
            with cond:
                if self._stop:
                    return
                deadline = self._heap().next_deadline
                if deadline is None:
                    cond.wait()
                    continue
                delay = deadline - self._clock()
                if delay > 0:
                    cond.wait(min(delay, 3600.0))
                    continue
            try:
                self._run()
            except Exception:  # a failing store must not kill the timer thread
                with cond:
                    if not self._stop:
                        cond.wait(0.5)
