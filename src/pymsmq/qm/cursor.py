"""Cursors ([MS-MQDMPR] 3.2) on an embedded ``Queue`` (split out of ``pymsmq.qm.queue``, which re-exports
``Cursor``).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from pymsmq.hresult import HResult
from pymsmq.model.message import Message
from pymsmq.qm.access import _PEEK, _RECEIVE, _err
from pymsmq.qm.index import Entry, MessageIndex
from pymsmq.qm.waiters import normalize_timeout

if TYPE_CHECKING:
    from pymsmq.qm.hold import Hold
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.transaction import Transaction

__all__ = ["Cursor", "CursorSeek", "cursor_advance", "cursor_wait_expired"]


class Cursor:
    """A cursor ([MS-MQDMPR] 3.2): a position (Start, a message, End) and a state (Unread, Read)."""

    __slots__ = ("_closed", "_pos", "_queue", "_read", "_wait_from", "_wait_listed", "_waits")

    def __init__(self, queue: Queue) -> None:
        self._queue = queue
        # [MS-MQDMPR] 3.2.7.1 Initialize: position Start, state Unread.
        self._pos: tuple[int, int] | None = None
        self._read = False
        self._closed = False
        #: While reads wait at the cursor (WaitPeek, WaitReceive; ``_waits`` of them): the queue's
        #: next lookup id and its index's ``made_available_seq`` when the first of them
        #: began.  A message that becomes available meanwhile (it arrives, a transaction commits
        #: it or an abort returns it) satisfies a wait wherever it is placed ([MS-MQDMPR] 3.2.7.5
        #: Message Available moves the waiting cursor to the message; MQReceiveMessage: "If a new
        #: message arrives the cursor is always moved to the new messages, regardless of where the
        #: message is placed in the queue"): one of a higher priority, or one sent in a transaction
        #: before the message at the cursor, is placed ahead of it, where a seek forward never
        #: finds it (outside QA: a cursor receive loop timed out with such a message in the queue).
        self._waits = 0
        self._wait_from: int | None = None
        self._wait_listed = 0

    def reset(self) -> None:
        """Back to Start, state Unread (the next ``peek_current`` returns the first message)."""
        self._check_open()
        self._pos = None
        self._read = False

    def close(self) -> None:
        """Close the cursor (MQCloseCursor; idempotent): a read waiting at it ends with
        MQ_ERROR_OPERATION_CANCELLED, later calls raise MQ_ERROR_INVALID_HANDLE.

        [MS-MQDMPR] 3.1.7.1.2 Close Cursor removes the waiting reads of the cursor; a read
        removed is answered as one cancelled (3.1.7.1.17: MQ_ERROR_OPERATION_CANCELLED), not left
        waiting for ever."""
        q = self._queue
        with q._qm._lock:
            if not self._closed:
                self._closed = True
                q._state.cond.recheck(q)  # wake the reads waiting at it (``_seek`` ends them)

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise _err("the cursor is closed", HResult.MQ_ERROR_INVALID_HANDLE)

    def _seek(self, index: MessageIndex, peek: bool) -> Entry | None:
        # Seek Available Message Position forward, exclusive of the current position.
        if self._closed:  # (a read that waited at it: [MS-MQDMPR] 3.1.7.1.2)
            raise _err("the cursor was closed", HResult.MQ_ERROR_OPERATION_CANCELLED)
        if self._pos is None:
            return index.first(peek)
        found = index.after(self._pos[0], self._pos[1], peek)
        if found is None and self._wait_from is not None:
            found = self._became_available_ahead(index, peek)
        return found

    def _became_available_ahead(self, index: MessageIndex, peek: bool) -> Entry | None:
        # The first (in queue order) message ahead of the cursor that became available since the
        # first of the reads waiting at it began: arrived (a new lookup id: only a higher priority
        # places it ahead), or listed by the index (committed, returned by an abort, moved in).
        assert self._pos is not None and self._wait_from is not None
        priority, lookup_id = self._pos
        best: Entry | None = None
        for p in range(7, priority, -1):
            best = index.first_from(p, self._wait_from, peek)
            if best is not None:
                break
        since = self._wait_listed
        for listed, entry in index.made_available:
            ahead = entry.priority > priority or (entry.priority == priority and entry.lookup_id < lookup_id)
            if (
                listed >= since
                and ahead
                and entry.visible(peek)
                and index.get(entry.lookup_id) is entry
                and (best is None or (-entry.priority, entry.lookup_id) < (-best.priority, best.lookup_id))
            ):
                best = entry
        return best

    def _at(self, entry: Entry) -> None:
        self._pos = (entry.priority, entry.lookup_id)

    def _begin_wait(self, timeout: float | None) -> MessageIndex | None:
        """Under the lock: a read that may wait (``timeout`` not 0) begins to wait at the cursor
        (``_wait_from``); the index to give ``_end_wait`` when the read ends, None if it does not
        wait (a read of timeout 0: the server's look for a read it parks, whose wait
        ``CursorSeek`` began)."""
        if timeout == 0:
            return None
        index = self._queue._index()
        if not self._waits:
            self._wait_from = self._queue._state.next_lookup
            self._wait_listed = index.made_available_seq
        self._waits += 1
        index.cursor_waits += 1
        return index

    def _end_wait(self, index: MessageIndex | None) -> None:
        """Under the lock: the read ``_begin_wait`` gave ``index`` ended."""
        if index is None:
            return
        self._waits -= 1
        if not self._waits:
            self._wait_from = None
        index.cursor_waits -= 1
        if not index.cursor_waits:
            index.made_available.clear()

    def _current(self, peek: bool) -> Entry:
        assert self._pos is not None
        entry = self._queue._index().get(self._pos[1])
        if entry is None or not entry.visible(peek):
            raise _err("the message at the cursor was removed", HResult.MQ_ERROR_MESSAGE_ALREADY_RECEIVED)
        return entry

    def _set_read(self, entry: Entry) -> None:
        self._at(entry)
        self._read = True

    def peek_current(self, timeout: float | None = None) -> Message:
        """[MS-MQDMPR] 3.2.7.2 Get Message For Peek."""
        q = self._queue
        with q._qm._lock:
            q._check(0)
            self._check_open()  # a closed cursor before the handle's access (as the remote client)
            q._check(_PEEK | _RECEIVE)
            if self._read:
                normalize_timeout(timeout)  # a bad timeout is refused wherever the cursor stands
                return self._current(True).message.copy()
            waiting = self._begin_wait(timeout)
            try:
                return q._read(lambda index: self._seek(index, True), True, timeout, on_found=self._set_read)
            finally:
                self._end_wait(waiting)

    def peek_next(self, timeout: float | None = None) -> Message:
        """[MS-MQDMPR] 3.2.7.3 Get Next Message For Peek (Unread -> MQ_ERROR_ILLEGAL_CURSOR_ACTION)."""
        q = self._queue
        with q._qm._lock:
            q._check(0)
            self._check_open()
            q._check(_PEEK | _RECEIVE)
            if not self._read:
                raise _err("peek_next needs a cursor on a message", HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION)
            waiting = self._begin_wait(timeout)
            try:
                return q._read(lambda index: self._seek(index, True), True, timeout, on_found=self._set_read)
            finally:
                self._end_wait(waiting)

    def receive_current(
        self, timeout: float | None = None, transaction: Transaction | Hold | int | None = None
    ) -> Message:
        """[MS-MQDMPR] 3.2.7.4 Get Next Message For Dequeue."""
        q = self._queue
        with q._qm._lock:
            q._check(0)
            self._check_open()
            q._check(_RECEIVE)
            if self._read:
                normalize_timeout(timeout)  # a bad timeout is refused wherever the cursor stands
                entry = self._current(False)
                message = q._read(lambda index: entry, False, 0, transaction)
                # Read -> Unread only once the message is taken: "errors never reset the cursor"
                # (a bad transaction argument left it Unread on the message, and the next
                # peek_current skipped to the one after it).
                self._read = False
                return message
        # [MS-MQDMPR] 3.2.7.4 with iNoWait: nothing found is NotFound, the cursor stays where it is;
        # only a wait that times out moves it to End (3.2.7.6 Wait Time Expired).
        to_end = None if timeout == 0 else self._to_end
        with q._qm._lock:
            waiting = self._begin_wait(timeout)
        try:
            return q._read(
                lambda index: self._seek(index, False), False, timeout, transaction, self._at, to_end
            )
        finally:
            with q._qm._lock:
                self._end_wait(waiting)

    def _to_end(self, index: MessageIndex) -> None:
        # [MS-MQDMPR] 3.2.7.6 Wait Time Expired: position End (past the current tail), state Unread.
        tail = index.tail_position()
        if tail is not None:
            self._pos = tail
        self._read = False


class CursorSeek:
    """What a read at a cursor waits for, as ``notifications.watch``'s seek (called under the
    lock): the first message after the cursor's position that a peek (``peek``) or a receive may
    take ([MS-MQDMPR] 3.2.7.2-3.2.7.4, Seek Available Message Position).  For the server, which
    parks waiting cursor reads on notifications instead of blocking a thread.

    ``group_key(index)`` is the same for every cursor at the same position and the same kind of
    read, so that they are armed in one group, looked at once a round (``WatchedCondition.arm``:
    a thousand cursor reads parked at Start cost a thousand looks at each arrival).

    The read waits at the cursor from its making (``Cursor._begin_wait``) to ``end()``, which the
    server calls however the read ends (and, should it not, the seek's collection does)."""

    __slots__ = ("__weakref__", "_cursor", "_peek", "_waiting")

    def __init__(self, cursor: Cursor, peek: bool) -> None:
        self._cursor = cursor
        self._peek = peek
        with cursor._queue._qm._lock:
            self._waiting = [cursor._begin_wait(None)]
        weakref.finalize(self, _end_parked_wait, cursor, self._waiting)

    def end(self) -> None:
        """The parked read ended (answered, timed out, cancelled, its connection gone)."""
        _end_parked_wait(self._cursor, self._waiting)

    def __call__(self, index: MessageIndex) -> Entry | None:
        return self._cursor._seek(index, self._peek)

    def group_key(self, index: MessageIndex) -> tuple[object, ...]:
        """What this seek finds in ``index`` depends on this alone (under the lock)."""
        return (self._cursor._pos, self._cursor._wait_from, self._peek, index)


def cursor_advance(cursor: Cursor) -> bool:
    """[MC-MQAC] 3.11.4.1.9 EnableNotification with MQMSG_NEXT: a cursor on a message (Read)
    advances now: Unread at its position, so that a peek at it finds the first message after that
    one (PeekNext's seek), now or when it arrives.  False, and nothing changes, for an Unread
    cursor (MQ_ERROR_ILLEGAL_CURSOR_ACTION to the caller, [MC-MQAC] <91>)."""
    q = cursor._queue
    with q._qm._lock:
        cursor._check_open()
        if not cursor._read:
            return False
        cursor._read = False
        return True


def cursor_wait_expired(cursor: Cursor) -> None:
    """A ``receive_current`` on ``cursor`` that found nothing and waited elsewhere (parked by the
    server) timed out: [MS-MQDMPR] 3.2.7.6 Wait Time Expired, as for the blocking call.

    The blocking call's last look and its move to End are one hold of the lock; here they are not
    (the wait expired on another thread a moment ago), so a message that a receive at the cursor
    would take now arrived after the wait ended: the cursor stays before it instead of moving past
    it (the QA of 2026-11-27 found 13 of 76 timed-out cursor receives skipping such a message)."""
    q = cursor._queue
    with q._qm._lock:
        q._check(_RECEIVE)
        cursor._check_open()
        index = q._index()
        if cursor._seek(index, False) is None:
            cursor._to_end(index)


def _end_parked_wait(cursor: Cursor, waiting: list[MessageIndex | None]) -> None:
    # CursorSeek.end, once (``waiting``: the index its wait counts in, None once ended).
    with cursor._queue._qm._lock:
        index, waiting[0] = waiting[0], None
        cursor._end_wait(index)
