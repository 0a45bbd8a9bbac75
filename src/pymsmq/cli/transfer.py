"""``pymsmq export`` / ``pymsmq import``: all messages of a queue, with all properties, as JSON Lines.

The file format is specified in docs/export-format.md: a header line, one line per message
(``{"subqueue": ..., "message": {...}}`` with every ``Message`` property) and an end line with the
count, so that a truncated file is detected.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Final

import click

from pymsmq.cli._common import (
    EXIT_CODES_HELP,
    BadInput,
    Interrupted,
    StopBetween,
    Target,
    error_line,
    msmq_command,
    printable,
    progress,
    stdin_bytes,
    stdout_stream,
    target_options,
)
from pymsmq.cli._msgjson import MessageJSONError, message_from_json, message_to_json, sendable_copy
from pymsmq.errors import MSMQError, reason
from pymsmq.hresult import HResult
from pymsmq.model.message import Message
from pymsmq.model.names import send_access, validate_subqueue_name
from pymsmq.model.packet_mapping import canonical_queues, message_to_packet
from pymsmq.model.queue_properties import QueueProperties

if TYPE_CHECKING:
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager

__all__ = ["FORMAT", "VERSION", "export", "import_", "read_export"]

FORMAT: Final = "pymsmq-export"
VERSION: Final = 1
_NO_MESSAGE: Final = frozenset({HResult.MQ_ERROR_IO_TIMEOUT, HResult.MQ_ERROR_MESSAGE_NOT_FOUND})
# Queue properties ``create_queue`` takes (the others are assigned by the queue manager).
_CREATE_PROPS: Final = (
    "transactional",
    "journal",
    "label",
    "quota",
    "journal_quota",
    "base_priority",
    "authenticate",
    "priv_level",
    "multicast_address",
    "service_type_guid",
)


def _line(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A string that is not valid Unicode (a lone UTF-16 surrogate: MSMQ's strings are UTF-16
            # and do not have to be): \uXXXX escapes keep the line UTF-8 and the value exact.
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=True)
    return text + "\n"


# ---------------------------------------------------------------------- export
def _messages(q: Queue, remove: bool, limit: int | None) -> Iterator[Message]:
    """Every message of ``q`` in queue order: along a cursor (peek), or peek-then-remove."""
    n = 0
    cursor = None if remove else q.cursor()
    while limit is None or n < limit:
        try:
            if remove:
                m = q.peek(timeout=0)
            else:
                assert cursor is not None
                m = cursor.peek_current(0) if n == 0 else cursor.peek_next(0)
        except MSMQError as exc:
            if exc.hresult in _NO_MESSAGE:
                return
            raise
        yield m
        n += 1


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("queue_name", metavar="QUEUE")
@click.option("-o", "--output", default="-", metavar="FILE", help="Write to FILE (default: stdout).")
@click.option("--remove", is_flag=True, help="Remove each message once it is written (drain the queue).")
@click.option("--subqueues", is_flag=True, help="Also export the messages of QUEUE's subqueues.")
@click.option("-n", "--count", type=click.IntRange(min=1), default=None, help="At most N messages per queue.")
@target_options
@msmq_command
def export(
    target: Target, queue_name: str, output: str, remove: bool, subqueues: bool, count: int | None
) -> None:
    """Export the messages of QUEUE with every property to JSON Lines (docs/export-format.md).

    Non-destructive by default (reads along a cursor); --remove drains the queue, removing each
    message only after its line is written.

    \b
    Example:
      pymsmq export --data ./qm '.\\private$\\orders' -o orders.jsonl
      pymsmq export --url msmq://127.0.0.1:2103 '.\\private$\\orders' --remove > drained.jsonl
    """
    qm = target.qm
    written = 0
    removed = 0
    synced = 0  # message lines on disk (--remove): the message of the last may not be removed yet
    stopped = False
    sink: _Output | None = None
    guard = StopBetween()
    try:
        with qm.queue(queue_name) as q, guard:
            # The output is opened once the queue is: a failed open leaves an earlier export alone.
            sink = _Output(output)
            out = sink.stream
            header = {
                "format": FORMAT,
                "version": VERSION,
                "queue": q.path_name,
                "format_name": q.format_name,
                "queue_properties": _exported_properties(qm, q),
                "exported_at": time.time(),
                "removed": remove,
            }
            out.write(_line(header))
            handles: list[tuple[str | None, Queue]] = [(q.subqueue_name, q)]
            if subqueues and q.subqueue_name is None:
                handles += [(name, q.subqueue(name)) for name in q.subqueue_names]
            total = sum(h.message_count for _, h in handles)
            with progress("exporting", total) as bar:
                for sub, h in handles:
                    for m in _messages(h, remove, count):
                        # A Ctrl-C lets this message's line, sync and removal finish (StopBetween).
                        start = sink.position() if remove else None
                        out.write(_line({"subqueue": sub, "message": message_to_json(m)}))
                        if remove:
                            # On disk before it is removed: a crash, of this process or of the
                            # machine, can duplicate a message, never lose it.
                            sink.sync()
                            synced += 1
                            try:
                                h.receive_by_lookup_id(m.lookup_id)
                            except MSMQError as exc:
                                if exc.hresult != HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE:
                                    # Refused (no right to receive, taken by another reader): not
                                    # removed, so its line goes (outside QA: the kept file's
                                    # recipe imported it again).  A lost connection: in doubt.
                                    synced -= 1
                                    sink.take_back(start)
                                raise
                            removed += 1
                        written += 1
                        bar.update(1)
                        if guard.interrupted:
                            stopped = True
                            break
                    if h is not q:
                        h.close()
                    if stopped:
                        break
            if stopped:  # (a signal after the last message: the export is complete)
                text = _export_interrupted(sink, output, written, removed)
                sink = None
                raise guard.stopped(text)
            out.write(_line({"end": True, "count": written}))
            sink.commit()
            sink = None
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) or sink is None:
            raise  # a closed pipe (msmq_command says so); or not the output's
        raise BadInput(f"cannot write {output}: {exc.strerror or exc}") from exc  # e.g. a full disk
    finally:
        if sink is not None:
            # Kept once a line is on disk in --remove mode: its message may be removed already
            # (QA: a second Ctrl-C between the removal and its count deleted the only copy).
            kept = sink.abandon(keep=synced > 0)
            if kept is not None and synced:  # the removed messages are nowhere else
                doubt = (
                    "; the message of its last line may also still be in the queue (its removal was"
                    " under way)"
                    if synced > removed
                    else ""
                )
                click.echo(
                    f"the {removed} message{'s' if removed != 1 else ''} removed before the error "
                    f"are in {kept} (no end line: incomplete){doubt}",
                    err=True,
                )
    click.echo(f"exported {written} message{'s' if written != 1 else ''}", err=True)


def _exported_properties(qm: QueueManager, q: Queue) -> dict[str, Any]:
    """The header's ``queue_properties``: the queue's; for a queue's journal, the queue's own (a
    journal has no properties of its own, and an import goes to the queue: QA 2026-11-27, a
    journal's export re-created a transactional queue as a plain one)."""
    base, sep, suffix = q.path_name.partition(";")
    if sep and suffix.upper() == "JOURNAL" and not base.lower().endswith("\\system$"):
        return qm.get_queue_properties(base).to_dict()
    return q.properties.to_dict()


def _export_interrupted(sink: _Output, output: str, written: int, removed: int) -> str:
    """Abandon an export Ctrl-C stopped between messages; what to tell the user."""
    s = "s" if (removed or written) != 1 else ""
    if removed:  # the removed messages are nowhere else: their lines are kept
        kept = sink.abandon(keep=True) or "the output"
        return (
            f"the {removed} message{s} removed are in {kept} (no end line: incomplete; every line's"
            " message was removed, the others are in the queue)"
        )
    sink.abandon(keep=False)
    if output == "-":
        return f"stopped after {written} message{s}: the output has no end line (incomplete)"
    return f"stopped after {written} message{s}: {output} was not written"


def _mode_for(path: str) -> int:
    """The permission bits ``path`` has, or those a new file gets (0o666 less the umask)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _sync_directory(path: str) -> None:
    # The rename of the finished file survives a crash of the machine once its directory is synced.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Output:
    """Where ``export`` writes: stdout, or FILE through a temporary file renamed over it on success
    (a failed export leaves an earlier FILE as it was).  A symbolic link or a path that is not a
    regular file (a FIFO, /dev/stdout, /dev/fd/1) is written directly."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.temp: str | None = None
        #: Whether the stream is a regular file (``sync`` finds out on first use).
        self._regular: bool | None = None
        try:
            if output == "-":
                self.stream: IO[str] = stdout_stream()
            elif os.path.islink(output) or (os.path.exists(output) and not os.path.isfile(output)):
                # A link (/dev/stdout, /dev/fd/1, a user's link) or a device: written through, as
                # given; renaming over it would replace the link itself.
                self.stream = open(output, "w", encoding="utf-8")  # noqa: SIM115
            else:
                folder, name = os.path.split(os.path.abspath(output))
                fd, self.temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
                os.chmod(self.temp, _mode_for(output))  # as open(output, "w") would have left it
                self.stream = os.fdopen(fd, "w", encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"cannot write {output}: {exc.strerror or exc}") from exc

    def sync(self) -> None:
        """What was written so far is on disk (``fdatasync``) when the output is a regular file; a
        pipe or a terminal is only flushed (its reader decides what is kept)."""
        self.stream.flush()
        if self._regular is None:
            try:
                self._regular = stat.S_ISREG(os.fstat(self.stream.fileno()).st_mode)
            except (OSError, ValueError):  # no file descriptor (a test's captured stdout)
                self._regular = False
        if self._regular:
            os.fdatasync(self.stream.fileno())

    def position(self) -> int | None:
        """Where the next line starts in the temporary file (None: not written to one)."""
        if self.temp is None:
            return None
        self.stream.flush()
        return self.stream.tell()

    def take_back(self, start: int | None) -> None:
        """Cut the temporary file back to ``start`` (``position``'s), durably: the lines written
        since are dropped (a stream that is no temporary file keeps them: its reader has them)."""
        if self.temp is None or start is None:
            return
        self.stream.flush()
        self.stream.truncate(start)
        self.stream.seek(start)
        self.sync()

    def commit(self) -> None:
        """The export is complete: close, and put the file in place (durably: its directory too)."""
        if self.temp is not None:
            self.sync()
        self._close()
        if self.temp is not None:
            os.replace(self.temp, self.output)
            _sync_directory(os.path.dirname(os.path.abspath(self.output)))

    def abandon(self, keep: bool) -> str | None:
        """The export failed: drop what was written, or (``keep``) leave it; where it is left."""
        self._close_quietly()
        if self.temp is None:
            return None if self.stream is sys.stdout else self.output
        if keep:
            return self.temp
        with contextlib.suppress(OSError):
            os.unlink(self.temp)
        return None

    def _close(self) -> None:
        if self.stream is sys.stdout:
            self.stream.flush()
        else:
            self.stream.close()

    def _close_quietly(self) -> None:
        # After a failed write: what is buffered may fail again; the first error is the one told.
        with contextlib.suppress(OSError):
            self._close()


# ---------------------------------------------------------------------- import
class ExportFileError(ValueError):
    """The export file is malformed; ``line`` is the 1-based line number."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def read_export(lines: Iterable[str]) -> Iterator[dict[str, Any] | tuple[str | None, Message]]:
    """Parse an export file: first the header dict, then ``(subqueue, Message)`` per message.

    Raises ``ExportFileError`` for anything malformed, including a missing end line or a count that
    does not match (a truncated file).
    """
    count = 0
    lineno = 0
    header_seen = False
    ended = False
    for lineno, text in enumerate(lines, 1):
        if not text.strip():
            continue
        if ended:
            raise ExportFileError("data after the end line", lineno)
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise ExportFileError(f"not JSON: {exc}", lineno) from None
        except RecursionError:
            raise ExportFileError("not JSON this reader takes: nested too deeply", lineno) from None
        if not isinstance(record, dict):
            raise ExportFileError("not a JSON object", lineno)
        if not header_seen:
            if record.get("format") != FORMAT:
                raise ExportFileError(f"not a {FORMAT} file (no header line)", lineno)
            version = record.get("version")
            if type(version) is not int or version != VERSION:  # not true, not 1.0
                raise ExportFileError(f"unsupported version {version!r}", lineno)
            header_seen = True
            yield record
            continue
        if "end" in record:
            said = record.get("count")
            if set(record) != {"end", "count"} or record["end"] is not True or type(said) is not int:
                raise ExportFileError('the end line is {"end": true, "count": <messages>}', lineno)
            if said != count:
                raise ExportFileError(f"end line says {said} messages, found {count}", lineno)
            ended = True
            continue
        if set(record) != {"subqueue", "message"}:
            raise ExportFileError("a message line has exactly 'subqueue' and 'message'", lineno)
        sub = record["subqueue"]
        if sub is not None:
            if not isinstance(sub, str):
                raise ExportFileError("subqueue must be a name or null", lineno)
            try:
                validate_subqueue_name(sub)
            except MSMQError as exc:
                raise ExportFileError(reason(exc), lineno) from None
        try:
            message = message_from_json(record["message"])
        except MessageJSONError as exc:
            raise ExportFileError(str(exc), lineno) from None
        count += 1
        yield sub, message
    if not header_seen:
        raise ExportFileError("empty file", lineno + 1)
    if not ended:
        raise ExportFileError("no end line (the file is truncated)", lineno + 1)


def _open_lines(path: str) -> list[str] | IO[str]:
    if path == "-":
        try:
            return stdin_bytes().decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise BadInput(f"cannot read standard input: not UTF-8 text: {exc}") from exc
    try:
        return open(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise BadInput(f"cannot read {path}: {reason}") from exc


def _check(source: Iterable[str], name: str) -> tuple[dict[str, Any], int, int]:
    """Read the whole file once: its header, message count and express message count (BadInput when
    malformed, or when a message could not be sent: each is encoded as a send would)."""
    header: dict[str, Any] = {}
    count = 0
    express = 0
    try:
        for item in read_export(source):
            if isinstance(item, dict):
                header = item
                continue
            count += 1
            message = sendable_copy(item[1])
            try:
                message.validate()
                canonical_queues(message)  # admin and response queues: format names
                message_to_packet(message)  # every value a packet must hold
            except MSMQError as exc:
                raise BadInput(f"{name}: message {count}: {error_line(exc)}") from exc
            if message.delivery == 0:
                express += 1
    except ExportFileError as exc:
        raise BadInput(f"{name}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise BadInput(f"{name}: not UTF-8 text: {exc}") from exc
    return header, count, express


def _close(source: list[str] | IO[str]) -> None:
    if not isinstance(source, list):
        source.close()


def _create_from_header(qm: QueueManager, path: str, header: dict[str, Any]) -> None:
    raw = header.get("queue_properties")
    try:
        props = QueueProperties.from_dict(raw if isinstance(raw, dict) else {})
    except MSMQError as exc:
        raise BadInput(f"the header's queue properties are invalid: {error_line(exc)}") from exc
    except TypeError as exc:
        raise BadInput(f"the header's queue properties are invalid: {exc}") from exc
    kwargs: dict[str, Any] = {name: getattr(props, name) for name in _CREATE_PROPS}
    qm.create_queue(path, **kwargs).close()


def _local_path(path: str) -> str:
    # The header names the queue on the exporting machine; import to the same queue name here.
    _computer, sep, rest = path.partition("\\")
    return f".\\{rest.partition(';')[0]}" if sep else path


@click.command(name="import", epilog=EXIT_CODES_HELP)
@click.argument("file", metavar="FILE|-")
@click.argument("queue_name", metavar="[QUEUE]", required=False)
@click.option("--create", is_flag=True, help="Create QUEUE with the exported queue's properties if missing.")
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=500,
    show_default=True,
    help="Messages per transaction for a transactional queue.",
)
@click.option(
    "--recoverable",
    is_flag=True,
    help="Send express messages as recoverable (needed to keep them in an embedded store).",
)
@target_options
@msmq_command
def import_(
    target: Target, file: str, queue_name: str | None, create: bool, batch: int, recoverable: bool
) -> None:
    """Send every message of an export FILE to QUEUE (default: the exported queue's name).

    The whole file is checked before anything is sent (every message is encoded as a send would).
    Properties the queue manager assigns (id, sent and arrival time, lookup id, source machine,
    transaction facts) get fresh values; everything else is kept. Messages of subqueues go to QUEUE
    itself. Express messages into an embedded store (--data) are refused unless --recoverable: they
    would live in memory only, and be gone when the command ends.

    \b
    Example:
      pymsmq import --data ./qm orders.jsonl '.\\private$\\orders' --create
      pymsmq export --data ./a '.\\private$\\q' | pymsmq import --data ./b - --create
    """
    first = _open_lines(file)
    try:
        header, total, express = _check(first, file)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted (Ctrl-C) while {file} was checked: nothing was imported") from None
    finally:
        _close(first)
    exported_from = str(header.get("queue", ""))
    if queue_name is None and exported_from.partition("\\")[2].lower().startswith("system$"):
        # (its local name, ".\SYSTEM$", was refused as a public queue's: outside QA)
        raise BadInput(
            f"{file} was exported from the system queue {printable(exported_from)}, which no send can"
            " reach: give the target QUEUE (pymsmq import FILE QUEUE)"
        )
    qm = target.qm
    path = queue_name or _local_path(exported_from)
    # Express messages into an embedded store would live in this command's memory only.
    would_lose = bool(express) and not recoverable and not target.remote
    if create and not qm.queue_exists(path):
        if would_lose:
            _refuse_express(express, total, header.get("queue_properties"))
        _create_from_header(qm, path, header)
    source = first if isinstance(first, list) else _open_lines(file)
    sent = 0  # sent, and committed when the queue is transactional
    guard = StopBetween()
    try:
        with qm.queue(path, send_access(path)) as q, progress("importing", total) as bar, guard:
            transactional = q.transactional
            if would_lose and not transactional:
                _refuse_express(express, total, None)
            tx: Any = None
            in_tx = 0
            try:
                for item in read_export(source):
                    if guard.interrupted:  # between two sends (a transaction in progress aborts)
                        break
                    if isinstance(item, dict):
                        continue
                    if transactional and tx is None:
                        tx = qm.begin_transaction()
                    message = sendable_copy(item[1])
                    if recoverable:
                        message.delivery = 1
                    q.send(message, tx)
                    bar.update(1)
                    if tx is None:
                        sent += 1
                        continue
                    in_tx += 1
                    if in_tx == batch:
                        tx.commit()
                        tx = None
                        sent, in_tx = sent + in_tx, 0
                if tx is not None and not guard.interrupted:
                    tx.commit()
                    tx = None
                    sent, in_tx = sent + in_tx, 0
            finally:
                if tx is not None:
                    tx.abort()
            if guard.interrupted and sent < total:
                s = "s" if total != 1 else ""
                aborted = f" (the transaction of the {in_tx} after them was aborted)" if in_tx else ""
                raise guard.stopped(
                    f"{sent} of {total} message{s} were imported into {path}{aborted};"
                    " importing the file again would repeat them"
                )
    except ExportFileError as exc:  # the file changed between the two reads
        raise BadInput(f"{file}: {exc}") from exc
    except MSMQError as exc:
        if not sent:
            raise
        # Say how far it got: those messages are in QUEUE (importing the file again repeats them).
        where = f"{sent} of {total} message{'s' if total != 1 else ''} were imported into {path}, then: "
        raise MSMQError(where + str(exc.args[0] if exc.args else exc), exc.hresult) from exc
    finally:
        _close(source)
    click.echo(f"imported {sent} message{'s' if sent != 1 else ''} into {path}", err=True)


def _refuse_express(express: int, total: int, props: object) -> None:
    if isinstance(props, dict) and props.get("transactional"):
        return  # a transactional queue makes every message recoverable
    raise BadInput(
        f"{express} of the {total} messages are express: an embedded queue manager keeps express "
        "messages in memory only, and this one closes when the command ends; give --recoverable to "
        "import them as recoverable messages, or import through a server (--url)"
    )
