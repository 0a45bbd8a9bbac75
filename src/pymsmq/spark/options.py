"""Options of the ``msmq`` data source and the queue-manager connection they describe (no pyspark here).

Spark hands options over as case-insensitive strings (``load("x")`` arrives as ``path``):

==========================  =======================================================================
``url``                     ``msmq://host:port`` of a ``pymsmq serve`` server (required)
``token``                   authentication token of the server (optional)
``queue`` (or ``path``)     a path name (``.\\private$\\orders``), a format name (``...;JOURNAL``,
                            ``DIRECT=OS:...;sub`` for a subqueue: batch reads only) or one of
                            ``system:deadletter``, ``system:deadxact``, ``system:journal``
``mode``                    streaming read: ``peek`` (default, leave the messages) or ``receive``
                            (remove them when Spark commits the micro-batch)
``maxMessagesPerTrigger``   streaming read: admission control (messages per micro-batch)
``startingLookupId``        streaming read: ``earliest`` (default), ``latest`` or a lookup id
``numPartitions``           read: Spark partitions (lookup-id ranges) per scan (default 2)
``chunk``                   read: lookup ids per READ_RANGE request (default 8192)
``heldTimeout``             streaming read: seconds a task waits for a message of its batch that
                            another consumer's receive holds (default 60; then the task fails)
``maxClockSkew``            streaming read with ``mode=receive``: seconds the Spark driver's clock
                            may be off the server's (default 60): a commit leaves every message
                            moved into the queue from a subqueue since its batch was planned, less
                            this, as its batch may not have read it
``reconnectTimeout``        reads and streaming writes: seconds a call to the server is tried again
                            while the server is unreachable (a restart; default 60, 0: never), then
                            the query fails (a batch write's commit is not tried again)
``writerId``                streaming write (required): names the query's exactly-once markers
==========================  =======================================================================
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from pymsmq.client.remote import RemoteQueue, RemoteQueueManager, connect
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.names import send_access

__all__ = ["SYSTEM_QUEUES", "SourceOptions", "open_queue"]

SYSTEM_QUEUES: Final = ("system:deadletter", "system:deadxact", "system:journal")
_MODES: Final = ("peek", "receive")


def _bad(text: str) -> MSMQError:
    return MSMQError(f"msmq data source: {text}", HResult.MQ_ERROR_INVALID_PARAMETER)


def _int(options: Mapping[str, str], name: str, default: int, low: int = 1) -> int:
    raw = _get(options, name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _bad(f"option {name} must be an integer, got {raw!r}") from None
    if value < low:
        raise _bad(f"option {name} must be >= {low}, got {value}")
    return value


def _seconds(options: Mapping[str, str], name: str, default: float) -> float:
    raw = _get(options, name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise _bad(f"option {name} must be a number of seconds, got {raw!r}") from None
    if not 0 <= value <= 86400:  # also refuses nan and inf
        raise _bad(f"option {name} must be between 0 and 86400 seconds, got {raw!r}")
    return value


def _get(options: Mapping[str, str], name: str) -> str | None:
    # Spark's option map is case-insensitive; a plain dict (unit tests) may not be.
    if name in options:
        return options[name]
    lowered = name.lower()
    for key, value in options.items():
        if key.lower() == lowered:
            return value
    return None


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The parsed options (picklable; shipped to executors inside readers and writers)."""

    url: str
    queue: str
    token: str = ""
    mode: str = "peek"
    max_messages_per_trigger: int | None = None
    starting_lookup_id: str = "earliest"
    num_partitions: int = 2
    chunk: int = 8192
    writer_id: str = ""
    held_timeout: float = 60.0
    max_clock_skew: float = 60.0
    reconnect_timeout: float = 60.0

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """``SourceOptions`` from Spark's option map; ``MSMQError`` (INVALID_PARAMETER) when wrong."""
        url = _get(options, "url")
        if not url:
            raise _bad("option url (msmq://host:port) is required")
        queue = _get(options, "queue") or _get(options, "path")
        if not queue:
            raise _bad("option queue (or load(<queue>)) is required")
        mode = (_get(options, "mode") or "peek").lower()
        if mode not in _MODES:
            raise _bad(f"option mode must be peek or receive, got {mode!r}")
        start = (_get(options, "startingLookupId") or "earliest").lower()
        if start not in ("earliest", "latest") and not start.isdigit():
            raise _bad(f"option startingLookupId must be earliest, latest or a lookup id, got {start!r}")
        limit = _get(options, "maxMessagesPerTrigger")
        return cls(
            url=url,
            queue=queue,
            token=_get(options, "token") or "",
            mode=mode,
            max_messages_per_trigger=None if not limit else _int(options, "maxMessagesPerTrigger", 0),
            starting_lookup_id=start,
            num_partitions=_int(options, "numPartitions", 2),
            chunk=_int(options, "chunk", 8192),
            writer_id=_get(options, "writerId") or queue,
            held_timeout=_seconds(options, "heldTimeout", 60.0),
            max_clock_skew=_seconds(options, "maxClockSkew", 60.0),
            reconnect_timeout=_seconds(options, "reconnectTimeout", 60.0),
        )


def _open(qm: RemoteQueueManager, name: str, send: bool) -> RemoteQueue:
    access = send_access(name) if send else None
    if access is not None:
        # A multiple-element format name: a writer sends every row to each of its queues (it opens
        # with send access only; a reader's open of it is refused: "only sends may use it").
        return qm.queue(name, access)
    key = name.lower()
    if key == "system:deadletter":
        return qm.dead_letter_queue
    if key == "system:deadxact":
        return qm.transactional_dead_letter_queue
    if key == "system:journal":
        return qm.machine_journal
    return qm.queue(name)


@contextmanager
def open_queue(opts: SourceOptions, send: bool = False) -> Iterator[tuple[RemoteQueueManager, RemoteQueue]]:
    """Connect to ``opts.url`` and open ``opts.queue``; both are closed on exit.  ``send``: for a
    writer (a multiple-element name then opens to send to each of its queues)."""
    qm = connect(opts.url, token=opts.token or None)
    try:
        q = _open(qm, opts.queue, send)
        try:
            yield qm, q
        finally:
            q.close()
    finally:
        qm.close()
