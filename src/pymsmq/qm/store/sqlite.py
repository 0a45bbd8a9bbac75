"""``SQLiteStore``: the durable store (stdlib ``sqlite3``, WAL, ``synchronous=FULL``, group commit).

Theory of operation
-------------------
*One writer, group commit by a leader.*  ``apply(batch)`` prepares the SQL parameters of its batch
in the caller's thread and queues them.  If no thread is committing, the caller becomes the leader:
it takes every batch waiting, applies them in ONE transaction on the one write connection (each
inside its own SAVEPOINT, so a batch that breaks a constraint is rolled back alone and reported to
its caller), commits once (one WAL fsync, ``synchronous=FULL``) and wakes every caller of the group.
Callers that arrive while a leader commits wait on a lock; when the leader is done it hands the
leadership to the first of them, which commits everything that accumulated meanwhile.  A caller
therefore returns only after its batch is durable, concurrent callers share fsyncs, and a lone
caller commits in its own thread (no hop to a committer thread and back).

*Readers never wait for the writer.*  ``read_packet(s)`` use one connection per thread (WAL readers
see the last committed state without taking the write lock); ``load()`` uses its own connection
and one read transaction, and streams the messages (one cursor, rows fetched in chunks).

*Big packets live outside the B-tree.*  SQLite writes a blob twice (WAL, then checkpoint) through
overflow-page chains; a packet longer than ``BIG_PACKET`` (64 KiB) is written instead to its own
file in the directory ``<db>.packets/`` (unique random name), ``fdatasync``-ed, and the directory
fsynced, all in the caller's thread BEFORE the batch that references it is queued.  The row keeps
the file name in ``external`` and an empty ``packet``.  A committed row therefore never references
a missing or partial file.  Files of deleted messages are unlinked after the deleting commit.

*Recovery has nothing to roll back, by construction.*  The store only ever holds committed state:
SQLite's WAL makes each commit atomic (a torn last transaction is ignored when the WAL is replayed),
the queue manager writes transactions only when they commit (base.py), and the only other trace a
crash can leave is a packet file no row references (written before a commit that never happened,
or whose message was deleted just before the crash).  Opening the store deletes such orphans.

*A full disk can still be drained.*  On a full disk SQLite cannot delete either (a delete goes to
the WAL first, and the WAL, or the checkpoint that lets SQLite reuse it, needs new blocks), so
receives would fail with the sends.  The store holds ``<db>.reserve``, a file of allocated blocks
(space_reserve.py; 32 MiB by default, ``$PYMSMQ_DISK_RESERVE`` bytes when set).  When a statement or
a commit fails with SQLITE_FULL while the reserve is held, the store releases it and runs the group
again without the batches that add messages (sends; they fail with MQ_ERROR_MESSAGE_STORAGE_FAILED).
From then on (``low_space``) such batches are refused before anything is written, and batches that
do not add messages (receives, moves, purges, deletes) go on.  After each commit in that state the
store returns free pages to the disk (``PRAGMA incremental_vacuum``; new stores are created with
``auto_vacuum=INCREMENTAL``) and checkpoints, and once the disk has room for the reserve and as much
again it takes the reserve back and accepts sends.  A store made before that mode existed is
converted when it is opened holding at most ``CONVERT_LIVE_MAX`` bytes of live data with room on its
disk (a VACUUM: it rewrites the live pages), else at a later open.

*Every packet has a checksum.*  A row keeps the CRC-32 (``zlib.crc32``) of its packet, whether
the packet is in the row or in its file, started from the CRC-32 of the row's key (queue id and
lookup id), so that a packet found under another message's key does not pass.  It is checked when
the packet is read back (``load``, ``read_packet``) and by ``backup.check``, so a packet damaged
on disk (a bit flipped in a file or in a database page, which neither the file system nor SQLite's
own checks notice) is named, not delivered.  Rows written before schema 3 have none (NULL) and are
read unchecked.

*Lookup ids are unsigned 64-bit, SQLite integers signed.*  Columns hold ``lookup_id - 2**63``, a
mapping that keeps the order, so ``ORDER BY lookup_id`` and ``max()`` stay right over the whole range.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shutil
import sqlite3
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, Final

from pymsmq.errors import MSMQError, reason
from pymsmq.hresult import HResult
from pymsmq.qm.store.base import Batch, MessageKey, QueueRow, Snapshot, StoredMessage
from pymsmq.qm.store.file_modes import PRIVATE_FILE, make_private_dir, touch_private
from pymsmq.qm.store.in_flight import InFlightLog
from pymsmq.qm.store.row_checks import last_lookup_ids_problem, queue_row_problem
from pymsmq.qm.store.space_reserve import NO_SPACE, SpaceReserve, disk_reserve_from_env
from pymsmq.qm.store.store_lock import StoreLock

__all__ = [
    "BIG_PACKET",
    "CONVERT_LIVE_MAX",
    "DAMAGED_HINT",
    "PACKETS_SUFFIX",
    "PARTIAL_SUFFIX",
    "RESTORING_SUFFIX",
    "SCHEMA_VERSION",
    "SQLiteStore",
    "UndecodableText",
    "damage_hint",
    "damaged_packets",
    "decode_text",
    "fsync_path",
    "is_damage",
    "packet_damage",
    "packet_file_damage",
    "referenced_files",
    "row_type_problem",
    "stored_packet_problem",
    "write_schema",
]

#: Packets longer than this many bytes are stored in files beside the database, not in the rows.
BIG_PACKET = 64 * 1024
#: ``PRAGMA user_version`` of the schema below.  Version 2 added ``messages.last_move_time``, version
#: 3 ``messages.packet_crc``; an older store is brought to the current version when it is opened
#: (``_MIGRATIONS``).
SCHEMA_VERSION = 3
#: A store made before ``auto_vacuum=INCREMENTAL`` is converted at open when it holds at most this
#: much live data (a VACUUM of 64 MiB took 0.5 s on the 2026-11-26 test host).
CONVERT_LIVE_MAX: Final = 64 * 1024 * 1024
#: Free pages worth this many bytes, and at least half the database file, are given back to the
#: disk after the deletes that freed them (``SQLiteStore._compact``), as MSMQ cleans up its message
#: files: a drained backlog no longer keeps its size on disk for the life of the store.
COMPACT_FREE_MIN: Final = 16 * 1024 * 1024
#: Rows deleted between two looks at the free pages (a look is one PRAGMA).
_COMPACT_LOOK_EVERY: Final = 4096
#: The WAL file is truncated to this size after a checkpoint resets it (``journal_size_limit``): one
#: large commit (a purge of 200,000 messages: 62 MB) no longer sets its size for good.
WAL_SIZE_LIMIT: Final = 16 * 1024 * 1024
#: Free disk kept beyond twice the live data and the reserve for that conversion.
_CONVERT_MARGIN: Final = 16 * 1024 * 1024

log = logging.getLogger("pymsmq.store")

_OFF = 1 << 63  # lookup_id <-> column value: column = lookup_id - 2**63 (order-preserving)
_U64_MAX = (1 << 64) - 1
_FETCH = 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queues (
    queue_id INTEGER PRIMARY KEY,
    path_name TEXT NOT NULL,
    properties TEXT NOT NULL              -- JSON
);
CREATE TABLE IF NOT EXISTS last_lookup_ids (
    queue_id INTEGER PRIMARY KEY,
    last_lookup_id INTEGER NOT NULL       -- lookup id - 2**63
);
CREATE TABLE IF NOT EXISTS messages (
    queue_id INTEGER NOT NULL,
    lookup_id INTEGER NOT NULL,           -- lookup id - 2**63
    priority INTEGER NOT NULL,
    arrived_time REAL NOT NULL,
    subqueue TEXT NOT NULL,
    abort_count INTEGER NOT NULL,
    move_count INTEGER NOT NULL,
    expires_at REAL,
    external TEXT,                        -- file name in <db>.packets/ for big packets, else NULL
    packet BLOB NOT NULL,                 -- the UserMessage packet (empty when external)
    last_move_time REAL,                  -- PROPID_M_LAST_MOVE_TIME; NULL: never moved
    packet_crc INTEGER,                   -- zlib.crc32 of the packet; NULL: written before schema 3
    PRIMARY KEY (queue_id, lookup_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_external ON messages (external) WHERE external IS NOT NULL;
"""

