"""Batch forms of the express path: ``send_express``'s one-instant run and ``take_entries``' head runs.

``send_express`` on a queue without quotas or armed notifications enqueues its messages at one
instant (one clock read, one arrival notification); ``take_entries`` takes runs of one priority
without seeking from the top each time.  Both must give exactly what N single sends / N single
receives give: same ids, order, errors, acknowledgements, journal copies, dead letters and expiries,
also across an id or lookup-id block boundary and with messages that have arrival events.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.qm.index import Entry
from pymsmq.qm.receive_batch import take_entries
from pymsmq.qm.send_batch import send_express
from pymsmq.qm.timers import FakeClock

sys.path.insert(0, str(Path(__file__).parent))

from test_send_batch import _contents, _world

_ADMIN = r".\private$\admin"
_PLAIN = r".\private$\plain"


def _message(size: int, priority: int, flags: int, ttbr: int | None) -> Message:
    m = Message(body=b"b" * size, priority=priority, label=f"{size}")
    if flags == 1:  # arrival ack and a dead letter copy: the general path inside the run
        m.ack = 1 | 4  # MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL | POS_RECEIVE
        m.admin_queue = _ADMIN
        m.journal = 2
    elif flags == 2:  # acknowledgements into the queue itself (the receive run must seek again)
        m.ack = 4 | 8  # POS_RECEIVE | NEG_RECEIVE
        m.admin_queue = _PLAIN
        m.priority = 7 - priority
    elif flags == 3:  # dead letter on expiry only
        m.journal = 2
    if ttbr is not None:
        m.max_time_to_receive = ttbr
    m.validate()
    return m


_send = st.tuples(
    st.integers(0, 300),
    st.sampled_from([0, 3, 7]),
    st.sampled_from([0, 0, 1, 2, 3]),
    st.sampled_from([None, None, 0, 5, 100]),
)


def _near_blocks(qm: QueueManager, queue: Any, ordinals: int, lookups: int) -> None:
    # Move the reserved id and lookup-id blocks' ends close, so that a run crosses them.
    qm._ordinal = qm._ordinal_reserved - ordinals
    state = queue._state
    state.next_lookup = state.reserved_lookup - lookups


def _received(qm: QueueManager, n: int, fast: bool, name: str = _PLAIN) -> list[str]:
    q = qm.queue(name[: -len(";journal")]).journal if name.endswith(";journal") else qm.queue(name)
    out: list[str] = []
    guid = str(qm.guid)

    def text(m: Message) -> str:
        return repr(m).replace(guid, "G").replace(guid.upper(), "G")

    if fast:

        def accept(entry: Entry) -> bool:
            out.append(text(entry.message))
            return True

        take_entries(q, n, accept)
    else:
        for _ in range(n):
            try:
                out.append(text(q.receive(0)))
            except MSMQError as e:
                out.append(str(e.hresult))
                break
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_send, max_size=20),
    st.integers(0, 4),
    st.integers(0, 4),
    st.integers(0, 25),
    st.sampled_from([0, 3, 200]),
    st.sampled_from(["plain", "plain2"]),  # plain2 journals its received messages
)
def test_runs_equal_one_by_one(
    sends: list[tuple[Any, ...]], ordinals: int, lookups: int, take: int, later: int, target: str
) -> None:
    clock = FakeClock(1000.25)
    one = QueueManager.open(":memory:", clock)
    fast = QueueManager.open(":memory:", clock)
    try:
        w1, w2 = _world(one), _world(fast)
        _near_blocks(one, w1[target], ordinals, lookups)
        _near_blocks(fast, w2[target], ordinals, lookups)
        expected: list[tuple[int, float] | int] = []
        for args in sends:
            m = _message(*args)
            try:
                w1[target].send(m, None)
            except MSMQError as e:
                expected.append(e.hresult)
            else:
                assert m.id is not None and m.sent_time is not None
                expected.append((m.id.uniquifier, m.sent_time))
        got = send_express(w2[target], [_message(*args) for args in sends])
        assert [r.hresult if isinstance(r, MSMQError) else (r[0].uniquifier, r[1]) for r in got] == expected
        assert _contents(one) == _contents(fast)
        # Receives: the same messages in the same order, the same acks and journal copies.
        name = rf".\private$\{target}"
        r1 = _received(one, take, False, name)
        r2 = _received(fast, take, True, name)
        assert r2 == [r for r in r1 if not r.isdigit()]
        clock.advance(later)  # the expiries armed by both paths
        assert _contents(one) == _contents(fast)
        assert _received(one, 100, False, name)[:-1] == _received(fast, 100, True, name)
        journal = f"{name};journal"
        copies = _received(one, 100, False, journal)
        assert copies == _received(fast, 100, False, journal)
    finally:
        one.close()
        fast.close()


def test_run_notifies_waiting_readers_once_sent() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(_PLAIN)
        got: list[Message] = []
        t = threading.Thread(target=lambda: got.append(q.receive(5)))
        t.start()
        while not q._state.cond.sleepers:
            threading.Event().wait(0.001)
        send_express(q, [_message(10, 3, 0, None), _message(20, 3, 0, None)])
        t.join(5)
        assert [m.body for m in got] == [b"b" * 10]
        assert len(q.receive_many(10)) == 1
    finally:
        qm.close()


def test_head_is_the_live_head_of_a_priority() -> None:
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(_PLAIN)
        for p in (3, 3, 5):
            q.send(Message(body=b"x", priority=p))
        index = q._state.index
        assert index.head(0) is None
        h5 = index.head(5)
        assert h5 is not None and h5 is index.first(False)
        index.remove(h5)
        assert index.head(5) is None
        h3 = index.head(3)
        assert h3 is not None and h3 is index.first(False)
    finally:
        qm.close()


def test_receive_facts_size_is_the_facts_length() -> None:
    from pymsmq.protocol.batch_ops import receive_facts, receive_facts_size
    from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS, DEFAULT_RECEIVE_PROPIDS

    m = Message(body=b"x")
    m.lookup_id, m.arrived_time, m.abort_count, m.move_count = 2**40, 1e9, 3, 0
    assert receive_facts_size(CLIENT_RECEIVE_PROPIDS) == len(receive_facts(m, CLIENT_RECEIVE_PROPIDS))
    assert receive_facts_size(DEFAULT_RECEIVE_PROPIDS) is None


def test_take_entries_fits_leaves_the_next_message_in_place() -> None:
    from pymsmq.qm.receive_batch import FULL

    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(_PLAIN)
        for i in range(5):
            q.send(Message(body=b"%d" % i))
        seen: list[bytes] = []
        taken: list[bytes] = []

        def fits(entry: Entry) -> bool:
            assert entry.lookup_id in q._state.index  # still queued when measured
            seen.append(entry.message.body)
            return len(taken) < 3

        assert take_entries(q, 10, lambda e: taken.append(e.message.body) is None, fits) == FULL
        assert taken == [b"0", b"1", b"2"] and seen == [b"0", b"1", b"2", b"3"]
        assert [m.body for m in q.receive_many(10)] == [b"3", b"4"]
    finally:
        qm.close()
