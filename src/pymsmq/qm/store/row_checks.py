"""What the rows of a store's queue and meta tables must hold for a queue manager to load them.

A queue row is (queue id, path name, properties as JSON); the meta rows are the machine's identity
and counters (key, value as text).  SQLite's columns are not typed and a damaged page can hold
anything, so the queue manager's open, ``pymsmq backup``'s check and ``pymsmq salvage`` all ask
the same questions of them here: the queue manager refuses a store with such a row (naming it),
the check reports it, and salvage leaves the queue out (or gives the store a new identity).
"""

from __future__ import annotations

import json
import platform
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.model.queue_properties import QueueProperties

__all__ = [
    "QUEUE_KINDS",
    "QueueRows",
    "facts_have_their_types",
    "journal_parent",
    "last_lookup_ids_problem",
    "machine_quota_problem",
    "meta_problem",
    "new_identity",
    "queue_properties_problem",
    "queue_row_problem",
    "queue_table_problem",
    "sort_queue_rows",
    "whole_number",
]

#: The kinds of queue a store holds (its ``queue_type`` property; "private" when absent).
QUEUE_KINDS: Final = frozenset({"private", "public", "system", "internal", "journal"})


def queue_properties_problem(properties: object) -> str | None:
    """Why the decoded properties of a queue row cannot make a queue, or None."""
    if not isinstance(properties, dict):
        return f"its properties are not a JSON object ({type(properties).__name__})"
    kind = properties.get("queue_type", "private")
    if kind not in QUEUE_KINDS:
        return f"its kind of queue {kind!r} is not one of {', '.join(sorted(QUEUE_KINDS))}"
    number = properties.get("private_queue_number", 0)
    if number is not None and type(number) is not int:
        return f"its private queue number is not an integer ({number!r})"
    if kind == "journal" and type(properties.get("journal_of")) is not int:
        return f"it is a journal without the id of its queue ({properties.get('journal_of')!r})"
    if type(properties.get("path_name", "")) is not str:
        return "its path name is not text"
    try:
        QueueProperties.from_dict(properties)
    except (MSMQError, TypeError, ValueError) as exc:
        return f"its properties are not valid: {exc}"
    return None


def _decoded_row_problem(queue_id: object, path_name: object, properties: object) -> str | None:
    if type(queue_id) is not int:
        return f"its queue id is not an integer ({queue_id!r})"
    if type(path_name) is not str:
        return f"its path name is not text ({type(path_name).__name__})"
    return queue_properties_problem(properties)


def queue_row_problem(queue_id: object, path_name: object, properties: object) -> str | None:
    """Why the queue row ``(queue_id, path_name, properties)`` read from the queue table (the
    properties as their JSON text) cannot make a queue, or None."""
    if type(queue_id) is not int:
        return f"its queue id is not an integer ({queue_id!r})"
    if type(path_name) is not str:
        return f"its path name is not text ({type(path_name).__name__})"
    if type(properties) is not str:
        return f"its properties are not text ({type(properties).__name__})"
    try:
        decoded = json.loads(properties)
    except ValueError as exc:
        return f"its properties are not JSON ({exc})"
    return queue_properties_problem(decoded)


def journal_parent(properties: Mapping[str, object]) -> int | None:
    """The queue id a journal's row names as its queue (None: the row is not a journal's)."""
    if properties.get("queue_type") != "journal":
        return None
    parent = properties.get("journal_of")
    return parent if type(parent) is int else None


@dataclass(frozen=True, slots=True)
class QueueRows:
    """A queue table's rows sorted out (``sort_queue_rows``): those a queue manager loads, by queue
    id (path name, properties as JSON, decoded), and the others with why."""

    loadable: dict[int, tuple[str, str, dict[str, object]]]
    left: list[tuple[object, object, str]]


def sort_queue_rows(rows: Iterable[tuple[object, object, object]]) -> QueueRows:
    """Sort the queue table's ``rows`` (queue id, path name, properties as JSON text or decoded
    already; the text is "" in ``loadable`` for decoded ones): a row that makes
    no queue, a second queue of the same path (a queue manager would serve one of them), a journal
    whose queue is not loadable and a queue's second journal are left, each with why."""
    loadable: dict[int, tuple[str, str, dict[str, object]]] = {}
    left: list[tuple[object, object, str]] = []
    paths: dict[tuple[object, str], int] = {}
    for queue_id, path_name, properties in rows:
        if isinstance(properties, dict):  # (decoded already: what a store's load gives)
            problem = _decoded_row_problem(queue_id, path_name, properties)
        else:
            problem = queue_row_problem(queue_id, path_name, properties)
        if problem is not None:
            left.append((queue_id, path_name, problem))
            continue
        assert type(queue_id) is int and type(path_name) is str
        decoded = properties if isinstance(properties, dict) else json.loads(str(properties))
        properties = properties if isinstance(properties, str) else ""
        kind = decoded.get("queue_type", "private")
        if kind != "journal":
            same = paths.setdefault((kind, path_name.lower()), queue_id)
            if same != queue_id:
                left.append((queue_id, path_name, f"queue {same} has the same path"))
                continue
        loadable[queue_id] = (path_name, properties, decoded)
    journals: dict[int, int] = {}
    for queue_id, (path_name, _, decoded) in list(loadable.items()):
        parent = journal_parent(decoded)
        if parent is None:
            continue
        if parent not in loadable or journal_parent(loadable[parent][2]) is not None:
            problem = f"a journal whose queue ({parent}) is not in the store"
        elif parent in journals:
            problem = f"queue {parent} has another journal ({journals[parent]})"
        else:
            journals[parent] = queue_id
            continue
        del loadable[queue_id]
        left.append((queue_id, path_name, problem))
    return QueueRows(loadable, left)


