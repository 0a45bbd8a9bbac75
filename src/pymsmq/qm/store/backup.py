"""Backup and restore of a queue manager's SQLite store, online (what MSMQ's ``mqbkup`` does for a
Windows queue manager's message files).

A store is a directory: ``pymsmq.db`` (queues, messages, lookup ids, the machine's identity) and
``pymsmq.db.packets/`` (one file per packet over 64 KiB, under a unique name its row keeps; files
are written before the commit that references them, never changed, and unlinked after the commit
that deletes their message).  The store only ever holds committed state (sqlite.py, "Recovery has nothing to
roll back"), so a copy of the database taken in ONE read transaction, with every packet file its
rows reference, is exactly the store a crash at that instant would have left: opening it is a
restart.  That is what ``backup`` makes, while a queue manager (or server) works on the store:

1. every packet file present now is hard-linked (copied across file systems) into the backup;
2. the database is copied with SQLite's backup API in one step (one read transaction: a snapshot;
   WAL readers do not stop the writer);
3. each file the snapshot references and step 1 did not place (written since) is placed now; if
   one was deleted meanwhile (its message removed after the snapshot), the snapshot is taken again
   (files already placed stay) -- at most ``ATTEMPTS`` times;
4. files the snapshot does not reference are removed, everything is fsynced, the database takes
   its name (``pymsmq.db``: until then a backup cut short is no store), and the copy is checked
   (``PRAGMA quick_check``, every referenced file present).

``restore`` puts a backup in place of a stopped store (refused while a queue manager holds it):
the restored database is built beside the store (``pymsmq.db.restoring``), the old store's WAL is
checkpointed into its database, and only then does the restored one take the name, so a restore
cut short leaves the old store whole.  Over the same queue manager (``--replace``, one machine
GUID) the restored store takes the old one's counters where they are further on, so it issues no
message id, lookup id or queue id twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any, Final

from pymsmq.errors import MSMQError, WireError, quoted
from pymsmq.hresult import HResult
from pymsmq.qm.store import DEFAULT_DB_NAME
from pymsmq.qm.store.file_modes import PRIVATE_DIR, make_private_dir, touch_private
from pymsmq.qm.store.in_flight import IN_FLIGHT_SUFFIX, carry_held
from pymsmq.qm.store.row_checks import (
    last_lookup_ids_problem,
    meta_problem,
    queue_table_problem,
    whole_number,
)
from pymsmq.qm.store.sqlite import (
    DAMAGED_HINT,
    PACKETS_SUFFIX,
    PARTIAL_SUFFIX,
    RESTORING_SUFFIX,
    damage_hint,
    damaged_packets,
    fsync_path,
    referenced_files,
)
from pymsmq.qm.store.store_lock import StoreLock
from pymsmq.wire.base_header import BASE_HEADER_SIZE, BaseHeader
from pymsmq.wire.session_header import SESSION_HEADER_SIZE

__all__ = ["ATTEMPTS", "DAMAGE_SHOWN", "StoreSummary", "backup", "check", "restore"]

#: Snapshots ``backup`` takes before it gives up on a store whose big messages go faster than it.
ATTEMPTS: Final = 20

#: What SQLite keeps beside a database in WAL mode (a restored database must not meet the old ones).
_WAL_FILES: Final = ("-wal", "-shm")


@dataclass(frozen=True, slots=True)
class StoreSummary:
    """What a store (or backup) holds: application and system queues, messages, bytes on disk."""

    queues: int
    messages: int
    packet_files: int
    bytes: int
    #: Snapshots taken (``backup``: more than one when big messages went while it copied).
    snapshots: int = 1
    #: Messages whose packet does not match its checksum (damaged on disk): a queue manager
    #: leaves them in the store and does not deliver them.  The first ``DAMAGE_SHOWN`` are
    #: described in ``damage``.
    damaged: int = 0
    damage: tuple[str, ...] = ()


#: Damaged messages a ``StoreSummary`` describes (it counts them all).
DAMAGE_SHOWN: Final = 20


def _failed(text: str) -> MSMQError:
    return MSMQError(text, HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)


def _database(directory: str) -> str:
    return os.path.join(directory, DEFAULT_DB_NAME)


def _packet_dir(database: str) -> str:
    return database + PACKETS_SUFFIX


def _place(source: str, target: str) -> None:
    """Hard-link ``source`` as ``target``, sharing the store's synced file (a copy, synced, on
    another file system; ``FileNotFoundError`` if ``source`` is gone)."""
    try:
        os.link(source, target)
        return
    except FileExistsError:
        return
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
    # A copy is written under another name and renamed once whole and synced: a copy cut short
    # (a kill, a full disk) is never taken for the message's packet (QA: a truncated copy was).
    partial = target + PARTIAL_SUFFIX
    with open(source, "rb") as src:
        try:
            with open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
                dst.flush()
                os.fsync(dst.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise OSError(exc.errno, exc.strerror, target) from exc  # the file that could not be made
    os.replace(partial, target)


def _snapshot(source_db: str, target_db: str) -> None:
    """Copy ``source_db`` into ``target_db`` (replaced) in one read transaction of the source."""
    for suffix in ("", "-journal"):
        if os.path.exists(target_db + suffix):
            os.unlink(target_db + suffix)
    # Read only in effect (query_only); opened read-write so that a WAL left by a crash can be
    # read without a process holding it (a read-only open cannot rebuild the WAL index).
    with closing(sqlite3.connect(source_db, timeout=30)) as source:
        source.execute("PRAGMA query_only=1")
        touch_private(target_db)  # (a copy of every identity's messages: the owner's alone)
        with closing(sqlite3.connect(target_db)) as target:
            source.backup(target)  # pages=-1: the whole database in one step, one snapshot
            # One self-contained file (no -wal/-shm to create when it is read, as on read-only
            # media); a store opened on it goes back to WAL mode.
            target.execute("PRAGMA journal_mode=DELETE")


@contextmanager
def _new_directory(path: str) -> Iterator[None]:
    # ``path`` must not exist or be empty; on failure what was made in it goes again.
    created = not os.path.exists(path)
    if not created and (not os.path.isdir(path) or os.listdir(path)):
        raise MSMQError(
            f"{quoted(path)} exists and is not an empty directory: the copy goes to a new directory",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    make_private_dir(path)
    # Claimed by creating its packets directory (exclusive): of two backups into one new
    # directory, the second is refused before it writes anything, and nothing of the first goes.
    try:
        os.mkdir(_packet_dir(_database(path)), PRIVATE_DIR)
    except FileExistsError:
        raise MSMQError(
            f"{quoted(path)} is being written by another backup", HResult.MQ_ERROR_INVALID_PARAMETER
        ) from None
    try:
        yield
    except BaseException:
        if created:
            shutil.rmtree(path, ignore_errors=True)
        else:
            for name in os.listdir(path):
                full = os.path.join(path, name)
                shutil.rmtree(full, ignore_errors=True) if os.path.isdir(full) else os.unlink(full)
        raise


def refuse_inside(source_dir: str, target_dir: str, what: str) -> None:
    """MQ_ERROR_INVALID_PARAMETER unless ``target_dir`` names a directory outside the store
    ``source_dir`` (``what``: "a backup", "a salvage")."""
    if not target_dir:
        raise MSMQError("no destination directory given", HResult.MQ_ERROR_INVALID_PARAMETER)
    inside = os.path.commonpath([os.path.realpath(source_dir), os.path.realpath(target_dir)])
    if inside == os.path.realpath(source_dir):
        raise MSMQError(
            f"{quoted(target_dir)} is inside the store {quoted(source_dir)}: {what} there would go "
            "with the store (and its packets directory is the store's); choose a directory outside",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )


def _source_database(directory: str) -> str:
    database = _database(directory)
    if not os.path.isfile(database):
        raise MSMQError(
            f"{quoted(directory)} holds no pymsmq store ({DEFAULT_DB_NAME})",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    return database


def _sqlite_errors(operation: Callable[..., StoreSummary]) -> Callable[..., StoreSummary]:
    # SQLite's errors (a database that is not one, a full disk) as MSMQError, one line for the CLI.
    @functools.wraps(operation)
    def wrapper(*args: Any, **kwargs: Any) -> StoreSummary:
        try:
            return operation(*args, **kwargs)
        except sqlite3.Error as exc:
            raise _failed(f"{operation.__name__} failed: {exc}{damage_hint(exc)}") from exc

    return wrapper


@_sqlite_errors
def backup(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> StoreSummary:
    """Copy the store in directory ``source`` into the new directory ``destination`` (which must not
    exist or be empty), while a queue manager may be working on it; see the module docstring.
    The copy is a store: ``QueueManager.open(destination)`` or ``pymsmq serve --data destination``
    opens it as the source would be after a crash at the snapshot's instant."""
    source_dir, target_dir = os.fspath(source), os.fspath(destination)
    source_db = _source_database(source_dir)
    source_files = _packet_dir(source_db)
    refuse_inside(source_dir, target_dir, "a backup")
    with _new_directory(target_dir):
        target_db = _database(target_dir)
        target_files = _packet_dir(target_db)  # made by _new_directory
        placed: set[str] = set()

        def place(name: str) -> bool:
            try:
                _place(os.path.join(source_files, name), os.path.join(target_files, name))
            except FileNotFoundError:
                return False
            placed.add(name)
            return True

        if os.path.isdir(source_files):
            for name in os.listdir(source_files):
                place(name)
        # The database gets its name last: a backup cut short (a kill, a full disk) has no
        # pymsmq.db, so it is never taken for a store ("holds no pymsmq store").
        partial_db = target_db + PARTIAL_SUFFIX
        snapshots = 0
        while True:
            snapshots += 1
            # What transactions hold, noted before the snapshot: the backup opens as the store
            # would after a crash at its instant, those aborts counted (in_flight.carry_held).
            held = carry_held(source_db, target_db)
            _snapshot(source_db, partial_db)
            carry_held(source_db, target_db, held)  # (and the purges of those noted meanwhile)
            with closing(sqlite3.connect(partial_db)) as copy:
                referenced = referenced_files(copy)
            missing = [name for name in referenced - placed if not place(name)]
            if not missing:
                break
            if snapshots == ATTEMPTS:
                raise _failed(
                    f"backup of {quoted(source_dir)}: big messages were removed faster than {ATTEMPTS} "
                    "snapshots could copy their files; try again when the store is quieter"
                )
        for name in placed - referenced:
            os.unlink(os.path.join(target_files, name))
        fsync_path(partial_db)
        fsync_path(target_files)
        os.replace(partial_db, target_db)
        fsync_path(target_dir)
        try:
            summary = check(target_dir)
        except MSMQError as exc:  # the copy is as damaged as the store: say which store
            raise _failed(
                f"backup of {quoted(source_dir)}: the store is damaged (its copy, now removed, says: "
                f"{exc.message})"
            ) from exc
    return dataclasses.replace(summary, snapshots=snapshots)


