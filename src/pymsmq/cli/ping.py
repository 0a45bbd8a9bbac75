"""``pymsmq ping``: does a server answer (a liveness probe for systemd, Kubernetes, monitoring)?"""

from __future__ import annotations

import time
from typing import Any

import click

from pymsmq.cli._common import EXIT_CODES_HELP, MSMQFailure, connect_url, emit_json, error_line, msmq_command
from pymsmq.errors import MSMQError

__all__ = ["ping"]


@click.command(epilog=EXIT_CODES_HELP)
@click.option(
    "--url",
    required=True,
    metavar="msmq://HOST:PORT",
    envvar="PYMSMQ_URL",
    help="The server (env PYMSMQ_URL).",
)
@click.option("--token", envvar="PYMSMQ_TOKEN", help="Token for the server (env PYMSMQ_TOKEN).")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="Seconds for the connection, the handshake and the answer.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@msmq_command
def ping(url: str, token: str | None, timeout: float, as_json: bool) -> None:
    """Connect to the server at --url, say hello (the token checked) and PING it: exit 0 when it
    answers, 1 when it does not (unreachable, refused, too slow), 2 for a bad URL.

    \b
    Example:
      pymsmq ping --url msmq://127.0.0.1:2103
      pymsmq ping --url msmqs://mq.example.com:2103 --timeout 2 --json
    """
    import pymsmq.client  # noqa: F401 - imported before the clock starts: the connect alone is timed

    started = time.perf_counter()
    try:
        client: Any = connect_url(url, token, timeout)  # a RemoteQueueManager
        try:
            connected = time.perf_counter()
            client.ping(b"pymsmq ping")
            answered = time.perf_counter()
            hello = client._t.server_hello
            facts = {
                "url": url,
                "machine_name": client.machine_name,
                "guid": str(client.guid),
                "protocol_version": hello.version,
                "connect_ms": round((connected - started) * 1000, 3),
                "round_trip_ms": round((answered - connected) * 1000, 3),
            }
        finally:
            client.close()
    except MSMQError as exc:  # a timeout here is the server's silence, not "no message" (exit 3)
        raise MSMQFailure(f"ping {url}: {error_line(exc)}") from exc
    if as_json:
        emit_json(facts)
    else:
        click.echo(
            f"pymsmq: {url} answered in {facts['round_trip_ms']} ms (connected in {facts['connect_ms']} ms;"
            f" machine {facts['machine_name']}, protocol version {facts['protocol_version']})"
        )
