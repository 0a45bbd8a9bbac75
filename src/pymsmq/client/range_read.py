"""Bulk lookup-id range reads for embedded and remote queues (READ_RANGE, docs/protocol.md).

``read_range(queue, ...)`` works on a ``pymsmq.Queue`` (embedded) and on a ``RemoteQueue`` (one
READ_RANGE request) and returns a ``RangeBatch``: the columnar MESSAGE_BATCH blob plus where the range
stands.  ``iter_range`` follows ``next_lookup_id`` until a range is read completely, keeping
``depth`` requests in flight on a remote queue.  ``queue_position`` is the cheap "where is the queue"
call (no messages): lowest live lookup id, high water and message count.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pymsmq.client.many import end_receives
from pymsmq.client.remote import RemoteQueue, RemoteTransaction
from pymsmq.client.remote_transaction import _receive_xact
from pymsmq.client.transport import error_from
from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.model.message import Message
from pymsmq.protocol import ErrorResponse
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import RR_ACK, ManyMore, RangeFlags
from pymsmq.protocol.message_batch import decode_batch, encode_batch, first_lookup_id

if TYPE_CHECKING:  # (the embedded queue manager is imported when an embedded queue is read)
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.transaction import Transaction

__all__ = ["DEFAULT_MAX_BYTES", "RangeBatch", "iter_range", "queue_position", "read_range"]

#: Default MESSAGE_BATCH budget: under the 4 MiB + 64 KiB frame payload limit with room to spare.
DEFAULT_MAX_BYTES: Final = 0x003F0000
_CHUNK: Final = 8192


@dataclass(frozen=True, slots=True)
class RangeBatch:
    """One READ_RANGE answer."""

    count: int
    more: bool
    next_lookup_id: int
    first_lookup_id: int
    high_water: int
    queue_count: int
    #: The MESSAGE_BATCH blob (``pymsmq.protocol.message_batch``); empty with ``no_data``.
    batch: bytes

    def messages(self) -> list[Message]:
        """The batch decoded into ``Message`` objects."""
        return decode_batch(self.batch) if self.batch else []


def _request(
    queue: RemoteQueue,
    from_lookup_id: int,
    to_lookup_id: int,
    max_count: int,
    max_bytes: int,
    receive: bool,
    transaction: object,
    min_priority: int,
    max_priority: int,
    no_data: bool,
    until_held: bool = False,
    past_pending: bool = False,
    moved_before: int | None = None,
) -> pm.ReadRangeRequest:
    queue._check()
    flags = (RangeFlags.RECEIVE if receive else 0) | (RangeFlags.NO_DATA if no_data else 0)
    if moved_before is not None:
        flags |= RangeFlags.MOVED_BEFORE
    if until_held:
        flags |= RangeFlags.UNTIL_HELD
    if past_pending:
        flags |= RangeFlags.PAST_PENDING
    if not no_data:
        flags |= RangeFlags.LAST_MOVE_TIME | RangeFlags.DESTINATION_FORMAT_NAME
    xact = _receive_xact(queue._qm, transaction) if receive else None
    if receive and xact is None and not no_data:
        flags |= RangeFlags.CONFIRM  # two-phase: recoverable messages removed once they are here
    return pm.ReadRangeRequest(
        queue._handle,
        from_lookup_id,
        to_lookup_id,
        max_count,
        max_bytes,
        flags,
        xact,
        min_priority,
        max_priority,
    )


def _from_response(r: pm.ReadRangeResponse) -> RangeBatch:
    return RangeBatch(
        r.count,
        bool(r.more & ManyMore.MORE),
        r.next_lookup_id,
        r.first_lookup_id,
        r.high_water,
        r.queue_count,
        r.batch,
    )


def _acknowledge(queue: RemoteQueue, r: pm.ReadRangeResponse) -> None:
    """END_RECEIVE RR_ACK for the messages a READ_RANGE answer holds (``ManyMore.HELD``): it names
    the batch's first message (docs/protocol.md, READ_RANGE); raised when refused or not written
    (the messages are then back in their queue; ``many.end_receives``)."""
    head = first_lookup_id(r.batch)
    if not r.more & ManyMore.HELD or head is None:
        return
    refused = end_receives(queue._t, queue._handle, [head], RR_ACK)
    if refused is not None:
        raise refused


def read_range(
    queue: Queue | RemoteQueue,
    from_lookup_id: int = 0,
    to_lookup_id: int = 0,
    *,
    max_count: int = 0xFFFFFFFF,
    max_bytes: int = DEFAULT_MAX_BYTES,
    receive: bool = False,
    transaction: Transaction | RemoteTransaction | int | None = None,
    min_priority: int = 0,
    max_priority: int = 7,
    no_data: bool = False,
    until_held: bool = False,
    past_pending: bool = False,
    moved_before: int | None = None,
) -> RangeBatch:
    """Peek at (or ``receive``) the messages with ``from_lookup_id <= lookup_id < to_lookup_id``.

    ``to_lookup_id`` 0 = no upper bound.  At most ``max_count`` messages and about ``max_bytes`` of
    batch (at least one message); ``more`` tells whether to continue at ``next_lookup_id``.  With
    ``no_data`` nothing is sent back, so the byte budget does not apply.  With ``until_held`` the
    high water (and so the range read) also stops at the first message at or after
    ``from_lookup_id`` that a receive holds and may give back (``RangeFlags.UNTIL_HELD``).  With
    ``past_pending`` the selection goes past the high water, skipping sends not yet committed, and
    ``high_water`` is the queue's next lookup id (``RangeFlags.PAST_PENDING``).  With
    ``moved_before`` (seconds since 1970 UTC; ``no_data`` only) only messages never moved between
    the queue and a subqueue, or last moved before that time, are selected
    (``RangeFlags.MOVED_BEFORE``).
    """
    if moved_before is not None and (not no_data or not 0 <= moved_before <= 0xFFFFFFFF):
        raise MSMQError("moved_before is a u32 time, with no_data only", HResult.MQ_ERROR_INVALID_PARAMETER)
    if no_data:
        max_bytes = 0xFFFFFFFF if moved_before is None else moved_before
    if isinstance(queue, RemoteQueue):
        req = _request(
            queue,
            from_lookup_id,
            to_lookup_id,
            max_count,
            max_bytes,
            receive,
            transaction,
            min_priority,
            max_priority,
            no_data,
            until_held,
            past_pending,
            moved_before,
        )
        t = queue._t
        # Interrupted while waiting, the answer is abandoned: what it holds goes back (many.GiveBack).
        give_back = queue._give_back() if req.flags & RangeFlags.CONFIRM else None
        response = t.wait(t.send(req), None, give_back, abandon=True)
        if type(response) is ErrorResponse:
            raise error_from(response)
        assert isinstance(response, pm.ReadRangeResponse)
        _acknowledge(queue, response)
        return _from_response(response)
    from pymsmq.qm.range_read import read_range as qm_read_range

    r = qm_read_range(
        queue,
        from_lookup_id,
        to_lookup_id,
        max_count,
        max_bytes,
        receive,
        transaction,  # type: ignore[arg-type]
        min_priority,
        max_priority,
        until_held,
        past_pending,
        moved_before,
    )
    batch = b"" if no_data else encode_batch(r.messages, last_move_time=True, destination_format_name=True)
    return RangeBatch(
        len(r.messages),
        r.more,
        r.next_lookup_id,
        r.first_lookup_id,
        r.high_water,
        r.queue_count,
        batch,
    )


def queue_position(queue: Queue | RemoteQueue, past_pending: bool = False) -> RangeBatch:
    """The queue's lowest live lookup id, high water and message count, without any message
    (``past_pending``: the high water is the queue's next lookup id)."""
    return read_range(queue, 0, 0, max_count=0, no_data=True, past_pending=past_pending)


def _rest(
    queue: Queue | RemoteQueue,
    rb: RangeBatch,
    b: int,
    kw: dict[str, Any],
    held_timeout: float | None,
) -> Iterator[RangeBatch]:
    """The rest of the sub-range ``[.., b)`` after its answer ``rb``: follow ``more`` and, with
    ``held_timeout``, wait for the part that is not settled (``rb`` ended before ``b``)."""
    deadline = None if held_timeout is None else time.monotonic() + held_timeout
    delay = 0.005
    while (a := rb.next_lookup_id) < b:
        if not rb.more:
            if deadline is None:
                return
            if time.monotonic() >= deadline:
                raise MSMQError(
                    f"lookup ids {a} to {b - 1} of {quoted(queue.format_name)} are still held after"
                    f" {held_timeout:g} s: a message there was received inside a transaction not yet"
                    " ended or by a two-phase receive not yet acknowledged, and may come back",
                    HResult.MQ_ERROR_IO_TIMEOUT,
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        rb = read_range(queue, a, b, **kw)
        if rb.count:
            yield rb


def iter_range(
    queue: Queue | RemoteQueue,
    from_lookup_id: int,
    to_lookup_id: int,
    *,
    chunk: int = _CHUNK,
    max_bytes: int = DEFAULT_MAX_BYTES,
    min_priority: int = 0,
    max_priority: int = 7,
    depth: int = 4,
    held_timeout: float | None = None,
    past_pending: bool = False,
) -> Iterator[RangeBatch]:
    """Peek at the whole range ``[from_lookup_id, to_lookup_id)`` (``to_lookup_id`` > 0) in batches.

    The range is cut into sub-ranges of ``chunk`` lookup ids; on a remote queue ``depth`` of them are
    requested at once (pipelined), and a sub-range cut short by ``max_bytes`` is continued where it
    stopped.  Batches come in lookup-id order; empty ones are skipped.

    ``held_timeout`` (seconds): read with ``until_held`` and, where the range is not settled (a
    message in it is held by a receive that may give it back, or a send to it is not committed),
    wait until it is and read on; ``MSMQError`` (MQ_ERROR_IO_TIMEOUT) after that long.  ``None``:
    read what is visible now and skip the rest.  ``past_pending``: see ``read_range``.
    """
    if to_lookup_id <= from_lookup_id:
        return
    bounds = [(a, min(a + chunk, to_lookup_id)) for a in range(from_lookup_id, to_lookup_id, chunk)]
    until_held = held_timeout is not None
    kw: dict[str, Any] = {
        "max_bytes": max_bytes,
        "min_priority": min_priority,
        "max_priority": max_priority,
        "until_held": until_held,
        "past_pending": past_pending,
    }
    if not isinstance(queue, RemoteQueue):
        for a, b in bounds:
            rb = read_range(queue, a, b, **kw)
            if rb.count:
                yield rb
            yield from _rest(queue, rb, b, kw, held_timeout)
        return
    t = queue._t
    pending: list[tuple[int, int]] = []  # (request id, sub-range end)
    position = 0

    def submit() -> None:
        nonlocal position
        a, b = bounds[position]
        position += 1
        req = _request(
            queue,
            a,
            b,
            0xFFFFFFFF,
            max_bytes,
            False,
            None,
            min_priority,
            max_priority,
            False,
            until_held,
            past_pending,
        )
        pending.append((t.send(req), b))

    try:
        while position < len(bounds) and len(pending) < depth:
            submit()
        while pending:
            rid, b = pending[0]
            resp = t.wait(rid)
            pending.pop(0)
            if type(resp) is ErrorResponse:
                raise error_from(resp)
            assert isinstance(resp, pm.ReadRangeResponse)
            rb = _from_response(resp)
            if position < len(bounds):
                submit()
            if rb.count:
                yield rb
            yield from _rest(queue, rb, b, kw, held_timeout)
    finally:
        # Left early (the caller stopped iterating, or an error): the answers still on the way are
        # dropped as they come, not kept for nobody.
        if pending:
            t.abandon([rid for rid, _ in pending])
