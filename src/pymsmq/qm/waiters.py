"""Blocked receives and peeks ([MS-MQDMPR] 3.1.7.3.1 Wait For New Message).

A reader that finds nothing suitable waits on its queue's ``threading.Condition`` (which shares
the queue manager's lock); every change that can make a message suitable (a send, a commit, an
abort, a move) notifies it, so a blocked receive wakes as soon as a message arrives: no polling.

Timeouts are seconds: 0 = do not wait, ``None`` = wait forever ([MC-MQAC] INFINITE).  Waiting
uses the monotonic clock, not the queue manager's injected wall clock (that one drives expiry).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final, TypeVar

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

__all__ = ["INFINITE_MS", "WaitCancel", "normalize_timeout", "not_found", "wait_for"]

T = TypeVar("T")

# [MC-MQAC] ReceiveTimeout INFINITE.
INFINITE_MS: Final = 0xFFFFFFFF


#: INFINITE (0xFFFFFFFF milliseconds) in seconds: a timeout this long or longer never ends.
_INFINITE_SECONDS: Final = 0xFFFFFFFF / 1000


def normalize_timeout(timeout: float | None) -> float | None:
    """Seconds to wait: ``None`` (forever) or a non-negative number; negative is INVALID_PARAMETER.

    MSMQ's receive timeout is a DWORD of milliseconds whose largest value, INFINITE (0xFFFFFFFF),
    means no timeout ([MC-MQAC] 3.11.4.1 ReceiveTimeout; mq.h MQReceiveMessage dwTimeout): a timeout
    of that many milliseconds or more (``math.inf`` included) is forever, as ``None`` is.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout != timeout:
        raise MSMQError(f"invalid timeout {timeout!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
    if timeout < 0:
        raise MSMQError(f"invalid timeout {timeout!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
    if timeout >= _INFINITE_SECONDS:
        return None
    return float(timeout)


def not_found(timeout: float | None) -> MSMQError:
    """The error of a read that found nothing in time ([MC-MQAC] 3.11.4.1 timeout semantics).

    Timeout 0 -> MQ_ERROR_MESSAGE_NOT_FOUND (0xC00E0088, errata E1); positive -> MQ_ERROR_IO_TIMEOUT.
    """
    if timeout == 0:
        return MSMQError("no message in the queue", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
    return MSMQError("no message arrived before the timeout", HResult.MQ_ERROR_IO_TIMEOUT)


class WaitCancel:
    """The cancel switch of the blocked reads one call makes ([MS-MQDMPR] 3.1.7.1.17 Cancel Waiting
    Message Read Request): ``run(fn)`` calls ``fn`` with the switch armed for this thread, and
    ``cancel()`` (from any thread) makes a read of ``fn`` that waits, or comes to wait, raise
    MQ_ERROR_OPERATION_CANCELLED instead (the Waiting Message Read Timer Stop's status).  A read that
    finds its message without waiting is not stopped."""

    __slots__ = ("_cond", "cancelled")

    def __init__(self) -> None:
        self.cancelled = False
        self._cond: threading.Condition | None = None

    def run(self, fn: Callable[[], T]) -> T:
        """``fn()``, its waits cancellable by this switch."""
        _armed.switch = self
        try:
            return fn()
        finally:
            _armed.switch = None

    def cancel(self) -> None:
        """Stop the wait (now, or when it starts)."""
        self.cancelled = True
        cond = self._cond
        if cond is not None:
            with cond:
                cond.notify_all()

    def _check(self, cond: threading.Condition) -> None:
        # With ``cond``'s lock held: a cancel before this point raises; one after it notifies.
        self._cond = cond
        if self.cancelled:
            raise MSMQError("the receive was cancelled", HResult.MQ_ERROR_OPERATION_CANCELLED)


# The switch of the call this thread runs (``WaitCancel.run``).
_armed = threading.local()


def wait_for(cond: threading.Condition, attempt: Callable[[], T | None], timeout: float | None) -> T | None:
    """Call ``attempt`` (with ``cond``'s lock held) until it returns a value or ``timeout`` passes.

    ``attempt`` may raise (queue deleted, handle closed): the error propagates.  Returns None on
    timeout.  The caller holds ``cond``'s lock.  Inside ``WaitCancel.run`` a cancel ends the wait
    with MQ_ERROR_OPERATION_CANCELLED.
    """
    result = attempt()
    if result is not None or timeout == 0:
        return result
    switch: WaitCancel | None = getattr(_armed, "switch", None)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if switch is not None:
            switch._check(cond)
        if deadline is None:
            cond.wait()
        else:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            cond.wait(remaining)
        if switch is not None:
            switch._check(cond)
        result = attempt()
        if result is not None:
            return result
