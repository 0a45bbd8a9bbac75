"""Server statistics: per-queue message and byte counts, connection and request totals, rates.

Counters are plain integers touched on the event loop only.  ``sample()`` (called once a second
by the server's housekeeping task) keeps a short history so that ``snapshot()`` can report rates
over the last few seconds as well as totals since start.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["QueueCounters", "ServerStats"]

_WINDOW: Final = 10  # seconds of history for rates


@dataclass(slots=True)
class QueueCounters:
    """What one queue saw through this server."""

    sent: int = 0
    received: int = 0
    peeked: int = 0
    #: Moves between the queue and its subqueues (MOVE requests that succeeded).
    moved: int = 0
    bytes_in: int = 0
    bytes_out: int = 0


@dataclass(slots=True)
class ServerStats:
    """All counters of one server process."""

    started: float = field(default_factory=time.time)
    connections_total: int = 0
    connections_open: int = 0
    connections_refused: int = 0
    protocol_errors: int = 0
    requests: int = 0
    errors: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    queues: dict[str, QueueCounters] = field(default_factory=dict)
    #: Messages sent to and received from queues whose counters were dropped (``forget``): the
    #: rates stay right when a deleted queue's counters go.
    forgotten_sent: int = 0
    forgotten_received: int = 0
    _history: deque[tuple[float, int, int, int]] = field(default_factory=lambda: deque(maxlen=_WINDOW + 1))

    def queue(self, name: str) -> QueueCounters:
        """The counters of queue ``name`` (created on first use)."""
        c = self.queues.get(name)
        if c is None:
            c = self.queues[name] = QueueCounters()
        return c

    def forget(self, name: str) -> None:
        """Drop the counters of queue ``name`` (deleted): the statistics of a server whose queues
        come and go stay the size of its live queues (17,500 deleted queues made the STATS answer
        larger than a frame)."""
        c = self.queues.pop(name, None)
        if c is not None:
            self.forgotten_sent += c.sent
            self.forgotten_received += c.received

    def sample(self, now: float | None = None) -> None:
        """Record the totals now (for rates)."""
        sent = self.forgotten_sent + sum(c.sent for c in self.queues.values())
        received = self.forgotten_received + sum(c.received for c in self.queues.values())
        self._history.append((time.monotonic() if now is None else now, self.requests, sent, received))

    def rates(self) -> dict[str, float]:
        """Requests, sends and receives per second over the recorded window."""
        if len(self._history) < 2:
            return {"requests_per_s": 0.0, "sent_per_s": 0.0, "received_per_s": 0.0}
        t0, r0, s0, v0 = self._history[0]
        t1, r1, s1, v1 = self._history[-1]
        dt = max(t1 - t0, 1e-9)
        return {
            "requests_per_s": (r1 - r0) / dt,
            "sent_per_s": (s1 - s0) / dt,
            "received_per_s": (v1 - v0) / dt,
        }

    def snapshot(self, queue_sizes: dict[str, tuple[int, int]] | None = None) -> dict[str, Any]:
        """A JSON-ready view: totals, rates, and per queue the counters and current size."""
        queues: dict[str, Any] = {}
        for name, c in sorted(self.queues.items()):
            queues[name] = {
                "sent": c.sent,
                "received": c.received,
                "peeked": c.peeked,
                "moved": c.moved,
                "bytes_in": c.bytes_in,
                "bytes_out": c.bytes_out,
            }
        for name, (count, size) in (queue_sizes or {}).items():
            entry = queues.setdefault(
                name, {"sent": 0, "received": 0, "peeked": 0, "moved": 0, "bytes_in": 0, "bytes_out": 0}
            )
            entry["messages"] = count
            entry["bytes"] = size
        return {
            "uptime_s": round(time.time() - self.started, 3),
            "connections": {
                "open": self.connections_open,
                "total": self.connections_total,
                "refused": self.connections_refused,
                "protocol_errors": self.protocol_errors,
            },
            "requests": self.requests,
            "errors": self.errors,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "rates": {k: round(v, 1) for k, v in self.rates().items()},
            "queues": queues,
        }
