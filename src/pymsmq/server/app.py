"""The queue manager server: one asyncio process, one ``QueueManager``, the client protocol on 2103/tcp.

``Server(qm, config)`` listens (``await server.start()``), serves connections (``session.Session``),
runs a once-a-second housekeeping task (idle and slow-sender timeouts, statistics samples) and
shuts down gracefully (``await server.shutdown()``: stop accepting, wake blocked receives, let
running work finish, abort open transactions, say GOODBYE, close the queue manager).  ``run(config)``
is the blocking entry point used by ``pymsmq serve``: it installs SIGTERM/SIGINT/SIGHUP handlers, prints
``pymsmq: listening client=HOST:PORT`` once bound, and returns 0 after a graceful shutdown.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import gc
import ipaddress
import logging
import signal
import ssl
import sys
import termios
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.protocol.handshake import DEFAULT_MAX_IN_FLIGHT, MAX_PAYLOAD
from pymsmq.protocol.states import State
from pymsmq.qm.queue_manager import QueueManager
from pymsmq.server.access import AccessPolicy
from pymsmq.server.event_loop import EventLoop, UvloopMissing, describe, loop_factory
from pymsmq.server.failed_logins import FailedLogins
from pymsmq.server.log_budget import LogBudget
from pymsmq.server.metrics import MetricsEndpoint
from pymsmq.server.metrics import available as metrics_available
from pymsmq.server.policy_file import PolicyFile
from pymsmq.server.queue_sizes import queue_path_names, queue_sizes
from pymsmq.server.send_batcher import DURABLE_WRITES, DurableWrites, SendBatcher
from pymsmq.server.session import Session
from pymsmq.server.stats import ServerStats
from pymsmq.server.tls_files import CertificateFiles
from pymsmq.server.workers import PoolShare, WorkPool
from pymsmq.wire.base_header import MAX_PACKET_SIZE

__all__ = [
    "DEFAULT_PORT",
    "SERVER_GC_THRESHOLDS",
    "ConfigError",
    "Server",
    "ServerConfig",
    "is_loopback",
    "run",
    "server_gc",
]

log = logging.getLogger("pymsmq.server")
#: A connection in these states has not finished its handshake (the housekeeper times it).
_HANDSHAKING: Final = (State.AWAIT_HELLO, State.SEND_HELLO)

#: Cyclic-GC thresholds (``gc.set_threshold``) while ``run`` serves.  A server holds every queued
#: message as Python objects and allocates several per request; with the defaults (700, 10, 10) the
#: collector ran about every 150 recoverable sends at 32 clients and took 1.8-2.3 us of CPU per send
#: (``gc.callbacks`` timing); with these, 0.8-1.8 us.  Fewer, larger young collections free the same
#: garbage.
SERVER_GC_THRESHOLDS: Final = (50_000, 20, 10)

DEFAULT_PORT: Final = 2103


class ConfigError(ValueError):
    """The server configuration is unsafe or inconsistent (the server refuses to start)."""


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _authority(host: str, port: int) -> str:
    """``host:port`` for a URL (an IPv6 address in brackets)."""
    return f"{f'[{host}]' if ':' in host else host}:{port}"


#: Bytes a second a frame in progress is allowed at least, beyond ``slow_timeout``: a client on a
#: slow link that keeps sending passes (outside QA: a 3 MB message at 200 KB/s was cut at 10 s).
SLOW_FRAME_RATE: Final = 16 * 1024


def slow_frame(started: float, last_bytes: float, received: int, now: float, slow_timeout: float) -> bool:
    """Whether a frame begun at ``started`` comes too slowly (docs/protocol.md 11): no byte of it for
    ``slow_timeout`` seconds, or more time than ``slow_timeout`` plus ``received`` bytes at
    ``SLOW_FRAME_RATE``."""
    return now - last_bytes > slow_timeout or now - started > slow_timeout + received / SLOW_FRAME_RATE


#: Counters of this many queues more than twice as many as the last look found make the server
#: look for gone ones without a STATS (``Server._housekeeping``): constant time per counter.
COUNTERS_LOOK_MIN: Final = 1024


@dataclass(slots=True)
class ServerConfig:
    """Everything ``pymsmq serve`` can set."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    policy: AccessPolicy = field(default_factory=AccessPolicy)
    tls_cert: str | None = None
    tls_key: str | None = None
    max_connections: int = 1024
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    max_payload: int = MAX_PAYLOAD
    max_message_size: int = MAX_PACKET_SIZE
    #: Seconds a connection that holds nothing (no queue handle, cursor, open transaction or held
    #: message) may stay silent with nothing in flight.
    idle_timeout: float = 300.0
    #: Seconds a peer may take to finish a frame it started (and to complete the handshake).
    slow_timeout: float = 10.0
    #: Seconds ``shutdown`` lets running work finish.
    shutdown_grace: float = 10.0
    work_threads: int = 64
    #: Internal transactions (BEGIN_TRANSACTION) one connection may have active at once; another
    #: BEGIN_TRANSACTION is MQ_ERROR_INSUFFICIENT_RESOURCES (each costs server memory until it ends).
    max_transactions: int = 1024
    #: Cursors (CREATE_CURSOR) one connection may have open at once; another is
    #: MQ_ERROR_INSUFFICIENT_RESOURCES.
    max_cursors: int = 4096
    #: Queue handles (OPEN_QUEUE, CREATE_QUEUE) one connection may have open at once; another is
    #: MQ_ERROR_INSUFFICIENT_RESOURCES (each costs server memory until it is closed; the reference
    #: client closes the handles it drops).
    max_handles: int = 4096
    #: Handshakes with a bad token one client address may make within ``failed_login_window``
    #: seconds; then the address is refused, whatever token it presents, until the oldest of them
    #: is that old (0: no limit; ``pymsmq.server.failed_logins``).
    max_failed_logins: int = 20
    failed_login_window: float = 60.0
    #: Where recoverable sends are written: "auto" (on the event loop while only recoverable sends
    #: arrive, on a writer thread while other requests do), "loop" (always on the loop) or "thread"
    #: (always on the batch thread); see ``pymsmq.server.send_batcher``.
    durable_writes: DurableWrites = "auto"
    #: The event loop ``run`` serves on: "auto" (uvloop when installed), "uvloop" or "asyncio"; see
    #: ``pymsmq.server.event_loop``.  A ``Server`` runs on whatever loop it is started in.
    event_loop: EventLoop = "auto"
    #: ``GET /metrics`` (Prometheus text, plain HTTP) on this port (0: any free port; None: no
    #: endpoint) and address (``pymsmq.server.metrics``).
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    #: The file ``policy`` was read from (``--auth``): read again when it changes
    #: (``pymsmq.server.policy_file``); None: the policy is fixed.
    policy_file: PolicyFile | None = None

    def validate(self) -> None:
        """Raise ``ConfigError`` for an unsafe or impossible configuration."""
        if not is_loopback(self.host) and not self.policy.requires_token:
            raise ConfigError(
                f"refusing to listen on {self.host} without a token: "
                "use --token (and --tls-cert/--tls-key) or bind 127.0.0.1"
            )
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("--tls-cert and --tls-key go together")
        if not 0 <= self.port <= 0xFFFF:
            raise ConfigError(f"invalid port {self.port}")
        if self.metrics_port is not None:
            if not 0 <= self.metrics_port <= 0xFFFF:
                raise ConfigError(f"invalid metrics port {self.metrics_port}")
            if not metrics_available():
                raise ConfigError("--metrics-port needs prometheus_client: pip install 'pymsmq[server]'")
        if self.durable_writes not in DURABLE_WRITES:
            raise ConfigError(
                f"durable writes go on the 'loop', a 'thread' or 'auto', not {self.durable_writes!r}"
            )
        if self.max_failed_logins < 0 or not self.failed_login_window > 0:
            raise ConfigError("max_failed_logins must be >= 0 and failed_login_window > 0")
        limits = (self.max_connections, self.max_in_flight, self.max_transactions)
        if min(*limits, self.max_cursors, self.max_handles) < 1:
            raise ConfigError(
                "connection, in-flight, transaction, cursor and handle limits must be at least 1"
            )
        try:
            loop_factory(self.event_loop)
        except UvloopMissing as exc:
            raise ConfigError(f"--event-loop uvloop: {exc}") from None
        except ValueError as exc:  # not one of EVENT_LOOPS
            raise ConfigError(str(exc)) from None

    def certificate_files(self) -> CertificateFiles | None:
        """The certificate and key loaded into a new server TLS context (loaded again when they
        change: ``pymsmq.server.tls_files``), or None without TLS."""
        if self.tls_cert is None or self.tls_key is None:
            return None
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        return CertificateFiles(self.tls_cert, self.tls_key, ctx)


