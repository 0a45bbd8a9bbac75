"""``pymsmq send``, ``receive``, ``peek`` and ``move``: messages from the command line."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, BinaryIO, Final

import click

from pymsmq.cli._common import (
    EXIT_CODES_HELP,
    BadInput,
    MSMQFailure,
    NoMessage,
    OutputClosed,
    StopBetween,
    Target,
    describe_os_error,
    emit_json,
    error_line,
    msmq_command,
    printable,
    stdin_bytes,
    stdout_binary,
    target_options,
)
from pymsmq.cli._msgjson import body_text, message_to_json, sendable_copy
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE, MQ_SINGLE_MESSAGE
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.names import LocalFormat, QueuePath, send_access
from pymsmq.wire.format_name import FormatName
from pymsmq.wire.message_class import MessageClass

if TYPE_CHECKING:
    from pymsmq.qm.queue import Queue

    _IntType = click.ParamType[int]
    _IdType = click.ParamType[ObjectId]
else:
    _IntType = _IdType = click.ParamType

__all__ = ["ACK_LEVELS", "BODY_TYPES", "move", "peek", "receive", "send"]

# [MC-MQAC] 2.2.2.1 MQMSGACKNOWLEDGEMENT values, by a command-line name.
ACK_LEVELS: Final = {
    "none": 0x00,
    "pos-arrival": 0x01,
    "pos-receive": 0x02,
    "neg-arrival": 0x04,
    "full-reach-queue": 0x05,
    "nack-reach-queue": 0x04,
    "neg-receive": 0x08,
    "nack-receive": 0x0C,
    "full-receive": 0x0E,
}
# VARTYPE values MSMQ applications put in BodyType ([MS-MQMQ] 2.2.18.1.4 / MC-MQAC Body).
BODY_TYPES: Final = {
    "bytes": 0x2011,  # VT_ARRAY | VT_UI1
    "string": 8,  # VT_BSTR (UTF-16LE body)
    "lpwstr": 31,  # VT_LPWSTR (UTF-16LE body)
    "lpstr": 30,  # VT_LPSTR
    "none": 0,
}
_NO_MESSAGE: Final = frozenset({HResult.MQ_ERROR_IO_TIMEOUT, HResult.MQ_ERROR_MESSAGE_NOT_FOUND})
#: ``send --count``: copies per ``send_many`` call.
_SEND_CHUNK: Final = 1000


class _Named(_IntType):
    """A name from a table, or an integer (decimal or 0x hex)."""

    def __init__(self, name: str, table: dict[str, int], bits: int) -> None:
        self.name = name
        self.table = table
        self.bits = bits

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text in self.table:
            return self.table[text]
        try:
            number = int(text, 0)
        except ValueError:
            self.fail(f"{value!r} is not one of {', '.join(self.table)} or a number", param, ctx)
        if not 0 <= number < 1 << self.bits:
            self.fail(f"{value!r} is out of range", param, ctx)
        return number


class _Flags(_Named):
    """Names from a table or integers, joined by commas: their union (OR)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        parts = [p for p in str(value).split(",") if p.strip()]
        if not parts:
            self.fail(f"{value!r} names no {self.name.lower()} level", param, ctx)
        union = 0
        for part in parts:
            union |= super().convert(part, param, ctx)
        return union


class _Seconds(_IntType):
    """Seconds (u32), or ``infinite``."""

    name = "SECONDS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text in ("infinite", "inf"):
            return INFINITE
        try:
            number = int(text, 0)
        except ValueError:
            self.fail(f"{value!r} is not a number of seconds or 'infinite'", param, ctx)
        if not 0 <= number <= INFINITE:
            self.fail(f"{value!r} is out of range", param, ctx)
        return number


class _Id(_IdType):
    """An object id: ``{guid}\\ordinal`` or 40 hex digits (its 20 bytes)."""

    name = "ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> ObjectId:
        if isinstance(value, ObjectId):
            return value
        try:
            return ObjectId.coerce(str(value))
        except MSMQError:
            self.fail(f"{value!r} is not an id ({{guid}}\\ordinal or 40 hex digits)", param, ctx)


