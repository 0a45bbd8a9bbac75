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

__all__ = ["INFINITE_MS", "cancelled_by_close", "normalize_timeout", "not_found", "timeout_ms", "wait_for"]

T = TypeVar("T")


def not_found(timeout: float | None) -> MSMQError:
    """The error of a read that found nothing in time ([MC-MQAC] 3.11.4.1 timeout semantics).

    Timeout 0 -> MQ_ERROR_MESSAGE_NOT_FOUND (0xC00E0088, errata E1); positive -> MQ_ERROR_IO_TIMEOUT.
    """
    if timeout == 0:
        return MSMQError("no message in the queue", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
    return MSMQError("no message arrived before the timeout", HResult.MQ_ERROR_IO_TIMEOUT)


def cancelled_by_close(exc: MSMQError) -> MSMQError:
    """The error of a read that was waiting when its handle or cursor was closed: ``exc`` (what a
    read on the closed handle raises) as MQ_ERROR_OPERATION_CANCELLED, for MQ_ERROR_INVALID_HANDLE
    ([MS-MQDMPR] 3.1.7.1.6 Close Queue: "Cancel Waiting Message Read Request with
    MQ_ERROR_OPERATION_CANCELLED"); any other error (queue deleted, service stopped) as it is."""
    if exc.hresult != HResult.MQ_ERROR_INVALID_HANDLE:
        return exc
    return MSMQError(f"{exc.message}: the waiting read was cancelled", HResult.MQ_ERROR_OPERATION_CANCELLED)


def wait_for(cond: threading.Condition, attempt: Callable[[], T | None], timeout: float | None) -> T | None:
    """Call ``attempt`` (with ``cond``'s lock held) until it returns a value or ``timeout`` passes.

    ``attempt`` may raise (queue deleted, handle closed): the error propagates, a closed handle's
    as MQ_ERROR_OPERATION_CANCELLED once the read has waited (``cancelled_by_close``).  Returns None
    on timeout.  The caller holds ``cond``'s lock.
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
        try:
            result = attempt()
        except MSMQError as exc:
            raise cancelled_by_close(exc) from None
        if result is not None:
            return result