class Server:
    """One listening queue manager server."""

    def __init__(self, qm: QueueManager, config: ServerConfig | None = None) -> None:
        self.qm = qm
        self.config = config or ServerConfig()
        self.config.validate()
        self.stats = ServerStats()
        self.sessions: set[Session] = set()
        #: Connections closed by the server that are read until their clients' end of stream, so
        #: that the clients read what was written before the close (``Session._linger``): the
        #: transport and the timer that aborts it.
        self.lingering: dict[Session, tuple[asyncio.Transport, asyncio.TimerHandle]] = {}
        #: The work-pool shares of connections that closed while requests they had read still ran
        #: or waited (they run all the same, and a stopping server waits for them).
        self.closed_with_work: set[PoolShare] = set()
        #: Connections held at most at once, when the process may open too few files for
        #: ``max_connections`` (``fit_descriptors``); None: no cap beyond the configured limits.
        self.session_cap: int | None = None
        #: Connections accepted whose TLS handshake runs (asyncio calls a Session's
        #: ``connection_made`` once TLS is up): when each was accepted.  They count in the budget
        #: of connections that have not said hello (``greeting``); one whose handshake failed is
        #: forgotten once the handshake timeout has certainly passed
        #: (``_forget_failed_tls_handshakes``).
        self.in_tls_handshake: dict[Session, float] = {}
        #: Connections that have not said CLIENT_HELLO yet, oldest first (``greeting``).
        self.unauthenticated: dict[Session, None] = {}
        #: Lines of the log that peers cause, at most so many of a kind a minute.
        self.log_budget = LogBudget()
        #: asyncio's "socket.accept() out of system resource" (with a traceback, each time an
        #: accept fails for want of files) within that budget (outside QA: 27 MB of them in 8 s).
        self._accept_errors = _BudgetedAcceptErrors(self.log_budget)
        #: Bad tokens by client address (``ServerConfig.max_failed_logins``).
        self.failed_logins = FailedLogins(self.config.max_failed_logins, self.config.failed_login_window)
        #: The server's TLS certificate and key (``--tls-cert``), once started, loaded again when
        #: they change; None: plain TCP.
        self.certificates: CertificateFiles | None = None
        self.closing = False
        self.loop: asyncio.AbstractEventLoop = asyncio.get_event_loop()
        self.work_pool = WorkPool(self.loop, self.config.work_threads)
        self.send_batcher = SendBatcher(
            self.loop, qm, self.config.durable_writes, requests=lambda: self.stats.requests
        )
        self._server: asyncio.Server | None = None
        self._housekeeper: asyncio.Task[None] | None = None
        #: How many queues had counters after the last look for gone ones (``_forget_deleted_queues``).
        self._counters_after_look = 0
        self._background: set[asyncio.Future[Any]] = set()
        self.addresses: list[tuple[str, int]] = []
        #: ``GET /metrics``, once started with ``ServerConfig.metrics_port``.
        self.metrics: MetricsEndpoint | None = None
        #: What the server runs on, once started: "uvloop 0.23.0" or "asyncio" (``event_loop.describe``).
        self.event_loop = ""

    async def start(self) -> list[tuple[str, int]]:
        """Bind and start accepting; returns the bound (host, port) pairs."""
        self.loop = self.work_pool.loop = self.send_batcher.loop = asyncio.get_running_loop()
        logging.getLogger("asyncio").addFilter(self._accept_errors)
        cfg = self.config
        self.certificates = cfg.certificate_files()
        context = self.tls_context
        # A TLS handshake is part of the connection's handshake: the same 10 s (docs/protocol.md
        # 11), not asyncio's 60 s default.
        self._server = await self.loop.create_server(
            lambda: Session(self),
            cfg.host,
            cfg.port,
            ssl=context,
            reuse_address=True,
            backlog=1024,
            ssl_handshake_timeout=None if context is None else cfg.slow_timeout,
        )
        if context is None and not is_loopback(cfg.host):
            log.warning(
                "listening on %s without TLS: tokens and messages travel in clear text "
                "(--tls-cert/--tls-key)",
                cfg.host,
            )
        self.addresses = [s.getsockname()[:2] for s in self._server.sockets]
        if cfg.metrics_port is not None:
            self.metrics = self._start_metrics()
        self._housekeeper = self.loop.create_task(self._housekeeping())
        self.event_loop = describe(self.loop)
        for host, port in self.addresses:
            tls = cfg.tls_cert is not None
            log.info("listening on %s:%d (tls=%s, event loop %s)", host, port, tls, self.event_loop)
        return self.addresses

    def _start_metrics(self) -> MetricsEndpoint:
        cfg = self.config
        assert cfg.metrics_port is not None and self._server is not None
        try:
            endpoint = MetricsEndpoint(
                cfg.metrics_host,
                cfg.metrics_port,
                self.loop,
                lambda: (self.snapshot(), queue_path_names(self.qm)),
            )
        except BaseException as exc:
            self._server.close()  # (the client port was bound already)
            if isinstance(exc, OSError):
                where = f"{cfg.metrics_host}:{cfg.metrics_port}"
                raise ConfigError(f"cannot serve metrics on {where}: {exc}") from None
            raise
        if not is_loopback(cfg.metrics_host):
            log.warning(
                "metrics on %s: no authentication; every queue's name and counts are visible there",
                cfg.metrics_host,
            )
        log.info("metrics on %s:%d/metrics", *endpoint.address)
        return endpoint

    @property
    def policy(self) -> AccessPolicy:
        """The access policy in force (``config.policy``; ``use_policy`` replaces it)."""
        return self.config.policy

    def use_policy(self, policy: AccessPolicy) -> bool:
        """Put ``policy`` in force (``pymsmq.server.policy_file``): the connections whose token it
        no longer gives the same identity are closed.  False (and nothing changes) when it gives
        no tokens: every client would be the owner (refused beyond loopback at start, and by any
        reload of a policy that had tokens)."""
        if not policy.requires_token and (self.policy.requires_token or not is_loopback(self.config.host)):
            # No tokens: every client would be the owner.  Not by a reload (emptying the file to
            # revoke every token did the opposite); nor beyond loopback (ServerConfig.validate).
            log.error(
                "a policy without tokens would let every client in as the owner: not used; the "
                "policy in force stays"
            )
            return False
        self.config.policy = policy
        revoked = 0
        for session in list(self.sessions):
            if session.identity and policy.authenticate(session.token) != session.identity:
                revoked += 1
                session.goodbye(HResult.MQ_ERROR_ACCESS_DENIED, "the token of this connection was revoked")
        log.warning(
            "access policy changed: %d tokens, %d identities with rights; "
            "%d connections closed (token revoked)",
            len(policy.tokens),
            len(policy.rights),
            revoked,
        )
        return True

    @property
    def tls_context(self) -> ssl.SSLContext | None:
        """The server side of TLS, once started; None: plain TCP."""
        return None if self.certificates is None else self.certificates.context

    def authenticated_count(self) -> int:
        """Connections past their CLIENT_HELLO (what ``max_connections`` limits at the hello)."""
        return len(self.sessions) - len(self.unauthenticated)

    def connection_limit(self, identity: str) -> int:
        """Authenticated connections beyond which ``identity`` is refused: ``max_connections`` for
        the owner; for the other identities a sixteenth fewer (at least one fewer when the limit
        allows), kept for the owner, so that a low-privilege token cannot take every place and
        shut the owner out."""
        limit = self.config.max_connections
        if identity == self.policy.owner or limit < 2:
            return limit
        return limit - max(1, limit // 16)

    def greeting(self, session: Session) -> None:
        """``session`` is connected and has yet to say CLIENT_HELLO.

        Connections that have not authenticated have a budget of their own (``max_connections``,
        those in their TLS handshake included): past it, the oldest of them is dropped, not the
        newcomer refused.  Idle sockets that never say hello filled the whole limit and kept
        every client with a token out (reopened as the handshake timeout dropped them).  A client
        that says hello at once keeps its place; the oldest silent ones go.
        """
        waiting = self.unauthenticated
        waiting[session] = None
        if len(waiting) + len(self.in_tls_handshake) <= self.config.max_connections:
            return
        oldest = next(iter(waiting))
        if oldest is session:
            return  # only TLS handshakes before it: they end within the handshake timeout
        del waiting[oldest]
        self.log_budget.log(
            log,
            logging.WARNING,
            "dropped before hello",
            "dropped %s: it had not said hello and %d newer connections wait to",
            oldest.peer,
            len(waiting),
        )
        oldest.goodbye(HResult.MQ_ERROR_INSUFFICIENT_RESOURCES, "too many connections waiting to say hello")

    def _forget_failed_tls_handshakes(self) -> None:
        # A handshake ends (done or failed) within ``slow_timeout`` of the accept: one still
        # listed after that failed (asyncio calls no ``connection_made`` for it).
        # asyncio and uvloop log a failed handshake only in debug mode, and without its peer:
        # they are counted here, so that an operator sees clients that cannot connect.
        pending = self.in_tls_handshake
        if pending:
            stale = time.monotonic() - self.config.slow_timeout - 1.0
            failed = [s for s, accepted in pending.items() if accepted < stale]
            for session in failed:
                del pending[session]
            if failed:
                log.warning(
                    "%d TLS handshake%s failed or did not finish within %g s (a client that does not"
                    " trust the certificate, or does not speak TLS)",
                    len(failed),
                    "" if len(failed) == 1 else "s",
                    self.config.slow_timeout,
                )

    @property
    def port(self) -> int:
        """The first bound port."""
        return self.addresses[0][1]

    def run_work(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the work pool without answering anyone (aborts on disconnect)."""
        fut = self.work_pool.submit(fn)
        self._background.add(fut)
        fut.add_done_callback(self._background.discard)

    def _forget_deleted_queues(self, live: dict[str, tuple[int, int]]) -> None:
        # The counters of queues that no longer exist (journals and subqueues of live queues are
        # not in ``live``: they are looked up).
        qm = self.qm
        for name in [n for n in self.stats.queues if n not in live]:
            with qm._lock:
                try:
                    state, subqueue = qm._resolve(name)
                    # A subqueue is gone once it holds nothing and no handle is open on it
                    # (QueueState.forget_empty_subqueues).
                    gone = state.deleted or (subqueue is not None and subqueue not in state.subqueues)
                except MSMQError as exc:
                    gone = exc.hresult == HResult.MQ_ERROR_QUEUE_NOT_FOUND
            if gone:
                self.stats.forget(name)
        self._counters_after_look = len(self.stats.queues)

    def snapshot(self) -> dict[str, Any]:
        """Statistics as a JSON-ready dict (STATS and ``pymsmq stats``)."""
        qm = self.qm
        sizes = queue_sizes(qm)
        self._forget_deleted_queues(sizes)
        snap = self.stats.snapshot(sizes)
        # Queued SENDs written together (send_batcher): sends per batch = sends per store commit.
        snap["send_batches"] = {"batches": self.send_batcher.batches, "sends": self.send_batcher.sends}
        snap["disk_full"] = qm.disk_full
        snap["unreadable_messages"] = qm.unreadable_messages
        snap["machine_quota"] = qm.machine_quota  # KB, None: no limit
        # Recoverable messages received two-phase whose receivers have not acknowledged them yet.
        snap["held"] = sum(s.holds.messages() for s in list(self.sessions))
        snap["event_loop"] = self.event_loop
        return snap

    async def _housekeeping(self) -> None:
        cfg = self.config
        while True:
            await asyncio.sleep(1.0)
            self.stats.sample()
            self._forget_failed_tls_handshakes()
            if len(self.stats.queues) > 2 * self._counters_after_look + COUNTERS_LOOK_MIN:
                # The counters of queues, journals and subqueues that went (deleted queues, one
                # subqueue name per retry) are forgotten by STATS; with no STATS, once they double.
                self._forget_deleted_queues(queue_sizes(self.qm))
            if self.certificates is not None:
                self.certificates.reload_if_changed()
            if cfg.policy_file is not None:
                changed = cfg.policy_file.changed()
                if changed is not None:
                    self.use_policy(changed)
            now = time.monotonic()
            self.log_budget.flush(now)
            for s in list(self.sessions):
                if s.conn.state in _HANDSHAKING and now - s.opened_at > cfg.slow_timeout:
                    self.log_budget.log(
                        log,
                        logging.WARNING,
                        "handshake timeout",
                        "%s did not complete the handshake in time",
                        s.peer,
                    )
                    s.goodbye(HResult.MQ_ERROR_IO_TIMEOUT, "handshake timeout")
                elif s.partial_since is not None and slow_frame(
                    s.partial_since, s.last_activity, s.conn.buffered, now, cfg.slow_timeout
                ):
                    self.log_budget.log(
                        log, logging.WARNING, "slow sender", "%s is too slow sending a frame", s.peer
                    )
                    s.goodbye(HResult.MQ_ERROR_IO_TIMEOUT, "slow sender")
                elif s.conn.in_flight or s.pending:
                    s.busy = True  # a receive may wait for longer than the idle timeout
                elif s.busy:
                    # Answered since the last tick: the idle time counts from now (on or after the
                    # answer), not from the request.
                    s.busy = False
                    s.last_activity = now
                elif (
                    now - s.last_activity > cfg.idle_timeout
                    and s.partial_since is None  # inside a frame: the slow-sender clock's
                    and s.conn.state not in _HANDSHAKING  # before the hello: the handshake clock's
                    and not s.holds_state()  # kept while TCP keepalive finds its peer
                ):
                    self.log_budget.log(
                        log, logging.INFO, "idle timeout", "%s idle for %.0f s", s.peer, now - s.last_activity
                    )
                    s.goodbye(HResult.S_OK, "idle timeout")

    def _unwritten(self) -> bool:
        """Whether a connection the server closed still holds bytes its client has not received:
        in the transport's buffer, or in the kernel's not yet acknowledged by the client (closing
        a socket with bytes unread from it sends a reset, which throws the latter away)."""
        return any(
            transport.get_write_buffer_size() or _unacknowledged(transport)
            for transport, _ in self.lingering.values()
        )

    def keep_closed_work(self, share: PoolShare) -> None:
        """Remember the share of a connection that closed with requests running or waiting (the
        idle ones are forgotten first once there are 256: the set stays bounded)."""
        if len(self.closed_with_work) >= 256:
            self._work_of_closed_connections()
        self.closed_with_work.add(share)

    def _work_of_closed_connections(self) -> bool:
        """Whether requests of connections that closed still run or wait on the work pool."""
        self.closed_with_work = {share for share in self.closed_with_work if share.busy}
        return bool(self.closed_with_work)

    async def shutdown(self) -> None:
        """Stop accepting, finish or roll back in-flight work, say GOODBYE, close the queue manager."""
        if self.closing:
            return
        self.closing = True
        log.info("shutting down")
        if self._server is not None:
            self._server.close()
        if self.metrics is not None:  # (a scrape would take a snapshot of a closing queue manager)
            await self.loop.run_in_executor(None, self.metrics.close)
        if self._housekeeper is not None:
            self._housekeeper.cancel()
        # Receives parked on a notification are answered now, and those being tried on the work
        # pool are stopped: both MQ_ERROR_OPERATION_CANCELLED (docs/protocol.md 11).  Closing the
        # handles then wakes whatever still waits; the work still queued on them
        # (sends read before the shutdown) is answered MQ_ERROR_SERVICE_NOT_AVAILABLE, as a request
        # read during it is (it was MQ_ERROR_INVALID_HANDLE: "not open on this connection").
        stop = MSMQError("the server is shutting down", HResult.MQ_ERROR_OPERATION_CANCELLED)
        gone = MSMQError("the server is shutting down", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
        for s in list(self.sessions):
            for wait in list(s.waits):
                wait.abandon(stop)
            for cancel in s.cancels.take_all():
                cancel()
            s._flush()
            for h in s.handles.values():
                h.queue.close_with(gone)
        deadline = time.monotonic() + self.config.shutdown_grace
        while (
            any(s.pending for s in self.sessions) or self._work_of_closed_connections()
        ) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await self.send_batcher.flush()  # every send taken in is written (and answered if possible)
        for s in list(self.sessions):
            s.goodbye(HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, "the server is shutting down")
        # Clients slow to read what was written to them have what is left of the grace (not
        # LINGER_SECONDS: those the shutdown closed have no timer).
        while (self._background or self._unwritten()) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        # Then every closed connection's client has received what it was sent (but past the
        # deadline): closed, what a transport still holds past the deadline dropped (an abort is a
        # close when its buffer is empty).
        for transport, timer in list(self.lingering.values()):
            timer.cancel()
            transport.abort()
        await asyncio.sleep(0)  # (their sockets close in the loop's next turn)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
        # Past the grace, the calls not started are refused, not run (outside QA: a thousand clients
        # that pipelined work and went away held a stop for 23 s and more); those running end.
        self.work_pool.drop_queued(gone)
        self.work_pool.shutdown(wait=True)
        self.send_batcher.shutdown()
        self.qm.close()
        logging.getLogger("asyncio").removeFilter(self._accept_errors)
        log.info("stopped")


class _BudgetedAcceptErrors(logging.Filter):
    """A filter for asyncio's logger: its accept failures within the server's ``LogBudget``."""

    def __init__(self, budget: LogBudget) -> None:
        super().__init__()
        self.budget = budget

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("socket.accept() out of system resource"):
            return True
        return self.budget.allow("accept out of system resources", time.monotonic())


#: Descriptors kept free beyond the connections: the store, the listening sockets, the metrics
#: endpoint, logs, the event loop's own.
SPARE_DESCRIPTORS: Final = 64


def _unacknowledged(transport: asyncio.Transport) -> int:
    """Bytes written to ``transport``'s socket that its peer has not acknowledged yet (Linux's
    SIOCOUTQ); 0 where that cannot be asked."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    out = array.array("i", [0])
    try:
        fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, out)
    except (OSError, ValueError, AttributeError):
        return 0
    return out[0]


