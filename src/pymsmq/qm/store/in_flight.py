"""Which stored messages transactions hold (received or moved, not yet committed or aborted), kept
in a file beside the store, so that a queue manager killed meanwhile counts their aborts when it
opens again.

MSMQ runs as a service: an application that dies in the middle of a transactional receive has its
transaction aborted by the service, and the message's abort count (PROPID_M_ABORT_COUNT, [MS-MQRR]
2.2.5.3 AbortCount) goes up by one; WCF's poison handling (ReceiveRetryCount) counts on it to stop
a message that kills its consumer from being delivered for ever.  An embedded queue manager dies
with its application (and a server can be killed too): its transactions end with no abort, and the
message comes back unchanged.  This log records each stored message a transaction takes (``begin``)
and lets it go at commit or abort (``end``); at the next open the messages begun and not ended are
the ones a crash aborted (``left_over``), and the queue manager adds one to their abort counts.

The file is written without fsync, a record a write(2): what write gave the kernel survives the
death of the process, which is what this is for; a crash of the machine may lose records, and then
those aborts go uncounted, as before.  The file is emptied whenever no message is held, once it
has grown past ``COMPACT_SIZE``, and at open once its records are read.

Records are 17 bytes: ``b"B"`` or ``b"E"``, the queue id and the lookup id (little-endian u64s).
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections.abc import Iterable
from typing import Final

__all__ = ["COMPACT_SIZE", "IN_FLIGHT_SUFFIX", "InFlightLog"]

#: The log beside a store's database ``<db>``: ``<db>.inflight``.
IN_FLIGHT_SUFFIX: Final = ".inflight"
#: The log is emptied when nothing is held and it has grown to this many bytes.
COMPACT_SIZE: Final = 64 * 1024

log = logging.getLogger("pymsmq.qm")

_RECORD: Final = struct.Struct("<cQQ")
_BEGIN: Final = b"B"
_END: Final = b"E"


def read_left_over(data: bytes) -> set[tuple[int, int]]:
    """The (queue id, lookup id) pairs begun and not ended in the log ``data`` (a record cut short
    by the crash, at the end, is left out)."""
    held: set[tuple[int, int]] = set()
    for at in range(0, len(data) - len(data) % _RECORD.size, _RECORD.size):
        kind, queue_id, lookup_id = _RECORD.unpack_from(data, at)
        if kind == _BEGIN:
            held.add((queue_id, lookup_id))
        elif kind == _END:
            held.discard((queue_id, lookup_id))
    return held


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
        #: What a crash of the last queue manager on the store left held: its transactions' aborts.
        self.left_over = read_left_over(data)
        self._size = len(data)
        self._held = 0
        #: The left-over records were dealt with (``clear`` at open): until then nothing empties
        #: the file (a queue manager that fails to open leaves them for the next open).
        self._taken = False
        self._write_failed = False
        self._closed = False

    def begin(self, keys: Iterable[tuple[int, int]]) -> None:
        """A transaction now holds the stored messages ``keys`` (queue id, lookup id)."""
        self._write(_BEGIN, keys)

    def end(self, keys: Iterable[tuple[int, int]]) -> None:
        """The transaction that held ``keys`` committed or aborted (its outcome is stored)."""
        self._write(_END, keys)
        if self._taken and self._held <= 0 and self._size >= COMPACT_SIZE:
            self.clear()

    def _write(self, kind: bytes, keys: Iterable[tuple[int, int]]) -> None:
        records = b"".join(_RECORD.pack(kind, q, lid) for q, lid in keys)
        if not records or self._closed:
            return
        view = memoryview(records)
        try:
            if self._fd < 0:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            # (a full disk): the receive or the commit goes on; a crash would not count this abort.
            if not self._write_failed:
                log.warning(
                    "%s: cannot note the messages transactions hold (%s): a crash now "
                    "would not count their aborts",
                    self.path,
                    exc,
                )
            self._write_failed = True
            if self._fd >= 0:  # a record written in part: the records stay whole
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)
            return
        self._write_failed = False
        self._size += len(records)
        count = len(records) // _RECORD.size
        self._held += count if kind == _BEGIN else -count

    def clear(self) -> None:
        """Empty the log: nothing is held (at open, once the left-over aborts are stored)."""
        if self._fd >= 0 and self._size:
            os.ftruncate(self._fd, 0)
        self._size = 0
        self._held = 0
        self._taken = True

    def close(self) -> None:
        """Close the file (idempotent); it is removed when no transaction holds a message (and the
        records of the last crash were dealt with)."""
        if self._closed:
            return
        self._closed = True
        if self._taken and self._held <= 0:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
