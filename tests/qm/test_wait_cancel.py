"""``waiters.WaitCancel``: a blocked read stops with MQ_ERROR_OPERATION_CANCELLED when its call is
cancelled ([MS-MQDMPR] 3.1.7.1.17 Cancel Waiting Message Read Request), whenever the cancel comes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.hresult import HResult
from pymsmq.qm.waiters import WaitCancel

Q = r".\private$\wait-cancel"


@pytest.fixture
def qm(tmp_path: Path) -> Iterator[QueueManager]:
    manager = QueueManager.open(tmp_path / "qm")
    manager.create_queue(Q).close()
    yield manager
    manager.close()


def test_a_blocked_receive_is_stopped(qm: QueueManager) -> None:
    q = qm.queue(Q)
    switch = WaitCancel()
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(switch.run(lambda: q.receive(timeout=None)))
        except MSMQError as exc:
            outcome.append(exc.hresult)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.2)  # blocked in its wait
    assert outcome == []
    switch.cancel()
    reader.join(5)
    assert outcome == [HResult.MQ_ERROR_OPERATION_CANCELLED]
    q.send(Message(body=b"later"))
    assert q.receive(0).body == b"later"  # the cancelled read took nothing


def test_a_cancel_before_the_wait_stops_it_when_it_would_wait(qm: QueueManager) -> None:
    q = qm.queue(Q)
    switch = WaitCancel()
    switch.cancel()
    with pytest.raises(MSMQError) as info:
        switch.run(lambda: q.receive(timeout=30))
    assert info.value.hresult == HResult.MQ_ERROR_OPERATION_CANCELLED


def test_a_read_that_does_not_wait_is_not_stopped(qm: QueueManager) -> None:
    q = qm.queue(Q)
    q.send(Message(body=b"here"))
    switch = WaitCancel()
    switch.cancel()
    assert switch.run(lambda: q.receive(timeout=30)).body == b"here"


def test_the_switch_is_this_thread_s_and_this_call_s_only(qm: QueueManager) -> None:
    q = qm.queue(Q)
    switch = WaitCancel()
    switch.cancel()
    assert switch.run(lambda: 7) == 7
    with pytest.raises(MSMQError) as info:  # after run: no switch, an ordinary timeout
        q.receive(timeout=0.05)
    assert info.value.hresult == HResult.MQ_ERROR_IO_TIMEOUT
