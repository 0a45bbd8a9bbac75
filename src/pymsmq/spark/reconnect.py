"""The read side of the ``msmq`` data source riding out a server restart (no pyspark here).

Every call of the source to the server opens its own connection (``options.open_queue``).  A
restart of ``pymsmq serve`` (an upgrade, a crash and its supervisor) used to fail the query that
had a call on the way or made one while the server was down: Spark does not restart a failed
streaming query, and a local-mode task is tried once.  ``with_reconnect`` runs such a call again on
a new connection while the server is unreachable (MQ_ERROR_SERVICE_NOT_AVAILABLE: refused, lost,
closed), for ``reconnectTimeout`` seconds at most (0: never), waiting 0.1 s doubling to 2 s between
tries; then the last error is raised, saying how long it was retried.

Only calls that can be run twice are retried: reading where the queue is settled, peeking at a
range (``read_partition`` goes on after the last message it gave Spark, so nothing is read twice),
removing a committed batch's range (a transaction the lost connection left open is aborted by the
server; what was removed stays removed, what was not is removed by the next try) and a streaming
write's commit (its markers make the next try skip what a lost one committed; a batch write's is
not retried: ``writer.commit_staged``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, TypeVar

from pymsmq.client.remote import RemoteQueue, RemoteQueueManager
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.spark.options import SourceOptions, open_queue

__all__ = ["FIRST_WAIT", "LONGEST_WAIT", "Retry", "unreachable", "with_reconnect"]

#: Seconds before the second try; each wait doubles, up to ``LONGEST_WAIT``.
FIRST_WAIT: Final = 0.1
LONGEST_WAIT: Final = 2.0

T = TypeVar("T")


def unreachable(exc: BaseException) -> bool:
    """The server could not be reached or the connection to it was lost (worth another try)."""
    return isinstance(exc, MSMQError) and exc.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE


class Retry:
    """The tries of one call: ``wait_or_raise(exc)`` after each failure."""

    __slots__ = ("_deadline", "_wait", "timeout")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._deadline: float | None = None
        self._wait = FIRST_WAIT

    def reset(self) -> None:
        """The server answered: a later outage gets its own ``timeout`` (outside QA: a task that
        rode out one restart failed at once at the next, the deadline of the first long past)."""
        self._deadline = None
        self._wait = FIRST_WAIT

    def wait_or_raise(self, exc: MSMQError) -> None:
        """Sleep before the next try, or raise ``exc`` (with how long it was retried) if the server
        was unreachable for ``timeout`` seconds already, or ``exc`` is not worth another try."""
        if not unreachable(exc) or self.timeout <= 0:
            raise exc
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self.timeout
        left = self._deadline - now
        if left <= 0:
            # The time spent, which a last try (a connect or handshake timeout) may take past the
            # option's (outside QA: "for 15 s" after 41 s).
            spent = now - (self._deadline - self.timeout)
            raise MSMQError(
                f"{exc.args[0] if exc.args else exc} (the msmq data source tried again for "
                f"{spent:.0f} s: option reconnectTimeout {self.timeout:g} s)",
                exc.hresult,
            ) from exc
        time.sleep(min(self._wait, left))
        self._wait = min(self._wait * 2, LONGEST_WAIT)


def with_reconnect(
    opts: SourceOptions, call: Callable[[RemoteQueueManager, RemoteQueue], T], send: bool = False
) -> T:
    """``call(qm, queue)`` on a new connection to ``opts.url``, tried again while the server is
    unreachable (see the module docstring); ``send`` as for ``open_queue``."""
    retry = Retry(opts.reconnect_timeout)
    while True:
        try:
            with open_queue(opts, send) as (qm, q):
                return call(qm, q)
        except MSMQError as exc:
            retry.wait_or_raise(exc)
