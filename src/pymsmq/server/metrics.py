"""The server's statistics for Prometheus: ``GET /metrics`` on ``pymsmq serve --metrics-port``.

The counters are the ones STATS and ``pymsmq stats`` report (``Server.snapshot``): per queue the
messages and bytes in it and what went through this server, and the server's connection, request
and byte totals.  prometheus_client formats them and serves HTTP on a thread of its own; each
scrape takes its snapshot on the event loop (where the counters live), so a scrape never reads them
halfway through a change.

The endpoint is plain HTTP with no authentication: it binds 127.0.0.1 unless ``--metrics-host``
says otherwise, and it names every queue of the server (its format name and path name) to whoever
can reach it.  prometheus_client's server has no timeout and a thread per connection: here a
connection silent for ``REQUEST_TIMEOUT`` seconds is closed, and at most ``MAX_CONNECTIONS`` are
served at once (a client sending a byte now and then held a thread for as long as it liked).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib.util
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.metrics_core import Metric

__all__ = ["MetricsEndpoint", "available", "metric_families"]

log = logging.getLogger("pymsmq.server")

#: Seconds a scrape waits for the event loop to take the snapshot.
_SNAPSHOT_TIMEOUT: Final = 10.0
#: Seconds a metrics connection may stay silent.
REQUEST_TIMEOUT: Final = 10.0
#: Metrics connections served at once; another is closed as it is accepted (each takes a thread of
#: prometheus_client's server, and a client that sends a byte now and then keeps its own).
MAX_CONNECTIONS: Final = 16

#: Per-queue counters of ``ServerStats.snapshot``: (key, metric name, help).
_QUEUE_COUNTERS: Final = (
    (
        "sent",
        "pymsmq_queue_sent_messages",
        "Messages sent to the queue through this server since it started.",
    ),
    ("received", "pymsmq_queue_received_messages", "Messages received from the queue through this server."),
    ("peeked", "pymsmq_queue_peeked_messages", "Messages peeked at in the queue through this server."),
    (
        "moved",
        "pymsmq_queue_moved_messages",
        "Messages moved between the queue and its subqueues through this server.",
    ),
    (
        "bytes_in",
        "pymsmq_queue_sent_bytes",
        "Body bytes of the messages sent to the queue through this server.",
    ),
    ("bytes_out", "pymsmq_queue_received_bytes", "Body bytes of the messages received from the queue."),
)
_QUEUE_GAUGES: Final = (
    ("messages", "pymsmq_queue_messages", "Messages in the queue (PROPID_MGMT_QUEUE_MESSAGE_COUNT)."),
    ("bytes", "pymsmq_queue_bytes", "Message bytes in the queue and its subqueues (what its quota counts)."),
)
#: Server totals: (path in the snapshot, metric name, help, counter?).
_SERVER: Final = (
    (("connections", "open"), "pymsmq_connections_open", "Client connections open.", False),
    (("connections", "total"), "pymsmq_connections", "Client connections accepted since start.", True),
    (("connections", "refused"), "pymsmq_connections_refused", "Client connections refused.", True),
    (
        ("connections", "protocol_errors"),
        "pymsmq_protocol_errors",
        "Connections closed for a protocol error.",
        True,
    ),
    (("requests",), "pymsmq_requests", "Requests answered.", True),
    (("errors",), "pymsmq_request_errors", "Requests answered with an error.", True),
    (("bytes_in",), "pymsmq_received_bytes", "Bytes read from clients.", True),
    (("bytes_out",), "pymsmq_sent_bytes", "Bytes written to clients.", True),
    (("send_batches", "batches"), "pymsmq_send_batches", "Store writes of queued recoverable sends.", True),
    (("send_batches", "sends"), "pymsmq_send_batch_sends", "Recoverable sends in those writes.", True),
    (
        ("held",),
        "pymsmq_held_messages",
        "Messages received two-phase, not yet acknowledged by their receivers.",
        False,
    ),
    (
        ("unreadable_messages",),
        "pymsmq_unreadable_messages",
        "Stored messages not loaded at start (a packet damaged on disk, a big message's file missing).",
        False,
    ),
    (("uptime_s",), "pymsmq_uptime_seconds", "Seconds since the server started.", False),
)


def available() -> bool:
    """Whether prometheus_client is installed (the ``server`` extra)."""
    return importlib.util.find_spec("prometheus_client") is not None


def metric_families(snapshot: dict[str, Any], paths: dict[str, str]) -> list[Metric]:
    """The Prometheus metric families of ``snapshot`` (``Server.snapshot``); ``paths`` maps a queue's
    format name to its path name.  Pure: no I/O."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    out: list[Metric] = []
    for keys, name, text, counter in _SERVER:
        value: Any = snapshot
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            family = CounterMetricFamily if counter else GaugeMetricFamily
            out.append(family(name, text, value=value))
    out.append(
        GaugeMetricFamily(
            "pymsmq_disk_full",
            "1 while the store refuses new messages for lack of disk.",
            value=int(bool(snapshot.get("disk_full"))),
        )
    )
    quota = snapshot.get("machine_quota")
    if isinstance(quota, int) and not isinstance(quota, bool):
        out.append(
            GaugeMetricFamily(
                "pymsmq_machine_quota_bytes", "The machine quota (none: no limit).", value=quota * 1024
            )
        )
    queues: dict[str, dict[str, Any]] = snapshot.get("queues", {})
    labels = ["format_name", "path_name"]
    for key, name, text in _QUEUE_GAUGES:
        gauge = GaugeMetricFamily(name, text, labels=labels)
        for queue, values in queues.items():
            if key in values:
                gauge.add_metric([queue, paths.get(queue, "")], values[key])
        out.append(gauge)
    for key, name, text in _QUEUE_COUNTERS:
        counter_family = CounterMetricFamily(name, text, labels=labels)
        for queue, values in queues.items():
            counter_family.add_metric([queue, paths.get(queue, "")], values.get(key, 0))
        out.append(counter_family)
    return out


