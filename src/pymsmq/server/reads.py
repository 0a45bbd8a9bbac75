"""Which queue-manager call a RECEIVE action maps to ([MS-MQMP] 2.2.3.2 Action, mq.h MQ_LOOKUP_*)."""

from __future__ import annotations

from collections.abc import Callable

from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol import Action
from pymsmq.qm.hold import Hold
from pymsmq.qm.queue import Cursor, Queue
from pymsmq.qm.transaction import Transaction

__all__ = ["matching_reader", "reader"]

_A = Action


def reader(
    queue: Queue, cursor: Cursor | None, action: int, lookup_id: int, tx: Transaction | Hold | int | None
) -> Callable[[float | None], Message]:
    """The QM call a RECEIVE action maps to ([MS-MQMP] 2.2.3.2 Action, mq.h MQ_LOOKUP_*).

    ``tx``: a transaction, or a ``Hold`` for a two-phase receive (ReceiveFlags.CONFIRM).
    """
    if action == _A.MQ_ACTION_RECEIVE:
        if cursor is not None:
            return lambda t: cursor.receive_current(t, tx)
        return lambda t: queue.receive(t, tx)
    if action == _A.MQ_ACTION_PEEK_CURRENT:
        if cursor is not None:
            return lambda t: cursor.peek_current(t)
        return lambda t: queue.peek(t)
    if action == _A.MQ_ACTION_PEEK_NEXT:
        if cursor is not None:
            return lambda t: cursor.peek_next(t)
        return lambda t: queue.peek_next(t)
    table: dict[int, Callable[[], Message]] = {
        _A.MQ_LOOKUP_PEEK_CURRENT: lambda: queue.peek_by_lookup_id(lookup_id),
        _A.MQ_LOOKUP_PEEK_NEXT: lambda: queue.peek_next_by_lookup_id(lookup_id),
        _A.MQ_LOOKUP_PEEK_PREV: lambda: queue.peek_previous_by_lookup_id(lookup_id),
        _A.MQ_LOOKUP_PEEK_FIRST: queue.peek_first_by_lookup_id,
        _A.MQ_LOOKUP_PEEK_LAST: queue.peek_last_by_lookup_id,
        _A.MQ_LOOKUP_RECEIVE_CURRENT: lambda: queue.receive_by_lookup_id(lookup_id, tx),
        _A.MQ_LOOKUP_RECEIVE_NEXT: lambda: queue.receive_next_by_lookup_id(lookup_id, tx),
        _A.MQ_LOOKUP_RECEIVE_PREV: lambda: queue.receive_previous_by_lookup_id(lookup_id, tx),
        _A.MQ_LOOKUP_RECEIVE_FIRST: lambda: queue.receive_first_by_lookup_id(tx),
        _A.MQ_LOOKUP_RECEIVE_LAST: lambda: queue.receive_last_by_lookup_id(tx),
        _A.MQ_LOOKUP_RECEIVE_ALLOW_PEEK: lambda: queue.receive_by_lookup_id_allow_peek(lookup_id, tx),
    }
    fn = table[action]
    return lambda t: fn()


def matching_reader(
    queue: Queue, field: str, wanted: ObjectId, peek: bool, tx: Transaction | Hold | int | None
) -> Callable[[float | None], Message]:
    """The QM call a RECEIVE_MATCHING maps to: ``field`` "id" (PROPID_M_MSGID) or "correlation_id"
    (PROPID_M_CORRELATIONID), a peek or a receive in ``tx`` (as ``reader``'s)."""
    if field == "id":
        if peek:
            return lambda t: queue.peek_by_id(wanted, t)
        return lambda t: queue.receive_by_id(wanted, t, tx)
    if peek:
        return lambda t: queue.peek_by_correlation_id(wanted, t)
    return lambda t: queue.receive_by_correlation_id(wanted, t, tx)
