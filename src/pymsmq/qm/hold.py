"""``Hold``: a receive whose removal waits for the receiver's acknowledgement (a two-phase read).

[MS-MQRR] 3.1.4.9 R_EndReceive: "The combination of the R_StartReceive method and the positive
acknowledgment of the R_EndReceive method ensures that a message packet is not lost in transit from
the server to the client due to a network outage during the call sequence."  A server passes a
``Hold`` as the ``transaction`` of a receive outside a transaction (``Queue.receive(timeout, hold)``
and every other receive form).  A recoverable message found is then locked, not removed, and
recorded here: ``confirm()`` removes it (durably, with its acknowledgements and journal copy, as the
receive would have), ``release()`` makes it available again in its place -- RR_ACK and RR_NACK.  An
express message is received at once and the hold stays empty: it is held in memory only, and a
server restart loses it anyway.  A queue manager that stops with a message held has not removed it:
it is there after the restart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.index import LOCKED
from pymsmq.qm.store.base import Batch

if TYPE_CHECKING:
    from pymsmq.qm.index import Entry, MessageIndex
    from pymsmq.qm.queue import Queue

__all__ = ["Hold"]


class Hold:
    """One held message (at most): ``held``, then ``confirm()`` or ``release()``, once."""

    __slots__ = ("_entry", "_index", "_queue")

    def __init__(self) -> None:
        self._queue: Queue | None = None
        self._index: MessageIndex | None = None
        self._entry: Entry | None = None

    @property
    def held(self) -> bool:
        """True from the receive that locked a message until ``confirm`` or ``release``."""
        return self._entry is not None

    def _take(self, queue: Queue, index: MessageIndex, entry: Entry) -> None:
        # Queue._take, under the queue manager's lock, for a durable entry.
        if self._entry is not None:
            raise MSMQError("this hold already holds a message", HResult.MQ_ERROR_TRANSACTION_USAGE)
        index.set_state(entry, LOCKED)
        self._queue, self._index, self._entry = queue, index, entry

    def _taken(self) -> tuple[Queue, MessageIndex, Entry]:
        queue, index, entry = self._queue, self._index, self._entry
        if queue is None or index is None or entry is None:
            raise MSMQError("no message is held", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
        self._queue = self._index = self._entry = None
        return queue, index, entry

    def confirm(self) -> None:
        """RR_ACK: remove the held message, durably; on a store failure it is available again."""
        queue, index, entry = self._taken()
        queue._finish_take(index, entry, None)

    def release(self) -> None:
        """RR_NACK (or the receiver is gone): the held message is available again, in its place.

        A message purged while held is deleted now ([MS-MQDMPR] 3.1.7.1.7: PurgePending).
        """
        if self._entry is None:
            return
        queue, index, entry = self._taken()
        qm = queue._qm
        state = queue._state
        batch = Batch()
        with qm._lock:
            if index.get(entry.lookup_id) is not entry or entry.state != LOCKED:
                return
            qm._put_back(state, index, entry, batch)
            if batch:
                qm._apply(batch)
