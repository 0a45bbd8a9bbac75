"""Backup and restore of a queue manager's SQLite store, online (what MSMQ's ``mqbkup`` does for a
Windows queue manager's message files).

A store is a directory: ``pymsmq.db`` (queues, messages, lookup ids, the machine's identity) and
``pymsmq.db.packets/`` (one file per packet over 64 KiB, named by its row; files are written
before the commit that references them, never changed, and unlinked after the commit that deletes
their message).  The store only ever holds committed state (sqlite.py, "Recovery has nothing to
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

``restore`` puts a backup in place of a stopped store (refused while a queue manager holds it).
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Final

from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.qm.store import DEFAULT_DB_NAME
from pymsmq.qm.store.sqlite import fsync_path
from pymsmq.qm.store.store_lock import StoreLock

__all__ = ["ATTEMPTS", "StoreSummary", "backup", "check", "restore"]

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


def _failed(text: str) -> MSMQError:
    return MSMQError(text, HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED)


def _database(directory: str) -> str:
    return os.path.join(directory, DEFAULT_DB_NAME)


def _packet_dir(database: str) -> str:
    return database + ".packets"


def _referenced(connection: sqlite3.Connection) -> set[str]:
    return {r[0] for r in connection.execute("SELECT external FROM messages WHERE external IS NOT NULL")}


def _place(source: str, target: str) -> bool:
    """Hard-link ``source`` as ``target`` (a copy on another file system); False if it is gone.
    True: ``target`` was copied (to be fsynced) -- a link shares the store's synced file."""
    try:
        os.link(source, target)
        return False
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
    shutil.copyfile(source, target)
    return True


def _snapshot(source_db: str, target_db: str) -> None:
    """Copy ``source_db`` into ``target_db`` (replaced) in one read transaction of the source."""
    for suffix in ("", "-journal"):
        if os.path.exists(target_db + suffix):
            os.unlink(target_db + suffix)
    # Read only in effect (query_only); opened read-write so that a WAL left by a crash can be
    # read without a process holding it (a read-only open cannot rebuild the WAL index).
    with closing(sqlite3.connect(source_db, timeout=30)) as source:
        source.execute("PRAGMA query_only=1")
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
            f"{quoted(path)} exists and is not an empty directory: a backup goes to a new directory",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    os.makedirs(path, exist_ok=True)
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


