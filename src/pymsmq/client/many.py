"""``RemoteQueue.send_many`` / ``receive_many`` over SEND_MANY and RECEIVE_MANY (docs/protocol.md 11).

``send_batches`` writes the messages in frames of at most ``_SEND_CHUNK`` messages and the server's
``max_payload``, each frame as soon as it is encoded (the server works on one while the next is
encoded), then applies the answers' facts to the messages.  ``receive_batches`` asks in windows of
RECEIVE_MANY requests of the size one answer holds (learned from answers the frame limit cut short),
with only the first request of a call allowed to wait.
"""

from __future__ import annotations

import uuid
from typing import Final, cast

from pymsmq.client.transport import Transport, error_from, send_refused
from pymsmq.errors import MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId, new_object_id
from pymsmq.model.message import Message
from pymsmq.model.packet_mapping import check_reply_queue_sizes
from pymsmq.protocol import OP_SINCE_VERSION, ErrorResponse, Op, TransactionRef
from pymsmq.protocol import messages as pm
from pymsmq.protocol.batch_fast import decode_sent_ids
from pymsmq.protocol.batch_ops import (
    ReceiveManyRequest,
    ReceiveManyResponse,
    SendManyRequest,
    SendManyResponse,
    decode_received,
    decode_send_facts,
    encode_packets,
)
from pymsmq.protocol.codes import RR_ACK, RR_NACK, ManyFlags, ManyMore
from pymsmq.protocol.fast_packet import encode_plain, encode_simple, guid_bytes_le
from pymsmq.protocol.message_batch import first_lookup_id
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS, PROPID_M_LOOKUPID, encode_packet, is_held

__all__ = [
    "FIRST_CHUNK",
    "GiveBack",
    "end_receives",
    "held_head",
    "receive_batches",
    "send_batches",
]

#: RECEIVE_MANY messages asked per request before an answer has shown how many one holds.
FIRST_CHUNK: Final = 256
_NO_MESSAGE: Final = frozenset({HResult.MQ_ERROR_IO_TIMEOUT, HResult.MQ_ERROR_MESSAGE_NOT_FOUND})
#: SEND_MANY: messages per frame (the server starts on a frame while the next is encoded).
_SEND_CHUNK: Final = 250
#: Bytes of a SEND_MANY payload kept for its fixed fields (handle, transaction, counts).
_FRAME_SLACK: Final = 64
#: RECEIVE_MANY: requests written at once.
_WINDOW: Final = 16
#: RECEIVE_MANY: a learned request size below this grows again when an answer comes back full.
_GROW_BELOW: Final = 64
_CONFIRM: Final = int(ManyFlags.CONFIRM)
#: The protocol version that has CANCEL_RECEIVE.
_CANCEL_VERSION: Final = OP_SINCE_VERSION[Op.CANCEL_RECEIVE]
_MORE: Final = int(ManyMore.MORE)
_HELD: Final = int(ManyMore.HELD)
_new = object.__new__
_set = object.__setattr__


def _send_many_request(handle: int, xact: TransactionRef, messages: bytes) -> SendManyRequest:
    req: SendManyRequest = _new(SendManyRequest)
    _set(req, "handle", handle)
    _set(req, "transaction", xact)
    _set(req, "messages", messages)
    return req


def _receive_many_request(handle: int, count: int, ms: int, xact: TransactionRef) -> ReceiveManyRequest:
    req: ReceiveManyRequest = _new(ReceiveManyRequest)
    _set(req, "handle", handle)
    _set(req, "max_count", count)
    _set(req, "request_timeout", ms)
    # Two-phase outside a transaction: recoverable messages are removed only on END_RECEIVE.
    _set(req, "flags", _CONFIRM if xact is None else 0)
    _set(req, "transaction", xact)
    _set(req, "propids", CLIENT_RECEIVE_PROPIDS)
    return req


#: GUID bytes_le -> UUID: the ids one server assigns share its lineage (one UUID build per server).
_LINEAGES: Final[dict[bytes, uuid.UUID]] = {}


def _lineage(key: bytes) -> uuid.UUID:
    # uuid.UUID(bytes_le=key) of 16 bytes, cached in _LINEAGES.
    lineage = _LINEAGES.get(key)
    if lineage is None:
        if len(_LINEAGES) > 1024:
            _LINEAGES.clear()
        lineage = _LINEAGES[key] = uuid.UUID(bytes_le=key)
    return lineage


def _object_id(raw: bytes) -> ObjectId:
    # ObjectId.from_bytes(raw) for 20 bytes, with the lineage UUID cached.
    # In range by construction (16 bytes, a u32): ObjectId's checks are skipped.
    return new_object_id(_lineage(raw[:16]), int.from_bytes(raw[16:], "little"))


