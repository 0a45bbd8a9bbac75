"""Salvage: what can still be read of a store whose database is damaged, copied into a new store.

A queue manager refuses a store whose database SQLite reports damaged ("database disk image is
malformed": a bad sector, a file system that lost a write, a copy cut short) and a backup restores
one (``backup``).  With no backup, or one older than the messages that matter, ``salvage`` reads
every row SQLite can still read and writes them into a new store in a new directory, leaving the
damaged one as it is, byte for byte (SQLite reads a copy of its database and WAL: it writes to
what it opens, a WAL replayed into its database and removed):

- each table is read in the order of its key; where SQLite cannot read on (a damaged page), the
  scan looks for the first key after it that it can read again (doubling steps, then halving: a
  damaged page costs some dozens of probes) and goes on from there; the rows under the damaged page
  are lost, and the summary says between which keys; a row whose key is not integers is left and
  the scan goes on after it;
- a queue is copied when a queue manager would load its row (``row_checks.sort_queue_rows``: one
  queue of a path, one journal a queue, journals whose queue is copied); a message when its queue
  is copied, its facts have their types, its subqueue is one its queue can have and its packet
  matches the checksum stored with it (a big message's file too, hard-linked when it can be; a
  file two rows name goes with the row whose checksum it matches);
- the machine's identity (GUID, name) and counters are kept when every one can be read, with the
  queue counter moved past every queue copied; otherwise the new store gets a new identity (its
  message ids then start again under a new GUID: none can repeat one of the old store's).

The new store is a store like any other: ``pymsmq serve --data DESTINATION`` serves it, and
``pymsmq restore DESTINATION --data DIR --replace`` puts it in the damaged one's place.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from typing import Final

from pymsmq.errors import MSMQError, quoted
from pymsmq.model.names import validate_subqueue_name
from pymsmq.qm.store.backup import (
    _database,
    _failed,
    _lock_unless_read_only,
    _new_directory,
    _packet_dir,
    _packet_file_problem,
    _place,
    _source_database,
    refuse_inside,
)
from pymsmq.qm.store.file_modes import touch_private
from pymsmq.qm.store.in_flight import carry_held
from pymsmq.qm.store.row_checks import (
    facts_have_their_types,
    machine_quota_problem,
    meta_problem,
    new_identity,
    sort_queue_rows,
    whole_number,
)
from pymsmq.qm.store.sqlite import (
    PARTIAL_SUFFIX,
    decode_text,
    fsync_path,
    is_damage,
    row_type_problem,
    stored_packet_problem,
    write_schema,
)

__all__ = ["LOSS_SHOWN", "SalvageSummary", "salvage"]

#: What a ``SalvageSummary`` describes of what was left behind (it counts it all).
LOSS_SHOWN: Final = 20

#: The copy of the damaged database (and its WAL) SQLite reads, beside the new one in the destination.
_WORK_SUFFIX: Final = ".salvaging"
_OFF: Final = 1 << 63  # a stored lookup id is the lookup id - 2**63 (sqlite.py)
_U64: Final = (1 << 64) - 1
_ROWS: Final = 1024  # rows read per query while nothing is damaged


@dataclass(frozen=True, slots=True)
class SalvageSummary:
    """What ``salvage`` copied into the new store and what it left behind."""

    #: Queues (journals and system queues included) and messages copied.
    queues: int
    messages: int
    #: Ranges of a table's keys SQLite could not read (damaged pages): their rows are lost.
    unreadable_ranges: int
    #: Queues whose row was read but could not make a queue (or a journal whose queue was lost).
    queues_left: int
    #: Messages read but not copied: damaged packet, facts of the wrong types, queue lost.
    messages_left: int
    #: The machine's identity and counters came from the damaged store (False: a new identity).
    identity_kept: bool
    #: The first ``LOSS_SHOWN`` of the above, described.
    losses: tuple[str, ...] = field(default=())


@dataclass(slots=True)
class _Losses:
    ranges: int = 0
    queues: int = 0
    messages: int = 0
    shown: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.shown) < LOSS_SHOWN:
            self.shown.append(text)

    def queue_left(self) -> None:
        self.queues += 1

    def message_left(self) -> None:
        self.messages += 1


def _nothing() -> None:
    pass  # (a row of a counter table left out: salvage recomputes the counters)


def _readable_from(conn: sqlite3.Connection, probe: str, params: tuple[int, ...]) -> bool:
    # Whether SQLite can seek to ``params`` and read the first row from there (or find none).
    try:
        conn.execute(probe, params).fetchall()
    except sqlite3.Error as exc:
        if not is_damage(exc):
            raise
        return False
    return True


def _past_damage(
    conn: sqlite3.Connection, probe: str, params_of: Callable[[int], tuple[int, ...]], at: int, end: int
) -> int:
    """The first key after ``at`` (where reading failed) from which SQLite reads again; ``end``
    when there is none.  Steps double until a probe succeeds, then the last step is halved down to
    the first key that succeeds (a damaged page's keys are one range: reading fails in all of it)."""
    failed, step = at, 1
    while True:
        key = min(at + step, end - 1)
        if _readable_from(conn, probe, params_of(key)):
            break
        if key == end - 1:
            return end
        failed, step = key, step * 2
    good = key
    while good - failed > 1:
        middle = (failed + good) // 2
        if _readable_from(conn, probe, params_of(middle)):
            good = middle
        else:
            failed = middle
    return good


@dataclass(frozen=True, slots=True)
class _Table:
    """A table read in the order of its integer key (its ``key`` columns), with ``params_of`` and
    ``position_of`` mapping between a row's key and one integer from 0 to below ``end``."""

    name: str
    key: tuple[str, ...]
    params_of: Callable[[int], tuple[int, ...]]
    position_of: Callable[[tuple[object, ...]], int | None]
    end: int

    def position_from(self, columns: list[int]) -> int:
        """The position of the key whose first columns are ``columns`` (the others at their
        least), clamped to ``0 .. end``."""
        if len(self.key) == 1:
            return max(0, min(columns[0], self.end))
        queue_id = columns[0]
        lookup = columns[1] + _OFF if len(columns) > 1 else 0  # (the stored lookup id, then 0 up)
        if queue_id < 0:
            return 0
        return max(0, min((queue_id << 64) + min(max(0, lookup), 1 << 64), self.end))

    def where(self) -> str:
        names, marks = ", ".join(self.key), ", ".join("?" for _ in self.key)
        return f"({names}) >= ({marks})" if len(self.key) > 1 else f"{names} >= ?"

    def shown(self, position: int) -> str:
        if position >= self.end:
            return "the end"
        if len(self.key) == 1:
            return f"queue {position}"
        return f"queue {position >> 64} lookup id {position & _U64}"  # (the lookup id itself)


def _readable_rows(
    conn: sqlite3.Connection, table: _Table, columns: str, losses: _Losses, bad_key: Callable[[], None]
) -> Iterator[tuple[object, ...]]:
    """The rows of ``table`` SQLite can read, in key order.  A row whose key is not integers (a
    damaged row) is left out, ``bad_key()`` called, and the scan goes on after it: a real number
    sorts among the integers, text and blobs after every number of their column (SQLite's order)."""
    order = ", ".join(table.key)
    select = f"SELECT {columns} FROM {table.name} WHERE {table.where()} ORDER BY {order} LIMIT ?"
    probe = f"SELECT {order} FROM {table.name} WHERE {table.where()} ORDER BY {order} LIMIT 1"
    at, limit = 0, _ROWS
    while at < table.end:
        try:
            rows = conn.execute(select, (*table.params_of(at), limit)).fetchall()
        except sqlite3.Error as exc:
            if not is_damage(exc):
                raise
            if limit > 1:
                limit = 1  # read up to the damaged page one row at a time
                continue
            resume = _past_damage(conn, probe, table.params_of, at, table.end)
            losses.ranges += 1
            losses.note(
                f"{table.name}: the rows with keys from {table.shown(at)} to before "
                f"{table.shown(resume)} could not be read ({exc})"
            )
            at, limit = resume, _ROWS
            continue
        if not rows:
            return
        for row in rows:
            position = table.position_of(row)
            if position is None:
                bad_key()
                losses.note(f"{table.name}: a row whose key is not integers ({row[: len(table.key)]!r})")
                after = _past_bad_key(table, row[: len(table.key)])
                if after is None:
                    return  # (text or blob in the first key column: nothing numeric after it)
                at = max(after, at + 1)
                break  # read again from there
            yield row
            at = position + 1


def _past_bad_key(table: _Table, key: tuple[object, ...]) -> int | None:
    """The first position after the key ``key`` of a row whose key columns are not all integers,
    in SQLite's order (None: nothing numeric can come after it)."""
    columns: list[int] = []
    for i, value in enumerate(key):
        if type(value) is int:
            columns.append(value)
            continue
        if type(value) is float and math.isfinite(value):
            columns.append(math.floor(value) + 1)  # the next integer after it
        elif i == 0:
            return None  # text, blob, NaN in the first column: after every number
        else:
            columns[-1] += 1  # after every number of this column: the next value of the one before
        break
    return table.position_from(columns)


def _message_params(position: int) -> tuple[int, int]:
    return position >> 64, (position & _U64) - _OFF


def _message_position(row: tuple[object, ...]) -> int | None:
    qid, lid = row[0], row[1]
    if type(qid) is not int or type(lid) is not int or qid < 0:
        return None
    return (qid << 64) | (lid + _OFF)


def _queue_position(row: tuple[object, ...]) -> int | None:
    qid = row[0]
    return qid if type(qid) is int and qid >= 0 else None


def _one(position: int) -> tuple[int]:
    return (position,)


_MESSAGE_COLUMNS: Final = (
    "queue_id, lookup_id, priority, arrived_time, subqueue, abort_count, move_count, expires_at, "
    "external, packet, last_move_time, packet_crc"
)
_META_KEYS: Final = (
    "qm_guid",
    "machine_name",
    "next_queue_id",
    "create_time",
    "ordinal_reserved",
    "machine_quota",
    "purges",
)
_MESSAGES: Final = _Table("messages", ("queue_id", "lookup_id"), _message_params, _message_position, 1 << 127)
_QUEUES: Final = _Table("queues", ("queue_id",), _one, _queue_position, 1 << 63)
_LAST_LOOKUP_IDS: Final = _Table("last_lookup_ids", ("queue_id",), _one, _queue_position, 1 << 63)


def _read_meta(conn: sqlite3.Connection, losses: _Losses) -> tuple[dict[str, str], bool]:
    """The meta rows whose key and value are text, and whether every row was read and was text
    (the table is a handful of rows: read whole, else key by key)."""
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.Error as exc:
        if not is_damage(exc):
            raise
        losses.note(f"meta: the table could not be read whole ({exc}); read key by key")
    else:
        meta = {k: v for k, v in rows if type(k) is str and type(v) is str}
        return meta, len(meta) == len(rows)
    meta = {}
    for key in _META_KEYS:
        try:
            found = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            if not is_damage(exc):
                raise
            continue
        if found is not None and type(found[0]) is str:
            meta[key] = found[0]
    return meta, False


def _identity(meta: dict[str, str], whole: bool, losses: _Losses) -> tuple[dict[str, str], bool]:
    """The meta rows of the new store, and whether the old identity and counters were kept: every
    one readable and well-formed (``row_checks.meta_problem``), the message id counter
    (ordinal_reserved) too unless the table was read whole without it (no message sent yet); else
    a new identity, under which no message id can repeat an old one (outside QA: a lost counter
    under the old GUID gave a new message the id of one still in the queue)."""
    meta = dict(meta)
    quota_problem = machine_quota_problem(meta.get("machine_quota"))
    if quota_problem is not None:
        del meta["machine_quota"]
        losses.note(f"meta: {quota_problem}: the new store has none")
    purges = meta.get("purges")
    if purges is not None and whole_number(purges) is None:
        # Not part of the identity (outside QA: a damaged purge count cost the store its GUID):
        # dropped, the purges it numbered are taken as not stored (their held messages come back).
        del meta["purges"]
        losses.note(f"meta: the purge count {purges!r} is not a whole number: the new store has none")
    problem = meta_problem(meta) if meta else "the meta table holds nothing"
    if problem is None and "ordinal_reserved" not in meta and not whole:
        problem = "the message id counter (ordinal_reserved) could not be read"
    if problem is None:
        return meta, True
    losses.note(f"meta: {problem}: the new store has a new identity (GUID)")
    fresh = new_identity(meta.get("machine_name"), time.time())
    if "machine_quota" in meta:
        fresh["machine_quota"] = meta["machine_quota"]
    return fresh, False


def _copy_queues(conn: sqlite3.Connection, new: sqlite3.Connection, losses: _Losses) -> dict[int, str]:
    """Copy every queue row a queue manager loads (``row_checks.sort_queue_rows``); the kind of
    queue of each id copied."""
    read = _readable_rows(conn, _QUEUES, "queue_id, path_name, properties", losses, losses.queue_left)
    rows = sort_queue_rows((qid, path, text) for qid, path, text in read)
    for qid, path, problem in rows.left:
        losses.queues += 1
        losses.note(f"queue {qid} ({path!r}): {problem}")
    new.executemany(
        "INSERT INTO queues (queue_id, path_name, properties) VALUES (?, ?, ?)",
        [(qid, path, text) for qid, (path, text, _) in rows.loadable.items()],
    )
    return {qid: str(props.get("queue_type", "private")) for qid, (_, _, props) in rows.loadable.items()}


def _copy_last_lookup_ids(
    conn: sqlite3.Connection, new: sqlite3.Connection, queues: dict[int, str], losses: _Losses
) -> None:
    for qid, last in _readable_rows(conn, _LAST_LOOKUP_IDS, "queue_id, last_lookup_id", losses, _nothing):
        if qid in queues and type(last) is int:
            new.execute("INSERT INTO last_lookup_ids (queue_id, last_lookup_id) VALUES (?, ?)", (qid, last))


def _message_problem(row: tuple[object, ...], queues: dict[int, str], files: str) -> str | None:
    qid, lid, priority, arrived, subqueue, aborts, moves, expires, external, packet, moved, crc = row
    assert type(qid) is int and type(lid) is int  # _message_position
    kind = queues.get(qid)
    if kind is None:
        return "its queue was lost"
    if subqueue and type(subqueue) is str:
        if kind in ("journal", "system"):
            return f"it is in a subqueue ({subqueue!r}) of a {kind} queue, which has none"
        try:
            validate_subqueue_name(subqueue)
        except MSMQError as exc:
            return f"its subqueue: {exc.message}"
    if not facts_have_their_types(priority, arrived, subqueue, aborts, moves, expires, moved):
        return "its stored facts are not of their types"
    problem = row_type_problem(external, packet, crc)
    if problem is None and external is None and not packet:
        problem = "its packet is empty"
    if problem is None and isinstance(external, str):
        path = os.path.join(files, external)
        if not os.path.isfile(path):
            problem = "is missing"
        elif (whole := _packet_file_problem(path)) is not None:
            problem = whole
        if problem is not None:
            problem = f"its packet file {external} {problem}"
    return problem or stored_packet_problem(external, packet, crc, qid, lid, files)


def _shared_files(conn: sqlite3.Connection) -> set[str]:
    """The packet files more than one message row names (none known if SQLite cannot tell)."""
    try:
        rows = conn.execute(
            "SELECT external FROM messages WHERE external IS NOT NULL GROUP BY external HAVING count(*) > 1"
        ).fetchall()
    except sqlite3.Error as exc:
        if not is_damage(exc):
            raise
        return set()  # (then the first row read keeps a file; later ones are left)
    return {name for (name,) in rows if type(name) is str}


def _copy_messages(
    conn: sqlite3.Connection,
    new: sqlite3.Connection,
    queues: dict[int, str],
    source_files: str,
    target_files: str,
    losses: _Losses,
) -> tuple[int, dict[int, int]]:
    """Copy every message that is whole; (messages copied, the highest stored lookup id by queue)."""
    copied = 0
    highest: dict[int, int] = {}
    insert = f"INSERT INTO messages ({_MESSAGE_COLUMNS}) VALUES ({', '.join('?' * 12)})"
    files: set[str] = set()  # packet files copied
    shared = _shared_files(conn)
    for row in _readable_rows(conn, _MESSAGES, _MESSAGE_COLUMNS, losses, losses.message_left):
        qid, lid, external = row[0], row[1], row[8]
        assert type(qid) is int and type(lid) is int
        problem = _message_problem(row, queues, source_files)
        if problem is None and isinstance(external, str) and (external in shared or external in files):
            # A packet file named by two rows (a damaged one would deliver it twice): the row whose
            # checksum the file matches keeps it; one with no checksum cannot tell it is its own.
            if type(row[11]) is not int:
                problem = f"its packet file {external} is shared with another message (no checksum)"
            elif external in files:
                problem = f"its packet file {external} is shared: copied with another message"
        if problem is not None:
            losses.messages += 1
            losses.note(f"message {lid + _OFF} of queue {qid}: {problem}")
            continue
        if isinstance(external, str):
            _place(os.path.join(source_files, external), os.path.join(target_files, external))
            files.add(external)
        new.execute(insert, row)
        copied += 1
        highest[qid] = max(highest.get(qid, lid), lid)
    return copied, highest


def salvage(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> SalvageSummary:
    """Copy what can be read of the (damaged) store in directory ``source`` into a new store in
    ``destination`` (a new or empty directory outside the store); see the module docstring.  The
    source is left as it is, byte for byte: SQLite reads a copy of its database and WAL.  Refused
    (MQ_ERROR_MESSAGE_STORAGE_FAILED) while a queue manager holds the source, and when SQLite
    cannot read the source at all (its first page, the schema, is damaged); the destination must
    not hold anything (MQ_ERROR_INVALID_PARAMETER)."""
    source_dir, target_dir = os.fspath(source), os.fspath(destination)
    source_db = _source_database(source_dir)
    refuse_inside(source_dir, target_dir, "a salvage")
    losses = _Losses()
    lock = _lock_unless_read_only(source_db)
    try:
        with _new_directory(target_dir):
            target_db = _database(target_dir)
            partial_db = target_db + PARTIAL_SUFFIX
            work_db = target_db + _WORK_SUFFIX
            # The partial database first: a salvage cut short is never taken for a (new) store.
            touch_private(partial_db)  # (every identity's messages: the owner's alone)
            with closing(sqlite3.connect(partial_db, isolation_level=None)) as new:
                new.execute("PRAGMA auto_vacuum=INCREMENTAL")
                write_schema(new)
                # SQLite writes to what it opens (a WAL replayed into the database and removed):
                # it opens a copy, and the damaged store stays as it was (outside QA: acknowledged
                # commits in a damaged WAL were lost with it).
                for suffix in ("", "-wal"):
                    if os.path.exists(source_db + suffix):
                        shutil.copyfile(source_db + suffix, work_db + suffix)
                try:
                    with closing(sqlite3.connect(work_db, timeout=30)) as conn:
                        conn.text_factory = decode_text
                        _check_readable(conn, source_dir)
                        new.execute("BEGIN")
                        meta, kept = _identity(*_read_meta(conn, losses), losses)
                        queues = _copy_queues(conn, new, losses)
                        if kept:
                            _copy_last_lookup_ids(conn, new, queues, losses)
                        messages, highest = _copy_messages(
                            conn, new, queues, _packet_dir(source_db), _packet_dir(target_db), losses
                        )
                finally:
                    for suffix in ("", "-wal", "-shm", "-journal"):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(work_db + suffix)
                # No lookup id or queue id is issued again: a lost counter row is replaced by the
                # highest id found (a lost message above it may be given out again: it is gone).
                new.executemany(
                    "INSERT INTO last_lookup_ids (queue_id, last_lookup_id) VALUES (?, ?) ON CONFLICT "
                    "(queue_id) DO UPDATE SET last_lookup_id = max(last_lookup_id, excluded.last_lookup_id)",
                    list(highest.items()),
                )
                meta["next_queue_id"] = str(max([int(meta["next_queue_id"]), *(q + 1 for q in queues)]))
                new.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", list(meta.items()))
                new.execute("COMMIT")
            fsync_path(partial_db)
            fsync_path(_packet_dir(target_db))
            # The crash's aborts (and purges) of held messages, counted at the new store's first
            # open: messages keep their queue ids and lookup ids (in_flight.carry_held).
            carry_held(source_db, target_db)
            os.replace(partial_db, target_db)
            fsync_path(target_dir)
    except sqlite3.Error as exc:
        raise _failed(f"salvage of {quoted(source_dir)} failed: {exc}") from exc
    finally:
        if lock is not None:
            lock.release()
    return SalvageSummary(
        queues=len(queues),
        messages=messages,
        unreadable_ranges=losses.ranges,
        queues_left=losses.queues,
        messages_left=losses.messages,
        identity_kept=kept,
        losses=tuple(losses.shown),
    )


def _check_readable(conn: sqlite3.Connection, source_dir: str) -> None:
    # SQLite reads the first page (the tables' description), or nothing can be salvaged.
    try:
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except sqlite3.Error as exc:
        if not is_damage(exc):
            raise
        raise _failed(
            f"{quoted(source_dir)}: nothing can be salvaged: SQLite cannot read the database's "
            f"first page, where its tables are described ({exc}); restore a backup"
        ) from exc
