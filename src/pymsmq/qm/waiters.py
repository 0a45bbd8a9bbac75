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
from typing import TypeVar

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.timeouts import INFINITE_MS, normalize_timeout, timeout_ms

__all__ = ["INFINITE_MS", "normalize_timeout", "not_found", "timeout_ms", "wait_for"]

T = TypeVar("T")


def not_found(timeout: float | None) -> MSMQError:
    """The error of a read that found nothing in time ([MC-MQAC] 3.11.4.1 timeout semantics).

    Timeout 0 -> MQ_ERROR_MESSAGE_NOT_FOUND (0xC00E0088, errata E1); positive -> MQ_ERROR_IO_TIMEOUT.
    """
    if timeout == 0:
        return MSMQError("no message in the queue", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
    return MSMQError("no message arrived before the timeout", HResult.MQ_ERROR_IO_TIMEOUT)


def wait_for(cond: threading.Condition, attempt: Callable[[], T | None], timeout: float | None) -> T | None:
    """Call ``attempt`` (with ``cond``'s lock held) until it returns a value or ``timeout`` passes.

    ``attempt`` may raise (queue deleted, handle closed): the error propagates.  Returns None on
    timeout.  The caller holds ``cond``'s lock.
    """
    result = attempt()
    if result is not None or timeout == 0:
        return result
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if deadline is None:
            cond.wait()
        else:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            cond.wait(remaining)
        result = attempt()
        if result is not None:
            return result