def send_batches(
    t: Transport, handle: int, xact: TransactionRef, batch: list[Message], source: uuid.UUID, fmt: str
) -> None:
    """SEND_MANY the validated ``batch`` on queue ``handle``; sets what ``RemoteQueue.send`` sets.

    Raises the first error (see ``RemoteQueue.send_many``) after every frame written was answered,
    with ``failures``: every message not sent, as (index in ``batch``, error), in batch order.
    """
    failures: dict[int, MSMQError] = {}  # index in ``batch`` -> why that message was not sent
    # Frames of at most _SEND_CHUNK messages and the server's max_payload (docs/protocol.md 2.3),
    # each written as soon as it is encoded: the server works on one while the next is encoded.
    room = t.server_hello.max_payload - _FRAME_SLACK
    # (request id, its messages, their indexes in ``batch``) of each frame written
    frames: list[tuple[int, list[Message], list[int]]] = []
    # A frame the connection refuses (e.g. over a server's small max_payload): that message and the
    # later ones stay unsent.  A value the packet cannot hold (encoder): that message alone is not
    # sent, the others are, and the first such error is raised with the server's (as embedded).
    stop_error: MSMQError | None = None
    refused: MSMQError | None = None  # the first message the encoder refused
    size = 0
    packets: list[bytes] = []
    members: list[Message] = []
    indexes: list[int] = []

    def write() -> bool:
        nonlocal stop_error
        try:
            rid = t.send(_send_many_request(handle, xact, encode_packets(packets)))
        except MSMQError as exc:
            stop_error = exc
            return False
        frames.append((rid, members, indexes))
        return True

    for i, m in enumerate(batch):
        try:
            if m.admin_queue is not None or m.response_queue is not None:
                check_reply_queue_sizes(m)  # (as send: the name's size, before the server's limits)
            # encode_packet(m), its fast cases first (a SEND packet carries no destination).
            packet = encode_plain(m) or encode_simple(m) or encode_packet(m)
        except MSMQError as exc:
            refused = refused or exc
            failures[i] = exc
            continue
        cost = len(packet) + 8
        if packets and (len(packets) >= _SEND_CHUNK or size + cost > room):
            if not write():
                packets = []
                break
            size, packets, members, indexes = 0, [], [], []
        packets.append(packet)
        members.append(m)
        indexes.append(i)
        size += cost
    if packets:
        write()
    first: MSMQError | None = refused
    wait = t.wait
    lineages = _LINEAGES
    # The ids this server assigns have its GUID as lineage: the ``source`` object itself, so that a
    # message sent again finds its id's lineage and source machine identical (encode_plain).
    key = guid_bytes_le(source)
    if lineages.get(key) is not source:
        if len(lineages) > 1024:
            lineages.clear()
        lineages[key] = source
    for rid, sent, sent_indexes in frames:
        try:
            response = wait(rid)
        except MSMQError as exc:
            # No answer (the connection failed): the frame's messages may or may not be stored;
            # they are listed with this error (MQ_ERROR_SERVICE_NOT_AVAILABLE), as the docs say
            # (outside QA: it escaped with no ``failures`` at all).
            first = first or exc
            failures.update(dict.fromkeys(sent_indexes, exc))
            continue
        if type(response) is ErrorResponse:
            error = error_from(response)
            first = first or error
            failures.update(dict.fromkeys(sent_indexes, error))
            continue
        blob = cast(SendManyResponse, response).results
        ids = decode_sent_ids(blob)
        if ids is not None and len(ids) == len(sent):
            # Every message sent: what the general loop below sets, from (lineage, uniquifier, sent).
            # A batch's ids share their lineage and (sent at one instant) mostly their sent time:
            # the previous entry's lineage and float are reused while the raw values are equal.
            last_raw = b""
            last_seconds = -1
            run_lineage = source
            run_sent = 0.0
            for message, (raw, ordinal, seconds) in zip(sent, ids, strict=True):
                if raw != last_raw:
                    found = lineages.get(raw)
                    run_lineage = _lineage(raw) if found is None else found
                    last_raw = raw
                if seconds != last_seconds:
                    run_sent = float(seconds)
                    last_seconds = seconds
                message.id = new_object_id(run_lineage, ordinal)
                message.sent_time = run_sent
                message.source_machine_guid = source
                message.destination_queue = fmt
            continue
        try:
            results = decode_send_facts(blob)
        except WireError as exc:
            error = MSMQError(f"malformed SEND_MANY answer: {exc}", HResult.MQ_ERROR)
            first = first or error
            failures.update(dict.fromkeys(sent_indexes, error))  # (not known: counted as not)
            continue
        if len(results) != len(sent):
            error = MSMQError(
                f"SEND_MANY answered {len(results)} results for {len(sent)} messages", HResult.MQ_ERROR
            )
            first = first or error
            failures.update(dict.fromkeys(sent_indexes, error))
            continue
        for i, message, (hresult, mid, sent_at, text) in zip(sent_indexes, sent, results, strict=True):
            if hresult:
                refusal = send_refused(message, ErrorResponse(hresult, text))
                first = first or refusal
                failures[i] = refusal
                continue
            # What _apply_sent sets from a SEND answer's facts.
            if mid is not None and len(mid) == 20:
                lineage = lineages.get(mid[:16])
                message.id = (
                    _object_id(mid)
                    if lineage is None
                    else new_object_id(lineage, int.from_bytes(mid[16:], "little"))
                )
            if sent_at is not None:
                message.sent_time = float(sent_at)
            message.source_machine_guid = source
            message.destination_queue = fmt
    if stop_error is not None:
        # That frame's messages and every later one were not written.
        written = {i for _, _, written_indexes in frames for i in written_indexes}
        for i in range(len(batch)):
            if i not in written and i not in failures:
                failures[i] = stop_error
    raised = stop_error or first
    if raised is not None:
        raise raised.with_failures(failures.items())


