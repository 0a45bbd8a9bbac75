"""pymsmq.model: domain types (L1, pure): ``Message``, queue properties, ids, names, constants."""

from __future__ import annotations

from pymsmq.model.ids import MessageId, ObjectId
from pymsmq.model.message import Message
from pymsmq.model.names import LocalFormat, QueuePath, format_name_from_path, private_queue_hash
from pymsmq.model.queue_properties import QueueProperties

__all__ = [
    "LocalFormat",
    "Message",
    "MessageId",
    "ObjectId",
    "QueuePath",
    "QueueProperties",
    "format_name_from_path",
    "private_queue_hash",
]
