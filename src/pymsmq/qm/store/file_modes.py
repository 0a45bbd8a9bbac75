"""The modes of what a store writes: its owner's alone.

A store holds every identity's message bodies, which a server's per-queue permissions protect on
the wire; under the usual umask (022) its files were 644 and its directories 755, readable by every
local user (outside QA).  Directories are made 700 and files 600; SQLite gives its -wal and -shm
files the mode of their database, which is created 600 before SQLite opens it.  A store made
before keeps its modes (``pymsmq serve`` warns when others may read it).
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "make_private_dir", "touch_private"]

PRIVATE_FILE: Final = 0o600
PRIVATE_DIR: Final = 0o700


def make_private_dir(path: str) -> None:
    """``os.makedirs(path, exist_ok=True)``, the last directory (when made) 700."""
    os.makedirs(path, mode=PRIVATE_DIR, exist_ok=True)


def touch_private(path: str) -> None:
    """Create the file ``path`` empty with mode 600 if it does not exist (left as it is if it does)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return
    os.close(fd)
