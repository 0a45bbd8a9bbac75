"""Fixtures shared by the queue-manager tests."""

from __future__ import annotations

import pytest

from pymsmq.qm.timers import FakeClock

#: The fake clock's start (POSIX seconds, November 2023).
T0 = 1_700_000_000.0


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock at ``T0`` (a module may override it with another start)."""
    return FakeClock(T0)
