"""Which stored messages transactions hold (received or moved, not yet committed or aborted), kept
in a file beside the store, so that a queue manager killed meanwhile counts their aborts when it
opens again.

MSMQ runs as a service: an application that dies in the middle of a transactional receive has its
transaction aborted by the service, and the message's abort count (PROPID_M_ABORT_COUNT, [MS-MQRR]
2.2.5.3 AbortCount) goes up by one; WCF's poison handling (ReceiveRetryCount) counts on it to stop
a message that kills its consumer from being delivered for ever.  An embedded queue manager dies
with its application (and a server can be killed too): its transactions end with no abort, and the
message comes back unchanged.  This log records each stored message a transaction takes, with its
abort and move counts then (``begin``), and lets it go at commit or abort (``end``); at the next
open the messages begun and not ended are the ones a crash may have aborted (``left_over``).

The outcome of a transaction is stored before its end is noted, so a process killed between the
two leaves a message noted whose outcome is stored: the queue manager adds one to a noted
message's abort count only when the stored counts are still the noted ones (an abort stored raised
the abort count, a move stored the move count, a receive stored removed the message; outside QA:
a kill during ``abort()`` counted its abort twice, 16 times in 19).  The open's own count is
stored before the file is emptied, and counts again nothing for the same reason.

The file is written without fsync, a record a write(2): what write gave the kernel survives the
death of the process, which is what this is for; a crash of the machine may lose records, and then
those aborts go uncounted, as before.  When it has grown past ``COMPACT_SIZE`` it is emptied if
nothing is held, else written again with only what is held (a long transaction does not make it
grow with every other one).  A write that fails (a full disk) is logged; the file is then left as
it is until the queue manager closes (its counts of what is held are no longer sure).

A message a purge meets while a transaction holds it is deleted when the transaction ends either way
([MS-MQDMPR] 3.1.7.1.7 Purge Queue: PurgePending); a crash ends it too, so the purge is noted as well
(``purged``), and the next open deletes such a message instead of counting its abort (outside QA,
left out since 2026-11-27: the message came back after a kill, as if never purged).  Each such
purge has a number, stored in the store's meta (``purges``) with the purge's deletions and noted
here before them: the open deletes only for a purge whose number the store holds (a kill between
the note and the store leaves the purge undone, and the message comes back, as the others do).

Records are 25 bytes: ``b"B"``, ``b"P"`` (purged while held) or ``b"E"``, the queue id and the
lookup id (little-endian u64s), the abort count and the move count (u32s; a purge record holds its
purge's number and 0, an end record 0 and 0).
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections.abc import Iterator
from typing import Final

from pymsmq.qm.store.file_modes import PRIVATE_FILE

__all__ = ["COMPACT_SIZE", "IN_FLIGHT_SUFFIX", "InFlightLog", "carry_held", "read_left_over"]

#: The log beside a store's database ``<db>``: ``<db>.inflight``.
IN_FLIGHT_SUFFIX: Final = ".inflight"
#: The log is emptied (or written again with only what is held) once it has grown to this size.
COMPACT_SIZE: Final = 64 * 1024

log = logging.getLogger("pymsmq.qm")

_RECORD: Final = struct.Struct("<cQQII")
_BEGIN: Final = b"B"
_PURGED: Final = b"P"
_END: Final = b"E"

#: A held message: (queue id, lookup id) -> (abort count, move count) when it was taken.
Held = dict[tuple[int, int], tuple[int, int]]


#: Held messages a purge met: (queue id, lookup id) -> the purge's number.
Purged = dict[tuple[int, int], int]


def _whole_records(data: bytes) -> Iterator[tuple[bytes, int, int, int, int]]:
    # The records of the log ``data``, less a last one cut short by a crash.
    return _RECORD.iter_unpack(memoryview(data)[: len(data) - len(data) % _RECORD.size])


def read_left_over(data: bytes) -> tuple[Held, Purged]:
    """The messages begun and not ended in the log ``data``, with the counts their begin noted, and
    those of them a purge met, with its number (a record cut short by the crash, at the end, is
    left out)."""
    held: Held = {}
    purged: Purged = {}
    for kind, queue_id, lookup_id, aborts, moves in _whole_records(data):
        key = (queue_id, lookup_id)
        if kind == _BEGIN:
            held[key] = (aborts, moves)
            purged.pop(key, None)
        elif kind == _PURGED:
            if key in held:
                purged[key] = aborts  # (the purge's number)
        elif kind == _END:
            held.pop(key, None)
            purged.pop(key, None)
    return held, purged


def carry_held(source_database: str, target_database: str, held: Held | None = None) -> Held:
    """Write what the log of the store ``source_database`` says is held (as a crash now would
    leave it) as the log of the copy ``target_database``, so that the first open of the copy counts
    those aborts (and deletes those purged) as the source's next open would; returns what was
    held.  For ``restore`` and ``salvage``, which keep the messages' queue ids and lookup ids, and
    for ``backup``: before its snapshot (a message taken after it is not counted, and one whose
    outcome the snapshot holds has other counts: not counted either), then again after it with
    ``held``, what the first call returned, to add the purges of those messages noted meanwhile
    (the open keeps only those whose number the snapshot's store holds; outside QA, 2026-11-27: a
    purge between the two left the backup giving its held messages back)."""
    try:
        with open(source_database + IN_FLIGHT_SUFFIX, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = b""
    if held is None:
        held, purged = read_left_over(data)
    else:  # (again after backup's snapshot: a purge noted, then the transaction ended, counts)
        purged = _purge_numbers(data)
    purged = {key: number for key, number in purged.items() if key in held}
    target = target_database + IN_FLIGHT_SUFFIX
    if not held:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        return held
    partial = target + ".new"
    with open(partial, "wb") as f:
        f.write(_records(_BEGIN, held) + _purge_records(purged))
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, target)
    return held


def _purge_numbers(data: bytes) -> Purged:
    # The first purge number noted of each message in the log ``data``, whether or not its
    # transaction ended since (backup's second read: the open keeps only a purge its snapshot holds).
    numbers: Purged = {}
    for kind, queue_id, lookup_id, number, _ in _whole_records(data):
        if kind == _PURGED:
            numbers.setdefault((queue_id, lookup_id), number)
    return numbers


def _counts(abort_count: int, move_count: int) -> tuple[int, int]:
    # The counts as a record keeps them (u32s).
    return abort_count & 0xFFFFFFFF, move_count & 0xFFFFFFFF


def _records(kind: bytes, held: Held) -> bytes:
    return b"".join(_RECORD.pack(kind, q, lid, a, m) for (q, lid), (a, m) in held.items())


def _purge_records(purged: Purged) -> bytes:
    return b"".join(
        _RECORD.pack(_PURGED, q, lid, number & 0xFFFFFFFF, 0) for (q, lid), number in purged.items()
    )


class InFlightLog:
    """The in-flight log of the store whose database is ``database`` (see the module docstring).
    The file is made at the first record, and removed at ``close`` when nothing is held.  Not
    thread-safe: the queue manager calls it under its lock."""

    def __init__(self, database: str) -> None:
        self.path = database + IN_FLIGHT_SUFFIX
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            self._fd = -1
            data = b""
        else:
            try:
                with open(self._fd, "rb", closefd=False) as f:
                    data = f.read()
            except BaseException:
                os.close(self._fd)
                raise
        #: What a crash of the last queue manager on the store left held, and which of those a
        #: purge met (``read_left_over``).
        self.left_over, self.left_over_purged = read_left_over(data)
        self._size = len(data)
        self._held: Held = {}
        self._purged: Purged = {}
        #: The left-over records were dealt with (``clear`` at open): until then nothing empties
        #: the file (a queue manager that fails to open leaves them for the next open).
        self._taken = False
        #: A write failed: ``_held`` may not say what the file holds; it is left as it is.
        self._failed = False
        self._closed = False

    def begin(self, queue_id: int, lookup_id: int, abort_count: int, move_count: int) -> None:
        """A transaction now holds the stored message ``(queue_id, lookup_id)``, whose counts are
        ``abort_count`` and ``move_count``."""
        counts = _counts(abort_count, move_count)
        if self._write(_RECORD.pack(_BEGIN, queue_id, lookup_id, *counts)):
            self._held[(queue_id, lookup_id)] = counts

    def crash_aborted(self, queue_id: int, lookup_id: int, abort_count: int, move_count: int) -> bool:
        """Whether the stored message ``(queue_id, lookup_id)``, whose stored counts are
        ``abort_count`` and ``move_count``, was held when the last queue manager on the store died
        and its transaction's outcome was not stored (its counts are still those noted)."""
        return self.left_over.get((queue_id, lookup_id)) == _counts(abort_count, move_count)

    def crash_purged(
        self, queue_id: int, lookup_id: int, abort_count: int, move_count: int, stored_purges: int
    ) -> bool:
        """Whether ``crash_aborted`` holds and a purge met the message while it was held, a purge
        the store holds (its number is at most ``stored_purges``, the store's count): the crash's
        abort deletes it ([MS-MQDMPR] 3.1.7.1.7 PurgePending)."""
        number = self.left_over_purged.get((queue_id, lookup_id))
        # (Numbers are u32s: "at most" in serial-number arithmetic, so a count past 2**32 still
        # tells a stored purge from the next one, outside QA.)
        return (
            number is not None
            and (stored_purges - number) & 0xFFFFFFFF < 0x80000000
            and self.crash_aborted(queue_id, lookup_id, abort_count, move_count)
        )

    def purged(self, keys: list[tuple[int, int]], number: int) -> None:
        """Purge number ``number`` meets these stored messages (noted before the purge is stored;
        those a transaction holds are noted, the others are not in this log: a hold outside a
        transaction)."""
        met = {key: number for key in keys if key in self._held and key not in self._purged}
        if met and self._write(_purge_records(met)):
            self._purged.update(met)

    def end(self, keys: list[tuple[int, int]]) -> None:
        """The transaction that held ``keys`` committed or aborted (its outcome is stored)."""
        if not keys:
            return
        if self._write(b"".join(_RECORD.pack(_END, q, lid, 0, 0) for q, lid in keys)):
            for key in keys:
                self._held.pop(key, None)
                self._purged.pop(key, None)
        if self._size >= COMPACT_SIZE and self._taken and not self._failed:
            self._compact()

    def _write(self, records: bytes) -> bool:
        if self._closed:
            return False
        view = memoryview(records)
        try:
            if self._fd < 0:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            # (a full disk): the receive or the commit goes on; a crash would not count this abort.
            if not self._failed:
                log.warning(
                    "%s: cannot note the messages transactions hold (%s): a crash now would not "
                    "count their aborts",
                    self.path,
                    exc,
                )
            self._failed = True
            if self._fd >= 0:  # a record written in part: the records stay whole
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)
            return False
        self._size += len(records)
        return True

    def _compact(self) -> None:
        # Emptied when nothing is held; else written again, whole, with what is held: to a new
        # file that takes the name (a kill meanwhile leaves one or the other, both whole).
        if not self._held:
            self.clear()
            return
        data = _records(_BEGIN, self._held) + _purge_records(self._purged)
        partial = self.path + ".new"
        try:
            fd = os.open(partial, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, PRIVATE_FILE)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.replace(partial, self.path)
            except BaseException:
                os.close(fd)
                raise
        except OSError as exc:
            log.warning("%s: cannot write the in-flight notes again (%s)", self.path, exc)
            return
        os.close(self._fd)
        self._fd = fd
        self._size = len(data)

    def clear(self) -> None:
        """Empty the log: nothing is held (at open, once the left-over aborts are stored)."""
        if self._fd >= 0 and self._size:
            os.ftruncate(self._fd, 0)
        self._size = 0
        self._held.clear()
        self._purged.clear()
        self._taken = True

    def close(self) -> None:
        """Close the file (idempotent); it is removed when no transaction holds a message (and the
        records of the last crash were dealt with)."""
        if self._closed:
            return
        self._closed = True
        if self._taken and not self._held and not self._failed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
