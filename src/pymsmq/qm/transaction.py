"""Internal (single-phase) transactions: [MS-MQDMPR] 3.1.1.14 Transaction, 3.1.4.3-3.1.4.5.

* A transactional send enqueues a position that nobody sees (PENDING) until commit ([MS-MQDMPR]
  3.1.7.1.9 Enqueue Message step 5); at commit its messages arrive, after every message already
  in the queue, in send order: a transaction's messages are grouped, groups in commit order, as
  MSMQ documents (``_place_at_commit``).
* A transactional receive locks the position (invisible to other readers); commit deletes it,
  abort returns it in place (Message Position Available) and increments its abort count.
* A transactional move locks the source position; commit moves it (subqueue, move count + 1).
* Commit is one ``store.apply(batch)``: durable and atomic; nothing of an uncommitted
  transaction is ever written, so a crash rolls it back and releases its locks by construction.
* Commit or abort of a finished transaction: MQ_ERROR_TRANSACTION_SEQUENCE ([MC-MQAC] 3.8.4.1).
* A transaction let go of without commit or abort (its last reference dropped) is aborted: "If you
  release the transaction object without calling Commit or Abort, the transaction is aborted for
  you" (MSMQ, Aborting the Transaction).  Its locks went with the process only; a long-running one
  kept the messages it received invisible, and its sends in memory, until the queue manager
  closed.  The abort runs on the queue manager's events thread (``_abort_dropped``), soon after.

``with qm.begin_transaction() as tx:`` commits on normal exit and aborts on an exception.
"""

from __future__ import annotations

import functools
import itertools
import logging
import uuid
import weakref
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.qm.index import AVAILABLE, Entry, MessageIndex
from pymsmq.qm.lifecycle import NACK_BAD_DST_Q, Effects
from pymsmq.qm.store.base import Batch, MessageKey, MessageUpdate

if TYPE_CHECKING:
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.queue_state import QueueState

__all__ = ["Transaction"]

log = logging.getLogger("pymsmq.qm")

#: Commit tickets: the order in which commits placed their messages (``_place_at_commit``).
_TICKETS: Final = itertools.count(1)

SEND: Final = 0
RECEIVE: Final = 1
MOVE: Final = 2

ACTIVE: Final = "active"
COMMITTING: Final = "committing"
COMMITTED: Final = "committed"
ABORTED: Final = "aborted"
COMMIT_EFFECTS: Final = "acknowledgements, NACKs and journal copies of a committed transaction"


@dataclass(slots=True)
class _Operation:
    # [MS-MQDMPR] 3.1.1.13 TransactionalOperation: OperationType, position, target (Move only).
    kind: int
    queue: QueueState
    index: MessageIndex
    entry: Entry
    target: str | None = None


def moved_update(
    queue: QueueState, entry: Entry, target: str | None, move_count: int, now: float
) -> MessageUpdate:
    """The stored facts of a message moved to ``target`` (a subqueue name, None: the queue) at ``now``."""
    key = MessageKey(queue.queue_id, entry.lookup_id)
    return MessageUpdate(key, subqueue=target or "", abort_count=0, move_count=move_count, last_move_time=now)


def land_move(
    qm: QueueManager, queue: QueueState, entry: Entry, target: str | None, move_count: int, now: float
) -> None:
    """Under the lock: ``entry``, out of its source index, takes its place in ``target``.

    PROPID_M_ABORT_COUNT: "If a message is moved to or from a subqueue, its PROPID_M_ABORT_COUNT
    property is reset to 0" (MoveCounter is never reset); PROPID_M_LAST_MOVE_TIME becomes ``now``
    ([MS-MQRR] 2.2.5.3 SubqueueHeader: LastMoveTime, the time of the last move).  [MS-MQDMPR]
    3.1.4.4: the new position is Available; a purge that came while the move was under way
    (PurgePending, 3.1.7.1.7) ended with the old position.  A deadline that passed meanwhile
    applies now.
    """
    message = qm._message_of(entry)
    message.move_count = move_count
    message.abort_count = 0
    message.last_move_time = now
    entry.subqueue = target or ""
    entry.state = AVAILABLE  # already out of the source index's counters
    entry.purge_pending = False
    queue.index_for(target).add(entry)
    qm._life.check_available(queue, entry)