_UPSERT_QUEUE = "INSERT OR REPLACE INTO queues (queue_id, path_name, properties) VALUES (?, ?, ?)"
_INSERT = "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#: ``_INSERT`` of a message as it is first sent (in no subqueue, never aborted or moved, its packet
#: in the row): the constant values written in the statement, fewer values bound per row.
_INSERT_SENT = "INSERT INTO messages VALUES (?, ?, ?, ?, '', 0, 0, ?, NULL, ?, NULL, ?)"
#: What brings a store of version ``v`` (the key) to ``v + 1``.  An added column costs no rewrite
#: of the rows (SQLite reads the rows without it as NULL).
_MIGRATIONS: Final = {
    1: "ALTER TABLE messages ADD COLUMN last_move_time REAL;",
    2: "ALTER TABLE messages ADD COLUMN packet_crc INTEGER;",
}
_UPSERT_LAST = (
    "INSERT INTO last_lookup_ids (queue_id, last_lookup_id) VALUES (?, ?) ON CONFLICT (queue_id) "
    "DO UPDATE SET last_lookup_id = max(last_lookup_id, excluded.last_lookup_id)"
)
_UPDATE = (
    "UPDATE messages SET subqueue = coalesce(?, subqueue), abort_count = coalesce(?, abort_count), "
    "move_count = coalesce(?, move_count), last_move_time = coalesce(?, last_move_time) "
    "WHERE queue_id = ? AND lookup_id = ?"
)
_DELETE = "DELETE FROM messages WHERE queue_id = ? AND lookup_id = ? RETURNING external"
#: Deletes of one queue go in statements of these many keys (largest first), so that a batch of n
#: deletes runs a few statements, each of a size SQLite's statement cache already holds.
_DELETE_RUNS: Final = (256, 64, 16, 4, 1)
_DELETE_IN: Final = {
    n: f"DELETE FROM messages WHERE queue_id = ? AND lookup_id IN ({','.join('?' * n)}) RETURNING external"
    for n in _DELETE_RUNS
}
_QUEUE_FILES = "SELECT external FROM messages WHERE queue_id = ? AND external IS NOT NULL"
_UPSERT_META = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"
_READ = "SELECT external, packet, packet_crc FROM messages WHERE queue_id = ? AND lookup_id = ?"
_LOAD = (
    "SELECT queue_id, lookup_id, priority, arrived_time, subqueue, abort_count, move_count, expires_at, "
    "packet, last_move_time, packet_crc FROM messages ORDER BY queue_id, lookup_id"
)
_crc32: Final = zlib.crc32
_KEY: Final = struct.Struct("<qq")


def _key_crc(queue_id: int, stored_lookup_id: int) -> int:
    # Where a row's packet checksum starts: the CRC-32 of its key (the lookup id as stored).
    return _crc32(_KEY.pack(queue_id, stored_lookup_id))


def packet_damage(packet: bytes, crc: int | None, queue_id: int, stored_lookup_id: int) -> str | None:
    """Why ``packet`` is not the one stored with checksum ``crc`` in the row of key ``(queue_id,
    stored_lookup_id)`` (None: it is, or the row has no checksum)."""
    if crc is None:
        return None
    return _mismatch(_crc32(packet, _key_crc(queue_id, stored_lookup_id)), crc)


def _matches(packet: object, crc: object, queue_id: object, stored_lookup_id: int) -> bool:
    # packet_damage(...) is None, for values read from a row, whatever their types.
    return (
        type(packet) is bytes
        and type(crc) is int
        and type(queue_id) is int
        and packet_damage(packet, crc, queue_id, stored_lookup_id) is None
    )


def _mismatch(actual: int, crc: int) -> str | None:
    if actual == crc:
        return None
    return f"is damaged: its CRC-32 is {actual:08x}, {crc:08x} when it was stored"


