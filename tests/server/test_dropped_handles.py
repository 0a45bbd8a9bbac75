"""Queue handles a remote client drops without ``close`` are closed on the server (not kept until the
connection ends): a loop of ``qm.queue(name).send(m)`` one-liners holds one server handle, not one per
iteration."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from _pymsmq_server import ThreadServer

from pymsmq import Message, MSMQError, connect
from pymsmq.hresult import HResult
from pymsmq.server import ServerConfig

Q = ".\\private$\\orders"


def _handles(server: ThreadServer) -> int:
    assert server.server is not None
    return sum(len(s.handles) for s in list(server.server.sessions))


def test_one_liners_do_not_pile_up_handles(server: ThreadServer) -> None:
    with connect(server.url) as qm:
        qm.create_queue(Q)
        for i in range(300):
            qm.queue(Q).send(Message(body=b"%d" % i))
        gc.collect()
        assert qm.queue(Q).message_count == 300
        # Each dropped handle's CLOSE_QUEUE went out with the next request; the last one's answer
        # may still be on its way, so at most the last two handles and the one just counted remain.
        assert _handles(server) <= 3
        kept = qm.queue(Q)
        assert [m.body for m in kept.receive_many(300)] == [b"%d" % i for i in range(300)]
        assert _handles(server) >= 1  # the handle still held is open
        kept.close()


def test_a_closed_handle_is_not_closed_twice(server: ThreadServer) -> None:
    # close() then drop: nothing is queued for closing (the handle number may be reused).
    with connect(server.url) as qm:
        q = qm.create_queue(Q)
        q.close()
        del q
        gc.collect()
        assert qm._t.dropped_requests == []
        other = qm.queue(Q)
        other.send(Message(body=b"x"))
        assert other.receive(timeout=1).body == b"x"
        other.close()


def _cursors(server: ThreadServer) -> int:
    assert server.server is not None
    return sum(len(s.cursors) for s in list(server.server.sessions))


def test_dropped_cursors_are_closed_on_the_server(server: ThreadServer) -> None:
    # A RemoteCursor had no __del__: 50,000 dropped cursors stayed on the server (15 MB) until
    # their queue handle or the connection closed.
    with connect(server.url) as qm:
        q = qm.create_queue(Q)
        q.send(Message(body=b"m"))
        for _ in range(300):
            c = q.cursor()
            assert c.peek_current(timeout=0).body == b"m"
            del c
        gc.collect()
        assert q.peek(0).body == b"m"  # one more request: the last CLOSE_CURSORs go with it
        assert _cursors(server) <= 2
        kept = q.cursor()
        assert kept.peek_current(timeout=0).body == b"m"
        assert _cursors(server) >= 1
        q.close()


def test_a_connection_has_at_most_max_cursors(tmp_path: Path) -> None:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, max_cursors=3)).start()
    try:
        with connect(s.url) as qm:
            q = qm.create_queue(Q)
            q.send(Message(body=b"m"))
            cursors = [q.cursor() for _ in range(3)]
            for c in cursors:
                assert c.peek_current(timeout=0).body == b"m"
            with pytest.raises(MSMQError) as info:
                q.cursor().peek_current(timeout=0)
            assert info.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
            cursors[0].reset()  # closes its server cursor
            assert q.cursor().peek_current(timeout=0).body == b"m"
    finally:
        s.stop()


def test_a_long_lived_connection_keeps_nothing_of_the_handles_it_closed(server: ThreadServer) -> None:
    # The holds table kept every handle number ever closed (80 bytes each, forever): a client
    # opening a handle per operation, as the CLI does, grew the server without bound.
    with connect(server.url) as qm:
        qm.create_queue(Q)
        for i in range(200):
            with qm.queue(Q) as q:
                q.send(Message(body=b"%d" % i, delivery=1))
        assert server.server is not None
        [session] = list(server.server.sessions)  # this client's connection
        assert len(session.holds._open_handles) <= 1
        with qm.queue(Q) as q:  # holds still work: a two-phase receive, acknowledged
            assert q.receive(0).body == b"0"
        assert len(session.holds) == 0


def test_a_dropped_transaction_does_not_count_against_the_limit_of_the_next_begin(tmp_path: Path) -> None:
    # (Outside QA) the dropped transaction's ABORT goes out with the next BEGIN_TRANSACTION, which
    # the server answers at once, before its work pool has run the abort: at the limit the BEGIN
    # was refused (3 of 3 runs), and went through 0.3 s later.
    import copy

    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, max_transactions=3)).start()
    try:
        with connect(s.url) as qm:
            held = [qm.begin_transaction() for _ in range(2)]
            for _ in range(20):
                dropped = qm.begin_transaction()
                del dropped
                gc.collect()
            kept = qm.begin_transaction()  # three active: the limit
            assert hresult_of_begin(qm) == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
            twin = copy.copy(kept)  # a copy is the same transaction: letting it go aborts nothing
            assert twin is kept and copy.deepcopy(kept) is kept
            del twin
            kept.commit()
            for tx in held:
                tx.abort()
    finally:
        s.stop()


def hresult_of_begin(qm: object) -> int:
    with pytest.raises(MSMQError) as refused:
        qm.begin_transaction()  # type: ignore[attr-defined]
    return refused.value.hresult


def test_dropped_transactions_are_aborted_on_the_server(server: ThreadServer) -> None:
    # A RemoteTransaction let go of stayed active on the server, with the messages it received
    # locked, until the connection closed: 300 of them held 300 messages, and the 1,025th
    # BEGIN_TRANSACTION of a connection was MQ_ERROR_INSUFFICIENT_RESOURCES.
    with connect(server.url) as qm:
        q = qm.create_queue(Q, transactional=True)
        q.send_many([Message(body=b"%d" % i) for i in range(300)], transaction=3)
        for _ in range(300):
            tx = qm.begin_transaction()
            q.receive(timeout=0, transaction=tx)
            del tx
        gc.collect()
        assert q.message_count == 300  # one more request: the last ABORT_TRANSACTION goes with it
        assert server.server is not None
        [session] = list(server.server.sessions)
        assert sum(tx.active for tx in session.transactions.values()) <= 1
        for _ in range(1100):  # more than max_transactions (1,024) let go of, one after another
            qm.begin_transaction()
        got = q.receive_many(300, transaction=3)
        assert sorted(m.body for m in got) == sorted(b"%d" % i for i in range(300))
        assert qm._t.dropped_requests == []


def test_a_connection_does_not_keep_the_transactions_it_ended(server: ThreadServer) -> None:
    # Outside QA (soak): finished transactions were forgotten only when the table reached
    # max_transactions counting those ending as not there, which a client that commits each one
    # never reached: every transaction stayed in memory until the connection closed (1.1 KB each,
    # 0.4 GB an hour at 100 a second).  The table now keeps about as many finished as active ones.
    assert server.server is not None
    with connect(server.url) as qm:
        q = qm.create_queue(Q, transactional=True)
        open_one = qm.begin_transaction()
        q.send(Message(body=b"kept"), open_one)
        for i in range(1000):
            with qm.begin_transaction() as tx:
                q.send(Message(body=b"%d" % i), tx)
            qm.begin_transaction().abort()
        [session] = [s for s in server.server.sessions if s.transactions]
        assert len(session.transactions) <= 130
        assert open_one.id in session.transactions  # an active one is never forgotten
        open_one.commit()
        assert q.message_count == 1001
