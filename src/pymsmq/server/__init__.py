"""pymsmq.server: the queue manager server (``pymsmq serve``) speaking the client protocol on 2103/tcp.

``Server(qm, ServerConfig(...))`` inside a running event loop, or ``run(data_dir, config)`` as a
blocking entry point with signal handling.  See docs/protocol.md for the protocol.
"""

from __future__ import annotations

from pymsmq.server.access import AccessPolicy, parse_rights, queue_key
from pymsmq.server.app import DEFAULT_PORT, ConfigError, Server, ServerConfig, is_loopback, run
from pymsmq.server.event_loop import EVENT_LOOPS, EventLoop
from pymsmq.server.policy_file import PolicyFile
from pymsmq.server.send_batcher import DURABLE_WRITES, DurableWrites
from pymsmq.server.stats import QueueCounters, ServerStats

__all__ = [
    "DEFAULT_PORT",
    "DURABLE_WRITES",
    "EVENT_LOOPS",
    "AccessPolicy",
    "ConfigError",
    "DurableWrites",
    "EventLoop",
    "PolicyFile",
    "QueueCounters",
    "Server",
    "ServerConfig",
    "ServerStats",
    "is_loopback",
    "parse_rights",
    "queue_key",
    "run",
]
