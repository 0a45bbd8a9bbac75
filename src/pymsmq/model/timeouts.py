"""Receive timeouts: seconds in the API, MSMQ's DWORD of milliseconds on the wire ([MC-MQAC]
3.11.4.1 ReceiveTimeout; mq.h MQReceiveMessage dwTimeout).  Pure: the queue manager's waits and the
remote client both use these.
"""

from __future__ import annotations

import math
from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

__all__ = ["INFINITE_MS", "normalize_timeout", "timeout_ms"]

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


def timeout_ms(timeout: float | None) -> int:
    """``timeout`` (seconds, checked as ``normalize_timeout``) as MSMQ's DWORD of milliseconds, for
    the wire: INFINITE for forever, rounded up below it."""
    t = normalize_timeout(timeout)
    if t is None:
        return INFINITE_MS
    return min(math.ceil(t * 1000), INFINITE_MS - 1)
