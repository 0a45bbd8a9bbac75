"""The management facts of a queue ([MS-MQMQ] 2.3.12 PROPID_MGMT_QUEUE_*) as a ``QueueStatistics``:
what ``QueueManager.queue_statistics`` lists and what the server answers STATS and LIST_QUEUES
with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.queue_statistics import QueueStatistics

if TYPE_CHECKING:
    from pymsmq.qm.queue_manager import QueueManager

__all__ = ["queue_statistics", "statistics_of"]

_PEEK_ONLY: Final = 0x20  # MQ_PEEK_ACCESS: reading the facts takes no message


def statistics_of(qm: QueueManager, name: str) -> QueueStatistics:
    """The facts of the queue, subqueue or journal ``name`` (a path or format name) now.

    ``bytes_in_queue`` of a queue counts its subqueues' messages (as its quota does, [MS-MQDMPR]
    3.1.7.1.9); of a subqueue, its own. Neither counts the sends of an open transaction (nor does
    ``message_count``), which the quota does."""
    q = qm.queue(name, _PEEK_ONLY)
    try:
        path = q.path_name
        main = not q.subqueue_name and not path.upper().endswith(";JOURNAL") and ";" not in path
        journal_count = 0
        if main:
            try:
                with q.journal as j:
                    journal_count = j.message_count
            except MSMQError:  # (a system queue: no journal)
                journal_count = 0
        try:
            props = q.properties
            label, journal = props.label, props.journal
        except MSMQError:
            label, journal = "", False
        with qm._lock:
            # The bytes of the messages ``message_count`` counts: an open transaction's sends are
            # in neither until its commit (the quota counts their bytes: ``total_bytes``).
            total = q._state.shown_bytes() if main else q._index().shown_bytes
        return QueueStatistics(
            path_name=path,
            format_name=q.format_name,
            transactional=q.transactional,
            message_count=q.message_count,
            bytes_in_queue=total,
            journal_message_count=journal_count,
            subqueue_names=tuple(q.subqueue_names) if not q.subqueue_name else (),
            label=label,
            journal=journal,
        )
    finally:
        q.close()


def queue_statistics(qm: QueueManager, paths: list[str]) -> list[QueueStatistics]:
    """``statistics_of`` each of ``paths`` (a queue deleted meanwhile is left out)."""
    out: list[QueueStatistics] = []
    for path in paths:
        try:
            out.append(statistics_of(qm, path))
        except MSMQError as exc:
            if exc.hresult != HResult.MQ_ERROR_QUEUE_NOT_FOUND:
                raise
    return out
