"""The per-queue message index: [MS-MQDMPR] 3.1.1.2 MessagePositionList.

Order: higher priority first, FIFO (= ascending lookup id) within a priority ([MC-MQAC] 3.1.1,
[MS-MQDMPR] 3.1.1.2 "ordered by arrival time within priority").  Lookup ids increase per queue, so
each priority keeps a plain ascending list of lookup ids with a moving head offset; the entries
themselves live in a dict keyed by lookup id.

* Head access is O(1) amortised: removed ids at the front are skipped once and the head offset moves
  past them, so receive cost does not grow with the backlog.
* Removal anywhere is O(1) (the id stays in its list as a tombstone until the head passes it or the
  list is compacted); insertion is an append except for the rare out-of-order id (a concurrent
  durable send, a subqueue move back), which is a bisect and a list insert.
* Seeking before/after a position (cursors, lookup-id navigation) is a bisect plus a scan.
* The first AVAILABLE entry (what a receive takes) is found without rescanning the entries LOCKED by
  open transactions at the head: each priority keeps a mark below which nothing is AVAILABLE, moved
  back whenever an entry before it becomes AVAILABLE (lock released, send committed or made
  durable, message added).  Without it, a transaction receiving n messages one by one would scan
  n * n / 2 locked entries.

Entry states ([MS-MQDMPR] 3.1.1.11 MessagePosition.State): AVAILABLE; LOCKED (received inside an
uncommitted transaction, or being deleted durably); PENDING (sent inside an uncommitted
transaction, or waiting for its durable write) which nobody sees.  Deleted entries leave the index.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pymsmq.model.ids import ObjectId
    from pymsmq.model.message import Message

__all__ = ["AVAILABLE", "LOCKED", "PENDING", "ByteTotal", "Entry", "IdTable", "MessageIndex"]

#: Entries ``MessageIndex.made_available`` lists at most while cursor reads wait.
MADE_AVAILABLE_KEPT: Final = 4096

AVAILABLE: Final = 0
LOCKED: Final = 1
PENDING: Final = 2

_COMPACT_MIN: Final = 1024
_new: Final = object.__new__


#: Lookup ids from here on are an open transaction's sends, placed at its commit
#: (transaction._place_at_commit): above every real one, so that they hold no reader back (the
#: high water, qm/range_read.py) and take no id from the queue before they arrive.
UNCOMMITTED_LOOKUP_IDS: Final = 1 << 63
_uncommitted: Final = itertools.count(UNCOMMITTED_LOOKUP_IDS)


def uncommitted_lookup_id() -> int:
    """A lookup id for the PENDING entry of a send inside an open transaction (unique)."""
    return next(_uncommitted)


class Entry:
    """One message position: the message (or its stored packet) plus queue-manager facts."""

    __slots__ = (
        "allow_peek",
        "durable",
        "expires_at",
        "lookup_id",
        "message",
        "packet",
        "priority",
        "purge_pending",
        "size",
        "state",
        "subqueue",
    )

    def __init__(
        self,
        lookup_id: int,
        priority: int,
        message: Message,
        size: int,
        state: int = AVAILABLE,
        durable: bool = False,
        expires_at: float | None = None,
        subqueue: str = "",
    ) -> None:
        self.lookup_id = lookup_id
        self.priority = priority
        self.message = message
        self.size = size
        self.state = state
        self.durable = durable
        self.expires_at = expires_at
        self.subqueue = subqueue
        # [MS-MQDMPR] 3.1.1.12 AllowPeekWhenLocked (set by ReceiveByLookupIdAllowPeek): only through
        # ``MessageIndex.lock``, which keeps the peek mark right; cleared when the lock ends.
        self.allow_peek = False
        # [MS-MQDMPR] 3.1.1.11 PurgePending: purged while locked; deleted when its transaction ends.
        self.purge_pending = False
        # The message's UserMessage packet as a receive on its queue's handle answers it, when the
        # sender kept one (send_batch.send_express); None: encode the message.
        self.packet: bytes | None = None

    def visible(self, peek: bool) -> bool:
        """Suitable for a receive (Available) or a peek (also Locked with AllowPeekWhenLocked)."""
        state = self.state
        return state == AVAILABLE or (peek and state == LOCKED and self.allow_peek)


class IdTable:
    """The entries of one index grouped by the value of one field of their message ("id" or
    "correlation_id"): what a read by message id or correlation id looks at instead of the whole
    queue (``pymsmq.qm.matching``).  Messages without the field (None) are not filed: no read
    looks for None.  A group is keyed by lookup id, so removal is O(1) however many messages
    share a value."""

    __slots__ = ("_groups", "arrived", "field", "watched")

    def __init__(self, field: str) -> None:
        self.field = field
        self._groups: dict[ObjectId, dict[int, Entry]] = {}
        #: The values waiting reads look for, each with the number of their notification groups
        #: (``WatchedCondition.arm``).
        self.watched: dict[ObjectId, int] = {}
        #: The watched values a message with that value became readable for (filed readable, or
        #: made Available) since the queue's notifications last looked at them: an arrival looks
        #: at the waiting reads of its own value only (``WatchedCondition.poll_watchers``).
        self.arrived: set[ObjectId] = set()

    def add(self, entry: Entry) -> None:
        """File ``entry`` under its message's value."""
        key = getattr(entry.message, self.field)
        if key is None:
            return
        group = self._groups.get(key)
        if group is None:
            self._groups[key] = {entry.lookup_id: entry}
        else:
            group[entry.lookup_id] = entry
        if key in self.watched and entry.visible(True):
            self.arrived.add(key)

    def made_available(self, entry: Entry) -> None:
        """``entry`` (filed) became Available: a read waiting for its value may take it now."""
        key = getattr(entry.message, self.field)
        if key in self.watched:
            self.arrived.add(key)

    def watch(self, value: ObjectId) -> None:
        """A group of reads waiting for ``value`` was armed."""
        self.watched[value] = self.watched.get(value, 0) + 1

    def unwatch(self, value: ObjectId) -> None:
        """A group of reads waiting for ``value`` ended."""
        count = self.watched.get(value, 0) - 1
        if count > 0:
            self.watched[value] = count
        else:
            self.watched.pop(value, None)
            self.arrived.discard(value)

    def remove(self, entry: Entry) -> None:
        """Forget ``entry`` (nothing when it is not filed)."""
        key = getattr(entry.message, self.field)
        group = self._groups.get(key)
        if group is not None and group.pop(entry.lookup_id, None) is not None and not group:
            del self._groups[key]

    def group(self, value: ObjectId) -> dict[int, Entry]:
        """The live entries whose message has ``value`` (any state; by lookup id); do not mutate."""
        return self._groups.get(value, _EMPTY_GROUP)

    def __len__(self) -> int:
        """The number of distinct values."""
        return len(self._groups)


