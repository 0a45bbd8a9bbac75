"""``StoreLock``: one queue manager per store, across processes and within one.

A queue manager keeps its queues' state in memory (indexes, locks, ordinals and lookup ids handed
out) and writes only committed changes to its store.  Two queue managers on one store would each
miss what the other sends, hand out the same lookup ids, and deliver messages the other already
received.  So a store is opened by one queue manager at a time: ``SQLiteStore`` holds an exclusive
``flock`` on ``<db>.lock`` from open to close.  The lock goes with the process (a crashed or killed
owner leaves no stale lock behind) and belongs to the open file, so a second open in the same
process is refused too.  The file holds the owner's process id, for the error message.
"""

from __future__ import annotations

import os

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.store.file_modes import PRIVATE_FILE

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock (documented in docs/lifecycle.md)
    fcntl = None  # type: ignore[assignment]

__all__ = ["StoreLock"]


class StoreLock:
    """An exclusive lock on ``db_path + ".lock"``, taken now (MSMQError if another holds it)."""

    def __init__(self, db_path: str) -> None:
        self.path = db_path + ".lock"
        self._fd: int | None = None
        if fcntl is None:  # pragma: no cover
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
        except OSError as exc:
            raise MSMQError(
                f"cannot open store {db_path}: its lock file {self.path}: {exc.strerror or exc}",
                HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED,
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            by = f" (process {owner})" if owner.isdigit() else ""
            raise MSMQError(
                f"the store {db_path} is in use by another queue manager{by}: a store has one queue "
                "manager at a time; reach a running one through its server (pymsmq.connect, --url)",
                HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED,
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        """Let the store go (idempotent); the file stays for the next owner."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the file releases its flock
