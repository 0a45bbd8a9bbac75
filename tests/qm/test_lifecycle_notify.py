"""Arrival notifications ([MC-MQAC] 3.11.4.1.9 EnableNotification: one event per call) and
``receive_async``; the timer heap (Hypothesis: expiry order and compaction)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq import (
    MQ_SEND_ACCESS,
    MQMSG_CURRENT,
    MQMSG_FIRST,
    MQMSG_NEXT,
    HResult,
    Message,
    MSMQError,
    QueueManager,
)
from pymsmq.qm.queue import Queue
from pymsmq.qm.timers import FakeClock


class Sink:
    """Records Arrived / ArrivedError events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, int]] = []
        self.cond = threading.Condition()

    def arrived(self, q: Queue, cursor: int) -> None:
        with self.cond:
            self.events.append(("arrived", 0, cursor))
            self.cond.notify_all()

    def error(self, q: Queue, hresult: int, cursor: int) -> None:
        with self.cond:
            self.events.append(("error", hresult, cursor))
            self.cond.notify_all()

    def wait(self, n: int = 1, timeout: float = 5.0) -> list[tuple[str, int, int]]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.events) >= n, timeout)
            return list(self.events)


@pytest.fixture
def qm() -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:")
    yield m
    m.close()


def settle(qm: QueueManager) -> None:
    # Let the event thread run everything queued so far.
    done = threading.Event()
    qm._dispatcher.submit(done.set)
    assert done.wait(5)


def test_one_event_per_call(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    n = q.enable_notification(sink.arrived, on_error=sink.error)
    settle(qm)
    assert sink.events == [] and not n.done
    q.send(Message(body=b"1"))
    assert sink.wait() == [("arrived", 0, MQMSG_FIRST)]
    q.send(Message(body=b"2"))
    settle(qm)
    assert len(sink.events) == 1  # not re-armed: no second event
    assert q.message_count == 2  # the notification does not receive


def test_fires_at_once_when_a_message_is_there(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"1"))
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_FIRST, 0, sink.error)
    assert sink.wait() == [("arrived", 0, MQMSG_FIRST)]


def test_timeout_zero_and_finite(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_FIRST, 0, sink.error)
    assert sink.wait() == [("error", HResult.MQ_ERROR_MESSAGE_NOT_FOUND, 0)]
    sink2 = Sink()
    q.enable_notification(sink2.arrived, MQMSG_FIRST, 0.2, sink2.error)
    assert sink2.wait() == [("error", HResult.MQ_ERROR_IO_TIMEOUT, 0)]
    q.send(Message())
    settle(qm)
    assert len(sink2.events) == 1


