"""``QueueManager.total_bytes`` (what the machine quota limits) is a running total kept by the indexes.

It must always equal the sum over every queue, journal and subqueue, whatever happens to messages:
sends of each delivery, receives, transactions committed or aborted, moves to subqueues, journal
copies, expiry to a dead-letter queue, purges, deleted queues.  And a machine quota check no longer
costs a walk over every queue.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pymsmq import MQMSG_DEADLETTER, MQMSG_JOURNAL, Message, MSMQError, QueueManager
from pymsmq.qm.timers import FakeClock

NAMES = [r".\private$\a", r".\private$\b", r".\private$\t"]


def _summed(qm: QueueManager) -> int:
    return sum(s.total_bytes() for s in qm._by_id.values())


class TotalBytes(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(1_000_000.0)
        self.qm = QueueManager.open(":memory:", clock=self.clock)
        self.tx = None

    def _queue(self, i: int):  # type: ignore[no-untyped-def]
        name = NAMES[i]
        if not self.qm.queue_exists(name):
            return self.qm.create_queue(name, journal=True, transactional=name.endswith("t"))
        return self.qm.queue(name)

    def _tx(self, transactional: bool) -> object:
        # A transactional queue: the open transaction, else a one-message one; otherwise none.
        if not transactional:
            return None
        return self.tx if self.tx is not None else 3  # MQ_SINGLE_MESSAGE

    @rule(
        i=st.integers(0, 2),
        size=st.integers(0, 300),
        delivery=st.integers(0, 1),
        ttbr=st.sampled_from([5, 0xFFFFFFFF]),
    )
    def send(self, i: int, size: int, delivery: int, ttbr: int) -> None:
        with self._queue(i) as q:
            m = Message(body=b"x" * size, label="l" * (size % 7), delivery=delivery, max_time_to_receive=ttbr)
            m.journal = MQMSG_DEADLETTER | (MQMSG_JOURNAL if size % 2 else 0)
            q.send(m, self._tx(q.transactional))  # type: ignore[arg-type]

    @rule(i=st.integers(0, 2))
    def receive(self, i: int) -> None:
        with self._queue(i) as q:
            try:
                q.receive(0, transaction=self._tx(q.transactional))  # type: ignore[arg-type]
            except MSMQError:
                pass

    @precondition(lambda self: self.tx is None)
    @rule()
    def begin(self) -> None:
        self.tx = self.qm.begin_transaction()

    @precondition(lambda self: self.tx is not None)
    @rule(commit=st.booleans())
    def end(self, commit: bool) -> None:
        assert self.tx is not None
        if commit:
            self.tx.commit()
        else:
            self.tx.abort()
        self.tx = None

    @rule(i=st.integers(0, 1), back=st.booleans())
    def move_first_between_queue_and_subqueue(self, i: int, back: bool) -> None:
        with self._queue(i) as q:
            source = q.subqueue("poison") if back else q
            try:
                lid = source.peek(0).lookup_id
            except MSMQError:
                return
            assert lid is not None
            source.move(lid, None if back else "poison")

    @rule(seconds=st.sampled_from([1, 10]))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule(i=st.integers(0, 1))
    def purge(self, i: int) -> None:
        with self._queue(i) as q:
            q.purge()

    @precondition(lambda self: self.tx is None)
    @rule(i=st.integers(0, 2))
    def delete(self, i: int) -> None:
        if self.qm.queue_exists(NAMES[i]):
            self.qm.delete_queue(NAMES[i])

    @invariant()
    def total_is_the_sum(self) -> None:
        assert self.qm.total_bytes == _summed(self.qm)

    def teardown(self) -> None:
        if self.tx is not None:
            self.tx.abort()
        self.qm.close()


TotalBytes.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
test_total_bytes_stays_the_sum = TotalBytes.TestCase


def test_a_machine_quota_check_does_not_walk_every_queue() -> None:
    # 2,000 queues (and their journals): the quota's measure is read, not summed, on each send.
    qm = QueueManager.open(":memory:", machine_quota=10**6)
    for i in range(2000):
        qm.create_queue(rf".\private$\q{i}").close()
    calls = 0
    real = type(qm._by_id[next(iter(qm._by_id))]).total_bytes

    def counting(self):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(self)

    type(qm._by_id[next(iter(qm._by_id))]).total_bytes = counting  # type: ignore[method-assign]
    try:
        with qm.queue(r".\private$\q1") as q:
            for _ in range(100):
                q.send(Message(body=b"x" * 100))
    finally:
        type(qm._by_id[next(iter(qm._by_id))]).total_bytes = real  # type: ignore[method-assign]
    assert calls <= 100  # at most the queue's own total per send, never one per queue
    assert qm.total_bytes == 100 * 100
    qm.close()
