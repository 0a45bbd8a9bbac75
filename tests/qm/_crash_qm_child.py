"""Child process of test_crash.py at the public API: ``python _crash_qm_child.py DIR MODE FIRST``.

MODE ``send``: two threads send recoverable messages (label = sequence number from FIRST, body made
from the label) to ``.\\private$\\crash``; ``S <label>`` is printed after each ``send`` returns.
MODE ``recv``: one thread receives from the transactional ``.\\private$\\crashtx`` inside
transactions; every third transaction is aborted (the message must come back); ``R <label>`` is
printed after each commit returns.  Killed with SIGKILL by the parent at a random moment.
"""

from __future__ import annotations

import sys
import threading

import pymsmq

_lock = threading.Lock()


def body_for(label: str) -> bytes:
    """The deterministic body of the message labelled ``label``."""
    return (label.encode() + b"|") * (20 + int(label) % 30)


def ack(line: str) -> None:
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main() -> None:
    path, mode, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
    qm = pymsmq.QueueManager.open(path)
    if mode == "send":
        q = qm.queue(r".\private$\crash")

        def send(t: int) -> None:
            i = 0
            while True:
                label = str(first + t * 10**6 + i)
                q.send(
                    pymsmq.Message(
                        body=body_for(label), label=label, delivery=pymsmq.MQMSG_DELIVERY_RECOVERABLE
                    )
                )
                ack(f"S {label}")
                i += 1

        threads = [threading.Thread(target=send, args=(t,), daemon=True) for t in range(2)]
        ack("READY")  # before the threads start: their acks must come after it
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    else:
        q = qm.queue(r".\private$\crashtx")
        ack("READY")
        n = 0
        while True:
            n += 1
            tx = qm.begin_transaction()
            try:
                m = q.receive(timeout=0, transaction=tx)
            except pymsmq.MSMQError as exc:  # the queue is empty before the kill came: done
                if exc.hresult != 0xC00E0088:  # MQ_ERROR_MESSAGE_NOT_FOUND
                    raise
                tx.abort()
                ack("DONE")
                return
            if n % 3 == 0:
                tx.abort()
                continue
            tx.commit()
            ack(f"R {m.label}")


if __name__ == "__main__":
    main()
