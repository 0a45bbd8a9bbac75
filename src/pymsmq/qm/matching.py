"""Reads of the first message with a given message id or correlation id: System.Messaging's
``ReceiveById``, ``PeekById``, ``ReceiveByCorrelationId`` and ``PeekByCorrelationId``.

MSMQ's own API has no such call: System.Messaging walks a cursor over the queue comparing
PROPID_M_MSGID or PROPID_M_CORRELATIONID and receives at the cursor (a request/response client
waiting for the reply to its request on a shared reply queue).  Here the scan runs inside the queue
manager, under its lock, so that the message found cannot be taken by another reader between the
look and the receive, and a read that waits is woken by every arrival as ``receive`` is
([MS-MQDMPR] 3.1.7.3.1 Wait For New Message).

Which messages qualify is what a receive at the head sees ([MS-MQDMPR] 3.1.7.3.2 Seek Available
Message Position): Available ones, and for a peek also those locked with AllowPeekWhenLocked; the
first in queue order (priority, then arrival) wins.  The first read by a field builds a table of
the queue's messages by that field (``MessageIndex.by_field``), kept up to date from then on, so
that a look costs the number of messages with the wanted value, not the queue's length.  A read
that waits is looked at again only when a message with its value becomes readable
(``MatchingSeek``, ``IdTable.arrived``): many requesters waiting on one reply queue do not each
look again at every arrival.  When more than ``SCAN_ABOVE`` messages share the value, the queue is
scanned in order instead, which stops at the first match.

A mixin of ``pymsmq.qm.queue.Queue`` (``Queue`` is its only subclass).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from pymsmq.model.ids import ObjectId
from pymsmq.qm.index import AVAILABLE, LOCKED, Entry, IdTable, MessageIndex
from pymsmq.qm.notifications import receive_async

if TYPE_CHECKING:
    from pymsmq.model.message import Message
    from pymsmq.qm.hold import Hold
    from pymsmq.qm.transaction import Transaction

__all__ = ["SCAN_ABOVE", "MatchingReads", "MatchingSeek", "first_matching"]

#: A value shared by more messages than this is looked for by a scan in queue order (which stops
#: at the first match) rather than by comparing the positions of all of them.
SCAN_ABOVE: Final = 64


def first_matching(index: MessageIndex, field: str, wanted: ObjectId, peek: bool) -> Entry | None:
    """The first entry in queue order that a receive (or, with ``peek``, a peek) may read and whose
    message's ``field`` ("id" or "correlation_id") equals ``wanted``; None when there is none."""
    group = index.by_field(field).group(wanted)
    if len(group) <= SCAN_ABOVE:
        # Queue order ([MS-MQDMPR] 3.1.1.2): higher priority first, then ascending lookup id.
        best: Entry | None = None
        for entry in group.values():
            state = entry.state
            if (state == AVAILABLE or (peek and state == LOCKED and entry.allow_peek)) and (
                best is None
                or entry.priority > best.priority
                or (entry.priority == best.priority and entry.lookup_id < best.lookup_id)
            ):
                best = entry
        return best
    return _scan(index, field, wanted, peek)


class MatchingSeek:
    """What a read of the first message whose ``field`` ("id" or "correlation_id") is ``wanted``
    looks for, and waits for, as ``notifications.watch``'s seek (called under the lock).

    ``group_key`` puts the reads waiting for the same value in one group; ``value_key`` lets an
    arrival look at the groups of its own value only (``WatchedCondition.matching``): a thousand
    requesters waiting on one reply queue cost each arrival a look at one of them, not a thousand.
    """

    __slots__ = ("field", "peek", "wanted")

    def __init__(self, field: str, wanted: ObjectId, peek: bool) -> None:
        self.field = field
        self.wanted = wanted
        self.peek = peek

    def __call__(self, index: MessageIndex) -> Entry | None:
        return first_matching(index, self.field, self.wanted, self.peek)

    def group_key(self, index: MessageIndex) -> tuple[object, ...]:
        """What this seek finds in ``index`` depends on this alone (under the lock)."""
        return ("matching", self.field, self.wanted, self.peek, index)

    def value_key(self, index: MessageIndex) -> tuple[IdTable, ObjectId]:
        """The table of ``index`` by this seek's field, and the value it waits for."""
        return (index.by_field(self.field), self.wanted)


def _scan(index: MessageIndex, field: str, wanted: ObjectId, peek: bool) -> Entry | None:
    for entry in index:
        state = entry.state
        # Entry.visible(peek), inline (the test every entry of the scan pays).
        if (state == AVAILABLE or (peek and state == LOCKED and entry.allow_peek)) and getattr(
            entry.message, field
        ) == wanted:
            return entry
    return None