def check(directory: str | os.PathLike[str], checksums: bool = True) -> StoreSummary:
    """Check the store (or backup) in ``directory`` without opening a queue manager on it:
    SQLite's ``quick_check`` and every packet file its messages reference present and whole, else
    MSMQError (MQ_ERROR_MESSAGE_STORAGE_FAILED) naming what is wrong; and, with ``checksums``, every
    packet (in the database or in its file) read and compared with the checksum stored with it
    (stores of schema 3 on): the summary counts and describes the damaged ones (``damaged``,
    ``damage``), which are not an error: the store is whole, and its queue manager serves the rest."""
    where = os.fspath(directory)
    database = _source_database(where)
    try:
        with closing(sqlite3.connect(database, timeout=30)) as connection:
            connection.execute("PRAGMA query_only=1")
            verdict = [r[0] for r in connection.execute("PRAGMA quick_check")]
            if verdict != ["ok"]:
                raise _failed(f"{quoted(where)}: {'; '.join(verdict[:5])}: {DAMAGED_HINT}")
            queue_rows = connection.execute("SELECT queue_id, path_name, properties FROM queues").fetchall()
            meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
            lasts = connection.execute("SELECT queue_id, last_lookup_id FROM last_lookup_ids").fetchall()
            messages = connection.execute("SELECT count(*) FROM messages").fetchone()[0]
            referenced = referenced_files(connection)
    except sqlite3.DatabaseError as exc:
        raise _unreadable(where, exc) from exc
    queues = len(queue_rows)
    # The rows a queue manager's open would refuse (damage SQLite's quick_check cannot see).
    problem = queue_table_problem(queue_rows) or meta_problem(meta, (row[0] for row in queue_rows))
    problem = problem or last_lookup_ids_problem(lasts)
    if problem is not None:
        raise _failed(f"{quoted(where)}: {problem}: {DAMAGED_HINT}")
    files = _packet_dir(database)
    absent = sorted(name for name in referenced if not os.path.isfile(os.path.join(files, name)))
    if absent:
        raise _failed(
            f"{quoted(where)}: {len(absent)} big message packet file(s) missing from "
            f"{quoted(files)} (first: {absent[0]}): not a complete store"
        )
    for name in sorted(referenced):
        problem = _packet_file_problem(os.path.join(files, name))
        if problem is not None:
            raise _failed(
                f"{quoted(where)}: the big message packet file {name} {problem}: not a complete store"
            )
    damaged = 0
    damage: list[str] = []
    if checksums:
        try:
            with closing(sqlite3.connect(database, timeout=30)) as connection:
                connection.execute("PRAGMA query_only=1")
                for found in damaged_packets(connection, files):
                    damaged += 1
                    if len(damage) < DAMAGE_SHOWN:
                        damage.append(found)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise _unreadable(where, exc) from exc
    size = os.path.getsize(database) + sum(os.path.getsize(os.path.join(files, n)) for n in referenced)
    return StoreSummary(int(queues), int(messages), len(referenced), size, 1, damaged, tuple(damage))


