"""RECEIVE (and peek) scheduling for ``Session`` (docs/protocol.md 5 and 8).

A peek, and a receive of an express message at the head of a non-transactional queue, runs on the
event loop (nothing durable is written).  Recoverable and transactional receives, which wait for an
fsync, run on the work pool, after earlier state-changing work of the same handle.

No read holds a thread while it waits for a message: one that finds none parks on a queue arrival
notification (``waits.ArrivalWait``) for what it looks for (the head, the message after a cursor,
a message id or correlation id), and tries again when it fires; a read that may write (a
transactional, recoverable or two-phase receive, a batch) tries on the work pool
(``try_or_park``).  A thousand waiting reads cost a thousand small objects, and no client's
waiting reads can keep another's from being served.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol import Action, hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import Op, ReceiveFlags
from pymsmq.protocol.message_codec import (
    CLIENT_RECEIVE_PROPIDS,
    DEFAULT_RECEIVE_PROPIDS,
    encode_packet,
    fact_properties,
    held_properties,
    receive_answer_body,
)
from pymsmq.qm.cursor import CursorSeek, cursor_advance, cursor_wait_expired
from pymsmq.qm.hold import Hold
from pymsmq.qm.matching import MatchingSeek
from pymsmq.qm.notifications import Seek, first_available, first_peekable
from pymsmq.qm.queue import Cursor, own_cursor
from pymsmq.server.access import receive_right
from pymsmq.server.reads import matching_reader, reader
from pymsmq.server.waits import ArrivalWait, Cancels, end_seek, pass_on, timed_out
from pymsmq.wire.security import MQQueueAccessMask

if TYPE_CHECKING:
    from collections.abc import Callable

    from pymsmq.protocol import ErrorResponse
    from pymsmq.protocol._fields import Props
    from pymsmq.qm.transaction import Transaction
    from pymsmq.server.app import Server
    from pymsmq.server.holds import Holds
    from pymsmq.server.session import Handle
    from pymsmq.server.stats import ServerStats
    from pymsmq.server.workers import PoolShare

__all__ = ["ReceiveMixin"]

_M = MQQueueAccessMask
_INFINITE_MS: Final = 0xFFFFFFFF
_A = Action
_PEEK_ACTIONS: Final = frozenset(a for a in Action if a.peek)
_NOT_FOUND: Final = HResult.MQ_ERROR_MESSAGE_NOT_FOUND
_NO_PACKET: Final = int(ReceiveFlags.NO_PACKET)
_CONFIRM: Final = int(ReceiveFlags.CONFIRM)
_ADVANCE: Final = int(ReceiveFlags.ADVANCE)
_RECEIVE: Final = int(Action.MQ_ACTION_RECEIVE)
_RECEIVE_OP: Final = int(Op.RECEIVE)
#: Receives that peek first after a handle met a recoverable message at its head.
_DURABLE_HINT: Final = 64
# MQQUEUEACCESSMASK bits as plain ints (an IntFlag operation costs a Python call on the hot path).
_PEEK_RIGHT: Final = int(_M.MQSEC_PEEK_MESSAGE)
_RECEIVE_RIGHT: Final = int(_M.MQSEC_RECEIVE_MESSAGE)


class ReceiveMixin:
    """``_receive`` for ``Session``."""

    stats: ServerStats
    handles: dict[int, Handle]
    cursors: dict[int, Any]
    loop: asyncio.AbstractEventLoop
    pending: int
    waits: set[ArrivalWait]
    cancels: Cancels
    closed: bool
    holds: Holds
    server: Server
    pool: PoolShare

    if TYPE_CHECKING:

        def handle(self, number: int) -> Handle: ...
        def check(self, h: Handle, needed: int, what: str) -> None: ...
        def transaction(self, ref: object) -> Transaction | int | None: ...
        def receive_transaction(self, ref: object) -> Transaction | int | None: ...
        def answer(self, rid: int, response: pm.Response | ErrorResponse) -> None: ...
        def answer_fast(self, rid: int, op: int, body: bytes | None) -> bool: ...
        def fail(self, rid: int, exc: BaseException) -> None: ...
        def off_loop(self, rid: int, fn: Callable[[], pm.Response], handle: Handle | None = None) -> None: ...
        def settle(self, rid: int, fut: asyncio.Future[Any]) -> bool: ...

    def _receive(self, rid: int, req: pm.ReceiveRequest) -> None:
        h = self.handles.get(req.handle) or self.handle(req.handle)
        action = req.action
        if (
            action == _RECEIVE
            and (not h.durable_hint or req.flags & _CONFIRM)
            and not req.cursor
            and req.transaction is None
            and not h.journal
            and not _RECEIVE_RIGHT & ~h.rights
            and (h.tail is None or h.tail.done())
            and not h.queue.transactional
        ):
            # Fast path: a plain receive of the head of an express, non-transactional queue whose
            # handle met no recoverable message lately (the adaptive case below, without its
            # closures).  No message now: the general path below decides (wait, or NOT_FOUND).
            # Two-phase (CONFIRM): a recoverable message found is held, not removed (holds.py), so
            # nothing waits for the disk here whatever the head is: END_RECEIVE does.
            hold = Hold() if req.flags & _CONFIRM else None
            try:
                message = h.queue.receive(0, hold)
            except MSMQError as exc:
                if exc.hresult != _NOT_FOUND:
                    raise
            else:
                if message.delivery:
                    h.durable_hint = _DURABLE_HINT
                counters = self.stats.queue(h.stats_key)
                counters.received += 1
                counters.bytes_out += len(message.body)
                packet = None if req.flags & _NO_PACKET else encode_packet(message, h.format_name)
                propids = req.propids or DEFAULT_RECEIVE_PROPIDS
                if hold is not None and hold.held:
                    if self.holds.add(req.handle, message.lookup_id, hold):
                        props = held_properties(fact_properties(message, propids))
                        self.answer(rid, hot.receive_response(packet, props))
                    return
                if propids != CLIENT_RECEIVE_PROPIDS or not self.answer_fast(
                    rid, _RECEIVE_OP, receive_answer_body(packet, message)
                ):
                    self.answer(rid, hot.receive_response(packet, fact_properties(message, propids)))
                return
        peek = action in _PEEK_ACTIONS
        if peek:
            self.check(h, _PEEK_RIGHT, "peek at")
        else:
            self.check(h, receive_right(h.journal), "receive from")
        cursor: Cursor | None = None
        if req.cursor:
            entry = self.cursors.get(req.cursor)
            if entry is None or entry[1] != req.handle:
                raise MSMQError(
                    f"no cursor {req.cursor} on handle {req.handle}", HResult.MQ_ERROR_INVALID_HANDLE
                )
            cursor = entry[0]
            if req.flags & _ADVANCE and action == _A.MQ_ACTION_PEEK_NEXT and cursor_advance(cursor):
                # [MC-MQAC] 3.11.4.1.9 MQMSG_NEXT (a remote enable_notification): the cursor has
                # moved past its message; the wait is a peek of the first one after it.
                action = _A.MQ_ACTION_PEEK_CURRENT
        tx = None if peek else self.receive_transaction(req.transaction)
        # Two-phase (CONFIRM, outside a transaction): a recoverable message is held, not removed,
        # until END_RECEIVE; the answer says so (holds.py, [MS-MQRR] 3.1.4.9).
        hold = Hold() if tx is None and not peek and req.flags & _CONFIRM else None
        ms = req.request_timeout
        timeout = None if ms == _INFINITE_MS else ms / 1000.0
        read = reader(h.queue, cursor, action, req.lookup_id, tx if hold is None else hold)
        propids = req.propids or DEFAULT_RECEIVE_PROPIDS
        no_packet = bool(req.flags & _NO_PACKET)

        fmt = h.format_name

        def respond(message: Message) -> pm.Response:
            props = self._answer_facts(req.handle, h.stats_key, message, peek, hold, propids)
            return hot.receive_response(None if no_packet else encode_packet(message, fmt), props)

        def run(t: float | None = timeout) -> pm.Response:
            return respond(read(t))

        def receive_again(remaining: float | None) -> bool:
            # A message arrived (on the queue's notification): express head on the loop, else
            # received on the work pool (parked again if someone was faster).
            try:
                head = h.queue.peek(0)
            except MSMQError as exc:
                if exc.hresult != _NOT_FOUND:
                    raise
                return False
            if head.delivery:  # (woken: the turn is passed on after the try)
                self.try_or_park(rid, h, run, remaining, first_available, exclusive=True, woken=True)
                return True
            return self._answer_now(rid, run) is None

        waits = not action & 0x40000000 and timeout != 0
        free = h.tail is None or h.tail.done()
        if peek and free:
            # A cursor's wait begins before the first look (an arrival ahead of it satisfies it).
            at = _cursor_of(h, cursor, action) if waits else None
            seek = None if at is None else CursorSeek(at, True)  # None: the head (enable_notification)
            parked = False
            try:
                missing = self._answer_now(rid, run)
                if missing is not None and waits:
                    attempt = lambda _remaining: self._answer_now(rid, run) is None  # noqa: E731
                    ArrivalWait(self, rid, h, attempt, timeout, seek)  # (it ends the seek)
                    parked = True
                    return
            finally:
                if not parked:
                    end_seek(seek)
            if missing is not None:
                raise missing
            return
        if (
            free
            and cursor is None
            and action == _A.MQ_ACTION_RECEIVE
            and tx is None
            and not h.queue.transactional
        ):
            # Express head: receiving it writes nothing durable, so it is done on the loop.  While
            # this handle has not met a recoverable message lately, skip the peek and receive
            # directly; if that finds a recoverable one after all, its removal was committed on
            # the loop (one fsync) and the next _DURABLE_HINT receives peek first again.
            if not h.durable_hint:
                try:
                    message = read(0)
                except MSMQError as exc:
                    if exc.hresult != _NOT_FOUND or not waits:
                        raise
                    ArrivalWait(self, rid, h, receive_again, timeout, first_available, exclusive=True)
                    return
                if message.delivery:
                    h.durable_hint = _DURABLE_HINT
                self.answer(rid, respond(message))
                return
            try:
                head = h.queue.peek(0)
            except MSMQError as exc:
                if exc.hresult != _NOT_FOUND or not waits:
                    raise
                ArrivalWait(self, rid, h, receive_again, timeout, first_available, exclusive=True)
                return
            if head.delivery:
                h.durable_hint = _DURABLE_HINT
            else:
                h.durable_hint -= 1
                missing = self._answer_now(rid, run)
                if missing is None:
                    return
                if not waits:
                    raise missing
                ArrivalWait(self, rid, h, receive_again, timeout, first_available, exclusive=True)
                return
        if not waits:
            self.off_loop(rid, run, None if peek else h)
            return
        at = _cursor_of(h, cursor, action)
        if at is None:
            self.try_or_park(rid, h, run, timeout, first_peekable if peek else first_available, not peek)
        elif peek:
            self.try_or_park(rid, h, run, timeout, CursorSeek(at, True), exclusive=False)
        else:  # a cursor's receive that times out moves it to End ([MS-MQDMPR] 3.2.7.6)
            expired = functools.partial(cursor_wait_expired, at)
            self.try_or_park(rid, h, run, timeout, CursorSeek(at, False), exclusive=True, expired=expired)

    def try_or_park(
        self,
        rid: int,
        h: Handle,
        run: Callable[[float | None], Any],
        timeout: float | None,
        seek: Seek,
        exclusive: bool,
        expired: Callable[[], None] | None = None,
        woken: bool = False,
    ) -> None:
        """Answer ``rid`` with ``run(0)``, a read of ``h`` that may write (to the store, a
        transaction or a two-phase hold) and may wait up to ``timeout``: tried on the work pool;
        when it finds nothing (MQ_ERROR_MESSAGE_NOT_FOUND), parked on an arrival notification for
        what ``seek`` looks for (``exclusive`` for a receive: one arrival wakes one), tried again
        when it fires, and so on until it answers or its timeout ends it (MQ_ERROR_IO_TIMEOUT, after
        ``expired()``; ``woken``: the first try was woken by an arrival, whose turn it passes on
        after it).  No thread waits: waiting transactional consumers and cursor reads each
        held one, and one client's could keep every other client's reads from being served.
        CANCEL_RECEIVE stops it at any point (while it tries: once the try found nothing)."""
        _WorkPoolRead(self, rid, h, run, timeout, seek, exclusive, expired, woken).start()

    def _answer_facts(
        self,
        handle: int,
        stats_key: str,
        message: Message,
        peek: bool,
        hold: Hold | None,
        propids: tuple[int, ...],
    ) -> Props:
        """The facts of a read's answer (``propids``), counted in the statistics ``stats_key``
        (``Handle.stats_key``); a message ``hold`` keeps is registered for END_RECEIVE on
        ``handle`` and its answer marked held."""
        counters = self.stats.queue(stats_key)
        if peek:
            counters.peeked += 1
        else:
            counters.received += 1
            counters.bytes_out += len(message.body)
        props = fact_properties(message, propids)
        if hold is not None and hold.held:
            self.holds.keep(handle, message.lookup_id, hold)
            props = held_properties(props)
        return props

    def _receive_matching(self, rid: int, req: pm.ReceiveMatchingRequest) -> None:
        """RECEIVE_MATCHING (docs/protocol.md 11): the first message whose id or correlation id is
        the one asked for (``Queue.receive_by_id`` and its kin), with RECEIVE's rights, transaction,
        two-phase hold and waits (parked on a notification, cancellable by CANCEL_RECEIVE)."""
        h = self.handle(req.handle)
        peek = req.action != _RECEIVE
        if peek:
            self.check(h, _PEEK_RIGHT, "peek at")
        else:
            self.check(h, receive_right(h.journal), "receive from")
        tx = None if peek else self.receive_transaction(req.transaction)
        hold = Hold() if tx is None and not peek and req.flags & _CONFIRM else None
        ms = req.request_timeout
        timeout = None if ms == _INFINITE_MS else ms / 1000.0
        field = pm.MATCH_PROPIDS[req.match]
        wanted = ObjectId(req.lineage, req.uniquifier)
        read = matching_reader(h.queue, field, wanted, peek, tx if hold is None else hold)
        propids = req.propids or DEFAULT_RECEIVE_PROPIDS
        no_packet = bool(req.flags & _NO_PACKET)
        fmt = h.format_name

        def run(t: float | None = timeout) -> pm.Response:
            message = read(t)
            props = self._answer_facts(req.handle, h.stats_key, message, peek, hold, propids)
            packet = None if no_packet else encode_packet(message, fmt)
            return pm.ReceiveMatchingResponse(packet, props)

        if timeout == 0:
            self.off_loop(rid, run, None if peek else h)
            return
        # A read that may wait is parked on a notification that fires when a message it may take
        # is there (no thread while it waits: a thousand waiting requesters took a thousand
        # threads).  Then a peek is answered on the loop; a receive is tried on the work pool (it
        # may write to the store) and parked again if another reader was faster.

        seek = MatchingSeek(field, wanted, peek)
        if peek:
            ArrivalWait(self, rid, h, lambda _remaining: self._answer_now(rid, run) is None, timeout, seek)
        else:
            self.try_or_park(rid, h, run, timeout, seek, exclusive=True)

    def _answer_now(self, rid: int, run: Callable[[float | None], pm.Response]) -> MSMQError | None:
        """Answer ``run(0)`` now; if no message is there, return that MQ_ERROR_MESSAGE_NOT_FOUND error."""
        try:
            self.answer(rid, run(0))
        except MSMQError as exc:
            if exc.hresult != _NOT_FOUND:
                raise
            # Without its traceback: the frames in it would refer back to the error through
            # their locals (a reference cycle to free per missed read).
            return exc.with_traceback(None)
        return None


class _WorkPoolRead:
    """``ReceiveMixin.try_or_park``'s read: tried on the work pool, parked on an arrival
    notification when it finds nothing, tried again when it fires.  An object of its own, not
    closures that refer to each other: those made a reference cycle per read, and the reads of
    clients that died while they waited lived until a full garbage collection (the server's
    thresholds make those rare: 3.4 MB per 1,000 such reads, QA 2026-11-27)."""

    __slots__ = (
        "cancelled",
        "deadline",
        "exclusive",
        "expired",
        "h",
        "rid",
        "run",
        "seek",
        "session",
        "woken",
    )

    def __init__(
        self,
        session: ReceiveMixin,
        rid: int,
        h: Handle,
        run: Callable[[float | None], Any],
        timeout: float | None,
        seek: Seek,
        exclusive: bool,
        expired: Callable[[], None] | None,
        woken: bool,
    ) -> None:
        self.session = session
        self.rid = rid
        self.h = h
        self.run = run
        self.deadline = None if timeout is None else session.loop.time() + timeout
        self.seek = seek
        self.exclusive = exclusive
        self.expired = expired
        self.woken = woken
        self.cancelled = False

    def stop(self) -> None:
        self.cancelled = True

    def attempt(self) -> Any:
        try:
            return self.run(0)
        except MSMQError as exc:
            if exc.hresult != _NOT_FOUND:
                raise
            return None

    def start(self) -> None:
        session = self.session
        session.pending += 1
        session.cancels.add(self.rid, self.h, self.stop)
        session.pool.submit(self.attempt).add_done_callback(self.done)

    def arrived(self, remaining: float | None) -> bool:
        self.woken = True
        self.start()
        return True

    def done(self, fut: asyncio.Future[Any]) -> None:
        session, rid = self.session, self.rid
        session.cancels.forget(rid, self.stop)
        if self.exclusive and self.woken:  # the turn this read was woken with (``waits.pass_on``)
            pass_on(self.h.queue)
        if session.settle(rid, fut) or session.closed:
            end_seek(self.seek)
            return
        if self.cancelled:
            end_seek(self.seek)
            session.fail(rid, MSMQError("the receive was cancelled", HResult.MQ_ERROR_OPERATION_CANCELLED))
            return
        deadline = self.deadline
        remaining = None if deadline is None else deadline - session.loop.time()
        if remaining is not None and remaining <= 0:
            # MQ_ERROR_IO_TIMEOUT: this read waited (a ``timeout`` of 0 here is what was left
            # of a longer one, which NOT_FOUND, the no-wait read's error, would misreport).
            error = timed_out(self.expired, None)
            end_seek(self.seek)
            session.fail(rid, error)
            return
        ArrivalWait(
            session,
            rid,
            self.h,
            self.arrived,
            remaining,
            self.seek,
            self.exclusive,
            self.expired,
            hands_off=True,
        )


def _cursor_of(h: Handle, cursor: Cursor | None, action: int) -> Cursor | None:
    """The cursor a read moves: the one it names, the handle's own for a PEEK_NEXT naming none
    (``reads.reader``); None for a read of the head."""
    if cursor is not None:
        return cursor
    if action == _A.MQ_ACTION_PEEK_NEXT:
        return own_cursor(h.queue)
    return None