class _Progress:
    # A transaction's state, apart from the Transaction (what aborts a dropped one needs of it).
    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = ACTIVE


class Transaction:
    """An internal transaction of one queue manager (``qm.begin_transaction()``)."""

    def __init__(self, qm: QueueManager) -> None:
        self._qm = qm
        #: [MS-MQDMPR] 3.1.1.14 Transaction.Identifier.
        self.id = uuid.uuid4()
        self._progress = _Progress()
        self._ops: list[_Operation] = []
        # Nothing of the queue manager refers to a transaction (its operations refer to entries,
        # not back): dropped by its user, it is aborted (the module docstring).
        weakref.finalize(self, _abort_dropped, qm, self._progress, self._ops).atexit = False
        # TransactionalMessageSequenceIdentifier of the messages it sends (assigned on first send).
        self._xact_id: ObjectId | None = None
        # Windows TTBR mode (QueueManager.windows_transaction_ttbr): the first message's TTBR.
        self._first_ttbr: int | None = None
        #: (queue id, lookup id) of the messages marked rejected in it (``Queue.mark_rejected``):
        #: received in it, they leave with MQMSG_CLASS_NACK_RECEIVE_REJECTED at commit.
        self._rejected: set[tuple[int, int]] = set()

    def __repr__(self) -> str:
        return f"<Transaction {self.id} {self.state}, {len(self._ops)} operations>"

    @property
    def state(self) -> str:
        """ "active", "committing", "committed" or "aborted"."""
        return self._progress.state

    @state.setter
    def state(self, value: str) -> None:
        self._progress.state = value

    @property
    def active(self) -> bool:
        """True until commit or abort."""
        return self.state == ACTIVE

    def _check_usable(self, qm: QueueManager) -> None:
        # Also under the lock right before a receive or move locks a message for this transaction:
        # a call that waited while another thread committed or aborted it must not take one (it
        # stayed locked by a finished transaction, and a restart delivered it a second time).
        if qm is not self._qm:
            raise MSMQError(
                "the transaction belongs to another queue manager", HResult.MQ_ERROR_TRANSACTION_USAGE
            )
        if self.state != ACTIVE:
            raise MSMQError(f"the transaction is {self.state}", HResult.MQ_ERROR_TRANSACTION_SEQUENCE)

    def _add(
        self, kind: int, queue: QueueState, index: MessageIndex, entry: Entry, target: str | None = None
    ) -> None:
        self._ops.append(_Operation(kind, queue, index, entry, target))
        if kind != SEND and entry.durable:
            in_flight = self._qm._store.in_flight
            if in_flight is not None:  # (a crash now aborts it: its abort is counted at the next open)
                message = self._qm._message_of(entry)
                in_flight.begin(queue.queue_id, entry.lookup_id, message.abort_count, message.move_count)

    # --- commit ([MS-MQDMPR] 3.1.4.3 Prepare + 3.1.4.4 Commit)
    def commit(self) -> None:
        """Make every send visible, delete every received message, perform every move; durably."""
        qm = self._qm
        batch = Batch()
        with qm._lock:
            if self.state != ACTIVE:
                raise MSMQError(f"the transaction is {self.state}", HResult.MQ_ERROR_TRANSACTION_SEQUENCE)
            self.state = COMMITTING
            # A send to a local queue reached it at send, as a pending message ([MS-MQDMPR]
            # 3.1.4.3): no TimeToReachQueue applies at commit.  "If the queue is local, the message
            # will always reach it" (System.Messaging Message.TimeToReachQueue); a commit checked
            # it, and with SentTime in whole seconds a TTRQ of 0 dropped every message (outside QA,
            # 2026-11-27).
            now = qm._clock()
            sends = [op for op in self._ops if op.kind == SEND and not op.queue.deleted]
            tickets: list[tuple[QueueState, int]] = []
            try:
                tickets = _place_at_commit(qm, sends, now)
                written, own, prepared = self._prepare_write(qm, sends, batch, now)
            except BaseException:
                _end_commits(tickets)
                self.state = ACTIVE
                raise
        refused = None
        try:
            refused = qm._apply_with(batch, prepared)
        except BaseException:
            with qm._lock:
                _end_commits(tickets)
                qm._drop_prepared(prepared, COMMIT_EFFECTS)
                self.state = ACTIVE
            self.abort()
            raise
        with qm._lock:
            interrupted = _wait_for_earlier_commits(tickets)
            try:
                self._committed(qm, written, own, prepared, refused, now)
            finally:
                _end_commits(tickets)
        if interrupted is not None:
            raise interrupted  # (a Ctrl-C while waiting: the commit is done and visible)

    def _prepare_write(
        self, qm: QueueManager, sends: list[_Operation], batch: Batch, now: float
    ) -> tuple[list[_Operation], list[tuple[_Operation, Effects]], Effects]:
        # Under the lock, the messages placed: the commit's write into ``batch``; returns the
        # operations in it, and the side effects prepared to be stored with it (all, and by operation).
        # [MS-MQDMPR] 3.1.4.3: the first operation's message is FirstInTransaction, the last one's
        # LastInTransaction (applied to the messages this transaction sends).
        for i, op in enumerate(sends):
            message = op.entry.message
            if message is not None:
                message.is_first_in_transaction = i == 0
                message.is_last_in_transaction = i == len(sends) - 1
        written: list[_Operation] = []  # (those whose queue was not deleted: in the write)
        for op in self._ops:
            if op.queue.deleted:
                continue
            written.append(op)
            entry = op.entry
            if op.kind == SEND:
                batch.insert.append(qm._stored(op.queue, entry))
            elif op.kind == RECEIVE:
                if entry.durable:
                    batch.delete.append(MessageKey(op.queue.queue_id, entry.lookup_id))
            elif entry.durable:
                moves = qm._message_of(entry).move_count + 1
                batch.update.append(moved_update(op.queue, entry, op.target, moves, now))
        # Its acknowledgements, NACKs and journal copies go in the commit's write (Effects): in a
        # second write, a kill between the two kept the commit and lost them.  Kept by operation
        # too: those of an operation whose queue is deleted while the write is under way are taken
        # back after it (the deletion decided that message's fate).
        prepared = Effects()
        own: list[tuple[_Operation, Effects]] = []
        for op in written:
            if self._has_effects(qm, op):
                op_effects = qm._prepared(functools.partial(self._effects, qm, op), COMMIT_EFFECTS)
                own.append((op, op_effects))
                prepared.absorb(op_effects)
        return written, own, prepared

    def _committed(
        self,
        qm: QueueManager,
        written: list[_Operation],
        own: list[tuple[_Operation, Effects]],
        prepared: Effects,
        refused: MSMQError | None,
        now: float,
    ) -> None:
        # Under the lock, once the commit's write is durable and every commit placed before it in
        # its queues is visible: its messages become visible, its receives and moves take effect.
        life = qm._life
        touched: set[int] = set()
        effects = Batch()  # (those of sends whose queue was deleted while the commit was written)
        for op in written:
            if op.queue.deleted and op.kind == SEND:  # deleted meanwhile: its row goes too
                effects.delete.append(MessageKey(op.queue.queue_id, op.entry.lookup_id))
        if refused is None:
            for op, op_effects in own:
                if op.queue.deleted:
                    qm._taken_back(op_effects, None, COMMIT_EFFECTS)
        qm._shown(prepared, refused, COMMIT_EFFECTS)
        for op in self._ops:
            entry = op.entry
            entry.allow_peek = False
            if op.kind == SEND and op.queue.deleted:
                # Bad destination: the queue was deleted before the commit.
                op.index.remove(entry)
                life.undeliverable(entry.message, NACK_BAD_DST_Q, effects)
                continue
            if op.queue.deleted:
                continue
            touched.add(id(op.queue))
            if op.kind == SEND:
                entry.durable = True
                op.index.set_state(entry, AVAILABLE)
                life.check_available(op.queue, entry)
            elif op.kind == RECEIVE:
                op.index.remove(entry)
                life.left(entry)
            else:
                op.index.remove(entry)
                land_move(qm, op.queue, entry, op.target, qm._message_of(entry).move_count + 1, now)
        self.state = COMMITTED
        _let_go(qm, self._ops)
        for op in self._ops:
            if id(op.queue) in touched:
                touched.discard(id(op.queue))
                qm._notify(op.queue)
        self._ops.clear()
        # The transaction is durable: a failure to store these must not make commit() raise
        # (the caller would think it failed, and send or receive again).
        qm._store_effects(effects, COMMIT_EFFECTS)
        qm._sweep()

    def _rejected_op(self, op: _Operation) -> bool:
        return bool(self._rejected) and (op.queue.queue_id, op.entry.lookup_id) in self._rejected

    def _has_effects(self, qm: QueueManager, op: _Operation) -> bool:
        # Does ``_effects`` have anything to build for ``op``?  (Most operations have nothing.)
        message = op.entry.message
        if op.kind == SEND:
            return qm._life.has_arrival_events(op.queue, message)
        if op.kind == RECEIVE:
            return self._rejected_op(op) or qm._life.has_receipt(op.queue, message)
        return False

    def _effects(self, qm: QueueManager, op: _Operation, effects: Batch) -> None:
        # Under the lock, before the commit's write: the effects of one of its operations
        # ([MS-MQDMPR] 3.1.4.4 Commit: arrival events of a send, a receive's acknowledgement and
        # journal copies).
        life = qm._life
        message = op.entry.message
        if op.kind == SEND:
            life.arrived(op.queue, message, effects)
        elif op.kind == RECEIVE:
            if self._rejected_op(op):
                # MQMarkMessageRejected: "When a message marked as rejected is received, a
                # negative acknowledgement (Nack) with the message class
                # MQMSG_CLASS_NACK_RECEIVE_REJECTED is generated (if a Nack is requested)
                # when the transaction is committed" ([MS-MQDMPR] 3.1.1.13 DequeueReason).
                life.rejected(op.queue, message, effects)
            elif life.has_receipt(op.queue, message):
                life.receipt(op.queue, message, effects)

    # --- abort ([MS-MQDMPR] 3.1.4.5)
    def abort(self) -> None:
        """Drop every send; return every received or moved message in place (abort count + 1)."""
        if not _abort(self._qm, self._progress, self._ops):
            raise MSMQError(f"the transaction is {self.state}", HResult.MQ_ERROR_TRANSACTION_SEQUENCE)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.state != ACTIVE:
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _abort(qm: QueueManager, progress: _Progress, ops: list[_Operation]) -> bool:
    # Transaction.abort, of a transaction's state and operations; False if it was not active.
    batch = Batch()
    with qm._lock:
        if progress.state != ACTIVE:
            return False
        progress.state = ABORTED
        held = list(ops)
        for op in ops:
            entry = op.entry
            entry.allow_peek = False
            if op.queue.deleted:
                continue
            if op.kind == SEND:
                op.index.remove(entry)
                continue
            if not entry.purge_pending:  # (a purged one is deleted: no count to keep)
                message = qm._message_of(entry)
                message.abort_count += 1
                if entry.durable:
                    key = MessageKey(op.queue.queue_id, entry.lookup_id)
                    batch.update.append(MessageUpdate(key, abort_count=message.abort_count))
            qm._put_back(op.queue, op.index, entry, batch)
        ops.clear()
    if batch:
        qm._apply(batch)
    with qm._lock:
        _let_go(qm, held)  # (after the abort counts are stored)
        qm._sweep()
    return True


