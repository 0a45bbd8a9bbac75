"""The server's wait pool shared among identities.

Reads that wait for a message on a thread (cursor reads, transactional and recoverable receives
of the head while they wait; head receives and peeks and reads by id or correlation id park on
notifications instead, ``waits.ArrivalWait``) each occupy one of the pool's threads for as long
as they wait.  One identity may occupy at most ``share`` of them at once; its further waiting
reads queue, first come first served, and start as its own earlier ones end.  Without it one
connection with a right to peek one queue parked 1,024 infinite waits and every other client's
transactional receive waited until it disconnected.  A read queued here starts its timeout when it
starts (as a read the pool could not start at once always did).

Everything runs on the event loop thread.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from pymsmq.server.workers import chain_future

__all__ = ["WaitShares"]


class WaitShares:
    """``submit(identity, fn)``: ``fn`` on the wait pool within ``identity``'s share."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: Executor, share: int) -> None:
        self.loop = loop
        self.pool = pool
        #: Threads one identity may occupy at once.
        self.share = max(1, share)
        self._running: dict[str, int] = {}
        self._queued: dict[str, deque[tuple[Callable[[], Any], asyncio.Future[Any]]]] = {}

    def running(self, identity: str) -> int:
        """Wait-pool jobs of ``identity`` started and not ended."""
        return self._running.get(identity, 0)

    def queued(self, identity: str) -> int:
        """Jobs of ``identity`` waiting for its share."""
        return len(self._queued.get(identity, ()))

    def submit(self, identity: str, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """A future of ``fn()`` run on the pool: now, or once ``identity`` is within its share."""
        if self._running.get(identity, 0) < self.share:
            return self._start(identity, fn)
        outer: asyncio.Future[Any] = self.loop.create_future()
        self._queued.setdefault(identity, deque()).append((fn, outer))
        return outer

    def cancel_all(self) -> None:
        """The server stops: the queued jobs are cancelled (never started)."""
        queued, self._queued = self._queued, {}
        for jobs in queued.values():
            for _, outer in jobs:
                outer.cancel()

    def _start(self, identity: str, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        self._running[identity] = self._running.get(identity, 0) + 1
        fut = self.loop.run_in_executor(self.pool, fn)
        fut.add_done_callback(lambda _f: self._ended(identity))
        return fut

    def _ended(self, identity: str) -> None:
        left = self._running[identity] - 1
        if left:
            self._running[identity] = left
        else:
            del self._running[identity]
        jobs = self._queued.get(identity)
        while jobs:
            fn, outer = jobs.popleft()
            if not jobs:
                del self._queued[identity]
            if outer.done():  # cancelled while queued (the connection went)
                continue
            inner = self._start(identity, fn)
            inner.add_done_callback(functools.partial(_chain_to, outer))
            return


def _chain_to(outer: asyncio.Future[Any], inner: asyncio.Future[Any]) -> None:
    chain_future(inner, outer)
