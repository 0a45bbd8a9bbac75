"""``WorkPool``: threads for queue-manager calls that may block (fsync), with batched completions.

``loop.run_in_executor`` costs, per call, a ``concurrent.futures.Future``, its asyncio wrapper and
one ``call_soon_threadsafe`` (a write to the loop's self-pipe and a loop wake-up) when the call
ends.  Recoverable sends finish in bursts -- one group commit of the store wakes every sender it
made durable at once -- so the pool keeps one list of finished calls and wakes the loop once per
burst: the first finisher schedules ``_drain`` and the ones that finish before it runs just append.
``submit(fn)`` returns an ``asyncio.Future`` completed on the loop with ``fn``'s result or exception.
Threads are started on demand up to ``max_threads`` and stay for the pool's lifetime.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["WorkPool", "chain_future"]

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

    def shutdown(self, wait: bool = True) -> None:
        """Refuse new work; with ``wait``, let the queued and running calls finish first."""
        self._closed = True
        for _ in self._threads:
            self._jobs.put(None)
        if wait:
            for t in self._threads:
                t.join()


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