def _let_go(qm: QueueManager, ops: list[_Operation]) -> None:
    # The stored messages a committed or aborted transaction held are no longer in flight.
    in_flight = qm._store.in_flight
    if in_flight is not None:
        in_flight.end(
            [(op.queue.queue_id, op.entry.lookup_id) for op in ops if op.kind != SEND and op.entry.durable]
        )


def _abort_dropped(qm: QueueManager, progress: _Progress, ops: list[_Operation]) -> None:
    # The finalizer of a Transaction: it may run in any thread, in the middle of anything (a
    # garbage collection), so it takes no lock; the abort is handed to the events thread.
    if progress.state == ACTIVE and not qm.closed:
        qm._dispatcher.hand_over(lambda: _abort_when_open(qm, progress, ops))


def _abort_when_open(qm: QueueManager, progress: _Progress, ops: list[_Operation]) -> None:
    # On the events thread: a queue manager closed meanwhile wrote nothing of the transaction.
    if not qm.closed:
        try:
            _abort(qm, progress, ops)
        except MSMQError as exc:  # closed between the look and the abort, or a store failure
            log.warning("abort of a transaction its user let go of failed: %s", exc)


def _place_at_commit(qm: QueueManager, sends: list[_Operation], now: float) -> list[tuple[QueueState, int]]:
    """Under the lock, at commit: the messages a transaction sends arrive now, after every message
    already in their queues, in the order it sent them (lookup id and arrival time).

    "All of the messages associated with a given transaction are grouped together ... the order of
    the transactional message groups in the destination queue depends on when the sending
    application committed the transactions" (MSMQ, Ordering of Messages in a Transactional Queue):
    two transactions sending to one queue at once interleaved their messages in send order (outside
    QA, 2026-11-28).  [MS-MQDMPR]'s MessagePositionList is "ordered by arrival time within
    priority", and a transactional message arrives when its transaction commits (a remote queue
    manager gets it only then); docs/spec-decisions.md.  Until then their ids were above every real
    one (``index.uncommitted_lookup_id``), in no queue's order: each takes its real one now
    (``MessageIndex.place``, an append).
    """
    by_queue: dict[int, tuple[QueueState, list[_Operation]]] = {}
    for op in sends:
        by_queue.setdefault(id(op.queue), (op.queue, []))[1].append(op)
    for state, ops in by_queue.values():
        for op in ops:
            entry = op.entry
            op.index.place(entry, qm._next_lookup(state))
            entry.message.lookup_id = entry.lookup_id
    for op in sends:
        op.entry.message.arrived_time = now
    # The commit's ticket in each of those queues: its messages become visible after those of the
    # commits placed there before it (``_wait_for_earlier_commits``).
    ticket = next(_TICKETS)
    tickets = []
    for state, _ in by_queue.values():
        state.commits.append(ticket)
        tickets.append((state, ticket))
    return tickets


def _wait_for_earlier_commits(tickets: list[tuple[QueueState, int]]) -> BaseException | None:
    """Under the lock, after the commit's write: wait until the commits placed before it in its
    queues have made their messages visible, so that messages become visible in their queue's
    order (outside QA: two commits whose writes ended in the other order showed the later-placed
    messages first, and a cursor or a lookup-id walk that had passed them never saw the earlier
    ones).  The earlier commits are writing (or have written) already and never wait for a later
    one: no cycle.  A signal handler's exception (Ctrl-C) ends the wait and is returned, to be
    raised once the commit is visible (a commit whose write was durable must not be left half
    done)."""
    try:
        for state, ticket in tickets:
            commits = state.commits
            while commits and commits[0] < ticket:
                state.cond.wait()
    except BaseException as exc:  # (re-raised by the caller once the commit is done)
        return exc
    return None


def _end_commits(tickets: list[tuple[QueueState, int]]) -> None:
    """Under the lock: the commit's messages are visible (or it failed): later commits may go on."""
    for state, ticket in tickets:
        if ticket in state.commits:
            state.commits.remove(ticket)
            state.cond.notify_all()
