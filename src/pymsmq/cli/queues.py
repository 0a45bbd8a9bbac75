"""``pymsmq queue create|set|delete|list|info|purge``: queue administration."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Final

import click

from pymsmq.cli._common import (
    EXIT_CODES_HELP,
    BadInput,
    Target,
    emit_json,
    msmq_command,
    print_table,
    printable,
    progress,
    target_options,
)
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE

if TYPE_CHECKING:
    from pymsmq.model.queue_statistics import QueueStatistics
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager

    _IntType = click.ParamType[int]
    _GuidType = click.ParamType[uuid.UUID]
else:
    _IntType = _GuidType = click.ParamType

__all__ = ["queue", "queue_bytes", "queue_rows", "server_queue_stats"]

_PRIV_LEVELS: Final = {"none": 0, "optional": 1, "body": 2}


class _Quota(_IntType):
    """Kilobytes, or ``infinite``."""

    name = "KB"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text in ("infinite", "inf", "unlimited"):
            return INFINITE
        try:
            number = int(text, 0)
        except ValueError:
            self.fail(f"{value!r} is not a number of kilobytes or 'infinite'", param, ctx)
        if not 0 <= number <= INFINITE:
            self.fail(f"{value!r} is out of range (0..4294967295)", param, ctx)
        return number


class _Guid(_GuidType):
    name = "GUID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> uuid.UUID:
        if isinstance(value, uuid.UUID):
            return value
        try:
            return uuid.UUID(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a GUID", param, ctx)


QUOTA: Final = _Quota()
GUID: Final = _Guid()


@click.group()
def queue() -> None:
    """Create, change, delete, list, describe and purge queues.

    \b
    Example:
      pymsmq queue create --data ./qm '.\\private$\\orders' --transactional --journal
      pymsmq queue list --data ./qm
    """


@queue.command(epilog=EXIT_CODES_HELP)
@click.argument("path")
@click.option("--transactional", is_flag=True, help="A transactional queue (PROPID_Q_TRANSACTION).")
@click.option("--journal", is_flag=True, help="Keep received messages in the queue's journal.")
@click.option("--label", default="", help="Queue label (at most 124 characters).")
@click.option("--quota", type=QUOTA, default=INFINITE, help="Queue quota in KB, or 'infinite' (default).")
@click.option("--journal-quota", type=QUOTA, default=INFINITE, help="Journal quota in KB, or 'infinite'.")
@click.option(
    "--base-priority",
    type=click.IntRange(-32768, 32767),
    default=0,
    help="Base priority (public queues only; -32768..32767).",
)
@click.option("--authenticate", is_flag=True, help="Accept authenticated messages only.")
@click.option(
    "--privacy-level",
    type=click.Choice(sorted(_PRIV_LEVELS)),
    default="optional",
    help="PROPID_Q_PRIV_LEVEL: none, optional (default) or body.",
)
@click.option("--type-guid", type=GUID, default=None, help="Service type GUID (PROPID_Q_TYPE).")
@click.option("--multicast-address", default=None, metavar="A.B.C.D:PORT", help="Multicast address.")
@click.option("--json", "as_json", is_flag=True, help="Print the new queue as JSON.")
@target_options
@msmq_command
def create(
    target: Target,
    path: str,
    transactional: bool,
    journal: bool,
    label: str,
    quota: int,
    journal_quota: int,
    base_priority: int,
    authenticate: bool,
    privacy_level: str,
    type_guid: uuid.UUID | None,
    multicast_address: str | None,
    as_json: bool,
) -> None:
    """Create the queue PATH (a path name such as .\\private$\\orders) and print its format name.

    \b
    Example:
      pymsmq queue create --data ./qm '.\\private$\\orders' --transactional --label orders --quota 1024
    """
    q = target.qm.create_queue(
        path,
        transactional=transactional,
        journal=journal,
        label=label,
        quota=quota,
        journal_quota=journal_quota,
        base_priority=base_priority,
        authenticate=authenticate,
        priv_level=_PRIV_LEVELS[privacy_level],
        multicast_address=multicast_address,
        service_type_guid=type_guid,
    )
    with q:
        if as_json:
            emit_json(_info(target.qm, q))
        else:
            click.echo(q.format_name)


@queue.command(name="set", epilog=EXIT_CODES_HELP)
@click.argument("name")
@click.option("--label", default=None, help="Queue label (at most 124 characters).")
@click.option(
    "--journal/--no-journal", default=None, help="Keep received messages in the queue's journal, or stop."
)
@click.option("--quota", type=QUOTA, default=None, help="Queue quota in KB, or 'infinite'.")
@click.option("--journal-quota", type=QUOTA, default=None, help="Journal quota in KB, or 'infinite'.")
@click.option(
    "--base-priority",
    type=click.IntRange(-32768, 32767),
    default=None,
    help="Base priority (public queues; a private queue ignores it, [MS-MQMQ] 2.3.1.6).",
)
@click.option(
    "--authenticate/--no-authenticate", default=None, help="Accept authenticated messages only, or any."
)
@click.option(
    "--privacy-level", type=click.Choice(sorted(_PRIV_LEVELS)), default=None, help="PROPID_Q_PRIV_LEVEL."
)
@click.option("--type-guid", type=GUID, default=None, help="Service type GUID (PROPID_Q_TYPE).")
@click.option(
    "--multicast-address",
    default=None,
    metavar="A.B.C.D:PORT|none",
    help="Multicast address, or 'none' to remove it.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the queue's properties after the change as JSON."
)
@target_options
@msmq_command
def set_(
    target: Target,
    name: str,
    label: str | None,
    journal: bool | None,
    quota: int | None,
    journal_quota: int | None,
    base_priority: int | None,
    authenticate: bool | None,
    privacy_level: str | None,
    type_guid: uuid.UUID | None,
    multicast_address: str | None,
    as_json: bool,
) -> None:
    """Change properties of the queue NAME (path or format name): only those given change
    (MSMQQueueInfo.Update, [MC-MQAC] 3.10.4.1.36); transactional and the path name are fixed.

    \b
    Example:
      pymsmq queue set --data ./qm '.\\private$\\orders' --label 'orders (EU)' --quota 10240 --journal
      pymsmq queue set --url msmq://127.0.0.1:2103 '.\\private$\\orders' --no-journal --json
    """
    changes: dict[str, object] = {
        key: value
        for key, value in (
            ("label", label),
            ("journal", journal),
            ("quota", quota),
            ("journal_quota", journal_quota),
            ("base_priority", base_priority),
            ("authenticate", authenticate),
            ("priv_level", None if privacy_level is None else _PRIV_LEVELS[privacy_level]),
            ("service_type_guid", type_guid),
        )
        if value is not None
    }
    if multicast_address is not None:
        changes["multicast_address"] = None if multicast_address.lower() == "none" else multicast_address
    if not changes:
        raise BadInput("nothing to change: give at least one property option (see --help)")
    qm = target.qm
    qm.set_queue_properties(name, **changes)
    with qm.queue(name) as q:
        if as_json:
            emit_json(_info(qm, q))
        else:
            click.echo(f"{q.format_name}: set {', '.join(sorted(changes))}")


@queue.command(epilog=EXIT_CODES_HELP)
@click.argument("name")
@click.option("--if-exists", is_flag=True, help="Succeed quietly when the queue does not exist.")
@target_options
@msmq_command
def delete(target: Target, name: str, if_exists: bool) -> None:
    """Delete the queue NAME (path or format name) with its journal and messages.

    \b
    Example:
      pymsmq queue delete --data ./qm '.\\private$\\orders'
    """
    qm = target.qm
    try:
        qm.delete_queue(name)
    except MSMQError as exc:
        # --if-exists forgives a queue that is not there, not a malformed name (exit code 2).
        if not (if_exists and exc.hresult == HResult.MQ_ERROR_QUEUE_NOT_FOUND):
            raise


def server_queue_stats(qm: Any) -> dict[str, Any]:
    """Per-queue statistics from a server (``server_stats()["queues"]``, keyed by format name), or {}."""
    call = getattr(qm, "server_stats", None)
    if not callable(call):
        return {}
    try:
        snapshot = call()
    except MSMQError:
        return {}
    queues = snapshot.get("queues") if isinstance(snapshot, dict) else None
    return queues if isinstance(queues, dict) else {}


def queue_bytes(q: Queue, server: dict[str, Any] | None = None) -> int | None:
    """Bytes held by the queue (body + extension + label) with its subqueues' (the measure its
    quota counts), or by the subqueue alone for a subqueue's handle, when the queue manager can
    tell."""
    if q.subqueue_name is not None:
        index = getattr(q, "_index", None)  # embedded: the subqueue's own positions
        if callable(index):
            return int(index().total_bytes)
        stats = getattr(q, "_stats", None)  # remote: PROPID_MGMT_QUEUE_BYTES_IN_QUEUE of it
        if callable(stats):
            value = stats(8).get(8)
            return int(value) if isinstance(value, int) else None
        return None
    entry = (server or {}).get(q.format_name)
    if isinstance(entry, dict) and isinstance(entry.get("bytes"), int):
        return int(entry["bytes"])
    state = getattr(q, "_state", None)  # embedded queue manager: the queue's byte count
    total = getattr(state, "total_bytes", None)
    if callable(total):
        result = total()
        return result if isinstance(result, int) else None
    return None


def _system_queues(qm: QueueManager) -> list[tuple[str, Queue]]:
    out: list[tuple[str, Queue]] = []
    for label, attribute in (
        ("dead-letter", "dead_letter_queue"),
        ("transactional dead-letter", "transactional_dead_letter_queue"),
        ("machine journal", "machine_journal"),
    ):
        try:
            out.append((label, getattr(qm, attribute)))
        except MSMQError as exc:
            if exc.hresult != HResult.MQ_ERROR_ACCESS_DENIED:
                raise
    return out


def queue_rows(qm: QueueManager, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """One dict per queue: path, format name, kind, messages, bytes, journal messages, label.

    Queues whose properties the identity may not read (MQ_ERROR_ACCESS_DENIED, a server's
    ``--auth`` policy) are left out, as the server leaves out the queues it may not see.
    """
    out: list[dict[str, Any]] = []
    for kind in ("private", "public"):
        if kind in kinds:
            out += [_queue_row(kind, st) for st in qm.queue_statistics(kind)]  # one request for all
    if "system" in kinds:
        server = server_queue_stats(qm)
        for label, h in _system_queues(qm):
            with h:
                try:
                    out.append(_system_row(label, h, server))
                except MSMQError as exc:
                    if exc.hresult != HResult.MQ_ERROR_ACCESS_DENIED:
                        raise
    return out


def _queue_row(kind: str, st: QueueStatistics) -> dict[str, Any]:
    row: dict[str, Any] = {
        "path_name": st.path_name,
        "kind": kind,
        "format_name": st.format_name,
        "messages": st.message_count,
        "bytes": st.bytes_in_queue,
        "transactional": st.transactional,
        "label": st.label,
        "journal": st.journal,
        # On every application queue's row (QA: it was left out where journaling is off; a journal
        # keeps its messages when journaling is turned off).
        "journal_messages": st.journal_message_count,
        "subqueues": list(st.subqueue_names),
    }
    return row


def _system_row(label: str, h: Queue, server: Any) -> dict[str, Any]:
    return {
        "path_name": h.format_name,
        "kind": f"system ({label})",
        "format_name": h.format_name,
        "messages": h.message_count,
        "bytes": queue_bytes(h, server),
        "transactional": h.transactional,
        "label": "",
    }


@queue.command(name="list", epilog=EXIT_CODES_HELP)
@click.option("--private", "private", is_flag=True, help="Private queues only.")
@click.option("--public", "public", is_flag=True, help="Public queues only.")
@click.option("--system", "system", is_flag=True, help="System queues only.")
@click.option("--all", "every", is_flag=True, help="Application and system queues.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@target_options
@msmq_command
def list_queues(
    target: Target, private: bool, public: bool, system: bool, every: bool, as_json: bool
) -> None:
    """List queues with their message counts (application queues unless --system or --all).

    \b
    Example:
      pymsmq queue list --data ./qm
      pymsmq queue list --url msmq://127.0.0.1:2103 --all --json
    """
    given = [
        k for k, on in (("private", private), ("public", public), ("system", system), ("all", every)) if on
    ]
    if len(given) > 1:  # one value: the last given won without a word
        raise BadInput("give one of --private, --public, --system or --all")
    kinds = given[0] if given else None
    selected = {
        None: ("private", "public"),
        "private": ("private",),
        "public": ("public",),
        "system": ("system",),
        "all": ("private", "public", "system"),
    }[kinds]
    rows = queue_rows(target.qm, selected)
    if as_json:
        emit_json(rows)
        return
    print_table(
        ("PATH", "MESSAGES", "BYTES", "XACT", "LABEL"),
        [
            (
                r["path_name"],
                r["messages"],
                "?" if r["bytes"] is None else r["bytes"],
                "yes" if r["transactional"] else "no",
                printable(r["label"]),
            )
            for r in rows
        ],
    )


def _info(qm: QueueManager, q: Queue) -> dict[str, Any]:
    props = q.properties
    info: dict[str, Any] = {"format_name": q.format_name}
    for name, value in props.to_dict().items():
        info[name] = value
    info["messages"] = q.message_count
    info["bytes"] = queue_bytes(q, server_queue_stats(qm))
    if q.subqueue_name is None:
        info["subqueues"] = {name: _count(q, name) for name in q.subqueue_names}
    if props.journal and q.subqueue_name is None:
        with q.journal as j:
            info["journal_messages"] = j.message_count
    return info


def _count(q: Queue, name: str) -> int:
    with q.subqueue(name) as sub:
        return sub.message_count


@queue.command(epilog=EXIT_CODES_HELP)
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@target_options
@msmq_command
def info(target: Target, name: str, as_json: bool) -> None:
    """Show the properties and message counts of the queue NAME (path or format name).

    \b
    Example:
      pymsmq queue info --data ./qm '.\\private$\\orders' --json
    """
    qm = target.qm
    with qm.queue(name) as q:
        data = _info(qm, q)
    if as_json:
        emit_json(data)
        return
    width = max(len(k) for k in data)
    for key, value in data.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items()) or "(none)"
        elif value == INFINITE and key in ("quota", "journal_quota"):
            value = "infinite"
        elif isinstance(value, str):
            value = printable(value)
        click.echo(f"{key.ljust(width)}  {value}")


@queue.command(epilog=EXIT_CODES_HELP)
@click.argument("name")
@click.option("--journal", "journal", is_flag=True, help="Purge the queue's journal instead.")
@click.option("--json", "as_json", is_flag=True, help="Print the number purged as JSON.")
@target_options
@msmq_command
def purge(target: Target, name: str, journal: bool, as_json: bool) -> None:
    """Delete every message of the queue NAME (messages locked by a transaction go when it ends).

    \b
    Example:
      pymsmq queue purge --data ./qm '.\\private$\\orders'
      pymsmq queue purge --data ./qm '.\\private$\\orders;poison'
    """
    qm = target.qm
    with qm.queue(name) as q:
        h = q.journal if journal else q
        try:
            before = h.message_count
            with progress(f"purging {before} messages", 1) as bar:
                h.purge()
                bar.update(1)
            # Messages that arrive during the purge are not counted (nor locked ones, which stay).
            purged = max(0, before - h.message_count)
        finally:
            if h is not q:
                h.close()
    if as_json:
        emit_json({"purged": purged})
    else:
        click.echo(f"purged {purged} message{'s' if purged != 1 else ''}")