def test_rearm_inside_callback_receives_everything(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    got: list[bytes] = []
    done = threading.Event()

    def arrived(queue: Queue, cursor: int) -> None:
        got.append(queue.receive(timeout=0).body)
        if len(got) == 3:
            done.set()
        else:
            queue.enable_notification(arrived)

    q.enable_notification(arrived)
    for b in (b"a", b"b", b"c"):
        q.send(Message(body=b))
    assert done.wait(5) and got == [b"a", b"b", b"c"]


def test_cursor_modes(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    # NEXT on an Unread cursor: ILLEGAL_CURSOR_ACTION (NOT_FOUND with timeout 0).
    q.enable_notification(sink.arrived, MQMSG_NEXT, None, sink.error)
    q.enable_notification(sink.arrived, MQMSG_NEXT, 0, sink.error)
    assert sink.wait(2) == [
        ("error", HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION, MQMSG_NEXT),
        ("error", HResult.MQ_ERROR_MESSAGE_NOT_FOUND, MQMSG_NEXT),
    ]
    q.send(Message(body=b"1"))
    cur = Sink()
    q.enable_notification(cur.arrived, MQMSG_CURRENT, None, cur.error)
    assert cur.wait() == [("arrived", 0, MQMSG_CURRENT)]
    assert q.peek_current(timeout=0).body == b"1"  # the cursor landed on it
    nxt = Sink()
    q.enable_notification(nxt.arrived, MQMSG_NEXT, None, nxt.error)
    settle(qm)
    assert nxt.events == []
    q.send(Message(body=b"2"))
    assert nxt.wait() == [("arrived", 0, MQMSG_NEXT)]
    assert q.peek_current(timeout=0).body == b"2"


def test_queue_deleted_and_handle_closed(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    q.enable_notification(sink.arrived, on_error=sink.error)
    h = qm.queue(r".\private$\q")
    closed = Sink()
    n = h.enable_notification(closed.arrived, on_error=closed.error)
    h.close()
    assert n.done
    qm.delete_queue(r".\private$\q")
    assert sink.wait() == [("error", HResult.MQ_ERROR_QUEUE_DELETED, 0)]
    settle(qm)
    assert closed.events == []


def test_cancel_and_argument_errors(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    n = q.enable_notification(sink.arrived)
    assert n.cancel() and not n.cancel()
    q.send(Message())
    settle(qm)
    assert sink.events == []
    with pytest.raises(MSMQError) as e:
        q.enable_notification(sink.arrived, 3)
    assert e.value.hresult == HResult.E_INVALIDARG
    with pytest.raises(MSMQError) as e:
        q.enable_notification(None)  # type: ignore[arg-type]
    assert e.value.hresult == HResult.E_INVALIDARG
    s = qm.queue(r".\private$\q", access=MQ_SEND_ACCESS)
    with pytest.raises(MSMQError) as e:
        s.enable_notification(sink.arrived)
    assert e.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
    q.close()
    with pytest.raises(MSMQError) as e:
        q.enable_notification(sink.arrived)
    assert e.value.hresult == HResult.MQ_ERROR_INVALID_HANDLE


def test_receive_async(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")

    async def main() -> tuple[bytes, int, bytes]:
        task = asyncio.create_task(q.receive_async(timeout=5))
        await asyncio.sleep(0.05)
        ticks = 0
        for _ in range(5):  # the loop keeps running while the receive waits
            await asyncio.sleep(0)
            ticks += 1
        q.send(Message(body=b"async", delivery=1))
        m = await task
        with pytest.raises(MSMQError) as e:
            await q.receive_async(timeout=0.1)
        assert e.value.hresult == HResult.MQ_ERROR_IO_TIMEOUT
        with pytest.raises(MSMQError) as e:
            await q.receive_async(timeout=0)
        assert e.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
        q.send(Message(body=b"peeked"))
        p = await q.peek_async(timeout=1)
        return m.body, ticks, p.body

    assert asyncio.run(main()) == (b"async", 5, b"peeked")
    assert q.message_count == 1


def test_receive_async_in_transaction(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)

    async def main() -> bytes:
        tx = qm.begin_transaction()
        task = asyncio.create_task(q.receive_async(timeout=5, transaction=tx))
        await asyncio.sleep(0.02)
        q.send(Message(body=b"t"), transaction=3)
        m = await task
        tx.abort()
        return m.body

    assert asyncio.run(main()) == b"t"
    assert q.message_count == 1


def test_receive_async_queue_deleted(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")

    async def main() -> int:
        task = asyncio.create_task(q.receive_async())
        await asyncio.sleep(0.05)
        qm.delete_queue(r".\private$\q")
        try:
            await task
        except MSMQError as e:
            return e.hresult
        return 0

    assert asyncio.run(main()) == HResult.MQ_ERROR_QUEUE_DELETED


@given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), max_size=40), st.integers(0, 60))
def test_timer_heap_expires_exactly_the_due_messages(items: list[tuple[int, bool]], step: int) -> None:
    clock = FakeClock(1000.0)
    qm = QueueManager.open(":memory:", clock=clock)
    try:
        q = qm.create_queue(r".\private$\q")
        for i, (ttbr, _received) in enumerate(items):
            q.send(Message(body=str(i).encode(), max_time_to_receive=ttbr, journal=1))
        # Receive some by lookup id before time moves (stale heap items).
        ids = []
        m = None
        try:
            m = q.peek_first_by_lookup_id()
        except MSMQError:
            pass
        while m is not None:
            ids.append(m.lookup_id)
            try:
                m = q.peek_next_by_lookup_id(m.lookup_id)
            except MSMQError:
                m = None
        by_body = {int(x.body): x.lookup_id for x in [q.peek_by_lookup_id(i) for i in ids]}
        gone = set()
        for i, (ttbr, received) in enumerate(items):
            if received and ttbr > 0:
                q.receive_by_lookup_id(by_body[i])
                gone.add(i)
        qm._timers.compact()
        clock.advance(step)
        dead = sorted(int(x.body) for x in _drain(qm.dead_letter_queue))
        left = sorted(int(x.body) for x in _drain(q))
        assert dead == sorted(i for i, (t, _) in enumerate(items) if t <= step and i not in gone)
        assert left == sorted(i for i, (t, _) in enumerate(items) if t > step and i not in gone)
    finally:
        qm.close()


def _drain(q: Queue) -> list[Message]:
    out = []
    while True:
        try:
            out.append(q.receive(timeout=0))
        except MSMQError:
            return out


def test_an_arrival_fires_one_exclusive_watch_and_every_other_one() -> None:
    # notifications.watch(exclusive=True): the server's waiting receives.  One message fires one
    # of them (the others stay armed); a peek's notification fires as before; looking again while
    # the message is still there passes it to the next exclusive one.
    import threading

    from pymsmq import Message, QueueManager
    from pymsmq.qm.notifications import first_available, watch

    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\exclusive")
        fired: list[str] = []
        lock = threading.Lock()
        event = threading.Event()

        def on(name: str) -> Any:
            def arrived(_q: object, _c: int) -> None:
                with lock:
                    fired.append(name)
                event.set()

            return arrived

        receives = [watch(q, first_available, on(f"r{i}"), 30, None, exclusive=True) for i in range(3)]
        peek = q.enable_notification(on("peek"), 0, 30)
        q.send(Message(body=b"one"))
        deadline = time.monotonic() + 10
        while len(fired) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert sorted(fired) == ["peek", "r0"] and peek.done
        assert [n.done for n in receives] == [True, False, False]
        with qm._lock:
            q._state.cond.poll_watchers()  # r0 did not take it: the next one is woken for it
        deadline = time.monotonic() + 10
        while len(fired) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fired[2] == "r1" and receives[2].done is False
        assert q.receive(0).body == b"one"
        with qm._lock:
            q._state.cond.poll_watchers()
        time.sleep(0.1)
        assert len(fired) == 3 and receives[2].done is False
        receives[2].cancel()
    finally:
        qm.close()
