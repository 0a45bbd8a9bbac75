"""One client connection: the sans-I/O ``ServerConnection`` driven by an ``asyncio.Protocol``.

Requests are dispatched as they arrive; many are in flight at once.  Work that cannot block (pings,
opens, peeks, express sends and receives of express messages) runs on the event loop; work that
may wait for an fsync runs on the server's work pool; reads that wait for a message park on the
queue (receive.py), so a waiting receive never holds up another request or connection.  State-changing
requests on one queue handle (SEND, RECEIVE, MOVE, PURGE) are applied in arrival order
(docs/protocol.md 8): a request that finds earlier work of its handle still running is chained
behind it.

Handles, cursors and transactions belong to the connection: when it ends, its handles close (which
wakes its blocked receives) and its active transactions abort, so messages it received in them go
back to their queues.
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

from pymsmq.errors import MSMQError, quoted, reason
from pymsmq.hresult import HResult
from pymsmq.model.xa_transaction import MQ_XA_TRANSACTION_VALUE, xa_transaction_refused
from pymsmq.protocol import (
    ClientHello,
    ConnectionClosed,
    ErrorResponse,
    Goodbye,
    ProtocolError,
    RequestReceived,
    ServerConnection,
    ServerHello,
    State,
    choose_version,
    goodbye_frame,
)
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import Op
from pymsmq.qm.multiple_destination import MultipleDestination, destination_queues
from pymsmq.qm.queue import Cursor, Queue
from pymsmq.qm.transaction import Transaction
from pymsmq.server import batches
from pymsmq.server.access import AccessPolicy, handle_key
from pymsmq.server.holds import Holds, release_all
from pymsmq.server.ops import FORGET_TRANSACTIONS_AT, OpsMixin
from pymsmq.server.receive import ReceiveMixin
from pymsmq.server.send import SendMixin
from pymsmq.server.waits import ArrivalWait, Cancels
from pymsmq.server.workers import PoolShare, chain_future, pool_share
from pymsmq.wire.element_budget import element_budget
from pymsmq.wire.security import MQQueueAccessMask

if TYPE_CHECKING:
    from pymsmq.qm.hold import Hold
    from pymsmq.server.app import Server

__all__ = ["Session"]

log = logging.getLogger("pymsmq.server")
_M = MQQueueAccessMask
#: The transport's write buffer pauses reading above this (``set_write_buffer_limits``), and
#: requests already read wait in the backlog while this much is queued to go out.
_OUT_HIGH: Final = 4 << 20
#: Answers a client leaves unread beyond this close its connection (answers that were running when
#: writing paused: off-loop work and waits; docs/protocol.md 10).
UNREAD_ANSWERS_LIMIT: Final = 64 << 20
#: List elements (vector elements of properties, MultiQueueFormat elements, names in a list) the
#: decoding of one frame may build one by one, and the handling of its request (a SEND's packet):
#: about 25-80 ms of a loop's time at most (outside QA: 4 MB of them held every client for 3-5 s).
#: A request over it is refused (MQ_ERROR_INSUFFICIENT_RESOURCES: a frame that cannot be decoded
#: closes its connection; a SEND's packet gets the error as its answer).  Each frame has its own,
#: so that what a request gets does not depend on how TCP cut the stream (outside QA: two frames
#: of 9,000 elements were answered when written apart and closed the connection written together).
ELEMENTS_PER_FRAME: Final = 16384
#: The list elements one turn of the loop builds for a connection's frames, then its requests,
#: before it lets the others run (the rest wait for the next turn: ServerConnection.read_elements,
#: the backlog).
_TURN: Final = ELEMENTS_PER_FRAME
#: Seconds at most a connection the server closes is still read, what comes dropped, after its
#: half-close (``_linger``), and connections so closing at once (beyond it: closed at once).
LINGER_SECONDS: Final = 5.0
LINGERING_LIMIT: Final = 256
#: The one right a handle on a multiple-element name can have (MQSEC_WRITE_MESSAGE).
_WRITE_RIGHT: Final = int(MQQueueAccessMask.MQSEC_WRITE_MESSAGE)


#: TCP keepalive of the server's connections: the first probe after this many silent seconds, then
#: one every ``_KEEPALIVE_INTERVAL`` seconds; ``_KEEPALIVE_PROBES`` unanswered close the connection
#: (a peer whose host went away is found in about two minutes, whatever the idle timeout).
_KEEPALIVE_IDLE: Final = 60
_KEEPALIVE_INTERVAL: Final = 15
_KEEPALIVE_PROBES: Final = 4


def keep_alive(sock: socket.socket | None) -> None:
    """Turn TCP keepalive on for ``sock`` (where the platform lets a program set its timings)."""
    if sock is None:
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (
            ("TCP_KEEPIDLE", _KEEPALIVE_IDLE),
            ("TCP_KEEPINTVL", _KEEPALIVE_INTERVAL),
            ("TCP_KEEPCNT", _KEEPALIVE_PROBES),
        ):
            option = getattr(socket, name, None)
            if option is not None:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)
    except OSError:  # (not a TCP socket: a test's pipe)
        pass


class Handle:
    """A queue handle of one connection."""

    __slots__ = (
        "cursors",
        "durable_hint",
        "format_name",
        "journal",
        "key",
        "name",
        "queue",
        "rights",
        "stats_key",
        "stats_keys",
        "tail",
    )

    def __init__(self, queue: Queue, rights: int, key: str, journal: bool) -> None:
        self.queue = queue
        self.format_name = queue.format_name
        #: Whose statistics the handle's traffic counts in: the queue's, for a subqueue too (the
        #: queue's bytes hold its subqueues'; a subqueue's own counters went when it emptied, and
        #: sent less received no longer balanced the queue's messages: outside QA).
        self.stats_key = queue.queue_format_name
        #: Whose statistics its sends count in: ``stats_key``, or each queue's for a handle on a
        #: multiple-element name (each queue's counters count its copies).
        self.stats_keys: tuple[str, ...] = (
            tuple(q.queue_format_name for q in destination_queues(cast("MultipleDestination", queue)))
            if queue._fans_out
            else (self.stats_key,)
        )
        self.name = queue.path_name
        self.rights = rights
        self.key = key
        self.journal = journal
        self.cursors: set[int] = set()
        #: The last state-changing request of this handle that runs off the loop.
        self.tail: asyncio.Future[Any] | None = None
        #: > 0 while express receives should peek first (a recoverable message was met lately).
        self.durable_hint = 0


class Session(OpsMixin, ReceiveMixin, SendMixin, asyncio.Protocol):
    """The server side of one client connection."""

    @property
    def policy(self) -> AccessPolicy:
        """The access policy in force: the server's (a reload of ``--auth`` changes it for every
        connection)."""
        return self.server.policy

    def __init__(self, server: Server) -> None:
        self.server = server
        self.qm = server.qm
        self.stats = server.stats
        self.loop = server.loop
        self.conn = ServerConnection()
        self.conn.frame_elements = ELEMENTS_PER_FRAME
        self.conn.read_elements = ELEMENTS_PER_FRAME
        #: List elements the requests handled in this turn of the loop built (``_TURN`` at most).
        self.turn_elements = 0
        self.transport: asyncio.Transport | None = None
        self.identity = ""
        #: The token it authenticated with (a policy change closes the connection if it is revoked).
        self.token = b""
        self.peer = "?"
        #: The client's address without its port (what ``Server.failed_logins`` counts by).
        self.address = "?"
        self.handles: dict[int, Handle] = {}
        self.cursors: dict[int, tuple[Cursor, int]] = {}
        self.transactions: dict[uuid.UUID, Transaction] = {}
        #: Transactions whose COMMIT or ABORT was read and handed to the work pool: they do not
        #: count against ``max_transactions`` (a dropped transaction's ABORT comes right before
        #: the client's next BEGIN, which is answered at once).  Forgotten with the transaction.
        self.ending: set[uuid.UUID] = set()
        #: The table's size at which BEGIN_TRANSACTION forgets the finished ones (ops.py).
        self.forget_transactions_at = FORGET_TRANSACTIONS_AT
        self._next_handle = 1
        self._next_cursor = 1
        self._out: list[bytes] = []
        self._out_size = 0  # bytes in _out
        #: Events read but not handled yet: requests wait here while answers cannot go out.
        self._backlog: deque[object] = deque()
        #: True while a flush is due: scheduled with call_soon, or at the end of data_received.
        self._flush_pending = False
        self._paused = False
        #: Reading paused for this connection's own reasons (requests waiting in the backlog, frames
        #: left for a later turn): ``_next`` resumes it.
        self._read_paused = False
        self.closed = False
        self.pending = 0  # requests running off the loop or parked on a notification
        #: This connection's share of the server's work pool (its requests run off the loop).
        self.pool = PoolShare(server.work_pool, pool_share(server.config.work_threads))
        self.waits: set[ArrivalWait] = set()
        #: Waiting reads CANCEL_RECEIVE may stop.
        self.cancels = Cancels()
        #: Messages held by two-phase receives until END_RECEIVE (holds.py).
        self.holds = Holds()
        self.opened_at = self.last_activity = time.monotonic()
        #: The housekeeping saw a request in flight at its last tick (the idle clock waits for it).
        self.busy = False
        self.partial_since: float | None = None
        if server.tls_context is not None:  # made at the accept; connection_made comes after TLS
            server.in_tls_handshake[self] = self.opened_at

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses: no isinstance check here.
        self.transport = cast(asyncio.Transport, transport)
        transport = self.transport
        peer = transport.get_extra_info("peername")
        # (None when the peer reset the connection as it was made: "None" named nobody in the log.)
        unknown = "a peer gone already" if peer is None else str(peer)
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else unknown
        self.address = str(peer[0]) if isinstance(peer, tuple) else unknown
        transport.set_write_buffer_limits(high=_OUT_HIGH)
        keep_alive(transport.get_extra_info("socket"))
        server = self.server
        server.in_tls_handshake.pop(self, None)
        server.sessions.add(self)
        self.stats.connections_total += 1
        self.stats.connections_open += 1
        log.debug("connection from %s", self.peer)
        cap = server.session_cap
        if cap is not None and server.lingering and len(server.sessions) + len(server.lingering) > cap:
            # A connection closed earlier that is still read (``_linger``) gives its descriptor to
            # this one: the oldest goes now.
            transport, timer = server.lingering.pop(next(iter(server.lingering)))
            timer.cancel()
            transport.abort()
        if cap is not None and len(server.sessions) > cap:
            # Past what the process may open (``fit_descriptors``): refused at once, the files
            # kept for the store and the connections there.
            self.stats.connections_refused += 1
            server.log_budget.log(
                log,
                logging.WARNING,
                "connections refused for want of files",
                "refused %s: %d connections already, as many as this process may open files for",
                self.peer,
                cap,
            )
            # (closed at once, not lingering: its descriptor is what the cap keeps; outside QA,
            # refusals that lingered used up the spare ones and the accept loop spun)
            self.goodbye(HResult.MQ_ERROR_INSUFFICIENT_RESOURCES, "too many connections", linger=False)
            return
        server.greeting(self)

    def holds_state(self) -> bool:
        """Whether the connection holds something its client would lose with it: an open queue
        handle, a cursor, a transaction not ended or a message held by a two-phase receive.  The
        idle timeout leaves such a connection alone (MSMQ keeps a queue open, and a transaction
        running, for as long as the application wants: outside QA, a consumer that worked for
        longer than the timeout inside its transaction had it aborted); TCP keepalive
        (``keep_alive``) finds a peer that went away without closing."""
        if self.handles or self.cursors or len(self.holds):
            return True
        return any(t.active for t in self.transactions.values())

    def data_received(self, data: bytes) -> None:
        # What the decoders may build element by element (pymsmq.wire.element_budget): a read the
        # fast lane takes is one frame; otherwise each frame and each request has its own budget.
        with element_budget(ELEMENTS_PER_FRAME):
            self._received(data)

    def _received(self, data: bytes) -> None:
        if self.closed:
            return
        fast = self.conn.request_fast(data)
        if fast is not None and not self._backlog:
            # Fast lane: exactly one SEND or RECEIVE request arrived (one request in flight): no
            # event list, no RequestReceived; the same bookkeeping as the general path below.
            # Its answer is written at once by ``answer_fast`` when nothing else is waiting to go out.
            stats = self.stats
            self.last_activity = time.monotonic()
            stats.bytes_in += len(data)
            stats.requests += 1
            self.partial_since = None
            rid, req = fast
            try:
                # _dispatch, its SEND/RECEIVE arms inline
                if self.server.closing:
                    self._dispatch(rid, req)
                elif type(req) is pm.SendRequest:
                    self._send(rid, req)
                else:
                    self._receive(rid, req)  # type: ignore[arg-type]
            except Exception as exc:
                self.fail(rid, exc)
            finally:
                if self._out:
                    self._flush()
            return
        now = time.monotonic()
        self.last_activity = now
        self.stats.bytes_in += len(data)
        # Answers written while these events are handled go out in one write at the end.
        self._flush_pending = True
        try:
            events = [RequestReceived(*fast)] if fast is not None else self.conn.receive_data(data)
        except ProtocolError as exc:
            self._protocol_error(exc)
            return
        self._handle_events(events, now)

    def _resume(self) -> None:
        # The frames a read left for later (ServerConnection.read_elements), once the loop has served
        # others: as if they had just been read.
        if self.closed or self._paused or self._backlog or not self.conn.deferred:
            return
        self._flush_pending = True
        try:
            events = self.conn.resume()
        except ProtocolError as exc:
            self._protocol_error(exc)
            return
        self._handle_events(events, time.monotonic())

    def _protocol_error(self, exc: ProtocolError) -> None:
        for event in exc.events:
            # What was complete before the bad frame still counts, except a CLIENT_HELLO: the
            # connection is closing (its state machine is CLOSED), so there is no SERVER_HELLO.
            if type(event) is not ClientHello:
                self._on_event(event)
        self.stats.protocol_errors += 1
        self.server.log_budget.log(
            log,
            logging.WARNING,
            "protocol error",
            "protocol error from %s: %s; closing the connection",
            self.peer,
            exc,
        )
        self._flush_pending = False
        self._abort_connection(goodbye_frame(HResult.MQ_ERROR_INVALID_PARAMETER, reason(exc)))

    def _handle_events(self, events: list[Any], now: float) -> None:
        self.turn_elements = 0
        try:
            backlog = self._backlog
            for i, event in enumerate(events):
                if backlog or self._paused or self._out_size > _OUT_HIGH or self.turn_elements >= _TURN:
                    # The answers cannot go out as fast as requests come, or these requests' lists
                    # took this turn of the loop already: the rest wait (and reading stops) until
                    # the client has read what is queued (resume_writing) or the next turn.
                    backlog.extend(events[i:])
                    self._pause_reading()
                    break
                self._on_event(event)
        finally:
            # The slow-sender clock times the frame now buffered (docs/protocol.md 11: "inside one
            # frame for 10 s"): it starts again whenever a frame completed in this read.  Complete
            # frames left for a later turn (deferred) are the server's to handle, not the sender's.
            if not self.conn.buffered or self.conn.deferred:
                self.partial_since = None
            elif events or self.partial_since is None:
                self.partial_since = now
            self._flush()
            if self._backlog or self.conn.deferred or self._read_paused:
                self._next()

    def _next(self) -> None:
        """What the connection does after a turn, unless its writing is paused (``resume_writing``
        calls this): the requests waiting in the backlog, then the frames a read left for later
        (each in a turn of its own), else reading again.  Reading stays paused while requests read
        wait (nothing more piles up: outside QA, a flood buffered 11 MB and held every other client
        5 s), so the end of the stream is seen only once every request read was handled."""
        if self.closed or self.transport is None or self._paused:
            return
        if self._backlog:
            self._pause_reading()
            self.loop.call_soon(self._drain_backlog)
        elif self.conn.deferred:
            self._pause_reading()
            self.loop.call_soon(self._resume)
        elif self._read_paused:
            self._read_paused = False
            self.transport.resume_reading()

    def _drain_backlog(self) -> None:
        self._drain()

    def _drain(self) -> None:
        # Handle the events that waited, as long as their answers can go out; then read again.
        backlog = self._backlog
        self._flush_pending = True
        self.turn_elements = 0
        try:
            while (
                backlog
                and not self._paused
                and self._out_size <= _OUT_HIGH
                and not self.closed
                and self.turn_elements < _TURN
            ):
                self._on_event(backlog.popleft())
        finally:
            self._flush()
        if self.closed or self.transport is None:
            backlog.clear()
        else:
            self._next()

    def _pause_reading(self) -> None:
        if self.transport is not None and not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        if self.closed:  # the end of a connection the server closed (``_linger``): close it
            return None
        # (Reading is paused while requests read wait: _next.  The end of the stream is read after
        # them; work still running -- a recoverable send being written, a receive waiting for a
        # message, cancelled -- is not waited for: a killed client's socket ends the same way.)
        try:
            self.conn.receive_data(b"")
        except ProtocolError as exc:
            self.stats.protocol_errors += 1
            self.server.log_budget.log(
                log,
                logging.WARNING,
                "ended inside a frame",
                "connection from %s ended inside a frame: %s",
                self.peer,
                exc,
            )
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        linger = self.server.lingering.pop(self, None)
        if linger is not None:
            linger[1].cancel()
        if self.closed and self.transport is None:
            return
        self._teardown()

    def pause_writing(self) -> None:
        # Backpressure: a client that does not read its answers stops being read, and the requests
        # already read wait in the backlog (data_received).
        if self.transport is not None and not self._paused:
            self._paused = True
            self._pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and self._paused:
            self._paused = False
            if self._backlog:
                self._drain_backlog()
            else:
                # (frames a read left for later too: outside QA, they waited for more bytes)
                self._next()

    # ------------------------------------------------------------------ output
    def _write(self, data: bytes) -> None:
        self._out.append(data)
        self._out_size += len(data)
        if not self._flush_pending:
            self._flush_pending = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        self._out_size = 0
        if not self._out or self.transport is None or self.closed:
            self._out.clear()
            return
        data = b"".join(self._out) if len(self._out) > 1 else self._out[0]
        self._out.clear()
        self.stats.bytes_out += len(data)
        self.transport.write(data)
        if self._paused:
            self._check_unread()

    def _check_unread(self) -> None:
        # Answers of work that was already running when writing paused still come; a client that
        # leaves more than UNREAD_ANSWERS_LIMIT of them unread is dropped (its buffer with it).
        transport = self.transport
        if transport is None or transport.get_write_buffer_size() <= UNREAD_ANSWERS_LIMIT:
            return
        self.server.log_budget.log(
            log,
            logging.WARNING,
            "does not read its answers",
            "%s does not read its answers (over %d bytes): closing",
            self.peer,
            UNREAD_ANSWERS_LIMIT,
        )
        self._teardown()
        transport.abort()

    def answer(self, rid: int, response: pm.Response | ErrorResponse) -> None:
        """Send the answer to request ``rid`` (dropped if the connection is gone)."""
        if self.closed or self.conn.state is not State.READY:
            return
        try:
            self._write(self.conn.send(response, rid))
        except ProtocolError as exc:  # e.g. an answer over the client's limit
            # The client asked for more than one frame holds (a listing of a very large server
            # from a client of protocol version 3): its error, not the server's.
            log.warning("cannot answer request %d from %s: %s", rid, self.peer, reason(exc))
            try:
                self._write(
                    self.conn.send(ErrorResponse(HResult.MQ_ERROR_INSUFFICIENT_RESOURCES, reason(exc)), rid)
                )
            except ProtocolError:
                pass

    def answer_fast(self, rid: int, op: int, body: bytes | None) -> bool:
        """Write the RESPONSE to ``rid`` of ``op`` whose payload is ``body`` (fast lane); False: not done.

        ``body`` is a payload built by ``message_codec`` (``send_answer_body``,
        ``receive_answer_body``), the bytes the response object would encode to.  False (nothing
        written) for None or whatever ``ServerConnection.answer_frame`` does not take: the caller
        then uses ``answer`` with the response object.
        """
        if body is None or self.closed:
            return False
        frame = self.conn.answer_frame(rid, op, body)
        if frame is None:
            return False
        if self._out or self._flush_pending or self.transport is None:
            self._write(frame)  # behind what is already queued
        else:
            self.stats.bytes_out += len(frame)
            self.transport.write(frame)
            if self._paused:
                self._check_unread()
        return True

    def fail(self, rid: int, exc: BaseException) -> None:
        """Answer request ``rid`` with the ERROR frame of ``exc``."""
        self.stats.errors += 1
        if isinstance(exc, MSMQError):
            if exc.hresult == HResult.MQ_ERROR_ACCESS_DENIED:  # an audit trail of refusals
                self.server.log_budget.log(
                    log, logging.INFO, "request refused", "%s refused: %s", self.peer, exc.message[:300]
                )
            self.answer(rid, ErrorResponse(exc.hresult & 0xFFFFFFFF, exc.message[:2000]))
        else:
            log.exception("internal error serving %s", self.peer, exc_info=exc)
            self.answer(rid, ErrorResponse(HResult.MQ_ERROR, f"internal error: {type(exc).__name__}"))

    # ------------------------------------------------------------------ closing
    def goodbye(self, hresult: int, reason: str, linger: bool = True) -> None:
        """Say GOODBYE and close (graceful: ``_linger``, unless ``linger`` is False)."""
        if self.closed or self.transport is None:
            return
        try:
            self._write(self.conn.send(Goodbye(hresult, reason)))
        except ProtocolError:
            pass
        self._flush()
        transport = self.transport
        self._teardown()
        if linger:
            self._linger(transport)
        else:
            transport.close()

    def _abort_connection(self, farewell: bytes) -> None:
        transport = self.transport
        if transport is not None:
            self._out.clear()
            transport.write(farewell)
        self._teardown()
        if transport is not None:
            self._linger(transport)

    def _linger(self, transport: asyncio.Transport) -> None:
        """Close ``transport`` so that what was written to it reaches the client: a half-close (the
        end of the stream after the bytes written), then reading, and dropping, what the client
        still sends until its own end, ``LINGER_SECONDS`` at most.  A socket closed with bytes it
        has not read ends with a reset, which throws away what its client has not read yet
        (outside QA: a shutdown while a client's requests waited lost the answers of the ones done,
        recoverable sends stored, and the GOODBYE).  TLS closes at once (its close_notify)."""
        server = self.server
        lingering = server.lingering
        if transport.is_closing():  # (the GOODBYE's write failed: the peer is gone already)
            return
        if not transport.can_write_eof() or len(lingering) >= LINGERING_LIMIT:
            transport.close()
            return
        try:
            transport.write_eof()
        except (OSError, RuntimeError):  # gone already (ENOTCONN; uvloop: a closed handle)
            transport.abort()
            return
        transport.resume_reading()  # (data_received drops what comes: the session is closed)
        # (A stopping server lets them linger for what is left of its grace instead: shutdown.)
        timer = self.loop.call_later(LINGER_SECONDS, transport.abort)
        if server.closing:
            timer.cancel()
        lingering[self] = (transport, timer)

    def _teardown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.stats.connections_open -= 1
        if self.pool.busy:  # (requests it read still run: a stopping server waits for them too)
            self.server.keep_closed_work(self.pool)
        self.server.sessions.discard(self)
        self.server.unauthenticated.pop(self, None)
        self._out.clear()
        self._out_size = 0
        self._backlog.clear()  # requests never handled: nobody waits for their answers
        self.transport = None
        # Closing the handles wakes this connection's blocked receives (they fail, nobody waits).
        for wait in list(self.waits):
            wait.cancel()
        held = self.holds.close()
        if held:  # never acknowledged: back in their queues, in place
            self.server.log_budget.log(
                log,
                logging.INFO,
                "went away holding messages",
                "%s went away holding %d message(s): releasing them",
                self.peer,
                len(held),
            )
            self.release_later(held)
        for handle in self.handles.values():
            handle.queue.close()
        self.handles.clear()
        self.cursors.clear()
        active = [tx for tx in self.transactions.values() if tx.active]
        self.transactions.clear()
        self.ending.clear()
        if active:
            self.server.log_budget.log(
                log,
                logging.INFO,
                "went away in a transaction",
                "%s went away with %d open transaction(s): aborting",
                self.peer,
                len(active),
            )
            self.server.run_work(lambda: _abort_all(active))
        log.debug("connection from %s closed", self.peer)

    # ------------------------------------------------------------------ events
    def _on_event(self, event: object) -> None:
        if type(event) is RequestReceived:
            self.stats.requests += 1
            budget = element_budget(ELEMENTS_PER_FRAME)  # each request its own (a SEND's packet)
            with budget:
                self._dispatch(event.request_id, event.request)
            self.turn_elements += budget.used
        elif type(event) is ClientHello:
            self._on_hello(event)
        elif type(event) is Goodbye:
            log.debug("%s said goodbye: %r", self.peer, event.reason)
            transport = self.transport
            self._teardown()
            if transport is not None:
                transport.close()
        elif type(event) is ConnectionClosed:
            transport = self.transport
            self._teardown()
            if transport is not None:
                transport.close()

    def _on_hello(self, hello: ClientHello) -> None:
        server = self.server
        refusal: tuple[int, str] | None = None
        now = time.monotonic()
        # An address that presented too many bad tokens lately is refused before its token is
        # looked at: a right guess is not confirmed (``failed_logins``).
        locked_out = server.failed_logins.refused_for(self.address, now)
        identity = None if locked_out else self.policy.authenticate(hello.token)
        version = choose_version(hello)
        if server.closing:
            refusal = (HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, "the server is shutting down")
        elif version is None:
            refusal = (
                HResult.MQ_ERROR_OPERATION_NOT_SUPPORTED_BY_REMOTE_COMPUTER,
                "no common protocol version",
            )
        elif locked_out:
            refusal = (
                HResult.MQ_ERROR_ACCESS_DENIED,
                f"too many bad tokens from {self.address}: try again in {math.ceil(locked_out)} s",
            )
        elif identity is None:
            server.failed_logins.failed(self.address, now)
            refusal = (HResult.MQ_ERROR_ACCESS_DENIED, "bad or missing token")
        elif server.authenticated_count() >= server.connection_limit(identity):
            refusal = (HResult.MQ_ERROR_INSUFFICIENT_RESOURCES, "too many connections")
        if refusal is not None:
            self.stats.connections_refused += 1
            server.log_budget.log(
                log,
                logging.WARNING,
                "handshake refused",
                "refused %s (%r): %s",
                self.peer,
                hello.client_name[:100],
                refusal[1],
            )
            self.goodbye(*refusal)
            return
        assert identity is not None and version is not None
        self.identity = identity
        self.token = bytes(hello.token)
        server.unauthenticated.pop(self, None)
        cfg = server.config
        self._write(
            self.conn.send(
                ServerHello(
                    version,
                    self.qm.guid,
                    self.qm.machine_name,
                    cfg.max_payload,
                    cfg.max_in_flight,
                    cfg.max_message_size,
                )
            )
        )
        # DEBUG: at INFO a server with short-lived clients wrote a line per connection (20,000 an
        # hour at 5 a second: outside soak QA); refusals stay WARNING.
        log.debug("%s connected as %r (%r)", self.peer, identity, hello.client_name[:100])

    # ------------------------------------------------------------------ dispatch
    def _dispatch(self, rid: int, req: pm.Request) -> None:
        if self.server.closing:
            self.answer(rid, ErrorResponse(HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, "shutting down"))
            return
        op = req.OP
        try:
            if op == Op.SEND:
                self._send(rid, req)  # type: ignore[arg-type]
            elif op == Op.RECEIVE:
                self._receive(rid, req)  # type: ignore[arg-type]
            elif op == Op.END_RECEIVE:
                self._end_receive(rid, req)  # type: ignore[arg-type]
            elif op == Op.RECEIVE_MATCHING:
                self._receive_matching(rid, req)  # type: ignore[arg-type]
            elif op in _BATCH_OPS:
                _BATCH_OPS[op](self, rid, req)
            elif op in _WORK_OPS:
                if op == Op.ABORT_TRANSACTION or op == Op.COMMIT_TRANSACTION:
                    tid = req.transaction  # type: ignore[attr-defined]
                    if tid in self.transactions:  # (never more ids than transactions)
                        self.ending.add(tid)
                fn = getattr(self, _WORK_OPS[op])
                handle = self._ordered_handle(req)
                self.off_loop(rid, lambda: fn(req), handle)
            else:
                self.answer(rid, getattr(self, _INLINE_OPS[op])(req))
        except Exception as exc:
            self.fail(rid, exc)

    def _ordered_handle(self, req: pm.Request) -> Handle | None:
        if type(req) in (pm.MoveRequest, pm.PurgeQueueRequest):
            return self.handle(req.handle)  # type: ignore[attr-defined]
        return None

    def off_loop(self, rid: int, fn: Callable[[], pm.Response], handle: Handle | None = None) -> None:
        """Run ``fn`` on the work pool and answer ``rid`` with its result (after ``handle``'s
        earlier work).  ``fn`` does not wait for a message: a read that may wait parks
        (``ReceiveMixin.try_or_park``)."""
        pool = self.pool
        prev = handle.tail if handle is not None else None
        self.pending += 1
        if prev is None or prev.done():
            fut: asyncio.Future[Any] = pool.submit(fn)
        else:
            fut = self.loop.create_future()

            def start(_: object) -> None:
                inner = pool.submit(fn)
                inner.add_done_callback(lambda f: chain_future(f, fut))

            prev.add_done_callback(start)
        if handle is not None:
            handle.tail = fut
        fut.add_done_callback(lambda f: self.settle(rid, f))

    def settle(self, rid: int, fut: asyncio.Future[Any]) -> bool:
        """A pool job of request ``rid`` ended (``pending`` drops by one): answer its response, or
        its error (MQ_ERROR_OPERATION_CANCELLED when cancelled).  False, with nothing answered,
        when it returned None (the caller goes on: ``ReceiveMixin._receive_or_park``)."""
        self.pending -= 1
        if fut.cancelled():
            self.fail(rid, MSMQError("cancelled", HResult.MQ_ERROR_OPERATION_CANCELLED))
            return True
        exc = fut.exception()
        if exc is not None:
            self.fail(rid, exc)
            return True
        response = fut.result()
        if response is None:
            return False
        self.answer(rid, response)
        return True

    # ------------------------------------------------------------------ lookups
    def handle(self, number: int) -> Handle:
        """The open queue handle ``number`` of this connection."""
        h = self.handles.get(number)
        if h is None:
            raise MSMQError(f"no queue handle {number}", HResult.MQ_ERROR_INVALID_HANDLE)
        return h

    def check(self, h: Handle, needed: int, what: str) -> None:
        """MQ_ERROR_ACCESS_DENIED unless this identity has ``needed`` on the handle's queue."""
        if needed & ~h.rights:
            raise MSMQError(
                f"{quoted(self.identity)} may not {what} {quoted(h.key)}", HResult.MQ_ERROR_ACCESS_DENIED
            )

    def transaction(self, ref: object) -> Transaction | int | None:
        """The QM transaction argument of an XACT field."""
        if ref is None or isinstance(ref, int):
            if ref == MQ_XA_TRANSACTION_VALUE:
                raise xa_transaction_refused()
            return ref
        assert isinstance(ref, uuid.UUID)
        tx = self.transactions.get(ref)
        if tx is None:
            raise MSMQError(
                "unknown transaction (not begun on this connection)", HResult.MQ_ERROR_TRANSACTION_USAGE
            )
        return tx

    def receive_transaction(self, ref: object) -> Transaction | int | None:
        """``transaction`` for a receive: 0, 1 and 3 (MQ_NO_TRANSACTION, MTS, MQ_SINGLE_MESSAGE) are
        receives outside a transaction (as the queue manager reads them), so None (two-phase
        receives apply); XA is refused (``transaction``)."""
        tx = self.transaction(ref)
        return None if type(tx) is int and 0 <= tx <= 3 else tx

    def release_later(self, held: list[Hold]) -> None:
        """Give the messages of ``held`` back to their queues, on the work pool."""
        self.server.run_work(lambda: release_all(held))

    def open_handle(self, queue: Queue) -> tuple[int, Handle]:
        """Register a QM queue handle; returns (number, handle).  MQ_ERROR_INSUFFICIENT_RESOURCES
        (``queue`` closed) when the connection has ``max_handles`` open (outside QA: 300,000
        OPEN_QUEUEs on one connection grew the server by 180 MB, with no limit)."""
        limit = self.server.config.max_handles
        if len(self.handles) >= limit:
            queue.close()
            raise MSMQError(
                f"this connection has {limit} queue handles open, the server's limit: close some first",
                HResult.MQ_ERROR_INSUFFICIENT_RESOURCES,
            )
        if queue._fans_out:
            # A multiple-element name (qm.multiple_destination): the right to send to every queue
            # it names, and no other right (its handle does nothing else).
            key, journal = queue.format_name, False
            rights = _WRITE_RIGHT
            for element in destination_queues(cast("MultipleDestination", queue)):
                rights &= self.policy.rights_of(self.identity, handle_key(element.path_name)[0])
        else:
            key, journal = handle_key(queue.path_name)
            rights = self.policy.rights_of(self.identity, key)
        number = self._next_handle
        self._next_handle += 1
        h = self.handles[number] = Handle(queue, rights, key, journal)
        self.holds.opened(number)
        return number, h

    def server_snapshot(self) -> dict[str, Any]:
        """The server's statistics (for STATS): the counters of the queues this identity may read
        statistics of (MQSEC_GET_QUEUE_PROPERTIES), the server's totals."""
        snap = self.server.snapshot()
        if not self._has_every_right():
            readable: dict[str, Any] = {}
            for name, counters in snap["queues"].items():
                try:
                    path = self.qm.get_queue_properties(name).path_name
                except MSMQError:
                    continue  # deleted since
                if self._may_read_stats(path):
                    readable[name] = counters
            snap["queues"] = readable
        return snap


