"""Child of test_interrupted_receive_ack.py: one remote receive of a recoverable message, which the
parent interrupts with SIGINT at a random moment around its arrival.  Prints GOT <body> or
INTERRUPTED (the KeyboardInterrupt reached the caller)."""

from __future__ import annotations

import signal
import sys

import pymsmq

url, mode = sys.argv[1], sys.argv[2]
# Started ahead of its round (its imports overlap the round before): the correlation id comes on
# stdin when its round begins.
correlation = sys.stdin.readline().strip()
client = pymsmq.connect(url)
queue = client.queue(r".\private$\acks")
sys.stdout.write("waiting\n")
sys.stdout.flush()
got = None
try:
    if mode == "by_correlation_id":
        got = queue.receive_by_correlation_id(correlation, timeout=30)
    else:
        got = queue.receive(timeout=30)
    # The parent's one SIGINT is spent: if it comes after the receive returned, it must not stop
    # this harness before it says what it got.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
except KeyboardInterrupt:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if got is None:
        sys.stdout.write("INTERRUPTED\n")
if got is not None:
    sys.stdout.write(f"GOT {got.body.decode()}\n")
sys.stdout.flush()
try:
    client.close()
except KeyboardInterrupt:
    pass