class MatchingReads:
    """``receive_by_id``, ``peek_by_id``, ``receive_by_correlation_id`` and
    ``peek_by_correlation_id`` of ``Queue``."""

    __slots__ = ()

    if TYPE_CHECKING:  # provided by Queue

        def _read(
            self,
            seek: Callable[[MessageIndex], Entry | None],
            peek: bool,
            timeout: float | None,
            transaction: object = None,
        ) -> Message: ...

    def _matching(
        self,
        field: str,
        wanted: ObjectId | bytes | str,
        peek: bool,
        timeout: float | None,
        transaction: object,
    ) -> Message:
        target = ObjectId.coerce(wanted)
        return self._read(MatchingSeek(field, target, peek), peek, timeout, transaction)

    async def _matching_async(
        self,
        field: str,
        wanted: ObjectId | bytes | str,
        peek: bool,
        timeout: float | None,
        transaction: object,
    ) -> Message:
        # ``_matching`` without blocking the event loop: tried without waiting (in the loop's
        # default executor: a recoverable receive waits for an fsync), then woken by a
        # notification that fires when a matching message is there (``notifications.watch``).
        target = ObjectId.coerce(wanted)
        call = functools.partial(self._matching, field, target, peek, 0, transaction)
        seek = MatchingSeek(field, target, peek)
        return await receive_async(self, timeout, transaction, peek, call, seek)  # type: ignore[arg-type]

    def receive_by_id(
        self,
        message_id: ObjectId | bytes | str,
        timeout: float | None = 0,
        transaction: Transaction | Hold | int | None = None,
    ) -> Message:
        """Remove and return the message whose ``id`` is ``message_id`` (System.Messaging
        ``ReceiveById``).

        ``timeout`` in seconds, 0 by default: not there now raises MQ_ERROR_MESSAGE_NOT_FOUND, as
        ``ReceiveById(id)`` does; a positive timeout (or None, forever) waits for it to arrive and
        raises MQ_ERROR_IO_TIMEOUT when it does not.  ``transaction`` as for ``receive``.
        """
        return self._matching("id", message_id, False, timeout, transaction)

    def peek_by_id(self, message_id: ObjectId | bytes | str, timeout: float | None = 0) -> Message:
        """Return (a copy of) the message whose ``id`` is ``message_id`` without removing it
        (System.Messaging ``PeekById``); ``timeout`` as for ``receive_by_id``."""
        return self._matching("id", message_id, True, timeout, None)

    def receive_by_correlation_id(
        self,
        correlation_id: ObjectId | bytes | str,
        timeout: float | None = 0,
        transaction: Transaction | Hold | int | None = None,
    ) -> Message:
        """Remove and return the first message whose ``correlation_id`` is ``correlation_id``
        (System.Messaging ``ReceiveByCorrelationId``: a reply to the request whose ``id`` it is).

        The first in queue order (priority, then arrival) when several match; ``timeout`` and
        ``transaction`` as for ``receive_by_id``.
        """
        return self._matching("correlation_id", correlation_id, False, timeout, transaction)

    def peek_by_correlation_id(
        self, correlation_id: ObjectId | bytes | str, timeout: float | None = 0
    ) -> Message:
        """Return (a copy of) the first message whose ``correlation_id`` is ``correlation_id``
        without removing it (System.Messaging ``PeekByCorrelationId``)."""
        return self._matching("correlation_id", correlation_id, True, timeout, None)

    async def receive_by_id_async(
        self,
        message_id: ObjectId | bytes | str,
        timeout: float | None = 0,
        transaction: Transaction | Hold | int | None = None,
    ) -> Message:
        """``await q.receive_by_id_async(...)``: ``receive_by_id`` without blocking the event loop."""
        return await self._matching_async("id", message_id, False, timeout, transaction)

    async def peek_by_id_async(
        self, message_id: ObjectId | bytes | str, timeout: float | None = 0
    ) -> Message:
        """``await q.peek_by_id_async(...)``: ``peek_by_id`` without blocking the event loop."""
        return await self._matching_async("id", message_id, True, timeout, None)

    async def receive_by_correlation_id_async(
        self,
        correlation_id: ObjectId | bytes | str,
        timeout: float | None = 0,
        transaction: Transaction | Hold | int | None = None,
    ) -> Message:
        """``await q.receive_by_correlation_id_async(...)``: ``receive_by_correlation_id`` without
        blocking the event loop (a request/response client on asyncio)."""
        return await self._matching_async("correlation_id", correlation_id, False, timeout, transaction)

    async def peek_by_correlation_id_async(
        self, correlation_id: ObjectId | bytes | str, timeout: float | None = 0
    ) -> Message:
        """``await q.peek_by_correlation_id_async(...)``: ``peek_by_correlation_id`` without
        blocking the event loop."""
        return await self._matching_async("correlation_id", correlation_id, True, timeout, None)
