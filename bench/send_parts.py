"""The server's CPU per recoverable SEND, in parts; prints only.

    python bench/send_parts.py [--sessions 32] [--rounds 600] [--durable-writes loop]

A real ``Server`` and queue manager on a SQLite store in a temporary directory, and ``--sessions``
``Session`` objects whose transports are in-process stand-ins (no sockets): each round, every
session receives one SEND frame of a 200-byte recoverable message (what ``Queue.send`` writes), and
the round ends when every session has been answered.  The thread CPU time (user + system) of each
part is summed over the rounds and divided by the messages:

- *read and dispatch*: ``Session.data_received`` (the frame, the request, the message decoded, the
  send handed to the batcher);
- *queue manager*: ``SendBatcher._write`` without the store (checks, ids, the index, the stored
  rows, the answers' payloads);
- *store*: ``SQLiteStore.apply`` without its SQL (the group commit's bookkeeping);
- *SQLite*: ``SQLiteStore._commit_group`` (the insert, the commit and its fsync);
- *answer*: ``SendBatcher._done`` (the answer frames; their writes cost nothing here).

The socket work a real server adds (reading requests, writing the answers that wake the clients) is
what bench/server.py's concurrency floor measures.  The wrappers that time the parts add a little to
each; the process's own user and system time per message is printed beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pymsmq import Message, QueueManager
from pymsmq.protocol import ClientConnection, ClientHello, hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import Op
from pymsmq.protocol.fast_packet import encode_plain
from pymsmq.qm.store.sqlite import SQLiteStore
from pymsmq.server import Server, ServerConfig
from pymsmq.server.send_batcher import SendBatcher
from pymsmq.server.session import Session

Q = ".\\private$\\send-parts"
_PARTS = (
    ("read and dispatch", Session, "data_received"),
    ("queue manager (with the store)", SendBatcher, "_write"),
    ("store (with SQLite)", SQLiteStore, "apply"),
    ("SQLite", SQLiteStore, "_commit_group"),
    ("answer", SendBatcher, "_done"),
)


class _Transport:
    """What a ``Session`` needs of its transport, in memory: counts the writes, keeps them on request."""

    def __init__(self) -> None:
        self.writes = 0
        self.kept: list[bytes] | None = []

    def write(self, data: bytes) -> None:
        self.writes += 1
        if self.kept is not None:
            self.kept.append(data)

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 0) if name == "peername" else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _timed(spent: dict[str, int], label: str, owner: type, name: str) -> None:
    # Replace owner.name by a wrapper that adds its thread CPU time to spent[label].
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time_ns()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] += time.thread_time_ns() - start

    setattr(owner, name, wrapper)


async def _session(server: Server, packet: bytes, frames: int) -> tuple[Session, _Transport, list[bytes]]:
    # A session with its handshake done and the queue opened, and ``frames`` SEND frames for it.
    session = Session(server)
    transport = _Transport()
    session.connection_made(transport)  # type: ignore[arg-type]
    client = ClientConnection()
    session.data_received(client.send(ClientHello()))
    session._flush()
    assert transport.kept is not None
    client.receive_data(b"".join(transport.kept))
    transport.kept.clear()
    session.data_received(client.send_request(pm.OpenQueueRequest(Q, 2))[1])
    for _ in range(1000):
        if session.handles:
            break
        await asyncio.sleep(0.001)
    handle = next(iter(session.handles))
    transport.kept = None
    body = hot.send_request_body(handle, packet, None)
    out = []
    for _ in range(frames):
        framed = client.request_frame(int(Op.SEND), body)
        assert framed is not None
        out.append(framed[1])
        client.in_flight.clear()  # the answers are not read back: each frame its own request id
    return session, transport, out


async def _run(data: str, sessions: int, rounds: int, mode: str, spent: dict[str, int]) -> dict[str, float]:
    qm = QueueManager.open(data)
    try:
        qm.create_queue(Q).close()
        server = Server(qm, ServerConfig(durable_writes=mode))  # type: ignore[arg-type]
        loop = asyncio.get_running_loop()
        server.loop = server.work_pool.loop = server.send_batcher.loop = loop
        packet = encode_plain(Message(body=os.urandom(200), delivery=1))
        assert packet is not None
        warm = 50
        clients = [await _session(server, packet, warm + rounds) for _ in range(sessions)]

        async def play(first: int, last: int) -> None:
            for r in range(first, last):
                want = [t.writes + 1 for _, t, _ in clients]
                for session, _, frames in clients:
                    session.data_received(frames[r])
                while any(t.writes < w for (_, t, _), w in zip(clients, want, strict=True)):
                    await asyncio.sleep(0)

        await play(0, warm)
        for label in spent:
            spent[label] = 0
        before = resource.getrusage(resource.RUSAGE_SELF)
        await play(warm, warm + rounds)
        after = resource.getrusage(resource.RUSAGE_SELF)
        server.send_batcher.shutdown()
        n = sessions * rounds
        return {
            "user": (after.ru_utime - before.ru_utime) / n * 1e6,
            "system": (after.ru_stime - before.ru_stime) / n * 1e6,
            "sends per commit": server.send_batcher.sends / max(1, server.send_batcher.batches),
        }
    finally:
        qm.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=600)
    parser.add_argument("--durable-writes", default="loop", choices=("auto", "loop", "thread"))
    args = parser.parse_args()
    spent = {label: 0 for label, _, _ in _PARTS}
    for label, owner, name in _PARTS:
        _timed(spent, label, owner, name)
    with tempfile.TemporaryDirectory(prefix="pymsmq-send-parts-") as tmp:
        totals = asyncio.run(
            _run(os.path.join(tmp, "qm"), args.sessions, args.rounds, args.durable_writes, spent)
        )
    n = args.sessions * args.rounds
    us = {label: v / n / 1000 for label, v in spent.items()}
    print(
        f"{args.sessions} sessions, {args.rounds} rounds, --durable-writes {args.durable_writes}: "
        f"{totals['sends per commit']:.1f} sends per commit; process CPU per send: user "
        f"{totals['user']:.1f} us, system {totals['system']:.1f} us"
    )
    print("thread CPU per send (user + system), in parts:")
    qm_only = us["queue manager (with the store)"] - us["store (with SQLite)"]
    store_only = us["store (with SQLite)"] - us["SQLite"]
    rows = [
        ("read and dispatch", us["read and dispatch"]),
        ("queue manager", qm_only),
        ("store", store_only),
        ("SQLite (insert, commit, fsync)", us["SQLite"]),
        ("answer", us["answer"]),
    ]
    if args.durable_writes == "thread":
        print("  (thread mode: the queue manager, store and SQLite parts run on the batch thread)")
    for label, value in rows:
        print(f"  {label:32s} {value:6.2f} us")
    print(f"  {'sum':32s} {sum(v for _, v in rows):6.2f} us")


if __name__ == "__main__":
    main()
