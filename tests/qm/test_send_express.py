"""``send_batch.send_express``: owned express messages queued without a copy.

It must give exactly what ``Queue.send`` one at a time gives (same errors, same queued messages, ids,
acknowledgements and dead letters), and report each message's id and sent time.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pymsmq import HResult, Message, MSMQError, QueueManager
from pymsmq.qm.index import Entry
from pymsmq.qm.receive_batch import DONE, EMPTY, take_entries
from pymsmq.qm.send_batch import send_express
from pymsmq.qm.timers import FakeClock

sys.path.insert(0, str(Path(__file__).parent))

from test_send_batch import _TARGETS, _contents, _world


def _message(size: int, ack: bool, priority: int, journal: int) -> Message:
    m = Message(body=b"b" * size, priority=priority, label=f"{size}", journal=journal)
    if ack:
        m.ack = 1  # MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL
        m.admin_queue = r".\private$\admin"
        m.journal = 2  # MQMSG_DEADLETTER
    m.validate()
    return m


_send = st.tuples(st.integers(0, 1500), st.booleans(), st.sampled_from([0, 1, 7]), st.sampled_from([0, 1, 2]))


@given(st.sampled_from(_TARGETS), st.lists(_send, max_size=12))
def test_send_express_equals_sends_one_by_one(target: str, sends: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    one = QueueManager.open(":memory:", clock)
    fast = QueueManager.open(":memory:", clock)
    try:
        w1, w2 = _world(one), _world(fast)
        expected: list[tuple[int, float] | int] = []
        for size, ack, priority, journal in sends:
            m = _message(size, ack, priority, journal)
            try:
                w1[target].send(m, None)
            except MSMQError as e:
                expected.append(e.hresult)
            else:
                assert m.id is not None and m.sent_time is not None
                expected.append((m.id.uniquifier, m.sent_time))
        owned = [_message(*args) for args in sends]
        got = send_express(w2[target], owned)
        assert [r.hresult if isinstance(r, MSMQError) else (r[0].uniquifier, r[1]) for r in got] == expected
        for m, r in zip(owned, got, strict=True):
            if not isinstance(r, MSMQError):
                assert (m.id, m.sent_time) == r
        assert _contents(one) == _contents(fast)
    finally:
        one.close()
        fast.close()


def test_send_express_queues_the_given_object() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\owned")
        m = Message(body=b"x")
        [(mid, sent)] = send_express(q, [m])
        assert q.receive(0) is m  # queued as it is: no copy
        assert (m.id, m.sent_time, m.destination_queue) == (mid, sent, q.format_name)
    finally:
        qm.close()


def test_send_express_refuses_recoverable_messages() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\owned")
        [err] = send_express(q, [Message(body=b"x", delivery=1)])
        assert isinstance(err, MSMQError) and err.hresult == HResult.MQ_ERROR
        assert q.receive_many(10) == []
    finally:
        qm.close()


def test_kept_packets_reach_take_entries() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\owned")
        q.send(Message(body=b"plain"))  # sent without a packet: None
        seen: list[tuple[bytes, Message]] = []

        def keep(packet: bytes, m: Message) -> bytes:
            seen.append((packet, m))
            return packet + b"!"

        owned = [Message(body=b"a"), Message(body=b"b"), Message(body=b"c")]
        send_express(q, owned, [b"A", None, b"C"], keep)
        assert seen == [(b"A", owned[0]), (b"C", owned[2])]
        got: list[Entry] = []
        assert take_entries(q, 3, lambda e: got.append(e) is None) == DONE
        assert [(e.message.body, e.packet) for e in got] == [(b"plain", None), (b"a", b"A!"), (b"b", None)]
        assert take_entries(q, 5, lambda e: got.append(e) is None) == EMPTY
        assert [e.packet for e in got[3:]] == [b"C!"]
        assert q.receive_many(10) == []
    finally:
        qm.close()
