"""Arrival notifications on a remote queue ([MC-MQAC] 3.11.4.1.9 EnableNotification, 3.16 MSMQEvent).

``RemoteQueue.enable_notification(on_arrived, cursor=MQMSG_FIRST, timeout=None, on_error=None)``
arms ONE notification, as the embedded ``Queue``'s does (``pymsmq.qm.notifications``: the same
cursor modes, timeouts, errors and callbacks): exactly one of ``on_arrived(queue, cursor)`` or
``on_error(queue, hresult, cursor)`` is called later, then nothing more until the caller arms
again.  The notification neither receives nor peeks the message for the caller.

Mechanism: the server parks a peek (RECEIVE with MQ_ACTION_PEEK_CURRENT, or PEEK_NEXT on the
handle's own cursor for MQMSG_NEXT; NO_PACKET) until a message is there or the timeout passes.  One
daemon thread per connection (``NotificationPump``, running while notifications are armed) waits
for the answers of all of them at once and calls their callbacks, one at a time (as on the embedded
queue manager's event thread) and never while the client holds a lock, so a callback may receive
and arm again; an exception a callback raises is logged and dropped.  ``cancel()`` stops the
server's wait (CANCEL_RECEIVE).  Closing the handle cancels silently; the connection lost ends it
with MQ_ERROR_SERVICE_NOT_AVAILABLE.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from pymsmq.client.transport import not_for_sigint
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult, named
from pymsmq.model.constants import MQMSG_FIRST, MQMSG_NEXT
from pymsmq.model.notification_args import checked_arguments
from pymsmq.model.timeouts import timeout_ms
from pymsmq.protocol import Action, ErrorResponse, hot
from pymsmq.protocol.codes import ReceiveFlags
from pymsmq.protocol.message_codec import PROPID_M_MSGID

if TYPE_CHECKING:
    from pymsmq.client.remote_queue import RemoteQueue
    from pymsmq.client.transport import Transport

__all__ = ["NotificationPump", "RemoteNotification", "armed_limit", "enable_notification"]

log = logging.getLogger("pymsmq.client")

ArrivedCallback = Callable[["RemoteQueue", int], object]
ErrorCallback = Callable[["RemoteQueue", int, int], object]

#: MQ_PEEK_ACCESS | MQ_RECEIVE_ACCESS: any read access may arm a notification (errata E6).
_READ_ACCESS: Final = 0x21
_NO_PACKET: Final = int(ReceiveFlags.NO_PACKET)
_ADVANCE: Final = int(ReceiveFlags.ADVANCE)
#: The one property the peek's answer carries (the notification tells nothing of the message).
_PROPIDS: Final = (PROPID_M_MSGID,)
_ILLEGAL_CURSOR_ACTION: Final = HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION


class RemoteNotification:
    """One armed notification (returned by ``RemoteQueue.enable_notification``); ``cancel()``
    disarms it.  The attributes of ``pymsmq.Notification``: ``mode`` (the cursor argument),
    ``on_arrived``, ``on_error``, ``done`` (True once it fired or was cancelled)."""

    __slots__ = ("_lock", "_queue", "_rid", "done", "mode", "on_arrived", "on_error")

    def __init__(
        self, queue: RemoteQueue, mode: int, on_arrived: ArrivedCallback, on_error: ErrorCallback | None
    ) -> None:
        self._queue = queue
        self.mode = mode
        self.on_arrived = on_arrived
        self.on_error = on_error
        self.done = False
        self._rid: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"<RemoteNotification cursor={self.mode} {'done' if self.done else 'armed'} on {self._queue!r}>"
        )

    def cancel(self) -> bool:
        """Disarm; True if it had not fired yet (no callback will be called)."""
        if not self._finish():
            return False
        q = self._queue
        if self._rid is not None and not q._closed:
            with contextlib.suppress(MSMQError):  # the connection may be gone: nothing waits then
                q._give_back(True).interrupted(self._rid)
        return True

    def _finish(self) -> bool:
        with self._lock:
            if self.done:
                return False
            self.done = True
        queue = self._queue
        queue._armed.discard(self)
        queue._qm._pump.release()
        return True


def enable_notification(
    queue: RemoteQueue,
    on_arrived: ArrivedCallback,
    cursor: int = MQMSG_FIRST,
    timeout: float | None = None,
    on_error: ErrorCallback | None = None,
) -> RemoteNotification:
    """Arm one notification on ``queue`` (see the module docstring); the checks and their order
    are the embedded ``enable_notification``'s."""
    cursor = checked_arguments(cursor, on_arrived, on_error)
    ms = timeout_ms(timeout)
    queue._check()
    if not queue._access & _READ_ACCESS:
        raise MSMQError("the queue is not open for reading", HResult.MQ_ERROR_ACCESS_DENIED)
    if cursor == MQMSG_FIRST:
        cursor_id, action = 0, Action.MQ_ACTION_PEEK_CURRENT
    else:  # the handle's own cursor: it lands on the message, as the embedded one does
        cursor_id = queue._default_cursor()._cursor_id()
        action = Action.MQ_ACTION_PEEK_NEXT if cursor == MQMSG_NEXT else Action.MQ_ACTION_PEEK_CURRENT
    qm = queue._qm
    qm._pump.reserve(queue._t.server_hello.max_in_flight)
    n = RemoteNotification(queue, cursor, on_arrived, on_error)
    # MQMSG_NEXT: the server advances the cursor at once (ADVANCE), as the embedded queue does.
    flags = _NO_PACKET | _ADVANCE if cursor == MQMSG_NEXT else _NO_PACKET
    request = hot.receive_request(queue._handle, int(action), ms, cursor_id, 0, None, _PROPIDS, flags)
    queue._armed.add(n)  # (before the answer can come: it discards it)
    no_wait = ms == 0
    try:
        # The notification thread knows the request before it is written: noted after, an answer
        # that came in between was left unread by it (an outside QA's lost wake-up).
        [n._rid] = queue._t.send_many([request], lambda rid: qm._pump.watch(n, rid, no_wait))
    except BaseException:
        n._finish()
        raise
    return n