def _unreadable(where: str, exc: Exception) -> MSMQError:
    return _failed(f"{quoted(where)}: not a readable pymsmq store: {exc}{damage_hint(exc)}")


def _packet_file_problem(path: str) -> str | None:
    """Why the packet file at ``path`` is not a whole UserMessage packet (its BaseHeader's
    PacketSize, with the SessionHeader it announces, against the file's size), or None.  The
    contents are checked against their checksums by ``check``."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(BASE_HEADER_SIZE)
    if len(head) < BASE_HEADER_SIZE:
        return f"holds {size} bytes, less than a packet's header"
    try:
        header = BaseHeader.decode(head)
    except WireError as exc:
        return f"does not begin with a packet header ({exc})"
    expected = header.packet_size + (SESSION_HEADER_SIZE if header.session_header else 0)
    if size != expected:
        return f"holds {size} bytes where its packet header says {expected}"
    return None


@_sqlite_errors
def restore(
    backup_dir: str | os.PathLike[str], data_dir: str | os.PathLike[str], replace: bool = False
) -> StoreSummary:
    """Make the store in directory ``data_dir`` a copy of the backup in ``backup_dir``.

    Refused while a queue manager (or server) holds either store, when the backup is incomplete
    (``check``), and when ``data_dir`` holds a store unless ``replace`` (its messages are then
    gone: the restored store is what the backup holds).  The backup itself is left as it is."""
    source_dir, target_dir = os.fspath(backup_dir), os.fspath(data_dir)
    source_db = _source_database(source_dir)
    if os.path.isdir(target_dir) and os.path.samefile(source_dir, target_dir):
        raise MSMQError(
            f"{quoted(source_dir)} is both the backup and the store to restore into",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    checked = check(source_dir)
    target_db = _database(target_dir)
    if os.path.exists(target_db) and not replace:
        raise MSMQError(
            f"{quoted(target_dir)} holds a store: restoring replaces its messages (replace=True, "
            "pymsmq restore --replace)",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    make_private_dir(target_dir)
    source_lock = _lock_unless_read_only(source_db)  # a backup served as a store: not while in use
    try:
        target_lock = StoreLock(target_db)
        try:
            target_files = _packet_dir(target_db)
            make_private_dir(target_files)
            incoming = target_db + RESTORING_SUFFIX
            try:
                _snapshot(source_db, incoming)
                with closing(sqlite3.connect(incoming)) as copy:
                    referenced = referenced_files(copy)
                source_files = _packet_dir(source_db)
                for name in referenced:
                    _place(os.path.join(source_files, name), os.path.join(target_files, name))
                _carry_identifiers_forward(target_db, incoming)
                fsync_path(incoming)
                fsync_path(target_files)
            except BaseException:
                for suffix in ("", "-journal", *_WAL_FILES):
                    if os.path.exists(incoming + suffix):
                        os.unlink(incoming + suffix)
                raise
            # The old store's WAL would be replayed into the restored database: its commits go
            # into its database first (a restore cut short leaves the old store whole), then the
            # WAL goes, then the restored database takes the name.  The old store's in-flight
            # log goes too: its records name the old store's messages (in_flight.py).
            _checkpoint(target_db)
            for suffix in (*_WAL_FILES, IN_FLIGHT_SUFFIX):
                if os.path.exists(target_db + suffix):
                    os.unlink(target_db + suffix)
            os.replace(incoming, target_db)
            carry_held(source_db, target_db)  # (after: a kill between leaves aborts uncounted)
            fsync_path(target_dir)
            for name in set(os.listdir(target_files)) - referenced:
                os.unlink(os.path.join(target_files, name))  # the replaced store's big messages
        finally:
            target_lock.release()
    finally:
        if source_lock is not None:
            source_lock.release()
    # The packets were compared with their checksums in the backup (the big ones' files are its own).
    summary = check(target_dir, checksums=False)
    return dataclasses.replace(summary, damaged=checked.damaged, damage=checked.damage)


def _checkpoint(database: str) -> None:
    # The commits in the WAL of the store at ``database`` (a server killed, a crash) into the
    # database itself; a database SQLite cannot read has nothing to keep.
    if not os.path.exists(database + "-wal"):
        return
    try:
        with closing(sqlite3.connect(database, timeout=30)) as old:
            old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.DatabaseError:
        pass


#: What the restored store has issued, from the meta table: message id ordinals and queue ids.
_ISSUED: Final = ("ordinal_reserved", "next_queue_id")


def _carry_identifiers_forward(replaced_db: str, restored_db: str) -> None:
    """Give the restored database the replaced store's counters where they are further on: a
    store restored over its own later self (the same machine GUID) issues no message id, lookup
    id or queue id the replaced store already issued (QA: consumers that drop duplicates by
    message id dropped new messages)."""
    if not os.path.exists(replaced_db):
        return
    try:
        with closing(sqlite3.connect(replaced_db, timeout=30)) as old:
            old_meta = dict(old.execute("SELECT key, value FROM meta"))
            old_last = dict(old.execute("SELECT queue_id, last_lookup_id FROM last_lookup_ids"))
    except sqlite3.DatabaseError:
        return  # not a readable store: nothing it issued can be known
    with closing(sqlite3.connect(restored_db)) as new:
        meta = dict(new.execute("SELECT key, value FROM meta"))
        if meta.get("qm_guid") != old_meta.get("qm_guid"):
            return  # another queue manager's backup: its own identifiers
        for key in _ISSUED:
            # (a damaged value of the replaced store, not a whole number, tells nothing: skipped)
            replaced, restored = whole_number(old_meta.get(key)), whole_number(meta.get(key, "0"))
            if replaced is not None and (restored is None or replaced > restored):
                new.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, old_meta[key]))
        new.executemany(
            "INSERT INTO last_lookup_ids (queue_id, last_lookup_id) VALUES (?, ?) ON CONFLICT (queue_id) "
            "DO UPDATE SET last_lookup_id = max(last_lookup_id, excluded.last_lookup_id)",
            [(q, last) for q, last in old_last.items() if type(q) is int and type(last) is int],
        )
        new.commit()


def _lock_unless_read_only(database: str) -> StoreLock | None:
    # A backup on read-only media (or a directory this user may not write) has no lock file to
    # take: nobody can be serving it either, as a queue manager needs that lock file too.
    try:
        return StoreLock(database)
    except MSMQError as exc:
        cause = exc.__cause__
        if isinstance(cause, OSError) and cause.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return None
        raise