_EMPTY_GROUP: Final[dict[int, Entry]] = {}


class ByteTotal:
    """A running sum of message sizes that many indexes add to (all the queues of a queue manager).

    ``QueueManager.total_bytes`` (the machine quota's measure) reads it instead of summing every
    queue on each send.
    """

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class MessageIndex:
    """The ordered positions of one queue or subqueue."""

    __slots__ = (
        "_dead",
        "_entries",
        "_heads",
        "_lists",
        "_peek_skip",
        "_skip",
        "_tables",
        "cursor_waits",
        "locked",
        "made_available",
        "made_available_seq",
        "pending",
        "pending_bytes",
        "shared",
        "total_bytes",
    )

    def __init__(self, shared: ByteTotal | None = None) -> None:
        #: The sum this index's ``total_bytes`` is part of (its own when not given).
        self.shared = ByteTotal() if shared is None else shared
        self._lists: list[list[int]] = [[] for _ in range(8)]
        self._heads = [0] * 8
        self._dead = [0] * 8
        # Per priority: a position in the list such that no entry between the head and it is
        # AVAILABLE (removed ids and LOCKED or PENDING entries only): ``first`` starts there.
        self._skip = [0] * 8
        # The same for peeks: no entry between the head and it is AVAILABLE or LOCKED with
        # AllowPeekWhenLocked: ``first(peek=True)`` starts there.
        self._peek_skip = [0] * 8
        self._entries: dict[int, Entry] = {}
        # The entries by their message's id or correlation id, kept once a read by that field
        # asked (``by_field``); empty until then, so queues never read that way pay one test.
        self._tables: dict[str, IdTable] = {}
        self.total_bytes = 0
        self.locked = 0
        self.pending = 0
        #: The bytes of the PENDING entries (part of ``total_bytes``, which the quota counts, but
        #: not of what the queue shows: ``shown_bytes``).
        self.pending_bytes = 0
        #: Reads waiting at a cursor on this index (``cursor.Cursor._begin_wait``); while there are
        #: any, the entries that become AVAILABLE other than by a send's arrival (a commit, an abort
        #: that returns one, a move) are listed in ``made_available``: one ahead of a waiting cursor
        #: satisfies its wait ([MS-MQDMPR] 3.2.7.5), where its seek forward would never find it.
        self.cursor_waits = 0
        self.made_available: list[tuple[int, Entry]] = []
        #: The number the next entry listed in ``made_available`` gets (a wait looks at those
        #: listed from the number it began with).
        self.made_available_seq = 0

    # --- bookkeeping
    def __len__(self) -> int:
        """Messages in the queue: available and locked ones (uncommitted sends excluded)."""
        return len(self._entries) - self.pending

    @property
    def shown_bytes(self) -> int:
        """The bytes of the messages ``len`` counts: ``total_bytes`` but the uncommitted sends'."""
        return self.total_bytes - self.pending_bytes

    @property
    def holds_nothing(self) -> bool:
        """No entry at all: none available, locked or pending."""
        return not self._entries

    def __contains__(self, lookup_id: object) -> bool:
        return lookup_id in self._entries

    def get(self, lookup_id: int) -> Entry | None:
        """The live entry with ``lookup_id`` (any state), or None."""
        return self._entries.get(lookup_id)

    def add(self, entry: Entry) -> None:
        """Insert ``entry`` at its place in the order."""
        lid = entry.lookup_id
        p = entry.priority
        lst = self._lists[p]
        if not lst or lst[-1] < lid:
            lst.append(lid)  # at or after the mark: nothing to move
        else:
            head = self._heads[p]
            pos = bisect_left(lst, lid, head)
            if pos < len(lst) and lst[pos] == lid:
                self._dead[p] -= 1  # revive a tombstone (a subqueue move back)
            elif pos == head and head > 0:
                self._heads[p] = head - 1
                lst[head - 1] = lid
                pos = head - 1
            else:
                lst.insert(pos, lid)
                if pos < self._skip[p]:
                    self._skip[p] += 1  # the positions from pos on moved up by one
                if pos < self._peek_skip[p]:
                    self._peek_skip[p] += 1
            if entry.state == AVAILABLE and pos < self._skip[p]:
                self._skip[p] = pos
            if entry.visible(True) and pos < self._peek_skip[p]:
                self._peek_skip[p] = pos
        self._entries[lid] = entry
        self.total_bytes += entry.size
        self.shared.value += entry.size
        if entry.state == LOCKED:
            self.locked += 1
        elif entry.state == PENDING:
            self.pending += 1
            self.pending_bytes += entry.size
        elif self.cursor_waits:
            self._made_available(entry)
        if self._tables:
            self._file(entry)

    def _made_available(self, entry: Entry) -> None:
        listed = self.made_available
        listed.append((self.made_available_seq, entry))
        self.made_available_seq += 1
        if len(listed) > MADE_AVAILABLE_KEPT:
            # Bounded: the entries taken or locked since go (outside QA: a cap that stopped the
            # listing made a wait that outlived 4,096 commits miss one ahead of it); if that is
            # not enough, the older half (each was looked at by the waits when it was listed).
            entries = self._entries
            listed[:] = [(n, e) for n, e in listed if entries.get(e.lookup_id) is e and e.state == AVAILABLE]
            if len(listed) > MADE_AVAILABLE_KEPT // 2:
                del listed[: len(listed) - MADE_AVAILABLE_KEPT // 2]

    def add_new(
        self, lookup_id: int, priority: int, message: Message, size: int, state: int, expires_at: float | None
    ) -> Entry:
        """``add(Entry(lookup_id, priority, message, size, state, False, expires_at))``; returns the entry.

        The send path's constructor: the entry of a message just enqueued (not durable yet, main
        queue, no transaction facts), built without the keyword-defaulting ``Entry.__init__``.
        """
        entry: Entry = _new(Entry)
        entry.lookup_id = lookup_id
        entry.priority = priority
        entry.message = message
        entry.size = size
        entry.state = state
        entry.durable = False
        entry.expires_at = expires_at
        entry.subqueue = ""
        entry.allow_peek = False
        entry.purge_pending = False
        entry.packet = None
        # ``add`` inlined; a new lookup id is normally the largest of its priority: append.  An
        # uncommitted one is in no order until ``place`` (it is nowhere in the queue yet).
        if lookup_id < UNCOMMITTED_LOOKUP_IDS:
            lst = self._lists[priority]
            if lst and lst[-1] >= lookup_id:
                self.add(entry)
                return entry
            lst.append(lookup_id)
        self._entries[lookup_id] = entry
        self.total_bytes += size
        self.shared.value += size
        if state == PENDING:
            self.pending += 1
            self.pending_bytes += size
        elif state == LOCKED:
            self.locked += 1
        if self._tables:
            self._file(entry)
        return entry

    def place(self, entry: Entry, lookup_id: int) -> None:
        """Give the entry of a send made in a transaction (an ``uncommitted_lookup_id``) its real
        ``lookup_id`` at the commit: into the queue's order, after every message there."""
        self.remove(entry)
        entry.lookup_id = lookup_id
        self.add(entry)

    def set_state(self, entry: Entry, state: int) -> None:
        """Change ``entry.state`` keeping the counters right."""
        old = entry.state
        if old == state:
            return
        if old == LOCKED:
            self.locked -= 1
        elif old == PENDING:
            self.pending -= 1
            self.pending_bytes -= entry.size
        if state == LOCKED:
            self.locked += 1
        elif state == PENDING:
            self.pending += 1
            self.pending_bytes += entry.size
        entry.state = state
        if state == AVAILABLE:
            self._lower(self._skip, entry)
            self._lower(self._peek_skip, entry)
            for table in self._tables.values():
                table.made_available(entry)
            if self.cursor_waits:
                self._made_available(entry)

    def lock(self, entry: Entry, allow_peek: bool) -> None:
        """An AVAILABLE ``entry`` becomes LOCKED by a transaction's receive, peekable or not.

        [MS-MQDMPR] 3.1.7.1.10 Dequeue Message step 4, and 3.1.1.12 AllowPeekWhenLocked: a message
        received with ReceiveByLookupIdAllowPeek can still be peeked while its transaction runs.
        No mark moves: an AVAILABLE entry is never before the peek mark, so it stays where a peek
        looks for it.
        """
        self.set_state(entry, LOCKED)
        entry.allow_peek = allow_peek

    def _lower(self, marks: list[int], entry: Entry) -> None:
        # ``entry`` (of the index) may have become visible: the mark of its priority goes down to
        # its position if it was after it.
        p = entry.priority
        lst = self._lists[p]
        mark = marks[p]
        head = self._heads[p]
        if mark > head and (mark > len(lst) or lst[mark - 1] >= entry.lookup_id):
            pos = bisect_left(lst, entry.lookup_id, head, min(mark, len(lst)))
            if pos < mark:
                marks[p] = pos

    def remove(self, entry: Entry) -> bool:
        """Take ``entry`` out of the index; False if it was not there."""
        lid = entry.lookup_id
        if self._entries.get(lid) is not entry:
            return False
        del self._entries[lid]
        self.total_bytes -= entry.size
        self.shared.value -= entry.size
        if entry.state == LOCKED:
            self.locked -= 1
        elif entry.state == PENDING:
            self.pending -= 1
            self.pending_bytes -= entry.size
        if self._tables:
            self._unfile(entry)
        if lid >= UNCOMMITTED_LOOKUP_IDS:
            return True  # (an uncommitted send's entry is in no order: ``add_new``)
        p = entry.priority
        self._dead[p] += 1
        lst = self._lists[p]
        head = self._heads[p]
        if lst[head] == lid:
            self._advance(p)
        elif self._dead[p] > _COMPACT_MIN and self._dead[p] * 2 > len(lst) - head:
            self._compact(p)
        return True

    def remove_head(self, entry: Entry) -> bool:
        """Take ``entry`` out when it is the AVAILABLE entry at the head of its priority's order.

        The express receive's case, cheaper than ``remove`` (no state counters, no compaction
        check); False, with nothing changed, when ``entry`` is not that head: use ``remove``.
        """
        lid = entry.lookup_id
        p = entry.priority
        lst = self._lists[p]
        if not lst or lst[self._heads[p]] != lid or entry.state != AVAILABLE:
            return False
        entries = self._entries
        if entries.get(lid) is not entry:
            return False
        del entries[lid]
        self.total_bytes -= entry.size
        self.shared.value -= entry.size
        if self._tables:
            self._unfile(entry)
        at = self._heads[p] + 1
        n = len(lst)
        if at < n and lst[at] in entries and (at <= _COMPACT_MIN or at * 2 <= n):
            self._heads[p] = at  # the next id is live and no compaction is due: _advance's result
        else:
            self._dead[p] += 1
            self._advance(p)
        return True

    def _advance(self, p: int) -> None:
        lst = self._lists[p]
        entries = self._entries
        head = self._heads[p]
        n = len(lst)
        start = head
        while head < n and lst[head] not in entries:
            head += 1
        self._dead[p] -= head - start
        if head == n:
            lst.clear()
            self._skip[p] = self._peek_skip[p] = 0
            head = 0
        elif head > _COMPACT_MIN and head * 2 > n:
            del lst[:head]
            self._skip[p] = max(self._skip[p] - head, 0)
            self._peek_skip[p] = max(self._peek_skip[p] - head, 0)
            head = 0
        self._heads[p] = head

    def _compact(self, p: int) -> None:
        entries = self._entries
        self._lists[p] = [lid for lid in self._lists[p][self._heads[p] :] if lid in entries]
        self._heads[p] = 0
        self._dead[p] = 0
        self._skip[p] = self._peek_skip[p] = 0  # positions changed: scan from the head once

    def head(self, priority: int) -> Entry | None:
        """The live entry at the head of ``priority``'s order (any state), or None.

        None also when the head is a removed id not skipped yet: ``first`` then decides.
        """
        lst = self._lists[priority]
        return self._entries.get(lst[self._heads[priority]]) if lst else None

    # --- seeking ([MS-MQDMPR] 3.1.7.3.2 Seek Available Message Position)
    def first(self, peek: bool = False) -> Entry | None:
        """The first suitable entry from the head (from each priority's mark: receives and peeks
        keep one each, and no suitable entry lies between a head and its mark)."""
        entries = self._entries
        skip = self._peek_skip if peek else self._skip
        for p in range(7, -1, -1):
            lst = self._lists[p]
            if not lst:
                continue
            head = self._heads[p]
            start = skip[p]
            i = head if start < head else start
            n = len(lst)
            while i < n:
                e = entries.get(lst[i])
                # Entry.visible(peek), inline: the receive's test first.
                if e is not None and (e.state == AVAILABLE or (peek and e.state == LOCKED and e.allow_peek)):
                    skip[p] = i
                    return e
                i += 1
            skip[p] = n
        return None

    def last(self, peek: bool = False) -> Entry | None:
        """The first suitable entry from the tail backwards."""
        entries = self._entries
        for p in range(8):
            lst = self._lists[p]
            for i in range(len(lst) - 1, self._heads[p] - 1, -1):
                e = entries.get(lst[i])
                if e is not None and e.visible(peek):
                    return e
        return None

    def after(self, priority: int, lookup_id: int, peek: bool = False) -> Entry | None:
        """The first suitable entry strictly after the position (priority, lookup_id)."""
        entries = self._entries
        for p in range(priority, -1, -1):
            lst = self._lists[p]
            start = self._heads[p]
            if p == priority:
                start = bisect_right(lst, lookup_id, start)
            for i in range(start, len(lst)):
                e = entries.get(lst[i])
                if e is not None and e.visible(peek):
                    return e
        return None

    def first_from(self, priority: int, lookup_id: int, peek: bool = False) -> Entry | None:
        """The first suitable entry of priority ``priority`` whose lookup id is ``lookup_id`` or
        more (a message of that priority that arrived since the lookup id ``lookup_id`` was next)."""
        lst = self._lists[priority]
        entries = self._entries
        for i in range(bisect_left(lst, lookup_id, self._heads[priority]), len(lst)):
            e = entries.get(lst[i])
            if e is not None and e.visible(peek):
                return e
        return None

    def before(self, priority: int, lookup_id: int, peek: bool = False) -> Entry | None:
        """The first suitable entry strictly before the position, walking towards the head."""
        entries = self._entries
        for p in range(priority, 8):
            lst = self._lists[p]
            head = self._heads[p]
            end = bisect_left(lst, lookup_id, head) if p == priority else len(lst)
            for i in range(end - 1, head - 1, -1):
                e = entries.get(lst[i])
                if e is not None and e.visible(peek):
                    return e
        return None

    def tail_position(self) -> tuple[int, int] | None:
        """(priority, lookup_id) of the last entry in the queue, or None when empty.

        A message sent in a transaction that has not committed (PENDING) is not in the queue yet:
        a cursor moved to End ([MS-MQDMPR] 3.2.7.6) stays before it, and sees it once it commits
        (it was skipped when the commit came during the cursor's timed-out wait)."""
        entries = self._entries
        for p in range(8):
            lst = self._lists[p]
            for i in range(len(lst) - 1, self._heads[p] - 1, -1):
                entry = entries.get(lst[i])
                if entry is not None and entry.state != PENDING:
                    return p, lst[i]
        return None

    def _file(self, entry: Entry) -> None:
        # ``entry`` joined the index: into each table by field (``by_field``).
        for table in self._tables.values():
            table.add(entry)

    def _unfile(self, entry: Entry) -> None:
        # ``entry`` left the index: out of each table by field.
        for table in self._tables.values():
            table.remove(entry)

    def by_field(self, field: str) -> IdTable:
        """The live entries by their message's ``field`` ("id" or "correlation_id"), built from
        the index the first time it is asked for and kept up to date from then on."""
        table = self._tables.get(field)
        if table is None:
            table = self._tables[field] = IdTable(field)
            for entry in self._entries.values():
                table.add(entry)
        return table

    def __iter__(self) -> Iterator[Entry]:
        """Every live entry (any state) in queue order; do not mutate while iterating."""
        entries = self._entries
        for p in range(7, -1, -1):
            lst = self._lists[p]
            for i in range(self._heads[p], len(lst)):
                e = entries.get(lst[i])
                if e is not None:
                    yield e
