"""What every queue command shares: the target (``--data`` / ``--url``), exit codes, error reporting,
tables, JSON output and progress bars.

Exit codes (docs/cli.md): 0 ok, 1 an MSMQ error (the queue manager refused: the HRESULT name and hex
are printed), 2 bad usage or input (click usage errors, unreadable files, malformed format names,
bad property values), 3 timeout or no message.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import importlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, Final, ParamSpec, Self, TextIO, TypeVar

import click
from click.core import ParameterSource

from pymsmq.errors import FormatNameError, MSMQError, printable
from pymsmq.hresult import HResult

if TYPE_CHECKING:
    from pymsmq.qm.queue_manager import QueueManager

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_DAMAGED",
    "EXIT_INTERRUPTED",
    "EXIT_MSMQ",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "BadInput",
    "Interrupted",
    "MSMQFailure",
    "NoMessage",
    "OutputClosed",
    "StopBetween",
    "Target",
    "Terminated",
    "bad_data_directory",
    "connect_url",
    "describe_hresult",
    "emit_json",
    "error_line",
    "msmq_command",
    "print_table",
    "printable",
    "progress",
    "stdin_bytes",
    "target_options",
]

EXIT_OK: Final = 0
EXIT_MSMQ: Final = 1
EXIT_USAGE: Final = 2
EXIT_TIMEOUT: Final = 3
#: ``backup``/``restore`` done, but messages whose packet was damaged on disk were found (named);
#: ``salvage`` done, but what it could not read or copy was left behind (named).
EXIT_DAMAGED: Final = 4
#: 128 + SIGINT and 128 + SIGTERM, as shells report a command those signals ended.
EXIT_INTERRUPTED: Final = 130
EXIT_TERMINATED: Final = 143

EXIT_CODES_HELP: Final = (
    "Exit codes: 0 ok, 1 MSMQ error (HRESULT printed), 2 bad usage or input, 3 timeout or no message,"
    " 4 (backup, restore, salvage) done, with damaged or lost messages named, 130 (143) stopped part"
    " way by Ctrl-C (SIGTERM)."
)

# HRESULTs that say "nothing arrived in time" rather than "something is wrong".
_TIMEOUTS: Final = frozenset({HResult.MQ_ERROR_IO_TIMEOUT, HResult.MQ_ERROR_MESSAGE_NOT_FOUND})
# HRESULTs that always come from the caller's input, before any queue is touched.
_INPUT_ERRORS: Final = frozenset(
    {
        HResult.MQ_ERROR_ILLEGAL_FORMATNAME,
        HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME,
        HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE,
        HResult.MQ_ERROR_ILLEGAL_PROPERTY_SIZE,
        HResult.MQ_ERROR_LABEL_TOO_LONG,
    }
)


def describe_hresult(hresult: int) -> str:
    """``MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003`` (the name when the code is known)."""
    code = hresult & 0xFFFFFFFF
    try:
        name = HResult(code).name
    except ValueError:
        return f"0x{code:08X}"
    return f"{name} 0x{code:08X}"


class BadInput(click.ClickException):
    """Bad usage or input (unreadable file, malformed name, bad value): one line, exit code 2."""

    exit_code = EXIT_USAGE


def bad_data_directory(path: str, exc: OSError) -> BadInput:
    """The error for a data directory (``--data``) that cannot be made or opened: exit code 2."""
    if os.path.exists(path) and not os.path.isdir(path):  # (makedirs says "File exists")
        return BadInput(f"cannot open the data directory {path}: it is not a directory")
    return BadInput(f"cannot open the data directory {path}: {exc.strerror or exc}")


class MSMQFailure(click.ClickException):
    """The queue manager reported an error: one line with the HRESULT name and hex, exit code 1."""

    exit_code = EXIT_MSMQ


class NoMessage(click.ClickException):
    """No message arrived in time (or the queue is empty): exit code 3."""

    exit_code = EXIT_TIMEOUT


class Interrupted(click.ClickException):
    """Ctrl-C stopped the command part way (between messages; the message says what was done):
    exit code 130 (128 + SIGINT)."""

    exit_code = EXIT_INTERRUPTED


class Terminated(Interrupted):
    """SIGTERM stopped the command part way, as ``Interrupted``: exit code 143 (128 + SIGTERM)."""

    exit_code = EXIT_TERMINATED


#: The signals that stop a command between two messages (``StopBetween``), and their names.
_STOP_SIGNALS: Final = {int(signal.SIGINT): "Ctrl-C", int(signal.SIGTERM): "SIGTERM"}


class StopBetween:
    """Ctrl-C or SIGTERM in a command that works message by message (export, import, receive): the
    first one lets the message in hand finish and sets ``interrupted`` (``why`` names it), which the
    command looks at between messages; a second one interrupts at once (KeyboardInterrupt).  A
    signal that raised anywhere in a step (between writing a message's line and removing the
    message, or inside a store's commit) left its outcome unknown: a duplicate, a count one off, a
    committed batch reported as failed; SIGTERM killed the process, leaving a partial file unnamed.
    Only in the main thread, where Python delivers signals; a no-op elsewhere."""

    def __init__(self) -> None:
        self.interrupted = False
        #: The first signal that came, and its name ("Ctrl-C", "SIGTERM").
        self.signum = int(signal.SIGINT)
        self.why = "Ctrl-C"
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            for signum in _STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            # Interrupted, the command is on its way out (closing the queue manager, exiting): a
            # further signal is ignored rather than turned into a traceback or "Aborted!" after the
            # outcome was decided (a committed transaction reported as a failure).
            signal.signal(signum, signal.SIG_IGN if self.interrupted else previous)
        self._previous = {}

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.interrupted:
            raise KeyboardInterrupt  # the second one: now
        self.interrupted = True
        self.signum = signum
        self.why = _STOP_SIGNALS.get(signum, f"signal {signum}")

    def stopped(self, message: str) -> Interrupted:
        """The error that ends the command once it stopped for the signal: "interrupted (WHY): ..."."""
        kind = Terminated if self.signum == signal.SIGTERM else Interrupted
        return kind(f"interrupted ({self.why}): {message}")


class OutputClosed(click.ClickException):
    """Standard output was closed under the command (a broken pipe, as in ``| head``): exit code 1."""

    exit_code = EXIT_MSMQ


def stdin_bytes() -> bytes:
    """All of standard input; ``BadInput`` when there is none (fd 0 closed, as under some launchers)."""
    stream = sys.stdin
    if stream is None:
        raise BadInput("cannot read standard input: it is closed")
    try:
        return stream.buffer.read()
    except (OSError, ValueError) as exc:  # ValueError: a closed file
        raise BadInput(f"cannot read standard input: {exc}") from exc


def stdout_stream() -> TextIO:
    """Standard output, or ``OutputClosed`` when the command was started without one (``>&-``)."""
    stream = sys.stdout
    if stream is None:
        raise OutputClosed("the output is closed (the command was started without a standard output)")
    return stream


def stdout_binary() -> BinaryIO:
    """Standard output's bytes (``stdout_stream``'s buffer)."""
    return stdout_stream().buffer


#: An output that cannot take more: a full disk or quota, a file too large.
_FULL: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def describe_os_error(exc: OSError) -> str:
    """A system error in words, with its errno name: "No space left on device (ENOSPC)"."""
    name = errno.errorcode.get(exc.errno or 0)
    return f"{exc.strerror or exc}" + (f" ({name})" if name else "")


def _stdout_unwritable() -> bool:
    # True when standard output cannot take what it holds (a full disk, an I/O error): it is then
    # pointed at /dev/null, so that the interpreter's last flush at exit adds no second error.
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        _silence_stdout()
        return True
    return False


def _silence_stdout() -> None:
    # The interpreter flushes stdout again at exit; into a closed pipe that prints a second error.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def error_line(exc: MSMQError) -> str:
    """``<text> (<HRESULT name> 0x<hex>)``: how an MSMQ error is shown."""
    text = str(exc.args[0]) if exc.args else type(exc).__name__
    described = describe_hresult(exc.hresult)
    # A message that already ends with the HRESULT (as remote errors do) does not repeat it.
    text = text.removesuffix(f" [{described}]").removesuffix(f" ({described})")
    return f"{text} ({described})"


def translate(exc: MSMQError) -> click.ClickException:
    """The click exception (and so the exit code) for an ``MSMQError``."""
    if exc.hresult in _TIMEOUTS:
        return NoMessage(f"no message: {error_line(exc)}")
    if isinstance(exc, FormatNameError) or exc.hresult in _INPUT_ERRORS:
        return BadInput(error_line(exc))
    return MSMQFailure(error_line(exc))


_P = ParamSpec("_P")
_R = TypeVar("_R")


def msmq_command(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn ``MSMQError`` and ``OSError`` escaping a command into one-line messages and exit codes."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return func(*args, **kwargs)
        except MSMQError as exc:
            raise translate(exc) from exc
        except BrokenPipeError as exc:  # before ConnectionError: our output, not the queue manager
            _silence_stdout()
            raise OutputClosed("the output was closed (broken pipe)") from exc
        except (ConnectionError, TimeoutError) as exc:
            unavailable = describe_hresult(HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
            raise MSMQFailure(f"cannot reach the queue manager: {exc} ({unavailable})") from exc
        except OSError as exc:
            # An output that cannot be written (a full disk, an I/O error: a broken pipe is above),
            # or another system error a command did not expect: one line, not a traceback.
            if _stdout_unwritable() or exc.errno in _FULL:
                raise OutputClosed(f"cannot write the output: {describe_os_error(exc)}") from exc
            where = "" if exc.filename is None else f"{exc.filename}: "
            raise MSMQFailure(f"{where}{describe_os_error(exc)}") from exc
        except KeyboardInterrupt:
            # Ctrl-C where a command does not stop between messages itself: 130, as the table says
            # (click's own "Aborted!" is exit 1, the code of an MSMQ error).
            raise Interrupted("interrupted (Ctrl-C)") from None

    return wrapper


# ---------------------------------------------------------------------- the target queue manager
class Target:
    """The queue manager a command talks to: embedded (``--data DIR``) or a server (``--url``).

    ``qm`` opens it on first use; it is closed when the click context ends.
    """

    def __init__(self, data: str | None, url: str | None, token: str | None) -> None:
        self.data = data
        self.url = url
        self.token = token
        self._qm: QueueManager | None = None

    @property
    def remote(self) -> bool:
        """True for a server (``--url``)."""
        return self.url is not None

    @property
    def qm(self) -> QueueManager:
        """The open queue manager (embedded) or client (remote): the same methods either way."""
        if self._qm is None:
            self._qm = self._open()
            click.get_current_context().call_on_close(self.close)
        return self._qm

    def _open(self) -> QueueManager:
        if self.url is not None:
            return connect_url(self.url, self.token)
        from pymsmq.qm.queue_manager import QueueManager

        assert self.data is not None
        try:
            return QueueManager.open(self.data)
        except OSError as exc:
            raise bad_data_directory(self.data, exc) from exc

    def close(self) -> None:
        """Close the queue manager or the connection (idempotent).  The command's work is done by
        then: a Ctrl-C or SIGTERM during the close is ignored (it interrupted the close, and click
        reported the finished command as "Aborted!", exit 1)."""
        qm, self._qm = self._qm, None
        if qm is None:
            return
        if threading.current_thread() is not threading.main_thread():
            qm.close()
            return
        previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in _STOP_SIGNALS}
        try:
            qm.close()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def connect_url(url: str, token: str | None, timeout: float | None = None) -> QueueManager:
    """The client of the server at ``url`` (``--url``): bad URLs are exit 2, an unreachable server
    exit 1; ``timeout``: ``pymsmq.connect``'s (its default when None)."""
    if not url.lower().startswith(("msmq://", "msmqs://")):
        raise BadInput(f"--url must look like msmq://host:port (msmqs:// for TLS), not {url!r}")
    try:
        client = importlib.import_module("pymsmq.client")
    except ImportError:
        client = None
    connect: Any = getattr(client, "connect", None)
    if connect is None:
        raise BadInput("this pymsmq has no remote client (pymsmq.client.connect); use --data DIR")
    try:
        options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        qm = connect(url, token=token, **options) if token else connect(url, **options)
    except ValueError as exc:  # a URL the client cannot parse
        raise BadInput(f"bad --url {url!r}: {exc}") from exc
    except MSMQError as exc:
        if exc.hresult == HResult.MQ_ERROR_INVALID_PARAMETER:  # no host, a port out of range...
            # (the URL's own error text mentions --token too: "the token goes in --token")
            what = "--token" if exc.message.startswith("the token") else f"--url {url}"
            raise BadInput(f"bad {what}: {error_line(exc)}") from exc
        raise
    except OSError as exc:
        raise MSMQFailure(
            f"cannot connect to {url}: {exc.strerror or exc} "
            f"({describe_hresult(HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)})"
        ) from exc
    result: QueueManager = qm
    return result


