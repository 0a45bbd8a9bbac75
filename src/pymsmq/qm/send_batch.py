"""Many sends, one lock acquisition and one durable write: ``QueueManager.send_batch`` and friends.

``send_batch(qm, sends)`` takes ``(queue, message, transaction)`` triples and does for each what
``Queue.send`` does ([MS-MQDMPR] 3.1.7.1.27 Enqueue Message To An Open Queue), with the same checks
and errors, but enqueues every valid send under ONE acquisition of the queue manager's lock and
writes every recoverable one in ONE store batch (one fsync).  Each send's outcome is reported in
its slot of the returned list (None or the ``MSMQError`` ``Queue.send`` would have raised); a
failing send never affects the others.  Recoverable messages become visible only once durable,
exactly as with ``Queue.send``: their entries stay PENDING until the store batch is committed.

If the combined store batch fails (a store batch is atomic: nothing of it was written), every
message of it is written again in a batch of its own, so that one bad message cannot fail the rest.

``send_many`` / ``receive_many`` give the embedded ``Queue`` the methods of the remote client's
``RemoteQueue`` (same signatures, same semantics).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE
from pymsmq.model.ids import ObjectId, new_object_id
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import canonical_queues, check_unencoded
from pymsmq.qm.hold import Hold
from pymsmq.qm.index import AVAILABLE
from pymsmq.qm.lifecycle import ARRIVAL_EVENTS, Effects
from pymsmq.qm.receive_batch import DURABLE, take_available
from pymsmq.qm.store.base import Batch, StoredMessage
from pymsmq.qm.timers import expiry_deadline
from pymsmq.qm.transaction import Transaction
from pymsmq.qm.waiters import normalize_timeout

if TYPE_CHECKING:
    from pymsmq.qm.index import Entry
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.queue_state import QueueState

__all__ = ["SendItem", "Sent", "receive_many", "send_batch", "send_express", "send_many"]

#: One send of a batch: (queue handle, message, transaction argument as for ``Queue.send``).
SendItem = tuple["Queue", Message, "Transaction | int | None"]

#: What ``send_express`` reports for a message sent: the id and sent time it was given.
Sent = tuple[ObjectId, float]

_SEND: Final = 2  # MQ_SEND_ACCESS
_NO_MESSAGE: Final = frozenset({HResult.MQ_ERROR_IO_TIMEOUT, HResult.MQ_ERROR_MESSAGE_NOT_FOUND})


def _as_error(exc: Exception) -> MSMQError:
    if isinstance(exc, MSMQError):
        return exc
    err = MSMQError(f"internal error: {type(exc).__name__}: {exc}", HResult.MQ_ERROR)
    err.__cause__ = exc
    return err


def _precheck(
    queue: Queue, message: Message, transaction: object, decoded: bool = False
) -> Transaction | object | None:
    # The checks Queue.send makes before taking the lock, in the same order.  ``decoded``: a message
    # decode_for_send gave, valid as it is and without queues (send_batch's ``packets``).
    if not isinstance(message, Message):
        raise MSMQError("send needs a Message", HResult.MQ_ERROR_INVALID_PARAMETER)
    if not decoded:
        message.validate()
        if message.admin_queue is not None or message.response_queue is not None:
            canonical_queues(message)  # MQ_ERROR_ILLEGAL_FORMATNAME now, not when the packet is written
    return None if transaction is None else queue._transaction(transaction, receive=False)


def _locked_send_check(queue: Queue) -> None:
    # Under qm._lock: the checks of Queue.send that depend on the queue only (not the message).
    queue._check(_SEND)
    if queue._subqueue is not None:
        raise MSMQError(
            "messages cannot be sent to a subqueue", HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
        )
    state = queue._state
    if state.kind in ("journal", "system"):
        raise MSMQError("journal and dead-letter queues are read-only", HResult.MQ_ERROR_ACCESS_DENIED)
    if state.props.transactional:
        raise MSMQError("non-transactional send to a transactional queue", HResult.MQ_ERROR_TRANSACTION_USAGE)


def _locked_send(
    queue: Queue, message: Message, tx: Transaction | object | None, copy: bool = True
) -> Entry | None:
    # Under qm._lock: the checks and the enqueue of Queue.send (``copy=False``: the message is given away).
    queue._check(_SEND)
    if queue._subqueue is not None:
        raise MSMQError(
            "messages cannot be sent to a subqueue", HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
        )
    state = queue._state
    if state.kind in ("journal", "system"):
        raise MSMQError("journal and dead-letter queues are read-only", HResult.MQ_ERROR_ACCESS_DENIED)
    if tx is None and state.props.transactional:
        raise MSMQError("non-transactional send to a transactional queue", HResult.MQ_ERROR_TRANSACTION_USAGE)
    return queue._enqueue(message, tx, copy)


def send_batch(
    qm: QueueManager, sends: Sequence[SendItem], packets: Sequence[bytes | None] = ()
) -> list[MSMQError | None]:
    """Send every ``(queue, message, transaction)`` of ``sends``; the outcome of each, in order.

    Equivalent to calling ``queue.send(message, transaction)`` for each in turn and catching its
    error, except that the recoverable ones share one durable write.  Every queue must belong to
    ``qm``.

    ``packets`` (empty, or one per send): a send whose packet is not None gives its message away (it
    is queued as it is, without a copy: the caller must not change it afterwards).  The packet is
    the canonical packet ``protocol.fast_packet.decode_for_send`` decoded the message from, as a
    client sent it (so the message is valid as it is: not validated again), and the packet stored
    for a recoverable send is derived from it (``packet_with_destination``).
    """
    results: list[MSMQError | None] = [None] * len(sends)
    if any(queue._fans_out for queue, _, _ in sends):
        # A handle on several queues (MultipleDestination) writes each of its sends itself: the
        # batch is sent in turn, in order.
        for i, (queue, message, transaction) in enumerate(sends):
            try:
                if queue._qm is not qm:
                    raise MSMQError(
                        "the queue belongs to another queue manager", HResult.MQ_ERROR_INVALID_HANDLE
                    )
                queue.send(message, transaction)
            except Exception as exc:
                results[i] = _as_error(exc)
        return results
    given = packets or [None] * len(sends)
    ready: list[tuple[int, Queue, Message, Transaction | object | None]] = []
    for i, (queue, message, transaction) in enumerate(sends):
        try:
            if queue._qm is not qm:
                raise MSMQError("the queue belongs to another queue manager", HResult.MQ_ERROR_INVALID_HANDLE)
            ready.append((i, queue, message, _precheck(queue, message, transaction, given[i] is not None)))
        except Exception as exc:
            results[i] = _as_error(exc)
    if not ready:
        return results
    written: list[tuple[int, Queue, Entry]] = []
    # The arrival events of the messages that have some (by position), written with them (Effects).
    arrivals: dict[int, Effects] = {}
    with qm._lock:
        for i, queue, message, tx in ready:
            try:
                entry = _locked_send(queue, message, tx, given[i] is None)
            except Exception as exc:
                results[i] = _as_error(exc)
                continue
            if entry is not None:
                written.append((i, queue, entry))
                arrival = queue._arrival(entry)
                if arrival is not None:
                    arrivals[i] = arrival
    if not written:
        return results
    rows: list[StoredMessage] = []
    kept: list[tuple[int, Queue, Entry]] = []
    failed: list[tuple[int, Queue, Entry]] = []
    for i, queue, entry in written:
        try:
            rows.append(qm._stored(queue._state, entry, given[i]))
            kept.append((i, queue, entry))
        except Exception as exc:
            results[i] = _as_error(exc)
            failed.append((i, queue, entry))
    durable = kept
    refused: dict[int, MSMQError | None] = {}  # (by position: arrival events refused with it)
    if rows:
        whole = Batch(insert=list(rows))  # (a copy: ``rows`` pairs with ``kept`` below)
        for i, _, _ in kept:
            if i in arrivals:
                whole.absorb(arrivals[i])
        try:
            qm._apply(whole)
        except Exception as exc:
            durable = []
            if len(rows) == 1 and kept[0][0] not in arrivals:
                i, queue, entry = kept[0]
                results[i] = _as_error(exc)
                failed.append((i, queue, entry))
            else:
                # A store batch is atomic (nothing of it was written): write each message alone
                # so that one bad message cannot fail the others (and its events cannot fail it).
                for (i, queue, entry), row in zip(kept, rows, strict=True):
                    try:
                        if i in arrivals:
                            refused[i] = qm._apply_with(Batch(insert=[row]), arrivals[i])
                        else:
                            qm._apply(Batch(insert=[row]))
                    except Exception as one:
                        results[i] = _as_error(one)
                        failed.append((i, queue, entry))
                    else:
                        durable.append((i, queue, entry))
        except BaseException:  # interrupted (Ctrl-C): like Queue.send, forget the entries and go up
            with qm._lock:
                for _, queue, entry in written:
                    queue._state.index.remove(entry)
                for arrival in arrivals.values():
                    qm._drop_prepared(arrival, ARRIVAL_EVENTS)
            raise
    with qm._lock:
        for i, queue, entry in failed:
            queue._state.index.remove(entry)
            if i in arrivals:
                qm._drop_prepared(arrivals[i], ARRIVAL_EVENTS)
        arrived: dict[int, QueueState] = {}
        for i, queue, entry in durable:
            queue._on_durable(entry, arrivals.get(i), refused.get(i), notify=False)
            state = queue._state
            arrived[id(state)] = state
        for state in arrived.values():  # the readers of each queue woken once (they run after the lock)
            state.cond.notify_all()
    return results


def send_express(
    queue: Queue,
    messages: Sequence[Message],
    packets: Sequence[bytes | None] = (),
    keep: Callable[[bytes, Message], bytes] | None = None,
) -> list[Sent | MSMQError]:
    """``send_batch`` of express messages without a transaction, which the caller gives away.

    Each message is queued as it is (no copy: the caller must not use it afterwards, nor have
    another reference to it) and must be validated already (``Message.validate``) and express
    (``delivery`` 0).  For each message, in order: ``(id, sent_time)`` it was given when sent (read
    under the lock, before any receiver can see it), or the ``MSMQError`` that
    ``queue.send(message)`` would have raised.  Same checks, same order, same errors as
    ``send_batch`` on ``(queue, message, None)`` triples.

    ``packets`` (empty, or one per message) and ``keep``: for a message sent whose packet is not
    None, ``keep(packet, queued message)`` is kept with the queued message (``Entry.packet``, set
    before any receiver can see it): the packet a receive answers for it (the caller's contract).
    """
    # (A handle on several queues -- MultipleDestination -- never comes here: it writes its copies
    # itself, and the server sends its messages through ``send_batch``.)
    assert not queue._fans_out, "send_express takes a handle on one queue"
    results: list[Sent | MSMQError] = []
    append = results.append
    qm = queue._qm
    with qm._lock:
        # _locked_send's checks depend on the handle and queue only: made once for the batch (what
        # they raise is raised for each message, after its own _precheck error if any).
        try:
            _locked_send_check(queue)
            refused: MSMQError | None = None
        except Exception as exc:
            refused = _as_error(exc)
        kept = packets if packets and keep is not None else [None] * len(messages)
        if refused is None and _batchable(queue):
            _enqueue_run(queue, messages, kept, keep, append)
            return results
        enqueue = queue._enqueue
        find = queue._state.index.get
        for m, packet in zip(messages, kept, strict=True):
            try:
                if m.admin_queue is not None or m.response_queue is not None:
                    canonical_queues(m)  # _precheck (validate: done by the caller)
                if refused is not None:
                    append(refused)
                    continue
                if m.delivery:
                    raise ValueError("send_express is for express messages")
                enqueue(m, None, False)
            except Exception as exc:
                append(_as_error(exc))
                continue
            mid = m.id
            sent = m.sent_time
            assert mid is not None and sent is not None
            append((mid, sent))
            if packet is not None:
                entry = find(m.lookup_id)
                if entry is not None and entry.message is m:
                    entry.packet = keep(packet, m)  # type: ignore[misc]
    return results


def _batchable(queue: Queue) -> bool:
    # Under qm._lock: nothing of Queue._enqueue can differ between messages of an express batch
    # but the message itself: no quota to check (the fast path of _enqueue), no armed notification
    # to poll after each arrival (a thread woken by notify_all runs only after the lock is released).
    qm = queue._qm
    state = queue._state
    return qm.machine_quota is None and state.props.quota == INFINITE and not state.cond.armed


def _enqueue_run(
    queue: Queue,
    messages: Sequence[Message],
    kept: Sequence[bytes | None],
    keep: Callable[[bytes, Message], bytes] | None,
    append: Callable[[Sent | MSMQError], None],
) -> None:
    # send_express's loop for a _batchable queue: Queue._enqueue(m, None, copy=False) of each express
    # message inline, at ONE instant (one clock read; [MC-MQAC] 3.17.4.1.48 steps 7, 9-12 as in
    # _enqueue), and one arrival notification for the batch.  A message _enqueue would handle
    # differently (arrival events to write, an id or lookup-id block to reserve durably) goes through
    # _enqueue itself, and the clock is read again after it.
    qm = queue._qm
    state = queue._state
    index = state.index
    add_new = index.add_new
    enqueue = queue._enqueue
    arm = qm._life.arm
    clock = qm._clock
    guid = qm.guid
    fmt = state.format_name
    now = clock()
    # [MS-MQMQ] 2.2.19.2 SentTime is whole seconds (as _enqueue computes it).
    sent = now // 1.0 if type(now) is float and 0.0 < now < 4503599627370496.0 else float(int(now))
    arrived = False
    for m, packet in zip(messages, kept, strict=True):
        try:
            if m.admin_queue is not None or m.response_queue is not None:
                canonical_queues(m)  # _precheck (validate: done by the caller)
            if m.delivery:
                raise ValueError("send_express is for express messages")
            ordinal = qm._ordinal
            lid = state.next_lookup
            size = len(m.body) + len(m.extension) + 2 * len(m.label)  # message_size()
            if (
                m.ack & 1
                or m.trace
                or m.journal & 2
                or m.destination_format_name is not None
                or ordinal >= qm._ordinal_reserved
                or (lid > state.reserved_lookup)
            ):
                entry = enqueue(m, None, False)
                now = clock()
                sent = (
                    now // 1.0 if type(now) is float and 0.0 < now < 4503599627370496.0 else float(int(now))
                )
                assert entry is None
                found = index.get(m.lookup_id) if packet is not None else None
                if found is not None and found.message is m and keep is not None:
                    found.packet = keep(packet, m)  # type: ignore[arg-type]
                mid = m.id
                assert mid is not None and m.sent_time is not None
                append((mid, m.sent_time))
                continue
            # _enqueue's packet checks, on the packet with its destination, as _enqueue makes it (QA:
            # send_many took a message at the 4 MB limit that send refused).
            m.destination_queue = fmt
            check_unencoded(m, size, m.__dict__)
        except Exception as exc:
            append(_as_error(exc))
            continue
        # Queue._enqueue, express, no transaction, no copy, inside the reserved blocks.
        qm._ordinal = ordinal = ordinal + 1
        mid = m.id = new_object_id(guid, ordinal & 0xFFFFFFFF)
        m.source_machine_guid = guid
        m.sent_time = sent
        m.arrived_time = now
        if m.abort_count or m.move_count or m.last_move_time is not None:
            # a received message sent again starts from zero (never moved)
            m.abort_count = m.move_count = 0
            m.last_move_time = None
        ttrq = m.max_time_to_reach_queue
        ttbr = m.max_time_to_receive
        if INFINITE != ttrq > ttbr:
            m.max_time_to_receive = ttbr = ttrq
        expires_at = None if ttbr == INFINITE else expiry_deadline(now, ttbr)  # (Queue._enqueue)
        state.next_lookup = lid + 1
        m.lookup_id = lid
        entry = add_new(lid, m.priority, m, size, AVAILABLE, expires_at)
        if expires_at is not None:
            arm(state, entry)
        if packet is not None and keep is not None:
            entry.packet = keep(packet, m)
        arrived = True
        append((mid, sent))
    if arrived:
        state.cond.notify_all()


def send_many(
    queue: Queue, messages: Iterable[Message], transaction: Transaction | int | None = None
) -> None:
    """``Queue.send_many``: the remote client's semantics.

    Every message's properties are validated first (an invalid one raises before anything is
    sent); then every valid message is sent and the first error (one refused at its send: a queue
    name that is not a format name, a quota, ...) is raised after all were tried, with
    ``failures`` naming every message not sent (``MSMQError.failures``).
    """
    batch = list(messages)
    try:
        if type(transaction) is int and transaction != 3:
            # A constant is judged once, also for no messages (as the remote client does): XA and
            # values other than 0-3 are refused.
            queue._transaction(transaction, receive=False)
        for message in batch:
            if not isinstance(message, Message):
                raise MSMQError("send needs a Message", HResult.MQ_ERROR_INVALID_PARAMETER)
            message.validate()
        queue._check(0)  # a closed handle, also with nothing to send (as the remote client)
    except MSMQError as exc:  # nothing sent: every message failed (outside QA: ``failures`` was empty)
        raise exc.with_failures((i, exc) for i in range(len(batch))) from None
    failures: list[tuple[int, MSMQError]] = []
    if isinstance(transaction, Transaction):
        # Sends in a transaction are written when it commits: nothing to share now.
        for i, message in enumerate(batch):
            try:
                queue.send(message, transaction)
            except MSMQError as exc:
                failures.append((i, exc))
    else:
        for i, err in enumerate(send_batch(queue._qm, [(queue, m, transaction) for m in batch])):
            if err is not None:
                failures.append((i, err))
    if failures:
        raise failures[0][1].with_failures(failures)


def _taker(out: list[Message]) -> Callable[[Message], bool]:
    append = out.append

    def accept(m: Message) -> bool:
        append(m)
        return True

    return accept


def receive_many(
    queue: Queue, count: int, timeout: float | None = 0, transaction: Transaction | int | None = None
) -> list[Message]:
    """``Queue.receive_many``: up to ``count`` messages, with the remote client's semantics.

    Waits up to ``timeout`` for the first message, then takes the messages available, up to
    ``count`` (RECEIVE_MANY, docs/protocol.md); none in time gives ``[]``.  An error other than "no
    message" ends the batch and is raised (the express messages received so far are then lost to
    the caller, as with a failed ``receive``: use a transaction to keep them; the recoverable ones
    go back to the queue).

    Outside a transaction, the recoverable messages are held as they are taken and removed
    together once the batch is complete (``Hold``: one durable write for the batch, not one each);
    a failure of that write leaves them all in the queue and is raised.
    """
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise MSMQError(f"invalid count {count!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
    timeout = normalize_timeout(timeout)
    out: list[Message] = []
    first: MSMQError | None = None
    todo = count
    try:
        direct = queue._transaction(transaction, receive=True) is None
    except MSMQError:
        if not todo:  # (no receive below to report it: a bad argument is still refused)
            raise
        direct = False  # the receives below meet (and report) the same error
    if not todo:
        queue._check(0)  # (no receive below: a closed handle is still said, as by the remote client)
    hold = Hold() if direct and todo else None
    try:
        _take_many(queue, count, timeout, hold if hold is not None else transaction, out)
    except MSMQError as exc:
        first = exc
    except BaseException:
        if hold is not None:
            hold.release()
        raise
    if hold is not None and hold.held:
        if first is not None:
            hold.release()
        else:
            hold.confirm()
    if first is not None:
        raise first
    return out


def _take_many(
    queue: Queue,
    count: int,
    timeout: float | None,
    transaction: Transaction | Hold | int | None,
    out: list[Message],
) -> None:
    # receive_many's receives into ``out``; the error that ended them is raised.
    todo = count
    direct = type(transaction) is Hold or transaction is None
    if todo and not queue._state.transactional:
        # The express messages already there: taken as these receives would take them, under one
        # lock acquisition (qm/receive_batch.py); a recoverable one, a wait or an error goes the
        # general way below.
        while direct and todo:
            try:
                why = take_available(queue, todo, _taker(out))
            except MSMQError:
                break  # the receives below meet (and report) the same error
            todo = count - len(out)
            if why != DURABLE or not todo:
                break
            try:
                out.append(queue.receive(0, transaction))
            except MSMQError:
                break  # retried below, as the next receive of the loop
            todo -= 1
    for _ in range(todo):
        try:
            # Only the first message is waited for; after it, what is there already.
            out.append(queue.receive(0.0 if out else timeout, transaction))
        except MSMQError as exc:
            if exc.hresult not in _NO_MESSAGE:
                raise
            return
