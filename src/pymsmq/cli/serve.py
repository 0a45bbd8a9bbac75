"""``pymsmq serve``: run one queue manager on the embedded SQLite store and serve the client protocol."""

from __future__ import annotations

import logging
import os
import sys

import click

from pymsmq.cli._common import MSMQFailure, bad_data_directory, error_line
from pymsmq.cli.queues import QUOTA
from pymsmq.errors import MSMQError
from pymsmq.qm.store import DEFAULT_DB_NAME
from pymsmq.qm.store.file_modes import make_private_dir
from pymsmq.server import (
    DEFAULT_PORT,
    DURABLE_WRITES,
    EVENT_LOOPS,
    AccessPolicy,
    ConfigError,
    DurableWrites,
    EventLoop,
    PolicyFile,
    ServerConfig,
    run,
)

__all__ = ["serve"]

log = logging.getLogger("pymsmq.server")


@click.command("serve")
@click.option(
    "--data", "data", required=True, type=click.Path(file_okay=False), help="Queue manager directory."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    default=DEFAULT_PORT,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="0 = any free port.",
)
@click.option(
    "--token", envvar="PYMSMQ_TOKEN", default=None, help="Token clients must present (env PYMSMQ_TOKEN)."
)
@click.option(
    "--auth",
    "auth_file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="JSON policy: tokens -> identities, identities -> per-queue rights.  Read again when it "
    "changes (a revoked token's connections are closed; a bad file is logged and not used).",
)
@click.option(
    "--tls-cert",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="TLS certificate (PEM); loaded again when it or the key changes (renewals need no restart).",
)
@click.option(
    "--tls-key", type=click.Path(dir_okay=False, exists=True), default=None, help="TLS private key (PEM)."
)
@click.option(
    "--machine-quota",
    type=QUOTA,
    default=None,
    help="Limit the message storage (every queue and journal) to this many KB, or 'infinite'.  Kept in "
    "the store: later starts without it keep the limit (none at first).",
)
@click.option("--max-connections", default=1024, show_default=True, type=click.IntRange(1))
@click.option(
    "--max-failed-logins",
    default=20,
    show_default=True,
    type=click.IntRange(0),
    help="Bad tokens one client address may present in a minute; then it is refused for the rest of "
    "that minute, whatever token it presents (0: no limit).",
)
@click.option(
    "--idle-timeout",
    default=300.0,
    show_default=True,
    type=click.FloatRange(0.1),
    help="Seconds a silent connection that holds nothing (no queue handle, cursor, transaction) is kept.",
)
@click.option(
    "--durable-writes",
    default="auto",
    show_default=True,
    type=click.Choice(sorted(DURABLE_WRITES)),
    help="Where recoverable sends are written: auto (on the event loop while only they arrive, on a "
    "thread while other requests do), loop (always on the loop) or thread (always on a thread).",
)
@click.option(
    "--event-loop",
    default="auto",
    show_default=True,
    type=click.Choice(list(EVENT_LOOPS)),
    help="auto: uvloop when installed (pip install 'pymsmq[server]'), else asyncio's loop; uvloop: "
    "uvloop or refuse to start; asyncio: asyncio's loop.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve GET /metrics (Prometheus text: per-queue messages, bytes and traffic, connection and "
    "request totals) on this port (0 = any free port).  Plain HTTP, no authentication.",
)
@click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    help="Address the metrics endpoint binds (every queue's name and counts are visible there).",
)
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
)
def serve(
    data: str,
    host: str,
    port: int,
    token: str | None,
    auth_file: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    machine_quota: int | None,
    max_connections: int,
    max_failed_logins: int,
    idle_timeout: float,
    durable_writes: DurableWrites,
    event_loop: EventLoop,
    metrics_port: int | None,
    metrics_host: str,
    log_level: str,
) -> None:
    """Run a queue manager server on DIR's store (client protocol, docs/protocol.md).

    Prints one line "pymsmq: listening client=HOST:PORT" once bound (and, with --metrics-port,
    "pymsmq: metrics http://HOST:PORT/metrics"); stops cleanly (exit 0) on SIGTERM, Ctrl-C or
    SIGHUP.  Binding beyond loopback requires --token or --auth.

    \b
    Example:
      pymsmq serve --data ./qm --port 2103 --metrics-port 9103
      python -c "import pymsmq.client as c; print(c.connect('msmq://127.0.0.1:2103').private_queues)"
      curl -s http://127.0.0.1:9103/metrics | grep pymsmq_queue_messages
    """
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")  # exit 2, as a bad option
    logging.basicConfig(
        level=getattr(logging, log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    policy_file = None if auth_file is None else PolicyFile(auth_file, token)
    try:
        policy = AccessPolicy.single_token(token) if policy_file is None else policy_file.load()
    except (OSError, ValueError) as exc:
        what = "--token" if policy_file is None else "--auth file"
        raise click.ClickException(f"bad {what}: {exc}") from None
    config = ServerConfig(
        policy_file=policy_file,
        host=host,
        port=port,
        policy=policy,
        tls_cert=tls_cert,
        tls_key=tls_key,
        max_connections=max_connections,
        max_failed_logins=max_failed_logins,
        idle_timeout=idle_timeout,
        durable_writes=durable_writes,
        event_loop=event_loop,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
    )
    try:
        make_private_dir(data)  # (every identity's messages: the owner's alone)
    except OSError as exc:
        raise bad_data_directory(data, exc) from None
    _warn_if_others_may_read(data)
    try:
        config.validate()
        code = run(data, config, machine_quota=machine_quota)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    except MSMQError as exc:  # the store: in use by another queue manager, unreadable, ...
        raise MSMQFailure(error_line(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc}") from None
    sys.exit(code)


def _warn_if_others_may_read(data: str) -> None:
    """Warn when the store in ``data`` (made before stores were made 600) may be read by other
    users: it holds every identity's messages, which the server's permissions protect on the wire."""
    db = os.path.join(data, DEFAULT_DB_NAME)
    for path in (db, db + "-wal", db + ".packets"):  # (the packets directory: big messages' files)
        try:
            mode = os.stat(path).st_mode & 0o777
        except OSError:
            continue
        if mode & 0o044:
            logging.getLogger("pymsmq.server").warning(
                "%s may be read by other users (mode %o): it holds every identity's messages; chmod %s it",
                path,
                mode,
                "-R go-rwx" if os.path.isdir(path) else "600",
            )