def receive_batches(
    t: Transport, handle: int, count: int, ms: int, xact: TransactionRef, fmt: str, learned: int
) -> tuple[list[Message], int]:
    """Up to ``count`` messages of queue ``handle`` (``ms``: the wait for the first one) and the
    request size to use next time (``learned``: the current one).  See ``RemoteQueue.receive_many``.
    """
    if count <= 0:
        return [], learned
    rids: list[int] = []
    unread = 0
    window_waits = False
    out: list[Message] = []
    first: MSMQError | None = None
    remaining = count
    held: list[int] = []  # the first lookup id of each answer with held messages
    held_items: list[Message] = []  # the messages of those answers
    # A first request that may wait goes alone (later ones must not overtake it); after that,
    # windows of requests of the size one answer holds, each asking with timeout 0.
    wait_ms = ms
    try:
        while remaining > 0 and first is None:
            chunk = learned
            if wait_ms:
                asks = [remaining]
            else:
                asks = [min(chunk, remaining - i) for i in range(0, min(remaining, chunk * _WINDOW), chunk)]
            requests: list[pm.Request] = [_receive_many_request(handle, n, wait_ms, xact) for n in asks]
            window_waits = wait_ms != 0
            wait_ms = 0
            exhausted = False
            rids = t.send_many(requests)
            for unread, (rid, asked) in enumerate(zip(rids, asks, strict=True)):
                # An interrupt while waiting abandons this answer and the later ones of the window:
                # the messages they hold go back when they arrive (``GiveBack``).
                response = t.wait(rid)
                unread += 1
                if type(response) is ErrorResponse:
                    if response.hresult in _NO_MESSAGE:
                        exhausted = True
                    else:
                        first = first or error_from(response)
                    continue
                got = cast(ReceiveManyResponse, response)
                try:
                    items = decode_received(got.messages, fmt)
                except WireError as exc:
                    first = first or MSMQError(f"malformed RECEIVE_MANY answer: {exc}", HResult.MQ_ERROR)
                    continue
                out.extend(items)
                remaining -= len(items)
                if got.more & _HELD and items:
                    held.append(items[0].lookup_id or 0)
                    held_items.extend(items)
                if got.hresult:
                    first = first or error_from(ErrorResponse(got.hresult, got.text))
                elif got.more & _MORE:
                    if items and len(items) < asked:
                        learned = len(items)  # what one answer holds
                elif len(items) < asked:
                    exhausted = True
                elif asked == chunk < _GROW_BELOW:
                    # Full, not cut: after very large messages, small ones fit again.
                    learned = chunk * 2
            if exhausted:
                break
    except BaseException:
        if rids[unread:]:  # answers not read yet: back when they come (nobody waits for them)
            handler = GiveBack(t, handle, waits=window_waits)
            t.abandon(rids[unread:], handler)
            handler.interrupted(rids[unread])  # a first request still waiting stops waiting
        if held:  # (an interrupt, or the connection lost: then these END_RECEIVEs are not written)
            end_receives(t, handle, held, RR_NACK)  # the caller gets none of them: back they go
        raise
    if first is not None and first.hresult != HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE:
        # A later request of the batch failed (its handle closed by another thread, the queue
        # deleted): the express messages already taken are nowhere else, so they are the caller's
        # (outside QA: they were lost with the error); the held ones go back to their queue.
        # Only when nothing is left to give is the error raised.  (A lost connection raises: the
        # held messages go back with it, and which answers came is not the caller's to sort.)
        kept = {id(m) for m in held_items}
        given = [m for m in out if id(m) not in kept]
        if given:
            if held:
                end_receives(t, handle, held, RR_NACK)
            return given, learned
    if held:
        # Messages the caller gets are removed (RR_ACK); when an error is raised instead, the held
        # ones go back to their queue (RR_NACK) rather than be lost with the express ones.
        refused = end_receives(t, handle, held, RR_ACK if first is None else RR_NACK)
        first = first or refused
    if first is not None:
        raise first
    return out, learned


