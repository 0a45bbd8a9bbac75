"""Crash test with real processes: SIGKILL at a random moment, then reopen and check the store.

A child (``_crash_child.py``) applies batches to a ``SQLiteStore`` from several threads and prints
one line per acknowledged ``apply``.  The parent kills it with SIGKILL after a random delay, reopens
the store and checks: every acknowledged send is present exactly once with its complete packet;
whatever else is present is complete too (at most one unacknowledged batch per thread was in flight);
every acknowledged transactional receive (a move from queue 1 to queue 2) is committed, every
interrupted one is back in queue 1, and no message is in both queues or lost.  No orphan packet
file survives the reopen.

The same at the public API (``_crash_qm_child.py``): recoverable sends through
``pymsmq.QueueManager``, and transactional receives (committed, aborted, interrupted).
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pymsmq
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.store import BIG_PACKET, Batch, MessageKey, SQLiteStore, StoredMessage

sys.path.insert(0, str(Path(__file__).parent))
from _crash_child import packet_for
from _crash_qm_child import body_for

CHILD = Path(__file__).parent / "_crash_child.py"
QM_CHILD = Path(__file__).parent / "_crash_qm_child.py"
THREADS = 4


def _run_and_kill(db: Path, mode: str, first: int, rng: random.Random, qm: bool = False) -> list[str]:
    """Start the child, kill it with SIGKILL at a random moment, return its complete output lines."""
    args = (
        [str(QM_CHILD), str(db), mode, str(first)]
        if qm
        else [str(CHILD), str(db), mode, str(THREADS), str(first)]
    )
    errors = db.with_name(f"{db.name}.child-stderr")
    with open(errors, "wb") as err_file:
        # Unbuffered: a buffered readline of READY could swallow the first acknowledgements, which
        # communicate() (it reads the raw pipe) would then never see.
        proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=err_file, bufsize=0)
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    if ready != b"READY\n":
        # Never block on a child that is still running: kill it first, then report.
        proc.kill()
        proc.communicate(timeout=30)
        raise AssertionError((ready, errors.read_text(errors="replace")))
    # The kill comes at a random moment after the child's first acknowledgement (on a loaded host
    # the first one can take longer than the random wait, and a round would then test nothing).
    ready_to_read, _, _ = select.select([proc.stdout], [], [], 60)
    first_line = proc.stdout.readline() if ready_to_read else b""
    time.sleep(rng.uniform(0.05, 0.5))
    os.kill(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=30)
    text = (first_line + out).decode()
    # Killed, unless the child had already moved or received everything (every thread said DONE;
    # the queue manager's child has one) and ended (the gate failed so once for "recv").
    finished = proc.returncode == 0 and text.split("\n").count("DONE") == (1 if qm else THREADS)
    assert proc.returncode == -signal.SIGKILL or finished, errors.read_text(errors="replace")
    # Only lines that were completely written count as acknowledged.
    return text.split("\n")[:-1]


def _check_no_orphans(store: SQLiteStore) -> None:
    files = set(os.listdir(store.packet_dir))
    snap = store.load()
    lazy = [m for m in snap.messages if m.packet == b""]
    assert len(files) == len(lazy)


def test_sigkill_during_sends_keeps_every_acknowledged_message(tmp_path: Path) -> None:
    rng = random.Random()
    db = tmp_path / "crash.db"
    acked_total: set[int] = set()
    for round_ in range(4):
        first = (round_ + 1) * 10**8
        lines = _run_and_kill(db, "send", first, rng)
        acked = {int(line.split()[1]) for line in lines if line.startswith("S ")}
        acked_total |= acked
        store = SQLiteStore(db)
        try:
            snap = store.load()
            present = [m.lookup_id for m in snap.messages if m.queue_id == 1]
            assert len(present) == len(set(present))  # exactly once
            present_set = set(present)
            assert acked_total <= present_set, sorted(acked_total - present_set)[:10]
            this_round = {lid for lid in present_set if first <= lid < first + 10**8}
            unacked = this_round - acked
            assert len(unacked) <= THREADS  # only batches in flight at the kill
            # Everything present is complete: the packet equals what the child sent.
            for lid in this_round | set(rng.sample(sorted(present_set), min(50, len(present_set)))):
                assert store.read_packet(MessageKey(1, lid)) == packet_for(lid)
            assert snap.last_lookup_ids.get(1, 0) >= max(acked, default=0)
            _check_no_orphans(store)
        finally:
            store.close()
        assert acked, "the child acknowledged nothing before the kill"
        print(f"round {round_}: {len(acked)} acknowledged sends")


def test_sigkill_during_transactional_receives(tmp_path: Path) -> None:
    rng = random.Random()
    db = tmp_path / "recv.db"
    n = 4000
    store = SQLiteStore(db)
    store.apply(
        Batch(insert=[StoredMessage(1, lid, packet_for(lid), lid % 8, float(lid)) for lid in range(1, n + 1)])
    )
    store.close()
    acked_total: set[int] = set()
    for _ in range(3):
        lines = _run_and_kill(db, "move", 0, rng)
        acked = {int(line.split()[1]) for line in lines if line.startswith("M ")}
        assert not acked & acked_total
        acked_total |= acked
        store = SQLiteStore(db)
        try:
            snap = store.load()
            where: dict[int, list[int]] = {}
            for m in snap.messages:
                where.setdefault(m.lookup_id, []).append(m.queue_id)
                if m.packet:
                    assert m.packet == packet_for(m.lookup_id)
            # Every message is in exactly one queue: nothing lost, nothing duplicated.
            assert sorted(where) == list(range(1, n + 1))
            assert all(len(qs) == 1 for qs in where.values())
            moved = {lid for lid, qs in where.items() if qs == [2]}
            # Acknowledged receives are committed; interrupted ones are back in queue 1
            # (at most one batch per thread may have committed without its acknowledgement).
            assert acked_total <= moved
            assert len(moved - acked_total) <= THREADS
            acked_total = moved  # the next round starts from what is durable
            _check_no_orphans(store)
        finally:
            store.close()
    assert acked_total, "the child acknowledged nothing"
    print(f"moved {len(acked_total)} of {n}")


def test_big_packets_are_big() -> None:
    # The crash tests exercise the out-of-row path: every fifth packet is over the threshold.
    assert len(packet_for(5)) > BIG_PACKET >= len(packet_for(6))


def test_sigkill_queue_manager_recoverable_sends(tmp_path: Path) -> None:
    rng = random.Random()
    d = tmp_path / "qm"
    with pymsmq.QueueManager.open(d) as qm:
        qm.create_queue(r".\private$\crash")
    acked_total: set[str] = set()
    for round_ in range(3):
        lines = _run_and_kill(d, "send", (round_ + 1) * 10**8, rng, qm=True)
        acked = {line.split()[1] for line in lines if line.startswith("S ")}
        assert acked, "the child acknowledged nothing before the kill"
        acked_total |= acked
        with pymsmq.QueueManager.open(d) as qm:
            q = qm.queue(r".\private$\crash")
            peeked = []
            try:
                peeked.append(q.peek_current(timeout=0))
                while True:
                    peeked.append(q.peek_next(timeout=0))
            except MSMQError as e:
                assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
            labels = [m.label for m in peeked]
            assert len(labels) == len(set(labels))  # exactly once
            assert acked_total <= set(labels), sorted(acked_total - set(labels))[:10]
            assert len(set(labels) - acked_total) <= 2 * (round_ + 1)  # in flight at each kill
            for m in peeked:  # nothing half-present
                assert m.body == body_for(m.label)


def test_sigkill_queue_manager_transactional_receives(tmp_path: Path) -> None:
    rng = random.Random()
    d = tmp_path / "qmtx"
    n = 3000
    with pymsmq.QueueManager.open(d) as qm:
        q = qm.create_queue(r".\private$\crashtx", transactional=True)
        for start in range(0, n, 500):
            with qm.begin_transaction() as tx:
                for i in range(start, start + 500):
                    q.send(pymsmq.Message(body=body_for(str(i)), label=str(i)), transaction=tx)
    received: set[str] = set()
    for _ in range(3):
        lines = _run_and_kill(d, "recv", 0, rng, qm=True)
        acked = {line.split()[1] for line in lines if line.startswith("R ")}
        assert not acked & received
        received |= acked
        with pymsmq.QueueManager.open(d) as qm:
            q = qm.queue(r".\private$\crashtx")
            left = []
            try:
                left.append(q.peek_current(timeout=0))
                while True:
                    left.append(q.peek_next(timeout=0))
            except MSMQError as e:
                assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
            labels = {m.label for m in left}
            assert len(labels) == len(left)
            # Acknowledged commits are gone; aborted and interrupted receives are back.
            assert not labels & received
            gone = {str(i) for i in range(n)} - labels
            assert received <= gone
            assert len(gone - received) <= 1  # the one commit in flight at the kill
            for m in left:
                assert m.body == body_for(m.label)
            received = gone
    assert received
