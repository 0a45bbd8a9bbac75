"""The server's wait pool shared among identities.

Reads that wait for a message on a thread (cursor reads, RECEIVE_MANY transactional and peek
batches; head receives and peeks and reads by id or correlation id park on notifications instead,
``waits.ArrivalWait``, and take a thread only to receive a message that is there) each occupy one
of the pool's threads for as long as they wait.
Without a limit, one connection with a right to peek one queue parked 1,024 infinite cursor waits
and every other client's transactional receive waited until it disconnected.  So:

* the owner's reads (a server with one token has one identity, the owner) take any free thread,
  as before shares existed;
* the other identities together occupy at most half of the threads, and each at most a quarter:
  whatever they do, the owner keeps half of the pool, and one of them cannot take all of theirs;
* a read over its identity's limit queues (first come, first served, across identities) and starts
  when a thread of that budget frees up; a read whose timeout passes while it is queued ends with
  MQ_ERROR_IO_TIMEOUT without starting (one that starts late then waits up to its whole timeout).

Everything runs on the event loop thread.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from pymsmq.qm.waiters import not_found
from pymsmq.server.workers import chain_future

__all__ = ["WaitShares"]

_Job = tuple[Callable[[], Any], asyncio.Future[Any]]


class WaitShares:
    """``submit(identity, fn, timeout, exempt)``: ``fn`` on the wait pool within the limits."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: Executor, threads: int) -> None:
        self.loop = loop
        self.pool = pool
        #: Threads one (non-owner) identity may occupy at once.
        self.share = max(1, threads // 4)
        #: Threads the non-owner identities together may occupy at once.
        self.budget = max(1, threads // 2)
        self._total = 0
        self._running: dict[str, int] = {}
        self._queued: dict[str, deque[_Job]] = {}

    def running(self, identity: str) -> int:
        """Wait-pool jobs of ``identity`` started and not ended (the owner's are not counted)."""
        return self._running.get(identity, 0)

    def queued(self, identity: str) -> int:
        """Jobs of ``identity`` waiting for a thread of their budget (expired ones included)."""
        return len(self._queued.get(identity, ()))

    def submit(
        self, identity: str, fn: Callable[[], Any], timeout: float | None = None, exempt: bool = False
    ) -> asyncio.Future[Any]:
        """A future of ``fn()`` run on the pool, now or once the limits allow; ``exempt``: the
        owner's (no limit); ``timeout``: the read's timeout in seconds (see the module docstring)."""
        if exempt:
            return self.loop.run_in_executor(self.pool, fn)
        if identity not in self._queued and self._may_start(identity):
            return self._start(identity, fn)
        outer: asyncio.Future[Any] = self.loop.create_future()
        self._queued.setdefault(identity, deque()).append((fn, outer))
        if timeout is not None:
            self.loop.call_later(timeout, _expire, outer, timeout)
        return outer

    def cancel_all(self) -> None:
        """The server stops: the queued jobs are cancelled (never started)."""
        queued, self._queued = self._queued, {}
        for jobs in queued.values():
            for _, outer in jobs:
                outer.cancel()

    def _may_start(self, identity: str) -> bool:
        return self._total < self.budget and self._running.get(identity, 0) < self.share

    def _start(self, identity: str, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        self._running[identity] = self._running.get(identity, 0) + 1
        self._total += 1
        fut = self.loop.run_in_executor(self.pool, fn)
        fut.add_done_callback(functools.partial(self._ended, identity))
        return fut

    def _ended(self, identity: str, _fut: asyncio.Future[Any]) -> None:
        self._total -= 1
        left = self._running[identity] - 1
        if left:
            self._running[identity] = left
        else:
            del self._running[identity]
        self._start_queued()

    def _start_queued(self) -> None:
        # Start queued jobs while the limits allow, oldest identity first.
        started = True
        while started and self._total < self.budget:
            started = False
            for identity in list(self._queued):
                jobs = self._queued[identity]
                while jobs and jobs[0][1].done():  # expired or cancelled while queued
                    jobs.popleft()
                if not jobs:
                    del self._queued[identity]
                    continue
                if not self._may_start(identity):
                    continue
                fn, outer = jobs.popleft()
                if not jobs:
                    del self._queued[identity]
                inner = self._start(identity, fn)
                inner.add_done_callback(functools.partial(_chain_to, outer))
                started = True
                if self._total >= self.budget:
                    return


def _chain_to(outer: asyncio.Future[Any], inner: asyncio.Future[Any]) -> None:
    chain_future(inner, outer)


def _expire(outer: asyncio.Future[Any], timeout: float) -> None:
    # The read's timeout passed while it was queued: what a read that found nothing in time gets.
    if not outer.done():
        outer.set_exception(not_found(timeout))
