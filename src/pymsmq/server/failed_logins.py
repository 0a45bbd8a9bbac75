"""Refusing the addresses that keep presenting bad tokens (a guard against guessing tokens).

A server bound beyond loopback requires a token; without a limit a client could try tokens as fast
as the server answers handshakes (thousands a second).  ``FailedLogins`` remembers, per client
address, the times of its recent failed handshakes: an address with ``limit`` of them within
``window`` seconds is refused, whatever token it presents (so a right guess then is not
confirmed), until the oldest of them leaves the window.  A good handshake does not erase the
failures (an attacker with one valid low-privilege token could otherwise reset the count).

Pure bookkeeping: the caller passes ``now`` (monotonic seconds); no clock, lock or I/O here (the
server calls it on its event loop).
"""

from __future__ import annotations

from collections import OrderedDict, deque

__all__ = ["FailedLogins"]

#: Addresses remembered at most (the least recently failing are forgotten first): a flood of
#: failures from many addresses cannot grow the table without bound.
MAX_ADDRESSES = 10_000


class FailedLogins:
    """Failed handshakes per client address within a sliding window (``limit`` 0: no limit)."""

    __slots__ = ("_failures", "limit", "window")

    def __init__(self, limit: int, window: float = 60.0) -> None:
        if limit < 0 or window <= 0:
            raise ValueError("the limit must be >= 0 and the window > 0")
        self.limit = limit
        self.window = window
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, address: str, now: float) -> deque[float] | None:
        times = self._failures.get(address)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[address]
            return None
        return times

    def refused_for(self, address: str, now: float) -> float:
        """Seconds ``address`` stays refused (0: it may try)."""
        if not self.limit:
            return 0.0
        times = self._recent(address, now)
        if times is None or len(times) < self.limit:
            return 0.0
        return times[0] + self.window - now

    def failed(self, address: str, now: float) -> None:
        """``address`` presented a bad token at ``now``."""
        if not self.limit:
            return
        times = self._recent(address, now)
        if times is None:
            times = self._failures[address] = deque(maxlen=self.limit)
            while len(self._failures) > MAX_ADDRESSES:
                self._failures.popitem(last=False)
        else:
            self._failures.move_to_end(address)
        times.append(now)

    def __len__(self) -> int:
        """Addresses remembered."""
        return len(self._failures)
