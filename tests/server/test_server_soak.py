"""A short soak of a real ``pymsmq serve``: mixed clients, some dropped abruptly, nothing lost or doubled.

Producers send recoverable messages to a queue and transactional ones to a transactional queue (in
their own transactions and single-message ones); consumers receive in batches, inside transactions
they commit or abort, and sometimes drop their connection in the middle of one; others walk cursors.
Connections end cleanly or by closing the socket.  Afterwards every message a producer had sent was
received exactly once (a receive inside an aborted or dropped transaction puts the message back),
none appeared that nobody sent, and the server logged no error.
"""

from __future__ import annotations

import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _serve_process import SERVE, env

from pymsmq import MQ_SINGLE_MESSAGE, Message, MSMQError
from pymsmq.client import connect

SECONDS = 5.0
QS, QT = r".\private$\soak", r".\private$\soak-tx"


def _drop(client: Any) -> None:
    client._t._sock.close()  # no GOODBYE: the server sees the connection vanish


def test_mixed_clients_lose_and_double_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with open(log, "w") as err:
        args = ["--data", str(tmp_path / "qm"), "--port", "0", "--log-level", "warning"]
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, *args],
            stdout=subprocess.PIPE,
            stderr=err,  # a file, not a pipe nobody reads
            text=True,
            env=env(),
        )
    try:
        assert proc.stdout is not None
        match = re.search(r"client=[\d.]+:(\d+)", proc.stdout.readline())
        assert match
        url = f"msmq://127.0.0.1:{match.group(1)}"
        admin = connect(url)
        admin.create_queue(QS).close()
        admin.create_queue(QT, transactional=True).close()
        sent: dict[str, set[bytes]] = {QS: set(), QT: set()}
        got: dict[str, list[bytes]] = {QS: [], QT: []}
        failures: list[str] = []
        lock = threading.Lock()
        stop = time.monotonic() + SECONDS

        def producer(k: int) -> None:
            rng = random.Random(k)
            i = 0
            while time.monotonic() < stop:
                c = connect(url)
                qs, qt = c.queue(QS), c.queue(QT)
                for _ in range(rng.randint(5, 100)):
                    body = f"{k}-{i}".encode()
                    i += 1
                    if rng.random() < 0.5:
                        qs.send(Message(body=body, delivery=1))
                        name = QS
                    elif rng.random() < 0.5:
                        with c.begin_transaction() as tx:
                            qt.send(Message(body=body), transaction=tx)
                        name = QT
                    else:
                        qt.send(Message(body=body), transaction=MQ_SINGLE_MESSAGE)
                        name = QT
                    with lock:
                        sent[name].add(body)
                if rng.random() < 0.3:
                    _drop(c)
                else:
                    c.close()

        def consumer(k: int) -> None:
            rng = random.Random(100 + k)
            while time.monotonic() < stop:
                c = connect(url)
                qs, qt = c.queue(QS), c.queue(QT)
                dropped = False
                for _ in range(rng.randint(5, 50)):
                    r = rng.random()
                    if r < 0.4:
                        taken = qs.receive_many(rng.randint(1, 50), timeout=0.05)
                        with lock:
                            got[QS].extend(m.body for m in taken)
                    elif r < 0.8:
                        tx = c.begin_transaction()
                        taken = qt.receive_many(rng.randint(1, 20), timeout=0.05, transaction=tx)
                        roll = rng.random()
                        if roll < 0.25:
                            tx.abort()
                        elif roll < 0.35:
                            _drop(c)  # inside the transaction: its messages must come back
                            dropped = True
                            break
                        else:
                            tx.commit()
                            with lock:
                                got[QT].extend(m.body for m in taken)
                    else:
                        cursor = qs.cursor()
                        try:
                            cursor.peek_current(0)
                            cursor.peek_next(0)
                        except MSMQError:
                            pass
                if not dropped:
                    c.close()

        def guarded(fn: Any, k: int) -> None:
            try:
                fn(k)
            except Exception as exc:  # reported below: a thread's failure must fail the test
                failures.append(f"{fn.__name__} {k}: {exc!r}")

        threads = [threading.Thread(target=guarded, args=(producer, k)) for k in range(3)]
        threads += [threading.Thread(target=guarded, args=(consumer, k)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(SECONDS + 60)
        assert failures == []
        for name, tx in ((QS, None), (QT, MQ_SINGLE_MESSAGE)):
            with admin.queue(name) as q:
                while rest := q.receive_many(1000, timeout=0.5, transaction=tx):
                    got[name].extend(m.body for m in rest)
        for name in (QS, QT):
            assert len(got[name]) == len(set(got[name])), f"{name}: a message was received twice"
            assert set(got[name]) == sent[name], f"{name}: lost or unexpected messages"
        assert len(sent[QS]) > 100 and len(sent[QT]) > 100
        admin.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    text = log.read_text()
    assert "Traceback" not in text and " ERROR " not in text, text[-2000:]
