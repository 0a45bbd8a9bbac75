"""Receive and peek from the head: timeouts 0 / finite / infinite ([MC-MQAC] 3.11.4.1, D9 45-52),
blocked readers woken by arrivals without polling, concurrent receivers get each message once."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import HResult, Message, MSMQError, QueueManager


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:" if request.param == "memory" else tmp_path / "qm")
    yield m
    m.close()


def hr(fn: object, *args: object, **kwargs: object) -> int:
    with pytest.raises(MSMQError) as e:
        fn(*args, **kwargs)  # type: ignore[operator]
    return e.value.hresult


def test_empty_queue_timeout_zero_is_message_not_found(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\r")
    assert hr(q.receive, timeout=0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND == 0xC00E0088
    assert hr(q.peek, timeout=0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND


def test_positive_timeout_is_io_timeout_not_earlier(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\r")
    start = time.monotonic()
    assert hr(q.receive, timeout=0.2) == HResult.MQ_ERROR_IO_TIMEOUT == 0xC00E001B
    assert time.monotonic() - start >= 0.19
    start = time.monotonic()
    assert hr(q.peek, timeout=0.1) == HResult.MQ_ERROR_IO_TIMEOUT
    assert time.monotonic() - start >= 0.09


@pytest.mark.parametrize("timeout", [-1, "x", float("nan"), True])
def test_bad_timeout(qm: QueueManager, timeout: object) -> None:
    q = qm.create_queue(r".\private$\r")
    assert hr(q.receive, timeout=timeout) == HResult.MQ_ERROR_INVALID_PARAMETER


@pytest.mark.parametrize("timeout", [None, 30.0])
def test_blocked_receive_wakes_when_a_message_arrives(qm: QueueManager, timeout: float | None) -> None:
    q = qm.create_queue(r".\private$\r")
    got: list[tuple[bytes, float]] = []

    def reader() -> None:
        m = q.receive(timeout=timeout)
        got.append((m.body, time.monotonic()))

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.1)
    assert not got
    q.send(Message(body=b"wake", delivery=1))
    sent_at = time.monotonic()  # after the send's durable write (an fsync took 0.8 s on a loaded host)
    t.join(5)
    assert got and got[0][0] == b"wake"
    assert got[0][1] - sent_at < 0.5  # woken by the arrival, not by a polling interval


def test_blocked_peek_wakes_and_leaves_the_message(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\r")
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(q.peek(timeout=10).body))
    t.start()
    time.sleep(0.05)
    q.send(Message(body=b"p"))
    t.join(5)
    assert got == [b"p"] and q.message_count == 1


def test_peek_twice_returns_same_message(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\r")
    q.send(Message(body=b"a"))
    a, b = q.peek(timeout=0), q.peek(timeout=0)
    assert a.id == b.id and a.lookup_id == b.lookup_id and q.message_count == 1
    assert q.receive(timeout=0).id == a.id and q.message_count == 0


def test_concurrent_receivers_get_each_message_once(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\r")
    n = 200
    got: list[int] = []
    lock = threading.Lock()

    def reader() -> None:
        while True:
            try:
                m = q.receive(timeout=0.5)
            except MSMQError:
                return
            with lock:
                got.append(m.app_specific)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(n):
        q.send(Message(app_specific=i, delivery=i % 2))
    for t in threads:
        t.join(10)
    assert sorted(got) == list(range(n))


def test_concurrent_producers(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\r")

    def producer(k: int) -> None:
        for i in range(25):
            q.send(Message(app_specific=k * 100 + i, delivery=1))

    threads = [threading.Thread(target=producer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    got = [q.receive(timeout=0) for _ in range(200)]
    assert sorted(m.app_specific for m in got) == sorted(k * 100 + i for k in range(8) for i in range(25))
    lookup_ids = [m.lookup_id for m in got]
    assert lookup_ids == sorted(lookup_ids)  # same priority: FIFO = lookup-id order
    for k in range(8):  # each producer's messages in its own send order
        mine = [m.app_specific for m in got if m.app_specific // 100 == k]
        assert mine == sorted(mine)


def test_close_wakes_waiter_with_operation_cancelled(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\r")
    errors: list[int] = []

    def reader() -> None:
        try:
            q.receive(timeout=None)
        except MSMQError as e:
            errors.append(e.hresult)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.05)
    q.close()
    t.join(5)
    assert errors == [HResult.MQ_ERROR_OPERATION_CANCELLED]  # [MS-MQDMPR] 3.1.7.1.6 Close Queue


def test_queue_manager_close_wakes_waiter(tmp_path: Path) -> None:
    qm = QueueManager.open(tmp_path / "c")
    q = qm.create_queue(r".\private$\r")
    errors: list[int] = []

    def reader() -> None:
        try:
            q.receive(timeout=None)
        except MSMQError as e:
            errors.append(e.hresult)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.05)
    qm.close()
    t.join(5)
    assert errors == [HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE]


def _calls_per_receive(q: object, k: int) -> float:
    """Python function calls made by ``k`` receives: a deterministic measure of the work (no clocks)."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        for _ in range(k):
            q.receive(timeout=0)  # type: ignore[attr-defined]
    finally:
        sys.setprofile(None)
    return calls / k


def test_receive_cost_does_not_grow_with_backlog() -> None:
    # The rate comparison (1M vs 1k queued) is bench/qm.py's; here the work itself is counted.
    with QueueManager.open(":memory:") as qm:
        q = qm.create_queue(r".\private$\big")
        for _ in range(100_000):
            q.send(Message())
        at_100k = _calls_per_receive(q, 500)
        for _ in range(q.message_count - 1000):
            q.receive(timeout=0)
        at_1k = _calls_per_receive(q, 500)
        assert at_100k <= 1.1 * at_1k, (at_100k, at_1k)
