"""Storage backends of the queue manager behind one narrow interface (see ``base``)."""

from __future__ import annotations

from pymsmq.qm.store.base import Batch, MessageKey, MessageUpdate, QueueRow, Snapshot, Store, StoredMessage

__all__ = ["Batch", "MessageKey", "MessageUpdate", "QueueRow", "Snapshot", "Store", "StoredMessage"]
