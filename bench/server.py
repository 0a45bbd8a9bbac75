"""Benchmark the pymsmq server against Redis and RabbitMQ in the same run; writes docs/benchmarks.md.

    python bench/server.py [--seconds 3] [--no-peers]

Floors measured in the same run, first and last: this host's asyncio TCP echo (an ``asyncio.Protocol``
server in its own process that parses 4-byte length-prefixed messages and writes each back, a
blocking client with TCP_NODELAY, 4+200 bytes; one request in flight and 100 pipelined) and its
fdatasync rate (200-byte appends).  Every pymsmq number is also given as a ratio to them, because
the host is shared and its speed varies several-fold between runs.

Workloads (200-byte bodies):
* remote express send+receive, one request in flight (a message = one SEND + one RECEIVE, i.e. two
  round trips; "ops" counts requests);
* remote express pipelined: ``send_many`` then ``receive_many`` (messages through per second);
* recoverable (durable) sends from 1, 8 and 32 concurrent clients, one connection each, each client
  one request in flight (separate processes, so client CPU is not serialised by one GIL).
The peers run the same workloads: Redis with ``appendonly yes`` + ``appendfsync always`` (redis-py,
LPUSH/RPOP), RabbitMQ with persistent messages and publisher confirms (pika, basic_publish/basic_get).
Both are installed by this script from Debian packages (``apt-get install redis-server
rabbitmq-server``) and started on loopback, then stopped; ``redis`` and ``pika`` are pip-installed into
this interpreter's environment.  The tests never do this.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _durable_floor import FRAMED, concurrency_floor, prototype, remove_database, round_trips, timed_calls
from _report import machine, write_section

BODY = b"x" * 200
Q = ".\\private$\\bench"
SECTION = "## Server (bench/server.py)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _timed(seconds: float, step: Callable[[], int]) -> float:
    """Run ``step`` (returns messages done) until ``seconds`` pass; messages per second."""
    done = 0
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        done += step()
    return done / (time.perf_counter() - start)


# ---------------------------------------------------------------------------- floors

_ECHO_SERVER = (
    FRAMED
    + r"""
class Echo(Framed):
    # Length-prefixed messages, each parsed and written back on its own (per-message framing).
    def on_frame(self, frame):
        self.transport.write(frame)
async def main():
    server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""
)


