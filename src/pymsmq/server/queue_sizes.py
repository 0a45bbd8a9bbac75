"""The sizes and path names of the queues the server's statistics list (STATS, ``/metrics``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.queue_state import QueueState

__all__ = ["queue_path_names", "queue_sizes"]


#: The queues STATS reports the size of: application queues and the system ones (dead-letter,
#: transactional dead-letter, machine journal); not the queue manager's internal queues.
_SIZED_KINDS: Final = frozenset({"private", "public", "system"})


def queue_sizes(qm: QueueManager) -> dict[str, tuple[int, int]]:
    """``{format name: (messages, bytes)}`` of every application and system queue.

    Messages in the queue itself, as PROPID_MGMT_QUEUE_MESSAGE_COUNT ([MC-MQAC] 4.1: the count of
    the queue's MessagePositionList); bytes with its subqueues' (an open transaction's sends in
    neither), as the embedded queue manager reports them.  Read from the queues' state under the lock (opening
    a handle on each took 340 ms of the event loop at 10,000 queues).
    """
    with qm._lock:
        return {state.format_name: (len(state.index), state.shown_bytes()) for state in _sized(qm)}


def queue_path_names(qm: QueueManager) -> dict[str, str]:
    """``{format name: path name}`` of the queues ``queue_sizes`` gives (the system queues' are
    ``COMPUTER\\system$;DEADLETTER`` and the like) and of their journals (``path;JOURNAL``: reads
    of a journal are counted in its own statistics)."""
    with qm._lock:
        names: dict[str, str] = {}
        for state in _sized(qm):
            names[state.format_name] = state.props.path_name
            if state.journal is not None:
                names[state.journal.format_name] = state.props.path_name + ";JOURNAL"
        return names


def _sized(qm: QueueManager) -> list[QueueState]:
    # Under ``qm._lock``: the live application and system queues (what the statistics list).
    return [state for state in qm._queues.values() if state.kind in _SIZED_KINDS and not state.deleted]
