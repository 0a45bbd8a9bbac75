"""``WorkPool``: threads for queue-manager calls that may block (fsync), with batched completions.

``loop.run_in_executor`` costs, per call, a ``concurrent.futures.Future``, its asyncio wrapper and
one ``call_soon_threadsafe`` (a write to the loop's self-pipe and a loop wake-up) when the call
ends.  Recoverable sends finish in bursts -- one group commit of the store wakes every sender it
made durable at once -- so the pool keeps one list of finished calls and wakes the loop once per
burst: the first finisher schedules ``_drain`` and the ones that finish before it runs just append.
``submit(fn)`` returns an ``asyncio.Future`` completed on the loop with ``fn``'s result or exception.
Threads are started on demand up to ``max_threads`` and stay for the pool's lifetime.

``PoolShare``: one connection's share of the pool, so that one client's pipelined requests cannot
queue every other client's work behind all of theirs.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

__all__ = ["PoolShare", "WorkPool", "chain_future", "pool_share"]

_Job = tuple[Callable[[], Any], "asyncio.Future[Any]"]


class WorkPool:
    """A fixed-maximum thread pool whose results come back to one asyncio loop in batches."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_threads: int, name: str = "pymsmq-work") -> None:
        self.loop = loop
        self.max_threads = max(1, max_threads)
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._finished: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        self._wake_due = False
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._closed = False

    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Run ``fn`` on a pool thread; the future completes on the loop (call from the loop only)."""
        if self._closed:
            raise RuntimeError("the work pool is shut down")
        fut: asyncio.Future[Any] = self.loop.create_future()
        with self._lock:
            start = self._idle == 0 and len(self._threads) < self.max_threads
            if not start:
                self._idle -= 1 if self._idle else 0
        self._jobs.put((fn, fut))
        if start:
            t = threading.Thread(target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True)
            self._threads.append(t)
            t.start()
        return fut

    def _work(self) -> None:
        jobs = self._jobs
        lock = self._lock
        finished = self._finished
        while True:
            job = jobs.get()
            if job is None:
                return
            fn, fut = job
            try:
                result, error = fn(), None
            except BaseException as exc:  # handed to the loop, like run_in_executor does
                result, error = None, exc
            with lock:
                finished.append((fut, result, error))
                wake = not self._wake_due
                self._wake_due = True
                self._idle += 1
            # An idle thread keeps nothing of its last call (a 4 MB answer, a dead connection's
            # transactions) while it waits for the next one.
            del job, fn, fut, result, error
            if wake:
                try:
                    self.loop.call_soon_threadsafe(self._drain)
                except RuntimeError:  # the loop is closed: nobody waits for these any more
                    return

    def _drain(self) -> None:
        with self._lock:
            done = self._finished[:]
            self._finished.clear()
            self._wake_due = False
        for fut, result, error in done:
            if fut.cancelled():
                continue
            if error is None:
                fut.set_result(result)
            else:
                fut.set_exception(error)

    def drop_queued(self, error: BaseException) -> int:
        """Fail the calls not started yet with ``error`` (call from the loop only); how many."""
        dropped = 0
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return dropped
            if job is None:  # (a thread's stop signal: kept)
                self._jobs.put(None)
                return dropped
            fut = job[1]
            if not fut.done():
                fut.set_exception(error)
            dropped += 1

    def shutdown(self, wait: bool = True) -> None:
        """Refuse new work; with ``wait``, let the queued and running calls finish first."""
        self._closed = True
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for t in self._threads:
                t.join()


def pool_share(max_threads: int) -> int:
    """The calls one connection may have on a pool of ``max_threads`` at once: a quarter of it."""
    return max(1, max_threads // 4)


class PoolShare:
    """One owner's (a connection's) share of a ``WorkPool``: at most ``limit`` of its calls on the
    pool at once; the others wait here, in order, and go to the pool as its calls end.  The pool's
    queue is first come, first served: outside QA, one client's flood of requests run off the loop
    queued every other client's commits behind all of them."""

    def __init__(self, pool: WorkPool, limit: int) -> None:
        self.pool = pool
        self.limit = max(1, limit)
        self.running = 0
        self._waiting: deque[_Job] = deque()

    @property
    def busy(self) -> bool:
        """Whether calls of this share run or wait."""
        return bool(self.running or self._waiting)

    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """As ``WorkPool.submit``, within the share (call from the loop only)."""
        if self.running < self.limit:
            return self._start(fn)
        fut: asyncio.Future[Any] = self.pool.loop.create_future()
        self._waiting.append((fn, fut))
        return fut

    def _start(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        fut = self.pool.submit(fn)
        self.running += 1
        fut.add_done_callback(self._ended)  # (before the caller's callbacks: the next call starts first)
        return fut

    def _ended(self, _: asyncio.Future[Any]) -> None:
        self.running -= 1
        waiting = self._waiting
        while waiting and self.running < self.limit:
            fn, fut = waiting.popleft()
            if fut.done():
                continue
            try:
                inner = self._start(fn)
            except RuntimeError:  # the pool is shut down (past a stopping server's grace)
                fut.set_exception(
                    MSMQError("the server is shutting down", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
                )
                continue
            inner.add_done_callback(functools.partial(chain_future, dst=fut))


def chain_future(src: asyncio.Future[Any], dst: asyncio.Future[Any]) -> None:
    """Complete ``dst`` as ``src`` completed (result, exception or cancellation), unless it is done."""
    if dst.done():
        return
    if src.cancelled():
        dst.cancel()
    elif src.exception() is not None:
        dst.set_exception(src.exception())  # type: ignore[arg-type]
    else:
        dst.set_result(src.result())