ACK: Final = _Flags("ACK", ACK_LEVELS, 4)
BODY_TYPE: Final = _Named("TYPE", BODY_TYPES, 32)
SECONDS: Final = _Seconds()
OBJECT_ID: Final = _Id()
#: Longest wait of one read of ``receive``/``peek``: Ctrl-C is looked at between reads.
_SLICE: Final = 0.25
#: A read's match: ("id" or "correlation_id", the id) (``Queue.receive_by_id`` and its kin).
_Match = tuple[str, ObjectId]
_TIMEOUT: Final = click.FloatRange(min=0)


def _read_body(body: str | None, file: str | None, encoding: str, encoding_given: bool) -> bytes:
    if body is not None and file is not None:
        raise BadInput("give the body as an argument or with --file, not both")
    if body is not None:
        try:
            return body.encode(encoding)
        except UnicodeEncodeError:
            # Bytes of the command line that are not text in its encoding (Latin-1 text in a UTF-8
            # shell): in UTF-8, the bytes as given; no other encoding can take them.
            if encoding == "utf-8":
                return os.fsencode(body)
            raise BadInput(
                f"the BODY argument is not text (bytes that are not {sys.getfilesystemencoding()}):"
                f" it cannot be sent as {encoding}; give its bytes with --file or on standard input"
            ) from None
    if encoding_given:
        raise BadInput("--encoding applies to a BODY argument; a file or standard input is sent as it is")
    try:
        if file is None or file == "-":
            return stdin_bytes()
        with open(file, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise BadInput(f"cannot read {file}: {exc.strerror or exc}") from exc


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("queue_name", metavar="QUEUE")
@click.argument("body", required=False)
@click.option("--file", "-f", "file", metavar="PATH", help="Read the body from PATH ('-' = stdin).")
@click.option(
    "--encoding",
    type=click.Choice(["utf-8", "utf-16-le"]),
    default=None,
    help="How a BODY argument becomes bytes (default utf-8; utf-16-le for --body-type string).",
)
@click.option(
    "--label", default="", help="Message label (at most 249 UTF-16 units; a character beyond the BMP is 2)."
)
@click.option("--priority", type=click.IntRange(0, 7), default=3, show_default=True, help="0..7.")
@click.option("--recoverable/--express", default=False, help="Recoverable (stored) or express (default).")
@click.option("--correlation-id", type=OBJECT_ID, default=None, help="Correlation id.")
@click.option("--app-specific", type=click.IntRange(-(1 << 31), 0xFFFFFFFF), default=0, help="AppSpecific.")
@click.option("--body-type", type=BODY_TYPE, default=None, help="bytes, string, lpwstr, lpstr or a VARTYPE.")
@click.option("--extension", metavar="HEX", default=None, help="Extension bytes, as hex.")
@click.option(
    "--ttrq", type=SECONDS, default=INFINITE, help="Time to reach queue, seconds (default infinite)."
)
@click.option(
    "--ttbr", type=SECONDS, default=INFINITE, help="Time to be received, seconds (default infinite)."
)
@click.option("--journal", is_flag=True, help="Keep a copy in the machine journal (MQMSG_JOURNAL).")
@click.option("--deadletter", is_flag=True, help="Dead-letter the message if it expires (MQMSG_DEADLETTER).")
@click.option(
    "--ack",
    type=ACK,
    default=0,
    help="Acknowledgement levels, joined by commas: full-receive, full-reach-queue,full-receive, 0x0F, ...",
)
@click.option("--admin-queue", metavar="FORMAT_NAME", default=None, help="Queue for acknowledgements.")
@click.option("--response-queue", metavar="FORMAT_NAME", default=None, help="Queue for responses.")
@click.option("--dead-letter-queue", metavar="PATH", default=None, help="Application dead-letter queue.")
@click.option("--trace", is_flag=True, help="Send report messages (MQMSG_TRACE_SEND_ROUTE_TO_REPORT_QUEUE).")
@click.option(
    "--transactional/--no-transactional",
    default=None,
    help="Send in a one-message transaction (default: when the queue is transactional).",
)
@click.option("--count", type=click.IntRange(min=1), default=1, help="Send the message this many times.")
@click.option("--json", "as_json", is_flag=True, help="Print the assigned ids as JSON.")
@target_options
@msmq_command
def send(
    target: Target,
    queue_name: str,
    body: str | None,
    file: str | None,
    encoding: str | None,
    label: str,
    priority: int,
    recoverable: bool,
    correlation_id: ObjectId | None,
    app_specific: int,
    body_type: int | None,
    extension: str | None,
    ttrq: int,
    ttbr: int,
    journal: bool,
    deadletter: bool,
    ack: int,
    admin_queue: str | None,
    response_queue: str | None,
    dead_letter_queue: str | None,
    trace: bool,
    transactional: bool | None,
    count: int,
    as_json: bool,
) -> None:
    """Send a message to QUEUE. The body is BODY, the file given with --file, or standard input.

    \b
    Example:
      pymsmq queue create --data ./qm '.\\private$\\orders'
      pymsmq send --data ./qm '.\\private$\\orders' 'hello' --label greeting --priority 5 --recoverable
      pymsmq queue create --data ./qm '.\\private$\\acks'
      cat order.xml | pymsmq send --data ./qm '.\\private$\\orders' --label order --ack full-receive \\
          --admin-queue '.\\private$\\acks'

    QUEUE may be a multiple-element format name (format names joined by commas): every queue it
    names gets a copy.

    \b
      pymsmq send --data ./qm 'DIRECT=OS:.\\private$\\orders,DIRECT=OS:.\\private$\\acks' 'hi' --recoverable
    """
    given = encoding is not None
    if encoding is None:
        encoding = "utf-16-le" if body_type in (BODY_TYPES["string"], BODY_TYPES["lpwstr"]) else "utf-8"
    data = _read_body(body, file, encoding, given)
    try:
        ext = bytes.fromhex(extension) if extension is not None else b""
    except ValueError as exc:
        raise BadInput(f"--extension is not hex: {exc}") from exc
    qm = target.qm
    try:
        message = Message(
            body=data,
            label=label,
            priority=priority,
            delivery=1 if recoverable else 0,
            correlation_id=correlation_id,
            app_specific=app_specific,
            body_type=(BODY_TYPES["bytes"] if body_type is None else body_type),
            extension=ext,
            max_time_to_reach_queue=ttrq,
            max_time_to_receive=ttbr,
            journal=(2 if journal else 0) | (1 if deadletter else 0),
            ack=ack,
            admin_queue=_format_name(qm, admin_queue),
            response_queue=_format_name(qm, response_queue),
            dead_letter_queue=_queue_name(dead_letter_queue),
            trace=1 if trace else 0,
        )
    except MSMQError as exc:
        if exc.hresult == HResult.MQ_ERROR_QUEUE_NOT_FOUND:
            raise
        raise BadInput(f"bad message property: {error_line(exc)}") from exc
    with qm.queue(queue_name, send_access(queue_name)) as q:
        xact = q.transactional if transactional is None else transactional
        if not recoverable and not xact and not target.remote:
            click.echo(
                "warning: express messages live in memory only; this embedded queue manager closes when "
                "the command ends, so use --recoverable to keep the message",
                err=True,
            )
        _send_copies(q, queue_name, message, count, MQ_SINGLE_MESSAGE if xact else None, as_json)


def _send_copies(q: Queue, name: str, message: Message, count: int, tx: Any, as_json: bool) -> None:
    """``send``'s sends: ``count`` copies of ``message``, their ids printed as they go (in text; in
    JSON at the end).  Stopped part way (an error, Ctrl-C or SIGTERM), it prints the ids of the
    copies sent and says how many went in: sending again would repeat them (outside QA: nothing
    told that 10 of 50, or 33,000, were in the queue)."""
    sent: list[dict[str, Any]] = []
    batch: list[Message] = []
    in_doubt = 0  # sends a lost connection left unanswered: stored or not, nobody knows

    def record(messages: Iterable[Message]) -> None:
        items = [{"id": str(m.id) if m.id is not None else None, "queue": q.format_name} for m in messages]
        sent.extend(items)
        if not as_json:
            for item in items:
                click.echo(item["id"])

    def partly(then: str) -> str:
        s = "s" if count != 1 else ""
        done = f"{len(sent)} of {count} message{s} were sent to {printable(name)}"
        return f"{done}{then}; sending again would repeat them"

    with StopBetween() as guard:
        try:
            for start in range(0, count, _SEND_CHUNK):
                if guard.interrupted:
                    break
                # Many copies go in send_many batches: pipelined to a server, and recoverable ones
                # share their fsyncs (each still its own message, and with --transactional its own
                # one-message transaction).
                batch = [message.copy() for _ in range(min(_SEND_CHUNK, count - start))]
                try:
                    if len(batch) == 1:
                        q.send(batch[0], tx)
                    else:
                        q.send_many(batch, tx)
                except MSMQError as exc:
                    # send_many sends every message it can and lists the others in ``failures``.
                    failures = exc.failures if len(batch) > 1 else ((0, exc),)
                    record(m for i, m in enumerate(batch) if i not in {i for i, _ in failures})
                    in_doubt = sum(
                        1 for _, e in failures if e.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
                    )
                    raise
                record(batch)
                batch = []
        except MSMQError as exc:
            if count == 1 or not sent:
                raise
            if as_json:
                emit_json(sent)
            doubt = f" (and perhaps some of the {in_doubt} left unanswered when the connection was lost)"
            raise MSMQError(partly(f"{doubt if in_doubt else ''}, then: {exc.message}"), exc.hresult) from exc
        except KeyboardInterrupt:  # a second signal, inside a send: the batch in hand is in doubt
            if as_json:
                emit_json(sent)
            doubt = f" (and perhaps some of the {len(batch)} being sent then)" if batch else ""
            raise guard.stopped(partly(doubt)) from None
    if as_json:
        emit_json(sent if count > 1 else sent[0])
    if len(sent) < count:
        raise guard.stopped(partly(""))


def _format_name(qm: Any, name: str | None) -> str | None:
    # Admin and response queues are format names ([MC-MQAC] AdminQueueInfo / ResponseQueueInfo): a
    # format name is checked and kept as given (it may name a remote queue); a path name must name a
    # queue of this queue manager and becomes its format name.
    if name is None:
        return None
    if LocalFormat.looks_like_format_name(name):
        return str(FormatName.parse(name))
    result: str = qm.format_name(name)
    return result


def _queue_name(name: str | None) -> str | None:
    # PROPID_M_DEADLETTER_QUEUE names a queue that may be on another machine: a format name or a
    # path name, checked (as --admin-queue is) and kept as given.
    if name is None:
        return None
    if LocalFormat.looks_like_format_name(name):
        FormatName.parse(name)
    else:
        QueuePath.parse(name)
    return name


# ---------------------------------------------------------------------- receive / peek output
def _print_message(m: Message, as_json: bool, body_only: bool, out: BinaryIO) -> None:
    if body_only:
        write_all(out, m.body)
        return
    if as_json:
        data = message_to_json(m)
        data["body_text"] = body_text(m)
        write_all(out, json.dumps(data).encode("ascii") + b"\n")
        return
    text = body_text(m)
    lines = [
        f"lookup_id: {m.lookup_id}",
        f"id: {m.id}",
        f"label: {printable(m.label)}",
        f"priority: {m.priority}  delivery: {'recoverable' if m.delivery else 'express'}",
    ]
    if m.msg_class:
        # Why a message is in an admin, dead-letter or report queue ("retrieve PROPID_M_CLASS to find
        # out why the message was sent to the queue"); the text output left it out (outside QA).
        known = m.msg_class in MessageClass._value2member_map_
        name = MessageClass(m.msg_class).name if known else "unknown"
        lines.append(f"class: 0x{m.msg_class:04X} {name}")
    if m.correlation_id is not None:
        lines.append(f"correlation_id: {m.correlation_id}")
    if m.app_specific:
        lines.append(f"app_specific: {m.app_specific}")
    if m.abort_count or m.move_count:
        lines.append(f"abort_count: {m.abort_count}  move_count: {m.move_count}")
    for name in ("destination_format_name", "response_queue", "admin_queue"):
        queue = getattr(m, name)
        if queue:
            lines.append(f"{name}: {queue}")
    for name in ("sent_time", "arrived_time"):
        seconds = getattr(m, name)
        if seconds is not None:
            lines.append(f"{name}: {_utc(seconds)} ({seconds})")
    if text is not None:
        # Shown as the sender wrote it but for what could pass for this listing's own lines: a
        # carriage return is written \r (it overwrote the line on a terminal), and every line after
        # the first is indented (a body's lines looked like another message's fields: outside QA).
        shown = text.replace("\r", "\\r").replace("\n", "\n  ")
        lines.append(f"body ({len(m.body)} bytes): {shown}")
    elif len(m.body) <= 64:
        lines.append(f"body ({len(m.body)} bytes, hex): {m.body.hex()}")
    else:
        lines.append(f"body ({len(m.body)} bytes, base64): {base64.b64encode(m.body).decode('ascii')}")
    write_all(out, ("\n".join(lines) + "\n\n").encode("utf-8", "backslashreplace"))


def write_all(out: BinaryIO, data: bytes) -> None:
    """Write ``data`` to ``out`` whole, even when a signal interrupts the write.

    A write to a full pipe that a signal handler interrupts after part of it went out returns
    that part, and Python's buffered writer then dropped the rest silently (a 1.3 MB JSON line cut
    at 132 KiB, exit 0): on a real file descriptor the bytes go out with ``os.write`` until all
    are written.
    """
    try:
        fd = out.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        out.write(data)  # not a file descriptor (a test's buffer)
        out.flush()
        return
    out.flush()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _utc(seconds: float) -> str:
    """POSIX seconds as ISO 8601 UTC text, e.g. 2026-11-25T14:54:03Z (the raw value stays beside it)."""
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return "?"


def _reader(
    q: Queue, remove: bool, lookup_id: int | None, transaction: Any, match: _Match | None = None
) -> Callable[[float | None, bool], Message]:
    """A function (timeout, first) -> the next message: receive, or peek along a cursor; with
    ``match``, the first message with that message id or correlation id."""
    if match is not None:
        field, wanted = match
        if field == "id":
            if remove:
                return lambda timeout, first: q.receive_by_id(wanted, timeout, transaction)
            return lambda timeout, first: q.peek_by_id(wanted, timeout)
        if remove:
            return lambda timeout, first: q.receive_by_correlation_id(wanted, timeout, transaction)
        return lambda timeout, first: q.peek_by_correlation_id(wanted, timeout)
    if lookup_id is not None:
        if remove:
            return lambda timeout, first: q.receive_by_lookup_id(lookup_id, transaction)
        return lambda timeout, first: q.peek_by_lookup_id(lookup_id)
    if remove:
        return lambda timeout, first: q.receive(timeout=timeout, transaction=transaction)
    cursor = q.cursor()

    def peek(timeout: float | None, first: bool) -> Message:
        return cursor.peek_current(timeout) if first else cursor.peek_next(timeout)

    return peek


def _read_messages(
    target: Target,
    queue_name: str,
    *,
    remove: bool,
    transactional: bool,
    count: int | None,
    follow: bool,
    timeout: float | None,
    lookup_id: int | None,
    message_id: ObjectId | None,
    correlation_id: ObjectId | None,
    as_json: bool,
    body_only: bool,
) -> None:
    """``receive`` (``remove``) or ``peek`` with the options of ``_read_options``."""
    chosen = [lookup_id is not None, message_id is not None, correlation_id is not None]
    if sum(chosen) > 1:
        raise BadInput("give one of --lookup-id, --id and --correlation-id")
    if as_json and body_only:
        raise BadInput("give one of --json and --body-only")
    if lookup_id is not None and (follow or timeout):
        # [MC-MQAC] ReceiveByLookupId / PeekByLookupId take no timeout: the message with a lookup id
        # is there or not (a wait was a retry loop at full speed, on the server too).
        raise BadInput("--lookup-id reads that message at once: --timeout and --follow do not apply")
    match: _Match | None = None
    if message_id is not None:
        match = ("id", message_id)
    elif correlation_id is not None:
        match = ("correlation_id", correlation_id)
    # One message: by lookup id or message id, or a peek by correlation id (it would print the
    # same first match again); receives by correlation id take each match in turn.
    single = lookup_id is not None or message_id is not None or (correlation_id is not None and not remove)
    limit = count if count is not None else None if follow else 1
    qm = target.qm
    out = stdout_binary()
    if follow and timeout is None:
        timeout_each: float | None = None  # wait forever, until interrupted
    else:
        timeout_each = timeout or 0.0
    got = 0
    with qm.queue(queue_name) as q, _PrintGuard() as guard:
        tx: Any = None
        if transactional:
            if not remove:
                raise BadInput("--transactional applies to receive only")
            tx = qm.begin_transaction()
        taken: Message | None = None  # received (or peeked) and not printed yet
        try:
            read = _reader(q, remove, lookup_id, tx, match)
            while limit is None or got < limit:
                try:
                    taken = _read_between_interrupts(read, timeout_each, got == 0, guard)
                except MSMQError as exc:
                    if exc.hresult in _NO_MESSAGE and got:
                        break
                    raise
                if taken is None:  # Ctrl-C while waiting
                    break
                guard.printing = True  # a first Ctrl-C now waits for the message to be printed
                try:
                    _print_message(taken, as_json, body_only, out)
                except OSError as exc:
                    # A broken pipe, or an output that cannot take more (a full disk, an I/O error)
                    what = (
                        "the output was closed (broken pipe)"
                        if isinstance(exc, BrokenPipeError)
                        else f"cannot write the output: {describe_os_error(exc)}"
                    )
                    if remove and tx is None:  # received, not printed: say which, it is gone
                        raise OutputClosed(f"{what}: {_taken(taken)} was received but not printed") from exc
                    if tx is not None:
                        tx.abort()
                        tx = None
                        raise OutputClosed(
                            f"{what}: the transaction was aborted, the {got + 1} message(s) it received"
                            " are back in the queue"
                        ) from exc
                    raise OutputClosed(what) from exc
                taken = None
                got += 1
                guard.printing = False
                if single or guard.interrupted:
                    break
        except KeyboardInterrupt:
            if taken is not None and remove:
                # Interrupted again while printing (or as the receive returned): in a transaction,
                # nothing is committed; outside one, the message is gone and is named.
                if tx is not None:
                    tx.abort()
                    raise OutputClosed(
                        f"interrupted while printing {_taken(taken)}: the transaction was aborted, the"
                        f" {got + 1} message(s) it received are back in the queue"
                    ) from None
                raise OutputClosed(f"interrupted: {_taken(taken)} was received but not printed") from None
        except MSMQError as exc:
            if tx is None:
                raise
            with contextlib.suppress(MSMQError):  # (a lost connection ended it already)
                tx.abort()
            if not got:
                raise
            # Say what became of what was printed (outside QA: the server went away after three
            # messages, and nothing told they were not consumed).
            raise MSMQFailure(
                f"{error_line(exc)}; the transaction was not committed: the {got} message(s) printed"
                " are back in the queue"
            ) from exc
        except BaseException:
            if tx is not None:
                tx.abort()
            raise
        if tx is not None:
            try:
                tx.commit()
            except MSMQError as exc:
                if exc.hresult != HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE:
                    raise
                raise MSMQFailure(
                    f"{error_line(exc)}; the connection was lost during the commit: whether the"
                    f" {got} message(s) printed were removed is not known (look in the queue)"
                ) from exc
    if not got:  # interrupted before the first message
        raise NoMessage(f"interrupted ({guard.why}) before any message came")


def _taken(m: Message) -> str:
    return f"message {m.id} (lookup id {m.lookup_id})"


def _read_between_interrupts(
    read: Callable[[float | None, bool], Message], timeout: float | None, first: bool, guard: _PrintGuard
) -> Message | None:
    """``read(timeout, first)`` in slices of at most ``_SLICE`` seconds, looking at ``guard``
    between them: None once Ctrl-C came.  A read is never interrupted part way (a message taken and
    not returned would be lost), so Ctrl-C is seen between slices; the last slice's "no message"
    error is raised when ``timeout`` passes."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not guard.interrupted:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        step = _SLICE if left is None else min(_SLICE, left)
        try:
            return read(step, first)
        except MSMQError as exc:
            if exc.hresult not in _NO_MESSAGE or (left is not None and left <= step):
                raise
    return None


class _PrintGuard(StopBetween):
    """Ctrl-C in a reading command: the command stops between messages, never inside a read (a
    message received and not returned yet would be lost) nor while it commits.  Waiting reads come
    in slices (``_read_between_interrupts``), so "between" comes soon.  While a message is being
    printed a second Ctrl-C interrupts the print (the message is then named, or the transaction
    aborted); elsewhere a second one waits for the read in hand too."""

    def __init__(self) -> None:
        super().__init__()
        self.printing = False

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.printing and self.interrupted:
            raise KeyboardInterrupt  # the second one while printing: interrupt the print
        if not self.interrupted:
            super()._on_signal(signum, frame)


def _not_nan(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and value != value:
        raise click.BadParameter("nan is not a number of seconds", ctx, param)
    return value


def _read_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.argument("queue_name", metavar="QUEUE"),
        click.option(
            "-n",
            "--count",
            type=click.IntRange(min=1),
            default=None,
            help="Read at most N messages (default 1; with --follow: no limit).",
        ),
        click.option(
            "--follow", is_flag=True, help="Keep reading (until Ctrl-C, or --timeout idle seconds)."
        ),
        click.option(
            "--timeout",
            type=_TIMEOUT,
            callback=_not_nan,
            default=None,
            help="Seconds to wait for each message (default 0; with --follow: forever).",
        ),
        click.option(
            "--lookup-id", type=click.IntRange(1, (1 << 64) - 1), default=None, help="This message."
        ),
        click.option(
            "--id",
            "message_id",
            type=OBJECT_ID,
            default=None,
            help="The message with this message id ({guid}\\number); --timeout waits for it.",
        ),
        click.option(
            "--correlation-id",
            type=OBJECT_ID,
            default=None,
            help="Messages with this correlation id (a reply's: its request's id), first in queue order.",
        ),
        click.option("--json", "as_json", is_flag=True, help="One JSON object per message (JSON Lines)."),
        click.option("--body-only", is_flag=True, help="Write only the raw body bytes to stdout."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command(epilog=EXIT_CODES_HELP)
@_read_options
@click.option("--transactional", is_flag=True, help="Receive in one transaction, committed after printing.")
@target_options
@msmq_command
def receive(target: Target, queue_name: str, transactional: bool, **options: Any) -> None:
    """Receive (remove) messages from QUEUE and print them. Exit code 3 when none comes in time.

    \b
    Example:
      pymsmq receive --data ./qm '.\\private$\\orders' --timeout 5
      pymsmq receive --data ./qm '.\\private$\\orders' -n 10 --json
      pymsmq receive --url msmq://127.0.0.1:2103 '.\\private$\\orders' --follow --body-only
      pymsmq receive --data ./qm '.\\private$\\replies' --timeout 30 \\
          --correlation-id '{6f1a0c2e-58d4-4b8e-9d0a-3c7b1e2f4a5d}\\1'
    """
    _read_messages(target, queue_name, remove=True, transactional=transactional, **options)


@click.command(epilog=EXIT_CODES_HELP)
@_read_options
@target_options
@msmq_command
def peek(target: Target, queue_name: str, **options: Any) -> None:
    """Print messages of QUEUE without removing them (the first, the first N, or follow new ones).

    \b
    Example:
      pymsmq peek --data ./qm '.\\private$\\orders' -n 5
      pymsmq peek --data ./qm '.\\private$\\orders;poison' --json
    """
    _read_messages(target, queue_name, remove=False, transactional=False, **options)


# ---------------------------------------------------------------------- move
def _base_path(path_name: str) -> str:
    return path_name.partition(";")[0].lower()


def _first_ids(q: Queue, limit: int | None) -> Iterator[int]:
    n = 0
    while limit is None or n < limit:
        try:
            m = q.peek(timeout=0)
        except MSMQError as exc:
            if exc.hresult in _NO_MESSAGE:
                return
            raise
        yield m.lookup_id
        n += 1


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("queue_name", metavar="QUEUE")
@click.argument("destination", metavar="TARGET")
@click.option(
    "--lookup-id", "lookup_ids", type=click.IntRange(1, (1 << 64) - 1), multiple=True, help="Move it."
)
@click.option("-n", "--count", type=click.IntRange(min=1), default=None, help="Move the first N messages.")
@click.option("--all", "move_all", is_flag=True, help="Move every message.")
@click.option("--json", "as_json", is_flag=True, help="Print the moved lookup ids as JSON.")
@target_options
@msmq_command
def move(
    target: Target,
    queue_name: str,
    destination: str,
    lookup_ids: tuple[int, ...],
    count: int | None,
    move_all: bool,
    as_json: bool,
) -> None:
    """Move messages from QUEUE to TARGET: a subqueue of the same queue (';name' or the queue's path
    with ';name'), the queue itself (';'), or another queue.

    Within a queue and its subqueues the message keeps its lookup id ([MS-MQDMPR] 3.1.7.1.16).
    To another queue the message is re-sent (a new id) and then removed from QUEUE; both queues
    transactional: in one transaction. Without --lookup-id, -n or --all the first message moves.

    \b
    Example:
      pymsmq move --data ./qm '.\\private$\\orders' ';poison' --lookup-id 42
      pymsmq move --data ./qm '.\\private$\\orders;poison' '.\\private$\\orders' --all
      pymsmq move --data ./qm '.\\private$\\orders' '.\\private$\\archive' -n 100
    """
    if sum(bool(x) for x in (lookup_ids, count is not None, move_all)) > 1:
        raise BadInput("give one of --lookup-id, -n or --all")
    qm = target.qm
    moved: list[int] = []
    with StopBetween() as guard:  # Ctrl-C and SIGTERM stop it between two messages
        try:
            with qm.queue(queue_name) as src:
                ids: Iterable[int] = lookup_ids or _first_ids(src, None if move_all else (count or 1))
                if destination.startswith(";") or _is_subqueue_of(qm, src, destination):
                    sub = destination[1:] if destination.startswith(";") else destination.partition(";")[2]
                    if (sub or None) == src.subqueue_name:
                        raise BadInput("the source and the target are the same queue")
                    for lid in ids:
                        if guard.interrupted:
                            break
                        src.move(lid, sub or None)
                        moved.append(lid)
                else:
                    with qm.queue(destination) as dst:
                        if dst.format_name == src.format_name:
                            raise BadInput("the source and the target are the same queue")
                        for lid in ids:
                            if guard.interrupted:
                                break
                            _move_across(qm, src, dst, lid)
                            moved.append(lid)
        except MSMQError as exc:
            if not moved:
                raise
            # Say what was done before the error (the moves are not undone).
            raise MSMQError(f"{_moved(moved)}, then: {exc.message}", exc.hresult) from exc
        except KeyboardInterrupt:  # a second signal, inside a move: that one is in doubt
            raise guard.stopped(
                f"{_moved(moved)}; the next one was under way (look for it in both queues)"
            ) from None
    if guard.interrupted:
        raise guard.stopped(f"{_moved(moved)} before it stopped; those moves stay")
    if not moved:
        raise NoMessage(f"no message to move in {queue_name}")
    if as_json:
        emit_json({"moved": moved})
    else:
        click.echo(f"moved {len(moved)} message{'s' if len(moved) != 1 else ''}")


def _moved(moved: list[int]) -> str:
    """What a move that stopped part way did: "moved K messages (lookup ids a, b, ...)"."""
    if not moved:
        return "moved no message"
    shown = ", ".join(map(str, moved[:10])) + (", ..." if len(moved) > 10 else "")
    return f"moved {len(moved)} message{'s' if len(moved) != 1 else ''} (lookup ids {shown})"


def _is_subqueue_of(qm: Any, src: Queue, destination: str) -> bool:
    try:
        with qm.queue(destination) as dst:
            return (
                _base_path(dst.path_name) == _base_path(src.path_name) and dst.format_name != src.format_name
            )
    except MSMQError:
        return False


def _move_across(qm: Any, src: Queue, dst: Queue, lookup_id: int) -> None:
    if src.transactional and dst.transactional:
        with qm.begin_transaction() as tx:
            m = src.receive_by_lookup_id(lookup_id, tx)
            dst.send(sendable_copy(m), tx)
        return
    # Copy first, then remove: a failure in between leaves a duplicate, never a loss.
    m = src.peek_by_lookup_id(lookup_id)
    dst.send(sendable_copy(m), MQ_SINGLE_MESSAGE if dst.transactional else None)
    src.receive_by_lookup_id(lookup_id, MQ_SINGLE_MESSAGE if src.transactional else None)