class _Collector:
    """A prometheus_client collector whose ``collect`` (on the HTTP thread) has the event loop take
    the snapshot."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, take: Callable[[], tuple[dict[str, Any], dict[str, str]]]
    ) -> None:
        self._loop = loop
        self._take = take

    async def _snapshot(self) -> tuple[dict[str, Any], dict[str, str]]:
        return self._take()

    def collect(self) -> Iterator[Metric]:
        future = asyncio.run_coroutine_threadsafe(self._snapshot(), self._loop)
        snapshot, paths = future.result(_SNAPSHOT_TIMEOUT)
        yield from metric_families(snapshot, paths)


class MetricsEndpoint:
    """``GET /metrics`` (Prometheus text format) on ``host:port`` over plain HTTP, served by
    prometheus_client's HTTP server thread; ``close()`` stops it."""

    def __init__(
        self,
        host: str,
        port: int,
        loop: asyncio.AbstractEventLoop,
        take: Callable[[], tuple[dict[str, Any], dict[str, str]]],
        request_timeout: float = REQUEST_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        from prometheus_client import CollectorRegistry, start_http_server

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(loop, take))
        self._httpd: WSGIServer
        self._httpd, self._thread = start_http_server(port, addr=host, registry=registry)
        self._deadlines: dict[Any, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        httpd: Any = self._httpd
        self._limit_connections(httpd, request_timeout, max_connections)
        httpd.set_app(_metrics_path_only(httpd.get_app()))
        #: The bound (host, port).
        self.address: tuple[str, int] = self._httpd.server_address[:2]  # type: ignore[assignment]
        self._watchdog = threading.Thread(
            target=self._expire_slow, name="pymsmq-metrics-deadlines", daemon=True
        )
        self._watchdog.start()

    def _limit_connections(self, httpd: Any, request_timeout: float, max_connections: int) -> None:
        # Each connection's socket times out (socketserver.StreamRequestHandler.timeout), at most
        # ``max_connections`` are served at once (socketserver.ThreadingMixIn starts a thread for
        # each), and none longer than ``request_timeout`` in all (``_expire_slow``): one byte now
        # and then no longer keeps a connection.
        handler: Any = httpd.RequestHandlerClass
        httpd.RequestHandlerClass = type("TimedHandler", (handler,), {"timeout": request_timeout})
        slots = threading.BoundedSemaphore(max_connections)
        start_thread = httpd.process_request
        serve_one = httpd.process_request_thread

        def process_request(request: Any, client_address: Any) -> None:
            if not slots.acquire(blocking=False):
                httpd.shutdown_request(request)
                return
            with self._lock:
                self._deadlines[request] = time.monotonic() + request_timeout
            try:
                start_thread(request, client_address)
            except BaseException:
                with self._lock:
                    self._deadlines.pop(request, None)
                slots.release()
                raise

        def process_request_thread(request: Any, client_address: Any) -> None:
            try:
                serve_one(request, client_address)
            finally:
                with self._lock:
                    self._deadlines.pop(request, None)
                slots.release()

        httpd.process_request = process_request
        httpd.process_request_thread = process_request_thread
        accept = httpd.get_request

        def get_request() -> Any:
            # Out of files (EMFILE, ENFILE): socketserver tried again at once, a CPU spinning as
            # long as a connection waited in the backlog (outside QA); a tenth of a second first.
            try:
                return accept()
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    time.sleep(0.1)
                raise

        def handle_error(request: Any, client_address: Any) -> None:
            # A connection that timed out or went away printed a traceback on stderr, one per
            # silent connection, past the log's budget (outside QA): a line at DEBUG.
            log.debug("metrics connection from %s ended: %s", client_address, sys.exc_info()[1])

        httpd.get_request = get_request
        httpd.handle_error = handle_error

    def _expire_slow(self) -> None:
        # Cut the connections past their deadline (their handler's read or write then ends).
        while not self._stop.wait(0.25):
            now = time.monotonic()
            with self._lock:
                late = [request for request, deadline in self._deadlines.items() if deadline <= now]
                for request in late:
                    del self._deadlines[request]
            for request in late:
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Stop serving and close the socket (blocks until the serving thread has stopped)."""
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def _metrics_path_only(app: Any) -> Any:
    """The WSGI ``app`` for GET /metrics only; other paths get 404 (prometheus_client's app
    answers the metrics on any path)."""

    def metrics_only(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO", "") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"pymsmq: the metrics are at /metrics\n"]
        return app(environ, start_response)

    return metrics_only
