"""``Holds``: the messages one connection's two-phase receives hold, until END_RECEIVE or it closes.

A RECEIVE with ``ReceiveFlags.CONFIRM`` outside a transaction leaves a recoverable message locked in
its queue (``qm.hold.Hold``) and says so in its answer (``PROPID_PYMSMQ_HELD``); the client then
sends END_RECEIVE with RR_ACK (remove it) or RR_NACK (put it back), [MS-MQRR] 3.1.4.9.  A
RECEIVE_MANY with ``ManyFlags.CONFIRM`` holds its answer's recoverable messages in one ``Hold``,
kept under the lookup id of the answer's first message (``ManyMore.HELD`` in its answer).  A connection
that closes first gives back every message it holds, so a message is never lost in transit.

Receives answer from pool threads and connections close on the event loop: the registry has a lock
of its own, and a hold that arrives after the close is released at once instead of kept.
"""

from __future__ import annotations

import threading

from pymsmq.qm.hold import Hold

__all__ = ["Holds"]


class Holds:
    """Holds by (queue handle number, lookup id END_RECEIVE names)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[int, int], Hold] = {}
        self._closed = False

    def __len__(self) -> int:
        return len(self._held)

    def messages(self) -> int:
        """How many messages the holds hold (a batch's hold holds several)."""
        with self._lock:
            return sum(len(hold) for hold in self._held.values())

    def add(self, handle: int, lookup_id: int, hold: Hold) -> bool:
        """Keep ``hold`` for END_RECEIVE; False (and the message released) when the connection is gone."""
        with self._lock:
            if not self._closed:
                self._held[(handle, lookup_id)] = hold
                return True
        hold.release()
        return False

    def pop(self, handle: int, lookup_id: int) -> Hold | None:
        """The hold END_RECEIVE names, no longer kept; None if there is none."""
        with self._lock:
            return self._held.pop((handle, lookup_id), None)

    def close(self) -> list[Hold]:
        """The connection is gone: every hold, to release; later ones are released as they come."""
        with self._lock:
            self._closed = True
            held = list(self._held.values())
            self._held.clear()
        return held
