"""``RemoteCursor``: a server-side cursor on a ``RemoteQueue``, the methods of ``pymsmq.Cursor``.

Split out of ``pymsmq.client.remote`` (which re-exports it).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.message import Message
from pymsmq.protocol import Action
from pymsmq.protocol import messages as pm

if TYPE_CHECKING:
    from pymsmq.client.remote_queue import RemoteQueue
    from pymsmq.client.remote_transaction import RemoteTransaction

__all__ = ["RemoteCursor"]

_A = Action


class RemoteCursor:
    """A server-side cursor ([MS-MQDMPR] 3.2) on a ``RemoteQueue``: the methods of ``pymsmq.Cursor``."""

    def __init__(self, queue: RemoteQueue) -> None:
        self._queue = queue
        self._id = 0
        self._closed = False
        # The server cursor is made at the first read: two threads reading at once made two (the
        # one whose number was kept second read at a cursor nobody could close or reset).
        self._making = threading.Lock()

    def close(self) -> None:
        """Close the cursor (MQCloseCursor; idempotent): a read waiting at it ends with
        MQ_ERROR_OPERATION_CANCELLED, later calls raise MQ_ERROR_INVALID_HANDLE."""
        with self._making:  # a first read making the server cursor: closed once it is made
            if self._closed:
                return
            self._closed = True
            number, self._id = self._id, 0
        if number and not self._queue._closed:
            self._queue._t.call(pm.CloseCursorRequest(number))

    def __enter__(self) -> RemoteCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A cursor dropped is closed on the server, as a dropped queue handle is (RemoteQueue's
        # __del__): 50,000 dropped cursors stayed on the server until their handle closed.  The
        # CLOSE_CURSOR goes out with the connection's next request (no I/O here).
        number = getattr(self, "_id", 0)
        if number and not self._queue._closed:
            self._queue._t.dropped_requests.append(pm.CloseCursorRequest(number))

    def _check_open(self) -> None:
        if self._closed:
            raise MSMQError("the cursor is closed", HResult.MQ_ERROR_INVALID_HANDLE)

    def _cursor_id(self) -> int:
        # The number read once: a ``close`` or ``reset`` in another thread zeroes ``_id``, and a
        # read sent with 0 would read the head, not at a cursor (the server answers a read at a
        # number closed meanwhile MQ_ERROR_INVALID_HANDLE, or cancels it if it was parked there).
        self._check_open()
        number = self._id
        if number:
            return number
        with self._making:
            self._check_open()  # (closed while this thread waited for the lock)
            if not self._id:
                q = self._queue
                q._check()
                self._id = q._t.call(pm.CreateCursorRequest(q._handle)).cursor
            return self._id

    def reset(self) -> None:
        """Back to Start, state Unread (a fresh server cursor)."""
        with self._making:
            self._check_open()
            old, self._id = self._id, 0
        if old:
            try:
                self._queue._t.call(pm.CloseCursorRequest(old))
            except MSMQError:
                pass

    def peek_current(self, timeout: float | None = None) -> Message:
        """Peek the message at the cursor (the first one when Unread)."""
        return self._queue._read(_A.MQ_ACTION_PEEK_CURRENT, timeout, None, self._cursor_id()).take()

    def peek_next(self, timeout: float | None = None) -> Message:
        """Move to the next message and peek it."""
        return self._queue._read(_A.MQ_ACTION_PEEK_NEXT, timeout, None, self._cursor_id()).take()

    def receive_current(
        self, timeout: float | None = None, transaction: RemoteTransaction | int | None = None
    ) -> Message:
        """Receive the message at the cursor."""
        return self._queue._read(_A.MQ_ACTION_RECEIVE, timeout, transaction, self._cursor_id()).take()
