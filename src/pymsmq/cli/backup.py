"""``pymsmq backup`` and ``pymsmq restore``: a copy of a queue manager's store, taken while it
works, and putting one back (``pymsmq.qm.store.backup``; docs/lifecycle.md, "Backup and restore");
``pymsmq salvage``: what can still be read of a damaged store, copied into a new one
(``pymsmq.qm.store.salvage``; docs/lifecycle.md, "A damaged store")."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import click

from pymsmq.cli._common import (
    EXIT_CODES_HELP,
    EXIT_DAMAGED,
    BadInput,
    MSMQFailure,
    error_line,
    msmq_command,
)
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.store.backup import StoreSummary
from pymsmq.qm.store.backup import backup as backup_store
from pymsmq.qm.store.backup import restore as restore_store
from pymsmq.qm.store.salvage import SalvageSummary
from pymsmq.qm.store.salvage import salvage as salvage_store

__all__ = ["backup", "restore", "salvage"]

_Done = TypeVar("_Done", StoreSummary, SalvageSummary)

_DATA_HELP = "The queue manager's directory (the store: pymsmq.db and pymsmq.db.packets/)."


def _held(summary: StoreSummary) -> str:
    messages = "message" if summary.messages == 1 else "messages"
    return f"{summary.messages} {messages} in {summary.queues} queues ({summary.bytes / 1e6:.1f} MB)"


def _report_damage(summary: StoreSummary) -> None:
    # Damaged messages do not stop a backup or a restore (the store is whole; its queue manager
    # serves the rest): they are named on stderr, and the exit code is EXIT_DAMAGED.
    if not summary.damaged:
        return
    for found in summary.damage:
        click.echo(f"pymsmq: damaged: {found}", err=True)
    more = summary.damaged - len(summary.damage)
    click.echo(
        f"pymsmq: {summary.damaged} message(s) damaged on disk"
        + (f" ({more} more not named)" if more else "")
        + ": copied as they are; a queue manager leaves them in the store and does not deliver"
        " them (a purge of their queue removes them)",
        err=True,
    )
    raise SystemExit(EXIT_DAMAGED)


def _run_store_operation(what: str, operation: Callable[[], _Done]) -> _Done:
    # A path that is not what it should be: bad input (exit 2); a store or disk failure: exit 1.
    try:
        return operation()
    except MSMQError as exc:
        if exc.hresult == HResult.MQ_ERROR_INVALID_PARAMETER:
            raise BadInput(error_line(exc)) from exc
        raise
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise MSMQFailure(f"{what} failed: {exc.strerror or exc}{where}") from exc


@click.command(epilog=EXIT_CODES_HELP)
@click.option("--data", required=True, envvar="PYMSMQ_DATA", metavar="DIR", help=_DATA_HELP)
@click.argument("destination", type=click.Path(file_okay=False))
@msmq_command
def backup(data: str, destination: str) -> None:
    """Copy the store in --data DIR into DESTINATION, a new (or empty) directory, while a queue
    manager or `pymsmq serve` works on it.

    The copy is the store as a crash at one instant would have left it: every committed message
    (big ones' files included), queue, lookup id and the machine's identity, nothing half done.
    Every packet is compared with its CRC-32: messages damaged on disk are named and the exit
    code is 4.  Serve it as it is (--data DESTINATION) or put it back with `pymsmq restore`.
    Run it on the machine that holds the store (a server's --url cannot be backed up from afar).

    \b
    Example:
      pymsmq backup --data ./qm ./qm-backup-$(date +%Y%m%d)
      pymsmq restore ./qm-backup-20261127 --data ./qm --replace
    """
    summary = _run_store_operation("backup", lambda: backup_store(data, destination))
    click.echo(f"pymsmq: backed up {_held(summary)} from {data} to {destination}")
    _report_damage(summary)


@click.command(epilog=EXIT_CODES_HELP)
@click.option("--data", required=True, envvar="PYMSMQ_DATA", metavar="DIR", help=_DATA_HELP)
@click.option("--replace", is_flag=True, help="Replace the store DIR holds (its messages are lost).")
@click.argument("backup_dir", metavar="BACKUP", type=click.Path(file_okay=False, exists=True))
@msmq_command
def restore(data: str, replace: bool, backup_dir: str) -> None:
    """Make the store in --data DIR a copy of BACKUP (made by `pymsmq backup`).

    The queue manager of DIR must be stopped (refused while one holds it); a DIR that holds a
    store needs --replace.  BACKUP is checked first (SQLite's quick_check, every big message's
    file, every packet against its CRC-32: damaged messages are named, exit code 4) and left as
    it is.

    \b
    Example:
      pymsmq restore ./qm-backup-20261127 --data ./qm --replace
      pymsmq serve --data ./qm
    """
    if os.path.exists(data) and not os.path.isdir(data):
        raise BadInput(f"cannot restore into {data}: it is not a directory")
    summary = _run_store_operation("restore", lambda: restore_store(backup_dir, data, replace))
    click.echo(f"pymsmq: restored {_held(summary)} from {backup_dir} into {data}")
    _report_damage(summary)


@click.command(epilog=EXIT_CODES_HELP)
@click.option("--data", required=True, envvar="PYMSMQ_DATA", metavar="DIR", help=_DATA_HELP)
@click.argument("destination", type=click.Path(file_okay=False))
@msmq_command
def salvage(data: str, destination: str) -> None:
    """Copy what can still be read of the damaged store in --data DIR into a new store DESTINATION.

    For a store whose database SQLite reports damaged ("database disk image is malformed"), when
    no backup holds its messages.  Every queue and message SQLite can still read, whole (each
    packet checked against its CRC-32), is copied; DIR is left as it is, and its queue manager must
    be stopped.  What was left behind is named and counted, exit code 4; DESTINATION is a store:
    serve it, or put it in DIR's place with `pymsmq restore --replace`.

    \b
    Example:
      pymsmq salvage --data ./qm ./qm-salvaged
      pymsmq restore ./qm-salvaged --data ./qm --replace
    """
    summary = _run_store_operation("salvage", lambda: salvage_store(data, destination))
    messages = "message" if summary.messages == 1 else "messages"
    click.echo(
        f"pymsmq: salvaged {summary.messages} {messages} in {summary.queues} queues from {data} "
        f"into {destination}"
    )
    _report_losses(summary)


def _report_losses(summary: SalvageSummary) -> None:
    # What salvage left behind: named on stderr (the first LOSS_SHOWN), exit code EXIT_DAMAGED.
    if not summary.losses:  # (every loss is described, the first LOSS_SHOWN of them)
        return
    for loss in summary.losses:
        click.echo(f"pymsmq: left behind: {loss}", err=True)
    click.echo(
        f"pymsmq: {summary.unreadable_ranges} damaged range(s) of rows could not be read; "
        f"{summary.queues_left} queue(s) and {summary.messages_left} message(s) read were not whole "
        "and were not copied"
        + ("" if summary.identity_kept else "; the new store has a new machine identity (GUID)"),
        err=True,
    )
    raise SystemExit(EXIT_DAMAGED)