def _delete_statements(keys: list[tuple[int, int]]) -> Iterator[tuple[str, tuple[int, ...]]]:
    """The statements (SQL, parameters) deleting ``keys`` (queue id, stored lookup id), grouped by queue."""
    by_queue: dict[int, list[int]] = {}
    for qid, lid in keys:
        by_queue.setdefault(qid, []).append(lid)
    for qid, lids in by_queue.items():
        if len(lids) == 1:
            yield _DELETE, (qid, lids[0])
            continue
        at = 0
        for run in _DELETE_RUNS:
            while len(lids) - at >= run:
                yield _DELETE_IN[run], (qid, *lids[at : at + run])
                at += run


def _failed(reason: str, cause: BaseException | None = None) -> MSMQError:
    err = MSMQError(f"batch not stored: {reason}", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)
    err.__cause__ = cause
    return err


def _disk_full(path: str) -> MSMQError:
    directory = os.path.dirname(os.path.abspath(path))
    return MSMQError(
        f"batch not stored: the disk of {directory} is full; messages are not accepted until it has "
        "room again (receives go on)",
        HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED,
    )


def _is_disk_full(e: BaseException) -> bool:
    return isinstance(e, sqlite3.Error) and getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL


def _grows(batch: Batch) -> bool:
    """True when ``batch`` adds messages (more inserted than deleted): what a full disk refuses."""
    return len(batch.insert) > len(batch.delete) and not batch.delete_queues


def _closed() -> MSMQError:
    return MSMQError("the store is closed", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)


class _Pending:
    """One batch on its way through the committer: SQL parameters, files, outcome."""

    __slots__ = (
        "committed",
        "delete_queues",
        "deletes",
        "done",
        "error",
        "files",
        "grows",
        "inserts",
        "keep_files",
        "lasts",
        "lead",
        "meta",
        "queues",
        "sent",
        "updates",
    )

    def __init__(self) -> None:
        self.queues: list[tuple[int, str, str]] = []
        self.inserts: list[tuple[Any, ...]] = []
        self.sent: list[tuple[Any, ...]] = []  # rows of _INSERT_SENT
        self.lasts: list[tuple[int, int]] = []
        self.updates: list[tuple[Any, ...]] = []
        self.deletes: list[tuple[int, int]] = []
        self.delete_queues: list[int] = []
        self.meta: list[tuple[str, str]] = []
        self.files: list[str] = []  # packet files written for this batch (full paths)
        self.error: MSMQError | None = None
        #: Its group's COMMIT returned: whatever comes after (an interrupt), it is durable.
        self.committed = False
        self.keep_files = False  # True when the outcome is unknown (commit failed): leave to recovery
        self.lead = False  # set (with ``done`` released) when this caller is handed the leadership
        self.grows = False  # the batch adds messages (``_grows``): refused on a full disk
        self.done = threading.Lock()
        self.done.acquire()


def _write_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fdatasync(fd)
    finally:
        os.close(fd)


#: What an error that says a store's database is damaged goes on to say.
DAMAGED_HINT: Final = (
    "the database is damaged: `pymsmq salvage` copies what can still be read into a new store, "
    'or restore a backup (docs/lifecycle.md, "A damaged store")'
)

#: SQLite's primary result codes for what a damaged database file gives.
_DAMAGE_CODES: Final = ("SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_IOERR", "SQLITE_FORMAT")


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite's error says the database file is damaged (or unreadable where it is), not
    that it is busy, full or out of memory."""
    code = getattr(exc, "sqlite_errorname", None) or ""
    return code.startswith(_DAMAGE_CODES)


def damage_hint(exc: BaseException) -> str:
    """``": " + DAMAGED_HINT`` when ``exc`` is SQLite saying the database is damaged, else ""."""
    return f": {DAMAGED_HINT}" if isinstance(exc, sqlite3.Error) and is_damage(exc) else ""


#: Beside a store's database ``<db>``: its big packets' files (``<db>.packets/``), a backup's
#: database until it takes the name ``<db>`` and a restore's until it takes the store's place
#: (``pymsmq.qm.store.backup``; the store refuses the first alone and removes the second).
PACKETS_SUFFIX: Final = ".packets"
PARTIAL_SUFFIX: Final = ".partial"
RESTORING_SUFFIX: Final = ".restoring"


def referenced_files(connection: sqlite3.Connection) -> set[str]:
    """The names of the packet files the messages of ``connection``'s store database refer to."""
    return {
        r[0]
        for r in connection.execute(
            "SELECT external FROM messages INDEXED BY messages_external WHERE external IS NOT NULL"
        )
    }


def damaged_packets(connection: sqlite3.Connection, packet_dir: str) -> Iterator[str]:
    """Each message of ``connection``'s store database (its big packets' files in ``packet_dir``)
    whose packet does not match its checksum (or whose row holds a value of the wrong type there),
    described.  Reads every packet.  A store from before schema 3 (no checksums) gives none."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(messages)")}
    if "packet_crc" not in columns:
        return
    rows = connection.execute(
        "SELECT queue_id, lookup_id, external, packet, packet_crc FROM messages WHERE packet_crc IS NOT NULL"
    )
    for qid, lid, external, packet, crc in rows:
        if type(qid) is not int or type(lid) is not int:
            yield f"a message of queue {qid!r}: its key is not a pair of integers ({lid!r})"
            continue
        if (problem := stored_packet_problem(external, packet, crc, qid, lid, packet_dir)) is not None:
            yield f"message {lid + _OFF} of queue {qid}: {problem}"


def stored_packet_problem(
    external: object, packet: object, crc: object, queue_id: int, stored_lookup_id: int, packet_dir: str
) -> str | None:
    """Why a message row's packet columns (its packet file's name, or its packet, and its checksum)
    do not hold the packet stored with them: values of other types, its file gone, a packet (in the
    row or in its file) that does not match the checksum; None when they do (or the row has no
    checksum to compare with).  What ``backup.check`` and salvage ask of every row."""
    problem = row_type_problem(external, packet, crc)
    if problem is not None:
        return problem
    checksum = crc if type(crc) is int else None  # (an int or None: row_type_problem said so)
    if external is None:
        assert isinstance(packet, bytes)
        damage = packet_damage(packet, checksum, queue_id, stored_lookup_id)
        return None if damage is None else f"its packet {damage}"
    if checksum is None:
        return None
    try:
        damage = packet_file_damage(
            os.path.join(packet_dir, str(external)), checksum, queue_id, stored_lookup_id
        )
    except FileNotFoundError:
        return f"its packet file {external} is missing"
    return None if damage is None else f"its packet file {external} {damage}"


def row_type_problem(external: object, packet: object, crc: object) -> str | None:
    # A row's packet columns holding values of other types than the schema's (SQLite's columns
    # are not typed), described; None when they have theirs.
    if crc is not None and type(crc) is not int:
        return f"its stored checksum is not an integer ({_kind(crc)})"
    if external is None:
        if type(packet) is not bytes:
            return f"its packet is not a blob ({_kind(packet)})"
    elif type(external) is not str:
        return f"its packet file name is not text ({_kind(external)})"
    return None


class UndecodableText(bytes):
    """The value of a TEXT column of a damaged row that is not UTF-8 (``decode_text``): of no type
    a row's check accepts, so the row is named, not a stop to the whole read."""


