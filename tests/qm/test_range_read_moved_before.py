"""READ_RANGE ``moved_before`` (``RangeFlags.MOVED_BEFORE``): a receive of a range leaves the messages
moved into the queue from a subqueue at or after a time (a stream's commit leaves what its batch
could not have read)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import pymsmq
from pymsmq.client.range_read import read_range as client_read_range
from pymsmq.qm.range_read import read_range
from pymsmq.qm.timers import FakeClock


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock(1_000_000.0)


@pytest.fixture()
def qm(clock: FakeClock) -> Iterator[pymsmq.QueueManager]:
    manager = pymsmq.QueueManager.open(":memory:", clock)
    yield manager
    manager.close()


def test_a_range_receive_leaves_what_was_moved_in_at_or_after_the_time(
    qm: pymsmq.QueueManager, clock: FakeClock
) -> None:
    q = qm.create_queue(".\\private$\\moves")
    q.send_many([pymsmq.Message(body=b"x", label=str(i), delivery=1) for i in range(5)])
    q.move(2, "retry")  # "1" at 1,000,000
    clock.advance(10)
    retry = qm.queue(q.format_name + ";retry")
    retry.move(2, None)  # back at 1,000,010
    q.move(3, "retry")  # "2" at 1,000,010
    clock.advance(10)
    qm.queue(q.format_name + ";retry").move(3, None)  # back at 1,000,020
    taken = read_range(q, 1, 6, receive=True, moved_before=1_000_015)
    # Never moved: 0, 3, 4; last moved at 1,000,010 (before): "1"; at 1,000,020: "2" stays.
    assert [m.label for m in taken.messages] == ["0", "1", "3", "4"]
    assert [m.label for m in q.receive_many(10)] == ["2"]


def test_the_client_sends_the_time_with_no_data_only(qm: pymsmq.QueueManager) -> None:
    q = qm.create_queue(".\\private$\\flags")
    q.send(pymsmq.Message(body=b"x", delivery=1))
    q.move(1, "retry")
    qm.queue(q.format_name + ";retry").move(1, None)  # moved back at 1,000,000
    with pytest.raises(pymsmq.MSMQError):
        client_read_range(q, 1, 2, receive=True, moved_before=5)  # (a time is not a byte budget)
    with pytest.raises(pymsmq.MSMQError):
        client_read_range(q, 1, 2, receive=True, no_data=True, moved_before=-1)
    assert client_read_range(q, 1, 2, receive=True, no_data=True, moved_before=1_000_000).count == 0
    assert client_read_range(q, 1, 2, receive=True, no_data=True, moved_before=0xFFFFFFFF).count == 1