def echo_probe(seconds: float) -> dict[str, float]:
    """asyncio Protocol echo over loopback: round trips/s with 1 in flight, messages/s 100 deep."""
    proc = subprocess.Popen([sys.executable, "-c", _ECHO_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        msg = len(BODY).to_bytes(4, "little") + BODY

        def rt(depth: int) -> int:
            for _ in range(100 // depth):
                sock.sendall(msg * depth)
                want = len(msg) * depth
                while want:
                    want -= len(sock.recv(1 << 16))
            return 100

        one = _timed(seconds / 2, lambda: rt(1))
        deep = _timed(seconds / 2, lambda: rt(100))
        sock.close()
    finally:
        proc.kill()
        proc.wait()
    return {"echo 1 in flight": one, "echo pipelined": deep}


def fsync_probe(directory: str, seconds: float = 1.0) -> float:
    """fdatasync per second after 200-byte appends (the bound of one durable commit per message)."""
    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:

        def one() -> int:
            os.write(fd, BODY)
            os.fdatasync(fd)
            return 1

        return _timed(seconds, one)
    finally:
        os.close(fd)
        os.unlink(path)


# ---------------------------------------------------------------------------- pymsmq


def start_pymsmq(data: str, src: str | None = None, *args: str) -> tuple[subprocess.Popen[str], str]:
    """A ``pymsmq serve`` process on ``data`` (any free port) from ``src`` (default: this tree's); its URL.

    ``args``: more ``pymsmq serve`` options (e.g. ``--durable-writes thread``).
    """
    src = src or str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=src)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from pymsmq.cli.serve import serve; serve()",
            "--data",
            data,
            "--port",
            "0",
            "--log-level",
            "error",
            *args,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    port = int(line.strip().rpartition(":")[2])
    return proc, f"msmq://127.0.0.1:{port}"


@contextlib.contextmanager
def pymsmq_serving(data: str, *args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``start_pymsmq(data, None, *args)`` with the benchmark queue created; stopped (SIGTERM) after."""
    proc, url = start_pymsmq(data, None, *args)
    try:
        pymsmq_prepare(url)
        yield proc, url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def pymsmq_express(url: str, seconds: float) -> dict[str, float]:
    from pymsmq import Message
    from pymsmq.client import connect

    qm = connect(url)
    if not qm.queue_exists(Q):
        qm.create_queue(Q).close()
    q = qm.queue(Q)
    m = Message(body=BODY)

    def one() -> int:
        for _ in range(100):
            q.send(m)
            q.receive(0)
        return 100

    single = _timed(seconds, one)
    batch = [Message(body=BODY) for _ in range(2000)]

    def pipelined() -> int:
        q.send_many(batch)
        got = q.receive_many(len(batch))
        assert len(got) == len(batch)
        return len(batch)

    piped = _timed(seconds, pipelined)
    qm.close()
    return {"express 1 in flight": single, "express pipelined": piped}


def express_latency(url: str) -> tuple[Callable[[float, float], None], dict[str, float]]:
    """A probe for ``concurrent(during=...)``: express send + receive round trips on a queue of its
    own, one at a time, from ``start_at`` for ``seconds``; fills the dict with p50 and p99 in ms."""
    from pymsmq import Message
    from pymsmq.client import connect

    found: dict[str, float] = {}

    def probe(start_at: float, seconds: float) -> None:
        qm = connect(url)
        name = ".\\private$\\latency"
        if not qm.queue_exists(name):
            qm.create_queue(name).close()
        q = qm.queue(name)
        m = Message(body=BODY)
        took: list[float] = []
        while time.time() < start_at:
            time.sleep(0.001)
        end = time.perf_counter() + seconds
        while (now := time.perf_counter()) < end:
            q.send(m)
            q.receive(0)
            took.append(time.perf_counter() - now)
        qm.close()
        took.sort()
        if took:
            found["p50 ms"] = 1000 * took[len(took) // 2]
            found["p99 ms"] = 1000 * took[min(len(took) - 1, len(took) * 99 // 100)]

    return probe, found


def pymsmq_prepare(url: str) -> None:
    """Create the benchmark queue (express and recoverable workloads share it)."""
    from pymsmq.client import connect

    qm = connect(url)
    if not qm.queue_exists(Q):
        qm.create_queue(Q).close()
    qm.close()


def pymsmq_transactional(url: str, count: int = 20_000, per: int = 250) -> tuple[float, float, float]:
    """A transactional queue: one client's send_many then receive_many of ``per`` per transaction,
    then 4 clients (threads, a connection each) receiving ``per`` per transaction at once.

    Messages per second of each (pymsmq only: the peers' transactions are not the same thing).
    """

    from pymsmq import Message
    from pymsmq.client import connect

    name = r".\private$\bench_transactional"
    qm = connect(url)
    try:
        q = qm.create_queue(name, transactional=True)

        def fill() -> float:
            start = time.perf_counter()
            for _ in range(0, count, per):
                with qm.begin_transaction() as tx:
                    q.send_many([Message(body=BODY) for _ in range(per)], transaction=tx)
            return count / (time.perf_counter() - start)

        def consume(client: Any, got: list[int], timeout: float) -> None:
            # Until every message is taken; with others at work, what is left may be locked by
            # them for a moment: timeout 0 asks again rather than wait (a wait would end the run
            # up to its length late).
            cq = client.queue(name)
            while sum(got) < count:
                with client.begin_transaction() as tx:
                    got.append(len(cq.receive_many(per, timeout=timeout, transaction=tx)))

        sends = fill()
        got: list[int] = []
        start = time.perf_counter()
        consume(qm, got, 1.0)
        receives = sum(got) / (time.perf_counter() - start)
        fill()
        clients = [connect(url) for _ in range(4)]
        shared: list[int] = []
        threads = [threading.Thread(target=consume, args=(c, shared, 0.0)) for c in clients]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        together = sum(shared) / (time.perf_counter() - start)
        for c in clients:
            c.close()
        return sends, receives, together
    finally:
        qm.close()


def _pymsmq_durable_worker(url: str, seconds: float, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from pymsmq import Message
    from pymsmq.client import connect

    qm = connect(url)
    q = qm.queue(Q)
    m = Message(body=BODY, delivery=1)
    out.put(timed_calls(lambda: q.send(m), seconds, start_at))
    qm.close()


def _pymsmq_frames_worker(url: str, seconds: float, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    """The recoverable-send worker with the client library's work taken out of the loop.

    The SEND frame ``Queue.send`` writes is built once; the loop writes it and reads the answer as
    the prototype's clients do (the server sees the same request each time, a new message each
    time).  Its rate and CPU split the cost of a send between the server and the client library.
    """
    from pymsmq import Message
    from pymsmq.client import connect
    from pymsmq.protocol import hot
    from pymsmq.protocol.codes import Op
    from pymsmq.protocol.fast_packet import encode_plain

    qm = connect(url)
    q: Any = qm.queue(Q)
    packet = encode_plain(Message(body=BODY, delivery=1))
    assert packet is not None
    t = q._t
    framed = t._conn.request_frame(int(Op.SEND), hot.send_request_body(q._handle, packet, None))
    assert framed is not None
    sock = t._sock
    out.put(timed_calls(round_trips(sock, framed[1]), seconds, start_at))  # answers: 60 bytes each
    sock.close()


def proc_cpu(pid: int) -> float:
    """CPU seconds (utime + stime, every thread) of process ``pid`` from /proc; NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def _loop_thread_cpu(pid: int) -> float:
    """CPU seconds of process ``pid``'s main thread (the server's event loop) from /proc; NaN elsewhere.

    The rest of the server's CPU (``proc_cpu`` minus this) is its other threads: mostly the send
    batcher's, which writes the recoverable sends.
    """
    try:
        fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def commit_cpu_probe(directory: str, seconds: float = 1.0) -> float:
    """CPU microseconds of one bare SQLite commit of one 200-byte row (WAL, ``synchronous=FULL``).

    The CPU floor of a durable send when every send has a commit of its own (1 client): mostly the
    kernel's work for the WAL fdatasync (on this VM, tens of microseconds even though the wait for
    the disk is not CPU).
    """
    import sqlite3

    path = os.path.join(directory, "commit-probe.db")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, body BLOB)")
        n = 0
        cpu = time.process_time()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO m (body) VALUES (?)", (BODY,))
            conn.execute("COMMIT")
            n += 1
        return (time.process_time() - cpu) / max(1, n) * 1e6
    finally:
        conn.close()
        remove_database(path)


def _send_batches(url: str) -> tuple[int, int]:
    """(batches, sends) the server's send batcher wrote so far (STATS)."""
    from pymsmq.client import connect

    qm = connect(url)
    try:
        sb = qm.server_stats().get("send_batches") or {}
        return int(sb.get("batches", 0)), int(sb.get("sends", 0))
    finally:
        qm.close()


def _server_event_loop(url: str) -> str:
    """What the server at ``url`` runs on: "uvloop 0.23.0" or "asyncio" (STATS)."""
    from pymsmq.client import connect

    qm = connect(url)
    try:
        return str(qm.server_stats().get("event_loop", "?"))
    finally:
        qm.close()


def _bench_loop() -> str:
    """The loop of this script's own servers (floors, prototype): uvloop when it imports."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio's loop (uvloop is not installed)"
    return "uvloop"


# ---------------------------------------------------------------------------- Redis


def start_redis(tmp: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            tmp,
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--save",
            "",
        ],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    import redis

    for _ in range(100):
        try:
            redis.Redis(port=port).ping()
            return proc, port
        except redis.ConnectionError:
            time.sleep(0.1)
    raise RuntimeError("redis did not start")


def redis_express(port: int, seconds: float) -> dict[str, float]:
    import redis

    r = redis.Redis(port=port)

    def one() -> int:
        for _ in range(100):
            r.lpush("q", BODY)
            r.rpop("q")
        return 100

    single = _timed(seconds, one)

    def pipelined() -> int:
        p = r.pipeline(transaction=False)
        for _ in range(2000):
            p.lpush("q", BODY)
        for _ in range(2000):
            p.rpop("q")
        p.execute()
        return 2000

    return {"express 1 in flight": single, "express pipelined": _timed(seconds, pipelined)}


def _redis_durable_worker(port: int, seconds: float, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    import redis

    r = redis.Redis(port=port)
    out.put(timed_calls(lambda: r.lpush("durable", BODY), seconds, start_at))


# ---------------------------------------------------------------------------- RabbitMQ


class Rabbit:
    """A private RabbitMQ node on loopback (its own HOME, mnesia, logs, ports); ``stop()`` ends it."""

    def __init__(self, tmp: str) -> None:
        self.port = _free_port()
        self.node = f"pymsmqbench{self.port}@localhost"
        home = os.path.join(tmp, "home")
        os.makedirs(home, exist_ok=True)
        # The Debian wrapper /usr/sbin/rabbitmq-server switches to the rabbitmq user, which cannot
        # write our temporary directories: run the real script as ourselves, with HOME (the Erlang
        # cookie), mnesia, logs, plugins file and every port private and on loopback.
        self.env = dict(
            os.environ,
            HOME=home,
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(_free_port()),
            RABBITMQ_MNESIA_BASE=os.path.join(tmp, "mnesia"),
            RABBITMQ_LOG_BASE=os.path.join(tmp, "log"),
            RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(tmp, "enabled_plugins"),
            RABBITMQ_CONFIG_FILE=os.path.join(tmp, "rabbitmq"),
            ERL_EPMD_ADDRESS="127.0.0.1",
        )
        script = "/usr/lib/rabbitmq/bin/rabbitmq-server"
        self.ctl = "/usr/lib/rabbitmq/bin/rabbitmqctl"
        if not os.path.exists(script):
            script, self.ctl = "rabbitmq-server", "rabbitmqctl"
        self.epmd_before = _pids("epmd")
        self.proc = subprocess.Popen(
            [script],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        started = time.time()
        deadline = started + 240
        error = ""
        while True:
            # await_startup fails at once while the node is not registered with epmd yet: retry.
            ready = subprocess.run(
                [self.ctl, "-n", self.node, "await_startup", "--timeout", "60"],
                env=self.env,
                capture_output=True,
                timeout=120,
            )
            if ready.returncode == 0:
                break
            error = ready.stderr.decode(errors="replace").strip()[-300:]
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError(f"rabbitmq did not start: {error}")
            time.sleep(1.0)
        self.startup = time.time() - started

    def stop(self) -> None:
        """Stop the node, then the epmd it started (by pid; an epmd that was already there stays)."""
        subprocess.run([self.ctl, "-n", self.node, "stop"], env=self.env, capture_output=True, timeout=120)
        _stop(self.proc)
        for pid in _pids("epmd") - self.epmd_before:
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass


def _pids(name: str) -> set[int]:
    """Pids of processes called ``name`` (from /proc)."""
    out: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().strip() == name:
                        out.add(int(entry))
            except OSError:
                pass
    return out


def _rabbit_channel(port: int, durable: bool) -> object:
    import pika

    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))
    ch = conn.channel()
    ch.queue_declare("bench-durable" if durable else "bench", durable=durable)
    ch.confirm_delivery()
    return ch


def rabbit_express(port: int, seconds: float) -> dict[str, float]:
    import pika

    ch = _rabbit_channel(port, False)
    props = pika.BasicProperties(delivery_mode=1)

    def one() -> int:
        for _ in range(50):
            ch.basic_publish("", "bench", BODY, props)  # type: ignore[attr-defined]
            ch.basic_get("bench", auto_ack=True)  # type: ignore[attr-defined]
        return 50

    return {"express 1 in flight": _timed(seconds, one)}


def _rabbit_durable_worker(port: int, seconds: float, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    import pika

    ch = _rabbit_channel(port, True)
    props = pika.BasicProperties(delivery_mode=2)
    out.put(timed_calls(lambda: ch.basic_publish("", "bench-durable", BODY, props), seconds, start_at))  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- driver


def concurrent(
    worker: Callable[..., None],
    target: object,
    clients: int,
    seconds: float,
    server_pid: int | None = None,
    cpu: dict[str, float] | None = None,
    during: Callable[[float, float], object] | None = None,
) -> float:
    """Messages per second from ``clients`` processes, each one connection, one request in flight.

    A worker puts its message count, or (count, its CPU seconds).  With ``server_pid`` and ``cpu``,
    ``cpu`` gets the server's and the clients' CPU microseconds per message (the host is shared and
    its rates vary several-fold; CPU per message is the steadier measure).  ``during(start_at,
    seconds)`` runs on a thread of this process while the workers run (a probe of the same server).
    """
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    start_at = time.time() + 1.0 + clients * 0.05
    procs = [ctx.Process(target=worker, args=(target, seconds, start_at, out)) for _ in range(clients)]
    for p in procs:
        p.start()
    probe = None if during is None else threading.Thread(target=during, args=(start_at, seconds))
    if probe is not None:
        probe.start()
    while time.time() < start_at:
        time.sleep(0.001)
    server_cpu = proc_cpu(server_pid) if server_pid is not None else 0.0
    loop_cpu = _loop_thread_cpu(server_pid) if server_pid is not None else 0.0
    results = [out.get(timeout=seconds + 120) for _ in procs]
    if server_pid is not None:
        server_cpu = proc_cpu(server_pid) - server_cpu
        loop_cpu = _loop_thread_cpu(server_pid) - loop_cpu
    for p in procs:
        p.join(30)
    if probe is not None:
        probe.join(seconds + 60)
    total = sum(r[0] if isinstance(r, tuple) else r for r in results)
    if cpu is not None and total:
        cpu["server us/msg"] = server_cpu / total * 1e6
        cpu["server loop thread us/msg"] = loop_cpu / total * 1e6
        cpu["clients us/msg"] = sum(r[1] for r in results if isinstance(r, tuple)) / total * 1e6
    return float(total) / seconds


def _latency_under_load(url: str, seconds: float, pid: int) -> tuple[dict[str, float], dict[str, float]]:
    """Express round-trip latency (p50, p99) alone, then while 32 clients send recoverable messages."""
    alone, idle = express_latency(url)
    alone(time.time(), seconds)
    probe, busy = express_latency(url)
    concurrent(_pymsmq_durable_worker, url, 32, seconds, pid, during=probe)
    return idle, busy


def install_peers() -> str | None:
    """apt-get the peers and pip-install their clients; returns why not, or None."""
    try:
        if not (shutil.which("redis-server") and shutil.which("rabbitmq-server")):
            subprocess.run(["apt-get", "update"], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(
                ["apt-get", "install", "-y", "redis-server", "rabbitmq-server"],
                check=True,
                stdout=subprocess.DEVNULL,
                env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
            )
            for svc in ("redis-server", "rabbitmq-server"):  # Debian starts them; we run our own
                subprocess.run(["service", svc, "stop"], check=False, capture_output=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "redis", "pika"], check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"peers not installed: {exc}"
    return None


def _stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGTERM to the process's group (the peers lead their own) or to the process; SIGKILL after 30 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    secs = args.seconds
    results: dict[str, dict[str, float]] = {"pymsmq": {}, "Redis": {}, "RabbitMQ": {}, "prototype": {}}
    floors: list[dict[str, float]] = []
    notes: list[str] = []
    durable_cpu: dict[int, tuple[float, float, float]] = {}
    latency: dict[str, tuple[dict[str, float], dict[str, float]]] = {}
    redis_cpu: dict[int, tuple[float, float]] = {}
    tmp = tempfile.mkdtemp(prefix="pymsmq-bench-")

    def probe() -> None:
        f = echo_probe(2.0)
        f["fdatasync"] = fsync_probe(tmp)
        floors.append(f)
        print("floors:", {k: round(v) for k, v in f.items()}, flush=True)

    probe()
    commit_us = commit_cpu_probe(tmp)
    floor_rate, floor_server, floor_client = concurrency_floor(32, secs, concurrent)
    print(
        f"concurrency floor, 32 clients: {floor_rate:.0f} round trips/s; CPU per round trip: server "
        f"{floor_server:.0f} us, clients {floor_client:.0f} us",
        flush=True,
    )
    notes.append(
        f"Concurrency floor (32 blocking Python clients, one request in flight each, against a "
        f"server on {_bench_loop()} that answers at once): {floor_rate / 1000:.1f}k round trips/s; "
        f"CPU per round trip {floor_server:.0f} us in the server and {floor_client:.0f} us in the clients"
    )
    for n, (rate, server_us, client_us) in prototype(tmp, (1, 8, 32), secs, concurrent).items():
        results["prototype"][f"recoverable sends, {n} clients"] = rate
        notes.append(
            f"The anchors' prototype (performance-anchors.md 4.3), {n} clients: {rate / 1000:.1f}k/s; CPU "
            f"per put {server_us:.0f} us in the server and {client_us:.0f} us in the clients"
        )
        print(notes[-1], flush=True)
    with pymsmq_serving(os.path.join(tmp, "qm")) as (proc, url):
        loop_name = _server_event_loop(url)
        notes.append(
            f"`pymsmq serve` ran on {loop_name} (`--event-loop auto`); the floors' servers and the "
            f"prototype on {_bench_loop()}"
        )
        if not loop_name.startswith("uvloop"):
            notes.append("uvloop is not installed here: pip install '.[server]' gives the server its loop")
        print(notes[-1], flush=True)
        results["pymsmq"].update(pymsmq_express(url, secs))
        for n in (1, 8, 32):
            cpu: dict[str, float] = {}
            before = _send_batches(url)
            results["pymsmq"][f"recoverable sends, {n} clients"] = rate = concurrent(
                _pymsmq_durable_worker, url, n, secs, proc.pid, cpu
            )
            after = _send_batches(url)
            per = (after[1] - before[1]) / max(1, after[0] - before[0])
            durable_cpu[n] = (cpu.get("server us/msg", 0.0), cpu.get("clients us/msg", 0.0), per)
            loop_us = cpu.get("server loop thread us/msg", 0.0)
            print(
                f"pymsmq recoverable, {n} clients: {rate:.0f}/s; CPU per message: server "
                f"{durable_cpu[n][0]:.0f} us (loop thread {loop_us:.0f}, other threads "
                f"{durable_cpu[n][0] - loop_us:.0f}), clients {durable_cpu[n][1]:.0f} us; {per:.1f} sends "
                f"per commit (a bare SQLite commit: {commit_us:.0f} us CPU); load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        cpu = {}
        rate = concurrent(_pymsmq_frames_worker, url, 32, secs, proc.pid, cpu)
        results["pymsmq"]["recoverable sends, 32 clients writing frames"] = rate
        notes.append(
            "pymsmq recoverable, 32 clients writing a prepared SEND frame (no client library in the "
            f"loop): {_rate_and_cpu(rate, cpu)}"
        )
        print(notes[-1], flush=True)
        tx_sends, tx_receives, tx_four = pymsmq_transactional(url)
        latency["auto (the default)"] = _latency_under_load(url, secs, proc.pid)
        notes.append(
            f"pymsmq transactional queue, 250 messages per transaction: one client send_many "
            f"{tx_sends / 1000:.1f}k/s and receive_many {tx_receives / 1000:.1f}k/s; 4 clients receiving "
            f"at once {tx_four / 1000:.1f}k/s (no peer measured)"
        )
        print("pymsmq:", {k: round(v) for k, v in results["pymsmq"].items()}, notes[-1], flush=True)
    for mode in ("loop", "thread"):  # the other places recoverable sends can be written
        with pymsmq_serving(os.path.join(tmp, f"qm-{mode}"), "--durable-writes", mode) as (proc, url):
            cpu = {}
            rate = concurrent(_pymsmq_durable_worker, url, 32, secs, proc.pid, cpu)
            results["pymsmq"][f"recoverable sends, 32 clients, --durable-writes {mode}"] = rate
            latency[mode] = _latency_under_load(url, secs, proc.pid)
            notes.append(
                f"pymsmq recoverable, 32 clients, `pymsmq serve --durable-writes {mode}`: "
                f"{_rate_and_cpu(rate, cpu)}"
            )
            print(notes[-1], flush=True)
    # The same server on asyncio's own loop: what uvloop (--event-loop auto) gives the express paths.
    with pymsmq_serving(os.path.join(tmp, "qm-asyncio"), "--event-loop", "asyncio") as (_, url):
        on_asyncio = pymsmq_express(url, secs)
        for key, rate in on_asyncio.items():
            results["pymsmq"][f"{key}, --event-loop asyncio"] = rate
        notes.append(
            "pymsmq express on asyncio's loop (`--event-loop asyncio`): 1 in flight "
            f"{on_asyncio['express 1 in flight'] / 1000:.1f}k/s, pipelined "
            f"{on_asyncio['express pipelined'] / 1000:.1f}k/s"
        )
        print(notes[-1], flush=True)
    for mode, (idle, busy) in latency.items():
        notes.append(
            f"Express send + receive round trip (one client, its own queue), `--durable-writes {mode}`: "
            f"p50 / p99 {idle['p50 ms']:.2f} / {idle['p99 ms']:.2f} ms alone, {busy['p50 ms']:.2f} / "
            f"{busy['p99 ms']:.2f} ms while 32 clients send recoverable messages"
        )
        print(notes[-1], flush=True)

    why = "--no-peers given" if args.no_peers else install_peers()
    if why is None:
        os.makedirs(os.path.join(tmp, "redis"))
        rproc, rport = start_redis(os.path.join(tmp, "redis"))
        try:
            results["Redis"].update(redis_express(rport, secs))
            for n in (1, 8, 32):
                rcpu: dict[str, float] = {}
                results["Redis"][f"recoverable sends, {n} clients"] = rate = concurrent(
                    _redis_durable_worker, rport, n, secs, rproc.pid, rcpu
                )
                redis_cpu[n] = (rcpu.get("server us/msg", 0.0), rcpu.get("clients us/msg", 0.0))
                print(
                    f"Redis recoverable, {n} clients: {rate:.0f}/s; CPU per message: server "
                    f"{redis_cpu[n][0]:.0f} us, clients {redis_cpu[n][1]:.0f} us; "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        finally:
            _stop(rproc)
        try:
            rabbit = Rabbit(os.path.join(tmp, "rabbit"))
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            notes.append(f"RabbitMQ not measured: {exc}")
        else:
            notes.append(f"RabbitMQ {rabbit.node} started in {rabbit.startup:.0f} s")
            try:
                results["RabbitMQ"].update(rabbit_express(rabbit.port, secs))
                for n in (1, 8, 32):
                    results["RabbitMQ"][f"recoverable sends, {n} clients"] = concurrent(
                        _rabbit_durable_worker, rabbit.port, n, secs
                    )
            finally:
                rabbit.stop()
    else:
        notes.append(why)
    probe()
    shutil.rmtree(tmp, ignore_errors=True)
    for n, (server_us, client_us, per) in durable_cpu.items():
        notes.append(
            f"pymsmq recoverable sends, {n} clients: CPU per message {server_us:.0f} us in the server "
            f"and {client_us:.0f} us in the clients (/proc and process_time); {per:.1f} sends per commit"
        )
    for n, (server_us, client_us) in redis_cpu.items():
        notes.append(
            f"Redis LPUSH (fsync always), {n} clients: CPU per message {server_us:.0f} us in "
            f"redis-server and {client_us:.0f} us in the redis-py clients (/proc and process_time)"
        )
    text = report(results, floors, notes, secs)
    write_section(SECTION, text)
    print(text)


def _rate_and_cpu(rate: float, cpu: dict[str, float]) -> str:
    """ "<rate>k/s; CPU per message <n> us in the server and <m> us in the clients" (``concurrent``'s cpu)."""
    return (
        f"{rate / 1000:.1f}k/s; CPU per message {cpu.get('server us/msg', 0.0):.0f} us in the server and "
        f"{cpu.get('clients us/msg', 0.0):.0f} us in the clients"
    )


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"


def report(
    results: dict[str, dict[str, float]], floors: list[dict[str, float]], notes: list[str], secs: float
) -> str:
    """The docs/benchmarks.md section: absolute rates, then same-run ratios."""
    rows = [
        "express 1 in flight",
        "express pipelined",
        "recoverable sends, 1 clients",
        "recoverable sends, 8 clients",
        "recoverable sends, 32 clients",
    ]
    p, r, b = results["pymsmq"], results["Redis"], results["RabbitMQ"]

    def floor(key: str) -> float | None:
        values = [f[key] for f in floors if key in f]
        return sum(values) / len(values) if values else None

    echo1, echo_deep, fsync = floor("echo 1 in flight"), floor("echo pipelined"), floor("fdatasync")
    span = ", ".join(
        f"{_fmt(f['echo 1 in flight'])} / {_fmt(f['echo pipelined'])} / {_fmt(f['fdatasync'])}"
        for f in floors
    )
    lines = [
        SECTION,
        "",
        f"`python bench/server.py` on {machine()}, {time.strftime('%Y-%m-%d %H:%M')}; {secs:.0f} s per "
        "measurement, 200-byte bodies, server and clients on one host over loopback.  Rates are messages "
        "per second (express 1 in flight: one send plus one receive per message, i.e. two round trips).",
        "",
        f"Floors of this host in the same run (before / after: asyncio echo round trips 1 in flight, echo "
        f"messages 100 deep, fdatasync): {span}.  The host is shared: compare the ratios, not the rates.",
        "",
        "| workload | pymsmq | Redis (fsync always) | RabbitMQ (persistent, confirms) | anchors' prototype |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        cells = " | ".join(_fmt(results[k].get(row)) for k in ("pymsmq", "Redis", "RabbitMQ", "prototype"))
        lines.append(f"| {row} | {cells} |")
    lines += ["", "| ratio (same run) | value | target |", "|---|---|---|"]

    def ratio(name: str, a: float | None, c: float | None, target: str) -> None:
        value = f"{a / c:.2f}" if a is not None and c else "-"
        lines.append(f"| {name} | {value} | {target} |")

    e1, ep, r32 = p.get(rows[0]), p.get(rows[1]), p.get(rows[4])
    lines.append(f"| express 1 in flight, messages (absolute) | {_fmt(e1)} | >= 25k/s |")
    lines.append(f"| express 1 in flight, requests (absolute, 2 per message) | {_fmt(e1 and 2 * e1)} | |")
    lines.append(f"| express pipelined (absolute) | {_fmt(ep)} | >= 150k/s |")
    lines.append(f"| recoverable 32 clients (absolute) | {_fmt(r32)} | >= 40k/s |")
    ratio("express 1 in flight requests / echo round trips", e1 and 2 * e1, echo1, "25k / 38k = 0.66")
    ratio("express pipelined / echo 100 deep", ep, echo_deep, "150k / 183k (streams) = 0.82")
    ratio("recoverable 32 clients / fdatasync", r32, fsync, "40k / 11k = 3.6")
    ratio("recoverable 1 client / fdatasync", p.get(rows[2]), fsync, "6.5k / 11k = 0.6")
    ratio(
        "recoverable 32 clients / the anchors' prototype 32",
        r32,
        results["prototype"].get(rows[4]),
        "40k / 40k = 1",
    )
    for mode in ("loop", "thread"):
        other = p.get(f"recoverable sends, 32 clients, --durable-writes {mode}")
        ratio(f"recoverable 32 clients: --durable-writes {mode} / auto (the default)", other, r32, "")
    for row in rows[:2]:
        other = p.get(f"{row}, --event-loop asyncio")
        ratio(f"{row}: --event-loop asyncio / auto (the default)", other, p.get(row), "")
    # The issue asks >= 4x RabbitMQ and >= 3x Redis at each concurrency; the prototype's own ratios
    # show what a server with no queue manager at all makes against the same peers.
    proto = results["prototype"]
    for n, row in zip((1, 8, 32), rows[2:], strict=True):
        ratio(f"recoverable {n} client(s) / RabbitMQ {n}", p.get(row), b.get(row), ">= 4")
        ratio(f"recoverable {n} client(s) / Redis {n}", p.get(row), r.get(row), ">= 3")
        ratio(f"the anchors' prototype {n} / Redis {n}", proto.get(row), r.get(row), "")
    # One client waits for each send's fsync: it cannot pass one send per fdatasync.  Above 1, the
    # rate these targets ask of one client is above what the disk allows.
    for peer, times, got in (("Redis", 3, r.get(rows[2])), ("RabbitMQ", 4, b.get(rows[2]))):
        ratio(
            f"{times} x {peer} 1 client / fdatasync (the 1-client target / the disk's bound)",
            got and times * got,
            fsync,
            "",
        )
    ratio("express 1 in flight / Redis", e1, r.get(rows[0]), "")
    ratio("express 1 in flight / RabbitMQ", e1, b.get(rows[0]), "")
    ratio("express pipelined / Redis", ep, r.get(rows[1]), "")
    lines.append("")
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    main()
