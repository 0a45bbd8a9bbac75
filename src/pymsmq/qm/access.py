"""Access bits of an open queue handle and the argument checks shared by ``Queue``, its lookup-id
operations and ``Cursor`` (split out of ``pymsmq.qm.queue``, which re-imports them).
"""

from __future__ import annotations

from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

__all__: list[str] = []

_RECEIVE: Final = 1  # MQ_RECEIVE_ACCESS
_SEND: Final = 2  # MQ_SEND_ACCESS
_PEEK: Final = 0x20  # MQ_PEEK_ACCESS
_ALL: Final = _RECEIVE | _SEND | _PEEK


def _err(message: str, hresult: int) -> MSMQError:
    return MSMQError(message, hresult)


def _check_lookup_id(lookup_id: object) -> int:
    # [MC-MQAC] 3.11.4.1 lookup-id methods: LookupId 0 is rejected before any other check.
    if isinstance(lookup_id, str) and lookup_id.isdigit():
        lookup_id = int(lookup_id)
    if not isinstance(lookup_id, int) or isinstance(lookup_id, bool) or not 0 < lookup_id < 1 << 64:
        raise _err(f"invalid lookup id {lookup_id!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
    return lookup_id
