"""The arguments of ``enable_notification`` ([MC-MQAC] 3.11.4.1.9 EnableNotification), checked
alike for embedded and remote queues."""

from __future__ import annotations

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

__all__ = ["checked_arguments"]


def checked_arguments(cursor: object, on_arrived: object, on_error: object) -> int:
    """``cursor`` as MQMSG_FIRST, MQMSG_CURRENT or MQMSG_NEXT, once it and the callbacks are
    checked: E_INVALIDARG otherwise, the cursor first ([MC-MQAC] 3.11.4.1.9 step 1).  For every
    ``enable_notification``, embedded and remote."""
    if not isinstance(cursor, int) or isinstance(cursor, bool) or cursor not in (0, 1, 2):
        raise MSMQError(f"invalid cursor {cursor!r}", HResult.E_INVALIDARG)
    if not callable(on_arrived) or (on_error is not None and not callable(on_error)):
        raise MSMQError("the event sink must be callable", HResult.E_INVALIDARG)
    return int(cursor)
