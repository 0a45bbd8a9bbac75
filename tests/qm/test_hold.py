"""``Hold``: a receive that leaves a recoverable message locked until it is confirmed or released."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.hresult import HResult
from pymsmq.qm.hold import Hold

Q = r".\private$\held"


def _fill(qm: QueueManager, *bodies: bytes, delivery: int = 1) -> None:
    q = qm.queue(Q) if qm.queue_exists(Q) else qm.create_queue(Q)
    for b in bodies:
        q.send(Message(body=b, delivery=delivery))


def test_a_held_message_is_invisible_until_confirmed_then_gone_for_good(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm, b"a", b"b")
        q = qm.queue(Q)
        hold = Hold()
        assert q.receive(0, hold).body == b"a"
        assert hold.held
        assert q.message_count == 2  # still there, locked
        assert q.peek(0).body == b"b"  # others see the next one
        hold.confirm()
        assert not hold.held
        assert q.message_count == 1
        with pytest.raises(MSMQError) as e:
            hold.confirm()
        assert e.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    with QueueManager.open(tmp_path) as qm:
        assert [qm.queue(Q).receive(0).body] == [b"b"]


def test_a_released_message_is_back_in_its_place_with_its_lookup_id(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm, b"a", b"b")
        q = qm.queue(Q)
        hold = Hold()
        first = q.receive(0, hold)
        hold.release()
        hold.release()  # nothing held: no effect
        again = q.receive(0)
        assert again.body == b"a" and again.lookup_id == first.lookup_id
        assert again.abort_count == 0  # a release is not an aborted transaction


def test_a_held_message_survives_a_stop_without_confirmation(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm, b"a")
        hold = Hold()
        qm.queue(Q).receive(0, hold)
        assert hold.held
    with QueueManager.open(tmp_path) as qm:
        assert qm.queue(Q).receive(0).body == b"a"


def test_an_express_message_is_received_at_once_and_nothing_is_held(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm, b"fast", delivery=0)
        hold = Hold()
        assert qm.queue(Q).receive(0, hold).body == b"fast"
        assert not hold.held
        assert qm.queue(Q).message_count == 0


def test_a_message_purged_while_held_is_deleted_when_released(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm, b"a", b"b")
        q = qm.queue(Q)
        hold = Hold()
        q.receive(0, hold)
        q.purge()
        assert q.message_count == 1  # the held one: PurgePending
        hold.release()
        assert q.message_count == 0
    with QueueManager.open(tmp_path) as qm:
        assert qm.queue(Q).message_count == 0


def test_every_receive_form_can_hold(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm, b"a", b"b", b"c")
        q = qm.queue(Q)
        by_id = Hold()
        last = q.receive_last_by_lookup_id(by_id)
        assert last.body == b"c" and by_id.held
        cursor = q.cursor()
        at_cursor = Hold()
        assert cursor.receive_current(0, at_cursor).body == b"a"
        assert at_cursor.held
        by_id.release()
        at_cursor.confirm()
        assert [q.receive(0).body, q.receive(0).body] == [b"b", b"c"]


def test_a_hold_is_for_receives_only(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm)
        with pytest.raises(MSMQError) as e:
            qm.queue(Q).send(Message(body=b"x"), transaction=Hold())
        assert e.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER


def test_one_hold_takes_many_messages_and_confirms_them_in_one_batch(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm, b"a", b"b", b"c", b"d")
        q = qm.queue(Q)
        hold = Hold()
        assert [q.receive(0, hold).body for _ in range(3)] == [b"a", b"b", b"c"]
        assert len(hold) == 3 and q.message_count == 4
        batches: list[object] = []
        apply = qm._store.apply
        qm._store.apply = lambda batch: (batches.append(batch), apply(batch))  # type: ignore[method-assign]
        hold.confirm()
        assert len(batches) == 1  # one durable write (one fsync) for the whole batch
        assert q.message_count == 1 and not hold.held
    with QueueManager.open(tmp_path) as qm:
        assert [qm.queue(Q).receive(0).body] == [b"d"]


def test_releasing_many_puts_each_back_in_its_place(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path) as qm:
        _fill(qm, b"a", b"b", b"c")
        q = qm.queue(Q)
        hold = Hold()
        taken = [q.receive(0, hold) for _ in range(3)]
        hold.release_newest()  # c only: a batch that could not carry it
        assert len(hold) == 2
        assert q.peek(0).body == b"c"
        hold.release()
        again = [q.receive(0) for _ in range(3)]
        assert [m.lookup_id for m in again] == [m.lookup_id for m in taken]
