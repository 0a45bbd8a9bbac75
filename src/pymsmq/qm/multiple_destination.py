"""One message to several queues: a multiple-element format name opened to send ([MS-MQMQ] 2.1.7).

MSMQ 3.0 sends a message to every queue a multiple-element format name lists
(``DIRECT=OS:.\\private$\\a,DIRECT=OS:.\\private$\\b``): one copy per queue, every copy with the same
message id, its own queue as PROPID_M_DEST_QUEUE (``destination_queue``) and the whole list as
PROPID_M_DEST_FORMAT_NAME (``destination_format_name``; "used together to specify all the queues
to which the message was sent and the specific queue to which this copy of the message was sent").
Such a name "identifies more than one queue": it is opened with MQ_SEND_ACCESS only, and reading,
purging or administering it is refused ([MC-MQAC] 3.12, digest D3.5).

Decisions (docs/spec-decisions.md, "Multiple-element destinations"):

* every element names a queue of this queue manager (there is no queue-manager-to-queue-manager
  transfer to carry a copy elsewhere): an element that does not is refused at the open, as a single
  name is; so are elements naming a subqueue, a journal or a machine queue;
* a queue named twice (or under two names) gets one copy;
* all or nothing: a send is checked against every queue first (the handle, transaction usage,
  quotas, the packet's size); when one refuses it, no queue gets a copy and the error names that
  queue.  The copies of a recoverable message are written in one durable write, and in a
  transaction they commit or abort together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.model.message import Message
from pymsmq.model.names import several_queues
from pymsmq.model.packet_mapping import canonical_queues, check_packet_size
from pymsmq.model.packet_queues import canonical_format_name, name_elements
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.model.quota_error import QuotaExceededError
from pymsmq.qm.access import _SEND, _err
from pymsmq.qm.lifecycle import ARRIVAL_EVENTS, Effects
from pymsmq.qm.queue import Queue
from pymsmq.qm.store.base import Batch
from pymsmq.qm.transaction import Transaction

if TYPE_CHECKING:
    from pymsmq.qm.cursor import Cursor
    from pymsmq.qm.index import Entry
    from pymsmq.qm.queue_manager import QueueManager

__all__ = ["MultipleDestination", "destination_queues", "open_multiple"]


class MultipleDestination(Queue):
    """A handle for sending to every queue of a multiple-element format name (send access only).

    ``send`` and ``send_many`` (``Queue``'s: ``send_batch`` sends each message to a handle like
    this one by its ``send``) put one copy of each message in every queue.  Reads are refused
    with MQ_ERROR_ACCESS_DENIED (as on any handle opened to send); the properties, message count,
    journal and subqueues of the name with MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION.
    """

    __slots__ = ("_elements", "_name")
    _elements: tuple[Queue, ...]
    _name: str
    _fans_out: ClassVar[bool] = True

    @classmethod
    def _of(cls, qm: QueueManager, name: str, elements: list[Queue]) -> MultipleDestination:
        """Under qm._lock: a handle over ``elements`` (send handles of distinct queues, at least one)."""
        handle = cls._bare(qm, elements[0]._state, None, _SEND, 0)
        handle._elements = tuple(elements)
        handle._name = name
        return handle

    def __repr__(self) -> str:
        return f"<MultipleDestination {self._name}{' closed' if self._closed else ''}>"

    # ------------------------------------------------------------------ description
    @property
    def format_name(self) -> str:
        """The multiple-element format name (canonical), what copies carry as ``destination_format_name``."""
        return self._name

    @property
    def queue_format_name(self) -> str:
        """The multiple-element format name (it names no one queue)."""
        return self._name

    @property
    def path_name(self) -> str:
        """Empty: a multiple-element name has no path name."""
        return ""

    @property
    def properties(self) -> QueueProperties:
        """Refused (MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION): read each queue's instead."""
        raise several_queues(self._name, "reading queue properties")

    @property
    def transactional(self) -> bool:
        """True when every queue is transactional (sends then need a transaction)."""
        return all(q._state.props.transactional for q in self._elements)

    @property
    def is_open(self) -> bool:
        """False after ``close``."""
        return not self._closed

    @property
    def message_count(self) -> int:
        """Refused (MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION)."""
        self._check(0)
        raise several_queues(self._name, "counting messages")

    @property
    def journal(self) -> Queue:
        """Refused (MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION)."""
        self._check(0)
        raise several_queues(self._name, "opening a journal")

    def subqueue(self, name: str) -> Queue:
        """Refused (MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION)."""
        self._check(0)
        raise several_queues(self._name, "opening a subqueue")

    @property
    def subqueue_names(self) -> list[str]:
        """Refused (MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION)."""
        self._check(0)
        raise several_queues(self._name, "listing subqueues")

    def purge(self) -> None:
        """Refused: MQ_ERROR_ACCESS_DENIED (opened to send)."""
        self._check(0x1)  # MQ_RECEIVE_ACCESS: not this handle's

    def cursor(self) -> Cursor:
        """Refused: MQ_ERROR_ACCESS_DENIED (opened to send)."""
        self._check(0x20)  # MQ_PEEK_ACCESS: not this handle's
        raise AssertionError("unreachable")  # pragma: no cover

    def reset(self) -> None:
        """Refused: MQ_ERROR_ACCESS_DENIED (opened to send: no cursor)."""
        self._check(0x20)  # MQ_PEEK_ACCESS: not this handle's

    def close_with(self, error: MSMQError | None) -> None:
        """Close the handle (and its queues' send handles); later calls raise ``error``."""
        with self._qm._lock:
            if not self._closed:
                self._closed = True
                self._closed_by = error
                for q in self._elements:
                    q.close_with(error)

    # ------------------------------------------------------------------ checks
    def _check(self, need: int) -> None:
        if self._closed:
            if self._closed_by is not None:
                raise MSMQError(self._closed_by.message, self._closed_by.hresult)
            raise _err("the queue handle is closed", HResult.MQ_ERROR_INVALID_HANDLE)
        if self._qm._closed:
            raise _err("the queue manager is closed", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
        if need and not _SEND & need:
            raise _err("the queue was not opened for this access", HResult.MQ_ERROR_ACCESS_DENIED)

    def _transaction(self, transaction: object, receive: bool) -> Transaction | object | None:
        if receive:  # a read: refused as not opened for it (after the handle's own state)
            self._check(0x1)
        result: Transaction | object | None = None
        for q in self._elements:
            # Every queue judges it as a send to it alone would (a transaction needs every queue
            # transactional, MQ_SINGLE_MESSAGE too); the result is the same for each.
            result = q._transaction(transaction, receive=False)
        return result

    # ------------------------------------------------------------------ send
    def send(self, message: Message, transaction: Transaction | int | None = None) -> None:
        """Send a copy of ``message`` to every queue ([MS-MQDMPR] 3.1.7.1.27 for each), all or none.

        Sets ``message.id`` (every copy's), ``sent_time``, ``source_machine_guid`` and
        ``destination_format_name``; ``destination_queue`` becomes None (the copies have one each).
        A recoverable message's copies are durable when this returns.
        """
        if not isinstance(message, Message):
            raise _err("send needs a Message", HResult.MQ_ERROR_INVALID_PARAMETER)
        message.validate()
        if message.admin_queue is not None or message.response_queue is not None:
            canonical_queues(message)
        qm = self._qm
        tx = None if transaction is None else self._transaction(transaction, receive=False)
        with qm._lock:
            self._check_every_queue(message, tx)
            written, arrivals = self._enqueue_copies(message, tx)
            message.destination_queue = None
        if not written:
            return
        try:
            rows = Batch(insert=[qm._stored(q._state, entry) for q, entry in written])
            combined = Effects()
            for arrival in arrivals:
                if arrival is not None:
                    combined.absorb(arrival)
            refused = qm._apply_with(rows, combined)
        except BaseException:
            with qm._lock:
                for (q, entry), arrival in zip(written, arrivals, strict=True):
                    q._state.index.remove(entry)
                    if arrival is not None:
                        qm._drop_prepared(arrival, ARRIVAL_EVENTS)
            raise
        with qm._lock:
            for (q, entry), arrival in zip(written, arrivals, strict=True):
                q._on_durable(entry, arrival, refused)

    def _check_every_queue(self, message: Message, tx: Transaction | object | None) -> None:
        # Under qm._lock: what Queue.send and Queue._enqueue could refuse for one of the copies, for
        # every copy, before any is queued (all or nothing).
        qm = self._qm
        self._check(_SEND)
        for q in self._elements:
            q._check(_SEND)
            if tx is None and q._state.props.transactional:
                raise _err(
                    f"non-transactional send to a transactional queue ({quoted(q.format_name)})",
                    HResult.MQ_ERROR_TRANSACTION_USAGE,
                )
        size = len(message.body) + len(message.extension) + 2 * len(message.label)  # message_size()
        copies = len(self._elements)
        if qm.machine_quota is not None and qm.total_bytes + size * copies > qm.machine_quota * 1024:
            raise _err(
                f"the copies of the message ({copies} x {size} bytes) exceed the machine quota",
                HResult.MQ_ERROR_INSUFFICIENT_RESOURCES,
            )
        for q in self._elements:
            try:
                qm._check_quota(q._state, size)
            except QuotaExceededError as exc:
                raise _err(f"{exc.message} (no queue was sent a copy)", exc.hresult) from None
        # The packet of the copy with the longest queue name: the largest of them (4 MB at most).
        trial = message.copy()
        trial.destination_queue = max((q.format_name for q in self._elements), key=len)
        trial.destination_format_name = self._name
        check_packet_size(trial)

    def _enqueue_copies(
        self, message: Message, tx: Transaction | object | None
    ) -> tuple[list[tuple[Queue, Entry]], list[Effects | None]]:
        # Under qm._lock: queue every copy; the recoverable ones still to be written, with their
        # arrival events.  On an error (a store that cannot reserve ids) the copies queued so far
        # are taken back out (nobody saw them: the lock is held).
        written: list[tuple[Queue, Entry]] = []
        queued: list[tuple[Queue, Entry | None]] = []
        mid = None
        try:
            for q in self._elements:
                entry = q._enqueue(message, tx, True, self._name, mid)
                mid = message.id
                queued.append((q, entry))
                if entry is not None:
                    written.append((q, entry))
        except BaseException:
            for q, entry in queued:
                if entry is not None:
                    q._state.index.remove(entry)
            raise
        arrivals = [q._arrival(entry) for q, entry in written]
        return written, arrivals


def destination_queues(handle: MultipleDestination) -> tuple[Queue, ...]:
    """The send handles of the queues ``handle`` sends to, in its name's order, once each."""
    return handle._elements


def open_multiple(qm: QueueManager, name: str, access: int | None, share_mode: int) -> MultipleDestination:
    """Under qm._lock: open the multiple-element format name ``name`` to send.

    MQ_ERROR_ILLEGAL_FORMATNAME when it is not one (or has more than 256 elements);
    MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION for an access other than MQ_SEND_ACCESS; each element
    is opened to send as a name of its own would be (its error, naming it, when it cannot be).
    """
    canonical = canonical_format_name(name)
    if access != _SEND:
        raise several_queues(name, "an open with an access other than MQ_SEND_ACCESS")
    if share_mode != 0:
        # [MC-MQAC] 3.10.4.1.34 step 2: send access with a share mode other than MQ_DENY_NONE.
        raise _err("MQ_SEND_ACCESS requires MQ_DENY_NONE", HResult.MQ_ERROR_INVALID_PARAMETER)
    elements: list[Queue] = []
    seen: set[int] = set()
    try:
        for text in name_elements(canonical):
            q = qm.queue(text, _SEND)
            if id(q._state) in seen:  # the same queue again (or under another name): one copy
                q.close()
                continue
            seen.add(id(q._state))
            elements.append(q)
    except BaseException:
        for q in elements:
            q.close()
        raise
    return MultipleDestination._of(qm, canonical, elements)
