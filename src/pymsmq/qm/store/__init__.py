"""Storage backends of the queue manager behind one narrow interface (see ``base``).

``open_store(url_or_path)`` picks a backend: ``"memory:"`` (or ``"memory://"``) gives a
``MemoryStore``; ``"sqlite:///abs/path.db"``, ``"sqlite:relative.db"`` or a plain path gives a
``SQLiteStore``; a path that is an existing directory gives a ``SQLiteStore`` on
``<dir>/pymsmq.db``.
"""

from __future__ import annotations

import os

from pymsmq.qm.store.base import Batch, MessageKey, MessageUpdate, QueueRow, Snapshot, Store, StoredMessage
from pymsmq.qm.store.memory import MemoryStore
from pymsmq.qm.store.sqlite import BIG_PACKET, SQLiteStore

__all__ = [
    "BIG_PACKET",
    "DEFAULT_DB_NAME",
    "Batch",
    "MemoryStore",
    "MessageKey",
    "MessageUpdate",
    "QueueRow",
    "SQLiteStore",
    "Snapshot",
    "Store",
    "StoredMessage",
    "open_store",
]

#: File name of the database when ``open_store`` is given a directory.
DEFAULT_DB_NAME = "pymsmq.db"


def open_store(url_or_path: str | os.PathLike[str]) -> MemoryStore | SQLiteStore:
    """Open the store a URL or path names (see the module docstring)."""
    target = os.fspath(url_or_path)
    if target in ("memory:", "memory://", ":memory:"):
        return MemoryStore()
    if target.startswith("sqlite://"):
        target = target[len("sqlite://") :]
    elif target.startswith("sqlite:"):
        target = target[len("sqlite:") :]
    if os.path.isdir(target):
        target = os.path.join(target, DEFAULT_DB_NAME)
    return SQLiteStore(target)