def decode_text(value: bytes) -> str | UndecodableText:
    """A connection's text_factory for reading a store that may be damaged (``UndecodableText``:
    SQLite's own decoding fails the whole read: one such row made the open refuse the store)."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        return UndecodableText(value)


def _kind(value: object) -> str:
    return "text that is not UTF-8" if isinstance(value, UndecodableText) else type(value).__name__


def packet_file_damage(path: str, crc: int, queue_id: int, stored_lookup_id: int) -> str | None:
    """``packet_damage`` of the big packet in the file at ``path``, read a chunk at a time."""
    actual = _key_crc(queue_id, stored_lookup_id)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            actual = _crc32(chunk, actual)
    return _mismatch(actual, crc)


def write_schema(connection: sqlite3.Connection) -> None:
    """Create the tables of a new store in ``connection``'s (empty) database, at ``SCHEMA_VERSION``."""
    connection.executescript(_SCHEMA + f"PRAGMA user_version={SCHEMA_VERSION};")


def fsync_path(path: str) -> None:
    """fsync the file or directory at ``path`` (a directory: the names in it are durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SQLiteStore:
    """A durable ``Store`` in one SQLite file (plus ``<path>.packets/`` for packets over 64 KiB).

    ``commits`` counts SQLite commits and ``batches`` committed batches: with concurrent callers
    ``commits`` stays well below ``batches`` (group commit).
    """

    def __init__(self, path: str | os.PathLike[str], disk_reserve: int | None = None) -> None:
        """Open (or create) the store at ``path``.

        ``disk_reserve``: bytes held back in ``<path>.reserve`` so that a full disk can still be
        drained ("A full disk" above); None: ``$PYMSMQ_DISK_RESERVE`` or 32 MiB; 0: none.
        """
        self.path = os.fspath(path)
        self.packet_dir = self.path + PACKETS_SUFFIX
        #: SQLite commits (each one fsync of the WAL) and batches committed so far.
        self.commits = 0
        self.batches = 0
        self._closed = False
        self._state = threading.Lock()
        #: Batches waiting for a leader; ``_leading`` (under ``_state``) while a thread commits.
        self._queue: queue.SimpleQueue[_Pending] = queue.SimpleQueue()
        self._leading = False
        #: ``close`` (after setting ``_closed`` under ``_state``) waits on it for the leaders to finish.
        self._idle = threading.Condition(self._state)
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        try:
            size = disk_reserve_from_env() if disk_reserve is None else disk_reserve
            self._reserve = SpaceReserve(self.path + ".reserve", size)
        except ValueError as e:
            raise MSMQError(f"cannot open store {self.path}: {e}", HResult.MQ_ERROR_INVALID_PARAMETER) from e
        self._space = threading.Lock()  # the reserve and ``low_space`` change under it
        #: True while the disk is full: the reserve is released (or could not be taken) and batches
        #: that add messages are refused with MQ_ERROR_MESSAGE_STORAGE_FAILED.
        self.low_space = False
        self._incremental = False  # auto_vacuum=INCREMENTAL (stores created by this version)
        #: Rows deleted since the last look at the free pages (``_compact``), and whether a look is
        #: due (at the start of the next group, or at close: never between a group's commit and
        #: its callers' return, where a crash would take what they were about to be told).
        self._deleted_since_look = 0
        self._compact_due = False
        #: The last compaction failed (a nearly full disk): the next failure is not logged again.
        self._compact_failed = False
        #: Bytes given back to the disk by ``_compact`` so far.
        self.compacted_bytes = 0
        # One queue manager per store (store_lock.py): refused here, before anything is read.
        self._owner = StoreLock(self.path)
        #: ``Store.in_flight``: opened (and read) under the store's lock, before anything else.
        self.in_flight: InFlightLog | None = None
        try:
            self._left_by_backup_or_restore()
            self.in_flight = InFlightLog(self.path)
            touch_private(self.path)  # (before SQLite makes it, and its -wal and -shm, as the umask says)
            self._writer = self._connect()
            version = self._writer.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                # A new store (before its first table and before WAL mode, or it has no effect; on
                # an existing store it would write): on a full disk the store gives free pages
                # back to the disk with ``PRAGMA incremental_vacuum`` ("A full disk").
                self._writer.execute("PRAGMA auto_vacuum=INCREMENTAL")
            self._writer.execute("PRAGMA journal_mode=WAL")
            self._writer.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            self._writer.execute("PRAGMA synchronous=FULL")
            self._writer.execute("PRAGMA cache_size=-65536")
            if version != 0 and version != SCHEMA_VERSION and version not in _MIGRATIONS:
                raise MSMQError(
                    f"{self.path}: unknown store schema version {version} (this pymsmq reads versions "
                    f"{min(_MIGRATIONS)} to {SCHEMA_VERSION}; a newer pymsmq made it?)",
                    HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED,
                )
            if version == 0:  # a new store: opening an existing one writes nothing (a full disk)
                write_schema(self._writer)
            elif version != SCHEMA_VERSION:
                self._migrate(version)
            self._incremental = self._writer.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
            if not self._incremental:
                self._make_incremental()
            self._remove_orphan_files()
            if self._reserve.size and not self._reserve.acquire():
                self.low_space = True
                log.warning(
                    "%s: the disk is full: no room for the %d-byte reserve; messages are not accepted "
                    "until it has room",
                    self.path,
                    self._reserve.size,
                )
        except (sqlite3.Error, OSError) as e:
            self._close_in_flight()
            self._owner.release()
            raise MSMQError(
                f"cannot open store {self.path}: {e}{damage_hint(e)}", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
            ) from e
        except BaseException:
            self._close_in_flight()
            self._owner.release()
            raise
        self._cursor = self._writer.cursor()

    def _close_in_flight(self) -> None:
        if self.in_flight is not None:
            self.in_flight.close()

    def _migrate(self, version: int) -> None:
        """At open: bring a store of an older schema ``version`` to ``SCHEMA_VERSION``, in one
        transaction (a crash or a full disk leaves it as it was; the next open tries again)."""
        steps = "".join(_MIGRATIONS[v] for v in range(version, SCHEMA_VERSION))
        try:
            self._writer.executescript(
                f"BEGIN IMMEDIATE; {steps} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;"
            )
        except sqlite3.Error:
            if self._writer.in_transaction:
                self._writer.rollback()
            raise
        log.info("%s: store schema brought from version %d to %d", self.path, version, SCHEMA_VERSION)

    def _make_incremental(self) -> None:
        """At open: convert a store made before ``auto_vacuum=INCREMENTAL`` when that is cheap.

        A VACUUM rewrites the live pages (through the WAL): it needs free disk of about twice their
        size and takes time in proportion to it, so it runs only when the live data is at most
        ``CONVERT_LIVE_MAX`` bytes and the disk has room for it, the reserve and a margin.
        Otherwise, or if it fails, the store opens as it is (a full disk can still be drained, but
        sends come back only once space is freed elsewhere) and the next open tries again.
        """
        cur = self._writer
        total, unused = _page_bytes(cur)
        live = total - unused
        try:
            free = shutil.disk_usage(os.path.dirname(os.path.abspath(self.path))).free
        except OSError:
            return
        if live > CONVERT_LIVE_MAX or free < 2 * live + self._reserve.size + _CONVERT_MARGIN:
            log.info(
                "%s: not converted to auto_vacuum=INCREMENTAL yet (%d bytes of live data, %d free)",
                self.path,
                live,
                free,
            )
            return
        started = time.monotonic()
        try:
            cur.execute("PRAGMA auto_vacuum=INCREMENTAL")
            cur.execute("VACUUM")
            cur.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error as e:
            log.warning("%s: cannot convert to auto_vacuum=INCREMENTAL: %s", self.path, e)
        self._incremental = cur.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        if self._incremental:
            log.info(
                "%s: converted to auto_vacuum=INCREMENTAL (%d bytes of live data, %.1f s)",
                self.path,
                live,
                time.monotonic() - started,
            )

    def _left_by_backup_or_restore(self) -> None:
        # Under the store's lock, before SQLite opens (or creates) the database: a backup cut
        # short left only ``<db>.partial`` (no store: refused, not opened as a new empty one with
        # a new identity); a restore cut short left ``<db>.restoring`` (the store is whole: the
        # copy goes).  pymsmq.qm.store.backup.
        if not os.path.exists(self.path) and os.path.exists(self.path + PARTIAL_SUFFIX):
            raise MSMQError(
                f"{os.path.dirname(self.path) or '.'} holds a backup or salvage that was cut short "
                f"({os.path.basename(self.path)}{PARTIAL_SUFFIX}), not a store: empty the directory and "
                "make it again",
                HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED,
            )
        restoring = self.path + RESTORING_SUFFIX
        for leftover in (restoring, restoring + "-journal"):
            if os.path.exists(leftover):
                os.unlink(leftover)
                log.info("removed %s, left by a restore that was cut short", leftover)

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves.  check_same_thread=False: the write
        # connection passes from leader to leader, and close() closes the readers; each connection
        # is used by one thread at a time.
        return sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)

    def _remove_orphan_files(self) -> None:
        """Recovery: delete packet files that no committed row references."""
        if not os.path.isdir(self.packet_dir):
            make_private_dir(self.packet_dir)
            fsync_path(os.path.dirname(os.path.abspath(self.packet_dir)))
            return
        names = set(os.listdir(self.packet_dir))
        if not names:
            return
        for name in names - referenced_files(self._writer):
            os.unlink(os.path.join(self.packet_dir, name))

    # -- writing ---------------------------------------------------------------------------------

    def apply(self, batch: Batch) -> None:
        """Apply ``batch`` atomically; returns once it is durable (shares the fsync with others)."""
        if self._closed:
            raise _closed()
        if not batch:
            return
        if self.low_space and _grows(batch) and not self._space_back():
            raise _disk_full(self.path)
        p = self._prepare(batch)
        with self._state:
            if self._closed:
                self._unlink(p.files)
                raise _closed()
            lead = not self._leading
            if lead:
                self._leading = True
            else:
                self._queue.put(p)
        if not lead:
            try:
                p.done.acquire()  # released once our batch is committed (or failed), or to hand us the lead
            except BaseException:
                # Interrupted while waiting (Ctrl-C in the main thread).  The hand-off may still pass
                # the lead to this batch; a helper thread takes that duty over so that no other caller
                # is stranded, and the interruption goes on up.  The batch may or may not be committed,
                # exactly as if the process had died at this moment.
                threading.Thread(
                    target=self._stand_in, args=(p,), name="pymsmq-store-lead", daemon=True
                ).start()
                raise
            lead = p.lead
        if lead:
            self._lead(p)
        if p.error is not None:
            if not p.keep_files:
                self._unlink(p.files)
            raise p.error

    def _prepare(self, batch: Batch) -> _Pending:
        """SQL parameters of ``batch``; big packets written and synced to their files."""
        p = _Pending()
        p.grows = _grows(batch)
        try:
            for row in batch.upsert_queues:
                props = json.dumps(row.properties, separators=(",", ":"), allow_nan=False)
                p.queues.append((row.queue_id, row.path_name, props))
            dir_dirty = False
            sent = p.sent.append
            for qid, lid, packet, priority, arrived, subqueue, aborts, moves, expires, moved in batch.insert:
                if type(lid) is not int or not 0 <= lid <= _U64_MAX:
                    raise _failed(f"lookup_id {lid!r} is not an unsigned 64-bit integer")
                if arrived != arrived or (expires is not None and expires != expires) or moved != moved:
                    # SQLite stores NULL
                    raise _failed("arrived_time, expires_at and last_move_time must not be NaN")
                crc = _crc32(packet, _key_crc(qid, lid - _OFF))
                if len(packet) <= BIG_PACKET:
                    if subqueue == "" and not aborts and not moves and moved is None:
                        sent((qid, lid - _OFF, priority, arrived, expires, packet, crc))
                        continue
                    external = None
                else:
                    external = uuid.uuid4().hex + ".pkt"
                    full = os.path.join(self.packet_dir, external)
                    p.files.append(full)
                    _write_file(full, packet)
                    dir_dirty = True
                    packet = b""
                p.inserts.append(
                    (
                        qid,
                        lid - _OFF,
                        priority,
                        arrived,
                        subqueue,
                        aborts,
                        moves,
                        expires,
                        external,
                        packet,
                        moved,
                        crc,
                    )
                )
            if dir_dirty:
                # The directory entries must be durable before a commit references them.
                fsync_path(self.packet_dir)
            for qid, last in batch.last_lookup_ids.items():
                if type(last) is not int or not 0 <= last <= _U64_MAX:
                    raise _failed(f"last lookup id {last!r} is not an unsigned 64-bit integer")
                p.lasts.append((qid, last - _OFF))
            for u in batch.update:
                if u.last_move_time is not None and u.last_move_time != u.last_move_time:
                    raise _failed("last_move_time must not be NaN")
            p.updates = [
                (
                    u.subqueue,
                    u.abort_count,
                    u.move_count,
                    u.last_move_time,
                    u.key.queue_id,
                    u.key.lookup_id - _OFF,
                )
                for u in batch.update
            ]
            p.deletes = [(k.queue_id, k.lookup_id - _OFF) for k in batch.delete]
            p.delete_queues = list(batch.delete_queues)
            p.meta = list(batch.meta.items())
        except MSMQError:
            self._unlink(p.files)
            raise
        except OSError as e:
            self._unlink(p.files)
            if e.errno in NO_SPACE:
                # A big packet's file met the full disk: the same as a commit that meets it
                # (SQLITE_FULL), reserve released and said (outside QA: only SQLite's error was
                # recognised, so a disk filled by big messages gave raw ENOSPC errors, no warning,
                # pymsmq_disk_full 0 and the 32 MiB reserve still held).
                self._release_reserve()
                raise _disk_full(self.path) from e
            raise _failed(str(e), e) from e
        except (TypeError, ValueError, struct.error) as e:  # (struct: a key beyond 64 bits)
            self._unlink(p.files)
            raise _failed(str(e), e) from e
        return p

    @staticmethod
    def _unlink(paths: Sequence[str]) -> None:
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def _stand_in(self, p: _Pending) -> None:
        """Wait in place of an interrupted caller; lead the next group if the lead comes to ``p``."""
        p.done.acquire()
        if p.lead:
            self._lead(p)

    def _lead(self, own: _Pending) -> None:
        """As the leader: commit ``own`` with every batch waiting, then pass the leadership on."""
        group = [own]
        waiting = self._queue
        while not waiting.empty():  # (only the leader takes from the queue)
            group.append(waiting.get_nowait())
        interrupted: BaseException | None = None
        try:
            self._commit_group(group)
        except BaseException as e:  # never leave a caller waiting
            for p in group:
                # A batch whose COMMIT returned is durable, whatever came after it: not a failure
                # (a Ctrl-C as the commit returned reported committed batches as failed).
                if p.error is None and not p.committed:
                    p.error = _failed(f"committer failure: {reason(e)}", e)
                    p.keep_files = True
            if not isinstance(e, Exception):
                interrupted = e  # KeyboardInterrupt, SystemExit: the leader's caller gets it
        finally:
            with self._state:  # (batches are queued under it: empty() is exact here)
                nxt: _Pending | None = None if waiting.empty() else waiting.get_nowait()
                if nxt is None:
                    self._leading = False
                    if self._closed:
                        self._idle.notify_all()  # close() waits for the leaders
            for p in group:
                if p is not own:
                    p.done.release()
            if nxt is not None:
                nxt.lead = True  # it commits its batch and whatever queued behind it
                nxt.done.release()
        if interrupted is not None:
            raise interrupted

    def _commit_group(self, group: list[_Pending]) -> None:
        conn = self._writer
        cur = self._cursor
        if self._compact_due and not self.low_space:
            self._compact()
        todo = group
        while todo:
            restart = False
            ok: list[tuple[_Pending, list[str]]] = []
            single = len(todo) == 1
            cur.execute("BEGIN IMMEDIATE")
            for p in todo:
                if not single:
                    cur.execute("SAVEPOINT b")
                try:
                    gone = self._apply_one(cur, p)
                except (sqlite3.Error, OverflowError, TypeError, ValueError) as e:
                    if not conn.in_transaction:
                        # SQLite rolled back the whole transaction (I/O error, full disk...): run
                        # the group again without the failing batch, or, when the disk is full and
                        # the reserve gives room, without the batches that add messages.
                        if _is_disk_full(e) and self._release_reserve():
                            todo = self._without_growth([q for q in todo if q.error is None])
                        else:
                            p.error = _failed(str(e), e)
                            todo = [q for q in todo if q is not p]
                        restart = True
                        break
                    p.error = _failed(str(e), e)
                    cur.execute("ROLLBACK" if single else "ROLLBACK TO b")
                    if not single:
                        cur.execute("RELEASE b")
                    continue
                if not single:
                    cur.execute("RELEASE b")
                ok.append((p, gone))
            if restart:
                continue
            if conn.in_transaction:
                try:
                    cur.execute("COMMIT")
                    for p, _ in ok:
                        p.committed = True
                except BaseException as e:
                    if not isinstance(e, sqlite3.Error):
                        # Interrupted (Ctrl-C) as the COMMIT returned: SQLite finished it (a signal
                        # handler runs between bytecodes), and the connection says how it ended.
                        if not conn.in_transaction:
                            for p, _ in ok:
                                p.committed = True
                        raise
                    if conn.in_transaction:
                        conn.rollback()
                    if _is_disk_full(e) and self._release_reserve():
                        todo = self._without_growth([p for p, _ in ok])
                        continue
                    for p, _ in ok:
                        p.error = _failed(f"commit failed: {e}", e)
                        p.keep_files = True
                    return
                self.commits += 1
            self.batches += len(ok)
            for _, gone in ok:
                self._unlink(gone)
            if self.low_space:
                self._reclaim()
            elif self._incremental:
                # (A deleted queue's messages are not counted one by one: look after one.)
                self._deleted_since_look += sum(
                    len(p.deletes) + _COMPACT_LOOK_EVERY * len(p.delete_queues) for p, _ in ok
                )
                if self._deleted_since_look >= _COMPACT_LOOK_EVERY:
                    self._compact_due = True
            return

    # -- a full disk (module docstring) ------------------------------------------------------------

    def _release_reserve(self) -> bool:
        """The disk is full: give the reserve back to it; False when none was held."""
        with self._space:
            if not self._reserve.release():
                return False
            self.low_space = True
        log.warning(
            "%s: the disk is full: released the %d-byte reserve; receives go on, messages are not "
            "accepted (MQ_ERROR_MESSAGE_STORAGE_FAILED) until the disk has room again",
            self.path,
            self._reserve.size,
        )
        return True

    def _without_growth(self, group: list[_Pending]) -> list[_Pending]:
        """The batches of ``group`` that add no messages; the others fail (the disk is full)."""
        keep: list[_Pending] = []
        for p in group:
            if p.grows:
                p.error = _disk_full(self.path)
                p.keep_files = True  # any packet file is an orphan for the next open to remove
            else:
                keep.append(p)
        return keep

    def _space_back(self) -> bool:
        """Take the reserve back if the disk has room for it and as much again; True if it did."""
        with self._space:
            if not self.low_space:
                return True
            try:
                if not self._reserve.room_to_acquire() or not self._reserve.acquire():
                    return False
            except OSError:
                return False
            self.low_space = False
        log.warning("%s: the disk has room again: the reserve is held and messages are accepted", self.path)
        return True

    def _reclaim(self) -> None:
        """As the leader, on a full disk: give the database's free pages back to the disk."""
        try:
            if self._incremental and self._cursor.execute("PRAGMA freelist_count").fetchone()[0]:
                self._vacuum_free_pages("PASSIVE")
        except sqlite3.Error as e:  # the disk may be too full even for this: try again next time
            log.debug("%s: cannot give free pages back yet: %s", self.path, e)
        self._space_back()

    def _vacuum_free_pages(self, checkpoint: str) -> None:
        """Give the database's free pages back to the disk (auto_vacuum=INCREMENTAL), then
        checkpoint (``checkpoint``: PASSIVE or TRUNCATE) to copy that into the database file and
        shorten it.  sqlite3.Error on failure (a full disk)."""
        # executescript steps the pragma to its end (``execute`` frees one page per call); in
        # autocommit mode it is a transaction of its own.
        self._writer.executescript("PRAGMA incremental_vacuum;")
        self._cursor.execute(f"PRAGMA wal_checkpoint({checkpoint})").fetchall()

    def _compact(self) -> None:
        """As the leader (before a group, or at close), after deletes: when the free pages are worth
        ``COMPACT_FREE_MIN`` and at least half the database file, give them back to the disk
        (``PRAGMA incremental_vacuum``, then a checkpoint that truncates the WAL).  Logged; a
        failure (a nearly full disk: the vacuum writes the live pages it moves through the WAL) is
        logged once and tried again after as many deletes."""
        self._deleted_since_look = 0
        self._compact_due = False
        try:
            total, free = _page_bytes(self._cursor)
            if free < COMPACT_FREE_MIN or 2 * free < total:
                return
            started = time.monotonic()
            self._vacuum_free_pages("TRUNCATE")
        except sqlite3.Error as e:
            if self._writer.in_transaction:
                self._writer.rollback()
            if not self._compact_failed:
                log.warning("%s: cannot give free pages back to the disk now: %s", self.path, e)
            self._compact_failed = True
            return
        if self._compact_failed:
            log.warning("%s: free pages can be given back to the disk again", self.path)
        self._compact_failed = False
        self.compacted_bytes += free
        log.info(
            "%s: gave %d MiB of free pages back to the disk in %.2f s",
            self.path,
            free >> 20,
            time.monotonic() - started,
        )

    def _apply_one(self, cur: sqlite3.Cursor, p: _Pending) -> list[str]:
        """Run one batch's statements; returns the packet files its deletes released."""
        gone: list[str] = []
        if p.queues:
            cur.executemany(_UPSERT_QUEUE, p.queues)
        if p.sent:
            cur.executemany(_INSERT_SENT, p.sent)
        if p.inserts:
            cur.executemany(_INSERT, p.inserts)
        if p.lasts:
            cur.executemany(_UPSERT_LAST, p.lasts)
        if p.updates:
            cur.executemany(_UPDATE, p.updates)
        for sql, params in _delete_statements(p.deletes):
            for (external,) in cur.execute(sql, params).fetchall():
                if external is not None:
                    gone.append(os.path.join(self.packet_dir, external))
        for qid in p.delete_queues:
            gone.extend(
                os.path.join(self.packet_dir, r[0]) for r in cur.execute(_QUEUE_FILES, (qid,)).fetchall()
            )
            cur.execute("DELETE FROM messages WHERE queue_id = ?", (qid,))
            cur.execute("DELETE FROM queues WHERE queue_id = ?", (qid,))
            # Queue ids are never reused (meta next_queue_id): its last lookup id has no use, and
            # every open loaded the rows of every queue ever deleted.
            cur.execute("DELETE FROM last_lookup_ids WHERE queue_id = ?", (qid,))
        if p.meta:
            cur.executemany(_UPSERT_META, p.meta)
        return gone

    # -- reading ---------------------------------------------------------------------------------

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise _closed()
            conn = self._connect()
            conn.execute("PRAGMA query_only=1")
            with self._state:
                if self._closed:
                    conn.close()
                    raise _closed()
                self._readers.append(conn)
            self._local.conn = conn
        return conn

    def _read_one(self, cur: sqlite3.Cursor, key: MessageKey) -> bytes:
        row = cur.execute(_READ, (key.queue_id, key.lookup_id - _OFF)).fetchone()
        if row is None:
            raise KeyError(key)
        external, stored, crc = row
        problem = row_type_problem(external, stored, crc)
        if problem is not None:
            raise self._damaged(key, problem)
        packet: bytes = stored  # (a blob: row_type_problem said so; a big one's is empty)
        if external is not None:
            try:
                with open(os.path.join(self.packet_dir, external), "rb") as f:
                    packet = f.read()
            except FileNotFoundError:  # deleted (and unlinked) after our row was read
                raise KeyError(key) from None
        damage = packet_damage(packet, crc, key.queue_id, key.lookup_id - _OFF)
        if damage is not None:
            where = f"its packet file {external}" if external is not None else "its packet"
            raise self._damaged(key, f"{where} {damage}")
        return packet

    @staticmethod
    def _damaged(key: MessageKey, what: str) -> MSMQError:
        return MSMQError(
            f"message {key.lookup_id} of queue {key.queue_id}: {what}",
            HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED,
        )

    def read_packet(self, key: MessageKey) -> bytes:
        """The packet of one committed message; ``KeyError`` when absent."""
        try:
            return self._read_one(self._reader().cursor(), key)
        except (sqlite3.Error, OverflowError) as e:
            if self._closed:
                raise _closed() from e
            if isinstance(e, OverflowError):
                raise KeyError(key) from None
            raise MSMQError(f"read failed: {e}", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED) from e

    def read_packets(self, keys: Sequence[MessageKey]) -> list[bytes]:
        """Packets of several messages, in the order of ``keys``, from one consistent snapshot."""
        conn = self._reader()
        try:
            cur = conn.cursor()
            cur.execute("BEGIN")
            try:
                return [self._read_one(cur, key) for key in keys]
            finally:
                cur.execute("COMMIT")
        except (sqlite3.Error, OverflowError) as e:
            if self._closed:
                raise _closed() from e
            if isinstance(e, OverflowError):
                raise KeyError(str(e)) from None
            raise MSMQError(f"read failed: {e}", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED) from e

    def load(self) -> Snapshot:
        """Committed state for restart recovery; messages stream from one read transaction.

        Big packets come back as ``b""`` (read them with ``read_packet``).
        """
        if self._closed:
            raise _closed()
        conn = self._connect()
        conn.text_factory = decode_text
        try:
            conn.execute("PRAGMA query_only=1")
            conn.execute("BEGIN")
            meta = dict(conn.execute("SELECT key, value FROM meta ORDER BY key"))
            queues = []
            for qid, path, props in conn.execute(
                "SELECT queue_id, path_name, properties FROM queues ORDER BY queue_id"
            ):
                if (problem := queue_row_problem(qid, path, props)) is not None:
                    raise ValueError(f"the row of queue {qid!r} ({path!r}) is damaged: {problem}")
                queues.append(QueueRow(qid, path, json.loads(props)))
            last_rows = conn.execute("SELECT queue_id, last_lookup_id FROM last_lookup_ids").fetchall()
            if (problem := last_lookup_ids_problem(last_rows)) is not None:
                raise ValueError(problem)
            lasts = {qid: last + _OFF for qid, last in last_rows}
            cur = conn.execute(_LOAD)
        except (sqlite3.Error, ValueError) as e:
            conn.close()
            raise _load_failed(self.path, e) from e
        messages = _stream(self.path, conn, cur)
        return Snapshot(meta=meta, queues=queues, last_lookup_ids=lasts, messages=messages)

    def close(self) -> None:
        """Commit what is queued, stop the committer, close every connection; idempotent."""
        with self._idle:
            if self._closed:
                return
            self._closed = True  # no batch is queued from now on
            while self._leading:  # the leaders commit every batch queued before
                self._idle.wait()
        if self._compact_due and not self.low_space:
            self._compact()
        try:
            self._writer.execute("PRAGMA wal_checkpoint(PASSIVE)")  # never waits for readers
        except sqlite3.Error:
            pass
        self._writer.close()
        with self._state:
            readers, self._readers = self._readers, []
        for conn in readers:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._close_in_flight()
        self._owner.release()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _page_bytes(cur: sqlite3.Cursor | sqlite3.Connection) -> tuple[int, int]:
    """(bytes of the database file's pages, bytes of those free) as SQLite counts them."""
    page_size: int = cur.execute("PRAGMA page_size").fetchone()[0]
    pages: int = cur.execute("PRAGMA page_count").fetchone()[0]
    free: int = cur.execute("PRAGMA freelist_count").fetchone()[0]
    return pages * page_size, free * page_size


