"""Files the server reads at start and again when they change (the ``--auth`` policy, the TLS
certificate and key): a change is seen by each file's modification time, size, inode and mode, so
an editor or a certificate tool that writes a new file and renames it over the old one counts, and
so does a chmod (the policy file's "readable by others" warning)."""

from __future__ import annotations

import logging
import os

__all__ = ["WatchedFiles"]

log = logging.getLogger("pymsmq.server")


class WatchedFiles:
    """``changed()`` is True once for each change of ``paths`` since they were last read (``mark``)."""

    def __init__(self, *paths: str) -> None:
        self.paths = paths
        self._seen: tuple[int, ...] | None = None
        self._unreadable = False

    def _signature(self) -> tuple[int, ...]:
        signature: list[int] = []
        for path in self.paths:
            st = os.stat(path)
            signature += (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
        return tuple(signature)

    def mark(self) -> None:
        """The files as they are now are what was read (``OSError`` if one cannot be looked at)."""
        self._seen = self._signature()

    def changed(self) -> bool:
        """Whether the files changed since ``mark`` or the last True; a file that cannot be looked
        at is logged (once until it can be again) and counts as unchanged: what was read stays."""
        try:
            now = self._signature()
        except OSError as exc:
            if not self._unreadable:
                log.error(
                    "cannot read %s (%s): what was read from it stays in force", exc.filename, exc.strerror
                )
                self._unreadable = True
            return False
        self._unreadable = False
        if now == self._seen:
            return False
        self._seen = now
        return True
