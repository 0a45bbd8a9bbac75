"""Subqueues (``queue;name``, MSMQ 4.0): open, receive from, move between a queue and its subqueues
([MS-MQDMPR] 3.1.7.1.16 Move Message), subqueue count and names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import MQ_SINGLE_MESSAGE, HResult, Message, MSMQError, QueueManager


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:" if request.param == "memory" else tmp_path / "qm", machine_name="M1")
    yield m
    m.close()


def hr(fn: object, *args: object, **kwargs: object) -> int:
    with pytest.raises(MSMQError) as e:
        fn(*args, **kwargs)  # type: ignore[operator]
    return e.value.hresult


def test_open_subqueue_by_path_and_format_name(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\orders")
    s1 = qm.queue(r".\private$\orders;poison")
    s2 = qm.queue(r"DIRECT=OS:M1\private$\orders;poison")
    s3 = qm.queue(q.format_name + ";poison")
    s4 = q.subqueue("poison")
    assert s1.format_name == r"DIRECT=OS:M1\private$\orders;poison"
    assert {s.format_name for s in (s2, s3, s4)} == {s1.format_name}
    assert s1.subqueue_name == "poison" and s1.path_name == r"M1\private$\orders;poison"
    assert hr(q.subqueue, "bad name") == HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
    assert hr(q.subqueue, "x" * 33) == HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME


def test_move_to_subqueue_and_back(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\orders")
    q.send(Message(body=b"a", delivery=1))
    q.send(Message(body=b"b"))
    lid = q.peek(timeout=0).lookup_id
    poison = q.subqueue("poison")
    assert q.subqueue_names == [] and q.subqueue_count == 0
    q.move(lid, poison)
    assert q.peek(timeout=0).body == b"b"  # gone from the main queue
    m = poison.peek(timeout=0)
    assert (m.body, m.lookup_id, m.move_count) == (b"a", lid, 1)  # lookup id kept
    assert q.subqueue_names == ["poison"] and q.subqueue_count == 1
    poison.move(lid, None)
    back = q.peek(timeout=0)
    assert (back.body, back.lookup_id, back.move_count) == (b"a", lid, 2)  # back in place (first)
    assert q.subqueue_names == []


def test_move_between_subqueues_and_receive(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\o")
    q.send(Message(body=b"a"))
    lid = q.peek(timeout=0).lookup_id
    q.move(lid, "retry")
    q.subqueue("retry").move(lid, "dead")
    assert q.subqueue_names == ["dead"]
    dead = qm.queue(r".\private$\o;dead")
    assert dead.receive(timeout=0).move_count == 2
    assert q.message_count == 0 and dead.message_count == 0


def test_subqueue_errors(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\o")
    other = qm.create_queue(r".\private$\other")
    q.send(Message())
    lid = q.peek(timeout=0).lookup_id
    sub = q.subqueue("s")
    assert hr(sub.send, Message()) == HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
    assert hr(q.move, lid, other) == HResult.MQ_ERROR_INVALID_PARAMETER
    assert hr(q.move, lid, None) == HResult.MQ_ERROR_INVALID_PARAMETER  # same queue
    assert hr(q.move, 999, "s") == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert hr(q.move, 0, "s") == HResult.MQ_ERROR_INVALID_PARAMETER
    assert hr(q.move, lid, 5) == HResult.MQ_ERROR_INVALID_PARAMETER
    assert hr(sub.move, lid, None) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # not in the subqueue
    assert hr(lambda: qm.dead_letter_queue.subqueue("x")) == HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
    assert hr(lambda: sub.journal) == HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION


def test_transactional_move(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    q.send(Message(body=b"a"), transaction=MQ_SINGLE_MESSAGE)
    lid = q.peek(timeout=0).lookup_id
    tx = qm.begin_transaction()
    q.move(lid, "poison", transaction=tx)
    assert hr(q.peek, timeout=0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # locked while the move is pending
    assert hr(q.subqueue("poison").peek, timeout=0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    tx.abort()
    assert q.peek(timeout=0).abort_count == 1
    with qm.begin_transaction() as tx:
        q.move(lid, "poison", transaction=tx)
    m = q.subqueue("poison").peek(timeout=0)
    assert (m.lookup_id, m.move_count) == (lid, 1)
    assert hr(q.move, lid, "x") == HResult.MQ_ERROR_MESSAGE_NOT_FOUND


def test_receive_waits_on_subqueue(qm: QueueManager) -> None:
    import threading

    q = qm.create_queue(r".\private$\w")
    sub = q.subqueue("s")
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(sub.receive(timeout=10).body))
    t.start()
    q.send(Message(body=b"m"))
    q.move(q.peek(timeout=0).lookup_id, "s")
    t.join(5)
    assert got == [b"m"]


def test_purge_subqueue_only(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\p")
    for _ in range(3):
        q.send(Message())
    q.move(q.peek(timeout=0).lookup_id, "s")
    q.subqueue("s").purge()
    assert q.message_count == 2 and q.subqueue_names == []


def test_subqueue_placement_survives_restart(tmp_path: Path) -> None:
    path = tmp_path / "qm"
    with QueueManager.open(path) as qm:
        q = qm.create_queue(r".\private$\r")
        q.send(Message(body=b"a", delivery=1))
        q.send(Message(body=b"b", delivery=1))
        q.move(q.peek(timeout=0).lookup_id, "held")
    with QueueManager.open(path) as qm:
        q = qm.queue(r".\private$\r")
        assert q.subqueue_names == ["held"]
        m = q.subqueue("held").receive(timeout=0)
        assert (m.body, m.move_count) == (b"a", 1)
        assert q.receive(timeout=0).body == b"b"


def test_a_subqueue_that_holds_nothing_is_forgotten_once_its_handles_close(qm: QueueManager) -> None:
    # QA 2026-11-27: every subqueue name ever used kept an index (about 2 KB) for the process's life.
    q = qm.create_queue(r".\private$\retries", transactional=True)
    state = q._state
    for i in range(50):
        with qm.begin_transaction() as tx:
            q.send(Message(body=b"%d" % i), transaction=tx)
        m = q.peek(0)
        q.move(m.lookup_id, f"retry{i}", MQ_SINGLE_MESSAGE)
        with q.subqueue(f"retry{i}") as sub:
            assert sub.receive(0, transaction=MQ_SINGLE_MESSAGE).body == b"%d" % i
    assert state.subqueues == {}
    # Kept while a handle is open on it, or while it holds anything; a move lands in its subqueue
    # when its transaction commits (transaction.land_move makes the index again if need be).
    kept = q.subqueue("open")
    assert kept.message_count == 0  # (its index made on use)
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"x"), transaction=tx)
    tx2 = qm.begin_transaction()
    q.move(q.peek(0).lookup_id, "pending", tx2)  # not committed yet: the message is locked in q
    with q.subqueue("other"):
        pass  # closing a handle sweeps the queue's empty subqueues
    assert set(state.subqueues) == {"open"}
    tx2.commit()
    assert set(state.subqueues) == {"open", "pending"}
    kept.close()
    assert set(state.subqueues) == {"pending"} and q.subqueue_names == ["pending"]
    with q.subqueue("pending") as sub:
        assert sub.receive(0, transaction=MQ_SINGLE_MESSAGE).body == b"x"
    assert state.subqueues == {}
    # A subqueue used again later is made again, and works.
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"y"), transaction=tx)
    q.move(q.peek(0).lookup_id, "retry0", MQ_SINGLE_MESSAGE)
    assert q.subqueue_names == ["retry0"] and qm.queue(q.format_name + ";retry0").peek(0).body == b"y"


def test_a_queue_s_purge_leaves_its_subqueues(qm: QueueManager) -> None:
    # [MS-MQDMPR] 3.1.7.1.7 purges the positions of the queue opened (docs/cli.md says so, as an
    # outside QA asked): a subqueue is purged by its own name.
    q = qm.create_queue(r".\private$\p")
    q.send(Message(body=b"main"))
    q.send(Message(body=b"poison"))
    q.move(q.peek_by_lookup_id(2).lookup_id, "poison")
    poison = qm.queue(r".\private$\p;poison")
    q.purge()
    assert (q.message_count, poison.message_count) == (0, 1)
    poison.purge()
    assert poison.message_count == 0
