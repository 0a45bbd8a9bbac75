"""The narrow storage interface of the queue manager, shared by every backend.

Design (DESIGN.md "Storage"): the store holds only *committed, durable* state.  Everything that is
volatile by the specs stays in the queue manager's memory: express messages, locks taken by
uncommitted transactional receives, and sends of a transaction that has not committed.  A crash
therefore rolls back uncommitted transactions and releases locks by construction: nothing of them
was ever written.  A commit is one ``Store.apply(batch)`` call, atomic and durable on return.

[MS-MQDMPR] 3.1.1: "All attributes of a Message whose DeliveryGuarantee is Recoverable, and its
MessagePosition's State/MessageReference, are persistent."  Queue attributes are persistent too.

Backends: ``memory`` (``MemoryStore``, for tests and express-only use) and ``sqlite``
(``SQLiteStore``: WAL, synchronous=FULL, group commit).  One contract suite runs against both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from pymsmq.qm.store.in_flight import InFlightLog

__all__ = [
    "Batch",
    "MessageKey",
    "MessageUpdate",
    "QueueRow",
    "Snapshot",
    "Store",
    "StoredMessage",
]


@dataclass(frozen=True, slots=True)
class QueueRow:
    """A queue as stored: its store id, the canonical path name and its properties.

    ``properties`` holds every queue property as JSON-compatible values keyed by the snake_case
    names of PROPID_Q_* (``label``, ``quota``, ``journal``, ``transactional``, ...).  The store treats
    it as opaque.  ``queue_id`` is assigned by the queue manager and never reused.
    """

    queue_id: int
    path_name: str
    properties: dict[str, object]


@dataclass(frozen=True, slots=True)
class MessageKey:
    """Identifies one stored message: lookup ids are unique per queue ([MS-MQDMPR] 3.1.1.12)."""

    queue_id: int
    lookup_id: int


class StoredMessage(NamedTuple):
    """One durable message: the canonical [MS-MQMQ] UserMessage packet plus queue-manager facts.

    The facts the queue manager assigns (lookup id, arrival time, abort/move counts, subqueue, expiry
    deadline) live beside the packet, never inside it (DESIGN.md).  Immutable; a named tuple because
    one is built for every recoverable message sent and every message loaded at restart (about a
    quarter of the cost of a frozen dataclass's ``__init__``).
    """

    queue_id: int
    lookup_id: int
    packet: bytes
    priority: int
    arrived_time: float
    subqueue: str = ""
    abort_count: int = 0
    move_count: int = 0
    # Absolute deadline (same clock as arrived_time) from TimeToBeReceived; None = infinite.
    expires_at: float | None = None
    # PROPID_M_LAST_MOVE_TIME: when the message last moved to or from a subqueue (same clock as
    # arrived_time); None = never moved.
    last_move_time: float | None = None

    @property
    def key(self) -> MessageKey:
        return MessageKey(self.queue_id, self.lookup_id)


@dataclass(frozen=True, slots=True)
class MessageUpdate:
    """Changes to a stored message's queue-manager facts (None = unchanged).

    A move to another queue is a delete plus an insert (it gets a new lookup id there); a move
    between a queue and its subqueues keeps the lookup id and changes ``subqueue``.
    """

    key: MessageKey
    subqueue: str | None = None
    abort_count: int | None = None
    move_count: int | None = None
    last_move_time: float | None = None


@dataclass(slots=True)
class Batch:
    """Everything one commit changes, applied atomically by ``Store.apply``.

    Order of application inside a batch: queue upserts, inserts, updates, deletes, queue deletes
    (deleting a queue deletes its messages), meta.  ``last_lookup_ids`` records the highest lookup id
    handed out per queue so that lookup ids are never reused after a restart, even when the
    messages that used them are gone; a queue delete deletes its entry (queue ids are never
    reused either).
    """

    upsert_queues: list[QueueRow] = field(default_factory=list)
    delete_queues: list[int] = field(default_factory=list)
    insert: list[StoredMessage] = field(default_factory=list)
    update: list[MessageUpdate] = field(default_factory=list)
    delete: list[MessageKey] = field(default_factory=list)
    last_lookup_ids: dict[int, int] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)

    def absorb(self, other: Batch) -> None:
        """Add everything ``other`` changes to this batch (one commit for both)."""
        self.upsert_queues += other.upsert_queues
        self.delete_queues += other.delete_queues
        self.insert += other.insert
        self.update += other.update
        self.delete += other.delete
        last = self.last_lookup_ids
        for queue_id, lookup_id in other.last_lookup_ids.items():
            if lookup_id > last.get(queue_id, -1):
                last[queue_id] = lookup_id
        self.meta.update(other.meta)

    def __bool__(self) -> bool:
        return bool(
            self.upsert_queues
            or self.delete_queues
            or self.insert
            or self.update
            or self.delete
            or self.last_lookup_ids
            or self.meta
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a store holds when it is opened: the input of restart recovery.

    ``messages`` yields every stored message's facts in (queue_id, lookup_id) order; its
    ``packet`` may be empty (``b""``) for bodies the backend keeps outside the index (load them with
    ``Store.read_packet``).
    """

    meta: dict[str, str]
    queues: list[QueueRow]
    last_lookup_ids: dict[int, int]
    messages: Iterator[StoredMessage]


class Store(Protocol):
    """Durable storage for committed state.  Thread-safe: any thread may call any method.

    ``apply`` returns only once the batch is durable (SQLite: committed with synchronous=FULL);
    concurrent ``apply`` calls from many threads MAY be merged into one transaction and one fsync
    (group commit), each caller still returning only after its own batch is durable.
    A batch that fails is not applied at all and its caller gets the exception
    (``MSMQError(MQ_ERROR_MESSAGE_STORAGE_FAILED)``); other callers' batches are unaffected.
    """

    #: True while the store's disk is full and batches that add messages are refused (sqlite.py,
    #: "A full disk"); always False for a store without a disk.
    low_space: bool
    #: The messages transactions hold, kept where a crash of the process leaves them (``in_flight``);
    #: None for a store that does not outlive its process.
    in_flight: InFlightLog | None

    def load(self) -> Snapshot:
        """Read everything for restart recovery (call once, right after opening)."""
        ...

    def apply(self, batch: Batch) -> None:
        """Apply ``batch`` atomically; durable on return."""
        ...

    def read_packet(self, key: MessageKey) -> bytes:
        """The stored packet of one message (raises ``KeyError`` when absent)."""
        ...

    def read_packets(self, keys: Sequence[MessageKey]) -> list[bytes]:
        """Several packets in one round trip, in the order of ``keys``."""
        ...

    def close(self) -> None:
        """Flush and release resources; idempotent."""
        ...
