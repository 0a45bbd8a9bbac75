"""A budget for the log lines that peers can cause: at most so many of one kind a minute.

Garbage connections, refused handshakes and requests refused for want of rights each wrote a line:
a peer without a token wrote 3,800 WARNING lines a second, and any identity retrying a denied
request 5,000 INFO lines a second (outside QA), filling the disk or journald's rate limit, which
then dropped the lines that mattered.  ``LogBudget`` lets ``per_window`` lines of each kind through
in a window of ``window`` seconds; the others are counted, and when the window ends (``flush``,
called by the server's housekeeping once a second) one line says how many of each kind were left
out.  The lines of the operator's own actions (start, stop, policy and certificate changes) do not
go through it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Final

__all__ = ["LogBudget"]

#: Lines of one kind let through per window, and the window in seconds.
PER_WINDOW: Final = 20
WINDOW: Final = 60.0


@dataclass(slots=True)
class _Window:
    """One kind's current window."""

    started: float
    written: int = 0
    left_out: int = 0
    #: Where and at which level the lines left out would have gone (for the count's line).
    logger: logging.Logger | None = None
    level: int = logging.INFO


class LogBudget:
    """Lines per kind and window (see the module docstring); used on the event loop only."""

    __slots__ = ("_kinds", "per_window", "window")

    def __init__(self, per_window: int = PER_WINDOW, window: float = WINDOW) -> None:
        self.per_window = per_window
        self.window = window
        self._kinds: dict[str, _Window] = {}

    def allow(self, kind: str, now: float) -> bool:
        """Whether a line of ``kind`` may be written at ``now`` (monotonic seconds); counted."""
        w = self._kinds.get(kind)
        if w is None or now - w.started >= self.window:
            if w is not None:
                self._tell(kind, w)
            w = self._kinds[kind] = _Window(now)
        if w.written < self.per_window:
            w.written += 1
            return True
        w.left_out += 1
        return False

    def log(self, logger: logging.Logger, level: int, kind: str, message: str, *args: object) -> None:
        """``logger.log(level, message, *args)`` within the budget of ``kind``."""
        if self.allow(kind, time.monotonic()):
            logger.log(level, message, *args)
        else:
            w = self._kinds[kind]
            w.logger, w.level = logger, level

    def flush(self, now: float) -> None:
        """Say how many lines of each kind were left out in the windows that ended by ``now``."""
        for kind, w in list(self._kinds.items()):
            if now - w.started >= self.window:
                self._tell(kind, w)
                del self._kinds[kind]

    def _tell(self, kind: str, w: _Window) -> None:
        if w.left_out and w.logger is not None:
            w.logger.log(
                w.level,
                "%d more lines of '%s' left out in %.0f s (at most %d a window are written)",
                w.left_out,
                kind,
                self.window,
                self.per_window,
            )
