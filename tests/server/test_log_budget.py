"""``LogBudget``: at most so many log lines of one kind a window; the rest counted and told (pure but
for the logger)."""

from __future__ import annotations

import logging

import pytest

from pymsmq.server.log_budget import LogBudget


def test_lines_past_the_budget_are_left_out_and_counted_when_the_window_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    budget = LogBudget(per_window=3, window=10.0)
    assert [budget.allow("a", 0.5 * i) for i in range(5)] == [True, True, True, False, False]
    assert budget.allow("b", 1.0)  # another kind has its own budget
    assert budget.allow("a", 10.0)  # a new window
    logger = logging.getLogger("test.log_budget")
    with caplog.at_level(logging.INFO, logger="test.log_budget"):
        for i in range(7):
            budget.log(logger, logging.WARNING, "flood", "line %d", i)
        budget.flush(0.0)  # (monotonic 0: no window ended)
        assert [r.getMessage() for r in caplog.records] == ["line 0", "line 1", "line 2"]
        budget.flush(1e12)
        told = caplog.records[-1]
        assert told.levelno == logging.WARNING
        assert (
            told.getMessage() == "4 more lines of 'flood' left out in 10 s (at most 3 a window are written)"
        )
        budget.flush(2e12)
        assert len(caplog.records) == 4  # told once
