"""Child process of test_crash.py: writes to a store until it is killed with SIGKILL.

Usage: python _crash_child.py DB MODE THREADS FIRST

MODE ``send``: each thread inserts messages into queue 1 (lookup ids FIRST + thread * 10**6 + i), one
batch per message, every fifth packet bigger than BIG_PACKET (stored in a file).  MODE ``move``:
each thread "receives" the messages of queue 1 whose lookup id is congruent to its index modulo
THREADS, transactionally, by moving them to queue 2 (one batch: delete from 1 + insert into 2).
After each acknowledged (returned) ``apply`` the child prints one line ``S <lid>`` or ``M <lid>``
and flushes, so the parent knows exactly what was acknowledged before the kill.
"""

from __future__ import annotations

import sys
import threading

from pymsmq.qm.store import BIG_PACKET, Batch, MessageKey, SQLiteStore, StoredMessage

_print_lock = threading.Lock()


def packet_for(lid: int) -> bytes:
    """The deterministic packet of message ``lid`` (self-describing, so damage shows)."""
    size = BIG_PACKET + 1000 + lid % 997 if lid % 5 == 0 else 200 + lid % 50
    head = f"msg {lid} {size} ".encode()
    body = (head * (size // len(head) + 1))[:size]
    return body


def ack(line: str) -> None:
    with _print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main() -> None:
    db, mode, nthreads, first = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    store = SQLiteStore(db)

    def send(t: int) -> None:
        i = 0
        while True:
            lid = first + t * 10**6 + i
            store.apply(
                Batch(
                    insert=[StoredMessage(1, lid, packet_for(lid), lid % 8, float(lid))],
                    last_lookup_ids={1: lid},
                )
            )
            ack(f"S {lid}")
            i += 1

    def move(t: int) -> None:
        snap = store.load()
        mine = [m for m in snap.messages if m.queue_id == 1 and m.lookup_id % nthreads == t]
        for m in mine:
            packet = store.read_packet(m.key)
            moved = StoredMessage(
                2, m.lookup_id, packet, m.priority, m.arrived_time, move_count=m.move_count + 1
            )
            store.apply(Batch(delete=[MessageKey(1, m.lookup_id)], insert=[moved]))
            ack(f"M {m.lookup_id}")
        ack("DONE")

    target = send if mode == "send" else move
    threads = [threading.Thread(target=target, args=(t,), daemon=True) for t in range(nthreads)]
    ack("READY")  # before the threads start: their acks must come after it
    for th in threads:
        th.start()
    for th in threads:
        th.join()


if __name__ == "__main__":
    main()
