"""``SpaceReserve``: disk space the store holds back so that a full disk can still be drained.

A SQLite store on a full disk cannot delete either: a delete is written to the WAL first, and the
WAL (or the checkpoint that would let SQLite reuse it) needs new blocks.  Receives would then fail
with the sends, and the only way out would be to free space by hand.  The store therefore keeps a
file ``<db>.reserve`` of allocated blocks (``posix_fallocate``, so the blocks are really taken,
not a sparse hole).  When a commit fails because the disk is full, the store releases the file
and commits again without the sends; from then on sends are refused and receives go on, until the
disk has room for the reserve again (sqlite.py, "A full disk").
"""

from __future__ import annotations

import errno
import os
from typing import Final

__all__ = ["DEFAULT_DISK_RESERVE", "DISK_RESERVE_ENV", "NO_SPACE", "SpaceReserve", "disk_reserve_from_env"]

#: The errnos of a write that found no room (the disk, a quota, a file size limit).
NO_SPACE: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})

#: Bytes held back by default: room for the WAL to grow by a checkpoint's worth of pages (1000
#: pages of 4 KiB, SQLite's automatic checkpoint) and for the checkpoint to extend the database
#: file by as much, several times over.
DEFAULT_DISK_RESERVE: Final = 32 * 1024 * 1024
#: Environment variable that sets the reserve in bytes when the caller gives none (0: no reserve).
DISK_RESERVE_ENV: Final = "PYMSMQ_DISK_RESERVE"


def disk_reserve_from_env() -> int:
    """The reserve in bytes: ``$PYMSMQ_DISK_RESERVE`` when set, else ``DEFAULT_DISK_RESERVE``."""
    raw = os.environ.get(DISK_RESERVE_ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_DISK_RESERVE
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{DISK_RESERVE_ENV} must be a number of bytes, not {raw!r}") from None
    if value < 0:
        raise ValueError(f"{DISK_RESERVE_ENV} must not be negative, not {value}")
    return value


class SpaceReserve:
    """The file ``path`` of ``size`` allocated bytes, taken with ``acquire`` and given back with ``release``.

    Not thread-safe: the store calls it under a lock of its own.
    """

    def __init__(self, path: str, size: int) -> None:
        if size < 0:
            raise ValueError(f"the disk reserve must not be negative, not {size}")
        self.path = path
        self.size = size
        #: True while the file holds ``size`` allocated bytes.
        self.held = False

    def acquire(self) -> bool:
        """Allocate the reserve; False (and no partial file left taking space) when the disk is full."""
        if self.held:
            return True
        if self.size == 0:
            return False
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                os.posix_fallocate(fd, 0, self.size)
            except OSError as e:
                if e.errno not in NO_SPACE:
                    raise
                os.ftruncate(fd, 0)  # what a failed allocation took goes back to the disk
                return False
            os.fsync(fd)  # the allocation survives a crash: the reserve is there at the next start
        finally:
            os.close(fd)
        self.held = True
        return True

    def release(self) -> bool:
        """Give the reserved bytes back to the disk; True when there were some."""
        had = self.held
        self.held = False
        try:
            os.truncate(self.path, 0)
        except FileNotFoundError:
            pass
        return had

    def room_to_acquire(self) -> bool:
        """True when the disk has room for the reserve and as much again (so sends have room too)."""
        st = os.statvfs(os.path.dirname(os.path.abspath(self.path)))
        return st.f_bavail * st.f_frsize >= 2 * self.size
