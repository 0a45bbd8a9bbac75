"""The remote client: ``connect(url)`` -> ``RemoteQueueManager``, with the embedded API over the wire.

``RemoteQueueManager``, ``RemoteQueue``, ``RemoteCursor`` and ``RemoteTransaction`` have the same
methods, arguments, return types and errors (HRESULTs) as ``QueueManager``, ``Queue``, ``Cursor``
and ``Transaction``; each call is one or two requests of docs/protocol.md.  Argument checks that the
embedded queue manager makes before touching a queue are made here too, so both raise the same
error for the same mistake.  Extras for throughput: ``RemoteQueue.send_many``/``receive_many``
(SEND_MANY/RECEIVE_MANY: many messages per frame, frames pipelined) and
``send_async``/``receive_async`` returning ``Pending`` answers.
"""

from __future__ import annotations

import ssl
import struct
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Final

from pymsmq.client.remote_cursor import RemoteCursor
from pymsmq.client.remote_notification import NotificationPump
from pymsmq.client.remote_queue import RemoteQueue
from pymsmq.client.remote_transaction import RemoteTransaction
from pymsmq.client.remote_transaction import _xact as _xact  # re-exported: pymsmq.client.range_read
from pymsmq.client.transport import Transport, parse_url
from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.queue_properties import QueueProperties, check_settable
from pymsmq.model.queue_statistics import QueueStatistics, kinds_of
from pymsmq.protocol import messages as pm
from pymsmq.protocol._fields import Props
from pymsmq.protocol.codes import Op
from pymsmq.protocol.handshake import MAX_TOKEN_SIZE, OP_SINCE_VERSION
from pymsmq.protocol.message_codec import props_dict
from pymsmq.protocol.queue_props import attrs_to_props, properties_from_props
from pymsmq.wire.propids import PROPID_Q_JOURNAL, PROPID_Q_LABEL

__all__ = ["RemoteCursor", "RemoteQueue", "RemoteQueueManager", "RemoteTransaction", "connect"]

_RECEIVE: Final = 1
_SEND: Final = 2
_PEEK: Final = 0x20
_ALL: Final = _RECEIVE | _SEND | _PEEK
_U32: Final = struct.Struct("<I")
_SERVER_STATS: Final = 0x7F000002
_new: Final = object.__new__
_set: Final = object.__setattr__


#: What ``queue_statistics`` asks LIST_QUEUES for: PROPID_MGMT_QUEUE_PATHNAME (1), _FORMATNAME (2),
#: _XACT (5), _MESSAGE_COUNT (7), _BYTES_IN_QUEUE (8), _JOURNAL_MESSAGE_COUNT (9), _SUBQUEUE_NAMES
#: (27), and PROPID_Q_JOURNAL, PROPID_Q_LABEL.
_STATISTICS: Final = (1, 2, 5, 7, 8, 9, 27, int(PROPID_Q_JOURNAL), int(PROPID_Q_LABEL))
#: STATS requests ``queue_statistics`` has in flight at once when it asks queue by queue.
_STATS_AT_ONCE: Final = 256
#: The protocol version that has LIST_QUEUES_PAGE.
_PAGES_VERSION: Final = OP_SINCE_VERSION[Op.LIST_QUEUES_PAGE]


