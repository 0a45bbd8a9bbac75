"""Queue handles ([MS-MQDMPR] 3.1.1.16 OpenQueueDescriptor, [MC-MQAC] 3.11 MSMQQueue) and cursors.

A ``Queue`` is what ``qm.queue(name)`` / ``qm.create_queue(path)`` return: send, receive, peek,
cursors ([MS-MQDMPR] 3.2), the lookup-id family ([MS-MQDMPR] 3.1.7.1.13), purge, subqueues and
moves.  Timeouts are seconds: 0 = no wait (MQ_ERROR_MESSAGE_NOT_FOUND), a positive number
(MQ_ERROR_IO_TIMEOUT), ``None`` = wait forever.

Transaction arguments: ``None`` or MQ_NO_TRANSACTION (0); a ``Transaction``; MQ_SINGLE_MESSAGE
(3) = a one-message internal transaction; MQ_MTS_TRANSACTION (1) = the caller's ambient
transaction, of which an embedded caller has none, so it means "none" ([MC-MQAC] 3.17.4.1.48 step 4
[WIN]); MQ_XA_TRANSACTION (2) is refused (``pymsmq.model.xa_transaction``).  Transactional queues
accept only transactional sends and the other queues only non-transactional ones; a transactional
receive needs a transactional queue (MQ_ERROR_TRANSACTION_USAGE).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, ClassVar, Final, Self

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE
from pymsmq.model.ids import ObjectId, new_object_id
from pymsmq.model.message import Message
from pymsmq.model.names import validate_subqueue_name
from pymsmq.model.packet_mapping import (
    NEAR_PACKET_LIMIT,
    canonical_queues,
    check_packet_size,
    check_unencoded,
)
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.model.quota_error import QuotaExceededError
from pymsmq.model.xa_transaction import MQ_XA_TRANSACTION_VALUE, xa_transaction_refused
from pymsmq.qm.access import _ALL, _PEEK, _RECEIVE, _SEND, _err
from pymsmq.qm.completed import Completed
from pymsmq.qm.cursor import Cursor
from pymsmq.qm.hold import Hold, remove_taken
from pymsmq.qm.index import AVAILABLE, LOCKED, PENDING, Entry, MessageIndex, uncommitted_lookup_id
from pymsmq.qm.lifecycle import ARRIVAL_EVENTS, NACK_BAD_DST_Q, NACK_Q_PURGED, Effects
from pymsmq.qm.lookup_ids import LookupIdOps
from pymsmq.qm.matching import MatchingReads
from pymsmq.qm.notifications import Notification, enable_notification, receive_async
from pymsmq.qm.queue_state import subqueue_format
from pymsmq.qm.send_batch import receive_many, send_many
from pymsmq.qm.store.base import Batch, MessageKey
from pymsmq.qm.timers import expiry_deadline
from pymsmq.qm.transaction import RECEIVE, SEND, Transaction
from pymsmq.qm.waiters import normalize_timeout, not_found, wait_for

if TYPE_CHECKING:
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.queue_state import QueueState

__all__ = ["Cursor", "Queue", "own_cursor"]

_SINGLE: Final = object()
_new: Final = object.__new__


def _queued_copy(message: Message) -> Message:
    # The queue's own copy of a sent message: equal to ``message.copy()``, but built attribute by
    # attribute rather than by assigning a copied ``__dict__``.  CPython (3.11+) then keeps the values
    # inline in the object and makes no dict until someone asks for ``__dict__``: one object fewer per
    # queued message for the cyclic garbage collector to track and traverse, and faster attribute
    # reads for the receiver.
    m: Message = _new(Message)
    for name, value in message.__dict__.items():
        setattr(m, name, value)
    return m


class Queue(LookupIdOps, MatchingReads):
    """An open queue (or subqueue, or journal).  ``close()`` it, or use it as a context manager."""

    __slots__ = (
        "__weakref__",
        "_access",
        "_closed",
        "_closed_by",
        "_cursor",
        "_qm",
        "_share",
        "_state",
        "_subqueue",
    )
    _qm: QueueManager
    _state: QueueState
    _subqueue: str | None
    _access: int
    _share: int
    _closed: bool
    _closed_by: MSMQError | None
    _cursor: Cursor | None
    #: True for a handle that sends to several queues (``MultipleDestination``).
    _fans_out: ClassVar[bool] = False

    def __init__(self) -> None:
        raise TypeError("use QueueManager.queue() or QueueManager.create_queue()")

    @classmethod
    def _open(
        cls, qm: QueueManager, state: QueueState, subqueue: str | None, access: int | None, share: int
    ) -> Queue:
        if access is None:
            access = _ALL
        elif (
            not isinstance(access, int)
            or isinstance(access, bool)
            or access not in (_RECEIVE, _SEND, _PEEK, _RECEIVE | _SEND | _PEEK)
        ):
            # 0x81/0xA0 (MQ_ADMIN_ACCESS) open an outgoing queue; a local queue has none.  (1.0 and
            # True compare equal to MQ_RECEIVE_ACCESS but are no access mode.)
            raise _err(f"unsupported access mode {access!r}", HResult.MQ_ERROR_UNSUPPORTED_ACCESS_MODE)
        if not isinstance(share, int) or isinstance(share, bool) or share not in (0, 1):
            raise _err(f"invalid share mode {share!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
        if access == _SEND and share != 0:
            # [MC-MQAC] 3.10.4.1.34 step 2: send access with a share mode other than MQ_DENY_NONE.
            raise _err("MQ_SEND_ACCESS requires MQ_DENY_NONE", HResult.MQ_ERROR_INVALID_PARAMETER)
        if subqueue is not None:
            validate_subqueue_name(subqueue)
        # [MS-MQDMPR] 3.1.7.1.5 step 5 / [MC-MQAC] 2.2.2.2: MQ_DENY_RECEIVE_SHARE needs no other open
        # descriptor; a receiver cannot join a queue someone opened with MQ_DENY_RECEIVE_SHARE.
        # Closing a handle takes it out of ``handles`` (and ``exclusive_handles``), so each test is
        # O(1) however many handles are open.
        if share == 1:
            refused = any(not other._closed for other in state.handles)
        else:
            refused = bool(access & _RECEIVE) and any(not o._closed for o in state.exclusive_handles)
        if refused:
            raise _err("the queue is open for exclusive receive", HResult.MQ_ERROR_SHARING_VIOLATION)
        handle = cls._bare(qm, state, subqueue, access, share)
        state.handles.add(handle)
        if share == 1:
            state.exclusive_handles.add(handle)
        return handle

    @classmethod
    def _bare(
        cls, qm: QueueManager, state: QueueState, subqueue: str | None, access: int, share: int
    ) -> Self:
        # A handle object with its fields set, not yet among its queue's handles.
        handle = object.__new__(cls)
        handle._qm = qm
        handle._state = state
        handle._subqueue = subqueue
        handle._access = access
        handle._share = share
        handle._closed = False
        handle._closed_by = None
        handle._cursor = None
        return handle

    def __repr__(self) -> str:
        return f"<Queue {self.format_name}{' closed' if self._closed else ''}>"

    # ------------------------------------------------------------------ description
    @property
    def format_name(self) -> str:
        """The queue's format name (PRIVATE=..., PUBLIC=..., MACHINE=...;..., DIRECT=...;sub)."""
        return subqueue_format(self._state, self._subqueue)

    @property
    def queue_format_name(self) -> str:
        """The format name of the queue (a subqueue handle's: its queue's; a journal's: its own)."""
        return self._state.format_name

    @property
    def path_name(self) -> str:
        """The queue's path name (with ``;subqueue`` for a subqueue handle)."""
        path = self._state.props.path_name
        return f"{path};{self._subqueue}" if self._subqueue else path

    @property
    def properties(self) -> QueueProperties:
        """The queue's current properties (MQ_ERROR_QUEUE_DELETED once it is deleted)."""
        state = self._state
        if state.deleted:
            raise _err("the queue was deleted", HResult.MQ_ERROR_QUEUE_DELETED)
        return state.props

    @property
    def label(self) -> str:
        """PROPID_Q_LABEL (MQ_ERROR_QUEUE_DELETED once the queue is deleted)."""
        return self.properties.label

    @property
    def transactional(self) -> bool:
        """PROPID_Q_TRANSACTION."""
        return self._state.props.transactional

    @property
    def subqueue_name(self) -> str | None:
        """The subqueue this handle reads, or None for the queue itself."""
        return self._subqueue

    @property
    def access(self) -> int:
        """The MQ_*_ACCESS bits of this handle."""
        return self._access

    @property
    def share_mode(self) -> int:
        """MQ_DENY_NONE (0) or MQ_DENY_RECEIVE_SHARE (1)."""
        return self._share

    @property
    def is_open(self) -> bool:
        """False after ``close`` or once the queue is deleted."""
        return not self._closed and not self._state.deleted

    @property
    def message_count(self) -> int:
        """Messages in this queue (or subqueue), locked ones included (MQ_ERROR_INVALID_HANDLE once
        the handle is closed, MQ_ERROR_QUEUE_DELETED once the queue is deleted)."""
        with self._qm._lock:
            self._check(0)
            return len(self._index())

    def __len__(self) -> int:
        return self.message_count

    @property
    def journal(self) -> Queue:
        """A handle on this queue's journal queue ([MS-MQDMPR] 3.1.1.2 JournalQueueReference)."""
        with self._qm._lock:
            self._check(0)
            journal = self._state.journal
            if journal is None or self._subqueue:
                raise _err("this queue has no journal", HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION)
            return Queue._open(self._qm, journal, None, None, 0)

    def subqueue(self, name: str) -> Queue:
        """A handle on subqueue ``name`` of this queue (subqueues exist implicitly)."""
        with self._qm._lock:
            self._check(0)
            if self._state.kind in ("journal", "system"):
                raise _err(
                    "system and journal queues have no subqueues", HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
                )
            return Queue._open(self._qm, self._state, validate_subqueue_name(name), None, 0)

    @property
    def subqueue_names(self) -> list[str]:
        """Names of the subqueues that hold messages (PROPID_MGMT_QUEUE_SUBQUEUE_NAMES)."""
        with self._qm._lock:
            self._check(0)
            return sorted(name for name, index in self._state.subqueues.items() if len(index))

    @property
    def subqueue_count(self) -> int:
        """Number of subqueues that hold messages (PROPID_MGMT_QUEUE_SUBQUEUE_COUNT)."""
        return len(self.subqueue_names)

    def close(self) -> None:
        """Close the handle (idempotent); later calls raise MQ_ERROR_INVALID_HANDLE."""
        self.close_with(None)

    def close_with(self, error: MSMQError | None) -> None:
        """Close the handle; later calls raise ``error`` (None: MQ_ERROR_INVALID_HANDLE).  A server
        that shuts down closes its clients' handles with MQ_ERROR_SERVICE_NOT_AVAILABLE."""
        with self._qm._lock:
            if not self._closed:
                self._closed = True
                self._closed_by = error
                state = self._state
                state.handles.discard(self)
                state.exclusive_handles.discard(self)
                state.cond.recheck(self)
                if self._subqueue and state.subqueues:
                    state.forget_empty_subqueues({h._subqueue for h in state.handles if h._subqueue})

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ checks
    def _index(self) -> MessageIndex:
        return self._state.index_for(self._subqueue)

    def _check(self, need: int) -> None:
        if self._closed:
            if self._closed_by is not None:
                raise MSMQError(self._closed_by.message, self._closed_by.hresult)
            raise _err("the queue handle is closed", HResult.MQ_ERROR_INVALID_HANDLE)
        if self._qm._closed:
            raise _err("the queue manager is closed", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
        if self._state.deleted:
            raise _err("the queue was deleted", HResult.MQ_ERROR_QUEUE_DELETED)
        if need and not self._access & need:
            raise _err("the queue was not opened for this access", HResult.MQ_ERROR_ACCESS_DENIED)

    def _transaction(self, transaction: object, receive: bool) -> Transaction | object | None:
        if transaction is None:
            return None
        if type(transaction) is Hold and receive:
            return transaction
        if isinstance(transaction, Transaction):
            transaction._check_usable(self._qm)
            if not self._state.transactional:
                self._check(0)  # a closed handle is said first, as by the remote client
                raise _err(
                    "transactional operation on a non-transactional queue", HResult.MQ_ERROR_TRANSACTION_USAGE
                )
            return transaction
        if isinstance(transaction, int) and not isinstance(transaction, bool):
            if transaction in (0, 1):  # MQ_NO_TRANSACTION, and MTS (no ambient transaction here)
                return None
            if transaction == MQ_XA_TRANSACTION_VALUE:
                raise xa_transaction_refused()
            if transaction == 3:  # MQ_SINGLE_MESSAGE
                if receive:
                    return None
                if not self._state.transactional:
                    self._check(0)
                    raise _err(
                        "MQ_SINGLE_MESSAGE to a non-transactional queue", HResult.MQ_ERROR_TRANSACTION_USAGE
                    )
                return _SINGLE
        raise _err(f"invalid transaction argument {transaction!r}", HResult.MQ_ERROR_INVALID_PARAMETER)

    # ------------------------------------------------------------------ send
    def send(self, message: Message, transaction: Transaction | int | None = None) -> None:
        """Send ``message`` ([MS-MQDMPR] 3.1.7.1.27 Enqueue Message To An Open Queue).

        Sets ``message.id``, ``sent_time``, ``source_machine_guid`` and ``destination_queue``.
        A recoverable message (or a committed transactional one) is durable when this returns.
        """
        if not isinstance(message, Message):
            raise _err("send needs a Message", HResult.MQ_ERROR_INVALID_PARAMETER)
        message.validate()
        if message.admin_queue is not None or message.response_queue is not None:
            canonical_queues(message)  # MQ_ERROR_ILLEGAL_FORMATNAME now, not when the packet is written
        qm = self._qm
        state = self._state
        tx = None if transaction is None else self._transaction(transaction, receive=False)
        with qm._lock:
            if self._closed or qm._closed or state.deleted or not self._access & _SEND:
                self._check(_SEND)  # raises
            if self._subqueue is not None:
                raise _err(
                    "messages cannot be sent to a subqueue", HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
                )
            if state.kind in ("journal", "system"):
                raise _err("journal and dead-letter queues are read-only", HResult.MQ_ERROR_ACCESS_DENIED)
            if tx is None and state.props.transactional:
                raise _err(
                    "non-transactional send to a transactional queue", HResult.MQ_ERROR_TRANSACTION_USAGE
                )
            entry = self._enqueue(message, tx)
            if entry is None:
                return
            arrival = self._arrival(entry)
        refused = None
        try:
            batch = Batch(insert=[qm._stored(state, entry)])
            if arrival is None:
                qm._apply(batch)
            else:
                refused = qm._apply_with(batch, arrival)
        except BaseException:
            with qm._lock:
                state.index.remove(entry)
                if arrival is not None:
                    qm._drop_prepared(arrival, ARRIVAL_EVENTS)
            raise
        with qm._lock:
            self._on_durable(entry, arrival, refused)

    def _undelivered(self, entry: Entry, arrival: Effects | None, refused: MSMQError | None) -> None:
        """Under qm._lock: a recoverable send whose queue was deleted while it was written (it was
        not visible yet: the deletion passed it by) is undeliverable, as a transactional send to a
        queue deleted before its commit: NACK_BAD_DST_Q, its dead letter, its row deleted, and its
        arrival events taken back."""
        qm = self._qm
        state = self._state
        state.index.remove(entry)
        if arrival is not None:
            qm._taken_back(arrival, refused, ARRIVAL_EVENTS)
        late = Batch(delete=[MessageKey(state.queue_id, entry.lookup_id)])
        qm._life.undeliverable(entry.message, NACK_BAD_DST_Q, late)
        qm._store_effects(late, "the undeliverable send's deletion, NACK and dead letter")

    def _arrival(self, entry: Entry) -> Effects | None:
        """Under qm._lock: the arrival events of a recoverable send (ACK_REACH_QUEUE, trace report,
        source journal copy), prepared to be stored with it; None when it has none."""
        qm = self._qm
        state = self._state
        m = entry.message
        if not qm._life.has_arrival_events(state, m):
            return None
        return qm._prepared(lambda batch: qm._life.arrived(state, m, batch), ARRIVAL_EVENTS)

    def _on_durable(
        self, entry: Entry, arrival: Effects | None, refused: MSMQError | None, notify: bool = True
    ) -> None:
        """Under qm._lock: a durably written send becomes available, and its arrival events
        (``_arrival``, written with it unless ``refused``) are seen; undeliverable when its queue
        was deleted meanwhile (``_undelivered``).

        ``notify=False``: the caller wakes the queue's readers itself (once for many sends).
        """
        qm = self._qm
        state = self._state
        if state.deleted:
            self._undelivered(entry, arrival, refused)
            return
        entry.durable = True
        if state.index.get(entry.lookup_id) is entry:
            state.index.set_state(entry, AVAILABLE)
            if notify:
                state.cond.notify_all()
            if entry.expires_at is not None:
                qm._life.check_available(state, entry)
        if arrival is not None:
            qm._shown(arrival, refused, ARRIVAL_EVENTS)

    def send_many(self, messages: Iterable[Message], transaction: Transaction | int | None = None) -> None:
        """Send many messages (recoverable ones share one durable write); raises the first error.

        Every message's properties are validated first (an invalid one raises before anything is
        sent); then every valid message is tried, those that succeed are sent even when another
        fails (a queue name that is not a format name, a quota, ...), and the first error is
        raised; its ``failures`` lists every message not sent, as (index in the batch, error): the
        others were sent.  (A message refused for a quota has an ``id`` too, the one its NACK and
        dead letter correlate to: an id does not tell that a message was sent.)  Same semantics as
        the remote client's SEND_MANY.
        """
        send_many(self, messages, transaction)

    def _enqueue(
        self,
        message: Message,
        tx: Transaction | object | None,
        copy: bool = True,
        dest_set: str | None = None,
        same_id: ObjectId | None = None,
    ) -> Entry | None:
        # Under the lock.  Returns the entry when it still has to be written durably.  ``copy=False``:
        # the caller gives ``message`` away (send_batch.send_express), it is queued as it is.
        # ``dest_set``/``same_id``: a copy of a message sent to several queues (MultipleDestination):
        # the names it was sent to, and the id every copy shares.
        qm = self._qm
        state = self._state
        now = qm._clock()
        size = len(message.body) + len(message.extension) + 2 * len(message.label)  # message_size()
        # Fast path: with no machine quota and an INFINITE queue quota, _check_quota cannot refuse.
        if qm.machine_quota is not None or state.props.quota != INFINITE:
            try:
                qm._check_quota(state, size)
            except QuotaExceededError as exc:
                # Inside a Transaction the refusal only raises (docs/lifecycle.md): the transaction
                # may abort, and its sends would reach a remote queue only after the commit.
                if exc.msg_class is not None and not isinstance(tx, Transaction):
                    mid = qm._quota_rejected(state, message, exc.msg_class, tx is not None)
                    raise exc.with_message_id(mid) from None
                raise
        m = _queued_copy(message) if copy else message
        txn = None  # also None for MQ_SINGLE_MESSAGE
        if tx is not None:
            if isinstance(tx, Transaction):
                txn = tx
            # Transactional messages are recoverable and keep send order: priority is ignored
            # ([MS-MQDMPR] 3.1.7.1.32: BaseHeader.Flags.PR is 0 when a TransactionHeader is present).
            m.delivery = 1
            m.priority = 0
            if txn is not None:
                if txn._xact_id is None:
                    txn._xact_id = new_object_id(qm.guid, qm._next_ordinal())
                m.transaction_id = txn._xact_id
            else:
                m.transaction_id = new_object_id(qm.guid, qm._next_ordinal())
                m.is_first_in_transaction = m.is_last_in_transaction = True
        elif m.transaction_id is not None or m.is_first_in_transaction or m.is_last_in_transaction:
            # Outside a transaction a message has no transaction facts: TransactionId and
            # Is{First,Last}InTransaction are the queue manager's ([MC-MQAC] 3.17.4.1.68-70: read-only
            # properties), whatever the sender's message (or its packet's TransactionHeader) said.
            m.transaction_id = None
            m.is_first_in_transaction = m.is_last_in_transaction = False
        # [MC-MQAC] 3.17.4.1.48 steps 7, 9, 10, 11: source machine, new id, destination, sent time.
        # (new_object_id: the queue manager's GUID and a 32-bit ordinal are valid by construction.)
        guid = qm.guid
        if same_id is None:
            # qm._next_ordinal() without the call while inside the durably reserved block.
            ordinal = qm._ordinal
            if ordinal < qm._ordinal_reserved:
                qm._ordinal = ordinal = ordinal + 1
                ordinal &= 0xFFFFFFFF
            else:
                ordinal = qm._next_ordinal()
            m.id = mid = new_object_id(guid, ordinal)
        else:
            m.id = mid = same_id
        m.source_machine_guid = guid
        m.destination_queue = state.format_name
        if m.destination_format_name is not dest_set:
            # (a received copy of a message sent to several queues, sent again: to this one only)
            m.destination_format_name = dest_set
        # [MS-MQMQ] 2.2.19.2 SentTime is whole seconds.
        # (For a clock value 0 < now < 2**52, ``now // 1.0`` is ``float(int(now))``, without calls.)
        sent = m.sent_time = (
            now // 1.0 if type(now) is float and 0.0 < now < 4503599627370496.0 else float(int(now))
        )
        m.arrived_time = now
        if m.abort_count or m.move_count or m.last_move_time is not None:
            # a received message sent again starts from zero (never moved)
            m.abort_count = m.move_count = 0
            m.last_move_time = None
        # Step 12: TimeToReachQueue > TimeToBeReceived -> TimeToBeReceived = TimeToReachQueue.  The
        # default TimeToReachQueue (INFINITE, i.e. "not set") does not cancel a finite TimeToBeReceived.
        ttrq = m.max_time_to_reach_queue
        ttbr = m.max_time_to_receive
        if INFINITE != ttrq > ttbr:
            m.max_time_to_receive = ttbr = ttrq
        if txn is not None and qm.windows_transaction_ttbr:
            # Windows: every message of a transaction gets the first message's TTBR (docs/lifecycle.md).
            if txn._first_ttbr is None:
                txn._first_ttbr = ttbr
            m.max_time_to_receive = ttbr = txn._first_ttbr
        # The deadline counts from the send instant, not from SentTime's whole second: a message
        # lost up to a second of its TimeToBeReceived, and one of 1 s received 0.3 s after its send
        # was gone 10 times in 10 (outside QA, 2026-11-27).  The wire's SentTime stays whole seconds.
        expires_at = None if ttbr == INFINITE else expiry_deadline(now, ttbr)
        durable = m.delivery == 1
        # Refused now what no packet can hold, before the message gets an id (an express message is
        # not encoded at all; a recoverable one failed only when its packet was written, id set):
        # the packet counts the label in UTF-16 units, holds no NUL in it or in the dead-letter
        # queue's name, and is at most 4 MB.  (The caller's ``__dict__``: the copy has none yet.)
        check_unencoded(m, size, message.__dict__)
        # What send sets on the caller's message, once nothing can refuse it (a refused message
        # kept the id of a send that did not happen).
        message.id = mid
        message.source_machine_guid = guid
        message.destination_queue = state.format_name
        if message.destination_format_name is not dest_set:
            message.destination_format_name = dest_set
        message.sent_time = sent
        if txn is not None:
            # Placed at the commit (transaction._place_at_commit): until then an id above every
            # real one, which holds no reader back (outside QA: a stream waited for an open
            # transaction to end) and takes none from the queue.
            lid = uncommitted_lookup_id()
        else:
            # qm._next_lookup(state) without the call while inside the durably reserved block.
            lid = state.next_lookup
            if lid <= state.reserved_lookup:
                state.next_lookup = lid + 1
            else:
                lid = qm._next_lookup(state)
        m.lookup_id = lid
        entry = state.index.add_new(lid, m.priority, m, size, PENDING if durable else AVAILABLE, expires_at)
        if expires_at is not None:
            qm._life.arm(state, entry)
        if txn is not None:
            txn._add(SEND, state, state.index, entry)
            return None
        if not durable:
            state.cond.notify_all()
            if m.ack & 1 or m.trace or m.journal & 2:  # (Lifecycle.has_arrival_events, inline)
                qm._arrived(state, m)
            return None
        return entry

    # ------------------------------------------------------------------ take (receive a found entry)
    def _take(
        self, index: MessageIndex, entry: Entry, tx: Transaction | object | None, allow_peek: bool
    ) -> Message:
        # Under the lock, entry AVAILABLE.  Transactional: lock it (Dequeue Message step 4).
        if isinstance(tx, Transaction):
            tx._check_usable(self._qm)
            index.lock(entry, allow_peek)
            tx._add(RECEIVE, self._state, index, entry)
            return entry.message.copy()
        if type(tx) is Hold and entry.durable:  # locked until confirmed or released (hold.py)
            tx._take(self, index, entry)
            return entry.message.copy()
        index.set_state(entry, LOCKED)
        return entry.message

    def _finish_take(self, index: MessageIndex, entry: Entry, tx: Transaction | object | None) -> None:
        # Outside the lock: delete a non-transactionally received message (durably first).
        if isinstance(tx, Transaction) or (type(tx) is Hold and tx._holds(entry)):
            return
        if entry.durable:
            # Deleted with its acknowledgement and journal copies in one write (Effects), as a batch.
            remove_taken(self, index, [entry])
            return
        qm = self._qm
        state = self._state
        with qm._lock:
            if index.remove(entry):
                qm._on_removed(state, entry)

    def _read(
        self,
        seek: Callable[[MessageIndex], Entry | None],
        peek: bool,
        timeout: float | None,
        transaction: object = None,
        on_found: Callable[[Entry], None] | None = None,
        on_timeout: Callable[[MessageIndex], None] | None = None,
    ) -> Message:
        timeout = normalize_timeout(timeout)
        tx = None if peek else self._transaction(transaction, receive=True)
        qm = self._qm
        with qm._lock:
            self._check(_PEEK | _RECEIVE if peek else _RECEIVE)
            index = self._index()

            def attempt() -> Entry | None:
                self._check(0)
                # Timers already due, before every look (the first and each after a wake-up): a
                # message that became available past its deadline (an abort gave it back, a
                # commit or a durable write showed it) expires now, before this read can take it
                # (docs/lifecycle.md: a read at time t never returns a message whose deadline is <= t).
                qm._sweep()
                return seek(index)

            entry = wait_for(self._state.cond, attempt, timeout)
            if entry is None:
                if on_timeout is not None:
                    on_timeout(index)
                raise not_found(timeout)
            if on_found is not None:
                on_found(entry)
            if peek:
                return entry.message.copy()
            result = self._take(index, entry, tx, False)
        self._finish_take(index, entry, tx)
        return result

    # ------------------------------------------------------------------ receive / peek (head)
    def receive(
        self, timeout: float | None = None, transaction: Transaction | Hold | int | None = None
    ) -> Message:
        """Remove and return the first message (priority order) that is not locked."""
        return self._read(lambda index: index.first(False), False, timeout, transaction)

    def receive_many(
        self, count: int, timeout: float | None = 0, transaction: Transaction | int | None = None
    ) -> list[Message]:
        """Up to ``count`` messages: waits up to ``timeout`` for the first, then takes those available.

        None in time gives ``[]``.  An error other than "no message" ends the batch and is raised (the
        messages received so far are then lost to the caller, as with a failed ``receive``: use a
        transaction to keep them).  Same semantics as the remote client's RECEIVE_MANY.
        """
        return receive_many(self, count, timeout, transaction)

    def peek(self, timeout: float | None = None) -> Message:
        """Return (a copy of) the first message without removing it."""
        return self._read(lambda index: index.first(True), True, timeout)

    # ------------------------------------------------------------------ notifications, asyncio
    def enable_notification(
        self,
        on_arrived: Callable[[Queue, int], object],
        cursor: int = 0,
        timeout: float | None = None,
        on_error: Callable[[Queue, int, int], object] | None = None,
    ) -> Notification:
        """Arm ONE arrival notification ([MC-MQAC] 3.11.4.1.9 EnableNotification).

        Later, on the queue manager's event thread, exactly one of ``on_arrived(queue, cursor)`` or
        ``on_error(queue, hresult, cursor)`` is called; arm again for the next message.  ``cursor``:
        MQMSG_FIRST (head), MQMSG_CURRENT or MQMSG_NEXT (this handle's cursor).  ``timeout`` in
        seconds (None = wait forever; 0 = error at once if nothing is there).  Returns a
        ``Notification`` whose ``cancel()`` disarms it.
        """
        return enable_notification(self, on_arrived, cursor, timeout, on_error)

    async def receive_async(
        self, timeout: float | None = None, transaction: Transaction | Hold | int | None = None
    ) -> Message:
        """``await q.receive_async(...)``: like ``receive`` without blocking the event loop."""
        return await receive_async(self, timeout, transaction)

    def send_async(self, message: Message, transaction: Transaction | int | None = None) -> Completed[None]:
        """Send ``message`` now, as ``send`` (a recoverable one is durable when this returns); the
        queue manager's refusal, if any, comes from ``await`` or ``.result()`` of what it returns,
        as from the remote client's ``send_async`` (which writes the SEND now and does not wait for
        its answer).  An argument that is not a message or a closed handle raises at once, as there.
        """
        if not isinstance(message, Message):
            raise _err("send needs a Message", HResult.MQ_ERROR_INVALID_PARAMETER)
        # What the remote client refuses before it writes the SEND: the message's properties, the
        # transaction argument, a packet over 4 MB; then a closed handle.
        message.validate()
        if isinstance(transaction, Transaction):
            transaction._check_usable(self._qm)  # a finished one, or another queue manager's
        elif not (transaction is None or (type(transaction) is int and transaction in (0, 1, 3))):
            self._transaction(transaction, receive=False)  # raises (XA, or no transaction argument)
        if len(message.body) + len(message.extension) > NEAR_PACKET_LIMIT:
            check_packet_size(message)
        self._check(0)
        try:
            self.send(message, transaction)
        except MSMQError as exc:
            return Completed(None, exc)
        return Completed(None)

    async def peek_async(self, timeout: float | None = None) -> Message:
        """``await q.peek_async(...)``: like ``peek`` without blocking the event loop."""
        return await receive_async(self, timeout, None, peek=True)

    # ------------------------------------------------------------------ cursors
    def cursor(self) -> Cursor:
        """A new cursor on this handle ([MS-MQDMPR] 3.2, state Unread at Start)."""
        with self._qm._lock:
            self._check(_PEEK | _RECEIVE)
            return Cursor(self)

    def _default_cursor(self) -> Cursor:
        cursor = self._cursor
        if cursor is None:
            with self._qm._lock:  # two threads' first reads share one cursor
                if self._cursor is None:
                    self._cursor = Cursor(self)
                cursor = self._cursor
        return cursor

    def peek_current(self, timeout: float | None = None) -> Message:
        """[MC-MQAC] PeekCurrent on the handle's own cursor."""
        return self._default_cursor().peek_current(timeout)

    def peek_next(self, timeout: float | None = None) -> Message:
        """[MC-MQAC] PeekNext on the handle's own cursor."""
        return self._default_cursor().peek_next(timeout)

    def receive_current(
        self, timeout: float | None = None, transaction: Transaction | Hold | int | None = None
    ) -> Message:
        """[MC-MQAC] ReceiveCurrent on the handle's own cursor."""
        return self._default_cursor().receive_current(timeout, transaction)

    def reset(self) -> None:
        """[MC-MQAC] Reset: the handle's cursor goes back before the first message."""
        with self._qm._lock:
            self._check(0)
            self._default_cursor().reset()

    # ------------------------------------------------------------------ purge
    def purge(self) -> None:
        """Delete every message that is not locked ([MS-MQDMPR] 3.1.7.1.7 Purge Queue).

        Locked messages become PurgePending: deleted when their transaction ends either way.  The
        messages of this handle's queue or subqueue only: a queue's purge leaves its subqueues.
        """
        qm = self._qm
        with qm._lock:
            self._check(_RECEIVE)
            index = self._index()
            batch = Batch()
            life = qm._life
            held: list[tuple[int, int]] = []
            for entry in list(index):
                if entry.state == AVAILABLE:
                    index.remove(entry)
                    if entry.durable:
                        batch.delete.append(MessageKey(self._state.queue_id, entry.lookup_id))
                    # [MS-MQDMPR] 3.1.7.1.7: Message Position Deleted, reason NackQueuePurged.
                    life.removed(self._state, entry, NACK_Q_PURGED, batch)
                elif entry.state == LOCKED:
                    entry.purge_pending = True
                    if entry.durable:
                        held.append((self._state.queue_id, entry.lookup_id))
            # And the stored messages of this queue (or subqueue) that could not be read at open:
            # the only way to delete them short of deleting the queue (outside QA 2026-11-27).
            queue_id = self._state.queue_id
            for lookup_id in qm._unreadable.pop((queue_id, self._subqueue or ""), ()):
                batch.delete.append(MessageKey(queue_id, lookup_id))
            in_flight = qm._store.in_flight
            if held and in_flight is not None:
                # A crash deletes them as an abort would: the purge is numbered, noted before it is
                # stored and its number stored with it (in_flight.py; a note written after the
                # store missed a kill in between, outside QA 2026-11-27).
                qm._purges += 1
                batch.meta["purges"] = str(qm._purges)
                in_flight.purged(held, qm._purges)
            if batch:
                qm._apply(batch)


def own_cursor(queue: Queue) -> Cursor:
    """The handle's own cursor: what ``peek_current``, ``peek_next``, ``receive_current`` and
    ``reset`` move ([MC-MQAC] 3.11.4.1: IMSMQQueue4 keeps one cursor per open queue)."""
    return queue._default_cursor()
