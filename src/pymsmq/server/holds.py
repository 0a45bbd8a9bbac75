"""``Holds``: the messages one connection's two-phase receives hold, until END_RECEIVE or it closes.

A RECEIVE with ``ReceiveFlags.CONFIRM`` outside a transaction leaves a recoverable message locked in
its queue (``qm.hold.Hold``) and says so in its answer (``PROPID_PYMSMQ_HELD``); the client then
sends END_RECEIVE with RR_ACK (remove it) or RR_NACK (put it back), [MS-MQRR] 3.1.4.9.  A
RECEIVE_MANY with ``ManyFlags.CONFIRM`` (or a READ_RANGE receive with ``RangeFlags.CONFIRM``) holds
its answer's recoverable messages in one ``Hold``, kept under the lookup id of the answer's first
message (``ManyMore.HELD`` in its answer).  A connection that closes first gives back every message
it holds, and a CLOSE_QUEUE those of its handle, so a message is never lost in transit.

Receives answer from pool threads and connections close on the event loop: the registry has a lock
of its own, and a hold that arrives after the close is released at once instead of kept.
"""

from __future__ import annotations

import logging
import threading

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.hold import Hold

__all__ = ["Holds", "release_all"]

log = logging.getLogger("pymsmq.server")


class Holds:
    """Holds by (queue handle number, lookup id END_RECEIVE names)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[int, int], Hold] = {}
        self._closed = False
        # The connection's open queue handles (``opened``/``close_handle``): a hold for another
        # one is released at once.  Not a set of the closed ones: that grew by one entry for
        # every handle a long-lived connection ever closed.
        self._open_handles: set[int] = set()

    def __len__(self) -> int:
        return len(self._held)

    def messages(self) -> int:
        """How many messages the holds hold (a batch's hold holds several)."""
        with self._lock:
            return sum(len(hold) for hold in self._held.values())

    def add(self, handle: int, lookup_id: int, hold: Hold) -> bool:
        """Keep ``hold`` for END_RECEIVE; False (and the message released) when the connection is gone."""
        with self._lock:
            if not self._closed and handle in self._open_handles:
                self._held[(handle, lookup_id)] = hold
                return True
        hold.release()
        return False

    def keep(self, handle: int, lookup_id: int, hold: Hold) -> None:
        """``add`` for an answer still to be written: MQ_ERROR_OPERATION_CANCELLED when the
        connection or the handle is gone (the messages are then released already)."""
        if not self.add(handle, lookup_id, hold):
            raise MSMQError("the connection closed", HResult.MQ_ERROR_OPERATION_CANCELLED)

    def pop(self, handle: int, lookup_id: int) -> Hold | None:
        """The hold END_RECEIVE names, no longer kept; None if there is none."""
        with self._lock:
            return self._held.pop((handle, lookup_id), None)

    def close_handle(self, handle: int) -> list[Hold]:
        """CLOSE_QUEUE of ``handle``: its holds, to release; later ones are released as they come
        ([MS-MQRR] 3.1.4.9: END_RECEIVE needs a handle not closed)."""
        with self._lock:
            self._open_handles.discard(handle)
            keys = [key for key in self._held if key[0] == handle]
            return [self._held.pop(key) for key in keys]

    def opened(self, handle: int) -> None:
        """OPEN_QUEUE gave ``handle``: holds for it are kept until END_RECEIVE or its close."""
        with self._lock:
            self._open_handles.add(handle)

    def close(self) -> list[Hold]:
        """The connection is gone: every hold, to release; later ones are released as they come."""
        with self._lock:
            self._closed = True
            held = list(self._held.values())
            self._held.clear()
        return held


def release_all(held: list[Hold]) -> None:
    """Give every message of ``held`` back to its queue (on the work pool: it may write)."""
    for hold in held:
        try:
            hold.release()
        except MSMQError as exc:
            log.warning("release of a held message failed: %s", exc)
