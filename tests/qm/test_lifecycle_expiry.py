"""Expiry with a fake clock: TTBR ([MC-MQAC] 3.1.6.1.1, [MS-MQDMPR] 3.1.7.2.7), TTRQ, dead-letter
queues and their class codes, locked messages, the Windows TTBR-in-a-transaction option, restart."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import (
    MQ_SINGLE_MESSAGE,
    MQMSG_ACKNOWLEDGMENT_NACK_RECEIVE,
    MQMSG_DEADLETTER,
    HResult,
    Message,
    MSMQError,
    QueueManager,
)
from pymsmq.qm.queue import Queue
from pymsmq.qm.timers import DEADLINE_STEP, FakeClock

T0 = 1_700_000_000.0  # the start of conftest.py's fake clock


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:" if request.param == "memory" else tmp_path / "qm", clock=clock)
    yield m
    m.close()


def drain(q: Queue) -> list[Message]:
    out = []
    while True:
        try:
            out.append(q.receive(timeout=0))
        except MSMQError as e:
            assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
            return out


def test_ttbr_expires_at_exactly_the_deadline(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"x", max_time_to_receive=10))
    clock.advance(9.999)
    assert q.message_count == 1 and q.peek(timeout=0).body == b"x"
    clock.advance(0.001)  # sent_time + 10 <= now: expired
    assert q.message_count == 0
    with pytest.raises(MSMQError) as e:
        q.peek(timeout=0)
    assert e.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    # No MQMSG_DEADLETTER: simply removed.
    assert qm.dead_letter_queue.message_count == 0


def test_read_sweeps_due_timers_without_run_timers(tmp_path: Path) -> None:
    now = [T0]
    qm = QueueManager.open(":memory:", clock=lambda: now[0], timer_thread=False)
    try:
        q = qm.create_queue(r".\private$\q")
        q.send(Message(body=b"x", max_time_to_receive=5, journal=MQMSG_DEADLETTER))
        now[0] += 5  # nobody ran the timers: the receive itself must not return the expired message
        with pytest.raises(MSMQError):
            q.receive(timeout=0)
        assert [m.msg_class for m in drain(qm.dead_letter_queue)] == [0xC002]
    finally:
        qm.close()


def test_ttbr_zero_expires_immediately(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"x", max_time_to_receive=0, journal=MQMSG_DEADLETTER, delivery=1))
    assert q.message_count == 1  # nobody has looked yet
    with pytest.raises(MSMQError):
        q.receive(timeout=0)
    assert [m.body for m in drain(qm.dead_letter_queue)] == [b"x"]


def test_expired_deadletter_goes_to_dlq_with_class(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\q")
    m = Message(body=b"late", label="L", max_time_to_receive=30, journal=MQMSG_DEADLETTER, delivery=1)
    q.send(m)
    q.send(Message(body=b"keep"))
    clock.advance(30)
    assert [x.body for x in drain(q)] == [b"keep"]
    dead = drain(qm.dead_letter_queue)
    assert len(dead) == 1
    d = dead[0]
    assert d.msg_class == 0xC002  # MQMSG_CLASS_NACK_RECEIVE_TIMEOUT
    assert d.id == m.id and d.body == b"late" and d.label == "L" and d.destination_queue == q.format_name
    assert qm.transactional_dead_letter_queue.message_count == 0


def test_expired_transactional_goes_to_xact_dlq(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    q.send(Message(body=b"t", max_time_to_receive=5, journal=MQMSG_DEADLETTER), transaction=MQ_SINGLE_MESSAGE)
    clock.advance(5)
    assert q.message_count == 0 and qm.dead_letter_queue.message_count == 0
    dead = drain(qm.transactional_dead_letter_queue)
    assert [(x.body, x.msg_class) for x in dead] == [(b"t", 0xC002)]


def test_per_message_dead_letter_queue(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\q")
    app_dlq = qm.create_queue(r".\private$\mydlq")
    q.send(
        Message(
            body=b"a", max_time_to_receive=1, journal=MQMSG_DEADLETTER, dead_letter_queue=r".\private$\mydlq"
        )
    )
    q.send(
        Message(
            body=b"b", max_time_to_receive=1, journal=MQMSG_DEADLETTER, dead_letter_queue=r".\private$\nope"
        )
    )
    clock.advance(1)
    got = drain(app_dlq)
    assert [(x.body, x.msg_class) for x in got] == [(b"a", 0xC002)]
    # An unknown per-message DLQ falls back to the system one.
    assert [x.body for x in drain(qm.dead_letter_queue)] == [b"b"]
    # Dead letters in an application queue never expire again.
    clock.advance(1000)


def test_dead_letters_do_not_expire_in_dlq(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"a", max_time_to_receive=1, journal=MQMSG_DEADLETTER))
    clock.advance(2)
    clock.advance(10_000)
    assert qm.dead_letter_queue.message_count == 1


def test_locked_message_waits_for_abort(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    q.send(
        Message(body=b"x", max_time_to_receive=10, journal=MQMSG_DEADLETTER), transaction=MQ_SINGLE_MESSAGE
    )
    tx = qm.begin_transaction()
    assert q.receive(timeout=0, transaction=tx).body == b"x"
    clock.advance(20)  # deadline passes while Locked: nothing happens yet
    assert q.message_count == 1 and qm.transactional_dead_letter_queue.message_count == 0
    tx.abort()  # back in the queue: expires now
    assert q.message_count == 0
    assert [x.msg_class for x in drain(qm.transactional_dead_letter_queue)] == [0xC002]


def test_locked_message_committed_is_just_received(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    q.send(
        Message(body=b"x", max_time_to_receive=10, journal=MQMSG_DEADLETTER), transaction=MQ_SINGLE_MESSAGE
    )
    with qm.begin_transaction() as tx:
        q.receive(timeout=0, transaction=tx)
        clock.advance(20)
    assert q.message_count == 0 and qm.transactional_dead_letter_queue.message_count == 0


def test_pending_transactional_send_past_ttbr_expires_at_commit(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"x", max_time_to_receive=5, journal=MQMSG_DEADLETTER), transaction=tx)
        clock.advance(6)
    assert q.message_count == 0
    assert [x.msg_class for x in drain(qm.transactional_dead_letter_queue)] == [0xC002]


def test_a_local_transactional_send_reaches_its_queue_whatever_its_ttrq(
    qm: QueueManager, clock: FakeClock
) -> None:
    # "If the queue is local, the message will always reach it" (System.Messaging
    # Message.TimeToReachQueue): a transactional send is in its local queue at send, pending until
    # the commit.  Outside QA, 2026-11-27: the commit checked the TTRQ against SentTime (whole seconds), and a
    # TTRQ of 0 dropped every message committed at once, a TTRQ of 5 one committed 5.5 s later.
    q = qm.create_queue(r".\private$\t", transactional=True)
    admin = qm.create_queue(r".\private$\admin")
    clock.advance(0.75)  # between two whole seconds, as almost every send is
    reports = dict(
        journal=MQMSG_DEADLETTER, ack=MQMSG_ACKNOWLEDGMENT_NACK_RECEIVE, admin_queue=admin.format_name
    )
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"ttrq 0", max_time_to_reach_queue=0, **reports), transaction=tx)
    tx = qm.begin_transaction()
    q.send(Message(body=b"ttrq 5", max_time_to_reach_queue=5, **reports), transaction=tx)
    clock.advance(5.5)
    tx.commit()
    assert [x.body for x in drain(q)] == [b"ttrq 0", b"ttrq 5"]
    assert drain(qm.transactional_dead_letter_queue) == [] and drain(admin) == []


@pytest.mark.parametrize("how", ["send", "send_many"])
def test_ttbr_counts_from_the_send_instant_not_from_sent_times_whole_second(
    qm: QueueManager, clock: FakeClock, how: str
) -> None:
    # Outside QA, 2026-11-27: the deadline counted from SentTime, rounded down to whole seconds ([MS-MQMQ]
    # 2.2.19.2), so a message with TTBR 1 received 0.3 s after a send at x.85 had expired.
    q = qm.create_queue(r".\private$\q")
    clock.advance(0.85)
    m = Message(body=b"x", max_time_to_receive=1)
    q.send(m) if how == "send" else q.send_many([m])
    assert m.sent_time is not None and m.sent_time == int(m.sent_time)  # the wire's whole second
    clock.advance(0.999)
    assert q.peek(timeout=0).body == b"x"  # never early
    clock.advance(0.001 + DEADLINE_STEP)  # the send instant + 1 s, rounded up to the timers' step
    assert q.message_count == 0


def test_ttbr_zero_expires_at_once_between_timer_steps(qm: QueueManager, clock: FakeClock) -> None:
    # Outside QA: deadlines rounded up to 1/64 s made a TTBR of 0 receivable for up to 15.6 ms
    # (on a clock between two steps, which a real one nearly always is).
    q = qm.create_queue(r".\private$\q")
    clock.advance(0.001)
    q.send(Message(body=b"x", max_time_to_receive=0))
    q.send_many([Message(body=b"y", max_time_to_receive=0)])
    with pytest.raises(MSMQError) as caught:
        q.receive(timeout=0)  # (a read runs the timers that are due: both are)
    assert caught.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert q.message_count == 0


def test_ttrq_raises_ttbr_on_send(qm: QueueManager, clock: FakeClock) -> None:
    # [MC-MQAC] 3.17.4.1.48 step 12: TTRQ 60 > TTBR 10 -> TTBR 60.
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"x", max_time_to_reach_queue=60, max_time_to_receive=10))
    clock.advance(30)
    assert q.peek(timeout=0).max_time_to_receive == 60
    clock.advance(30)
    assert q.message_count == 0


@pytest.mark.parametrize("windows", [False, True])
def test_ttbr_of_several_messages_in_one_transaction(clock: FakeClock, windows: bool) -> None:
    qm = QueueManager.open(":memory:", clock=clock, windows_transaction_ttbr=windows)
    try:
        q = qm.create_queue(r".\private$\t", transactional=True)
        with qm.begin_transaction() as tx:
            q.send(Message(body=b"first", max_time_to_receive=100), transaction=tx)
            q.send(Message(body=b"second", max_time_to_receive=10), transaction=tx)
            q.send(Message(body=b"third"), transaction=tx)  # INFINITE
        clock.advance(10)
        if windows:
            # Windows: all get the first message's TTBR (100 s).
            assert [m.max_time_to_receive for m in [q.peek_by_lookup_id(i.lookup_id) for i in _all(q)]] == [
                100
            ] * 3
            clock.advance(90)
            assert q.message_count == 0
        else:
            # Default: each keeps its own TTBR.
            assert [m.body for m in _all(q)] == [b"first", b"third"]
            clock.advance(90)
            assert [m.body for m in _all(q)] == [b"third"]
    finally:
        qm.close()


def _all(q: Queue) -> list[Message]:
    out = []
    try:
        m = q.peek_first_by_lookup_id()
    except MSMQError:
        return out
    while True:
        out.append(m)
        try:
            m = q.peek_next_by_lookup_id(m.lookup_id)
        except MSMQError:
            return out


def test_restart_dead_letters_messages_that_expired_while_down(tmp_path: Path, clock: FakeClock) -> None:
    with QueueManager.open(tmp_path, clock=clock) as qm:
        q = qm.create_queue(r".\private$\q")
        q.send(Message(body=b"expires", delivery=1, max_time_to_receive=60, journal=MQMSG_DEADLETTER))
        q.send(Message(body=b"stays", delivery=1, max_time_to_receive=600, journal=MQMSG_DEADLETTER))
        sent_id = q.peek(timeout=0).id
    clock.advance(120)  # the queue manager is down
    with QueueManager.open(tmp_path, clock=clock) as qm:
        q = qm.queue(r".\private$\q")
        assert q.message_count == 1 and q.peek(timeout=0).body == b"stays"
        dead = qm.dead_letter_queue.peek(timeout=0)
        assert dead.body == b"expires" and dead.msg_class == 0xC002 and dead.id == sent_id
    # The dead letter is durable and the timer of "stays" was re-armed from its stored deadline.
    with QueueManager.open(tmp_path, clock=clock) as qm:
        assert qm.dead_letter_queue.message_count == 1
        clock.advance(480)
        assert qm.queue(r".\private$\q").message_count == 0
        assert [m.body for m in drain(qm.dead_letter_queue)] == [b"expires", b"stays"]


def test_real_clock_timer_thread_expires_without_reads() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\q")
        q.send(Message(body=b"x", max_time_to_receive=1, journal=MQMSG_DEADLETTER))
        # Blocks on the DLQ: only the timer thread can put the message there.
        assert qm.dead_letter_queue.receive(timeout=10).msg_class == 0xC002
        assert q.message_count == 0
    finally:
        qm.close()


def test_deleted_queue_timers_are_dropped(qm: QueueManager, clock: FakeClock) -> None:
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"x", max_time_to_receive=5, journal=MQMSG_DEADLETTER))
    qm.delete_queue(r".\private$\q")
    clock.advance(10)
    # Non-transactional messages of a deleted queue are not dead-lettered (no negative FinalAck).
    assert qm.dead_letter_queue.message_count == 0


def test_a_dead_letter_sent_again_goes_back_to_the_dead_letter_queue(
    qm: QueueManager, clock: FakeClock
) -> None:
    # "Retry the dead letters": a message taken from the dead-letter queue (class NACK_RECEIVE_TIMEOUT)
    # and sent again with its MQMSG_DEADLETTER expires into the dead-letter queue again, not into
    # nothing; it acknowledges nothing (a NACK is not acknowledged).
    q = qm.create_queue(r".\private$\q")
    admin = qm.create_queue(r".\private$\admin")
    q.send(
        Message(
            body=b"x",
            max_time_to_receive=5,
            journal=MQMSG_DEADLETTER,
            ack=MQMSG_ACKNOWLEDGMENT_NACK_RECEIVE,
            admin_queue=admin.format_name,
        )
    )
    clock.advance(5)
    dead = qm.dead_letter_queue.receive(timeout=0)
    assert dead.msg_class == 0xC002 and admin.message_count == 1
    admin.receive(timeout=0)
    dead.max_time_to_receive = 5
    q.send(dead)
    clock.advance(5)
    assert q.message_count == 0
    again = qm.dead_letter_queue.peek(timeout=0)
    assert again.body == b"x" and again.msg_class == 0xC002
    assert admin.message_count == 0
    clock.advance(3600)  # dead-letter queues arm no timers: it stays
    assert qm.dead_letter_queue.message_count == 1


@pytest.mark.parametrize("read", ["receive", "peek", "cursor", "receive_by_id"])
def test_a_waiting_read_never_takes_a_message_an_abort_gives_back_past_its_deadline(
    qm: QueueManager, clock: FakeClock, read: str
) -> None:
    # docs/lifecycle.md: "If it aborts, the message is back and expires at once", and a read at time t
    # never returns a message whose deadline is <= t.  A read already waiting when the abort gave
    # it back took it (and ACK_RECEIVE'd it): the wait's look after a wake-up ran no due timers.
    # (The fake clock never runs the timer thread: only a read's own sweep expires it.)
    q = qm.create_queue(r".\private$\t", transactional=True)
    admin = qm.create_queue(r".\private$\admin")
    m = Message(
        body=b"x", max_time_to_receive=10, journal=MQMSG_DEADLETTER, ack=0xF, admin_queue=admin.format_name
    )
    q.send(m, transaction=MQ_SINGLE_MESSAGE)
    tx = qm.begin_transaction()
    q.receive(timeout=0, transaction=tx)
    clock.advance(60)
    got: list[object] = []
    waiting = threading.Event()

    def reader() -> None:
        waiting.set()
        try:
            if read == "receive":
                with qm.begin_transaction() as tx2:
                    got.append(q.receive(timeout=2, transaction=tx2).body)
            elif read == "peek":
                got.append(q.peek(timeout=2).body)
            elif read == "cursor":
                with q.cursor() as c:
                    got.append(c.peek_current(2).body)
            else:
                got.append(q.receive_by_id(m.id, timeout=2).body)
        except MSMQError as e:
            got.append(e.hresult)

    t = threading.Thread(target=reader)
    t.start()
    waiting.wait()
    time.sleep(0.3)  # the reader is waiting (there is nothing to read while the message is locked)
    tx.abort()
    t.join(10)
    assert got == [HResult.MQ_ERROR_IO_TIMEOUT]
    assert [a.msg_class for a in drain(admin)] == [0x0002, 0xC002]  # ACK_REACH_QUEUE, NACK_RECEIVE_TIMEOUT
    assert [d.body for d in drain(qm.transactional_dead_letter_queue)] == [b"x"]
