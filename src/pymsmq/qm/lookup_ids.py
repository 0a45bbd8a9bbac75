"""The operations of a ``Queue`` addressed by lookup id: the Read Message By Lookup Identifier family
([MS-MQDMPR] 3.1.7.1.13) and Move Message ([MS-MQDMPR] 3.1.7.1.16).

A mixin of ``pymsmq.qm.queue.Queue`` (split out of that module; ``Queue`` is its only subclass).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.message import Message
from pymsmq.model.names import validate_subqueue_name
from pymsmq.qm.access import _PEEK, _RECEIVE, _check_lookup_id, _err
from pymsmq.qm.index import AVAILABLE, LOCKED, PENDING, Entry, MessageIndex
from pymsmq.qm.store.base import Batch
from pymsmq.qm.transaction import MOVE, Transaction, land_move, moved_update

if TYPE_CHECKING:
    from pymsmq.qm.hold import Hold
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.queue_state import QueueState

__all__ = ["LookupIdOps"]

_FIRST, _LAST, _CURRENT, _NEXT, _PREVIOUS = range(5)  # MessageSeekAction ([MS-MQDMPR] 3.1.1.17)


class LookupIdOps:
    """``peek_*_by_lookup_id``, ``receive_*_by_lookup_id`` and ``move`` of ``Queue``."""

    __slots__ = ()

    if TYPE_CHECKING:  # provided by Queue
        _qm: QueueManager
        _state: QueueState
        _subqueue: str | None

        def _check(self, need: int) -> None: ...
        def _index(self) -> MessageIndex: ...
        def _transaction(self, transaction: object, receive: bool) -> Transaction | object | None: ...
        def _take(
            self, index: MessageIndex, entry: Entry, tx: Transaction | object | None, allow_peek: bool
        ) -> Message: ...
        def _finish_take(
            self, index: MessageIndex, entry: Entry, tx: Transaction | object | None
        ) -> None: ...

    # ------------------------------------------------------------------ lookup ids
    def _by_lookup_id(
        self, action: int, lookup_id: int, peek: bool, transaction: object = None, allow_peek: bool = False
    ) -> Message:
        # [MS-MQDMPR] 3.1.7.1.13 Read Message By Lookup Identifier; never waits.
        tx = None if peek else self._transaction(transaction, receive=True)
        qm = self._qm
        with qm._lock:
            self._check(_PEEK | _RECEIVE if peek else _RECEIVE)
            qm._sweep()
            index = self._index()
            found: Entry | None
            if action == _FIRST:
                found = index.first(peek)
            elif action == _LAST:
                found = index.last(peek)
            else:
                anchor = index.get(lookup_id)
                if anchor is None or anchor.state == PENDING:
                    raise _err(f"no message with lookup id {lookup_id}", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
                if action == _CURRENT:
                    if not anchor.visible(peek):
                        # A Locked position: docs/spec-decisions.md, "A lookup-id operation on a
                        # message another transaction holds" (MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION).
                        raise _locked()
                    found = anchor
                elif action == _NEXT:
                    found = index.after(anchor.priority, lookup_id, peek)
                else:
                    found = index.before(anchor.priority, lookup_id, peek)
            if found is None:
                raise _err("no such message", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
            if peek:
                return found.message.copy()
            result = self._take(index, found, tx, allow_peek)
        self._finish_take(index, found, tx)
        return result

    def peek_by_lookup_id(self, lookup_id: int) -> Message:
        """The message with ``lookup_id`` (MQ_ERROR_MESSAGE_NOT_FOUND if it is not in the queue)."""
        return self._by_lookup_id(_CURRENT, _check_lookup_id(lookup_id), True)

    def peek_next_by_lookup_id(self, lookup_id: int) -> Message:
        """The first message after the one with ``lookup_id``."""
        return self._by_lookup_id(_NEXT, _check_lookup_id(lookup_id), True)

    def peek_previous_by_lookup_id(self, lookup_id: int) -> Message:
        """The last message before the one with ``lookup_id``."""
        return self._by_lookup_id(_PREVIOUS, _check_lookup_id(lookup_id), True)

    def peek_first_by_lookup_id(self) -> Message:
        """The first message of the queue (never waits)."""
        return self._by_lookup_id(_FIRST, 0, True)

    def peek_last_by_lookup_id(self) -> Message:
        """The last message of the queue (never waits)."""
        return self._by_lookup_id(_LAST, 0, True)

    def receive_by_lookup_id(
        self, lookup_id: int, transaction: Transaction | Hold | int | None = None
    ) -> Message:
        """Receive the message with ``lookup_id``."""
        return self._by_lookup_id(_CURRENT, _check_lookup_id(lookup_id), False, transaction)

    def receive_next_by_lookup_id(
        self, lookup_id: int, transaction: Transaction | Hold | int | None = None
    ) -> Message:
        """Receive the first unlocked message after the one with ``lookup_id``."""
        return self._by_lookup_id(_NEXT, _check_lookup_id(lookup_id), False, transaction)

    def receive_previous_by_lookup_id(
        self, lookup_id: int, transaction: Transaction | Hold | int | None = None
    ) -> Message:
        """Receive the last unlocked message before the one with ``lookup_id``."""
        return self._by_lookup_id(_PREVIOUS, _check_lookup_id(lookup_id), False, transaction)

    def receive_first_by_lookup_id(self, transaction: Transaction | Hold | int | None = None) -> Message:
        """Receive the first unlocked message (never waits)."""
        return self._by_lookup_id(_FIRST, 0, False, transaction)

    def receive_last_by_lookup_id(self, transaction: Transaction | Hold | int | None = None) -> Message:
        """Receive the last unlocked message (never waits)."""
        return self._by_lookup_id(_LAST, 0, False, transaction)

    def receive_by_lookup_id_allow_peek(
        self, lookup_id: int, transaction: Transaction | Hold | int | None = None
    ) -> Message:
        """Like ``receive_by_lookup_id``; inside a transaction peeks still see the message until it ends."""
        return self._by_lookup_id(_CURRENT, _check_lookup_id(lookup_id), False, transaction, True)

    # ------------------------------------------------------------------ reject
    def mark_rejected(self, lookup_id: int, transaction: Transaction) -> None:
        """Mark the message with ``lookup_id`` rejected in ``transaction`` (MQMarkMessageRejected,
        WCF's ReceiveErrorHandling=Reject): received in that transaction (before or after this
        call), it leaves with MQMSG_CLASS_NACK_RECEIVE_REJECTED when the transaction commits, a
        negative acknowledgement to its admin queue if it asked for one (and to the transactional
        dead-letter queue if it asked for dead-lettering) instead of a positive receive
        acknowledgement.  MQ_ERROR_TRANSACTION_USAGE outside a transaction or on a
        non-transactional queue; MQ_ERROR_MESSAGE_NOT_FOUND for a lookup id not in the queue."""
        lookup_id = _check_lookup_id(lookup_id)
        if not isinstance(transaction, Transaction):
            raise _err(
                "mark_rejected must be called inside a transaction (a Transaction)",
                HResult.MQ_ERROR_TRANSACTION_USAGE,
            )
        qm = self._qm
        with qm._lock:
            # In the remote client's order: the handle, the transaction (a finished one is
            # MQ_ERROR_TRANSACTION_SEQUENCE), then the access and the queue's kind (the server's).
            self._check(0)
            transaction._check_usable(qm)
            self._check(_RECEIVE)
            if not self._state.transactional:
                raise _err("the queue is not transactional", HResult.MQ_ERROR_TRANSACTION_USAGE)
            entry = self._index().get(lookup_id)
            if entry is None or entry.state == PENDING:
                raise _err(f"no message with lookup id {lookup_id}", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
            transaction._rejected.add((self._state.queue_id, lookup_id))

    # ------------------------------------------------------------------ move
    def move(
        self, lookup_id: int, target: Queue | str | None, transaction: Transaction | int | None = None
    ) -> None:
        """Move a message between this queue and one of its subqueues (``target``: a handle on the
        same queue, a subqueue name, or None for the queue itself).  The lookup id is kept and the
        message's move count grows by one ([MS-MQDMPR] 3.1.7.1.16 Move Message)."""
        lookup_id = _check_lookup_id(lookup_id)
        if isinstance(target, LookupIdOps):  # a Queue: its only subclass
            if target._state is not self._state:
                raise _err(
                    "moves stay within one queue and its subqueues", HResult.MQ_ERROR_INVALID_PARAMETER
                )
            target_name = target._subqueue
        elif target is None or isinstance(target, str):
            target_name = validate_subqueue_name(target) if target else None
        else:
            raise _err(f"invalid move target {target!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
        tx = self._transaction(transaction, receive=True)
        qm = self._qm
        state = self._state
        with qm._lock:
            self._check(_RECEIVE)
            if state.kind in ("journal", "system"):
                raise _err("system and journal queues have no subqueues", HResult.MQ_ERROR_INVALID_PARAMETER)
            if (target_name or None) == (self._subqueue or None):
                raise _err("source and target are the same queue", HResult.MQ_ERROR_INVALID_PARAMETER)
            index = self._index()
            entry = index.get(lookup_id)
            if entry is None or entry.state == PENDING:
                raise _err(f"no message with lookup id {lookup_id}", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
            if entry.state != AVAILABLE:
                raise _locked()
            if isinstance(tx, Transaction):
                tx._check_usable(qm)
                index.set_state(entry, LOCKED)
                tx._add(MOVE, state, index, entry, target_name)
                return
            index.set_state(entry, LOCKED)
            durable = entry.durable
            move_count = entry.message.move_count + 1
            now = qm._clock()
        if durable:
            try:
                qm._apply(Batch(update=[moved_update(state, entry, target_name, move_count, now)]))
            except BaseException:
                with qm._lock:
                    if index.get(lookup_id) is entry:
                        index.set_state(entry, AVAILABLE)
                raise
        with qm._lock:
            if not index.remove(entry) or state.deleted:
                return
            land_move(qm, state, entry, target_name, move_count, now)
            state.cond.notify_all()


def _locked() -> MSMQError:
    # [MS-MQMQ] 2.4 MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION: "The message is currently being
    # processed under a transaction. Until the transaction outcome is determined, the message
    # cannot be processed in any other transaction."  (MS-MQDMPR 3.1.7.3.3 says
    # MQ_ERROR_TRANSACTION_USAGE; Windows answers this code: docs/spec-decisions.md.)
    return _err(
        "the message is locked by a transaction (it comes back if that transaction aborts)",
        HResult.MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION,
    )
