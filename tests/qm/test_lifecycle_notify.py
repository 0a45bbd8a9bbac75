"""Arrival notifications ([MC-MQAC] 3.11.4.1.9 EnableNotification: one event per call) and
``receive_async``; the timer heap (Hypothesis: expiry order and compaction)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq import (
    HResult,
    Message,
    MSMQError,
    QueueManager,
)
from pymsmq.model.ids import ObjectId
from pymsmq.qm.queue import Queue
from pymsmq.qm.timers import FakeClock


@pytest.fixture
def qm() -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:")
    yield m
    m.close()


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


@pytest.mark.parametrize("by_id", [False, True])
def test_receive_async_ends_when_its_handle_is_closed(qm: QueueManager, by_id: bool) -> None:
    # As a blocking receive on a handle closed meanwhile: MQ_ERROR_OPERATION_CANCELLED at once
    # ([MS-MQDMPR] 3.1.7.1.6; the wait went on until its timeout, or forever without one).
    q = qm.create_queue(r".\private$\q")

    async def main() -> tuple[int, float]:
        wait = (
            q.receive_by_correlation_id_async(ObjectId(uuid.UUID(int=5), 1), timeout=None)
            if by_id
            else q.receive_async(timeout=None)
        )
        task = asyncio.create_task(wait)
        await asyncio.sleep(0.05)
        started = time.monotonic()
        q.close()
        try:
            await asyncio.wait_for(task, 10)
        except MSMQError as e:
            return e.hresult, time.monotonic() - started
        return 0, 0.0

    hresult, took = asyncio.run(main())
    assert hresult == HResult.MQ_ERROR_OPERATION_CANCELLED and took < 5


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


def test_watches_of_cursors_at_one_position_look_once_a_round(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each parked cursor read looked on its own at every arrival: 4,000 of them cost 46 ms a send.
    from pymsmq.qm.cursor import CursorSeek
    from pymsmq.qm.notifications import watch

    looks = [0]
    original = CursorSeek.__call__

    def counted(self: CursorSeek, index: Any) -> Any:
        looks[0] += 1
        return original(self, index)

    monkeypatch.setattr(CursorSeek, "__call__", counted)
    manager = QueueManager.open(":memory:")
    try:
        q = manager.create_queue(r".\private$\cursors")
        fired: list[int] = []
        cursors = [q.cursor() for _ in range(50)]
        for c in cursors:
            watch(q, CursorSeek(c, False), lambda _q, _c: fired.append(1), None, None, True)
        looks[0] = 0
        q.send(Message(body=b"one"))
        assert looks[0] <= 2, looks[0]  # one look for the 50 (50 before)
        ran = threading.Event()
        manager._dispatcher.submit(ran.set)  # the callbacks queued so far have run
        assert ran.wait(5)
        assert fired == [1]  # one arrival, one exclusive wake-up
    finally:
        manager.close()


def test_a_round_looks_once_per_group_of_watches_and_wakes_one_per_message() -> None:
    # Each arrival looked at every armed watch: 2,000 reads parked on a queue made every send to
    # it (and, under the shared lock, to every other queue) slower.  Watches whose seeks find the
    # same thing (receives or peeks of the head, cursors at one position) are looked at once per
    # round, which wakes the first receive of a group armed (if no other receive was woken for
    # that message in the round) and every peek.
    from pymsmq.qm.cursor import CursorSeek
    from pymsmq.qm.notifications import first_available, first_peekable, watch

    manager = QueueManager.open(":memory:")
    try:
        q = manager.create_queue(r".\private$\groups")
        order: list[str] = []
        lock = threading.Lock()

        def on(name: str) -> Any:
            def arrived(_q: Any, _c: int) -> None:
                with lock:
                    order.append(name)

            return arrived

        heads = [watch(q, first_available, on(f"head{i}"), None, None, True) for i in range(300)]
        cursors = [q.cursor() for _ in range(300)]
        at_start = [watch(q, CursorSeek(c, False), on("cursor"), None, None, True) for c in cursors]
        peeks = [watch(q, first_peekable, on("peek"), None, None, False) for _ in range(50)]
        state = q._state
        assert len(state.cond.watchers) == 0 and len(state.cond.groups) == 3  # every one grouped
        q.send_many([Message(body=b"%d" % i) for i in range(5)])
        ran = threading.Event()
        manager._dispatcher.submit(ran.set)
        assert ran.wait(5)
        # A round per message sent (the embedded send_many notifies per message): the first five
        # head receives armed, one a round (their group came first); every peek, in the first.
        assert [o for o in order if o.startswith("head")] == [f"head{i}" for i in range(5)]
        assert order.count("peek") == 50 and "cursor" not in order
        assert sum(n.done for n in heads) == 5 and not any(n.done for n in at_start)
        assert all(n.done for n in peeks) and len(state.cond.groups) == 2  # the peeks' group went
        assert heads[10].cancel() and not heads[10].cancel()
        assert len(state.cond.groups[next(iter(state.cond.groups))]) == 294
    finally:
        manager.close()


def test_notifications_ended_before_their_timeout_free_their_callbacks(qm: QueueManager) -> None:
    # Their deadlines stayed in the dispatcher's heap, with the notification and its callbacks,
    # until the timeout passed (a server grew by ~2.5 KB per abandoned parked read for an hour).
    import gc
    import weakref

    from pymsmq.qm.notifications import PRUNE_ENDED_MIN

    q = qm.create_queue(r".\private$\ended")

    class Callback:
        def __init__(self) -> None:
            self.fired = threading.Event()

        def __call__(self, *args: object) -> None:
            self.fired.set()

    other_queue = qm.create_queue(r".\private$\other")
    live = Callback()
    other_queue.enable_notification(live, 0, 3600)  # armed through every rebuild of the heap
    expiring = Callback()
    other_queue.enable_notification(lambda *a: None, 0, 0.5, expiring)  # and this one times out
    ended: list[weakref.ref[Callback]] = []
    for i in range(3 * PRUNE_ENDED_MIN):
        callback = Callback()
        ended.append(weakref.ref(callback))
        if i % 2:
            q.enable_notification(callback, 0, 3600).cancel()
        else:  # fired by an arrival, then the message taken
            n = q.enable_notification(callback, 0, 3600)
            q.send(Message(body=b"x"))
            assert callback.fired.wait(10) and n.done
            q.receive(timeout=0)
    del callback
    gc.collect()
    assert sum(ref() is not None for ref in ended) < PRUNE_ENDED_MIN
    assert expiring.fired.wait(10) and not live.fired.is_set()
    other_queue.send(Message(body=b"last"))
    assert live.fired.wait(10)


def test_a_cancelled_or_fired_notification_lets_go_of_its_callbacks_at_once(qm: QueueManager) -> None:
    import gc
    import weakref

    q = qm.create_queue(r".\private$\let-go")
    fired = threading.Event()

    class Callback:
        def __call__(self, *args: object) -> None:
            fired.set()

    arrived, error = Callback(), Callback()
    refs = [weakref.ref(arrived), weakref.ref(error)]
    n = q.enable_notification(arrived, 0, 3600, error)
    del arrived, error
    n.cancel()
    gc.collect()
    assert [r() for r in refs] == [None, None]  # while its deadline is an hour away
    arrived = Callback()
    ref = weakref.ref(arrived)
    n = q.enable_notification(arrived, 0, 3600)
    del arrived
    q.send(Message(body=b"x"))
    assert fired.wait(10) and n.done
    deadline = time.monotonic() + 10
    while ref() is not None and time.monotonic() < deadline:  # the dispatcher's job drops it
        gc.collect()
        time.sleep(0.01)
    assert ref() is None