def held_head(response: object) -> int | None:
    """The lookup id END_RECEIVE names for the messages a receive's answer holds (two-phase, outside
    a transaction): the held message of a RECEIVE or RECEIVE_MATCHING answer, the first message of a
    RECEIVE_MANY or READ_RANGE answer marked ``ManyMore.HELD``; None when the answer holds nothing."""
    if isinstance(response, pm.ReceiveResponse):  # RECEIVE_MATCHING's answer is one too
        if is_held(response.properties):
            for pid, value in response.properties:
                if pid == PROPID_M_LOOKUPID and type(value.value) is int:
                    return value.value
        return None
    if type(response) is ReceiveManyResponse:
        if response.more & _HELD:
            items = decode_received(response.messages, "")
            return items[0].lookup_id if items else None
        return None
    if type(response) is pm.ReadRangeResponse and response.more & _HELD:
        return first_lookup_id(response.batch)
    return None


class GiveBack:
    """``Transport.abandon``'s handler for the answers of receives on ``handle`` that nobody will
    take (an interrupted call): what an answer holds goes back to its queue, in place (END_RECEIVE
    RR_NACK, written without waiting for its answer, which is dropped).

    ``waits``: the receives may wait for a message; ``interrupted(rid)`` then cancels one on the
    server (CANCEL_RECEIVE, [MS-MQRR] 3.1.4.8, when the server speaks protocol version 2), so that
    it takes no message that would arrive later for nobody.
    """

    __slots__ = ("_handle", "_t", "_waits")

    def __init__(self, t: Transport, handle: int, waits: bool) -> None:
        self._t = t
        self._handle = handle
        self._waits = waits

    def __call__(self, response: object) -> None:
        head = held_head(response)
        if head is not None:
            t = self._t
            t.abandon(t.send_many([pm.EndReceiveRequest(self._handle, head, RR_NACK)]))

    def interrupted(self, rid: int) -> None:
        """The call waiting for request ``rid`` was interrupted: stop the server's wait too."""
        t = self._t
        if self._waits and t.server_hello.version >= _CANCEL_VERSION:
            t.abandon(t.send_many([pm.CancelReceiveRequest(self._handle, rid)]))


def end_receives(t: Transport, handle: int, heads: list[int], ack: int) -> MSMQError | None:
    """END_RECEIVE ``ack`` ([MS-MQRR] 3.1.4.9) for each of ``heads``, written at once: the lookup
    id of a held message, or of the first message of an answer that holds several (RECEIVE_MANY,
    READ_RANGE; docs/protocol.md).  Returns the first error, for the caller to raise.

    An error answered means those messages are back in their queue; so does an END_RECEIVE that
    cannot be written (the server gives them back when the connection closes).  A connection lost
    after they were written leaves the messages with the caller: the server either removed them or
    gives them back -- received at least once, never lost.
    """
    requests: list[pm.Request] = [pm.EndReceiveRequest(handle, head, ack) for head in heads]
    rids: list[int] | None = None
    responses: list[object] | None = None
    try:
        # Ctrl-C is held from the write to the last answer (``Transport.uninterrupted``): once an
        # RR_ACK is written the server removes the messages, which are the caller's, so an
        # interrupt raised anywhere between (as the write returned, or as an answer was read)
        # would lose them.  The wait is bounded: a dead server ends it (liveness).
        with t.uninterrupted():
            rids = t.send_many(requests)
            answers: list[object] = []
            for rid in rids:
                while True:
                    try:
                        answers.append(t.wait(rid))
                        break
                    except MSMQError:
                        raise
                    except BaseException:
                        # An interrupt the hold did not keep out (an application thread took
                        # the signal): after an RR_ACK it is dropped and the wait goes on (an
                        # answer read meanwhile was kept for it).
                        if ack != RR_ACK:
                            raise
            responses = answers
    except MSMQError as exc:
        # Not written: the server gives the held messages back when the connection closes.
        # Written, then the connection was lost: the server removed them or gives them back.
        return exc if rids is None else None
    except BaseException:
        # The Ctrl-C held meanwhile, raised as the block ends: for an RR_ACK it is dropped, the
        # caller gets its messages (an RR_NACK's caller gets the interrupt).
        if ack != RR_ACK or responses is None:
            raise
    assert responses is not None
    refused: MSMQError | None = None
    for response in responses:
        if type(response) is ErrorResponse:
            refused = refused or error_from(response)
    return refused