def _abort_all(transactions: list[Transaction]) -> None:
    for tx in transactions:
        try:
            if tx.active:
                tx.abort()
        except MSMQError as exc:
            log.warning("abort of %s failed: %s", tx.id, exc)


_INLINE_OPS: Final = {
    Op.PING: "op_ping",
    Op.STATS: "op_stats",
    Op.LIST_QUEUES: "op_list_queues",
    Op.LIST_QUEUES_PAGE: "op_list_queues_page",
    Op.OPEN_QUEUE: "op_open_queue",
    Op.CLOSE_QUEUE: "op_close_queue",
    Op.GET_QUEUE_PROPERTIES: "op_get_queue_properties",
    Op.CREATE_CURSOR: "op_create_cursor",
    Op.CLOSE_CURSOR: "op_close_cursor",
    Op.BEGIN_TRANSACTION: "op_begin_transaction",
    Op.CANCEL_RECEIVE: "op_cancel_receive",
    Op.MARK_REJECTED: "op_mark_rejected",
}
#: pymsmq batch extensions (server/batches.py): they schedule and answer themselves.
_BATCH_OPS: Final[dict[int, Callable[[Session, int, Any], None]]] = {
    Op.SEND_MANY: batches.send_many,
    Op.RECEIVE_MANY: batches.receive_many,
}
_WORK_OPS: Final = {
    Op.CREATE_QUEUE: "op_create_queue",
    Op.DELETE_QUEUE: "op_delete_queue",
    Op.SET_QUEUE_PROPERTIES: "op_set_queue_properties",
    Op.PURGE_QUEUE: "op_purge_queue",
    Op.MOVE: "op_move",
    Op.COMMIT_TRANSACTION: "op_commit_transaction",
    Op.ABORT_TRANSACTION: "op_abort_transaction",
    Op.READ_RANGE: "op_read_range",
}