class RemoteQueueManager:
    """A queue manager on a pymsmq server: the methods of ``pymsmq.QueueManager``."""

    def __init__(
        self, transport: Transport, url: str = "", reconnect: Callable[[], Transport] | None = None
    ) -> None:
        self._t = transport
        self.url = url
        #: Opens a new connection like this one's (``connect``): used when the server ended this
        #: one for its idle timeout, which it does only to connections that hold nothing.
        self._reconnect = reconnect
        #: Held while a connection ended idle is replaced (this client's only).
        self._renewing = threading.Lock()
        hello = transport.server_hello
        #: The server queue manager's GUID and computer name (from SERVER_HELLO).
        self.guid: uuid.UUID = hello.qm_guid
        self.machine_name: str = hello.machine_name
        self._guid_bytes = self.guid.bytes_le
        #: The armed notifications: their count, and the thread that waits for their answers and
        #: calls their callbacks.
        self._pump = NotificationPump(transport)

    @property
    def machine_quota(self) -> int | None:
        """The server queue manager's machine quota in KB ([MS-MQDMPR] 3.1.1.1 QueueManagerQuota;
        None: no limit), asked from the server (it was always None here)."""
        value = self.server_stats().get("machine_quota")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _object_id(self, raw: bytes) -> ObjectId:
        # ObjectId.from_bytes(raw) of a 20-byte id from a SEND answer; the lineage is this server's
        # GUID (its ids), so the UUID is not rebuilt.
        if raw[:16] != self._guid_bytes:
            return ObjectId.from_bytes(raw)
        oid: ObjectId = _new(ObjectId)
        _set(oid, "lineage", self.guid)
        _set(oid, "uniquifier", _U32.unpack_from(raw, 16)[0])
        return oid

    def __repr__(self) -> str:
        return f"<RemoteQueueManager {self.url} {self.machine_name}>"

    def _call(self, request: pm.Request) -> Any:
        """``Transport.call`` on the connection, on a new one if the server ended it for its idle
        timeout (outside QA: a long-lived ``connect()`` left alone for 5 minutes failed every
        later call) or the request found it gone as it was written (threads calling at once after
        the idle timeout met that before the GOODBYE was read).  The server ends idle only
        connections that hold nothing (no queue handle, cursor, transaction or held message), and
        in both cases it had none of the request: nothing is lost or done twice."""
        t = self._t
        try:
            return t.call(request)
        except MSMQError:
            if not (t.replaceable and self._renew(t)):
                raise
        return self._t.call(request)

    def _renew(self, old: Transport) -> bool:
        """Replace ``old``, ended idle, by a new connection (once, whatever the threads).  A new
        connection refused (a token revoked meanwhile, the server gone) ends the replacing: its
        error is raised, and later calls fail as on a closed connection (outside QA: each redialled
        and counted against the address's failed logins)."""
        with self._renewing:
            reconnect = self._reconnect
            if reconnect is None:
                return False
            if self._t is old:
                try:
                    self._t = reconnect()
                except MSMQError:
                    self._reconnect = None
                    raise
                self._pump = NotificationPump(self._t)
        return True

    def close(self) -> None:
        """Close the connection (open transactions are aborted by the server)."""
        self._t.close()

    def __enter__(self) -> RemoteQueueManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True after ``close`` (or once the connection is lost; not when the server's idle timeout
        ended it: the next call opens another)."""
        return self._t.closed and not (self._t.replaceable and self._reconnect is not None)

    def ping(self, data: bytes = b"") -> bytes:
        """Round trip to the server."""
        return bytes(self._call(pm.PingRequest(data)).data)

    # ------------------------------------------------------------------ names and queues
    def _open(self, name: str, access: int | None = None, share_mode: int = 0) -> RemoteQueue:
        if not isinstance(name, str):
            raise MSMQError(f"not a queue name: {quoted(name)}", HResult.MQ_ERROR_ILLEGAL_FORMATNAME)
        acc = _ALL if access is None else access
        if not isinstance(acc, int) or isinstance(acc, bool) or not 0 <= acc <= 0xFFFFFFFF:
            raise MSMQError(f"unsupported access mode {access!r}", HResult.MQ_ERROR_UNSUPPORTED_ACCESS_MODE)
        if not isinstance(share_mode, int) or not 0 <= share_mode <= 0xFFFFFFFF:
            raise MSMQError(f"invalid share mode {share_mode!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
        r = self._call(pm.OpenQueueRequest(name, acc, share_mode))
        props = properties_from_props(r.properties)
        sub = None
        fmt = r.format_name
        if fmt.upper().startswith("DIRECT=OS:") and ";" in fmt:
            sub = fmt.rpartition(";")[2]
        return RemoteQueue(self, r.handle, fmt, props, acc, share_mode, sub)

    def format_name(self, name: str) -> str:
        """The format name of the queue ``name`` names."""
        q = self._open(name, _PEEK)
        q.close()
        return q.format_name

    def create_queue(
        self,
        path: str,
        *,
        transactional: bool = False,
        journal: bool = False,
        label: str = "",
        quota: int = INFINITE,
        journal_quota: int = INFINITE,
        base_priority: int = 0,
        authenticate: bool = False,
        priv_level: int = 1,
        multicast_address: str | None = None,
        service_type_guid: uuid.UUID | str | None = None,
    ) -> RemoteQueue:
        """Create a queue on the server and return a handle on it."""
        if not isinstance(path, str):
            raise MSMQError(f"not a path name: {quoted(path)}", HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME)
        attrs: dict[str, object] = {
            "transactional": transactional,
            "journal": journal,
            "label": label,
            "quota": quota,
            "journal_quota": journal_quota,
            "base_priority": base_priority,
            "authenticate": authenticate,
            "priv_level": priv_level,
            "multicast_address": multicast_address,
        }
        if service_type_guid is not None:
            attrs["service_type_guid"] = service_type_guid
        QueueProperties(**attrs)  # type: ignore[arg-type]  # the embedded queue manager's value checks
        fmt = self._call(pm.CreateQueueRequest(path, attrs_to_props(attrs))).format_name
        return self._open(fmt)

    def delete_queue(self, name: str) -> None:
        """Delete a queue, its journal and its messages."""
        self._call(pm.DeleteQueueRequest(name))

    def queue(self, name: str, access: int | None = None, share_mode: int = 0) -> RemoteQueue:
        """A handle on the queue a path name or format name names."""
        return self._open(name, access, share_mode)

    def queue_exists(self, name: str) -> bool:
        """True when ``name`` names an existing queue."""
        try:
            self.format_name(name)
        except MSMQError as exc:
            if exc.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE:
                raise
            return False
        return True

    def get_queue_properties(self, name: str) -> QueueProperties:
        """The properties of a queue."""
        return properties_from_props(self._call(pm.GetQueuePropertiesRequest(name)).properties)

    def set_queue_properties(self, name: str, **changes: object) -> QueueProperties:
        """Change settable properties (label, quota, journal, ...)."""
        check_settable(changes)
        QueueProperties().replace(**changes)  # the embedded queue manager's value checks
        r = self._call(pm.SetQueuePropertiesRequest(name, attrs_to_props(changes)))
        return properties_from_props(r.properties)

    def _list(self, which: int) -> list[str]:
        if self._pages:
            return sorted(name for name, _ in self._list_pages(which, ()))
        return sorted(self._call(pm.ListQueuesRequest(which)).names)

    @property
    def _pages(self) -> bool:
        # The server has LIST_QUEUES_PAGE (protocol version 4): listings of any size.
        hello = self._t.server_hello
        return hello is not None and hello.version >= _PAGES_VERSION

    def _list_pages(self, which: int, propids: tuple[int, ...]) -> list[tuple[str, Props]]:
        """LIST_QUEUES's (name, properties) rows, a LIST_QUEUES_PAGE at a time."""
        rows: list[tuple[str, Props]] = []
        after = ""
        while True:
            page = self._call(pm.ListQueuesPageRequest(which, propids, after))
            rows += zip(page.names, page.properties, strict=True)
            if not page.more or not page.names:
                return rows
            after = page.names[-1]

    @property
    def private_queues(self) -> list[str]:
        """Path names of the private queues."""
        return self._list(1)

    @property
    def public_queues(self) -> list[str]:
        """Path names of the public queues."""
        return self._list(2)

    def queue_statistics(self, which: str = "application") -> list[QueueStatistics]:
        """The management facts of every private and public queue (``which``: "application",
        "private" or "public"), in ``private_queues`` then ``public_queues`` order, a request per
        frame of answer (LIST_QUEUES_PAGE with the PROPID_MGMT_QUEUE_* wanted; LIST_QUEUES from a
        server of protocol version 3 or older): see the embedded queue manager's
        ``queue_statistics``.  Queues whose properties this identity may not read are left out."""
        out: list[QueueStatistics] = []
        for kind in kinds_of(which):
            which_filter = 1 if kind == "private" else 2
            if self._pages:
                rows = self._list_pages(which_filter, _STATISTICS)
            else:
                try:
                    r = self._call(pm.ListQueuesRequest(which_filter, _STATISTICS))
                    rows = list(zip(r.names, r.properties, strict=True))
                except MSMQError as exc:
                    if exc.hresult != HResult.MQ_ERROR_INSUFFICIENT_RESOURCES:
                        raise
                    rows = self._statistics_one_by_one(which_filter)
            for name, props in sorted(rows, key=lambda row: row[0]):
                if props:  # (none: MQSEC_GET_QUEUE_PROPERTIES refused)
                    out.append(self._statistics(name, props_dict(props)))
        return out

    def _statistics_one_by_one(self, which_filter: int) -> list[tuple[str, Props]]:
        # The answer for every queue at once is more than one frame (about ten thousand queues):
        # the names alone, then a STATS for each, written back to back.
        names = self._call(pm.ListQueuesRequest(which_filter)).names
        t = self._t
        rows: list[tuple[str, Props]] = []
        for start in range(0, len(names), _STATS_AT_ONCE):
            chunk = names[start : start + _STATS_AT_ONCE]
            rids = t.send_many([pm.StatsRequest(name, _STATISTICS) for name in chunk])
            for name, rid in zip(chunk, rids, strict=True):
                response = t.wait(rid)
                if isinstance(response, pm.StatsResponse):  # else deleted meanwhile, or no right on it
                    rows.append((name, response.properties))
        return rows

    def _statistics(self, name: str, v: dict[int, Any]) -> QueueStatistics:
        if PROPID_Q_LABEL not in v:  # a server from before the label and journal were listed
            props = self.get_queue_properties(name)
            v = {**v, PROPID_Q_LABEL: props.label, PROPID_Q_JOURNAL: int(props.journal)}
        return QueueStatistics(
            path_name=str(v.get(1, name)),
            format_name=str(v.get(2, "")),
            transactional=v.get(5) == "YES",
            message_count=int(v.get(7, 0)),
            bytes_in_queue=int(v.get(8, 0)),
            journal_message_count=int(v.get(9, 0)),
            subqueue_names=tuple(sorted(v.get(27, ()))),
            label=str(v[PROPID_Q_LABEL]),
            journal=bool(v.get(PROPID_Q_JOURNAL, 0)),
        )

    # ------------------------------------------------------------------ system queues
    @property
    def dead_letter_queue(self) -> RemoteQueue:
        """The system dead-letter queue."""
        return self._open(f"MACHINE={self.guid};DEADLETTER")

    @property
    def transactional_dead_letter_queue(self) -> RemoteQueue:
        """The system transactional dead-letter queue."""
        return self._open(f"MACHINE={self.guid};DEADXACT")

    @property
    def machine_journal(self) -> RemoteQueue:
        """The system journal queue."""
        return self._open(f"MACHINE={self.guid};JOURNAL")

    def internal_queue(self, name: str) -> RemoteQueue:
        """``order_queue$`` or ``notify_queue$``."""
        return self._open(f".\\private$\\{name}")

    # ------------------------------------------------------------------ transactions and stats
    def begin_transaction(self) -> RemoteTransaction:
        """A new internal transaction on the server (context manager: commit on exit, abort on error)."""
        return RemoteTransaction(self, self._call(pm.BeginTransactionRequest()).transaction)

    @property
    def total_bytes(self) -> int:
        """Bytes of all messages the queue manager holds."""
        values: dict[int, Any] = props_dict(self._call(pm.StatsRequest("", (6,))).properties)
        return int(values.get(6, 0))

    @property
    def disk_full(self) -> bool:
        """True while the server's disk is full: recoverable sends are refused, receives go on."""
        return bool(self.server_stats().get("disk_full", False))

    def server_stats(self) -> dict[str, Any]:
        """The server's statistics (per-queue counts, bytes, rates) as a dict."""
        import json

        values = props_dict(self._call(pm.StatsRequest("", (_SERVER_STATS,))).properties)
        text = values.get(_SERVER_STATS)
        return json.loads(text) if isinstance(text, str) else {}

    def send_many(self, queue: RemoteQueue, messages: Sequence[Message]) -> None:
        """``queue.send_many(messages)``."""
        queue.send_many(messages)


