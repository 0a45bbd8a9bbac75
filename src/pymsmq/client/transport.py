"""A blocking, thread-safe, pipelining connection to a pymsmq server (the client protocol).

Any number of threads may call ``submit(request)`` (which writes the frame at once and returns a
``Pending``) and ``Pending.result()``.  There is no background thread: whichever waiting thread
finds nobody reading the socket becomes the reader, dispatches every answer it reads to its
``Pending``, and hands over when its own answer has arrived.  One thread with one request in flight
therefore pays no thread switch; many threads share one socket; ``submit`` many requests and then
collect their results to pipeline.

``roundtrip(op, payload, parse)`` is the lane of one request in flight (``RemoteQueue.send`` and
``receive``): the caller's payload bytes go straight into a frame, and an answer that arrives alone
goes to ``parse`` as payload bytes, without events or response objects
(``ClientConnection.request_frame``/``response_payload``); anything else takes the general path.

A call interrupted while it waits (Ctrl-C, or any exception raised in the waiting thread) leaves
its answer on the way.  ``wait``/``roundtrip`` given ``on_abandon`` then *abandon* it: whichever
thread reads that answer later hands it to ``on_abandon`` once it stops reading (the client gives
back the messages a two-phase receive holds, ``many.GiveBack``), and ``abandon`` drops the answers
of requests nobody will wait for, so they neither pile up nor keep messages held until the
connection closes.

Liveness: a server that stops answering (a frozen process, a network path that drops everything)
would leave a waiting call blocked forever, whatever timeout it asked the server for.  One watchdog
thread per process looks at every connection whose reader waits: after ``timeout`` seconds (the
``connect`` timeout, 10 by default) without a byte from the server it sends a PING, which a live
server answers even while receives wait; with nothing for twice that, the connection is taken for
lost and every call on it fails with MQ_ERROR_SERVICE_NOT_AVAILABLE.  A connection whose request
window is full cannot send its PING and is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import select
import signal
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterable
from typing import Any, Final, Generic, NoReturn, TypeVar
from urllib.parse import urlsplit

from pymsmq.errors import FormatNameError, MSMQError, quoted, reason
from pymsmq.hresult import HResult
from pymsmq.model.message import Message
from pymsmq.model.quota_error import QuotaExceededError
from pymsmq.protocol import (
    ClientConnection,
    ClientHello,
    ConnectionClosed,
    ErrorResponse,
    Goodbye,
    ProtocolError,
    ResponseReceived,
    ServerHello,
)
from pymsmq.protocol import messages as pm

__all__ = [
    "DEFAULT_PORT",
    "NOT_SENT",
    "OnAbandon",
    "Pending",
    "Transport",
    "error_from",
    "not_for_sigint",
    "parse_url",
    "send_refused",
]

DEFAULT_PORT: Final = 2103
_RECV: Final = 1 << 18
#: Requests per write in send_many.
_CHUNK: Final = 64
_MISSING: Final = object()
#: What ``abandon`` does with an answer nobody waits for: ``on_answer(response)``, or None to drop it.
OnAbandon = Callable[[object], None] | None
#: What ``Transport.roundtrip`` returns when the request did not take the fast lane (nothing sent).
NOT_SENT: Final = object()
#: Held while the main thread reads and dispatches bytes, or writes a large frame: SIGINT, whose
#: handler raises KeyboardInterrupt (Ctrl-C), the interrupt a program survives and goes on with the
#: same connection.  (Masking every signal cost 150 us per read on the benchmark host.)
_HOLD_SIGNALS: Final = hasattr(signal, "pthread_sigmask")
_HELD_SIGNALS: Final = {int(signal.SIGINT)}
_SIGINT: Final = int(signal.SIGINT)
#: ``signal.pthread_sigmask`` without its wrapper, which turns every signal of the old mask into a
#: ``Signals`` member: twice a read, half the cost of holding SIGINT (about 2 us a round trip).
#: (Never called where there is none: Windows.)
_sigmask: Final[Callable[[int, Iterable[int]], set[int]]] = getattr(
    importlib.import_module("_signal"), "pthread_sigmask", lambda how, mask: set()
)
#: Frames up to this size are written by one send() into a socket buffer with room: not split.
_SMALL_WRITE: Final = 1 << 16
_NAME_ERRORS: Final = frozenset(
    {HResult.MQ_ERROR_ILLEGAL_FORMATNAME, HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME}
)
T = TypeVar("T")


def error_from(response: ErrorResponse) -> MSMQError:
    """The exception an ERROR frame stands for (same HRESULT as the embedded queue manager raises)."""
    if response.hresult in _NAME_ERRORS:
        return FormatNameError(response.message, response.hresult)
    if response.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES:
        quota = QuotaExceededError.from_text(response.message)
        if quota is not None:
            return quota
    return MSMQError(response.message, response.hresult)


def send_refused(message: Message, response: ErrorResponse) -> MSMQError:
    """``error_from`` for the answer to a send of ``message``: a queue-quota refusal names the id
    the message got (its NACK and dead letter carry it), which is set on ``message`` as the
    embedded queue manager sets it."""
    error = error_from(response)
    if isinstance(error, QuotaExceededError) and error.message_id is not None:
        message.id = error.message_id
    return error


def parse_url(url: str) -> tuple[str, int, bool]:
    """``msmq://host[:port]`` (or ``msmqs://`` for TLS) -> (host, port, tls)."""
    parts = urlsplit(url)
    if parts.scheme not in ("msmq", "msmqs") or not parts.hostname:
        raise MSMQError(f"not a pymsmq server URL: {quoted(url)}", HResult.MQ_ERROR_INVALID_PARAMETER)
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username is not None:
        # A path, a query or credentials would be dropped silently (a typo, or a token put there).
        raise MSMQError(
            f"not a pymsmq server URL: {quoted(url)} (only msmq://host[:port]; the token goes in"
            " --token or token=)",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise MSMQError(f"bad port in {quoted(url)}", HResult.MQ_ERROR_INVALID_PARAMETER) from None
    return parts.hostname, port, parts.scheme == "msmqs"


class Pending(Generic[T]):
    """The answer to one submitted request; ``result()`` waits for it."""

    __slots__ = ("_asked", "_convert", "_done", "_on_abandon", "_rid", "_transport")

    def __init__(
        self, transport: Transport, rid: int, convert: Callable[[Any], T], on_abandon: OnAbandon = None
    ) -> None:
        self._transport = transport
        self._rid = rid
        self._convert = convert
        self._on_abandon = on_abandon
        self._asked = False
        #: (value,) or the error once the answer was taken: asked again, it is given again (outside
        #: QA: a second ``result()`` waited for an answer the first had taken, for good).
        self._done: tuple[T] | MSMQError | None = None

    def __del__(self) -> None:
        # Let go of without its answer asked for (a ``receive_async()`` never awaited): the
        # answer is abandoned, so a message it holds goes back when it comes (outside QA: it stayed
        # hidden from every reader until the handle closed).  No I/O here (``abandon``).
        if not getattr(self, "_asked", True):
            self._transport.abandon([self._rid], self._on_abandon)

    def result(self) -> T:
        """The converted response, or the ``MSMQError`` of an ERROR frame / a lost connection
        (the same again when asked again)."""
        if self._done is not None:
            return self._again()
        self._asked = True
        return self._converted(self._transport.wait(self._rid))

    def take(self) -> T:
        """``result()`` for a caller that will not ask again (the synchronous calls built on
        ``submit``): interrupted while waiting, the answer is abandoned (``Transport.wait``)."""
        self._asked = True
        return self._converted(self._transport.wait(self._rid, None, self._on_abandon, abandon=True))

    def _again(self) -> T:
        done = self._done
        if isinstance(done, MSMQError):
            raise done
        assert done is not None
        return done[0]

    def _converted(self, response: object) -> T:
        try:
            if type(response) is ErrorResponse:
                raise error_from(response)
            value = self._convert(response)
        except MSMQError as exc:
            self._done = exc
            raise
        self._done = (value,)
        return value

    def __await__(self) -> Generator[Any, None, T]:
        """``await pending``: ``result()`` without blocking the event loop, so that ``await
        q.receive_async()`` works remote as embedded."""
        self._asked = True
        return self._wait_async().__await__()

    async def _wait_async(self) -> T:
        if self._done is not None:
            return self._again()
        # A pool thread waits for the answer.  Cancelled, the caller will not take it: a wait on
        # the server is cancelled and what the answer holds goes back when it comes, as for an
        # interrupted ``take``.
        loop = asyncio.get_running_loop()
        call = _ThreadCall(loop, self._transport.wait, self._rid)
        waiting = call.future
        try:
            response = await asyncio.shield(waiting)
        except asyncio.CancelledError:
            if not waiting.done():
                on_abandon = self._on_abandon
                _stop_on_server(on_abandon, self._rid)
                if on_abandon is not None:
                    call.abandon(on_abandon)
                raise
            response = waiting.result()  # the answer is here: it is taken, not dropped
        # The conversion acknowledges a held message (END_RECEIVE): once it runs, the message is
        # the caller's, so a cancel that comes meanwhile does not drop it (it would be lost).
        converting = loop.run_in_executor(None, self._converted, response)
        try:
            return await asyncio.shield(converting)
        except asyncio.CancelledError:
            return await converting


class _ThreadCall:
    """``fn(*args)`` in a daemon thread of its own, as ``future`` of ``loop``.

    Not the loop's default executor: a remote ``receive_async`` waits there for as long as its
    timeout, and the executor's few threads (6 on 2 CPUs) let a seventh waiting task hold up every
    other one; nor a pool joined at exit, which a receive waiting forever would hang.  ``abandon``
    (the awaiting task was cancelled) hands the result to ``on_abandon`` whenever it comes, in
    the thread itself if the loop has closed by then.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
        self.future: asyncio.Future[Any] = loop.create_future()
        self._loop = loop
        self._lock = threading.Lock()
        self._scheduled = False  # the result is on its way to the loop
        self._on_abandon: Callable[[object], None] | None = None
        threading.Thread(target=self._run, args=(fn, args), name="pymsmq-async-wait", daemon=True).start()

    def _settle(self, ok: bool, value: Any) -> None:
        if not self.future.done():
            if ok:
                self.future.set_result(value)
            else:
                self.future.set_exception(value)

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        not_for_sigint()
        try:
            ok, value = True, fn(*args)
        except BaseException as exc:  # handed to the awaiting task
            ok, value = False, exc
        with self._lock:
            on_abandon = self._on_abandon
            if on_abandon is None:
                try:
                    self._loop.call_soon_threadsafe(self._settle, ok, value)
                    self._scheduled = True
                    return
                except RuntimeError:  # the loop closed: nobody awaits it
                    return
        if ok:
            with contextlib.suppress(Exception):
                on_abandon(value)

    def abandon(self, on_abandon: Callable[[object], None]) -> None:
        """The awaiting task gave up: ``on_abandon(result)`` once the result is there."""
        with self._lock:
            if self._scheduled:
                self.future.add_done_callback(functools.partial(_hand_over, on_abandon))
            else:
                self._on_abandon = on_abandon


def _stop_on_server(on_answer: OnAbandon, rid: int) -> None:
    # The call waiting for ``rid`` was interrupted: let ``on_answer`` stop the request on the server
    # when it can (``many.GiveBack.interrupted``: CANCEL_RECEIVE); the connection may be gone.
    interrupted = getattr(on_answer, "interrupted", None)
    if interrupted is not None:
        with contextlib.suppress(Exception):
            interrupted(rid)


def _hand_over(on_abandon: Callable[[object], None], done: asyncio.Future[Any]) -> None:
    # The answer of an awaited request whose caller was cancelled (``Pending._wait_async``).
    if not done.cancelled() and done.exception() is None:
        with contextlib.suppress(Exception):
            on_abandon(done.result())


def _tls_hint(exc: BaseException) -> str:
    """What to do about a failed TLS handshake, when the error tells."""
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return (
            " (the server's certificate is not trusted here: pass tls=ssl.SSLContext trusting its CA,"
            " or set SSL_CERT_FILE to the CA's PEM file)"
        )
    if "WRONG_VERSION_NUMBER" in text or "record layer failure" in text:
        return " (a plain server? use msmq://)"
    return ""


class Transport:
    """One connection: handshake at construction, then ``submit``/``wait`` from any thread."""

    def __init__(
        self,
        host: str,
        port: int,
        token: bytes = b"",
        tls: bool | ssl.SSLContext | None = None,
        timeout: float | None = 10.0,
        client_name: str = "pymsmq.client",
    ) -> None:
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise MSMQError(
                f"cannot connect to {host}:{port}: {exc}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
            ) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:  # reset already (EINVAL on some systems)
            sock.close()
            raise MSMQError(
                f"cannot connect to {host}:{port}: {exc}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
            ) from None
        if tls:
            ctx = tls if isinstance(tls, ssl.SSLContext) else ssl.create_default_context()
            try:
                sock = ctx.wrap_socket(sock, server_hostname=host)
            except (OSError, ssl.SSLError) as exc:
                sock.close()
                raise MSMQError(
                    f"TLS handshake failed: {exc}{_tls_hint(exc)}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
                ) from None
        self._sock = sock
        #: Receive buffer (only the reading thread uses it).
        self._rview = memoryview(bytearray(_RECV))
        self._conn = ClientConnection()
        self._send_lock = threading.Lock()
        #: The lock of ``_cond``: ``with self._lock`` is ``with self._cond`` without its Python-level
        #: ``__enter__``/``__exit__`` (for the hot path; wait/notify still go through ``_cond``).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._done: dict[int, object] = {}
        #: Requests whose answers nobody waits for (``abandon``): what to do with each when it comes.
        self._abandoned: dict[int, OnAbandon] = {}
        #: Abandoned answers read, for the reader to hand over once it stops reading.
        self._orphans: list[tuple[Callable[[object], None], object]] = []
        #: What ``abandon`` noted, for the reader to take in (appended without a lock).
        self._to_abandon: list[tuple[int, OnAbandon]] = []
        #: What objects dropped without ``close`` (or commit/abort) leave to do on the server,
        #: appended by ``RemoteQueue.__del__``, ``RemoteCursor.__del__`` and
        #: ``RemoteTransaction.__del__``, in any thread, without a lock: CLOSE_QUEUE, CLOSE_CURSOR
        #: and ABORT_TRANSACTION requests, which go out with the next request written (their
        #: answers abandoned).
        self.dropped_requests: list[pm.Request] = []
        self._reading = False
        #: The token of the thread that became the reader (``_drop_reader``), None between readers.
        self._reader_token: object | None = None
        #: Threads blocked in ``_cond.wait`` (the reader notifies only when there are some).
        self._waiters = 0
        self._error: MSMQError | None = None
        #: The server ended the connection for its idle timeout (GOODBYE S_OK).
        self.ended_idle = False
        #: A request found the connection gone as it was written, and the server had none of it.
        self.unsent = False
        self.server_hello: ServerHello = self._handshake(token, client_name)
        sock.settimeout(None)
        #: Seconds without a byte from the server before the watchdog sends a PING (0: never).
        self.liveness = timeout if timeout and timeout > 0 else 0.0
        #: ``time.monotonic()`` of the last bytes read from the server, and of the last PING sent.
        self.last_data = time.monotonic()
        self._pinged_at = 0.0
        self._busy_seen: float | None = None
        if self.liveness:
            _watchdog.watch(self)

    # ------------------------------------------------------------------ handshake
    def _handshake(self, token: bytes, name: str) -> ServerHello:
        hello = self._conn.send(ClientHello(token=token, client_name=name))
        written = False
        while True:
            try:
                if not written:
                    # A server that resets the connection as it is made (a restart, a full
                    # backlog) fails this write or the read: the same error either way.
                    self._sock.sendall(hello)
                    written = True
                data = self._rview[: self._sock.recv_into(self._rview)].tobytes()
                events = self._conn.receive_data(data)
            except (OSError, ProtocolError) as exc:
                self._sock.close()
                raise MSMQError(
                    f"handshake failed: {reason(exc)}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
                ) from None
            for event in events:
                if type(event) is ServerHello:
                    return event
                if type(event) is Goodbye:
                    self._sock.close()
                    raise MSMQError(f"the server refused the connection: {event.reason}", event.hresult)
                if type(event) is ConnectionClosed:
                    self._sock.close()
                    hint = "" if isinstance(self._sock, ssl.SSLSocket) else " (a TLS server? use msmqs://)"
                    raise MSMQError(
                        f"the server closed the connection{hint}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
                    )

    # ------------------------------------------------------------------ requests
    @property
    def closed(self) -> bool:
        """True once the connection is gone."""
        return self._error is not None

    @property
    def replaceable(self) -> bool:
        """Gone with nothing of the client's lost: the server ended it idle (it does only when it
        holds nothing), or a request found it gone as it was written (the server had none of it)."""
        return self.ended_idle or self.unsent

    def submit(
        self, request: pm.Request, convert: Callable[[Any], T], on_abandon: OnAbandon = None
    ) -> Pending[T]:
        """Write ``request`` now; its answer comes from the returned ``Pending`` (``on_abandon``: for
        ``Pending.take``)."""
        return Pending(self, self.send(request), convert, on_abandon)

    def call(self, request: pm.Request) -> Any:
        """Send ``request`` and wait for its response (``MSMQError`` for an ERROR frame)."""
        response = self.wait(self.send(request))
        if type(response) is ErrorResponse:
            raise error_from(response)
        return response

    def send(self, request: pm.Request) -> int:
        """Write one request; returns its request id."""
        # Fast path (one request, room in the window): no chunk list, no join, one lock.
        with self._send_lock:
            conn = self._conn
            if self._error is None and len(conn.in_flight) < conn.max_in_flight:
                try:
                    rid, data = conn.send_request(request)
                except ProtocolError as exc:
                    raise MSMQError(str(exc), HResult.MQ_ERROR_INVALID_PARAMETER) from None
                if self._abandoned:
                    self._abandoned.pop(rid, None)  # a request id used again: its old entry is stale
                if self.dropped_requests:
                    data = self._close_dropped() + data
                try:
                    self._write(data)
                except OSError as exc:
                    self._lost_writing(exc)
                return rid
        return self.send_many([request])[0]

    def send_many(self, requests: list[pm.Request], on_rid: Callable[[int], None] | None = None) -> list[int]:
        """Write requests back to back (one ``sendall``); waits for room when ``max_in_flight`` is reached.

        ``on_rid(rid)``: called with each request's id before it is written (its answer cannot
        come before), under the send lock: it must not write or wait."""
        ids: list[int] = []
        i = 0
        while i < len(requests):
            chunk: list[bytes] = []
            with self._send_lock:
                if self._error is not None:
                    raise self._error
                # At most _CHUNK requests per write: the server starts on the first ones while this
                # thread encodes the next (client and server overlap on two cores).
                if self.dropped_requests:
                    chunk.append(self._close_dropped())
                room = min(self._conn.max_in_flight - len(self._conn.in_flight), _CHUNK)
                while room > 0 and i < len(requests):
                    try:
                        rid, data = self._conn.send_request(requests[i])
                    except ProtocolError as exc:
                        raise MSMQError(str(exc), HResult.MQ_ERROR_INVALID_PARAMETER) from None
                    if self._abandoned:
                        self._abandoned.pop(rid, None)
                    if on_rid is not None:
                        on_rid(rid)
                    ids.append(rid)
                    chunk.append(data)
                    room -= 1
                    i += 1
                if chunk:
                    try:
                        self._write(b"".join(chunk))
                    except OSError as exc:
                        self._fail(
                            MSMQError(f"connection lost: {exc}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
                        )
                        raise self._error from None  # type: ignore[misc]
            if i < len(requests) and len(self._conn.in_flight) >= self._conn.max_in_flight:
                self._pump(None)
        return ids

    @contextlib.contextmanager
    def uninterrupted(self) -> Generator[None, None, None]:
        """In the main thread, hold SIGINT (Ctrl-C) for the block: its handler runs when the block
        ends, not part way through it (e.g. between writing a request and noting that it was).

        A mask of the main thread's: pymsmq's own threads block SIGINT (``not_for_sigint``), so
        the kernel delivers a Ctrl-C to the main thread, which lets it through at the end.  An
        application thread that does not block SIGINT can take the signal instead, and Python then
        runs the handler in the main thread inside the block all the same: so the block also puts
        a handler of its own in place, which notes the signal, and calls the application's with
        it once the block is over (outside QA: with threads of its own, a program lost messages
        whose acknowledgement had been written when the interrupt came)."""
        main = threading.current_thread() is threading.main_thread()
        noted: list[tuple[int, Any]] = []
        previous: Any = None
        held = False
        try:
            # Everything inside the ``try``: an interrupt between two of these steps still has the
            # ``finally`` put things back (outside QA: one that escaped left SIGINT blocked).
            if main:
                with contextlib.suppress(ValueError, OSError):
                    handler = signal.getsignal(signal.SIGINT)
                    if callable(handler):
                        previous = handler  # (before the swap: restored whatever happens next)
                        signal.signal(signal.SIGINT, lambda signum, frame: noted.append((signum, frame)))
            held = _hold_signals() if _HOLD_SIGNALS and main else False
            yield
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            _release_signals(held)
            if noted and previous is not None:
                previous(*noted[0])

    def _lost_writing(self, exc: OSError) -> NoReturn:
        # The one request being written found the connection gone (reset, closed): the server
        # never had it whole, so it did nothing of it (``unsent``: RemoteQueueManager._call may
        # send it again on a new connection; outside QA, threads calling together after the
        # server's idle timeout met this before the GOODBYE was read).
        self.unsent = isinstance(exc, (BrokenPipeError, ConnectionResetError))
        self._fail(MSMQError(f"connection lost: {exc}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE))
        raise self._error from None  # type: ignore[misc]

    def _close_dropped(self) -> bytes:
        # Under ``_send_lock``: the frames of ``dropped_requests`` (as many as the window leaves
        # room for beside one more request), their answers abandoned.
        frames: list[bytes] = []
        todo = self.dropped_requests
        conn = self._conn
        while todo and len(conn.in_flight) < conn.max_in_flight - 1:
            rid, data = conn.send_request(todo.pop())
            if self._abandoned:
                self._abandoned.pop(rid, None)
            self._to_abandon.append((rid, None))
            frames.append(data)
        return b"".join(frames)

    def roundtrip(
        self, op: int, body: bytes, parse: Callable[[bytes], T | None], on_abandon: OnAbandon = None
    ) -> T | object:
        """Fast lane of ``call``: write the REQUEST of ``op`` with payload ``body`` and wait for its answer.

        ``body`` must encode a valid request of ``op`` (``ClientConnection.request_frame``).  Returns
        ``parse(payload)`` when the answer arrives alone and ``parse`` takes it, else the decoded
        ``Response`` or ``ErrorResponse`` (as ``wait``); ``NOT_SENT`` when the request could not
        take the lane (window full, connection not ready or gone): then use ``send``/``wait``.
        Interrupted while waiting, the answer is abandoned to ``on_abandon`` (``wait``).
        """
        with self._send_lock:
            if self._error is not None:
                return NOT_SENT
            framed = self._conn.request_frame(op, body)
            if framed is None:
                return NOT_SENT
            rid, data = framed
            if self._abandoned:
                self._abandoned.pop(rid, None)
            if self.dropped_requests:
                data = self._close_dropped() + data
            try:
                self._write(data)
            except OSError as exc:
                self._lost_writing(exc)
        # ``wait(rid, parse)``, its usual case inline: nobody else reading, so this thread reads.
        token = object()
        lead = False
        try:
            with self._lock:
                lead = not self._reading and self._error is None and rid not in self._done
                if lead:
                    self._reader_token = token
                    self._reading = True
            if lead:
                response = self._read_until(rid, parse)
        except BaseException:
            if lead:
                self._drop_reader(token)
                self._abandon(rid, on_abandon)
            raise
        if lead and response is not _MISSING:
            return response
        return self.wait(rid, parse, on_abandon, abandon=True)

    def wait(
        self,
        rid: int,
        parse: Callable[[bytes], object | None] | None = None,
        on_abandon: OnAbandon = None,
        abandon: bool = False,
    ) -> object:
        """The response (or ``ErrorResponse``) to request ``rid`` (``parse``: see ``roundtrip``).

        ``abandon``: interrupted while waiting (any exception but the connection's own error), the
        caller will not ask again: the answer goes to ``on_abandon`` when it comes (``abandon``).
        """
        if not abandon:
            return self._wait(rid, parse)
        try:
            return self._wait(rid, parse)
        except BaseException as exc:
            if exc is not self._error:
                self._abandon(rid, on_abandon)
            raise

    def abandon(self, rids: list[int], on_answer: OnAbandon = None) -> None:
        """Nobody will wait for the answers to ``rids`` (requests written, answers not taken): each
        goes to ``on_answer`` as it arrives (None: dropped).

        ``on_answer`` runs in the thread that reads the answer (an answer already read: the next
        thread that reads), once it has stopped reading; it may write requests (``send``,
        ``send_many``) but must not wait for answers.  Its exceptions are swallowed.  Takes no lock,
        so it is safe anywhere (a generator's ``finally`` run by the garbage collector included).
        """
        self._to_abandon.extend((rid, on_answer) for rid in rids)

    def _abandon(self, rid: int, on_answer: OnAbandon) -> None:
        # The waiting call was interrupted: note the answer, and stop the request on the server.
        self._to_abandon.append((rid, on_answer))
        if self._error is None:
            _stop_on_server(on_answer, rid)

    def _take_abandoned(self) -> None:
        # Under ``_lock``, by the reader: what ``abandon`` noted, into ``_abandoned`` (answers to
        # come) or ``_orphans`` (answers already here).
        todo = self._to_abandon
        while todo:
            rid, on_answer = todo.pop()
            response = self._done.pop(rid, _MISSING)
            if response is _MISSING:
                if self._error is None:
                    self._abandoned[rid] = on_answer
            elif on_answer is not None:
                self._orphans.append((on_answer, response))

    @staticmethod
    def _hand_over(orphans: list[tuple[Callable[[object], None], object]]) -> None:
        for on_answer, response in orphans:
            try:
                on_answer(response)
            except Exception:  # the connection may be gone; nothing waits for these
                pass

    def _wait(self, rid: int, parse: Callable[[bytes], object | None] | None) -> object:
        cond = self._cond
        token = object()
        while True:
            try:
                with cond:
                    response = self._done.pop(rid, _MISSING)
                    if response is not _MISSING:
                        return response
                    if self._error is not None:
                        raise self._error
                    if not self._reader_or_wait(token):
                        continue
                # Fast path: the reader returns its own answer directly (it never enters ``_done``).
                response = self._read_until(rid, parse)
            except BaseException:
                self._drop_reader(token)
                raise
            if response is not _MISSING:
                return response

    def wait_any(self, rids: set[int]) -> list[tuple[int, object]]:
        """The answers to those of ``rids`` that have come, once one has (each taken once), or []
        when another answer came first (the caller looks again: ``rids`` may have grown).  For one
        thread that waits for many requests' answers at once (remote notifications); raises the
        connection's error when it is lost."""
        cond = self._cond
        token = object()
        try:
            with cond:
                found = self._take_done(rids)
                if found:
                    return found
                if self._error is not None:
                    raise self._error
                if not self._reader_or_wait(token):
                    return self._take_done(rids)
            self._read_until(None)  # until an answer comes (into ``_done``)
        except BaseException:
            self._drop_reader(token)
            raise
        with cond:
            return self._take_done(rids)

    def _take_done(self, rids: set[int]) -> list[tuple[int, object]]:
        # Under ``_cond``: the answers to ``rids`` read so far, in the order they came.
        done = self._done
        return [(rid, done.pop(rid)) for rid in [r for r in done if r in rids]]

    def _pump(self, rid: int | None) -> None:
        token = object()
        try:
            with self._cond:
                if self._error is not None:
                    raise self._error
                if not self._reader_or_wait(token, 0.05):
                    return
            self._read_until(rid)
        except BaseException:
            self._drop_reader(token)
            raise

    def _reader_or_wait(self, token: object, timeout: float | None = None) -> bool:
        # Under ``_cond``: become the connection's reader (True; ``token`` marks the turn), or,
        # another thread reading, wait until it dispatched answers or stopped (False).
        if self._reading:
            self._waiters += 1
            try:
                self._cond.wait(timeout)
            finally:
                self._waiters -= 1
            return False
        self._reader_token = token
        self._reading = True
        return True

    def _drop_reader(self, token: object) -> None:
        # An exception (Ctrl-C) between becoming the reader and ``_read_until`` taking over (whose
        # ``finally`` ends the turn): this thread is still the reader, and every other waiter would
        # wait forever for it.  ``token`` tells that turn from a later one of another thread.
        with self._lock:
            if self._reader_token is token:
                self._reader_token = None
                self._reading = False
                if self._waiters:
                    self._cond.notify_all()

    def _read_until(self, rid: int | None, parse: Callable[[bytes], object | None] | None = None) -> object:
        # This thread is the reader until ``rid`` (or, for None, any answer) has arrived.  Returns
        # the answer to ``rid`` (kept out of ``_done``), or _MISSING.  Other threads are only
        # notified when some wait (``_waiters``): one thread alone pays no Condition.notify_all.
        # With ``parse``: when ``rid``'s answer arrives alone, ``parse(payload)`` is returned if it
        # takes it (ClientConnection.response_payload: no events, no response object).
        cond = self._cond
        conn = self._conn
        mine: object = _MISSING
        # In the main thread a signal handler may raise (Ctrl-C) between any two bytecodes: after
        # recv_into returned and before the bytes were parsed and their answers dispatched, they
        # were lost (a desynchronised stream: protocol errors, or a call waiting for a frame that
        # never completes).  There the signals are held from the read to the dispatch; the wait
        # for bytes before it stays interruptible (nothing is consumed when it is interrupted).
        hold = _HOLD_SIGNALS and threading.current_thread() is threading.main_thread()
        held: Any = None
        try:
            while True:
                if hold:  # wait (interruptibly) for bytes, then read and dispatch them whole
                    self._wait_readable()
                    held = _hold_signals()
                try:
                    try:
                        # Into the preallocated buffer: ``recv(_RECV)`` would allocate (and, being
                        # above malloc's mmap threshold, map and unmap) 256 KiB per call.
                        data = self._rview[: self._sock.recv_into(self._rview)].tobytes()
                        self.last_data = time.monotonic()
                    except OSError as exc:
                        data = b""
                        if self._error is None:
                            self._fail(
                                MSMQError(f"connection lost: {exc}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
                            )
                            return mine
                    try:
                        with self._send_lock:
                            if parse is not None and rid is not None:
                                fast = conn.response_payload(data, rid, parse)
                                if fast is not None:
                                    mine = fast
                                    return fast
                            events = conn.receive_data(data)
                    except ProtocolError as exc:
                        self._fail(
                            MSMQError(
                                f"protocol error: {reason(exc)}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
                            )
                        )
                        return mine
                    got = False
                    with cond:
                        if self._to_abandon:
                            self._take_abandoned()
                        abandoned = self._abandoned
                        for event in events:
                            if type(event) is ResponseReceived:
                                if event.request_id == rid:
                                    mine = event.response
                                    got = True
                                elif abandoned and event.request_id in abandoned:
                                    on_answer = abandoned.pop(event.request_id)
                                    if on_answer is not None:  # handed over when this thread stops reading
                                        self._orphans.append((on_answer, event.response))
                                else:
                                    self._done[event.request_id] = event.response
                                    got = got or rid is None
                            elif type(event) is Goodbye:
                                # S_OK: the server's idle timeout, which ends only connections that
                                # hold nothing (no handle, cursor or transaction): the client may
                                # open another and go on (``RemoteQueueManager._call``).
                                self.ended_idle = event.hresult == HResult.S_OK
                                code = event.hresult or HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
                                self._error = MSMQError(
                                    f"the server closed the connection: {event.reason}", code
                                )
                            elif type(event) is ConnectionClosed and self._error is None:
                                self._error = MSMQError(
                                    "the server closed the connection", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
                                )
                        if events and self._waiters:
                            cond.notify_all()
                        if got or self._error is not None:
                            return mine
                finally:
                    if hold:
                        try:
                            _release_signals(held)
                        except BaseException:
                            # The Ctrl-C held since the read raises now, as the answer to ``rid`` is
                            # returned: it is kept for a later ``wait`` (or ``abandon``), not lost.
                            if mine is not _MISSING and rid is not None:
                                with self._lock:
                                    self._done[rid] = mine
                            raise
                if self._orphans:
                    # Answers of interrupted calls that came while this call waits on: handed over
                    # now, on a thread of their own (their handler writes, and may wait for room in
                    # the window this reader frees), not when this call ends (outside QA: a message
                    # an interrupted receive left held stayed hidden while the next receive waited
                    # for it, forever on a quiet queue).
                    with self._lock:
                        orphans, self._orphans = self._orphans, []
                    if orphans:
                        threading.Thread(
                            target=_hand_over_unsignalled,
                            args=(self, orphans),
                            name="pymsmq-give-back",
                            daemon=True,
                        ).start()
        finally:
            with self._lock:
                self._reading = False
                self._reader_token = None
                if self._waiters:
                    cond.notify_all()
                orphans = self._orphans
                if orphans:
                    self._orphans = []
            if orphans:
                self._hand_over(orphans)

    def _write(self, data: bytes) -> None:
        # sendall; in the main thread with the signals held, as a signal handler raising part way
        # would leave half a frame on the wire (the stream out of step for every later request).
        if (
            len(data) > _SMALL_WRITE
            and _HOLD_SIGNALS
            and threading.current_thread() is threading.main_thread()
        ):
            held = _hold_signals()
            try:
                self._sock.sendall(data)
            finally:
                _release_signals(held)
        else:
            self._sock.sendall(data)

    def _wait_readable(self) -> None:
        # Blocks until the socket has bytes (or buffered TLS data); a signal handler that raises
        # interrupts it with nothing read.
        sock = self._sock
        try:
            if isinstance(sock, ssl.SSLSocket) and sock.pending():
                return
            select.select([sock], [], [])
        except (OSError, ValueError):
            return  # closed meanwhile: the read that follows says so

    def check_alive(self, now: float) -> None:
        """The watchdog's look at this connection (see the module docstring).

        Silence counts from the last bytes read, or from when the watchdog first saw the
        connection busy (a thread reading or sending), whichever is later.
        """
        if self._error is not None or not (self._reading or self._send_lock.locked()):
            self._busy_seen = None
            return
        if self._busy_seen is None:
            self._busy_seen = now
        silent = now - max(self.last_data, self._busy_seen)
        if silent < self.liveness:
            return
        if self._pinged_at > max(self.last_data, self._busy_seen):  # a PING is out, unanswered
            if now - self._pinged_at >= self.liveness:
                self._lost(silent, "not even the answer to a PING")
            return
        # Never wait for the send lock: a sender blocked on the server is the case looked for.
        if not self._send_lock.acquire(blocking=False):
            if silent >= 2 * self.liveness:
                self._lost(silent, "and a request could not be written for as long")
            return
        try:
            conn = self._conn
            if self._error is not None or len(conn.in_flight) >= conn.max_in_flight:
                return  # no room for a PING: left alone (the answers may come)
            if not select.select([], [self._sock], [], 0)[1]:
                if silent >= 2 * self.liveness:
                    self._lost(silent, "and it takes no more bytes")
                return
            rid, data = conn.send_request(pm.PingRequest())
            if self._abandoned:
                self._abandoned.pop(rid, None)
            self._to_abandon.append((rid, None))  # its answer is dropped when it comes
            self._sock.sendall(data)  # a few bytes into a socket that has room: does not block
            self._pinged_at = now
        except (OSError, ProtocolError) as exc:
            self._fail(
                MSMQError(f"connection lost: {exc}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE), wake=True
            )
        finally:
            self._send_lock.release()

    def _lost(self, silent: float, what: str) -> None:
        self._fail(
            MSMQError(
                f"connection lost: the server sent nothing for {silent:.0f} s, {what}",
                HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE,
            ),
            wake=True,
        )

    def _fail(self, error: MSMQError, wake: bool = False) -> None:
        with self._cond:
            if self._error is None:
                self._error = error
            self._abandoned.clear()  # no answer comes any more
            self._cond.notify_all()
        if wake:  # another thread is blocked in recv on the socket: close() alone does not wake it
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._close_socket()

    def _close_socket(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def close(self) -> None:
        """Say GOODBYE and close; pending requests fail with MQ_ERROR_SERVICE_NOT_AVAILABLE.

        Threads blocked on the connection (reading, or writing to a server that takes no more
        bytes) are woken: a frozen server does not keep ``close`` or them waiting.
        """
        if self._send_lock.acquire(timeout=1.0):  # a sender stuck on a frozen server: no GOODBYE
            try:
                if self._error is None:
                    with contextlib.suppress(OSError, ValueError, ProtocolError):
                        if select.select([], [self._sock], [], 0)[1]:  # never blocks on a full socket
                            self._sock.sendall(self._conn.send(Goodbye(HResult.S_OK, "bye")))
            finally:
                self._send_lock.release()
        self._fail(MSMQError("the connection is closed", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE), wake=True)


def _hand_over_unsignalled(t: Transport, orphans: list[tuple[Callable[[object], None], object]]) -> None:
    not_for_sigint()
    t._hand_over(orphans)


def not_for_sigint() -> None:
    """Block SIGINT in this (pymsmq's own) thread: the kernel then delivers a Ctrl-C to a thread
    that takes it, the main thread when the application has no threads of its own, and a main
    thread holding it (``_hold_signals``) gets it when it lets it through."""
    if _HOLD_SIGNALS:
        _sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)


def _hold_signals() -> bool:
    """Block ``_HELD_SIGNALS`` in this thread; True when they were not blocked already."""
    return _SIGINT not in _sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)


def _release_signals(held: bool) -> None:
    """Undo ``_hold_signals`` (a signal that came meanwhile is handled now)."""
    if held:
        _sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)


class _Watchdog:
    """One daemon thread for the process: ``check_alive`` on every live connection, about four
    times per shortest liveness period (at most once per second)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._transports: weakref.WeakSet[Transport] = weakref.WeakSet()
        self._thread: threading.Thread | None = None

    def watch(self, transport: Transport) -> None:
        with self._lock:
            self._transports.add(transport)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pymsmq-liveness", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        not_for_sigint()
        while True:
            with self._lock:
                watched = list(self._transports)
            tick = min((t.liveness for t in watched if t.liveness), default=4.0) / 4
            time.sleep(min(max(tick, 0.01), 1.0))
            now = time.monotonic()
            for t in watched:
                t.check_alive(now)
            del watched


_watchdog = _Watchdog()
