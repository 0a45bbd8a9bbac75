"""Arrival notifications ([MC-MQAC] 3.11.4.1.9 EnableNotification, 3.16 MSMQEvent) and async receive.

``q.enable_notification(on_arrived, cursor=MQMSG_FIRST, timeout=None, on_error=None)`` arms ONE
notification: exactly one of ``on_arrived(queue, cursor)`` or ``on_error(queue, hresult, cursor)`` is
called later, then nothing more until the caller arms again (typically inside ``on_arrived`` after
a ``receive``).  The notification neither receives nor peeks the message.

* MQMSG_FIRST (0): fires when a peek-suitable message is at the head of the queue.
* MQMSG_CURRENT (1): fires when ``peek_current`` on the handle's cursor would now succeed; the
  cursor lands on that message (digest D4.7 / errata E22 resolution).
* MQMSG_NEXT (2): the cursor advances now (as ``peek_next``); fires when a message is at the
  advanced position.  An Unread cursor cannot advance: ArrivedError MQ_ERROR_ILLEGAL_CURSOR_ACTION
  (MQ_ERROR_MESSAGE_NOT_FOUND when ``timeout == 0``), as [MC-MQAC] <91> lists.
* ``timeout`` (seconds, ``None`` = INFINITE): 0 and nothing there -> ArrivedError
  MQ_ERROR_MESSAGE_NOT_FOUND; a finite timeout that passes -> ArrivedError MQ_ERROR_IO_TIMEOUT.
  Timeouts use the monotonic clock, like receive timeouts.
* The queue is deleted -> ArrivedError MQ_ERROR_QUEUE_DELETED; the handle is closed -> the
  notification is cancelled silently.  Any read access may arm a notification (errata E6).

Mechanism: no thread per notification.  A queue's condition (``WatchedCondition``) re-checks its
armed notifications whenever it is notified (every send, commit, abort, move, delete notifies it);
callbacks and timeouts run on one daemon thread per queue manager (``pymsmq-events``), never under
the queue manager's lock, so a callback may call ``receive`` and re-arm.

``await q.receive_async(timeout=None, transaction=None)`` waits with a notification (the event loop
thread never blocks) and performs the receive itself in the default executor.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult, named
from pymsmq.model.notification_args import checked_arguments
from pymsmq.qm.cursor import cursor_advance
from pymsmq.qm.waiters import cancelled_by_close, normalize_timeout, not_found

if TYPE_CHECKING:
    from pymsmq.model.ids import ObjectId
    from pymsmq.model.message import Message
    from pymsmq.qm.index import Entry, IdTable, MessageIndex
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager

__all__ = [
    "Dispatcher",
    "Notification",
    "WatchedCondition",
    "checked_arguments",
    "enable_notification",
    "first_available",
    "first_peekable",
    "receive_async",
    "watch",
]

log = logging.getLogger("pymsmq.qm")

MQMSG_FIRST: Final = 0
MQMSG_CURRENT: Final = 1
MQMSG_NEXT: Final = 2

ArrivedCallback = Callable[["Queue", int], object]
ErrorCallback = Callable[["Queue", int, int], object]
#: A test of a queue's positions: the entry a waiting read would take, or None.
Seek = Callable[["MessageIndex"], "Entry | None"]

#: A notification that ends before its timeout (it fired or was cancelled) leaves its deadline in
#: the dispatcher's heap; once at least this many such deadlines are there and they outnumber the
#: live ones, the heap is rebuilt without them.  Left until due, each kept its notification, its
#: callbacks and what they hold (a server's parked read: about 2.5 KB) for the whole timeout: a
#: server whose clients died while waiting, or whose waiting receivers re-armed after each lost
#: race, grew by that much per wait for as long as the waits' timeouts.
PRUNE_ENDED_MIN: Final = 1024

#: Seconds between the dispatcher thread's looks at jobs handed over without waking it
#: (``Dispatcher.hand_over``).
HANDED_LOOK: Final = 1.0


class WatchedCondition(threading.Condition):
    """A queue's condition that also re-checks the queue's armed notifications on ``notify_all``."""

    def __init__(self, lock: threading.RLock) -> None:
        super().__init__(lock)
        #: Armed notifications looked at one by one in each round (``Notification.poll``).
        self.watchers: list[Notification] = []
        #: Armed notifications whose seek finds the same thing as others' (a receive or a peek of
        #: the head, reads at cursors at one position): a round looks once per group, and wakes
        #: its members in the order they were armed (``_poll_group``).
        self.groups: dict[tuple[object, ...], dict[Notification, None]] = {}
        #: Groups of armed reads by message id or correlation id (``MatchingSeek``): a round looks
        #: only at those whose value a message arrived with (``IdTable.arrived``), by
        #: ``by_value``.
        self.matching: dict[tuple[object, ...], dict[Notification, None]] = {}
        self.by_value: dict[tuple[IdTable, ObjectId], list[tuple[object, ...]]] = {}
        #: The id tables of ``by_value``, each with its number of groups.
        self.tables: dict[IdTable, int] = {}
        #: The grouped notifications by handle, for ``recheck``.
        self.by_handle: dict[Queue, dict[Notification, None]] = {}
        #: Threads inside ``wait`` (counted under the lock, which ``wait`` holds on entry and exit).
        self.sleepers = 0

    def wait(self, timeout: float | None = None) -> bool:
        """``Condition.wait``, counting the waiting threads so that ``notify_all`` can skip the wake-up."""
        self.sleepers += 1
        try:
            return super().wait(timeout)
        finally:
            self.sleepers -= 1

    def notify_all(self) -> None:
        """Wake blocked readers, then poll armed notifications (caller holds the lock)."""
        # Fast path: every send notifies, but usually nobody waits.  ``sleepers`` changes only under
        # the lock the caller holds, so 0 means no thread can be inside ``wait``: nothing to wake.
        if self.sleepers:
            super().notify_all()
        if self.watchers or self.groups or self.matching:
            self.poll_watchers()

    def recheck(self, handle: Queue | None = None) -> None:
        """``notify_all`` after a change that armed notifications must look at each alone,
        whatever they wait for: those of ``handle`` (it closed, or a cursor of it), or every one
        (None: the queue deleted, the queue manager closed).  Caller holds the lock."""
        self.notify_all()
        if handle is None:
            grouped = [n for groups in (self.groups, self.matching) for ns in groups.values() for n in ns]
        else:
            grouped = list(self.by_handle.get(handle, ()))
        claimed: set[int] = set()
        for n in grouped:
            n.poll(claimed)

    @property
    def armed(self) -> bool:
        """Whether any notification is armed on the queue."""
        return bool(self.watchers or self.groups or self.matching)

    def poll_watchers(self) -> None:
        """Fire the armed notifications whose condition holds (caller holds the lock).

        An exclusive notification (``watch(..., exclusive=True)``: a waiting receive that will take
        what it found) does not fire for a message another exclusive one of this round fired for:
        one arrival wakes one waiting receive, not every one (300 waiting receives cost the server
        10 ms a message, all of them woken to find that one had taken it).
        """
        claimed: set[int] = set()
        for watcher in list(self.watchers):
            watcher.poll(claimed)
        # Nothing changes while the lock is held (a notification that fires only queues its
        # callback), so the watches of a group (``arm``) share one look.
        for members in list(self.groups.values()):
            _poll_group(members, claimed)
        if self.matching:
            self._poll_matching(claimed)

    def _poll_matching(self, claimed: set[int]) -> None:
        # The groups of reads by id or correlation id whose value a message became readable with
        # since they were last looked at.  A group that found its message and still has members
        # (a receive of the round took the message first, or more than one receive waits for
        # the value) is looked at again next round, as a group of ``groups`` is: the value stays
        # in ``arrived``.
        for table in list(self.tables):
            if not table.arrived:
                continue
            arrived, table.arrived = table.arrived, set()
            for value in arrived:
                for key in list(self.by_value.get((table, value), ())):
                    group = self.matching.get(key)
                    if group and _poll_group(group, claimed) and group:
                        table.arrived.add(value)

    def arm(self, n: Notification, index: MessageIndex) -> None:
        """Keep ``n`` armed: in the group of the watches whose seek finds what its finds in
        ``index``, or alone."""
        key = n._group_key(index)
        if key is None:
            self.watchers.append(n)
            return
        n._group = key
        mine = self.by_handle.get(n._queue)
        if mine is None:
            mine = self.by_handle[n._queue] = {}
        mine[n] = None
        value = n._value = n._value_key(index)
        groups = self.groups if value is None else self.matching
        members = groups.get(key)
        if members is None:
            members = groups[key] = {}
            if value is not None:
                self._watch_value(key, value)
        members[n] = None

    def _watch_value(self, key: tuple[object, ...], value: tuple[IdTable, ObjectId]) -> None:
        # A group of reads by ``value`` (its table and the id) was armed.
        self.by_value.setdefault(value, []).append(key)
        table = value[0]
        self.tables[table] = self.tables.get(table, 0) + 1
        table.watch(value[1])

    def _unwatch_value(self, key: tuple[object, ...], value: tuple[IdTable, ObjectId]) -> None:
        # The group ``key`` of reads by ``value`` ended (its last member fired or was cancelled).
        keys = self.by_value[value]
        keys.remove(key)
        if not keys:
            del self.by_value[value]
        table = value[0]
        table.unwatch(value[1])
        if self.tables[table] > 1:
            self.tables[table] -= 1
        else:
            del self.tables[table]

    def disarm(self, n: Notification) -> None:
        """``n`` fired or was cancelled."""
        key = n._group
        if key is None:
            try:
                self.watchers.remove(n)
            except ValueError:
                pass
            return
        mine = self.by_handle.get(n._queue)
        if mine is not None:
            mine.pop(n, None)
            if not mine:
                del self.by_handle[n._queue]
        value = n._value
        groups = self.groups if value is None else self.matching
        members = groups.get(key)
        if members is not None:
            members.pop(n, None)
            if not members:
                del groups[key]
                if value is not None:
                    self._unwatch_value(key, value)


def _poll_group(members: dict[Notification, None], claimed: set[int]) -> bool:
    # One look for the group (its members' seeks find the same entry), then: a group of peeks
    # wakes every member; a group of receives wakes its first member (in arming order) if no other
    # receive of the round was woken for that message (that one passes the turn on: ``watch``).
    # True when the look found the message.
    first = next(iter(members))
    q = first._queue
    try:
        q._check(0)
        entry = first._probe()
    except MSMQError:
        for n in list(members):  # (queue deleted, handle closed): each as it would alone
            n.poll(claimed)
        return False
    if entry is None:
        return False
    if not first.exclusive:
        for n in list(members):
            n._fire_if_open()
        return True
    if entry.lookup_id in claimed:
        return True
    for n in list(members):
        if n._fire_if_open():
            claimed.add(entry.lookup_id)
            break
    return True


def _ended(queue: Queue, cursor: int) -> None:
    """The ``on_arrived`` of a notification that ended (its own was let go)."""


class Dispatcher:
    """One daemon thread per queue manager running notification callbacks and timeouts."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._jobs: deque[Callable[[], object]] = deque()
        #: Jobs of ``hand_over`` (appended without a lock).
        self._handed: deque[Callable[[], object]] = deque()
        self._deadlines: list[tuple[float, int, Notification]] = []
        #: How many deadlines of ``_deadlines`` belong to notifications that ended (an upper bound:
        #: one that ends as its deadline comes due is counted too).
        self._ended = 0
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._stop = False

    def submit(self, job: Callable[[], object]) -> None:
        """Run ``job`` soon on the dispatcher thread."""
        with self._cond:
            self._jobs.append(job)
            self._start()
            self._cond.notify()

    def hand_over(self, job: Callable[[], object]) -> None:
        """``submit`` for code that may run while any lock is held, this dispatcher's included (a
        finalizer, which a garbage collection runs wherever it happens): no lock is waited for,
        and the thread runs ``job`` soon (within ``HANDED_LOOK`` seconds when it could not be
        woken at once)."""
        self._handed.append(job)  # atomic
        if self._cond.acquire(blocking=False):
            try:
                self._start()
                self._cond.notify()
            finally:
                self._cond.release()

    def add_deadline(self, deadline: float, notification: Notification) -> None:
        """Call ``notification.expire()`` at monotonic time ``deadline`` unless it fired before."""
        with self._cond:
            heapq.heappush(self._deadlines, (deadline, next(self._seq), notification))
            self._start()
            self._cond.notify()

    def deadline_ended(self) -> None:
        """Under the queue manager's lock: a notification with a deadline ended before it (see
        ``PRUNE_ENDED_MIN``).  Each rebuild follows at least ``PRUNE_ENDED_MIN`` endings and costs
        less than twice their number: constant time per notification, amortized."""
        with self._cond:
            self._ended += 1
            if self._ended >= PRUNE_ENDED_MIN and 2 * self._ended > len(self._deadlines):
                # ``done`` changes only under the queue manager's lock, which the caller holds.
                self._deadlines = [d for d in self._deadlines if not d[2].done]
                heapq.heapify(self._deadlines)
                self._ended = 0

    def _start(self) -> None:
        if self._thread is None and not self._stop:
            self._thread = threading.Thread(target=self._loop, name="pymsmq-events", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Run what is queued, then stop the thread (idempotent)."""
        with self._cond:
            self._stop = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _loop(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while True:
                    now = time.monotonic()
                    due = self._deadlines and self._deadlines[0][0] <= now
                    if self._jobs or self._handed or due or self._stop:
                        break
                    wait = self._deadlines[0][0] - now if self._deadlines else HANDED_LOOK
                    cond.wait(min(wait, HANDED_LOOK))
                jobs = list(self._jobs)
                self._jobs.clear()
                while self._handed:
                    jobs.append(self._handed.popleft())
                expired: list[Notification] = []
                while self._deadlines and self._deadlines[0][0] <= now:
                    expired.append(heapq.heappop(self._deadlines)[2])
                stop = self._stop and not jobs
            _run(expired, jobs)
            del expired, jobs  # what they hold goes now, not when the next round begins
            if stop:
                return


def _run(expired: list[Notification], jobs: list[Callable[[], object]]) -> None:
    # The dispatcher thread's round: timeouts, then callbacks.
    for n in expired:
        n.expire()
    for job in jobs:
        try:
            job()
        except BaseException:  # a user callback must not kill the thread (sys.exit() too)
            log.exception("a notification callback raised")


class Notification:
    """One armed notification (returned by ``Queue.enable_notification``); ``cancel()`` disarms it."""

    __slots__ = (
        "_cond",
        "_cursor",
        "_dispatcher",
        "_group",
        "_queue",
        "_seek",
        "_timed",
        "_value",
        "_waiting",
        "done",
        "ends_with_handle",
        "exclusive",
        "mode",
        "on_arrived",
        "on_error",
    )

    def __init__(
        self,
        queue: Queue,
        mode: int,
        on_arrived: ArrivedCallback,
        on_error: ErrorCallback | None,
        dispatcher: Dispatcher,
        seek: Seek | None = None,
        exclusive: bool = False,
    ) -> None:
        self._queue = queue
        self.mode = mode
        self.on_arrived = on_arrived
        self.on_error = on_error
        self._dispatcher = dispatcher
        self._cond: WatchedCondition = queue._state.cond
        self._cursor = queue._default_cursor() if mode != MQMSG_FIRST else None
        #: ``watch``'s test of the queue's index instead of the head's (MQMSG_FIRST only).
        self._seek = seek
        #: ``watch``'s exclusive: fires only for a message no other exclusive one fired for in the
        #: same round of ``poll_watchers``.
        self.exclusive = exclusive
        #: The key of the group it is armed in (``WatchedCondition.arm``); None: alone.
        self._group: tuple[object, ...] | None = None
        #: The id table and value of a read by id or correlation id armed in a group of
        #: ``WatchedCondition.matching``; None otherwise.
        self._value: tuple[IdTable, ObjectId] | None = None
        #: True once the notification fired or was cancelled.
        self.done = False
        #: A cursor's notification that may wait waits at the cursor until it ends: the index of
        #: that wait (``Cursor._begin_wait``), as a read's wait (a message that becomes available
        #: ahead of the cursor fires it, as it does remotely: outside QA).
        self._waiting: MessageIndex | None = None
        #: Its deadline is in the dispatcher's heap (``_arm`` with a finite timeout).
        self._timed = False
        #: A waiting read's notification (``watch``): its handle closed, ``on_error`` gets
        #: MQ_ERROR_OPERATION_CANCELLED, as a read blocked on it raises ([MS-MQDMPR] 3.1.7.1.6); an
        #: ``enable_notification`` is cancelled silently ([MC-MQAC] 3.11.4.1.9).
        self.ends_with_handle = False

    def __repr__(self) -> str:
        return f"<Notification cursor={self.mode} {'done' if self.done else 'armed'} on {self._queue!r}>"

    def cancel(self) -> bool:
        """Disarm; True if it had not fired yet."""
        with self._queue._qm._lock:
            return self._finish()

    def _finish(self) -> bool:
        if self.done:
            return False
        self.done = True
        self._cond.disarm(self)
        # What the callbacks hold (a server's parked read, its hold, its closures) goes now, not
        # when the notification object does (its deadline may keep it a while: PRUNE_ENDED_MIN).
        self.on_arrived = _ended
        self.on_error = None
        if self._timed:
            self._dispatcher.deadline_ended()
        if self._waiting is not None:
            assert self._cursor is not None
            waiting, self._waiting = self._waiting, None
            self._cursor._end_wait(waiting)
        return True

    def _group_key(self, index: MessageIndex) -> tuple[object, ...] | None:
        # What makes this watch's seek find what others' find in ``index`` (``WatchedCondition.arm``):
        # the head's seeks, and a cursor's at its position; None for any other (looked at alone).
        seek = self._seek
        if seek is None or self._cursor is not None:
            return None
        if seek is first_available or seek is first_peekable:
            return (self.exclusive, seek, index)
        group_key = getattr(seek, "group_key", None)  # (qm.cursor.CursorSeek, qm.matching.MatchingSeek)
        if group_key is None:
            return None
        return (self.exclusive, *group_key(index))

    def _value_key(self, index: MessageIndex) -> tuple[IdTable, ObjectId] | None:
        # A read by id or correlation id (``MatchingSeek.value_key``): the table of ``index`` by
        # that field and the value it waits for.
        value_key = getattr(self._seek, "value_key", None)
        return None if value_key is None else value_key(index)

    def _fire_if_open(self) -> bool:
        """Under the lock, in a round: fire (True), or end as ``_open`` says (False)."""
        if self.done or not self._open():
            return False
        self._fire()
        return True

    def _open(self) -> bool:
        # Under the lock: whether its handle may still be read; if not, the notification ends:
        # silently when the handle was closed (``enable_notification``), else with the error the
        # handle gives now (closed for a waiting read, queue deleted, queue manager closed).
        q = self._queue
        if q._closed and not self.ends_with_handle:
            self._finish()  # closing the handle cancels silently
            return False
        try:
            q._check(0)
        except MSMQError as exc:
            self._error(cancelled_by_close(exc).hresult)
            return False
        return True

    def _fire(self) -> None:
        # Disarm and queue ``on_arrived`` for the dispatcher thread.
        on_arrived = self.on_arrived
        self._finish()
        self._dispatcher.submit(functools.partial(on_arrived, self._queue, self.mode))

    def _probe(self) -> Entry | None:
        # Under the lock: the message that would satisfy this notification, or None.
        q = self._queue
        index = q._index()
        if self._seek is not None:
            return self._seek(index)
        cursor = self._cursor
        if cursor is None:
            return index.first(True)
        if cursor._read:
            assert cursor._pos is not None
            entry = index.get(cursor._pos[1])
            if entry is not None and entry.visible(True):
                return entry
            raise MSMQError(
                "the message at the cursor was removed", HResult.MQ_ERROR_MESSAGE_ALREADY_RECEIVED
            )
        found = cursor._seek(index, True)
        if found is not None:
            cursor._set_read(found)
        return found

    def poll(self, claimed: set[int] | None = None) -> bool:
        """Under the lock: fire if the condition holds now (or an error occurred); True if fired.

        ``claimed``: the lookup ids exclusive notifications fired for in this round (an exclusive
        one does not fire for one of them, and adds the one it fires for).
        """
        if self.done or not self._open():
            return True
        try:
            found = self._probe()
        except MSMQError as exc:
            self._error(exc.hresult)
            return True
        if found is None:
            return False
        if self.exclusive and claimed is not None:
            if found.lookup_id in claimed:
                return False
            claimed.add(found.lookup_id)
        self._fire()
        return True

    def _error(self, hresult: int) -> None:
        on_error = self.on_error
        if self._finish() and on_error is not None:
            self._dispatcher.submit(functools.partial(on_error, self._queue, named(hresult), self.mode))

    def expire(self) -> None:
        """The notification's timeout passed: ArrivedError MQ_ERROR_IO_TIMEOUT if still armed."""
        with self._queue._qm._lock:
            if not self.done:
                self._error(HResult.MQ_ERROR_IO_TIMEOUT)


def enable_notification(
    queue: Queue,
    on_arrived: ArrivedCallback,
    cursor: int = MQMSG_FIRST,
    timeout: float | None = None,
    on_error: ErrorCallback | None = None,
) -> Notification:
    """Arm one notification on ``queue`` (see the module docstring)."""
    cursor = checked_arguments(cursor, on_arrived, on_error)
    timeout = normalize_timeout(timeout)
    qm: QueueManager = queue._qm
    with qm._lock:
        queue._check(0x21)  # any read access (errata E6): MQ_ERROR_ACCESS_DENIED for send-only
        qm._sweep()
        n = Notification(queue, cursor, on_arrived, on_error, qm._dispatcher)
        if cursor == MQMSG_NEXT:
            c = n._cursor
            assert c is not None
            if not cursor_advance(c):  # advance: search strictly after the current message
                n._error(
                    HResult.MQ_ERROR_MESSAGE_NOT_FOUND
                    if timeout == 0
                    else HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION
                )
                return n
        if n._cursor is not None:
            n._waiting = n._cursor._begin_wait(timeout)
        return _arm(qm, n, timeout)


def _arm(qm: QueueManager, n: Notification, timeout: float | None) -> Notification:
    # Under the lock: fire now if the condition holds, else (timeout permitting) arm until it does.
    if n.poll():
        return n
    if timeout == 0:
        n._error(HResult.MQ_ERROR_MESSAGE_NOT_FOUND)
        return n
    n._cond.arm(n, n._queue._index())
    if timeout is not None:
        n._timed = True
        qm._dispatcher.add_deadline(time.monotonic() + timeout, n)
    return n


def first_available(index: MessageIndex) -> Entry | None:
    """The seek of a waiting receive of the head: the first Available message."""
    return index.first(False)


def first_peekable(index: MessageIndex) -> Entry | None:
    """The seek of a waiting peek of the head: the first message a peek sees."""
    return index.first(True)


def watch(
    queue: Queue,
    seek: Seek,
    on_arrived: ArrivedCallback,
    timeout: float | None,
    on_error: ErrorCallback | None,
    exclusive: bool = False,
) -> Notification:
    """Arm one notification that fires when ``seek(index)`` (called under the queue manager's
    lock with the handle's index, at arming and at every change of the queue) finds an entry: an
    arrival notification for a waiting read, of the head or not (a read by message id or
    correlation id), with no thread blocked ([MS-MQDMPR] 3.1.7.3.1 Wait For New Message).
    ``exclusive``: for a read that takes what it finds; it does not fire for a message another
    exclusive notification of the queue fired for in the same round (``poll_watchers``), so one
    arrival wakes one waiting receive.  ``timeout``, errors and ``cancel`` as for
    ``enable_notification``; the callbacks get MQMSG_FIRST as their cursor."""
    timeout = normalize_timeout(timeout)
    qm: QueueManager = queue._qm
    with qm._lock:
        queue._check(0x21)
        qm._sweep()
        n = Notification(queue, MQMSG_FIRST, on_arrived, on_error, qm._dispatcher, seek, exclusive)
        n.ends_with_handle = True
        return _arm(qm, n, timeout)


async def _not_lost(job: asyncio.Future[Message], peek: bool) -> Message:
    """``await job`` (a receive running on a pool thread, which cannot be stopped): cancelled while it
    runs, a receive that then takes a message returns it all the same (it would be lost otherwise:
    removed from its queue for nobody); one that finds none is cancelled, and so is a peek."""
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        if peek:
            raise
        try:
            return await job
        except MSMQError:
            raise asyncio.CancelledError from None


async def receive_async(
    queue: Queue,
    timeout: float | None = None,
    transaction: Any = None,
    peek: bool = False,
    call: Callable[[], Message] | None = None,
    seek: Seek | None = None,
) -> Message:
    """Receive (or peek) without blocking the event loop; same timeouts and errors as ``receive``.

    ``call``: the read, without waiting (``queue.receive(0, transaction)`` or ``queue.peek(0)``
    by default); ``seek``: what it waits for (``watch``'s; None: a message at the head)."""
    timeout = normalize_timeout(timeout)
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    if call is None:
        call = functools.partial(queue.peek, 0) if peek else functools.partial(queue.receive, 0, transaction)
    waited = False
    while True:
        try:
            return await _not_lost(loop.run_in_executor(None, call), peek)
        except MSMQError as exc:
            if exc.hresult != HResult.MQ_ERROR_MESSAGE_NOT_FOUND:
                if waited:  # the handle closed while the read waited: cancelled (3.1.7.1.6)
                    raise cancelled_by_close(exc) from None
                raise
        remaining = None if deadline is None else deadline - loop.time()
        if remaining is not None and remaining <= 0:
            raise not_found(timeout)
        fut: asyncio.Future[int] = loop.create_future()

        def settle(result: int, fut: asyncio.Future[int] = fut) -> None:
            if not fut.done():
                fut.set_result(result)

        def arrived(_q: Queue, _c: int) -> None:
            loop.call_soon_threadsafe(settle, 0)

        def failed(_q: Queue, hresult: int, _c: int) -> None:
            loop.call_soon_threadsafe(settle, hresult)

        n = watch(queue, seek or first_peekable, arrived, None, failed)
        try:
            status = await asyncio.wait_for(fut, remaining)
        except TimeoutError:
            raise not_found(timeout) from None
        finally:
            n.cancel()
        if status:
            try:
                queue._check(0)  # the handle's own error, when that is what ended the wait
            except MSMQError as exc:
                raise cancelled_by_close(exc) from None
            raise MSMQError("the wait for a message failed", status)
        waited = True
