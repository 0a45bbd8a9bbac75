"""What a row of a store's queue table must hold for a queue manager to load it.

A queue row is (queue id, path name, properties as JSON).  SQLite's columns are not typed and a
damaged page can hold anything, so the queue manager's open, ``pymsmq backup``'s check and
``pymsmq salvage`` all ask the same questions of it here: the queue manager refuses a store with
such a row (naming it), the check reports it, and salvage leaves the queue out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.model.queue_properties import QueueProperties

__all__ = [
    "QUEUE_KINDS",
    "journal_parent",
    "queue_properties_problem",
    "queue_row_problem",
    "queue_table_problem",
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


def queue_table_problem(rows: Iterable[tuple[object, object, object]]) -> str | None:
    """What is wrong with the first of the queue table's ``rows`` (queue id, path name, properties
    as JSON) that cannot make a queue, a journal's whose queue is not in the table included; None
    when a queue manager can load them all."""
    parents: dict[object, tuple[object, int]] = {}
    kinds: dict[object, object] = {}
    for queue_id, path_name, properties in rows:
        problem = queue_row_problem(queue_id, path_name, properties)
        if problem is not None:
            return f"the row of queue {queue_id!r} ({path_name!r}) is damaged: {problem}"
        decoded = json.loads(properties)  # type: ignore[arg-type]  # (text: queue_row_problem)
        kinds[queue_id] = decoded.get("queue_type", "private")
        parent = journal_parent(decoded)
        if parent is not None:
            parents[queue_id] = (path_name, parent)
    for queue_id, (path_name, parent) in parents.items():
        if kinds.get(parent, "journal") == "journal":
            return (
                f"the journal {queue_id} ({path_name!r}) names as its queue {parent}, which is not "
                "in the store"
            )
    return None
