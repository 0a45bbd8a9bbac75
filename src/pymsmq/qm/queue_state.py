"""One queue as the queue manager holds it: its properties, message indexes, journal and handles.

Internal to the queue manager (``pymsmq.qm``); every access is under the queue manager's lock.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from pymsmq.model.constants import INFINITE
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.qm.index import ByteTotal, MessageIndex
from pymsmq.qm.notifications import WatchedCondition
from pymsmq.qm.store.base import QueueRow

if TYPE_CHECKING:
    from pymsmq.qm.queue import Queue

__all__ = ["QueueState", "message_size", "subqueue_format"]


def message_size(message: object) -> int:
    """Bytes a message counts against quotas: body + extension + label (UTF-16)."""
    m = message
    return len(m.body) + len(m.extension) + 2 * len(m.label)  # type: ignore[attr-defined]


class QueueState:
    """One queue as the queue manager holds it (internal)."""

    __slots__ = (
        "__weakref__",
        "commits",
        "cond",
        "deleted",
        "exclusive_handles",
        "format_name",
        "handles",
        "index",
        "journal",
        "key",
        "kind",
        "next_lookup",
        "number",
        "parent",
        "props",
        "queue_id",
        "reserved_lookup",
        "shared",
        "subqueues",
    )

    def __init__(
        self,
        queue_id: int,
        kind: str,
        key: str,
        props: QueueProperties,
        lock: threading.RLock,
        number: int = 0,
        shared: ByteTotal | None = None,
    ) -> None:
        self.queue_id = queue_id
        # private | public | system | journal | internal
        self.kind = kind
        self.key = key
        self.props = props
        self.number = number
        self.format_name = ""
        #: The queue manager's running total of message bytes, which every index here adds to.
        self.shared = ByteTotal() if shared is None else shared
        self.index = MessageIndex(self.shared)
        self.subqueues: dict[str, MessageIndex] = {}
        self.journal: QueueState | None = None
        self.parent: QueueState | None = None
        self.cond = WatchedCondition(lock)
        self.deleted = False
        #: Tickets of the commits whose messages were placed in this queue and are not visible
        #: yet, in placing order (transaction.py: they become visible in that order).
        self.commits: list[int] = []
        self.handles: weakref.WeakSet[Queue] = weakref.WeakSet()
        #: The open handles of ``handles`` opened with MQ_DENY_RECEIVE_SHARE (at most one).
        self.exclusive_handles: weakref.WeakSet[Queue] = weakref.WeakSet()
        self.next_lookup = 1
        self.reserved_lookup = 0

    @property
    def transactional(self) -> bool:
        return self.props.transactional

    def index_for(self, subqueue: str | None) -> MessageIndex:
        """The main index, or the index of subqueue ``subqueue`` (created on first use)."""
        if not subqueue:
            return self.index
        index = self.subqueues.get(subqueue)
        if index is None:
            index = self.subqueues[subqueue] = MessageIndex(self.shared)
        return index

    def forget_empty_subqueues(self, open_subqueues: set[str]) -> None:
        """Drop the indexes of the subqueues that hold nothing (no message available, locked or
        pending) and have no open handle (``open_subqueues``): a subqueue exists while it holds
        messages ([MS-MQDMPR] 3.1.1.3: its MessagePositionList), and every name ever used kept an
        index (about 2 KB) for the life of the process (QA 2026-11-27: per-retry subqueue names)."""
        for name in [n for n, index in self.subqueues.items() if index.holds_nothing]:
            if name not in open_subqueues:
                del self.subqueues[name]

    def total_bytes(self) -> int:
        """The bytes the queue's quota counts: its subqueues' and its uncommitted sends' included."""
        return self.index.total_bytes + sum(i.total_bytes for i in self.subqueues.values())

    def shown_bytes(self) -> int:
        """The bytes of the messages the queue and its subqueues show (uncommitted sends not)."""
        return self.index.shown_bytes + sum(i.shown_bytes for i in self.subqueues.values())

    def fits_quota(self, size: int) -> bool:
        """Room under the queue's quota (PROPID_Q_QUOTA, KB; INFINITE: none) for ``size`` more
        bytes, its subqueues' counted ([MS-MQDMPR] 3.1.7.1.9 Enqueue Message step 1)."""
        quota = self.props.quota
        return quota == INFINITE or self.total_bytes() + size <= quota * 1024

    def detach_bytes(self) -> None:
        """The queue is gone: its messages leave the queue manager's total, and what still happens
        to its indexes (a transaction ending on them) no longer counts there."""
        own = ByteTotal()
        own.value = self.total_bytes()
        self.shared.value -= own.value
        self.shared = own
        for index in (self.index, *self.subqueues.values()):
            index.shared = own

    def row(self) -> QueueRow:
        extra: dict[str, object] = {"queue_type": self.kind, "private_queue_number": self.number}
        if self.parent is not None:
            extra["journal_of"] = self.parent.queue_id
        return QueueRow(self.queue_id, self.props.path_name, {**self.props.to_dict(), **extra})


def subqueue_format(state: QueueState, subqueue: str | None) -> str:
    """The format name of ``state``'s subqueue ``subqueue`` (None or "": the queue's own)."""
    if not subqueue:
        return state.format_name
    # [MC-MQAC] 3.10.6.1 step 7: a subqueue's format name is DIRECT=OS:<expanded path>;<subqueue>.
    return f"DIRECT=OS:{state.props.path_name};{subqueue}"
