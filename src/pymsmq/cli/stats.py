"""``pymsmq stats``: message and byte counts per queue, totals, and (with --interval) rates."""

from __future__ import annotations

import time
from typing import Any

import click

from pymsmq.cli._common import EXIT_CODES_HELP, Target, emit_json, msmq_command, print_table, target_options
from pymsmq.cli.queues import queue_rows

__all__ = ["stats"]

_KINDS = ("private", "public", "system")


def _sample(target: Target) -> dict[str, Any]:
    qm = target.qm
    rows = queue_rows(qm, _KINDS)
    total_bytes = getattr(qm, "total_bytes", None)
    if not isinstance(total_bytes, int):
        known = [r["bytes"] for r in rows if isinstance(r["bytes"], int)]
        total_bytes = sum(known) if len(known) == len(rows) else None
    server: Any = None
    stats_call = getattr(qm, "server_stats", None)
    if callable(stats_call):
        server = stats_call()
    sample: dict[str, Any] = {
        "queue_manager": target.url or target.data,
        "machine_name": getattr(qm, "machine_name", None),
        "guid": str(getattr(qm, "guid", "")) or None,
        "queues": len([r for r in rows if not r["kind"].startswith("system")]),
        "messages": sum(r["messages"] for r in rows),
        # The journals' messages beside the queues' (the total bytes count both, as the machine
        # quota does: "messages: 0  bytes: 5" read as 5 bytes of nothing, outside QA).
        "journal_messages": sum(r.get("journal_messages", 0) for r in rows),
        "bytes": total_bytes,
        "per_queue": [
            {
                "path_name": r["path_name"],
                "messages": r["messages"],
                "bytes": r["bytes"],
                "journal_messages": r.get("journal_messages", 0),
            }
            for r in rows
        ],
    }
    if isinstance(server, dict):
        raw = server.get("queues")
        per_format: dict[str, Any] = raw if isinstance(raw, dict) else {}
        for q, row in zip(sample["per_queue"], rows, strict=True):
            counters = per_format.get(row["format_name"])
            if isinstance(counters, dict):
                q["sent"] = counters.get("sent", 0)
                q["received"] = counters.get("received", 0)
        sample["server"] = {k: v for k, v in server.items() if k != "queues"}
    return sample


@click.command(epilog=EXIT_CODES_HELP)
@click.option(
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Sample twice, this many seconds apart, and add the net rate (messages/s) per queue.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@target_options
@msmq_command
def stats(target: Target, interval: float | None, as_json: bool) -> None:
    """Show messages and bytes per queue (system queues and journals included) and the totals.

    \b
    Example:
      pymsmq stats --data ./qm
      pymsmq stats --url msmq://127.0.0.1:2103 --interval 5 --json
    """
    sample = _sample(target)
    if interval is not None:
        time.sleep(interval)
        later = _sample(target)
        before = {q["path_name"]: q["messages"] for q in sample["per_queue"]}
        for q in later["per_queue"]:
            q["rate"] = round((q["messages"] - before.get(q["path_name"], 0)) / interval, 3)
        sample = later
    if as_json:
        emit_json(sample)
        return
    click.echo(f"queue manager: {sample['queue_manager']} ({sample['machine_name']})")
    total_bytes = "?" if sample["bytes"] is None else sample["bytes"]
    click.echo(
        f"queues: {sample['queues']}  messages: {sample['messages']}  journal messages: "
        f"{sample['journal_messages']}  bytes: {total_bytes} (journals included)"
    )
    server = sample.get("server")
    if server:
        conns = server.get("connections", {})
        rates = server.get("rates", {})
        click.echo(
            f"server: up {server.get('uptime_s')} s  connections: {conns.get('open')} open, "
            f"{conns.get('total')} total  requests: {server.get('requests')}  "
            f"rates/s: sent {rates.get('sent_per_s')}, received {rates.get('received_per_s')}"
        )
        if server.get("event_loop"):
            click.echo(f"event loop: {server['event_loop']}")
        if server.get("disk_full"):
            click.echo("store: the disk is full: recoverable sends are refused, receives go on")
        if server.get("unreadable_messages"):
            click.echo(
                f"store: {server['unreadable_messages']} stored message(s) could not be read at start "
                "(damaged on disk, or a big message's file missing; named in the server's log): not "
                "delivered, a purge of their queue deletes them"
            )
        if server.get("held"):
            click.echo(f"held: {server['held']} received messages wait for their receivers' acknowledgement")
    click.echo("")
    headers: tuple[str, ...] = ("QUEUE", "MESSAGES", "BYTES", "JOURNAL")
    if interval is not None:
        headers += ("RATE/S",)
    rows = []
    for q in sample["per_queue"]:
        row: list[object] = [
            q["path_name"],
            q["messages"],
            "?" if q["bytes"] is None else q["bytes"],
            q["journal_messages"],
        ]
        if interval is not None:
            row.append(f"{q['rate']:+.1f}")
        rows.append(row)
    print_table(headers, rows)
