"""Benchmark the pymsmq server against Redis and RabbitMQ in the same run; writes docs/benchmarks.md.

    python bench/server.py [--seconds 3] [--no-peers]

Workloads (200-byte bodies):
* remote express send+receive, one request in flight (a message = one SEND + one RECEIVE);
* remote express pipelined: ``send_many`` then pipelined receives (messages through per second);
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
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

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


# ---------------------------------------------------------------------------- pymsmq


def start_pymsmq(data: str) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
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
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    port = int(line.strip().rpartition(":")[2])
    return proc, f"msmq://127.0.0.1:{port}"


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
        pending = [q.receive_async(0) for _ in range(len(batch))]
        for p in pending:
            p.result()
        return len(batch)

    piped = _timed(seconds, pipelined)
    qm.close()
    return {"express 1 in flight": single, "express pipelined": piped}


def _pymsmq_durable_worker(url: str, seconds: float, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from pymsmq import Message
    from pymsmq.client import connect

    qm = connect(url)
    q = qm.queue(Q)
    m = Message(body=BODY, delivery=1)
    while time.time() < start_at:
        time.sleep(0.001)
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        q.send(m)
        n += 1
    out.put(n)
    qm.close()


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
    while time.time() < start_at:
        time.sleep(0.001)
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        r.lpush("durable", BODY)
        n += 1
    out.put(n)


# ---------------------------------------------------------------------------- RabbitMQ


def start_rabbit(tmp: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    env = dict(
        os.environ,
        RABBITMQ_NODE_PORT=str(port),
        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
        RABBITMQ_NODENAME=f"bench{port}@localhost",
        RABBITMQ_MNESIA_BASE=tmp,
        RABBITMQ_LOG_BASE=tmp,
        RABBITMQ_DIST_PORT=str(_free_port()),
    )
    proc = subprocess.Popen(
        ["rabbitmq-server"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    import pika

    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port)).close()
            return proc, port
        except Exception:
            time.sleep(0.5)
    raise RuntimeError("rabbitmq did not start")


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
    while time.time() < start_at:
        time.sleep(0.001)
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        ch.basic_publish("", "bench-durable", BODY, props)  # type: ignore[attr-defined]
        n += 1
    out.put(n)


# ---------------------------------------------------------------------------- driver


def concurrent(worker: Callable[..., None], target: object, clients: int, seconds: float) -> float:
    """Messages per second from ``clients`` processes, each one connection, one request in flight."""
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    start_at = time.time() + 1.0 + clients * 0.05
    procs = [ctx.Process(target=worker, args=(target, seconds, start_at, out)) for _ in range(clients)]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join(30)
    return total / seconds


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
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    secs = args.seconds
    results: dict[str, dict[str, float]] = {"pymsmq": {}, "Redis": {}, "RabbitMQ": {}}
    notes: list[str] = []
    tmp = tempfile.mkdtemp(prefix="pymsmq-bench-")

    proc, url = start_pymsmq(os.path.join(tmp, "qm"))
    try:
        results["pymsmq"].update(pymsmq_express(url, secs))
        for n in (1, 8, 32):
            results["pymsmq"][f"recoverable sends, {n} clients"] = concurrent(
                _pymsmq_durable_worker, url, n, secs
            )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)

    why = "--no-peers given" if args.no_peers else install_peers()
    if why is None:
        os.makedirs(os.path.join(tmp, "redis"))
        rproc, rport = start_redis(os.path.join(tmp, "redis"))
        try:
            results["Redis"].update(redis_express(rport, secs))
            for n in (1, 8, 32):
                results["Redis"][f"recoverable sends, {n} clients"] = concurrent(
                    _redis_durable_worker, rport, n, secs
                )
        finally:
            _stop(rproc)
        try:
            os.makedirs(os.path.join(tmp, "rabbit"))
            bproc, bport = start_rabbit(os.path.join(tmp, "rabbit"))
        except (RuntimeError, OSError) as exc:
            notes.append(f"RabbitMQ not measured: {exc}")
        else:
            try:
                results["RabbitMQ"].update(rabbit_express(bport, secs))
                for n in (1, 8, 32):
                    results["RabbitMQ"][f"recoverable sends, {n} clients"] = concurrent(
                        _rabbit_durable_worker, bport, n, secs
                    )
            finally:
                subprocess.run(["rabbitmqctl", "-n", f"bench{bport}@localhost", "stop"], capture_output=True)
                _stop(bproc)
    else:
        notes.append(why)
    shutil.rmtree(tmp, ignore_errors=True)
    write_section(SECTION, report(results, notes, secs))
    print(report(results, notes, secs))


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"


def report(results: dict[str, dict[str, float]], notes: list[str], secs: float) -> str:
    rows = [
        "express 1 in flight",
        "express pipelined",
        "recoverable sends, 1 clients",
        "recoverable sends, 8 clients",
        "recoverable sends, 32 clients",
    ]
    p, r, b = results["pymsmq"], results["Redis"], results["RabbitMQ"]
    lines = [
        SECTION,
        "",
        f"`python bench/server.py` on {machine()}, {time.strftime('%Y-%m-%d %H:%M')}; {secs:.0f} s per "
        "measurement, 200-byte bodies, server and clients on one host over loopback.  Rates are messages "
        "per second (express: one send plus one receive per message).",
        "",
        "| workload | pymsmq | Redis (fsync always) | RabbitMQ (persistent, confirms) |",
        "|---|---|---|---|",
    ]
    for row in rows:
        lines.append(f"| {row} | {_fmt(p.get(row))} | {_fmt(r.get(row))} | {_fmt(b.get(row))} |")
    lines += ["", "| ratio (same run) | value | target |", "|---|---|---|"]

    def ratio(name: str, a: float | None, c: float | None, target: str) -> None:
        value = f"{a / c:.2f}" if a is not None and c else "-"
        lines.append(f"| {name} | {value} | {target} |")

    lines.append(f"| express 1 in flight (absolute) | {_fmt(p.get(rows[0]))} | >= 25k/s |")
    lines.append(f"| express pipelined (absolute) | {_fmt(p.get(rows[1]))} | >= 150k/s |")
    lines.append(f"| recoverable 32 clients (absolute) | {_fmt(p.get(rows[4]))} | >= 40k/s |")
    ratio("recoverable 32 clients / RabbitMQ 32", p.get(rows[4]), b.get(rows[4]), ">= 4")
    ratio("recoverable 32 clients / Redis 32", p.get(rows[4]), r.get(rows[4]), ">= 3")
    ratio("recoverable 1 client / Redis 1", p.get(rows[2]), r.get(rows[2]), "")
    ratio("recoverable 8 clients / Redis 8", p.get(rows[3]), r.get(rows[3]), "")
    ratio("express 1 in flight / Redis", p.get(rows[0]), r.get(rows[0]), "")
    ratio("express pipelined / Redis", p.get(rows[1]), r.get(rows[1]), "")
    lines.append("")
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    main()
