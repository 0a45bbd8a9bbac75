"""``qm.receive_batch.take_entries``: ``take_available`` passing entries (with their kept packets)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq import HResult, Message, MSMQError, QueueManager
from pymsmq.qm.index import Entry
from pymsmq.qm.receive_batch import take_available, take_entries
from pymsmq.qm.timers import FakeClock

sys.path.insert(0, str(Path(__file__).parent))

from test_receive_batch_take import _key, _message, _rest, _send, _world


@settings(max_examples=100)
@given(st.lists(_send, max_size=30), st.integers(0, 35), st.integers(1, 40), st.booleans())
def test_take_entries_equals_take_available(
    sends: list[tuple[int, int, int, bool, int]], count: int, limit: int, journal: bool
) -> None:
    clock = FakeClock(1_000_000.0)
    one = QueueManager.open(":memory:", clock)
    many = QueueManager.open(":memory:", clock)
    try:
        (q1, a1), (q2, a2) = _world(one, journal), _world(many, journal)
        for i, s in enumerate(sends):
            q1.send(_message(i, a1, *s))
            q2.send(_message(i, a2, *s))
        clock.advance(10)
        expected: list[Message] = []
        got: list[Entry] = []

        def accept1(m: Message) -> bool:
            expected.append(m)
            return len(expected) < limit

        def accept2(e: Entry) -> bool:
            got.append(e)
            return len(got) < limit

        assert take_entries(q2, count, accept2) == take_available(q1, count, accept1)
        assert [_key(e.message) for e in got] == [_key(m) for m in expected]
        assert all(e.packet is None for e in got)
        assert _rest(many) == _rest(one)
    finally:
        one.close()
        many.close()


def test_take_entries_checks() -> None:
    qm = QueueManager.open(":memory:")
    try:
        tx = qm.create_queue(r".\private$\tx", transactional=True)
        with pytest.raises(ValueError):
            take_entries(tx, 5, lambda e: True)
        qm.create_queue(r".\private$\q").close()
        send_only = qm.queue(r".\private$\q", 2)
        with pytest.raises(MSMQError) as err:
            take_entries(send_only, 5, lambda e: True)
        assert err.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
    finally:
        qm.close()
