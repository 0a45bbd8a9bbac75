"""The embedded queue manager: [MS-MQDMPR] 3.1.1.1 QueueManager with its queues and messages.

``QueueManager.open(dir)`` opens (or creates) a queue manager whose committed state lives in a
SQLite store in ``dir`` (``":memory:"`` for a memory store).  It has a persistent identity GUID and
machine name (store meta), the system queues of [MS-MQDMPR] 3.1.3 (machine journal, dead-letter,
transactional dead-letter, ``order_queue$`` = private queue 4, ``notify_queue$`` = private queue
3), and each application queue gets its journal queue ([MS-MQDMPR] 3.1.7.1.3).

Concurrency: one lock guards all in-memory state; each queue has a ``threading.Condition`` on that
lock for blocked readers.  Durable writes (``store.apply``) happen outside the lock, so concurrent
producers share fsyncs (the store's group commit).  Express messages live only in memory.

Format names the queue manager gives its queues: private ``PRIVATE=<qm guid>\\<number as %08x>``
with number = the [MC-MQAC] 3.1.6.2 hash of the name; public ``PUBLIC=<queue guid>``; system
``MACHINE=<qm guid>;JOURNAL|DEADLETTER|DEADXACT``; a queue's journal ``<format name>;JOURNAL``;
a subqueue ``DIRECT=OS:<machine>\\<path>;<subqueue>`` ([MC-MQAC] 3.10.6.1 step 7).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final

from pymsmq.errors import MSMQError, quoted, reason
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.names import LocalFormat, QueuePath, private_queue_hash
from pymsmq.model.packet_mapping import message_to_packet, packet_with_destination
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.model.quota_error import MACHINE_QUOTA_TEXT, QuotaExceededError, queue_quota_text
from pymsmq.model.stored_packet import restore_message
from pymsmq.qm.catalog import QueueCatalog
from pymsmq.qm.index import AVAILABLE, ByteTotal, Entry, MessageIndex
from pymsmq.qm.lifecycle import NACK_Q_PURGED, Effects, Lifecycle
from pymsmq.qm.notifications import Dispatcher
from pymsmq.qm.queue_state import QueueState, message_size, subqueue_format
from pymsmq.qm.send_batch import send_batch
from pymsmq.qm.store import DEFAULT_DB_NAME, MemoryStore, SQLiteStore
from pymsmq.qm.store.base import Batch, MessageKey, MessageUpdate, QueueRow, Store, StoredMessage
from pymsmq.qm.store.file_modes import make_private_dir
from pymsmq.qm.store.row_checks import (
    facts_have_their_types,
    meta_problem,
    new_identity,
    queue_table_problem,
)
from pymsmq.qm.store.sqlite import DAMAGED_HINT
from pymsmq.qm.timers import FakeClock, TimerHeap, TimerThread
from pymsmq.qm.transaction import Transaction

if TYPE_CHECKING:
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.send_batch import SendItem

log = logging.getLogger("pymsmq.qm")

__all__ = ["QueueManager"]

_LOOKUP_BLOCK: Final = 1 << 16
_ORDINAL_BLOCK: Final = 1 << 16
#: The first block of ids an open reserves; each next one doubles, up to _ORDINAL_BLOCK.
_FIRST_ORDINAL_BLOCK: Final = 1 << 8
_SYSTEM_QUEUES: Final = (("JOURNAL", False), ("DEADLETTER", False), ("DEADXACT", True))
# [MS-MQQB] 2.2.4 / [MS-MQCN] 1.9: the internal private queues and their fixed numbers.
_INTERNAL_QUEUES: Final = (("order_queue$", 4), ("notify_queue$", 3))
_LOCAL_ALIASES: Final = frozenset({".", "localhost", "127.0.0.1", "::1"})


def _err(message: str, hresult: int) -> MSMQError:
    return MSMQError(message, hresult)


class QueueManager(QueueCatalog):
    """An embedded MSMQ queue manager.  Use ``QueueManager.open(dir)``; ``close()`` when done."""

    def __init__(
        self,
        store: Store,
        clock: Callable[[], float] = time.time,
        machine_name: str | None = None,
        machine_quota: int | None = None,
        *,
        windows_transaction_ttbr: bool = False,
        send_insecure_nacks: bool = False,
        machine_journal_quota: int | None = None,
        timer_thread: bool | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._lock = threading.RLock()
        #: The bytes of every message of every queue, kept up to date by their indexes.
        self._bytes = ByteTotal()
        self._closed = False
        #: docs/lifecycle.md: True = every message of a transaction gets the first message's TTBR.
        self.windows_transaction_ttbr = windows_transaction_ttbr
        if timer_thread is None:
            timer_thread = not isinstance(clock, FakeClock)
        self._timer_thread: TimerThread | None = None
        if timer_thread:
            self._timer_thread = TimerThread(self._lock, clock, lambda: self._timers, self.run_timers)
        self._timers = TimerHeap(self._timer_thread.wake if self._timer_thread is not None else None)
        self._life = Lifecycle(self, self._timers, send_insecure_nacks, machine_journal_quota)
        self._dispatcher = Dispatcher()
        self._queues: dict[str, QueueState] = {}
        self._by_id: dict[int, QueueState] = {}
        #: Stored messages that could not be read at open (a packet damaged on disk, a big
        #: message's file missing), by (queue id, subqueue): left in the store, not delivered;
        #: a purge of that queue (or subqueue) deletes them.
        self._unreadable: dict[tuple[int, str], list[int]] = {}
        self._by_number: dict[int, QueueState] = {}
        self._system: dict[str, QueueState] = {}
        self._internal: dict[str, QueueState] = {}
        snapshot = store.load()
        meta = dict(snapshot.meta)
        # The store's rows, each whole (the store checks each), must also make one queue manager.
        rows = [(row.queue_id, row.path_name, row.properties) for row in snapshot.queues]
        problem = queue_table_problem(rows) or meta_problem(meta, (row.queue_id for row in snapshot.queues))
        if problem is not None:
            raise _err(
                f"cannot load the store: {problem}: {DAMAGED_HINT}", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
            )
        batch = Batch()
        if "qm_guid" not in meta:
            meta.update(new_identity(machine_name, clock()))
            batch.meta.update(meta)
        #: [MS-MQDMPR] 3.1.1.1 QueueManager Identifier and ComputerName.
        self.guid = uuid.UUID(meta["qm_guid"])
        self.machine_name: str = meta["machine_name"]
        self._next_queue_id = int(meta["next_queue_id"])
        self._ordinal = self._ordinal_reserved = int(meta.get("ordinal_reserved", "0"))
        self._ordinal_block = _FIRST_ORDINAL_BLOCK
        #: Purges that met messages transactions held, stored with each such purge (in_flight.py).
        self._purges = int(meta.get("purges", "0"))
        #: The highest uniquifier of this queue manager's message ids found in the store while it
        #: opens, looked for only when the store has no message id counter (it is written with the
        #: first id: lost, ids still in the store would be given again; outside QA).
        self._highest_own: int | None = None if "ordinal_reserved" in meta else -1
        #: [MS-MQDMPR] 3.1.1.1 QueueManagerQuota, in kilobytes (None = no limit).  Given, it is kept
        #: in the store for the next opens; INFINITE removes a kept limit.
        stored = meta.get("machine_quota") or ""
        self.machine_quota: int | None
        if machine_quota is None:
            self.machine_quota = int(stored) if stored else None
        else:
            self.machine_quota = None if machine_quota == INFINITE else machine_quota
            wanted = "" if self.machine_quota is None else str(self.machine_quota)
            if wanted != stored:  # written only when it changes: an open writes nothing otherwise
                batch.meta["machine_quota"] = wanted
        # Under the lock: the first restored deadline starts the timer thread, which must not expire
        # messages (and change their queues' indexes) while the rest are still being restored (its
        # pops raced the restore's pushes: expired messages were left in no timer, receivable).
        with self._lock:
            self._load(snapshot.queues, snapshot.last_lookup_ids, batch)
            # The cyclic garbage collector would scan every message restored so far, again and again
            # as they pile up (none of them is garbage): it waits until all are in.
            collecting = gc.isenabled()
            gc.disable()
            unreadable: list[str] = []
            # Messages transactions held when the last queue manager on the store died: aborted by
            # the crash, their abort counts go up as an abort's would, unless their counts are no
            # longer those noted: the outcome was stored (store/in_flight.py).
            in_flight = store.in_flight
            noted = in_flight if in_flight is not None and in_flight.left_over else None
            crash_aborted = 0
            crash_purged: list[StoredMessage] = []
            orphans: list[MessageKey] = []  # messages of queues that no longer exist
            try:
                for sm in snapshot.messages:
                    if (
                        noted is not None
                        and type(sm.abort_count) is int
                        and type(sm.move_count) is int
                        and noted.crash_aborted(sm.queue_id, sm.lookup_id, sm.abort_count, sm.move_count)
                    ):
                        if noted.crash_purged(
                            sm.queue_id, sm.lookup_id, sm.abort_count, sm.move_count, self._purges
                        ):
                            crash_purged.append(sm)  # (deleted below, once it is loaded)
                        else:
                            sm = sm._replace(abort_count=sm.abort_count + 1)
                            batch.update.append(MessageUpdate(sm.key, abort_count=sm.abort_count))
                            crash_aborted += 1
                    if sm.queue_id in self._by_id:
                        self._restore(sm, unreadable)
                    elif type(sm.queue_id) is int and type(sm.lookup_id) is int:
                        orphans.append(sm.key)
            finally:
                if collecting:
                    gc.enable()
            for sm in crash_purged:
                self._delete_crash_purged(sm, batch)
            if orphans:
                # A queue's deletion deletes its messages ([MS-MQDMPR] 3.1.7.1.4); a write that
                # raced it (an acknowledgement to an admin queue deleted meanwhile, a journal copy)
                # could still store one there.  Nothing loads or purges them: deleted now.
                batch.delete += orphans
                log.info("%d stored message(s) of deleted queues deleted", len(orphans))
            if unreadable:
                log.error(
                    "%d stored message(s) could not be read and are left in the store, not loaded "
                    "(a big message's file missing from a copied store, or a packet damaged on "
                    "disk; a purge of the queue removes them); the first: %s",
                    len(unreadable),
                    "; ".join(unreadable[:3]),
                )
            if batch:
                self._apply(batch)
            if in_flight is not None:
                in_flight.clear()
            if self._highest_own is not None and self._highest_own >= self._ordinal:
                log.warning("the store had no message id counter: ids go on from its messages'")
                self._ordinal = self._ordinal_reserved = self._highest_own
            self._highest_own = None
            if crash_purged:
                log.warning(
                    "%d message(s) purged while transactions held them were held when the queue "
                    "manager on this store stopped without ending those transactions: deleted, as "
                    "their aborts would have",
                    len(crash_purged),
                )
            if crash_aborted:
                log.warning(
                    "%d message(s) were held by transactions when the queue manager on this store "
                    "stopped without ending them: aborted, their abort counts are one higher",
                    crash_aborted,
                )
            if isinstance(clock, FakeClock):
                clock.attach(self)
            # Restart: messages whose deadline passed while the queue manager was down expire now.
            self.run_timers()

    # ------------------------------------------------------------------ opening and closing
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        clock: Callable[[], float] = time.time,
        *,
        store: Store | None = None,
        machine_name: str | None = None,
        machine_quota: int | None = None,
        windows_transaction_ttbr: bool = False,
        send_insecure_nacks: bool = False,
        machine_journal_quota: int | None = None,
        timer_thread: bool | None = None,
        disk_reserve: int | None = None,
    ) -> QueueManager:
        """Open the queue manager stored in directory ``path`` (created if missing).

        ``":memory:"`` gives a memory store (nothing survives ``close``).  ``clock`` returns POSIX
        seconds and stamps sent/arrival times and expiry deadlines; pass a
        ``pymsmq.qm.timers.FakeClock`` to drive expiry by hand (``clock.advance(s)`` or
        ``qm.run_timers()``).  ``machine_quota`` and ``machine_journal_quota`` are in KB;
        ``machine_quota`` is kept in the store (later opens without it keep the limit; INFINITE
        removes it).
        ``windows_transaction_ttbr``: give every message of a transaction the first message's
        time-to-be-received, as Windows does (default: each keeps its own; docs/lifecycle.md).
        ``send_insecure_nacks``: also send the NACKs [MS-MQQB] 3.1.7.15 suppresses by default.
        ``timer_thread``: run expiry on a background thread (default: yes unless a FakeClock).
        ``disk_reserve``: bytes the SQLite store holds back so that a full disk can still be drained
        (default ``$PYMSMQ_DISK_RESERVE`` or 32 MiB; 0: none; docs/lifecycle.md, "A full disk").
        """
        if store is None:
            target = os.fspath(path)
            if target in (":memory:", "memory:", "memory://"):
                store = MemoryStore()
            else:
                make_private_dir(target)
                store = SQLiteStore(os.path.join(target, DEFAULT_DB_NAME), disk_reserve)
        try:
            return cls(
                store,
                clock,
                machine_name,
                machine_quota,
                windows_transaction_ttbr=windows_transaction_ttbr,
                send_insecure_nacks=send_insecure_nacks,
                machine_journal_quota=machine_journal_quota,
                timer_thread=timer_thread,
            )
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Abort nothing durable (uncommitted work is simply not kept), wake waiters, close the store."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for state in self._by_id.values():
                state.cond.recheck()
            self._timers.clear()
        if self._timer_thread is not None:
            self._timer_thread.stop()
        self._dispatcher.stop()
        self._store.close()

    def __enter__(self) -> QueueManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True after ``close``."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise _err("the queue manager is closed", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)

    # ------------------------------------------------------------------ store plumbing
    def _apply(self, batch: Batch) -> None:
        try:
            self._store.apply(batch)
        except MSMQError:
            raise
        except Exception as exc:
            raise _err(f"store failure: {exc}", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED) from exc

    def _stored(self, state: QueueState, entry: Entry, sent: bytes | None = None) -> StoredMessage:
        # ``sent``: the packet the message was sent as, without a destination (send_batch.send_batch).
        m = entry.message
        packet = None if sent is None else packet_with_destination(sent, m)
        return StoredMessage(
            state.queue_id,
            entry.lookup_id,
            message_to_packet(m) if packet is None else packet,
            entry.priority,
            m.arrived_time if m.arrived_time is not None else 0.0,
            entry.subqueue,
            m.abort_count,
            m.move_count,
            entry.expires_at,
            m.last_move_time,
        )

    def _message_of(self, entry: Entry) -> Message:
        return entry.message

    def _notify(self, state: QueueState) -> None:
        state.cond.notify_all()

    def _put_back(self, state: QueueState, index: MessageIndex, entry: Entry, batch: Batch) -> None:
        """Under the lock: a locked message (aborted transaction, released hold) leaves its lock.

        Purged while locked, it is deleted now ([MS-MQDMPR] 3.1.7.1.7 PurgePending -> Message
        Position Deleted, reason NackQueuePurged; the deletion and NACK go into ``batch``); otherwise
        it is available again in its place, and a deadline that passed meanwhile applies now
        ([MC-MQAC] 3.1.6.1.1 step 1).
        """
        if entry.purge_pending:
            index.remove(entry)
            if entry.durable:
                batch.delete.append(MessageKey(state.queue_id, entry.lookup_id))
            self._life.removed(state, entry, NACK_Q_PURGED, batch)
            return
        index.set_state(entry, AVAILABLE)
        self._life.check_available(state, entry)
        self._notify(state)

    def _on_removed(self, state: QueueState, entry: Entry, effects: Batch | None = None) -> None:
        """A message left its queue for good (received/committed): acks and journal copies,
        stored now or added to ``effects`` (the caller stores it: ``_store_effects``)."""
        self._life.received(state, entry, effects)

    # ------------------------------------------------------------------ timers and lifecycle
    def run_timers(self) -> int:
        """Expire every message whose time-to-be-received passed at ``clock()``; returns how many.

        The timer thread calls this at each deadline; with a ``FakeClock`` its ``advance`` does.
        """
        with self._lock:
            if self._closed:
                return 0
            batch = Batch()
            n = self._life.run_due(self._clock(), batch)
            if batch:
                self._apply(batch)
            return n

    def _sweep(self) -> None:
        # Under the lock, before a read: run timers that are already due (exact expiry moments
        # even when the timer thread has not woken yet).
        heap = self._timers._heap  # distinct deadlines, earliest first
        if heap and heap[0] <= self._clock():
            self.run_timers()

    @property
    def unreadable_messages(self) -> int:
        """Stored messages left in the store at open because they could not be read (a packet
        damaged on disk, a big message's file missing; named in the log): not delivered, deleted
        by a purge of their queue (docs/lifecycle.md, "Store versions")."""
        return sum(len(lookup_ids) for lookup_ids in self._unreadable.values())

    @property
    def disk_full(self) -> bool:
        """True while the store's disk is full: recoverable sends are refused, receives go on
        (docs/lifecycle.md, "A full disk")."""
        return self._store.low_space

    def _arrived(self, state: QueueState, message: Message) -> None:
        # Under the lock: positive arrival events (ack, trace report, source journal).
        self._effects(lambda batch: self._life.arrived(state, message, batch), "arrival events")

    def _effects(self, build: Callable[[Batch], object], what: str, into: Batch | None = None) -> None:
        """Under the lock: build and store the side effects (acknowledgements, trace reports,
        journal copies) of an operation that is already durable -- a send stored, a receive's
        delete committed.  With ``into``, they are added to it instead, for the caller to store
        with others (``_store_effects``: one commit for a batch of receives).

        A store failure here (a full disk, an I/O error) must not fail that operation: the caller
        of a receive would lose the message it received, the sender of a stored message would send
        it again.  The effects are dropped instead, taken out of memory as well (memory holds what
        the store holds), and logged as a warning.
        """
        batch = Effects() if isinstance(into, Effects) else Batch()
        try:
            build(batch)
        except MSMQError as exc:  # (a block of lookup ids could not be reserved)
            self._drop_effects(batch, what, exc)
            return
        if into is None:
            self._store_effects(batch, what)
        else:
            into.absorb(batch)

    def _store_effects(self, batch: Batch, what: str) -> None:
        """Under the lock: store side effects already built into ``batch`` (see ``_effects``)."""
        if not batch:
            return
        try:
            self._apply(batch)
        except MSMQError as exc:
            self._drop_effects(batch, what, exc)

    def _prepared(self, build: Callable[[Batch], object], what: str) -> Effects:
        """Under the lock: the side effects ``build`` makes, built before the write of the operation
        that causes them, to be stored in it (``_apply_with``); empty when they could not be built."""
        effects = Effects()
        self._effects(build, what, effects)
        return effects

    def _apply_with(self, batch: Batch, effects: Effects) -> MSMQError | None:
        """Outside the lock: store ``batch`` and the side effects ``effects`` of the operation it
        holds in one write.  None when they were stored together (the caller then ``show``s the
        effects under the lock); else the error that refused them (the caller ``_drop_prepared``s).

        When that write fails the operation is written alone (a full disk refuses the journal
        copy of a receive, not its delete): side effects never fail their operation (``_effects``).
        Raises only when the operation itself cannot be stored (then the caller drops them).
        """
        if not effects:
            if batch:
                self._apply(batch)
            return None
        whole = Batch()
        whole.absorb(batch)
        whole.absorb(effects)
        try:
            self._apply(whole)
        except MSMQError as refused:
            if batch:
                self._apply(batch)
            return refused
        return None

    def _shown(self, effects: Effects, refused: MSMQError | None, what: str) -> None:
        """Under the lock, after ``_apply_with``: the effects are seen, or dropped when refused."""
        if refused is None:
            orphans = effects.show()
            if orphans:  # (a target queue was deleted meanwhile: rare)
                self._store_effects(Batch(delete=orphans), what)
        else:
            self._drop_prepared(effects, what, refused)

    def _taken_back(self, effects: Effects, refused: MSMQError | None, what: str) -> None:
        """Under the lock, after ``_apply_with``: the queue of the operation was deleted while the
        write was under way, and its deletion decided the message's fate (NACK_Q_DELETED for one
        being received, NACK_BAD_DST_Q for one being sent): the effects built for the operation
        leave memory, and their stored rows are deleted."""
        if refused is None:
            keys = [row.key for row in effects.insert]
            effects.drop()
            if keys:
                self._store_effects(Batch(delete=keys), what)
        else:
            self._drop_prepared(effects, what, refused)

    def _drop_prepared(self, effects: Effects, what: str, exc: MSMQError | None = None) -> None:
        """Under the lock: prepared side effects that were not stored leave memory too; logged
        unless their operation failed as well (``exc`` None)."""
        dropped = effects.drop()
        if exc is not None:
            log.warning("%s not stored, %d messages dropped: %s", what, dropped, reason(exc))

    def _drop_effects(self, batch: Batch, what: str, exc: MSMQError) -> None:
        if isinstance(batch, Effects):
            self._drop_prepared(batch, what, exc)
            return
        for row in batch.insert:
            state = self._by_id.get(row.queue_id)
            entry = None if state is None else state.index.get(row.lookup_id)
            if state is not None and entry is not None:
                state.index.remove(entry)
        log.warning("%s not stored, %d messages dropped: %s", what, len(batch.insert), reason(exc))

    def _quota_rejected(self, state: QueueState, message: Message, msg_class: int, tx: bool) -> ObjectId:
        # Under the lock: a send refused for the queue quota still gets its NACK / dead letter
        # ([MS-MQQB] 3.1.5.8.8 rStatus 1).  The message gets the id it would have had (returned).
        m = message.copy()
        m.id = message.id = ObjectId(self.guid, self._next_ordinal())
        m.source_machine_guid = self.guid
        m.destination_queue = state.format_name
        m.sent_time = m.arrived_time = self._clock()
        if tx:
            m.transaction_id = ObjectId(self.guid, self._next_ordinal())
        batch = Batch()
        self._life.undeliverable(m, msg_class, batch)
        if batch:
            self._apply(batch)
        return m.id

    def reject_message(self, message: Message, msg_class: int) -> None:
        """Handle a message that could not be delivered for reason ``msg_class`` (an arrival NACK
        class such as MQMSG_CLASS_NACK_ACCESS_DENIED or NACK_BAD_DST_Q): a negative acknowledgement
        to its admin queue if it asked for one, and a dead-letter copy if it asked for that
        ([MS-MQQB] 3.1.5.8.2 / 3.1.5.8.3).  For the protocol layers that receive messages."""
        with self._lock:
            self._check_open()
            batch = Batch()
            self._life.undeliverable(message, msg_class, batch)
            if batch:
                self._apply(batch)

    def _next_lookup(self, state: QueueState) -> int:
        # Lookup ids: strictly increasing per queue, never reused after a restart: ids are handed out
        # from a durably reserved block ([MS-MQDMPR] 3.1.1.12 LookupIdentifier).  Queue._enqueue
        # inlines the step inside the block (keep the two in step).
        lid = state.next_lookup
        state.next_lookup = lid + 1
        if lid > state.reserved_lookup:
            reserved = lid + _LOOKUP_BLOCK - 1
            self._apply(Batch(last_lookup_ids={state.queue_id: reserved}))
            state.reserved_lookup = reserved
        return lid

    def _next_ordinal(self) -> int:
        # [MS-MQDMPR] 3.1.1.12 Identifier: {source QM GUID, u32 uniquifier}, unique per message.
        # Queue._enqueue and send_batch inline the step inside the reserved block (keep them in
        # step).  The count goes on past 2**32 and the uniquifier (its low 32 bits) wraps, as any
        # 32-bit uniquifier must, past 0: 0 is "no id" on the wire ([MS-MQMQ] 2.2.19.2), and a
        # send that drew it was refused (outside QA, 2026-11-28).  A block never reaches past the
        # wrap, so the inlined steps never draw 0.  Blocks start small at each open and double (an
        # open that sends once, a CLI `send`, used 65,536 ids: the uniquifier wrapped after as many
        # opens).
        ordinal = self._ordinal + 1
        if not ordinal & 0xFFFFFFFF:
            ordinal += 1
        self._ordinal = ordinal
        if ordinal > self._ordinal_reserved:
            block = self._ordinal_block
            self._ordinal_block = min(2 * block, _ORDINAL_BLOCK)
            reserved = min(ordinal + block - 1, ordinal | 0xFFFFFFFF)
            self._apply(Batch(meta={"ordinal_reserved": str(reserved)}))
            self._ordinal_reserved = reserved
        return ordinal & 0xFFFFFFFF

    def _new_queue_id(self, batch: Batch) -> int:
        qid = self._next_queue_id
        self._next_queue_id += 1
        batch.meta["next_queue_id"] = str(self._next_queue_id)
        return qid

    # ------------------------------------------------------------------ restart recovery
    def _load(self, rows: list[QueueRow], last_ids: dict[int, int], batch: Batch) -> None:
        journals: list[tuple[QueueState, int]] = []
        for row in rows:
            props = QueueProperties.from_dict(row.properties)
            kind = str(row.properties.get("queue_type", "private"))
            number = int(row.properties.get("private_queue_number", 0) or 0)  # type: ignore[call-overload]
            key = self._key_of(kind, props.path_name)
            state = QueueState(row.queue_id, kind, key, props, self._lock, number, self._bytes)
            last = last_ids.get(row.queue_id, 0)
            state.next_lookup = last + 1
            state.reserved_lookup = last
            self._by_id[row.queue_id] = state
            if kind == "journal":
                journals.append((state, int(row.properties["journal_of"])))  # type: ignore[call-overload]
            else:
                self._register(state)
        for state, parent_id in journals:
            parent = self._by_id[parent_id]  # (there: ``queue_table_problem`` said so)
            parent.journal, state.parent = state, parent
            state.format_name = parent.format_name + ";JOURNAL"
        for name, transactional in _SYSTEM_QUEUES:
            if name not in self._system:
                self._create_state(
                    "system", f"system$;{name}", name, QueueProperties(transactional=transactional), batch
                )
        for name, number in _INTERNAL_QUEUES:
            if name not in self._internal:
                self._create_state("internal", f"private$\\{name}", name, QueueProperties(), batch, number)

    def _key_of(self, kind: str, path_name: str) -> str:
        if kind == "journal":
            return ""
        tail = path_name.partition("\\")[2]
        if kind == "system":
            return "system:" + tail.partition(";")[2].lower()
        if kind in ("private", "internal"):
            return "private:" + tail.partition("\\")[2].lower()
        return "public:" + tail.lower()

    def _register(self, state: QueueState) -> None:
        path = state.props.path_name
        if state.kind == "system":
            name = state.key.partition(":")[2].upper()
            self._system[name] = state
            state.format_name = f"MACHINE={self.guid};{name}"
        elif state.kind in ("private", "internal"):
            self._by_number[state.number] = state
            state.format_name = f"PRIVATE={self.guid}\\{state.number:08x}"
            if state.kind == "internal":
                self._internal[path.rpartition("\\")[2].lower()] = state
        else:
            state.format_name = f"PUBLIC={state.props.queue_guid}"
        self._queues[state.key] = state

    def _create_state(
        self, kind: str, tail: str, name: str, props: QueueProperties, batch: Batch, number: int = 0
    ) -> QueueState:
        now = int(self._clock())
        qid = self._new_queue_id(batch)
        if kind in ("private", "internal") and not number:
            # [MC-MQAC] 3.1.6.2: the private queue number is the hash of the name, so that a
            # client-side PRIVATE= computation finds the queue; a (rare) collision takes the next free one.
            number = private_queue_hash(name) or 1
            while number in self._by_number or number in (3, 4):
                number = (number + 1) & 0xFFFFFFFF or 1
        props = props.replace(
            path_name=f"{self.machine_name}\\{tail}",
            queue_guid=uuid.uuid4(),
            create_time=now,
            modify_time=now,
        )
        state = QueueState(qid, kind, "", props, self._lock, number, self._bytes)
        state.key = self._key_of(kind, props.path_name)
        self._by_id[qid] = state
        self._register(state)
        batch.upsert_queues.append(state.row())
        if kind in ("private", "public"):
            # [MS-MQDMPR] 3.1.7.1.3: every queue that is not a subqueue gets its journal queue.
            jprops = QueueProperties(path_name=props.path_name + ";JOURNAL", quota=props.journal_quota)
            journal = QueueState(self._new_queue_id(batch), "journal", "", jprops, self._lock, 0, self._bytes)
            journal.parent, state.journal = state, journal
            journal.format_name = state.format_name + ";JOURNAL"
            self._by_id[journal.queue_id] = journal
            batch.upsert_queues.append(journal.row())
        return state

    def _delete_crash_purged(self, sm: StoredMessage, batch: Batch) -> None:
        # Under the lock, at open: a message a purge met while a transaction held it, whose
        # transaction a crash ended: deleted as that abort would have (``_put_back``).
        state = self._by_id.get(sm.queue_id)
        index = None if state is None else state.index_for(sm.subqueue)
        entry = None if index is None else index.get(sm.lookup_id)
        if state is None or index is None or entry is None:
            batch.delete.append(sm.key)  # (not loaded: its packet could not be read)
            return
        entry.purge_pending = True
        self._put_back(state, index, entry, batch)

    def _restore(self, sm: StoredMessage, unreadable: list[str]) -> None:
        state = self._by_id[sm.queue_id]
        # A message whose packet is missing or damaged is left in the store and not loaded (it
        # is named in the log): the others are served.  One such message stopped the whole
        # queue manager from opening with a KeyError (QA 2026-11-27).
        try:
            _check_stored(sm)
            packet = sm.packet or self._store.read_packet(sm.key)
            message = restore_message(packet)
        except (KeyError, MSMQError, ValueError, TypeError, IndexError) as exc:
            # (ValueError, TypeError: a row holding values of the wrong types, outside QA 2026-11-27;
            # UnicodeDecodeError is a ValueError)
            reason = "its packet file is missing" if isinstance(exc, KeyError) else str(exc)
            unreadable.append(f"{state.props.path_name} lookup id {sm.lookup_id}: {reason}")
            if type(sm.lookup_id) is int and type(sm.subqueue) is str:
                self._unreadable.setdefault((sm.queue_id, sm.subqueue), []).append(sm.lookup_id)
            return
        message.lookup_id = sm.lookup_id
        message.arrived_time = sm.arrived_time
        if self._highest_own is not None and message.id is not None and message.id.lineage == self.guid:
            self._highest_own = max(self._highest_own, message.id.uniquifier)
        # Zero counts stay the class defaults: nothing stored in the instance (memory per message).
        if sm.abort_count:
            message.abort_count = sm.abort_count
        if sm.move_count:
            message.move_count = sm.move_count
        if sm.last_move_time is not None:
            message.last_move_time = sm.last_move_time
        entry = Entry(
            sm.lookup_id, sm.priority, message, message_size(message), AVAILABLE, True, sm.expires_at
        )
        entry.subqueue = sm.subqueue
        state.index_for(sm.subqueue).add(entry)
        self._life.arm(state, entry)
        if sm.lookup_id >= state.next_lookup:
            state.next_lookup = sm.lookup_id + 1
            state.reserved_lookup = max(state.reserved_lookup, sm.lookup_id)

    # ------------------------------------------------------------------ names
    def _is_local(self, computer: str) -> bool:
        return computer.lower() in _LOCAL_ALIASES or computer.lower() == self.machine_name.lower()

    def _resolve(self, name: str) -> tuple[QueueState, str | None]:
        """Find the queue a path name or format name names: (queue state, subqueue or None)."""
        if not isinstance(name, str):
            raise _err(f"not a queue name: {quoted(name)}", HResult.MQ_ERROR_ILLEGAL_FORMATNAME)
        if name[:11].lower() == "formatname:":
            # System.Messaging's own prefix, not part of an MSMQ format name ([MS-MQMQ] 2.1): it was
            # taken for a path name on a computer called "FormatName:DIRECT=OS:." (QUEUE_NOT_FOUND).
            raise _err(
                f"{quoted(name)}: 'FormatName:' is System.Messaging's prefix; write the format name"
                f" alone ({quoted(name[11:])})",
                HResult.MQ_ERROR_ILLEGAL_FORMATNAME,
            )
        if LocalFormat.looks_like_format_name(name):
            fmt = LocalFormat.parse(name)
            state: QueueState | None
            if fmt.kind == "direct":
                assert fmt.path is not None
                if not self._is_local(fmt.computer):
                    raise _err(
                        f"{quoted(name)} is not a queue of this queue manager",
                        HResult.MQ_ERROR_QUEUE_NOT_FOUND,
                    )
                state = self._queues.get(fmt.path.key)
            elif fmt.guid != (fmt.guid if fmt.kind == "public" else self.guid):
                raise _err(
                    f"{quoted(name)} is not a queue of this queue manager", HResult.MQ_ERROR_QUEUE_NOT_FOUND
                )
            elif fmt.kind == "private":
                state = self._by_number.get(fmt.number)
            elif fmt.kind == "machine":
                state = self._system.get(fmt.suffix)
            else:
                state = next(
                    (
                        s
                        for s in self._queues.values()
                        if s.kind == "public" and s.props.queue_guid == fmt.guid
                    ),
                    None,
                )
            if state is None:
                raise _err(f"queue {quoted(name)} not found", HResult.MQ_ERROR_QUEUE_NOT_FOUND)
            if fmt.suffix == "JOURNAL" and state.kind != "system":
                if state.journal is None:
                    raise _err(f"queue {quoted(name)} has no journal", HResult.MQ_ERROR_ILLEGAL_FORMATNAME)
                return state.journal, None
            return state, fmt.subqueue
        path = QueuePath.parse(name)
        if path.computer.lower() in ("private$", "system$"):
            # "private$\q" parsed as a public queue on a computer called "private$".
            raise _err(
                f"{quoted(name)}: a path name starts with the computer name ({quoted('.' + chr(92) + name)}"
                " for this one)",
                HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME,
            )
        if not self._is_local(path.computer):
            raise _err(
                f"{quoted(name)} is not a queue of this queue manager", HResult.MQ_ERROR_QUEUE_NOT_FOUND
            )
        state = self._queues.get(path.key)
        if state is None:
            raise _err(f"queue {quoted(name)} not found", HResult.MQ_ERROR_QUEUE_NOT_FOUND)
        if path.subqueue is not None and path.subqueue.upper() == "JOURNAL":
            # The path's ";JOURNAL" names the journal, as in the format name format_name() gives
            # for it ("append the subqueueName at the end": PRIVATE=...;JOURNAL).
            if state.journal is None:
                raise _err(f"queue {quoted(name)} has no journal", HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME)
            return state.journal, None
        return state, path.subqueue

    def format_name(self, name: str) -> str:
        """The format name of the queue ``name`` (path or format name) names."""
        with self._lock:
            state, subqueue = self._resolve(name)
            return subqueue_format(state, subqueue)

    # ------------------------------------------------------------------ system queues
    @property
    def dead_letter_queue(self) -> Queue:
        """The system dead-letter queue (``MACHINE=<guid>;DEADLETTER``)."""
        return self._system_handle("DEADLETTER")

    @property
    def transactional_dead_letter_queue(self) -> Queue:
        """The system transactional dead-letter queue (``MACHINE=<guid>;DEADXACT``)."""
        return self._system_handle("DEADXACT")

    @property
    def machine_journal(self) -> Queue:
        """The system journal queue (``MACHINE=<guid>;JOURNAL``)."""
        return self._system_handle("JOURNAL")

    def _system_handle(self, name: str) -> Queue:
        with self._lock:
            self._check_open()
            return self._handle(self._system[name], None)

    def internal_queue(self, name: str) -> Queue:
        """``order_queue$`` or ``notify_queue$``: for the protocol layers, not for applications."""
        with self._lock:
            self._check_open()
            state = self._internal.get(name.lower())
            if state is None:
                raise _err(f"no internal queue {quoted(name)}", HResult.MQ_ERROR_QUEUE_NOT_FOUND)
            return self._handle(state, None)

    # ------------------------------------------------------------------ batched sends
    def send_batch(self, sends: Sequence[SendItem]) -> list[MSMQError | None]:
        """Send each ``(queue, message, transaction)``; returns None or the ``MSMQError`` of each.

        Like ``queue.send(message, transaction)`` for each in turn (same checks, errors and
        semantics), but every valid send is enqueued under one lock acquisition and the recoverable
        ones are written in ONE store batch (one fsync); they become visible once durable.  A failing
        send does not affect the others.
        """
        return send_batch(self, sends)

    def send_many(self, queue: Queue, messages: Iterable[Message]) -> None:
        """``queue.send_many(messages)`` (as the remote client's ``send_many``)."""
        queue.send_many(messages)

    # ------------------------------------------------------------------ transactions
    def begin_transaction(self) -> Transaction:
        """A new internal transaction; use as a context manager (commit on exit, abort on error)."""
        self._check_open()
        return Transaction(self)

    # ------------------------------------------------------------------ quotas
    def _check_quota(self, state: QueueState, size: int) -> None:
        # [MS-MQDMPR] 3.1.7.1.9 Enqueue Message step 1: QM quota first (status 2), then queue quota
        # (status 1).  A local send reports both as MQ_ERROR_INSUFFICIENT_RESOURCES.
        if self.machine_quota is not None and self.total_bytes + size > self.machine_quota * 1024:
            raise QuotaExceededError(MACHINE_QUOTA_TEXT, None)
        if not state.fits_quota(size):
            raise QuotaExceededError(
                queue_quota_text(state.props.path_name, state.props.quota),
                0x8003,
            )

    @property
    def total_bytes(self) -> int:
        """Bytes of all messages the queue manager holds (what the machine quota limits)."""
        return self._bytes.value  # kept by every queue's indexes (index.ByteTotal)


def _check_stored(sm: StoredMessage) -> None:
    """ValueError unless the facts stored beside a packet have their types and ranges (a row the
    store's schema declares can still hold other values: SQLite's columns are not typed)."""
    _, lookup_id, packet, priority, arrived, subqueue, aborts, moves, expires, moved = sm
    if (
        type(lookup_id) is not int
        or type(packet) is not bytes
        or not 0 <= lookup_id < 1 << 64
        or not facts_have_their_types(priority, arrived, subqueue, aborts, moves, expires, moved)
    ):
        raise ValueError(f"its stored facts are not of their types: {sm._replace(packet=b'')!r}")
