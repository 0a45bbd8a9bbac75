"""CPU per message of the remote pipelined path (SEND_MANY / RECEIVE_MANY), both sides; prints only.

    python bench/pipelined.py [--rounds 40] [--batch 2000] [--body 200]

One server process (``pymsmq serve``), one client: each round is ``q.send_many(batch)`` then
``q.receive_many(len(batch))`` (bench/server.py's "express pipelined" row).  Wall-clock rates on a
shared host vary several-fold, so this also reports CPU time per message: the client's
user+system time (``os.times()``) and the server's utime+stime from /proc/<pid>/stat, each split
in user and system (kernel) time, and the best round (the
least disturbed by other load).  The asyncio echo floor of bench/server.py is measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from server import echo_probe, start_pymsmq

Q = ".\\private$\\bench-pipelined"


def _cpu(pid: int) -> tuple[float, float]:
    # (user, system) CPU seconds of process ``pid`` (/proc/<pid>/stat utime, stime).
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--body", type=int, default=200)
    args = parser.parse_args()

    from pymsmq import Message
    from pymsmq.client import connect

    echo = echo_probe(2.0)
    with tempfile.TemporaryDirectory() as data:
        proc, url = start_pymsmq(data)
        try:
            qm = connect(url)
            if not qm.queue_exists(Q):
                qm.create_queue(Q).close()
            q = qm.queue(Q)
            batch = [Message(body=b"x" * args.body) for _ in range(args.batch)]
            for _ in range(2):  # warm up (and learn how many messages one RECEIVE_MANY answer holds)
                q.send_many(batch)
                q.receive_many(len(batch))
            server0, client0, wall0 = _cpu(proc.pid), os.times(), time.perf_counter()
            best = float("inf")
            for _ in range(args.rounds):
                start = time.perf_counter()
                q.send_many(batch)
                got = q.receive_many(len(batch))
                best = min(best, time.perf_counter() - start)
                assert len(got) == len(batch)
            wall = time.perf_counter() - wall0
            n = args.rounds * len(batch)
            client1, server1 = os.times(), _cpu(proc.pid)
            cuser = (client1.user - client0.user) / n * 1e6
            csys = (client1.system - client0.system) / n * 1e6
            suser = (server1[0] - server0[0]) / n * 1e6
            ssys = (server1[1] - server0[1]) / n * 1e6
            qm.close()
        finally:
            proc.kill()
            proc.wait()
    load = os.getloadavg()[0]
    print(f"express pipelined, {args.batch} x {args.body}-byte bodies, {args.rounds} rounds, load {load:.1f}")
    print(f"  messages/s: {n / wall:,.0f} overall, {len(batch) / best:,.0f} in the best round")
    print(
        f"  CPU per message: client {cuser + csys:.2f} us (user {cuser:.2f}, system {csys:.2f}),"
        f" server {suser + ssys:.2f} us (user {suser:.2f}, system {ssys:.2f})"
    )
    print(f"  asyncio echo floor: {echo['echo pipelined']:,.0f} msgs/s pipelined")


if __name__ == "__main__":
    main()
