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
it is there after the restart.  One hold may hold many messages (a RECEIVE_MANY, an embedded
``receive_many``): ``confirm()`` removes them in one durable write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.index import AVAILABLE, LOCKED
from pymsmq.qm.lifecycle import RECEIPTS
from pymsmq.qm.store.base import Batch, MessageKey

if TYPE_CHECKING:
    from pymsmq.qm.index import Entry, MessageIndex
    from pymsmq.qm.queue import Queue

__all__ = ["Hold", "remove_taken"]


class Hold:
    """Held messages: ``held``, then ``confirm()`` or ``release()`` of all of them, once.

    One receive holds one message; a batch (a RECEIVE_MANY with CONFIRM) holds each recoverable
    message it takes, and ``confirm()`` removes them all in one durable batch.
    """

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: list[tuple[Queue, MessageIndex, Entry]] = []

    @property
    def held(self) -> bool:
        """True from the receive that locked a message until ``confirm`` or ``release``."""
        return bool(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def _take(self, queue: Queue, index: MessageIndex, entry: Entry) -> None:
        # Queue._take, under the queue manager's lock, for a durable entry.
        index.set_state(entry, LOCKED)
        self._held.append((queue, index, entry))

    def _holds(self, entry: Entry) -> bool:
        # Queue._finish_take, right after _take: is ``entry`` the one just held?
        held = self._held
        return bool(held) and held[-1][2] is entry

    def _taken(self) -> list[tuple[Queue, MessageIndex, Entry]]:
        held = self._held
        if not held:
            raise MSMQError("no message is held", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
        self._held = []
        return held

    def confirm(self) -> None:
        """RR_ACK: remove the held messages, durably (one batch); on a store failure they are
        available again."""
        groups: dict[int, tuple[Queue, MessageIndex, list[Entry]]] = {}  # (one, from one receive)
        for queue, index, entry in self._taken():
            groups.setdefault(id(index), (queue, index, []))[2].append(entry)
        for queue, index, entries in groups.values():
            remove_taken(queue, index, entries)

    def release(self) -> None:
        """RR_NACK (or the receiver is gone): the held messages are available again, in their places.

        A message purged while held is deleted now ([MS-MQDMPR] 3.1.7.1.7: PurgePending).
        """
        if self._held:
            self._put_back(self._taken())

    def release_newest(self) -> None:
        """Only the message held last is available again (a batch that could not carry it)."""
        if self._held:
            self._put_back([self._held.pop()])

    @staticmethod
    def _put_back(held: list[tuple[Queue, MessageIndex, Entry]]) -> None:
        qm = held[0][0]._qm
        batch = Batch()
        with qm._lock:
            for queue, index, entry in held:
                if index.get(entry.lookup_id) is entry and entry.state == LOCKED:
                    qm._put_back(queue._state, index, entry, batch)
            if batch:
                qm._apply(batch)


def remove_taken(queue: Queue, index: MessageIndex, taken: list[Entry]) -> None:
    """Outside the lock: remove messages of ``queue`` that a receive took (locked in ``index``).

    Like ``Queue._finish_take``, with one durable write for all of them: the recoverable ones are
    deleted with their acknowledgements and journal copies (``Effects``; on a store failure every
    one is available again, and the error is raised).  An express message's effects are made once
    it is removed.
    """
    qm = queue._qm
    state = queue._state
    life = qm._life
    keys = [MessageKey(state.queue_id, e.lookup_id) for e in taken if e.durable]
    receipts = None
    refused = None
    if keys:
        with_receipt = [e.message for e in taken if e.durable and life.has_receipt(state, e.message)]

        def build(batch: Batch) -> None:
            for message in with_receipt:
                life.receipt(state, message, batch)

        if with_receipt:
            with qm._lock:
                receipts = qm._prepared(build, RECEIPTS)
        try:
            delete = Batch(delete=keys)
            if receipts is None:
                qm._apply(delete)
            else:
                refused = qm._apply_with(delete, receipts)
        except BaseException:
            with qm._lock:
                if receipts is not None:
                    qm._drop_prepared(receipts, RECEIPTS)
                for e in taken:
                    if index.get(e.lookup_id) is e and e.state == LOCKED:
                        index.set_state(e, AVAILABLE)
                state.cond.notify_all()
            raise
    effects = Batch()  # express messages' acknowledgements and journal copies: one commit
    with qm._lock:
        for e in taken:
            if index.remove(e):
                if e.durable:
                    life.left(e)
                else:
                    qm._on_removed(state, e, effects)
        if receipts is not None:
            if state.deleted:  # (deleted meanwhile: its deletion sent NACK_Q_DELETED)
                qm._taken_back(receipts, refused, RECEIPTS)
            else:
                qm._shown(receipts, refused, RECEIPTS)
        qm._store_effects(effects, RECEIPTS)
