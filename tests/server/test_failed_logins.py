"""``FailedLogins``: bad tokens per client address within a sliding window (pure; ``now`` given)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.server import failed_logins
from pymsmq.server.failed_logins import FailedLogins, is_loopback


def test_an_address_is_refused_from_the_limit_until_its_oldest_failure_leaves_the_window() -> None:
    f = FailedLogins(limit=3, window=60)
    for t in (0.0, 10.0, 20.0):
        assert f.refused_for("10.0.0.1", t) == 0
        f.failed("10.0.0.1", t)
    assert f.refused_for("10.0.0.1", 20.0) == pytest.approx(40.0)
    assert f.refused_for("10.0.0.2", 20.0) == 0  # another address is not concerned
    assert f.refused_for("10.0.0.1", 59.9) == pytest.approx(0.1)
    assert f.refused_for("10.0.0.1", 60.0) == 0  # the failure at 0 is a minute old
    f.failed("10.0.0.1", 61.0)  # three within the minute again (10, 20, 61)
    assert f.refused_for("10.0.0.1", 61.0) == pytest.approx(9.0)
    assert f.refused_for("10.0.0.1", 200.0) == 0 and len(f) == 0  # all old: forgotten


def test_no_limit_remembers_nothing() -> None:
    f = FailedLogins(limit=0)
    for t in range(100):
        f.failed("10.0.0.1", float(t))
    assert f.refused_for("10.0.0.1", 100.0) == 0 and len(f) == 0


def test_bad_settings_are_refused() -> None:
    for limit, window in ((-1, 60.0), (3, 0.0)):
        with pytest.raises(ValueError):
            FailedLogins(limit, window)


def test_the_table_of_addresses_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failed_logins, "MAX_ADDRESSES", 5)
    f = FailedLogins(limit=1, window=60)
    for i in range(8):
        f.failed(f"10.0.0.{i}", 1.0)
    assert len(f) == 5
    assert f.refused_for("10.0.0.0", 1.0) == 0  # the least recently failing went first
    assert f.refused_for("10.0.0.7", 1.0) > 0


@given(
    st.lists(st.tuples(st.sampled_from(["a", "b"]), st.floats(0, 5), st.booleans()), max_size=60),
    st.integers(0, 4),
)
def test_refusal_matches_a_model_of_the_failures_in_the_window(
    steps: list[tuple[str, float, bool]], limit: int
) -> None:
    window = 10.0
    f = FailedLogins(limit, window)
    now = 0.0
    model: dict[str, list[float]] = {"a": [], "b": []}
    for address, advance, fail in steps:
        now += advance
        recent = [t for t in model[address] if t > now - window]
        expected = 0.0 if not limit or len(recent) < limit else recent[-limit] + window - now
        assert f.refused_for(address, now) == pytest.approx(expected)
        if fail:
            f.failed(address, now)
            model[address].append(now)


def test_loopback_has_ten_times_the_limit() -> None:
    f = FailedLogins(limit=2, window=60.0)
    for address in ("127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"):
        for i in range(19):
            f.failed(address, 1.0 + i * 0.01)
        assert f.refused_for(address, 2.0) == 0
        f.failed(address, 1.5)
        assert f.refused_for(address, 2.0) > 0
    f.failed("::ffff:10.0.0.1", 1.0)
    f.failed("::ffff:10.0.0.1", 1.0)
    assert f.refused_for("::ffff:10.0.0.1", 2.0) > 0
    assert not is_loopback("not an address") and is_loopback("::1")
