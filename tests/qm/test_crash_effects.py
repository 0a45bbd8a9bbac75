"""A process killed right after the write that makes an operation durable keeps its side effects:
the acknowledgements and journal copies ride in that same write (``pymsmq.qm.lifecycle.Effects``).

Written after it, in a second write, a kill between the two kept the receive (the message gone) and
lost its ACK_RECEIVE and journal copy (outside QA, 2026-11-27: 11 kills in 160 landed there).  Here
the child kills itself with SIGKILL the moment the first write touching the work queue returns, so
every kill lands in that window; the parent opens the store again and finds either the operation
with all its effects or neither.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pymsmq import Message, QueueManager
from pymsmq.model.constants import (
    MQMSG_ACKNOWLEDGMENT_POS_RECEIVE,
    MQMSG_CLASS_ACK_REACH_QUEUE,
    MQMSG_CLASS_ACK_RECEIVE,
    MQMSG_JOURNAL,
)

WORK = r".\private$\work"
WORK_TX = r".\private$\work-tx"
ADMIN = r".\private$\admin"
SRC = str(Path(__file__).resolve().parents[2] / "src")

# The child: opens the store, wraps its ``apply`` so that the first write that deletes a message of
# a work queue or inserts one into it is followed by SIGKILL, then does the operation named.
_CHILD = textwrap.dedent(
    r"""
    import os, signal, sys
    import pymsmq
    from pymsmq.qm.hold import Hold
    qm = pymsmq.QueueManager.open(sys.argv[1])
    work = {qm.queue(sys.argv[3])._state.queue_id}
    store = qm._store
    apply = store.apply
    def apply_then_die(batch):
        apply(batch)
        if any(k.queue_id in work for k in batch.delete) or any(r.queue_id in work for r in batch.insert):
            os.kill(os.getpid(), signal.SIGKILL)
    store.apply = apply_then_die
    q = qm.queue(sys.argv[3])
    admin = qm.queue(sys.argv[4]).format_name
    ack = pymsmq.MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL
    mode = sys.argv[2]
    if mode == "receive":
        q.receive(timeout=0)
    elif mode == "receive_many":
        q.receive_many(3)
    elif mode == "hold":
        hold = Hold()
        q.receive(timeout=0, transaction=hold)
        hold.confirm()
    elif mode == "commit_receive":
        with qm.begin_transaction() as tx:
            q.receive(timeout=0, transaction=tx)
            q.receive(timeout=0, transaction=tx)
    elif mode == "send":
        m = pymsmq.Message(body=b"new", delivery=1, ack=ack, admin_queue=admin, journal=pymsmq.MQMSG_JOURNAL)
        q.send(m)
    elif mode == "send_many":
        q.send_many([pymsmq.Message(body=b"new", delivery=1, ack=ack, admin_queue=admin) for _ in range(3)])
    elif mode == "commit_send":
        with qm.begin_transaction() as tx:
            q.send(pymsmq.Message(body=b"new", ack=ack, admin_queue=admin), transaction=tx)
    print("NOT KILLED", flush=True)
    """
)


def _prepare(data: Path, transactional: bool) -> str:
    """A store with an admin queue and a journaling work queue holding three messages that ask
    for a receive acknowledgement; the work queue's name."""
    name = WORK_TX if transactional else WORK
    with QueueManager.open(data) as qm:
        admin = qm.create_queue(ADMIN)
        q = qm.create_queue(name, journal=True, transactional=transactional)
        messages = [
            Message(
                body=b"old %d" % i,
                delivery=1,
                ack=MQMSG_ACKNOWLEDGMENT_POS_RECEIVE,
                admin_queue=admin.format_name,
                journal=MQMSG_JOURNAL,
            )
            for i in range(3)
        ]
        if transactional:
            with qm.begin_transaction() as tx:
                q.send_many(messages, transaction=tx)
        else:
            q.send_many(messages)
        qm.machine_journal.receive_many(100)  # (the arrival copies of the non-transactional ones)
    return name


def _killed(data: Path, mode: str, name: str) -> None:
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, str(data), mode, name, ADMIN],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC},
        timeout=120,
    )
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout, r.stderr)


def _bodies(q: object) -> list[bytes]:
    from pymsmq.qm.queue import Queue

    assert isinstance(q, Queue)
    return [m.body for m in q.receive_many(100)]


@pytest.mark.parametrize(
    ("mode", "transactional", "received"),
    [("receive", False, 1), ("receive_many", False, 3), ("hold", False, 1), ("commit_receive", True, 2)],
)
def test_a_receive_killed_after_its_write_keeps_its_ack_and_journal_copies(
    tmp_path: Path, mode: str, transactional: bool, received: int
) -> None:
    name = _prepare(tmp_path, transactional)
    _killed(tmp_path, mode, name)
    with QueueManager.open(tmp_path) as qm:
        q = qm.queue(name)
        assert q.message_count == 3 - received  # the receive is durable: the kill came after its write
        gone = [b"old %d" % i for i in range(received)]  # (the first ones: the queue is FIFO)
        # Its effects are there with it: the queue's journal copy, the machine journal's copy
        # (MQMSG_JOURNAL on a transactional message is journaled at its receive) and ACK_RECEIVE.
        assert sorted(_bodies(q.journal)) == gone
        machine = [m.body for m in qm.machine_journal.receive_many(100)]
        assert sorted(machine) == (gone if transactional else [])
        acks = qm.queue(ADMIN).receive_many(100)
        assert [m.msg_class for m in acks] == [MQMSG_CLASS_ACK_RECEIVE] * received


@pytest.mark.parametrize(
    ("mode", "transactional", "sent"), [("send", False, 1), ("send_many", False, 3), ("commit_send", True, 1)]
)
def test_a_send_killed_after_its_write_keeps_its_arrival_ack(
    tmp_path: Path, mode: str, transactional: bool, sent: int
) -> None:
    name = _prepare(tmp_path, transactional)
    _killed(tmp_path, mode, name)
    with QueueManager.open(tmp_path) as qm:
        acks = qm.queue(ADMIN).receive_many(100)
        assert [m.msg_class for m in acks] == [MQMSG_CLASS_ACK_REACH_QUEUE] * sent
        assert _bodies(qm.queue(name)).count(b"new") == sent
        if mode == "send":  # MQMSG_JOURNAL on a non-transactional message: journaled at arrival
            assert [m.body for m in qm.machine_journal.receive_many(100)] == [b"new"]
