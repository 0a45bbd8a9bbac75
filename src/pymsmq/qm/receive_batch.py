"""Many head receives under one lock acquisition: ``take_available``.

``take_available(queue, count, accept)`` does what ``count`` calls of ``queue.receive(0)`` (no
transaction) do, one after the other, for the express messages at the head of ``queue``
([MS-MQDMPR] 3.1.7.1.10 Dequeue Message: the first Available message in priority order, removed
from the queue; [MS-MQDMPR] 3.1.7.3.1 acknowledgements and journal copies of a received message
happen through ``QueueManager._on_removed``), but under ONE acquisition of the queue manager's lock
instead of two per message.  The batch happens at one instant: timers due at that instant run first
(as ``receive`` runs them), and no other thread sees the messages between "locked" and "deleted".

It stops, leaving the message in place, at a recoverable message (its delete must be written
durably outside the lock: the caller takes it with ``queue.receive``), when the queue has no more
available messages, after ``count`` messages, or as soon as ``accept`` (called under the lock with
each message just taken) answers False.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from pymsmq.qm.index import AVAILABLE

if TYPE_CHECKING:
    from pymsmq.model.message import Message
    from pymsmq.qm.index import Entry
    from pymsmq.qm.queue import Queue

__all__ = ["DONE", "DURABLE", "EMPTY", "FULL", "REFUSED", "take_available", "take_entries"]

_RECEIVE_ACCESS: Final = 1  # MQ_RECEIVE_ACCESS

#: Why ``take_available`` stopped: ``count`` messages were taken.
DONE: Final = 0
#: The queue has no available message left.
EMPTY: Final = 1
#: The next available message is recoverable (left in place for ``queue.receive``).
DURABLE: Final = 2
#: ``accept`` answered False for the last message taken.
REFUSED: Final = 3
#: ``fits`` answered False for the next message (left in place).
FULL: Final = 4


def take_available(queue: Queue, count: int, accept: Callable[[Message], bool]) -> int:
    """Receive up to ``count`` express head messages of ``queue``, passing each to ``accept``.

    Equivalent to that many ``queue.receive(0)`` calls without a transaction (same checks, same
    errors: raised only when nothing was taken, before any message is), stopping early as the module
    docstring says.  Returns why it stopped: ``DONE``, ``EMPTY``, ``DURABLE`` or ``REFUSED``.  The
    queue must not be transactional (a non-transactional receive from a transactional queue is not
    a case of this function: it raises ``ValueError``).  An exception from ``accept`` propagates; the
    messages taken up to and including its argument stay received.
    """
    return take_entries(queue, count, lambda entry: accept(entry.message))


def take_entries(
    queue: Queue,
    count: int,
    accept: Callable[[Entry], bool],
    fits: Callable[[Entry], bool] | None = None,
) -> int:
    """``take_available``, passing ``accept`` each message's entry (``entry.message`` is the message
    taken; ``entry.packet`` its kept packet, if any) instead of the message.  The entry is no longer
    in the queue: ``accept`` only reads it.

    ``fits``: called (under the lock) with each express entry about to be taken, while it is still
    in the queue (it only reads it); False stops the batch there, leaving that message in place, and
    ``take_entries`` returns ``FULL``.
    """
    qm = queue._qm
    with qm._lock:
        # Queue._read: the handle checks, then timers already due, then the head (Dequeue Message).
        queue._check(_RECEIVE_ACCESS)
        state = queue._state
        if state.transactional:
            raise ValueError("take_entries is for non-transactional queues")
        qm._sweep()
        index = queue._index()
        first = index.first
        remove = index.remove
        remove_head = index.remove_head
        head = index.head
        on_removed = qm._on_removed
        # QueueManager._on_removed (Lifecycle.received) does nothing for a message without a TTBR
        # timer, acknowledgement or journal request when the queue does not journal: not called.
        journals = state.props.journal and state.journal is not None
        # The priority of the last message taken, while the next first(False) is surely the head of
        # its order: nothing of a higher priority is available (first found none) and nothing was
        # added since (a message added to this queue takes the queue's next lookup id).  -1: seek.
        p = -1
        for _ in range(count):
            entry = None
            if p >= 0:
                entry = head(p)
            if entry is None or entry.state != AVAILABLE:
                entry = first(False)
                if entry is None:
                    return EMPTY
                p = entry.priority
            if entry.durable:
                return DURABLE
            if fits is not None and not fits(entry):
                return FULL
            # Queue._take then Queue._finish_take of an express message, at one instant.
            if not remove_head(entry):
                remove(entry)
            m = entry.message
            if journals or entry.expires_at is not None or m.ack or m.journal:
                added = state.next_lookup
                on_removed(state, entry)  # acknowledgements, journal copies: may add to this queue
                if state.next_lookup != added:
                    p = -1
            if not accept(entry):
                return REFUSED
    return DONE
