"""``MemoryStore``: the store contract of ``base`` kept in process memory (nothing survives the process).

For tests and for queue managers that hold only express messages.  It follows the same rules as
``SQLiteStore`` so that one contract suite runs against both:

- ``apply`` is atomic: the whole batch is checked before anything changes, so a batch that fails
  (a duplicate ``(queue_id, lookup_id)``, an integer out of the 64-bit range, queue properties that are
  not JSON) changes nothing and raises ``MSMQError(MQ_ERROR_MESSAGE_STORAGE_FAILED)``.
- Lookup ids are unsigned 64-bit; queue ids, priorities and counts signed 64-bit (SQLite's INTEGER).
- Queue properties are stored as JSON and handed back as fresh copies.
- ``last_lookup_ids`` only grow; deleting a queue deletes its entry (queue ids are never reused).
- Updates and deletes of absent messages are no-ops.

Thread-safe: one lock serialises every method.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.store.base import Batch, MessageKey, QueueRow, Snapshot, StoredMessage
from pymsmq.qm.store.in_flight import InFlightLog

__all__ = ["MemoryStore"]

_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_U64_MAX = (1 << 64) - 1


def _failed(reason: str) -> MSMQError:
    return MSMQError(f"batch not stored: {reason}", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)


def _check_i64(value: object, what: str) -> None:
    if type(value) is not int or not _I64_MIN <= value <= _I64_MAX:
        raise _failed(f"{what} {value!r} is not a signed 64-bit integer")


def _check_key(key: MessageKey | StoredMessage) -> None:
    _check_i64(key.queue_id, "queue_id")
    if type(key.lookup_id) is not int or not 0 <= key.lookup_id <= _U64_MAX:
        raise _failed(f"lookup_id {key.lookup_id!r} is not an unsigned 64-bit integer")


def _check_message(m: StoredMessage) -> None:
    _check_key(m)
    _check_i64(m.priority, "priority")
    _check_i64(m.abort_count, "abort_count")
    _check_i64(m.move_count, "move_count")
    if (
        m.arrived_time != m.arrived_time
        or (m.expires_at is not None and m.expires_at != m.expires_at)
        or (m.last_move_time is not None and m.last_move_time != m.last_move_time)
    ):
        raise _failed("arrived_time, expires_at and last_move_time must not be NaN")
    if not isinstance(m.packet, bytes | bytearray | memoryview):
        raise _failed("packet is not bytes")


def _dump_properties(row: QueueRow) -> str:
    try:
        return json.dumps(row.properties, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise _failed(f"queue {row.queue_id} properties are not JSON: {e}") from e


class MemoryStore:
    """A ``Store`` in memory: same contract as ``SQLiteStore``, nothing durable."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False
        #: A memory store has no disk to fill (``Store.low_space``), nor anything a crash leaves.
        self.low_space = False
        self.in_flight: InFlightLog | None = None
        self._meta: dict[str, str] = {}
        # queue_id -> (path_name, properties as JSON text)
        self._queues: dict[int, tuple[str, str]] = {}
        self._last_lookup_ids: dict[int, int] = {}
        # queue_id -> lookup_id -> message; a queue's dict keeps insertion order, sorted on load().
        self._messages: dict[int, dict[int, StoredMessage]] = {}
        #: Number of committed ``apply`` calls (same counter as ``SQLiteStore.commits``).
        self.commits = 0

    def _check_open(self) -> None:
        if self._closed:
            raise MSMQError("the store is closed", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)

    def load(self) -> Snapshot:
        """Everything the store holds; messages in (queue_id, lookup_id) order."""
        with self._lock:
            self._check_open()
            queues = [
                QueueRow(qid, path, json.loads(props)) for qid, (path, props) in sorted(self._queues.items())
            ]
            messages = [
                m
                for qid in sorted(self._messages)
                for _, m in sorted(self._messages[qid].items(), key=lambda kv: kv[0])
            ]
            return Snapshot(
                meta=dict(self._meta),
                queues=queues,
                last_lookup_ids=dict(self._last_lookup_ids),
                messages=iter(messages),
            )

    def apply(self, batch: Batch) -> None:
        """Apply ``batch`` atomically (checked in full before any change)."""
        with self._lock:
            self._check_open()
            if not batch:
                return
            # Check everything first, so that a failing batch leaves no trace.
            queues = [(row, _dump_properties(row)) for row in batch.upsert_queues]
            for row, _ in queues:
                _check_i64(row.queue_id, "queue_id")
                if not isinstance(row.path_name, str):
                    raise _failed("path_name is not a string")
            seen: set[tuple[int, int]] = set()
            for m in batch.insert:
                _check_message(m)
                k = (m.queue_id, m.lookup_id)
                if k in seen or m.lookup_id in self._messages.get(m.queue_id, ()):
                    raise _failed(f"message {k} already stored")
                seen.add(k)
            for key in [u.key for u in batch.update] + batch.delete:
                _check_key(key)
            for u in batch.update:
                for v in (u.abort_count, u.move_count):
                    if v is not None:
                        _check_i64(v, "count")
                if u.last_move_time is not None and u.last_move_time != u.last_move_time:
                    raise _failed("last_move_time must not be NaN")
            for qid, last in batch.last_lookup_ids.items():
                _check_i64(qid, "queue_id")
                if type(last) is not int or not 0 <= last <= _U64_MAX:
                    raise _failed(f"last lookup id {last!r} is not an unsigned 64-bit integer")
            for name, value in batch.meta.items():
                if not isinstance(name, str) or not isinstance(value, str):
                    raise _failed("meta keys and values must be strings")

            # Apply, in the order base.Batch documents.
            for row, props in queues:
                self._queues[row.queue_id] = (row.path_name, props)
            for m in batch.insert:
                packet = m.packet if type(m.packet) is bytes else bytes(m.packet)
                if packet is not m.packet:
                    m = StoredMessage(
                        m.queue_id,
                        m.lookup_id,
                        packet,
                        m.priority,
                        m.arrived_time,
                        m.subqueue,
                        m.abort_count,
                        m.move_count,
                        m.expires_at,
                        m.last_move_time,
                    )
                self._messages.setdefault(m.queue_id, {})[m.lookup_id] = m
            for qid, last in batch.last_lookup_ids.items():
                if last > self._last_lookup_ids.get(qid, -1):
                    self._last_lookup_ids[qid] = last
            for u in batch.update:
                q = self._messages.get(u.key.queue_id)
                old = q.get(u.key.lookup_id) if q is not None else None
                if old is None or q is None:
                    continue
                q[u.key.lookup_id] = StoredMessage(
                    old.queue_id,
                    old.lookup_id,
                    old.packet,
                    old.priority,
                    old.arrived_time,
                    old.subqueue if u.subqueue is None else u.subqueue,
                    old.abort_count if u.abort_count is None else u.abort_count,
                    old.move_count if u.move_count is None else u.move_count,
                    old.expires_at,
                    old.last_move_time if u.last_move_time is None else u.last_move_time,
                )
            for key in batch.delete:
                q = self._messages.get(key.queue_id)
                if q is not None:
                    q.pop(key.lookup_id, None)
            for qid in batch.delete_queues:
                self._queues.pop(qid, None)
                self._messages.pop(qid, None)
                self._last_lookup_ids.pop(qid, None)
            self._meta.update(batch.meta)
            self.commits += 1

    def read_packet(self, key: MessageKey) -> bytes:
        """The packet of one message; ``KeyError`` when absent."""
        with self._lock:
            self._check_open()
            q = self._messages.get(key.queue_id)
            m = q.get(key.lookup_id) if q is not None else None
            if m is None:
                raise KeyError(key)
            return m.packet

    def read_packets(self, keys: Sequence[MessageKey]) -> list[bytes]:
        """Packets of several messages in the order of ``keys``; ``KeyError`` if one is absent."""
        with self._lock:
            self._check_open()
            out: list[bytes] = []
            for key in keys:
                q = self._messages.get(key.queue_id)
                m = q.get(key.lookup_id) if q is not None else None
                if m is None:
                    raise KeyError(key)
                out.append(m.packet)
            return out

    def close(self) -> None:
        """Drop everything; idempotent.  Later calls raise ``MSMQError``."""
        with self._lock:
            self._closed = True
            self._messages.clear()