def _stream(path: str, conn: sqlite3.Connection, cur: sqlite3.Cursor) -> Iterator[StoredMessage]:
    """Yield stored messages chunk by chunk; closes ``conn`` when done (or when discarded).
    MSMQError (MQ_ERROR_MESSAGE_STORAGE_FAILED) when SQLite cannot read on (a damaged page)."""
    try:
        while rows := _fetch(path, cur):
            for qid, lid, pri, arrived, sub, aborts, moves, expires, packet, moved, crc in rows:
                if type(lid) is int:  # (a key of another type is for the queue manager to refuse)
                    if packet and crc is not None and not _matches(packet, crc, qid, lid):
                        packet = b""  # damaged: read_packet says what is wrong (as for a big one)
                    lid += _OFF
                yield StoredMessage(qid, lid, packet, pri, arrived, sub, aborts, moves, expires, moved)
    finally:
        conn.close()


def _fetch(path: str, cur: sqlite3.Cursor) -> list[Any]:
    try:
        return cur.fetchmany(_FETCH)
    except sqlite3.Error as e:
        raise _load_failed(path, e) from e


def _load_failed(path: str, e: Exception) -> MSMQError:
    # The store's rows could not be read (damaged pages) or do not hold what they must.
    return MSMQError(
        f"cannot load store {path}: {e}: {DAMAGED_HINT}", HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
    )
