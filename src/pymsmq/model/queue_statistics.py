"""``QueueStatistics``: what a queue listing shows of one queue, in one value.

The management facts of [MS-MQMQ] 2.3.12 (PROPID_MGMT_QUEUE_PATHNAME, _FORMATNAME, _XACT,
_MESSAGE_COUNT, _BYTES_IN_QUEUE, _JOURNAL_MESSAGE_COUNT, _SUBQUEUE_NAMES: what MQMgmtGetInfo gives
for a queue) with two queue properties a listing shows beside them (PROPID_Q_LABEL,
PROPID_Q_JOURNAL).  ``QueueManager.queue_statistics()`` returns one per queue, embedded or remote
(one request for all of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

__all__ = ["QueueStatistics", "kinds_of"]

_KINDS: Final = {"application": ("private", "public"), "private": ("private",), "public": ("public",)}


def kinds_of(which: object) -> tuple[str, ...]:
    """The kinds of queue ``queue_statistics(which)`` lists: "application" (private and public),
    "private" or "public"; MQ_ERROR_INVALID_PARAMETER for anything else."""
    kinds = _KINDS.get(which) if isinstance(which, str) else None
    if kinds is None:
        raise MSMQError(
            f"which must be 'application', 'private' or 'public', not {which!r}",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    return kinds


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """The management facts of one queue at one moment (see the module docstring)."""

    #: PROPID_MGMT_QUEUE_PATHNAME.
    path_name: str
    #: PROPID_MGMT_QUEUE_FORMATNAME.
    format_name: str
    #: PROPID_MGMT_QUEUE_XACT.
    transactional: bool
    #: PROPID_MGMT_QUEUE_MESSAGE_COUNT: the queue's messages, its subqueues' not included.
    message_count: int
    #: PROPID_MGMT_QUEUE_BYTES_IN_QUEUE: the bytes of the queue's messages, its subqueues' included.
    bytes_in_queue: int
    #: PROPID_MGMT_QUEUE_JOURNAL_MESSAGE_COUNT.
    journal_message_count: int
    #: PROPID_MGMT_QUEUE_SUBQUEUE_NAMES: the subqueues that hold messages.
    subqueue_names: tuple[str, ...]
    #: PROPID_Q_LABEL.
    label: str
    #: PROPID_Q_JOURNAL (True: MQ_JOURNAL).
    journal: bool