def _source_database(directory: str) -> str:
    database = _database(directory)
    if not os.path.isfile(database):
        raise MSMQError(
            f"{quoted(directory)} holds no pymsmq store ({DEFAULT_DB_NAME})",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    return database


def backup(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> StoreSummary:
    """Copy the store in directory ``source`` into the new directory ``destination`` (which must not
    exist or be empty), while a queue manager may be working on it; see the module docstring.
    The copy is a store: ``QueueManager.open(destination)`` or ``pymsmq serve --data destination``
    opens it as the source would be after a crash at the snapshot's instant."""
    source_dir, target_dir = os.fspath(source), os.fspath(destination)
    source_db = _source_database(source_dir)
    source_files = _packet_dir(source_db)
    with _new_directory(target_dir):
        target_db = _database(target_dir)
        target_files = _packet_dir(target_db)
        os.makedirs(target_files)
        copied: set[str] = set()
        placed: set[str] = set()

        def place(name: str) -> bool:
            try:
                if _place(os.path.join(source_files, name), os.path.join(target_files, name)):
                    copied.add(name)
            except FileNotFoundError:
                return False
            placed.add(name)
            return True

        if os.path.isdir(source_files):
            for name in os.listdir(source_files):
                place(name)
        # The database gets its name last: a backup cut short (a kill, a full disk) has no
        # pymsmq.db, so it is never taken for a store ("holds no pymsmq store").
        partial_db = target_db + ".partial"
        snapshots = 0
        while True:
            snapshots += 1
            _snapshot(source_db, partial_db)
            with closing(sqlite3.connect(partial_db)) as copy:
                referenced = _referenced(copy)
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
        for name in copied & referenced:
            fsync_path(os.path.join(target_files, name))
        fsync_path(partial_db)
        fsync_path(target_files)
        os.replace(partial_db, target_db)
        fsync_path(target_dir)
        summary = check(target_dir)
    return StoreSummary(summary.queues, summary.messages, summary.packet_files, summary.bytes, snapshots)


def check(directory: str | os.PathLike[str]) -> StoreSummary:
    """Check the store (or backup) in ``directory`` without opening a queue manager on it:
    SQLite's ``quick_check`` and every packet file its messages reference present.  MSMQError
    (MQ_ERROR_MESSAGE_STORAGE_FAILED) naming what is wrong."""
    where = os.fspath(directory)
    database = _source_database(where)
    try:
        with closing(sqlite3.connect(database, timeout=30)) as connection:
            connection.execute("PRAGMA query_only=1")
            verdict = [r[0] for r in connection.execute("PRAGMA quick_check")]
            if verdict != ["ok"]:
                raise _failed(f"{quoted(where)}: the database is damaged: {'; '.join(verdict[:5])}")
            queues = connection.execute("SELECT count(*) FROM queues").fetchone()[0]
            messages = connection.execute("SELECT count(*) FROM messages").fetchone()[0]
            referenced = _referenced(connection)
    except sqlite3.DatabaseError as exc:
        raise _failed(f"{quoted(where)}: not a readable pymsmq store: {exc}") from exc
    files = _packet_dir(database)
    absent = sorted(name for name in referenced if not os.path.isfile(os.path.join(files, name)))
    if absent:
        raise _failed(
            f"{quoted(where)}: {len(absent)} big message packet file(s) missing from "
            f"{quoted(files)} (first: {absent[0]}): not a complete store"
        )
    size = os.path.getsize(database) + sum(os.path.getsize(os.path.join(files, n)) for n in referenced)
    return StoreSummary(int(queues), int(messages), len(referenced), size)


def restore(
    backup_dir: str | os.PathLike[str], data_dir: str | os.PathLike[str], replace: bool = False
) -> StoreSummary:
    """Make the store in directory ``data_dir`` a copy of the backup in ``backup_dir``.

    Refused while a queue manager (or server) holds either store, when the backup is incomplete
    (``check``), and when ``data_dir`` holds a store unless ``replace`` (its messages are then
    gone: the restored store is what the backup holds).  The backup itself is left as it is."""
    source_dir, target_dir = os.fspath(backup_dir), os.fspath(data_dir)
    source_db = _source_database(source_dir)
    check(source_dir)
    target_db = _database(target_dir)
    if os.path.exists(target_db) and not replace:
        raise MSMQError(
            f"{quoted(target_dir)} holds a store: restoring replaces its messages (replace=True, "
            "pymsmq restore --replace)",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    os.makedirs(target_dir, exist_ok=True)
    source_lock = _lock_unless_read_only(source_db)  # a backup served as a store: not while in use
    try:
        target_lock = StoreLock(target_db)
        try:
            target_files = _packet_dir(target_db)
            os.makedirs(target_files, exist_ok=True)
            incoming = target_db + ".restoring"
            try:
                _snapshot(source_db, incoming)
                with closing(sqlite3.connect(incoming)) as copy:
                    referenced = _referenced(copy)
                source_files = _packet_dir(source_db)
                for name in referenced:
                    if _place(os.path.join(source_files, name), os.path.join(target_files, name)):
                        fsync_path(os.path.join(target_files, name))
                fsync_path(incoming)
                fsync_path(target_files)
            except BaseException:
                for suffix in ("", "-journal", *_WAL_FILES):
                    if os.path.exists(incoming + suffix):
                        os.unlink(incoming + suffix)
                raise
            # The old store's WAL would be replayed into the restored database: it goes first.
            for suffix in _WAL_FILES:
                if os.path.exists(target_db + suffix):
                    os.unlink(target_db + suffix)
            os.replace(incoming, target_db)
            fsync_path(target_dir)
            for name in set(os.listdir(target_files)) - referenced:
                os.unlink(os.path.join(target_files, name))  # the replaced store's big messages
        finally:
            target_lock.release()
    finally:
        if source_lock is not None:
            source_lock.release()
    return check(target_dir)


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
