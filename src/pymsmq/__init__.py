"""pymsmq: Microsoft Message Queuing (MSMQ) rebuilt in Python from Microsoft's open specifications.

``pymsmq.QueueManager.open(dir)`` runs an embedded queue manager; ``pymsmq.connect(url)`` talks to a
``pymsmq serve`` server with the same methods; ``pymsmq.Message`` is a message;
``pymsmq.MSMQError`` (with ``.hresult``) is every error; the [MC-MQAC] constants
(``MQMSG_DELIVERY_RECOVERABLE``, ``MQ_RECEIVE_ACCESS``, ...) are importable from here.
The queue-manager classes load on first use, so importing the pure codec does not start them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pymsmq.errors import FormatNameError, MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.model import constants as _constants
from pymsmq.model.constants import *  # noqa: F403
from pymsmq.model.ids import MessageId, ObjectId
from pymsmq.model.message import Message
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.model.queue_statistics import QueueStatistics

if TYPE_CHECKING:
    from pymsmq.client import connect
    from pymsmq.model.quota_error import QuotaExceededError
    from pymsmq.qm.notifications import Notification
    from pymsmq.qm.queue import Cursor, Queue
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.timers import FakeClock
    from pymsmq.qm.transaction import Transaction

__version__ = "0.1.0"

_LAZY = {
    "connect": "pymsmq.client",
    "QueueManager": "pymsmq.qm.queue_manager",
    "QuotaExceededError": "pymsmq.model.quota_error",
    "Queue": "pymsmq.qm.queue",
    "Cursor": "pymsmq.qm.queue",
    "Transaction": "pymsmq.qm.transaction",
    "FakeClock": "pymsmq.qm.timers",
    "Notification": "pymsmq.qm.notifications",
}

__all__ = [
    "Cursor",
    "FakeClock",
    "FormatNameError",
    "HResult",
    "MSMQError",
    "Message",
    "Notification",
    "MessageId",
    "ObjectId",
    "Queue",
    "QueueManager",
    "QueueProperties",
    "QueueStatistics",
    "QuotaExceededError",
    "Transaction",
    "WireError",
    "__version__",
    "connect",
    *_constants.__all__,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pymsmq' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