def queue_table_problem(rows: Iterable[tuple[object, object, object]]) -> str | None:
    """What is wrong with the first of the queue table's ``rows`` (queue id, path name, properties
    as JSON) a queue manager cannot load (``sort_queue_rows``); None when it can load them all."""
    left = sort_queue_rows(rows).left
    if not left:
        return None
    queue_id, path_name, problem = left[0]
    return f"the row of queue {queue_id!r} ({path_name!r}) is damaged: {problem}"


#: Meta values that are counters: whole numbers, as text.
_COUNTERS: Final = ("next_queue_id", "ordinal_reserved", "create_time", "purges")


def _whole_number(value: object) -> bool:
    return type(value) is str and value.isascii() and value.isdigit() and len(value) < 20


def whole_number(value: object) -> int | None:
    """The meta counter ``value`` (whole numbers, as text), or None when it is not one (damaged)."""
    return int(str(value)) if _whole_number(value) else None


def facts_have_their_types(
    priority: object,
    arrived: object,
    subqueue: object,
    abort_count: object,
    move_count: object,
    expires: object,
    last_move_time: object,
) -> bool:
    """Whether the facts a message row keeps beside its packet have their types and ranges (SQLite's
    columns are not typed: a damaged row can hold anything): what the queue manager's open and
    salvage both ask of a row."""
    return (
        type(priority) is int
        and 0 <= priority <= 7
        and type(subqueue) is str
        and type(abort_count) is int
        and type(move_count) is int
        and (type(arrived) is float or type(arrived) is int)
        and (expires is None or type(expires) is float or type(expires) is int)
        and (last_move_time is None or type(last_move_time) is float or type(last_move_time) is int)
    )


def last_lookup_ids_problem(rows: Iterable[tuple[object, object]]) -> str | None:
    """What is wrong with the first of the last_lookup_ids table's ``rows`` (queue id, last lookup
    id as stored) that is not a pair of integers, or None."""
    for queue_id, last in rows:
        if type(queue_id) is not int or type(last) is not int:
            return f"the last lookup id of queue {queue_id!r} is not an integer ({last!r})"
    return None


def new_identity(machine_name: str | None, now: float) -> dict[str, str]:
    """The meta rows of a queue manager made at ``now`` (POSIX seconds): a new GUID ([MS-MQDMPR]
    3.1.1.1 Identifier), its computer name (this host's when ``machine_name`` is None or empty)
    and its counters from the start."""
    return {
        "qm_guid": str(uuid.uuid4()),
        "machine_name": machine_name or platform.node() or "localhost",
        "next_queue_id": "1",
        "create_time": str(int(now)),
    }


def meta_problem(meta: Mapping[str, object], queue_ids: Iterable[object] = ()) -> str | None:
    """Why the meta rows ``meta`` (key -> value as read) cannot be the identity and counters of a
    store whose queue table holds ``queue_ids``, or None.  No meta and no queue is a new store;
    a store that holds queues and lost its identity is damaged (a queue manager that took it for
    a new one would give its queue ids out again, over its queues: outside QA, 2026-11-27)."""
    ids = [q for q in queue_ids if type(q) is int]
    if not meta and not ids:
        return None
    guid = meta.get("qm_guid")
    if type(guid) is not str:
        return "the machine's identity (qm_guid) is missing" if guid is None else "qm_guid is not text"
    try:
        uuid.UUID(guid)
    except ValueError:
        return f"qm_guid {guid!r} is not a GUID"
    name = meta.get("machine_name")
    if type(name) is not str or not name:
        return f"the machine name {name!r} is missing or not text"
    for key in _COUNTERS:
        value = meta.get(key)
        if value is None and key != "next_queue_id":
            continue  # (no message sent yet; a store made before its creation time was kept)
        if not _whole_number(value):
            return f"the counter {key} {value!r} is not a whole number"
    next_queue_id = int(str(meta["next_queue_id"]))
    if ids and next_queue_id <= max(ids):
        return f"the next queue id {next_queue_id} is not above the store's queue ids (up to {max(ids)})"
    return machine_quota_problem(meta.get("machine_quota"))


def machine_quota_problem(value: object) -> str | None:
    """Why the meta value ``value`` of machine_quota (absent, "" for none, or kilobytes) is not one."""
    if value in (None, "") or _whole_number(value):
        return None
    return f"the machine quota {value!r} is not a whole number of kilobytes"
