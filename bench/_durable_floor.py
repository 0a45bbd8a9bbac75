"""The concurrency floor of the recoverable-send benchmark (used by bench/server.py).

Blocking Python clients, one request in flight each, against a server that answers every request at
once and does nothing else: the kernel's TCP, wake-up and scheduling cost of that traffic on this
host plus the cheapest possible Python client loop.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable

#: ``server.concurrent``: (worker, target, clients, seconds, server pid, cpu dict) -> messages/s.
Runner = Callable[..., float]

# The start of each throw-away server script: an asyncio ``Protocol`` reading length-prefixed
# frames (4-byte little-endian length), each handed whole (prefix included) to ``on_frame``.
FRAMED = r"""
import asyncio
class Framed(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""
    def data_received(self, data):
        buf = self.buf + data
        pos = 0
        while len(buf) - pos >= 4:
            end = pos + 4 + int.from_bytes(buf[pos : pos + 4], "little")
            if end > len(buf):
                break
            self.on_frame(buf[pos:end])
            pos = end
        self.buf = buf[pos:]
"""

# The end of each: listen on a free loopback port, print it, serve with uvloop (asyncio's loop
# without it).
_SERVE = r"""
async def main():
    server = await asyncio.get_running_loop().create_server({protocol}, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
try:
    import uvloop
    uvloop.run(main())
except ImportError:
    asyncio.run(main())
"""

# A server that answers each request with a 48-byte frame at once: the shape of a recoverable SEND
# and its answer, with no work at all.
_ANSWER_SERVER = (
    FRAMED
    + r"""
class Answer(Framed):
    def on_frame(self, frame):
        self.transport.write(b"\x2c\x00\x00\x00" + b"a" * 44)
"""
    + _SERVE.format(protocol="Answer")
)


def remove_database(path: str) -> None:
    """Delete the SQLite database ``path`` with its WAL and shared-memory files."""
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


def timed_calls(step: Callable[[], object], seconds: float, start_at: float) -> tuple[int, float]:
    """A benchmark worker's loop: wait until ``start_at`` (wall clock), then call ``step`` for
    ``seconds``; returns (calls, CPU seconds of this process meanwhile)."""
    while time.time() < start_at:
        time.sleep(0.001)
    n = 0
    cpu = time.process_time()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        step()
        n += 1
    return n, time.process_time() - cpu


def round_trips(sock: socket.socket, frame: bytes) -> Callable[[], object]:
    """One request in flight: write ``frame``, read its (small, one-piece) answer."""
    view = memoryview(bytearray(1 << 16))

    def step() -> object:
        sock.sendall(frame)
        return sock.recv_into(view)

    return step


def _answer_worker(port: int, seconds: float, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    msg = (312).to_bytes(4, "little") + b"x" * 312  # about a SEND frame with a 200-byte body
    out.put(timed_calls(round_trips(sock, msg), seconds, start_at))
    sock.close()


def concurrency_floor(clients: int, seconds: float, concurrent: Runner) -> tuple[float, float, float]:
    """(round trips/s, server CPU us, client CPU us per round trip): ``clients`` blocking Python clients.

    Each client is a process with one request in flight, as the recoverable-send workers are,
    against a server that answers at once and does nothing else (``_ANSWER_SERVER``).  The floor of
    the kernel's TCP, wake-up and scheduling costs of that traffic on this host, and of the
    cheapest Python client: what no server written in Python can beat at this concurrency.
    ``concurrent`` is ``server.concurrent`` (runs the worker processes, measures CPU).
    """
    proc = subprocess.Popen([sys.executable, "-c", _ANSWER_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        cpu: dict[str, float] = {}
        rate = concurrent(_answer_worker, port, clients, seconds, proc.pid, cpu)
    finally:
        proc.kill()
        proc.wait()
    return rate, cpu.get("server us/msg", 0.0), cpu.get("clients us/msg", 0.0)


# The anchors' prototype (performance-anchors.md 4.3, "about 120 lines of Python"): a uvloop
# ``Protocol`` server on SQLite WAL with synchronous=FULL; every PUT frame that arrived by the next
# loop turn, on any connection, is inserted in one transaction, and each is answered after COMMIT.
# No queue manager, no message format, no protocol beyond a length prefix.
_PROTOTYPE_SERVER = (
    FRAMED
    + r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, body BLOB)")
pending = []
def flush():
    global pending
    batch, pending = pending, []
    db.execute("BEGIN")
    db.executemany("INSERT INTO m (body) VALUES (?)", [(body,) for _, body in batch])
    db.execute("COMMIT")
    for transport, _ in batch:
        transport.write(b"\x2c\x00\x00\x00" + b"a" * 44)
class Put(Framed):
    def on_frame(self, frame):
        if not pending:
            asyncio.get_running_loop().call_soon(flush)
        pending.append((self.transport, frame[4:]))
"""
    + _SERVE.format(protocol="Put")
)


def prototype(
    directory: str, counts: tuple[int, ...], seconds: float, concurrent: Runner
) -> dict[int, tuple[float, float, float]]:
    """{clients: (puts/s, server CPU us, client CPU us per put)} of the anchors' prototype server.

    The same blocking client processes as ``concurrency_floor`` (one 312-byte request in flight
    each), against ``_PROTOTYPE_SERVER``: group commit in its simplest form, with nothing of a queue
    manager.  On the anchors' host it made 7.7k / 23k / 40k puts/s from 1 / 8 / 32 clients: the
    targets of the recoverable-send rows come from it, so its rate in the same run shows what they
    ask of this host.
    """
    out: dict[int, tuple[float, float, float]] = {}
    for n in counts:
        path = os.path.join(directory, f"prototype-{n}.db")
        proc = subprocess.Popen(
            [sys.executable, "-c", _PROTOTYPE_SERVER, path], stdout=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline())
            cpu: dict[str, float] = {}
            rate = concurrent(_answer_worker, port, n, seconds, proc.pid, cpu)
            out[n] = (rate, cpu.get("server us/msg", 0.0), cpu.get("clients us/msg", 0.0))
        finally:
            proc.kill()
            proc.wait()
            remove_database(path)
    return out
