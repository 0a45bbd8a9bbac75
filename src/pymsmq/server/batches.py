"""SEND_MANY and RECEIVE_MANY for ``Session`` (docs/protocol.md 11, pymsmq extension).

Each message of a batch is handled as its own SEND or RECEIVE would be: the same rights checks (once,
for the handle), the same size limit, the same queue-manager calls and the same errors, reported per
message (SEND_MANY) or after the messages taken so far (RECEIVE_MANY).  Scheduling follows SEND and
RECEIVE (docs/protocol.md 8): a batch of express messages outside a DTC transaction, or a receive of
an express non-transactional queue's head, runs on the event loop when no earlier work of its handle
is still running; anything else runs off the loop as ONE job for the whole batch, chained behind the
handle's earlier work.  A receive that finds no message and may wait parks on the queue's arrival
notification, like RECEIVE (peeks and transactional batches are tried again on the work pool).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, ParamSpec, TypeVar

from pymsmq.errors import MSMQError, WireError, reason
from pymsmq.hresult import HResult
from pymsmq.model.message import Message
from pymsmq.protocol.batch_fast import decode_for_send_list
from pymsmq.protocol.batch_ops import (
    ReceiveManyRequest,
    ReceiveManyResponse,
    SendManyRequest,
    SendManyResponse,
    client_receive_facts,
    decode_messages,
    error_result,
    receive_facts,
    receive_facts_size,
    send_result,
    sent_entry,
)
from pymsmq.protocol.codes import Action, ManyFlags, ManyMore
from pymsmq.protocol.fast_packet import decode_simple, encode_simple, queued_packet
from pymsmq.protocol.handshake import MAX_PAYLOAD
from pymsmq.protocol.message_codec import (
    DEFAULT_RECEIVE_PROPIDS,
    decode_message,
    encode_packet,
    sent_packet_size,
)
from pymsmq.qm.hold import Hold
from pymsmq.qm.notifications import first_available, first_peekable
from pymsmq.qm.receive_batch import DURABLE, EMPTY, take_entries
from pymsmq.qm.send_batch import send_express
from pymsmq.qm.waiters import not_found
from pymsmq.server.access import receive_right
from pymsmq.server.reads import reader
from pymsmq.server.reply_queues import reply_queue_refusal, reply_queues_here
from pymsmq.server.send import decode_refusal
from pymsmq.server.waits import ArrivalWait
from pymsmq.wire.base_header import MAX_PACKET_SIZE
from pymsmq.wire.security import MQQueueAccessMask

if TYPE_CHECKING:
    from pymsmq.qm.index import Entry
    from pymsmq.server.session import Handle, Session

__all__ = ["receive_many", "send_many"]

log = logging.getLogger("pymsmq.server")
_M = MQQueueAccessMask
_U32: Final = struct.Struct("<I")
#: Where the uniquifier of the message id sits in a sent_entry (after the lineage GUID).
_ID_AT: Final = 34
_INFINITE_MS: Final = 0xFFFFFFFF
_NOT_FOUND: Final = HResult.MQ_ERROR_MESSAGE_NOT_FOUND
_NO_MESSAGE: Final = frozenset({HResult.MQ_ERROR_MESSAGE_NOT_FOUND, HResult.MQ_ERROR_IO_TIMEOUT})
_WRITE: Final = int(_M.MQSEC_WRITE_MESSAGE)
_PEEK_RIGHT: Final = int(_M.MQSEC_PEEK_MESSAGE)
_RECEIVE_RIGHT: Final = int(_M.MQSEC_RECEIVE_MESSAGE)
_PEEK_FLAG: Final = int(ManyFlags.PEEK)
_CONFIRM_FLAG: Final = int(ManyFlags.CONFIRM)
_MORE: Final = int(ManyMore.MORE)
_HELD: Final = int(ManyMore.HELD)
_RECEIVE: Final = int(Action.MQ_ACTION_RECEIVE)
#: Receives that take the slow path after a handle met a recoverable message (as in receive.py).
_DURABLE_HINT: Final = 64
#: Room kept free in a RECEIVE_MANY answer for one more message beyond its packet's MAX_PACKET_SIZE:
#: its length, its facts and a SessionHeader a re-encoded packet may carry.
_ENTRY_SLACK: Final = 0x4000
_new = object.__new__
_set = object.__setattr__
_T = TypeVar("_T")
_P = ParamSpec("_P")
_TOO_LARGE: Final = error_result(
    HResult.MQ_ERROR_INSUFFICIENT_RESOURCES, "the message is larger than the server accepts"
)


def _send_many_response(results: bytes) -> SendManyResponse:
    resp: SendManyResponse = _new(SendManyResponse)
    _set(resp, "results", results)
    return resp


def _receive_many_response(more: int, hresult: int, text: str, messages: bytes) -> ReceiveManyResponse:
    resp: ReceiveManyResponse = _new(ReceiveManyResponse)
    _set(resp, "more", more)
    _set(resp, "hresult", hresult)
    _set(resp, "text", text)
    _set(resp, "messages", messages)
    return resp


# ---------------------------------------------------------------------------------- SEND_MANY
def send_many(s: Session, rid: int, req: SendManyRequest) -> None:
    """Serve a SEND_MANY: every message as a SEND of it would be, answered with one result each."""
    h = s.handle(req.handle)
    s.check(h, _WRITE, "send to")
    ref = req.transaction
    fans_out = h.queue._fans_out  # a multiple-element name: each message sent to every queue in turn
    plain = ref is None or (type(ref) is int and ref in (0, 1))
    if not fans_out and plain and (h.tail is None or h.tail.done()):
        # Express messages outside a transaction, nothing of this handle running off the loop, and
        # every packet one that decode_for_send takes: decoded in one pass, queued as they are (no
        # copy, no validate: valid by construction), on the loop, under one lock hold.
        fast = decode_for_send_list(req.messages, s.server.config.max_message_size)
        if fast is not None:
            s.answer(rid, _send_owned(s, h, *fast))
            return
    try:
        items = decode_messages(req.messages)
    except WireError as exc:
        raise MSMQError(
            f"malformed SEND_MANY message list: {reason(exc)}", HResult.MQ_ERROR_INVALID_PARAMETER
        ) from None
    tx = s.transaction(req.transaction)
    limit = s.server.config.max_message_size
    # Decoded messages, or the SEND_RESULTS entry of one refused before reaching the queue.
    work: list[Message | bytes] = []
    append = work.append
    express = tx is None or tx in (0, 1)
    for packet, props in items:
        if len(packet) > limit or (props and sent_packet_size(packet, props) > limit):
            append(_TOO_LARGE)
            continue
        try:
            # decode_message(packet, props), its fast case first: a simple packet, no properties.
            message = (None if props else decode_simple(packet)) or decode_message(packet, props)
        except WireError as exc:
            text = f"malformed message: {reason(exc)}"[:2000]
            append(error_result(decode_refusal(exc), text))
            continue
        if message.admin_queue or message.response_queue:
            reply_queues_here(s.qm, message)  # (the packet is not kept here: no packet to drop)
        if message.admin_queue or message.dead_letter_queue:
            refusal = reply_queue_refusal(s.qm, s.policy, s.identity, message)
            if refusal is not None:
                append(error_result(refusal.hresult, refusal.message[:2000]))
                continue
        if message.delivery:
            express = False
        append(message)
    stats = s.stats
    queue = h.queue
    keys = h.stats_keys  # (a handle on several queues: each queue's counters count its copies)
    if fans_out:
        express = False  # (written by the handle, off the loop)
    peer = s.peer

    def run() -> SendManyResponse:
        # One QueueManager.send_batch call: one lock acquisition and, for recoverable messages, one
        # store batch (one fsync) for the whole SEND_MANY; each message keeps its own outcome.
        sends = [(queue, m, tx) for m in work if type(m) is not bytes]
        outcomes = iter(s.qm.send_batch(sends)) if sends else iter(())  # type: ignore[arg-type]
        parts = [_U32.pack(len(work))]
        append = parts.append
        sent = size = 0
        for m in work:
            if type(m) is bytes:
                append(m)
                continue
            error = next(outcomes)
            if error is not None:
                if error.hresult == HResult.MQ_ERROR and error.__cause__ is not None:
                    log.error("internal error serving %s", peer, exc_info=error.__cause__)
                append(error_result(error.hresult, error.message[:2000]))
                continue
            sent += 1
            size += len(m.body)  # type: ignore[union-attr]
            append(send_result(m))  # type: ignore[arg-type]
        for key in keys:
            counters = stats.queue(key)
            counters.sent += sent
            counters.bytes_in += size
        if sent < len(work):  # each refused message counts as the failed SEND it stands for
            stats.errors += len(work) - sent
        return _send_many_response(b"".join(parts))

    if express and (h.tail is None or h.tail.done()):
        # Express messages outside a DTC transaction, nothing of this handle running off the loop:
        # nothing waits for an fsync, so the batch is sent here (as SEND's fast path does).
        s.answer(rid, run())
        return
    s.off_loop(rid, run, h)


def _send_owned(
    s: Session, h: Handle, messages: list[Message], packets: list[bytes | None]
) -> SendManyResponse:
    # send_many's run() for a batch of owned express messages (send_batch.send_express): the same
    # answer, counters and errors.  ``packets``: the canonical packet of each message, or None.
    sizes = [len(m.body) for m in messages]  # read before the messages are given away
    outcomes = send_express(h.queue, messages, packets, queued_packet)
    parts = [_U32.pack(len(messages))]
    append = parts.append
    sent = size = 0
    peer = s.peer
    pack = _U32.pack
    # The messages of a batch share their id's lineage and sent time (queued at one instant): the
    # entry of the previous one around its uniquifier (sent_entry's bytes 34-37) is reused.
    lineage: object = None
    seconds = -1.0
    before = after = b""
    for outcome, body in zip(outcomes, sizes, strict=True):
        if type(outcome) is tuple:
            sent += 1
            size += body
            mid, t = outcome
            if mid.lineage is lineage and t == seconds:
                append(before)
                append(pack(mid.uniquifier))
                append(after)
                continue
            entry = sent_entry(mid, t)
            append(entry)
            lineage, seconds, before, after = mid.lineage, t, entry[:_ID_AT], entry[_ID_AT + 4 :]
            continue
        error: MSMQError = outcome  # type: ignore[assignment]
        if error.hresult == HResult.MQ_ERROR and error.__cause__ is not None:
            log.error("internal error serving %s", peer, exc_info=error.__cause__)
        append(error_result(error.hresult, error.message[:2000]))
    stats = s.stats
    counters = stats.queue(h.stats_key)
    counters.sent += sent
    counters.bytes_in += size
    if sent < len(messages):  # each refused message counts as the failed SEND it stands for
        stats.errors += len(messages) - sent
    return _send_many_response(b"".join(parts))


# ---------------------------------------------------------------------------------- RECEIVE_MANY
def receive_many(s: Session, rid: int, req: ReceiveManyRequest) -> None:
    """Serve a RECEIVE_MANY: wait up to the timeout for the first message, then take what is there."""
    h = s.handle(req.handle)
    peek = bool(req.flags & _PEEK_FLAG)
    if peek:
        s.check(h, _PEEK_RIGHT, "peek at")
    else:
        s.check(h, receive_right(h.journal), "receive from")
    tx = None if peek else s.receive_transaction(req.transaction)
    # Outside a transaction the recoverable messages taken are held (qm/hold.py).  Two-phase
    # (CONFIRM), until END_RECEIVE names the first of them (holds.py, [MS-MQRR] 3.1.4.9); else they
    # are removed together, one durable write, before the answer is written.
    hold = Hold() if tx is None and not peek else None
    two_phase = hold is not None and bool(req.flags & _CONFIRM_FLAG)
    max_count = req.max_count
    if not max_count:
        s.answer(rid, _receive_many_response(0, 0, "", b"\x00\x00\x00\x00"))
        return
    ms = req.request_timeout
    timeout = None if ms == _INFINITE_MS else ms / 1000.0
    propids = req.propids or DEFAULT_RECEIVE_PROPIDS
    fmt = h.format_name
    counters = s.stats.queue(h.stats_key)
    # The client accepts answers up to MAX_PAYLOAD: take a message whose size is not known before
    # it is encoded only while any stored message surely fits (queues may hold packets up to
    # MAX_PACKET_SIZE, whatever this server's max_message_size: embedded senders are not bound by
    # it); a message with a kept packet (the fast path below) while its own entry fits.
    budget = MAX_PAYLOAD - MAX_PACKET_SIZE - _ENTRY_SLACK
    limit = MAX_PAYLOAD - _ENTRY_SLACK
    parts: list[bytes] = []
    append = parts.append
    pack = _U32.pack
    n = size = body = more = hresult = 0
    text = ""
    durable = False
    held = 0  # len(hold) as of the last message added
    first_id = 0  # the lookup id of the answer's first message: END_RECEIVE names it
    registered = False

    def add(m: Message, on_loop: bool, packet: bytes | None = None) -> bool:
        # Put one message taken into the answer; False when the answer is complete.  ``packet``:
        # the one kept with it (Entry.packet): encode_simple(m) when m is in this handle's queue.
        nonlocal n, size, body, more, hresult, text, durable, held, first_id
        # encode_packet(m, fmt), its fast cases inline: the kept packet, the simple shape, stored
        # in this queue.
        dest = m.destination_queue
        if packet is None or dest != fmt:
            packet = encode_simple(m) if dest is None or dest == fmt else None
        if packet is None:
            try:
                packet = encode_packet(m, fmt)
            except MSMQError as exc:
                if not n:
                    raise  # as RECEIVE answers a message it cannot encode
                hresult, text = exc.hresult, exc.message[:2000]  # keep the ones taken before
                if hold is not None and len(hold) > held:
                    hold.release_newest()  # not in the answer: not acknowledged with it
                return False
        facts = receive_facts(m, propids)
        append(pack(len(packet)))
        append(packet)
        append(facts)
        if not n:
            first_id = m.lookup_id
        n += 1
        size += 4 + len(packet) + len(facts)
        body += len(m.body)
        if hold is not None:
            held = len(hold)
        if m.delivery:
            durable = True
            if on_loop:  # a recoverable message: the rest goes the slow way (next request)
                more = _MORE
                return False
        if n >= max_count:
            return False
        if size > budget:
            more = _MORE
            return False
        return True

    def finish() -> ReceiveManyResponse:
        nonlocal registered
        if hold is not None and hold.held and not two_phase:
            # One-phase: removed before the answer (off the loop: the fast path below holds
            # nothing one-phase).  A failure puts them back, and the error is the answer.
            hold.confirm()
        if peek:
            counters.peeked += n
        else:
            counters.received += n
            counters.bytes_out += body
            if durable:
                h.durable_hint = _DURABLE_HINT
            elif h.durable_hint:  # as receive.py counts down its peeks that met express messages
                h.durable_hint = max(h.durable_hint - n, 0)
        parts.insert(0, pack(n))
        if hold is None or not hold.held:  # (a one-phase hold is empty once confirmed)
            return _receive_many_response(more, hresult, text, b"".join(parts))
        answer = _receive_many_response(more | _HELD, hresult, text, b"".join(parts))
        s.holds.keep(req.handle, first_id, hold)  # (if it raises, the hold is released already)
        registered = True
        return answer

    def given_back(fn: Callable[_P, _T]) -> Callable[_P, _T]:
        # ``fn``, releasing the hold when an error leaves it unregistered (no END_RECEIVE will come).
        if hold is None:
            return fn

        def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
            try:
                return fn(*args, **kwargs)
            except BaseException:
                if not registered:
                    hold.release()
                raise

        return run

    def collect(first: Message, take: Callable[[], Message]) -> ReceiveManyResponse:
        nonlocal hresult, text
        m = first
        while add(m, False):
            try:
                m = take()
            except MSMQError as exc:
                if exc.hresult not in _NO_MESSAGE:
                    hresult, text = exc.hresult, exc.message[:2000]
                break
        return finish()

    waits = timeout != 0
    free = h.tail is None or h.tail.done()
    if (
        not peek
        and free
        and tx is None
        and (not h.durable_hint or two_phase)
        and not h.queue.transactional
        and not h.journal
    ):
        # Express head of a non-transactional queue: received on the loop (nothing durable is
        # written for express messages), as RECEIVE's fast path does, all the express messages
        # of the answer under one lock acquisition (qm/receive_batch.py).  Two-phase, recoverable
        # messages too: holding one writes nothing either (END_RECEIVE removes them, in one batch).
        queue = h.queue
        facts_size = receive_facts_size(propids)
        # The facts of the pymsmq client's request (its fixed size known) in one pack.
        facts_of: Callable[[Message], bytes] = (
            client_receive_facts if facts_size is not None else lambda m: receive_facts(m, propids)
        )

        def fits(entry: Entry) -> bool:
            # Peek the size the next message adds to the answer, before it is taken: a kept packet
            # (what accept adds as is) while the answer stays within limit, anything else (encoded
            # after it is taken, size unknown) while the answer is within budget.  The first message
            # of an answer always goes (a stored packet fits the frame alone).
            nonlocal more
            packet = entry.packet
            m = entry.message
            if packet is None or m.delivery or m.destination_queue != fmt:
                ok = size <= budget
            else:
                more_size = facts_size if facts_size is not None else len(receive_facts(m, propids))
                ok = size + 4 + len(packet) + more_size <= limit
            if ok or not n:
                return True
            more = _MORE
            return False

        def accept(entry: Entry) -> bool:
            # add(entry.message, True, entry.packet), inline for a kept packet of an express
            # message stored in this queue (the packet encode_packet(m, fmt) gives).
            nonlocal n, size, body, first_id
            packet = entry.packet
            m = entry.message
            if packet is None or m.delivery or m.destination_queue != fmt:
                return add(m, True, packet)
            facts = facts_of(m)
            append(pack(len(packet)))
            append(packet)
            append(facts)
            if not n:
                first_id = m.lookup_id
            n += 1
            size += 4 + len(packet) + len(facts)
            body += len(m.body)
            return n < max_count

        @given_back
        def fast() -> ReceiveManyResponse | None:
            # The answer, or None when there is no message (nothing taken).
            nonlocal hresult, text, more
            why = take_entries(queue, max_count, accept, fits)
            if why != DURABLE:
                return None if why == EMPTY and not n else finish()
            if size > budget:  # a recoverable message may be as large as any: the next request
                more = _MORE
                return finish()
            # A recoverable message next: taken as RECEIVE takes it (its delete is durable first;
            # two-phase, it is held and the batch goes on with what follows).
            try:
                m = queue.receive(0, hold if two_phase else None)
            except MSMQError as exc:
                if not n and exc.hresult == _NOT_FOUND:
                    return None
                if not n:
                    raise
                if exc.hresult not in _NO_MESSAGE:
                    hresult, text = exc.hresult, exc.message[:2000]
                return finish()
            if two_phase:
                return collect(m, lambda: queue.receive(0, hold))
            add(m, True)
            return finish()

        def attempt(remaining: float | None) -> bool:
            answer = fast()
            if answer is None:
                return False
            s.answer(rid, answer)
            return True

        answer = fast()
        if answer is None:
            if not waits:  # no message and no wait: MQ_ERROR_MESSAGE_NOT_FOUND, as for RECEIVE
                raise not_found(0)
            ArrivalWait(s, rid, h, attempt, timeout, first_available, exclusive=True)
            return
        s.answer(rid, answer)
        # Write this answer now, not when every request of this read is done: the client decodes
        # it while the next RECEIVE_MANY of its window is served (client and server overlap).
        s._flush()
        return

    if peek:
        cursor = h.queue.cursor()
        first_read: Callable[[float | None], Message] = cursor.peek_current
        next_read: Callable[[], Message] = lambda: cursor.peek_next(0)  # noqa: E731
    else:
        read = reader(h.queue, None, _RECEIVE, 0, tx if hold is None else hold)
        first_read = read
        next_read = lambda: read(0)  # noqa: E731

    @given_back
    def run(t: float | None = timeout) -> ReceiveManyResponse:
        # No message in time: the MQ_ERROR_IO_TIMEOUT / MQ_ERROR_MESSAGE_NOT_FOUND of RECEIVE.
        return collect(first_read(t), next_read)

    if waits:  # tried on the work pool, parked between tries (no thread while it waits)
        s.try_or_park(rid, h, run, timeout, first_peekable if peek else first_available, not peek)
    else:
        s.off_loop(rid, run, None if peek else h)