def fit_descriptors(max_connections: int) -> int | None:
    """Make room for the connections: raise the soft limit of open files (``ulimit -n``) toward what
    ``max_connections`` needs (twice it: as many may be waiting to say hello as have said it, and
    ``SPARE_DESCRIPTORS``), up to the hard limit.  Returns the connections the server may hold at
    once when that is fewer (it refuses the next with MQ_ERROR_INSUFFICIENT_RESOURCES, warned about
    here); None when there is room.  Past the limit, accepts failed: uvloop closed new clients
    with nothing logged and the metrics endpoint spun a CPU, asyncio logged a traceback per try
    (outside QA: 27 MB of log in 8 s)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return None
    needed = 2 * max_connections + SPARE_DESCRIPTORS
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    raised = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
    if raised > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (OSError, ValueError):
            pass
    if soft >= needed:
        return None
    cap = max(1, soft - SPARE_DESCRIPTORS)
    log.warning(
        "this process may open %d files (ulimit -n, hard limit %s), fewer than --max-connections %d"
        " needs (%d): at most %d connections at once (the next are refused); raise the limit or lower"
        " --max-connections",
        soft,
        "unlimited" if hard == resource.RLIM_INFINITY else hard,
        max_connections,
        needed,
        cap,
    )
    return cap


@contextlib.contextmanager
def server_gc() -> Iterator[None]:
    """Within the block, the process collects cyclic garbage at ``SERVER_GC_THRESHOLDS``; restored after."""
    old = gc.get_threshold()
    gc.set_threshold(*SERVER_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def run(
    data: str,
    config: ServerConfig,
    out: TextIO | None = None,
    ready: Callable[[Server], None] | None = None,
    machine_quota: int | None = None,
) -> int:
    """Serve the queue manager stored in ``data`` until SIGTERM/SIGINT/SIGHUP; 0 after a clean shutdown.

    ``machine_quota``: ``QueueManager.open``'s (KB, kept in the store; None: as stored).
    """
    config.validate()
    out = out if out is not None else sys.stdout

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # SIGHUP too: the terminal that started the server closed (it killed the server without
        # its graceful shutdown: open transactions not aborted, the store not closed).  Before the
        # store is opened: a stop asked while a large store opens (seconds) is a clean stop once
        # it is open (outside QA: the default disposition killed the process, exit 143, no log).
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        qm = QueueManager.open(data, machine_quota=machine_quota)
        try:
            server = Server(qm, config)
            server.session_cap = fit_descriptors(config.max_connections)
            await server.start()
        except BaseException:
            qm.close()
            raise
        ports = " ".join(f"client={h}:{p}" for h, p in server.addresses[:1])
        print(f"pymsmq: listening {ports}", file=out, flush=True)
        if server.metrics is not None:
            host, port = server.metrics.address
            print(
                f"pymsmq: metrics http://{_authority(host, port)}/metrics",
                file=out,
                flush=True,
            )
        if server.addresses:
            host, port = server.addresses[0]
            scheme = "msmq" if config.tls_cert is None else "msmqs"  # msmqs://: TLS (docs/protocol.md)
            url = f"{scheme}://{_authority(host, port)}"
            print(
                f"pymsmq: connect with pymsmq.connect({url!r}) or `pymsmq queue list --url {url}`;"
                " Ctrl-C stops the server",
                file=out,
                flush=True,
            )
        if ready is not None:
            ready(server)
        await stop.wait()
        await server.shutdown()
        return 0

    with server_gc(), asyncio.Runner(loop_factory=loop_factory(config.event_loop)) as runner:
        return runner.run(main())
