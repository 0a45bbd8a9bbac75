"""CPU per request of remote express with one request in flight (q.send(m); q.receive(0)), both ends.

Usage: python bench/lane.py [--pairs N] [--n MESSAGES] SRC_A [SRC_B ...]

Each SRC is a ``src`` directory (e.g. this worktree's and an exported older commit's). For every pair
round the trees run interleaved: a fresh server process and a fresh client process from that tree; the
client loops ``n`` messages (two requests each) and reports its process_time; the server's CPU is read
from /proc (utime+stime) around the loop. Printed: client and server microseconds of CPU per request
and the wall-clock requests/s (noisy on a shared host; CPU is the figure to compare), with the
medians and the least disturbed run (lowest CPU sum) of each tree.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server import proc_cpu, start_pymsmq

_CLIENT = r"""
import sys, time
from pymsmq import Message
from pymsmq.client import connect
url, n = sys.argv[1], int(sys.argv[2])
qm = connect(url)
if not qm.queue_exists(".\\private$\\lane"):
    qm.create_queue(".\\private$\\lane").close()
q = qm.queue(".\\private$\\lane")
m = Message(body=b"x" * 200)
for _ in range(2000):
    q.send(m); q.receive(0)
print("ready", flush=True)
sys.stdin.readline()
c0, w0 = time.process_time(), time.perf_counter()
for _ in range(n):
    q.send(m); q.receive(0)
c1, w1 = time.process_time(), time.perf_counter()
print(c1 - c0, w1 - w0, flush=True)
sys.stdin.readline()
qm.close()
"""


def run_one(src: str, n: int) -> tuple[float, float, float]:
    """(client µs/request, server µs/request, requests/s) for one server+client from ``src``."""
    env = dict(os.environ, PYTHONPATH=src)
    with tempfile.TemporaryDirectory() as data:
        srv, url = start_pymsmq(data, src)
        cli = subprocess.Popen(
            [sys.executable, "-c", _CLIENT, url, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert cli.stdin is not None and cli.stdout is not None
        assert cli.stdout.readline().strip() == "ready"
        s0 = proc_cpu(srv.pid)
        cli.stdin.write("\n")
        cli.stdin.flush()
        ccpu, wall = map(float, cli.stdout.readline().split())
        s1 = proc_cpu(srv.pid)
        cli.stdin.write("\n")
        cli.stdin.flush()
        cli.wait(30)
        srv.terminate()
        srv.wait(30)
    reqs = 2 * n
    return 1e6 * ccpu / reqs, 1e6 * (s1 - s0) / reqs, reqs / wall


def main() -> None:
    """Interleave the given source trees and print CPU per request for each run and the medians."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("srcs", nargs="+")
    a = ap.parse_args()
    res: dict[str, list[tuple[float, float, float]]] = {s: [] for s in a.srcs}
    for _ in range(a.pairs):
        for s in a.srcs:
            r = run_one(s, a.n)
            res[s].append(r)
            print(
                f"{s:40s} client {r[0]:6.1f} us/req  server {r[1]:6.1f} us/req  {r[2]:8.0f} req/s", flush=True
            )
    for s, rs in res.items():
        # The least disturbed run: the lowest client+server CPU (a shared host only ever adds).
        low = min(rs, key=lambda x: x[0] + x[1])
        print(f"MIN    {s:33s} client {low[0]:6.1f}  server {low[1]:6.1f}  sum {low[0] + low[1]:6.1f} us/req")
    for s, rs in res.items():
        med = [sorted(x[i] for x in rs)[len(rs) // 2] for i in range(3)]
        print(
            f"MEDIAN {s:33s} client {med[0]:6.1f}  server {med[1]:6.1f}  sum {med[0] + med[1]:6.1f} us/req  "
            f"{med[2]:8.0f} req/s"
        )


if __name__ == "__main__":
    main()
