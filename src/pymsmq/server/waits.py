"""Waiting head receives and peeks, and reads by message id or correlation id, parked on a queue
arrival notification, not on a thread.

A RECEIVE (or peek) of the queue head that finds nothing and may wait arms ONE notification
(``Queue.enable_notification``, [MC-MQAC] 3.11.4.1.9) with its remaining timeout.  When it fires
(on the queue manager's event thread) the attempt is handed to the event loop, which tries again:
if another reader was faster it re-arms; on a timeout it answers MQ_ERROR_IO_TIMEOUT exactly as a
blocking receive would.  So a thousand idle receivers cost a thousand small objects, not a thousand
parked threads.  ``cancel`` (connection gone) and ``abandon`` (server shutdown) end a wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.notifications import Seek, watch
from pymsmq.qm.waiters import not_found

if TYPE_CHECKING:
    from pymsmq.qm.notifications import Notification
    from pymsmq.qm.queue import Queue
    from pymsmq.server.session import Handle

__all__ = ["ArrivalWait", "Cancels", "WaitOwner", "pass_on", "timed_out"]


class Cancels:
    """The waiting reads of one connection that CANCEL_RECEIVE may stop ([MS-MQRR] 3.1.4.8), by
    request id, each with its queue handle and the callable that stops it."""

    __slots__ = ("_reads",)

    def __init__(self) -> None:
        self._reads: dict[int, tuple[Handle, Callable[[], None]]] = {}

    def __len__(self) -> int:
        return len(self._reads)

    def add(self, rid: int, handle: Handle, stop: Callable[[], None]) -> None:
        """Read ``rid`` on ``handle`` waits; ``stop()`` ends it (a later ``add`` for ``rid`` replaces it)."""
        self._reads[rid] = (handle, stop)

    def forget(self, rid: int, stop: Callable[[], None]) -> None:
        """Read ``rid`` no longer waits: its entry goes, unless another ``stop`` took it over (a wait
        handed on to a pool thread).  ``stop`` compares equal (``==``): a bound method is a new
        object at each look, and one kept on its own object would make a reference cycle."""
        entry = self._reads.get(rid)
        if entry is not None and entry[1] == stop:
            del self._reads[rid]

    def take_all(self) -> list[Callable[[], None]]:
        """The ``stop`` of every waiting read (the entries go): the server is shutting down."""
        stops = [stop for _, stop in self._reads.values()]
        self._reads.clear()
        return stops

    def take(self, rid: int, handle: Handle) -> Callable[[], None] | None:
        """The ``stop`` of read ``rid`` if it waits on ``handle`` (its entry goes); else None."""
        entry = self._reads.get(rid)
        if entry is None or entry[0] is not handle:
            return None
        del self._reads[rid]
        return entry[1]


class WaitOwner(Protocol):
    """What a wait needs from its connection (``Session``)."""

    loop: asyncio.AbstractEventLoop
    pending: int
    waits: set[ArrivalWait]
    cancels: Cancels
    closed: bool

    def fail(self, rid: int, exc: BaseException) -> None:
        """Answer ``rid`` with the error ``exc``."""


_NOT_FOUND: Final = HResult.MQ_ERROR_MESSAGE_NOT_FOUND
_IO_TIMEOUT: Final = HResult.MQ_ERROR_IO_TIMEOUT


class ArrivalWait:
    """One parked request; ``attempt()`` (on the loop) returns True once the request is dealt with."""

    __slots__ = (
        "attempt",
        "deadline",
        "exclusive",
        "expired",
        "handle",
        "hands_off",
        "loop",
        "notification",
        "over",
        "rid",
        "seek",
        "session",
        "timeout",
    )

    def __init__(
        self,
        session: WaitOwner,
        rid: int,
        handle: Handle,
        attempt: Callable[[float | None], bool],
        timeout: float | None,
        seek: Seek | None = None,
        exclusive: bool = False,
        expired: Callable[[], None] | None = None,
        hands_off: bool = False,
    ) -> None:
        self.session = session
        self.rid = rid
        self.handle = handle
        self.attempt = attempt
        #: What the read looks for (``notifications.watch``); None: a peek of the head
        #: (``enable_notification``).
        self.seek = seek
        #: A receive: one arrival wakes one such wait (``watch``'s exclusive); a wait woken that
        #: does not take its message passes the turn on (``pass_on``).
        self.exclusive = exclusive
        #: Called (on the loop) when the wait ends by its timeout: a cursor's receive moves the
        #: cursor to End ([MS-MQDMPR] 3.2.7.6 Wait Time Expired).
        self.expired = expired
        #: ``attempt`` only starts the read (on a pool thread), which passes the turn on itself
        #: when it is over (``pass_on``): passed on at once, the turn would wake the next waiting
        #: receive for the message this one is about to take.
        self.hands_off = hands_off
        self.loop: asyncio.AbstractEventLoop = session.loop
        self.timeout = timeout
        self.deadline = None if timeout is None else self.loop.time() + timeout
        self.notification: Notification | None = None
        self.over = False
        session.pending += 1
        session.waits.add(self)
        session.cancels.add(rid, handle, self._cancel_request)
        self._arm()

    def _remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(self.deadline - self.loop.time(), 0.0)

    def _arm(self) -> None:
        remaining = self._remaining()
        if remaining == 0:
            self._time_out()
            return
        try:
            if self.seek is None:
                self.notification = self.handle.queue.enable_notification(
                    self._arrived, 0, remaining, self._error
                )
            else:
                self.notification = watch(
                    self.handle.queue, self.seek, self._arrived, remaining, self._error, self.exclusive
                )
        except MSMQError as exc:
            self._fail(exc)

    # Called on the queue manager's event thread: hop to the loop.
    def _arrived(self, queue: Queue, cursor: int) -> None:
        self._call(self._retry)

    def _error(self, queue: Queue, hresult: int, cursor: int) -> None:
        if hresult in (_IO_TIMEOUT, _NOT_FOUND):
            self._call(self._time_out)
        else:
            self._call(lambda: self._fail(_error(hresult)))

    def _call(self, fn: Callable[[], Any]) -> None:
        try:
            self.loop.call_soon_threadsafe(fn)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    # On the loop.
    def _retry(self) -> None:
        handed_off = False
        try:
            handed_off = self._try_again()
        finally:
            if self.exclusive and not handed_off:
                pass_on(self.handle.queue)

    def _try_again(self) -> bool:
        # True when ``attempt`` handed the read off (``hands_off``: it passes the turn on itself).
        if self.over:
            return False
        if self.session.closed:
            self.cancel()
            return False
        try:
            done = self.attempt(self._remaining())
        except MSMQError as exc:
            self._fail(exc)
            return False
        except Exception as exc:  # answered as an internal error, like any request
            self._fail(exc)
            return False
        if done:
            self._end(handed_on=self.hands_off)
            return self.hands_off
        self._arm()
        return False

    def _time_out(self) -> None:
        if not self.over:
            self._fail(timed_out(self.expired, self.timeout))

    def _fail(self, exc: BaseException) -> None:
        if self.over:
            return
        self._end()
        self.session.fail(self.rid, exc)

    def _end(self, handed_on: bool = False) -> None:
        self.over = True
        if not handed_on:  # (a read handed on goes on with its seek: it ends it; outside QA: a
            end_seek(self.seek)  # cancelled or disconnected one handed nothing on, and leaked)
        session = self.session
        session.pending -= 1
        session.waits.discard(self)
        session.cancels.forget(self.rid, self._cancel_request)

    def _cancel_request(self) -> None:
        # CANCEL_RECEIVE ([MS-MQRR] 3.1.4.8): answered MQ_ERROR_OPERATION_CANCELLED.
        self.abandon(MSMQError("the receive was cancelled", HResult.MQ_ERROR_OPERATION_CANCELLED))

    def cancel(self) -> None:
        """The connection is gone: disarm, answer nobody."""
        if self.over:
            return
        n = self.notification
        if n is not None:
            n.cancel()
        self._end()

    def abandon(self, exc: MSMQError) -> None:
        """The server is shutting down: disarm and answer with ``exc``."""
        if self.over:
            return
        n = self.notification
        if n is not None:
            n.cancel()
        self._fail(exc)


def end_seek(seek: Seek | None) -> None:
    """A parked read that used ``seek`` ended: a cursor's seek ends its wait at the cursor
    (``qm.cursor.CursorSeek.end``); other seeks have nothing to end."""
    end = getattr(seek, "end", None)
    if end is not None:
        end()


def timed_out(expired: Callable[[], None] | None, timeout: float | None) -> MSMQError:
    """The answer of a parked read whose time is up: ``expired()`` first (a cursor's receive moves
    the cursor to End, [MS-MQDMPR] 3.2.7.6), its error if it fails (the handle closed meanwhile),
    else the error a blocking read gives for ``timeout``."""
    if expired is not None:
        try:
            expired()
        except MSMQError as exc:
            return exc
    return not_found(timeout)


def pass_on(queue: Queue) -> None:
    """A waiting receive was woken for a message that no other waiting receive was woken for:
    whether it took it (another may be there: a batch arrived), lost it, ended or re-armed, the
    queue's waits look again, so that no message stays while receives wait for it."""
    with queue._qm._lock:
        if not queue._state.deleted:
            queue._state.cond.poll_watchers()


#: Why a parked read's notification ended, as its answer says (else the HRESULT alone).
_ENDED_BY: Final[dict[int, str]] = {
    HResult.MQ_ERROR_OPERATION_CANCELLED: "the read was cancelled: its queue handle or cursor was closed",
    HResult.MQ_ERROR_INVALID_HANDLE: "the queue handle was closed",
    HResult.MQ_ERROR_QUEUE_DELETED: "the queue was deleted",
}


def _error(hresult: int) -> MSMQError:
    text = _ENDED_BY.get(hresult) or f"the wait ended: 0x{hresult & 0xFFFFFFFF:08X}"
    return MSMQError(text, hresult)
