"""Child of test_disk_full.py, run on a small tmpfs: fills the disk, drains it, prints a JSON report.

argv: data directory, disk reserve in bytes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

from pymsmq import Message, MSMQError, QueueManager

PLAIN, JOURNALED, TX = r".\private$\plain", r".\private$\journaled", r".\private$\tx"
BODY = 20_000


def body(n: int) -> bytes:
    return n.to_bytes(4, "big") + bytes([n % 251]) * BODY


def main() -> None:
    data, reserve = sys.argv[1], int(sys.argv[2])
    warnings: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                warnings.append(record.getMessage())

    logging.getLogger("pymsmq").addHandler(Keep())
    report: dict[str, object] = {}
    qm = QueueManager.open(data, disk_reserve=reserve)
    queues = {  # drained in this order: the journal copies meet the full disk
        JOURNALED: qm.create_queue(JOURNALED, journal=True),
        PLAIN: qm.create_queue(PLAIN),
        TX: qm.create_queue(TX, transactional=True),
    }
    sent: dict[str, list[int]] = {name: [] for name in queues}
    n = 0
    refusal: MSMQError | None = None
    while refusal is None:  # round robin until the disk is full
        for name, q in queues.items():
            try:
                if name == TX:
                    with qm.begin_transaction() as tx:
                        q.send(Message(body=body(n), delivery=1), transaction=tx)
                else:
                    q.send(Message(body=body(n), delivery=1))
            except MSMQError as e:
                refusal = e
                break
            sent[name].append(n)
            n += 1
    report["refusal"] = [int(refusal.hresult), str(refusal)]
    report["sent"] = sent
    report["disk_full_after_fill"] = qm.disk_full
    report["reserve_after_fill"] = os.path.getsize(os.path.join(data, "pymsmq.db.reserve"))
    # While the disk is full: recoverable sends are refused, express ones (memory only) are not.
    try:
        queues[PLAIN].send(Message(body=b"while full", delivery=1))
        report["send_while_full"] = None
    except MSMQError as e:
        report["send_while_full"] = int(e.hresult)
    queues[PLAIN].send(Message(body=b"express", delivery=0, priority=7))  # received first
    report["express_while_full"] = queues[PLAIN].receive(timeout=0).body.decode()
    # Receive every message, in order, with its body.
    got: dict[str, list[int]] = {name: [] for name in queues}
    errors: list[str] = []
    for name, q in queues.items():
        for _ in sent[name]:
            try:
                if name == TX:
                    with qm.begin_transaction() as tx:
                        m = q.receive(timeout=0, transaction=tx)
                else:
                    m = q.receive(timeout=0)
            except MSMQError as e:
                errors.append(f"{name}: {e}")
                break
            k = int.from_bytes(m.body[:4], "big")
            if m.body != body(k):
                errors.append(f"{name}: body of message {k} differs")
            got[name].append(k)
    report["received"] = got
    report["receive_errors"] = errors
    # Sends are accepted again once the disk has room (the store gave its free pages back).
    accepted_after = None
    for attempt in range(50):
        try:
            queues[PLAIN].send(Message(body=b"after", delivery=1))
            accepted_after = attempt
            break
        except MSMQError:
            time.sleep(0.1)
    report["send_accepted_after_drain"] = accepted_after
    report["disk_full_after_drain"] = qm.disk_full
    report["reserve_after_drain"] = os.path.getsize(os.path.join(data, "pymsmq.db.reserve"))
    report["journal_while_open"] = queues[JOURNALED].journal.message_count
    qm.close()
    # What a restart finds: only the message sent after the drain; journal copies of received ones.
    qm = QueueManager.open(data, disk_reserve=reserve)
    left = {}
    for name in (PLAIN, JOURNALED, TX):
        q = qm.queue(name)
        bodies = []
        while True:
            try:
                bodies.append(q.receive(timeout=0).body[:5].decode("latin-1"))
            except MSMQError:
                break
        left[name] = bodies
    report["left_after_restart"] = left
    journal = qm.queue(JOURNALED).journal
    copies = []
    while True:
        try:
            copies.append(int.from_bytes(journal.receive(timeout=0).body[:4], "big"))
        except MSMQError:
            break
    report["journal_after_restart"] = copies
    qm.close()
    report["warnings"] = warnings
    print(json.dumps(report))


if __name__ == "__main__":
    main()