def connect(
    url: str = "msmq://127.0.0.1:2103",
    token: str | bytes | None = None,
    tls: bool | ssl.SSLContext | None = None,
    timeout: float | None = 10.0,
) -> RemoteQueueManager:
    """Connect to ``pymsmq serve`` at ``msmq://host[:port]`` (``msmqs://`` or ``tls=`` for TLS).

    ``timeout`` (seconds) bounds the TCP connect and the handshake, and is the liveness period: a
    call that waits that long without a byte from the server makes the client PING it, and with
    nothing for twice that the connection is lost (MQ_ERROR_SERVICE_NOT_AVAILABLE) instead of
    hanging on a frozen server.  None: no limit and no liveness check.
    """
    host, port, scheme_tls = parse_url(url)
    raw = token.encode() if isinstance(token, str) else (token or b"")
    if len(raw) > MAX_TOKEN_SIZE:  # (the handshake would refuse it, as "ClientHello.token")
        raise MSMQError(
            f"the token is {len(raw)} bytes in UTF-8: at most {MAX_TOKEN_SIZE}",
            HResult.MQ_ERROR_INVALID_PARAMETER,
        )
    use_tls = tls if tls is not None else scheme_tls

    def new_connection() -> Transport:
        return Transport(host, port, raw, use_tls, timeout)

    return RemoteQueueManager(new_connection(), url, new_connection)