def armed_limit(max_in_flight: int) -> int:
    """How many notifications one connection may have armed at once: half of the requests the
    server lets it have in flight (the other half stays for its other calls)."""
    return max(1, max_in_flight // 2)


class NotificationPump:
    """The thread of one connection that waits for its armed notifications' answers and calls
    their callbacks (one thread, not one per notification: a process watching many queues had as
    many threads).  It runs while notifications are armed and ends when none is left."""

    __slots__ = ("_armed", "_lock", "_pending", "_running", "_transport")

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._lock = threading.Lock()
        #: Request id -> the notification it arms, and whether it was armed with no wait (timeout 0).
        self._pending: dict[int, tuple[RemoteNotification, bool]] = {}
        self._running = False
        #: Notifications armed and not ended (``reserve``, ``release``).
        self._armed = 0

    def reserve(self, window: int) -> None:
        """Count one more armed notification, or refuse it (MQ_ERROR_INSUFFICIENT_RESOURCES) past
        ``armed_limit(window)``, ``window`` the requests the server lets the connection have in
        flight."""
        with self._lock:
            if self._armed >= armed_limit(window):
                # Each armed notification is a request in flight: past the window, the next one,
                # and every other request of the connection, waited for one to fire.
                raise MSMQError(
                    f"{self._armed} notifications are armed on this connection, the most it takes"
                    f" (half its {window} requests in flight): arm more on another connection",
                    HResult.MQ_ERROR_INSUFFICIENT_RESOURCES,
                )
            self._armed += 1

    def release(self) -> None:
        """A notification counted by ``reserve`` fired or was cancelled."""
        with self._lock:
            self._armed -= 1

    def watch(self, n: RemoteNotification, rid: int, no_wait: bool) -> None:
        """Wait for the answer to ``rid``, the peek that arms ``n`` (about to be written)."""
        with self._lock:
            self._pending[rid] = (n, no_wait)
            if self._running:
                return
            self._running = True
        threading.Thread(target=self._run, name="pymsmq-notifications", daemon=True).start()

    def _run(self) -> None:
        not_for_sigint()  # as pymsmq's other threads: a Ctrl-C goes to the application's thread
        t = self._transport
        while True:
            with self._lock:
                if not self._pending:
                    self._running = False
                    return
                rids = set(self._pending)
            try:
                answers = t.wait_any(rids)
            except MSMQError as exc:  # the connection is gone: every notification ends with it
                with self._lock:
                    ended = list(self._pending.values())
                    self._pending.clear()
                for n, no_wait in ended:
                    _deliver(n, exc.hresult, no_wait)
                continue
            except BaseException:  # nothing else is expected; the thread must not die silently
                log.exception("the notification thread failed")
                with self._lock:
                    self._running = False
                raise
            for rid, response in answers:
                with self._lock:
                    n, no_wait = self._pending.pop(rid)
                _deliver(n, response.hresult if type(response) is ErrorResponse else 0, no_wait)


def _deliver(n: RemoteNotification, hresult: int, no_wait: bool) -> None:
    # The notification's answer came (``hresult`` 0: a message is there): its one callback.
    q = n._queue
    if not n._finish() or q._closed:  # cancelled, or the handle closed: silently
        return
    if hresult == _ILLEGAL_CURSOR_ACTION and n.mode == MQMSG_NEXT and no_wait:
        hresult = HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # [MC-MQAC] <91>, as the embedded queue
    try:
        if hresult == 0:
            n.on_arrived(q, n.mode)
        elif n.on_error is not None:
            n.on_error(q, named(hresult), n.mode)
    except BaseException:  # a user callback must not pass unnoticed, nor stop anything else
        # (SystemExit from ``sys.exit()`` too: it ended the thread, and every later notification
        # of the connection went undelivered.)
        log.exception("a notification callback raised")
