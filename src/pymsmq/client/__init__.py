"""pymsmq.client: the remote client.  ``connect("msmq://host:2103")`` returns a ``RemoteQueueManager``
with the embedded ``QueueManager``'s methods, talking the client protocol (docs/protocol.md)."""

from __future__ import annotations

from pymsmq.client.range_read import RangeBatch, iter_range, queue_position, read_range
from pymsmq.client.remote import RemoteCursor, RemoteQueue, RemoteQueueManager, RemoteTransaction, connect
from pymsmq.client.transport import DEFAULT_PORT, Pending, Transport, parse_url

__all__ = [
    "DEFAULT_PORT",
    "Pending",
    "RangeBatch",
    "RemoteCursor",
    "RemoteQueue",
    "RemoteQueueManager",
    "RemoteTransaction",
    "Transport",
    "connect",
    "iter_range",
    "parse_url",
    "queue_position",
    "read_range",
]
