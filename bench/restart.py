"""How long a queue manager takes to start with many stored messages, and the memory they take.

    python bench/restart.py [--messages 200000] [--rounds 3] [--no-write]

A store of ``--messages`` recoverable 200-byte messages (label "order", one private queue) is
written once; then each round, in fresh processes (the page cache warm):

- *SQLite scan* (the floor): one connection reads every row of the messages table, as the store's
  ``load`` does, and touches each packet;
- *pymsmq open*: ``QueueManager.open`` of that store (every message decoded from its stored packet
  and indexed, ready to receive), and the resident memory it added per message.

The ratio of the two rates is the cost of what a queue manager holds per message beyond its row.
Results go to the "Restart" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import machine, write_section

SRC = str(Path(__file__).resolve().parents[1] / "src")
SECTION = "## Restart (bench/restart.py)"
Q = ".\\private$\\restart"

_FILL = """
import os, sys
sys.path.insert(0, sys.argv[1])
from pymsmq import Message, QueueManager
qm = QueueManager.open(sys.argv[2], disk_reserve=0)
q = qm.create_queue(sys.argv[3])
n = int(sys.argv[4])
for start in range(0, n, 1000):
    k = min(1000, n - start)
    q.send_many([Message(body=os.urandom(200), delivery=1, label="order") for _ in range(k)])
qm.close()
"""

_SCAN = """
import json, sqlite3, sys, time
t = time.perf_counter()
conn = sqlite3.connect(sys.argv[1])
cur = conn.execute("SELECT queue_id, lookup_id, priority, arrived_time, subqueue, abort_count, "
                   "move_count, expires_at, packet FROM messages ORDER BY queue_id, lookup_id")
n = 0
size = 0
while rows := cur.fetchmany(1024):
    for row in rows:
        size += len(row[8])
        n += 1
print(json.dumps({"n": n, "seconds": time.perf_counter() - t}))
"""

_DECODE = """
import json, sqlite3, sys, time
sys.path.insert(0, sys.argv[1])
from pymsmq.model.packet_mapping import packet_to_message
from pymsmq.model.stored_packet import restore_message
conn = sqlite3.connect(sys.argv[2])
packets = [r[0] for r in conn.execute("SELECT packet FROM messages LIMIT 20000")]
out = {}
for name, fn in (("general", packet_to_message), ("restore", restore_message)):
    t = time.perf_counter()
    for p in packets:
        fn(p)
    out[name] = len(packets) / (time.perf_counter() - t)
print(json.dumps(out))
"""

_OPEN = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pymsmq import QueueManager

def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    return 0

before = rss()
t = time.perf_counter()
qm = QueueManager.open(sys.argv[2], disk_reserve=0)
seconds = time.perf_counter() - t
n = qm.queue(sys.argv[3]).message_count
print(json.dumps({"n": n, "seconds": seconds, "bytes": rss() - before}))
qm.close()
"""


def _run(code: str, *args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, timeout=1800
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def _rate(values: list[float]) -> str:
    return f"{_median(values):,.0f}/s"


def _runs(values: list[float]) -> str:
    return ", ".join(f"{v:,.0f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    n = args.messages
    with tempfile.TemporaryDirectory(dir=os.environ.get("PYMSMQ_BENCH_DIR")) as tmp:
        data = os.path.join(tmp, "qm")
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", _FILL, SRC, data, Q, str(n)], check=True, timeout=3600)
        print(f"stored {n} messages in {time.perf_counter() - t:.1f} s")
        scans: list[float] = []
        opens: list[float] = []
        memory: list[float] = []
        general: list[float] = []
        restore: list[float] = []
        for r in range(args.rounds):
            scan = _run(_SCAN, os.path.join(data, "pymsmq.db"))
            opened = _run(_OPEN, SRC, data, Q)
            assert scan["n"] == n and opened["n"] == n, (scan, opened)
            scans.append(n / scan["seconds"])
            opens.append(n / opened["seconds"])
            memory.append(opened["bytes"] / n)
            decoded = _run(_DECODE, SRC, os.path.join(data, "pymsmq.db"))
            general.append(decoded["general"])
            restore.append(decoded["restore"])
            print(f"round {r + 1}: scan {scans[-1]:,.0f}/s, open {opens[-1]:,.0f}/s, {memory[-1]:,.0f} B")
    scan_m, open_m, mem_m = (statistics.median(v) for v in (scans, opens, memory))
    stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    rows = [
        ("SQLite scan of the messages table (floor)", f"{scan_m:,.0f}/s", _runs(scans)),
        ("QueueManager.open (messages/s)", f"{open_m:,.0f}/s", _runs(opens)),
        ("QueueManager.open / SQLite scan", f"{open_m / scan_m:.2f}", ""),
        ("decode a stored packet: general decoder (packet_to_message)", _rate(general), _runs(general)),
        ("decode a stored packet: restore_message (used by open)", _rate(restore), _runs(restore)),
        ("restore_message / general decoder", f"{_median(restore) / _median(general):.1f}", ""),
        (
            f"open time for {n:,} messages",
            f"{n / open_m:.1f} s",
            ", ".join(f"{n / v:.1f} s" for v in opens),
        ),
        ("resident memory per stored message", f"{mem_m:,.0f} B", _runs(memory)),
    ]
    text = (
        f"{SECTION}\n\n"
        f"`python bench/restart.py` on {machine()}, {stamp} UTC; {n:,} recoverable 200-byte messages in one "
        f"queue, {args.rounds} rounds, medians. Each open decodes every stored packet and indexes it "
        "(`QueueManager._restore`, `model/stored_packet.py`). Read the ratio: the host is shared.\n\n"
        "| measure | median | runs |\n|---|---|---|\n" + "".join(f"| {a} | {b} | {c} |\n" for a, b, c in rows)
    )
    print(text)
    if not args.no_write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
