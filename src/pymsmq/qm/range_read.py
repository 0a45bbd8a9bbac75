"""Bulk reads of a lookup-id range: the queue-manager side of READ_RANGE (docs/protocol.md).

``read_range(queue, ...)`` peeks at (or receives) every message whose lookup id lies in
``[from_lookup_id, to_lookup_id)`` in ascending lookup-id order, up to a count and a byte budget, in
one pass under the queue manager's lock.  It is what the Spark data source uses to read a queue (a
journal, a dead-letter queue, a subqueue) range by range.  Lookup ids are unique and increasing per
queue ([MS-MQDMPR] 3.1.1.12 LookupIdentifier), so a range is a stable, replayable slice of the queue.

``high_water`` is the lookup id below which the queue is settled: every id below it is either in the
queue already or will never appear there (ids held by a send being written or committed are
PENDING, and the high water stays at the lowest of them; an open transaction's sends hold no id
below it: they take theirs at its commit, after every message there).  A reader that advances only
up to the high water never skips a message that becomes visible later.  (A message moved back from a
subqueue keeps its old lookup id; such moves are outside this guarantee.)

``past_pending``: the selection goes past the high water, up to the last lookup id handed out,
and ``high_water`` is the queue's next lookup id: a batch read (a snapshot of what is visible)
reads the messages written after a send still being written.  Messages still pending are not
visible, so they are skipped, as locked ones are.

``until_held``: the high water also stops at the lowest lookup id at or after ``from_lookup_id`` of a
message that is held (LOCKED by another transaction's receive or by a two-phase receive, and not
peekable): such a message may come back when its holder aborts, so a reader that moves past it
would never see it.  A stream (``pymsmq.spark.stream``) reads with it.

Receiving: inside a ``Transaction`` each message is locked as a transactional receive would lock it
([MS-MQDMPR] 3.1.7.1.13 with a transaction) and is deleted when the transaction commits; without
one, all the messages taken are deleted with one durable write.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from heapq import merge
from typing import TYPE_CHECKING, Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.hold import Hold, remove_taken
from pymsmq.qm.index import LOCKED, PENDING, Entry, MessageIndex
from pymsmq.qm.transaction import Transaction

if TYPE_CHECKING:
    from pymsmq.model.message import Message
    from pymsmq.qm.queue import Queue

__all__ = ["RangeResult", "read_range"]

_RECEIVE: Final = 1  # MQ_RECEIVE_ACCESS
_PEEK: Final = 0x20  # MQ_PEEK_ACCESS
_NO_LIMIT: Final = 1 << 64
_OVERHEAD: Final = 172  # MESSAGE_BATCH bytes per message besides its variable values (7 columns)


@dataclass(slots=True)
class RangeResult:
    """What ``read_range`` found: the messages and where the range stands."""

    #: The messages in lookup-id order (peek: the queue's own objects; do not change them).
    messages: list[Message] = field(default_factory=list)
    #: True when ``max_count`` or ``max_bytes`` cut the range short; continue at ``next_lookup_id``.
    more: bool = False
    next_lookup_id: int = 0
    #: Lowest live lookup id of the queue (``high_water`` when it is empty).
    first_lookup_id: int = 0
    high_water: int = 0
    queue_count: int = 0


def _size(m: Message) -> int:
    # The message's bytes in a MESSAGE_BATCH: its text columns in UTF-8, the queue names included
    # (outside QA: 30,000 small messages made a 5.1 MB answer, over a client's frame limit, as the
    # destination queue's name was not counted).
    label = m.label
    texts = len(label) if label.isascii() else len(label.encode("utf-8", "surrogatepass"))
    for name in (m.destination_queue, m.response_queue, m.admin_queue):
        if name:
            texts += len(name)  # (format names are ASCII)
    return _OVERHEAD + len(m.body) + len(m.extension) + texts


def _first_held(index: MessageIndex, from_lookup_id: int, stop: int) -> int:
    """The lowest lookup id in ``[from_lookup_id, stop)`` of a held message, else ``stop``.

    Held: LOCKED ([MS-MQDMPR] 3.1.1.11) by a receive that may still give it back, and not
    peekable (AllowPeekWhenLocked, 3.1.1.12).  A message purged while locked is deleted when its
    transaction ends either way (PurgePending), so it is not held.
    """
    entries = index._entries
    for lst, head in zip(index._lists, index._heads, strict=True):
        for i in range(bisect_left(lst, from_lookup_id, head), len(lst)):
            lid = lst[i]
            if lid >= stop:
                break
            e = entries.get(lid)
            if e is not None and e.state == LOCKED and not e.allow_peek and not e.purge_pending:
                stop = lid
                break
    return stop


def read_range(
    queue: Queue,
    from_lookup_id: int = 0,
    to_lookup_id: int = 0,
    max_count: int = 0xFFFFFFFF,
    max_bytes: int = 0x003F0000,
    receive: bool = False,
    transaction: Transaction | Hold | int | None = None,
    min_priority: int = 0,
    max_priority: int = 7,
    until_held: bool = False,
    past_pending: bool = False,
    moved_before: float | None = None,
) -> RangeResult:
    """Peek at (or receive) the messages of ``queue`` with ``from_lookup_id <= lookup_id < to_lookup_id``.

    ``to_lookup_id`` 0 means no upper bound; ``max_count`` 0 returns only the queue facts.  Messages
    locked by another transaction are skipped (a peek sees them only when received with
    "allow peek").  Raises ``MSMQError`` like ``Queue.receive``/``peek`` (closed handle, access,
    transaction usage).  A receive outside a transaction removes the messages with one durable
    write; with a ``Hold`` as ``transaction`` the recoverable ones are held instead (a two-phase
    receive, qm/hold.py) and the express ones removed.  ``until_held``, ``past_pending``: see the
    module docstring.  ``moved_before`` (POSIX seconds): only messages never moved between the
    queue and a subqueue, or last moved before it, are selected (``RangeFlags.MOVED_BEFORE``).
    """
    if not 0 <= from_lookup_id < _NO_LIMIT or not 0 <= to_lookup_id < _NO_LIMIT:
        raise MSMQError("lookup ids are 64-bit unsigned", HResult.MQ_ERROR_INVALID_PARAMETER)
    if not 0 <= min_priority <= 7 or not 0 <= max_priority <= 7:
        raise MSMQError("priorities are 0..7", HResult.MQ_ERROR_INVALID_PARAMETER)
    end = to_lookup_id or _NO_LIMIT
    peek = not receive
    tx = None if peek else queue._transaction(transaction, receive=True)
    qm = queue._qm
    result = RangeResult()
    taken: list[Entry] = []
    with qm._lock:
        queue._check(_PEEK | _RECEIVE if peek else _RECEIVE)
        index = queue._index()
        entries = index._entries
        # High water: the next lookup id to be handed out, or the lowest id still PENDING.
        high = queue._state.next_lookup
        if index.pending and not past_pending:
            pending = [lid for lid, e in entries.items() if e.state == PENDING]
            if pending:
                high = min(high, min(pending))
        if until_held and index.locked:
            high = min(high, _first_held(index, from_lookup_id, min(end, high)))
        result.high_water = high
        result.queue_count = len(index)
        first = high
        for lst, h in zip(index._lists, index._heads, strict=True):
            for i in range(h, len(lst)):  # skip tombstones and PENDING entries at the head
                e = entries.get(lst[i])
                if e is not None and e.state != PENDING:
                    first = min(first, lst[i])
                    break
        result.first_lookup_id = first
        stop = min(end, high)
        if max_count == 0 or from_lookup_id >= stop:
            result.next_lookup_id = from_lookup_id
            return result
        runs = []
        for p in range(min_priority, max_priority + 1):
            lst = index._lists[p]
            head = index._heads[p]
            if head >= len(lst):
                continue
            a = bisect_left(lst, from_lookup_id, head)
            b = bisect_left(lst, stop, a)
            if a < b:
                runs.append(lst[a:b])
        ids = runs[0] if len(runs) == 1 else list(merge(*runs)) if runs else []
        out = result.messages
        budget = max_bytes
        nxt = stop
        for lid in ids:
            e = entries.get(lid)
            if e is None or not e.visible(peek):
                continue
            if moved_before is not None:
                moved = e.message.last_move_time
                if moved is not None and moved >= moved_before:
                    continue
            size = _size(e.message)
            if len(out) >= max_count or (out and budget - size < 0):
                result.more = True
                nxt = lid
                break
            budget -= size
            if peek:
                out.append(e.message)
            else:
                out.append(queue._take(index, e, tx, False))
                taken.append(e)
        result.next_lookup_id = nxt
    if type(tx) is Hold:  # the recoverable ones are held (Queue._take), the express ones go now
        taken = [e for e in taken if not e.durable]
    if taken and not isinstance(tx, Transaction):
        remove_taken(queue, queue._index(), taken)
    return result
