"""Waiting receives park on queue notifications (no thread each) and still behave like blocking ones."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)

from pymsmq import Message, MSMQError, connect
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.protocol import Action
from pymsmq.protocol.batch_ops import ReceiveManyRequest, decode_received
from pymsmq.protocol.codes import ManyFlags
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS
from pymsmq.server import ServerConfig

Q = ".\\private$\\waits"


def _eventually(condition: Callable[[], bool], what: str = "", seconds: float = 30) -> None:
    """Wait (polling) until ``condition()``; fail with ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def _count_poll_rounds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter (its one item) of the rounds of polls of waiting reads (``poll_watchers``)."""
    from pymsmq.qm.notifications import WatchedCondition

    rounds = [0]
    original = WatchedCondition.poll_watchers

    def counted(self: WatchedCondition) -> None:
        rounds[0] += 1
        original(self)

    monkeypatch.setattr(WatchedCondition, "poll_watchers", counted)
    return rounds


def test_many_waiting_receives_take_no_thread_each_and_each_gets_one_message(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    before = threading.active_count()
    waiting = [q.receive_async(timeout=30) for _ in range(60)]
    assert client.ping(b"p") == b"p"  # every RECEIVE has been read and parked by now
    assert server.server is not None and sum(s.pending for s in server.server.sessions) == 60
    assert threading.active_count() - before < 10  # not one parked thread per waiting receive
    q.send_many([Message(body=b"%d" % i) for i in range(60)])
    bodies = sorted(int(p.result().body) for p in waiting)
    assert bodies == list(range(60))
    client.close()


def test_a_waiting_peek_and_receive_wake_on_send(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    peek = q._read(0x80000000, 10)  # MQ_ACTION_PEEK_CURRENT on the head, waiting
    receive = q.receive_async(timeout=10)
    time.sleep(0.1)
    q.send(Message(body=b"one", delivery=1))
    assert peek.result().body == b"one"
    assert receive.result().body == b"one"
    client.close()


def test_a_waiting_receive_times_out_like_a_blocking_one(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    start = time.monotonic()
    with pytest.raises(MSMQError) as err:
        q.receive(timeout=0.3)
    assert err.value.hresult == HResult.MQ_ERROR_IO_TIMEOUT
    assert time.monotonic() - start >= 0.25
    q.send(Message(body=b"after"))
    assert q.receive(0).body == b"after"  # the timed-out wait took nothing
    client.close()


def test_a_closed_connection_ends_its_waits(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    for _ in range(5):
        q.receive_async(timeout=30)
    assert client.ping(b"p") == b"p"
    client.close()
    assert server.server is not None
    deadline = time.monotonic() + 5
    while server.server.sessions and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not server.server.sessions
    other = connect(server.url)
    q2 = other.queue(Q)
    q2.send(Message(body=b"kept"))
    assert q2.receive(0).body == b"kept"  # nobody from the closed connection took it
    other.close()


def test_waiting_reads_by_correlation_id_take_no_wait_thread(tmp_path: Path) -> None:
    # Each waiting RECEIVE_MATCHING took one of the server's wait threads: 1,024 peeks parked by one
    # connection stalled every other client's transactional receive until it disconnected.  They
    # now park on a notification; here two work threads serve twelve waiting reads and a
    # transactional receive.
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, work_threads=2)).start()
    client = connect(s.url)
    pool = ThreadPoolExecutor(13)
    try:
        replies = client.create_queue(".\\private$\\replies")
        txq = client.create_queue(".\\private$\\tx", transactional=True)
        ids = [ObjectId(uuid.uuid4(), i) for i in range(12)]
        peeks = [pool.submit(replies.peek_by_correlation_id, c, None) for c in ids[:6]]
        receives = [pool.submit(replies.receive_by_correlation_id, c, 60) for c in ids[6:]]
        assert s.server is not None
        _eventually(
            lambda: sum(x.pending for x in list(s.server.sessions)) >= 12, "the reads were not all parked"
        )
        with client.begin_transaction() as tx:
            txq.send(Message(body=b"t"), tx)

        def take() -> bytes:
            with client.begin_transaction() as tx:
                return txq.receive(5, tx).body

        assert pool.submit(take).result(30) == b"t"  # hung while the twelve held the threads
        replies.send_many([Message(body=b"%d" % i, correlation_id=c) for i, c in enumerate(ids)])
        assert [f.result(30).body for f in peeks] == [b"%d" % i for i in range(6)]
        assert [f.result(30).body for f in receives] == [b"%d" % i for i in range(6, 12)]
        assert replies.message_count == 6  # the peeked ones
    finally:
        client.close()  # wakes any call still waiting (a failure above)
        pool.shutdown(wait=False, cancel_futures=True)
        s.stop()


def test_one_arrival_wakes_one_waiting_receive(server: ThreadServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every arrival woke every parked receive (each hopped to the loop, one took the message, the
    # rest armed again): 300 waiting consumers cost the server 10 ms a message.  Now one arrival
    # wakes one; a batch wakes them one after another, until the messages or the waits run out.
    from pymsmq.server.waits import ArrivalWait

    tries = [0]
    original = ArrivalWait._try_again

    def counted(self: ArrivalWait) -> bool:
        tries[0] += 1
        return original(self)

    monkeypatch.setattr(ArrivalWait, "_try_again", counted)
    client = connect(server.url)
    q = client.create_queue(Q)
    waiting = [q.receive_async(timeout=30) for _ in range(40)]
    assert client.ping(b"p") == b"p"
    assert server.server is not None
    _eventually(lambda: sum(s.pending for s in list(server.server.sessions)) >= 40)
    sender = connect(server.url).queue(Q)
    for i in range(20):  # one at a time
        sender.send(Message(body=b"%d" % i))
    sender.send_many([Message(body=b"%d" % i) for i in range(20, 40)])  # and a batch
    assert sorted(int(w.result().body) for w in waiting) == list(range(40))
    assert tries[0] <= 2 * 40, tries[0]  # 20 * 40 - 190 = 610 wake-ups for the first 20 before
    assert q.message_count == 0
    client.close()


def test_cursor_reads_of_one_identity_take_no_thread_and_keep_nobody_waiting(tmp_path: Path) -> None:
    # Cursor reads (and RECEIVE_MANY transactional and peek batches) that waited held a thread of
    # the server's wait pool: one identity's took every thread it was allowed, and another
    # identity's cursor reads queued behind them until their timeouts.  They now park on
    # notifications as head receives do.
    import json

    from pymsmq.server import AccessPolicy

    policy = AccessPolicy.from_json(
        json.dumps(
            {
                "owner": "admin",
                "tokens": {"a": "admin", "h": "hog", "o": "other"},
                "permissions": {"hog": {"private$\\hog": "read"}, "other": {"private$\\other": "read"}},
            }
        )
    )
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, policy=policy, work_threads=2)).start()
    admin = connect(s.url, token="a")
    hog = connect(s.url, token="h")
    other = connect(s.url, token="o")
    pool = ThreadPoolExecutor(8)
    try:
        admin.create_queue(".\\private$\\hog")
        admin.create_queue(".\\private$\\other")
        hq = hog.queue(".\\private$\\hog")
        # Cursor reads as RemoteCursor.peek_current / receive_current send them, not waited for.
        before = threading.active_count()
        cursors = [hq.cursor() for _ in range(300)]  # (a cursor dropped is closed on the server)
        waits = [hq._read(Action.MQ_ACTION_PEEK_CURRENT, 60, None, c._cursor_id()) for c in cursors[:200]]
        takers = [hq._read(Action.MQ_ACTION_RECEIVE, 60, None, c._cursor_id()) for c in cursors[200:]]
        peek_batch = ReceiveManyRequest(hq._handle, 10, 60_000, ManyFlags.PEEK, None, CLIENT_RECEIVE_PROPIDS)
        batch = hog._t.submit(peek_batch, lambda response: response)
        assert s.server is not None
        _eventually(
            lambda: sum(len(x.waits) for x in list(s.server.sessions)) >= 301, "the reads were not all parked"
        )
        assert threading.active_count() - before < 20  # not a thread per waiting read
        oq = other.queue(".\\private$\\other")
        cursor = oq.cursor()
        late = pool.submit(cursor.peek_current, 30)
        time.sleep(0.1)
        admin.queue(".\\private$\\other").send(Message(body=b"o"))
        assert late.result(10).body == b"o"  # queued behind the hog's reads before
        admin.queue(".\\private$\\hog").send_many([Message(body=b"%d" % i) for i in range(100)])
        assert {w.result().body for w in waits} <= {b"%d" % i for i in range(100)}
        assert sorted(int(t.result().body) for t in takers) == list(range(100))
        assert decode_received(batch.result().messages)
    finally:
        other.close()
        hog.close()
        admin.close()
        pool.shutdown(wait=False, cancel_futures=True)
        s.stop()


def test_waiting_transactional_receives_take_no_wait_thread(tmp_path: Path) -> None:
    # A transactional (or recoverable, two-phase) receive of the head that waited held a wait
    # thread: waiting transactional consumers filled the pool and another client's receive with
    # its message there waited for a thread.  They now park on a notification as head receives do.
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, work_threads=2)).start()
    client = connect(s.url)
    pool = ThreadPoolExecutor(12)
    try:
        jobs = client.create_queue(".\\private$\\jobs", transactional=True)
        other = client.create_queue(".\\private$\\other", transactional=True)

        def consume() -> bytes:
            with client.begin_transaction() as tx:
                return jobs.receive(60, tx).body

        consumers = [pool.submit(consume) for _ in range(10)]
        assert s.server is not None
        _eventually(
            lambda: sum(len(x.waits) for x in list(s.server.sessions)) >= 10,
            "the receives were not all parked",
        )
        with client.begin_transaction() as tx:
            other.send(Message(body=b"o"), tx)

        def take() -> bytes:
            with client.begin_transaction() as tx:
                return other.receive(5, tx).body

        assert pool.submit(take).result(30) == b"o"  # waited for a thread before
        with client.begin_transaction() as tx:
            jobs.send_many([Message(body=b"%d" % i) for i in range(10)], transaction=tx)
        assert sorted(int(f.result(30)) for f in consumers) == list(range(10))
        assert jobs.message_count == 0
        with pytest.raises(MSMQError) as late, client.begin_transaction() as tx:
            jobs.receive(0.2, tx)  # a timeout still ends a parked one
        assert late.value.hresult == HResult.MQ_ERROR_IO_TIMEOUT
    finally:
        client.close()
        pool.shutdown(wait=False, cancel_futures=True)
        s.stop()


def test_parking_a_read_looks_at_no_other_waiting_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each read tried on the work pool passed "its turn" on after its first try, which polls every
    # waiting read of the queue: parking 4,000 cursor receives took 30 s (quadratic).  Only a read
    # woken by an arrival has a turn to pass on.
    polls = _count_poll_rounds(monkeypatch)
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0)).start()
    client = connect(s.url)
    try:
        q = client.create_queue(".\\private$\\tx", transactional=True)
        tx = client.begin_transaction()
        waiting = [q.receive_async(timeout=30, transaction=tx) for _ in range(50)]
        assert s.server is not None
        _eventually(lambda: sum(len(x.waits) for x in list(s.server.sessions)) >= 50)
        assert polls[0] < 10, polls[0]  # one per read before
        with client.begin_transaction() as sender:
            q.send_many([Message(body=b"%d" % i) for i in range(50)], transaction=sender)
        assert sorted(int(w.result().body) for w in waiting) == list(range(50))
        tx.commit()
    finally:
        client.close()
        s.stop()


@pytest.mark.parametrize("cursors", [False, True], ids=["head", "cursor"])
def test_a_batch_reaches_every_waiting_receive_of_the_head_or_of_cursors(
    server: ThreadServer, cursors: bool
) -> None:
    # One round of polls wakes one receive of a group (the head's, or cursors' at one position);
    # each woken receive passes the turn on, so a batch of 40 reaches all 40 (half recoverable).
    client = connect(server.url)
    q = client.create_queue(Q)
    kept = [q.cursor() for _ in range(40)]  # (a cursor dropped is closed on the server)
    if cursors:
        waiting = [q._read(Action.MQ_ACTION_RECEIVE, 30, None, c._cursor_id()) for c in kept]
    else:
        waiting = [q.receive_async(timeout=30) for _ in range(40)]
    assert server.server is not None
    _eventually(lambda: sum(len(s.waits) for s in list(server.server.sessions)) >= 40)
    q.send_many([Message(body=b"%d" % i, delivery=i % 2) for i in range(40)])
    assert sorted(int(w.result().body) for w in waiting) == list(range(40))
    assert q.message_count == 0
    client.close()


def test_waits_of_connections_that_died_are_freed_before_their_timeout(server: ThreadServer) -> None:
    # Each parked read's notification stayed in the queue manager's deadline heap, with the wait,
    # its hold and its closures, until its timeout (here ten minutes): a server whose clients died
    # while waiting grew by ~2.5 KB per wait (60,000 waits: 37 -> 84 MB).
    import gc

    from pymsmq.qm.notifications import PRUNE_ENDED_MIN
    from pymsmq.server.waits import ArrivalWait

    owner = connect(server.url)
    owner.create_queue(Q)
    for _ in range(4):
        client = connect(server.url)
        q = client.queue(Q)
        for _ in range(PRUNE_ENDED_MIN - 1):  # the window (max_in_flight 1024) keeps room for the ping
            q.receive_async(timeout=600)
        assert client.ping(b"p") == b"p"  # every RECEIVE parked
        client.close()
    assert server.server is not None
    _eventually(lambda: len(server.server.sessions) == 1, "the dead connections' sessions end")  # type: ignore[union-attr]
    gc.collect()
    assert sum(isinstance(o, ArrivalWait) for o in gc.get_objects()) < PRUNE_ENDED_MIN
    # Waits parked now still work.
    waiting = owner.queue(Q).receive_async(timeout=30)
    owner.queue(Q).send(Message(body=b"after"))
    assert waiting.result().body == b"after"