def _make_target(ctx: click.Context, data: str | None, url: str | None, token: str | None) -> Target:
    if data is not None and url is not None:
        # An option on the command line beats an environment variable of the other kind.
        data_src = ctx.get_parameter_source("data")
        url_src = ctx.get_parameter_source("url")
        if data_src == ParameterSource.COMMANDLINE and url_src != ParameterSource.COMMANDLINE:
            url = None
        elif url_src == ParameterSource.COMMANDLINE and data_src != ParameterSource.COMMANDLINE:
            data = None
        else:
            raise BadInput("give either --data DIR or --url msmq://host:port, not both")
    if data is None and url is None:
        raise BadInput(
            "no queue manager: give --data DIR (embedded) or --url msmq://host:port (a server), "
            "or set PYMSMQ_DATA / PYMSMQ_URL"
        )
    return Target(data, url, token)


def target_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--data``, ``--url`` and ``--token`` and pass a ``Target`` as the ``target`` argument."""

    @click.option(
        "--data",
        metavar="DIR",
        envvar="PYMSMQ_DATA",
        help="Use the embedded queue manager stored in DIR (env PYMSMQ_DATA).",
    )
    @click.option(
        "--url",
        metavar="msmq://HOST:PORT",
        envvar="PYMSMQ_URL",
        help="Talk to a pymsmq server (env PYMSMQ_URL).",
    )
    @click.option("--token", envvar="PYMSMQ_TOKEN", help="Token for the server (env PYMSMQ_TOKEN).")
    @functools.wraps(func)
    def wrapper(*args: Any, data: str | None, url: str | None, token: str | None, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        return func(*args, target=_make_target(ctx, data, url, token), **kwargs)

    return wrapper


# ---------------------------------------------------------------------- output
def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout."""
    click.echo(json.dumps(value, indent=2, sort_keys=False))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print an aligned text table (numbers right-aligned) on stdout."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    numeric = [bool(rows) and all(isinstance(row[i], int) for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    click.echo(line(list(headers)))
    click.echo(line(["-" * w for w in widths]))
    for row in cells:
        click.echo(line(row))


class _Progress:
    """A progress bar on stderr (only when stderr is a terminal); ``update(n)`` advances it."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)


@contextlib.contextmanager
def progress(label: str, length: int | None) -> Iterator[_Progress]:
    """A click progress bar on stderr when stderr is a TTY; nothing at all otherwise."""
    if not sys.stderr.isatty():
        yield _Progress(None)
        return
    bar: Any
    with click.progressbar(length=length, label=label, file=sys.stderr, show_pos=True) as bar:
        yield _Progress(bar)
