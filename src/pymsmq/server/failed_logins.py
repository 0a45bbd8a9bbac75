"""Refusing the addresses that keep presenting bad tokens (a guard against guessing tokens).

A server bound beyond loopback requires a token; without a limit a client could try tokens as fast
as the server answers handshakes (thousands a second).  ``FailedLogins`` remembers, per client
address, the times of its recent failed handshakes: an address with ``limit`` of them within
``window`` seconds is refused, whatever token it presents (so a right guess then is not
confirmed), until the oldest of them leaves the window.  A good handshake does not erase the
failures (an attacker with one valid low-privilege token could otherwise reset the count).

Loopback addresses have ``LOOPBACK_FACTOR`` times the limit: every client on the server's own
host comes from 127.0.0.1, so one forgotten client with a stale token (after a rotation), retrying
every few seconds, locked out the owner, the liveness probe (`pymsmq ping`) and every local
application with it (outside QA); behind a local TLS proxy every client comes from there, so they
are not exempt either (a second outside QA: guessing through the proxy was unlimited).

Pure bookkeeping: the caller passes ``now`` (monotonic seconds); no clock, lock or I/O here (the
server calls it on its event loop).
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict, deque

__all__ = ["FailedLogins", "is_loopback"]

#: Addresses remembered at most (the least recently failing are forgotten first): a flood of
#: failures from many addresses cannot grow the table without bound.
MAX_ADDRESSES = 10_000
#: How many times the limit a loopback address has (see the module docstring).
LOOPBACK_FACTOR = 10


def is_loopback(address: str) -> bool:
    """Whether ``address`` (a client's IP address as text) is this host's loopback."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


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
        if times is None or len(times) < self._limit_of(address):
            return 0.0
        return times[0] + self.window - now

    def _limit_of(self, address: str) -> int:
        return self.limit * LOOPBACK_FACTOR if is_loopback(address) else self.limit

    def failed(self, address: str, now: float) -> None:
        """``address`` presented a bad token at ``now``."""
        if not self.limit:
            return
        times = self._recent(address, now)
        if times is None:
            times = self._failures[address] = deque(maxlen=self._limit_of(address))
            while len(self._failures) > MAX_ADDRESSES:
                self._failures.popitem(last=False)
        else:
            self._failures.move_to_end(address)
        times.append(now)

    def __len__(self) -> int:
        """Addresses remembered."""
        return len(self._failures)
