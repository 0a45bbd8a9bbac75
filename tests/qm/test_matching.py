"""Reads by message id and correlation id in the embedded queue manager (qm/matching.py): which
messages qualify, against a model of the queue's order, and with subqueues, journals and restarts."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq import Message, MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.qm.queue_manager import QueueManager

Q = r".\private$\matching"
#: A small pool of correlation ids, so that several messages share one.
POOL = [ObjectId(uuid.UUID(int=i + 1), i) for i in range(3)]


def _hresult(fn: object, *args: object, **kwargs: object) -> int:
    with pytest.raises(MSMQError) as info:
        fn(*args, **kwargs)  # type: ignore[operator]
    return info.value.hresult


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("send"), st.integers(0, 2), st.integers(0, 7)),
            st.tuples(st.just("by_correlation"), st.integers(0, 2), st.booleans()),
            st.tuples(st.just("by_id"), st.integers(0, 30), st.booleans()),
            st.tuples(st.just("head"), st.just(0), st.just(False)),
        ),
        max_size=40,
    )
)
def test_matches_a_model_of_queue_order(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, Any]]
) -> None:
    # Model: (priority, arrival) entries; a match takes the first in order -priority, arrival.
    qm = QueueManager.open(tmp_path_factory.mktemp("qm"))
    try:
        q = qm.create_queue(Q)
        model: list[tuple[int, int, Message]] = []
        sent: list[Message] = []
        for kind, arg, flag in steps:
            order = sorted(model, key=lambda e: (-e[0], e[1]))
            if kind == "send":
                m = Message(body=b"%d" % len(sent), correlation_id=POOL[arg], priority=flag)
                q.send(m)
                sent.append(m)
                model.append((flag, len(sent), m))
                continue
            if kind == "by_correlation":
                expected = next((e for e in order if e[2].correlation_id == POOL[arg]), None)
                read = q.peek_by_correlation_id if flag else q.receive_by_correlation_id
                key: object = POOL[arg]
            elif kind == "by_id":
                if arg >= len(sent):
                    continue
                expected = next((e for e in order if e[2].id == sent[arg].id), None)
                read = q.peek_by_id if flag else q.receive_by_id
                key = sent[arg].id
            else:
                expected = order[0] if order else None
                if expected is None:
                    assert _hresult(q.receive, 0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
                else:
                    assert q.receive(0).id == expected[2].id
                    model.remove(expected)
                continue
            if expected is None:
                assert _hresult(read, key) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
                continue
            got = read(key)
            assert (got.id, got.body) == (expected[2].id, expected[2].body)
            if not flag:
                model.remove(expected)
        assert len(q) == len(model)
    finally:
        qm.close()


def test_a_message_locked_with_allow_peek_is_peeked_not_received(tmp_path: Path) -> None:
    # [MS-MQDMPR] 3.1.1.12 AllowPeekWhenLocked: a peek by id sees it, a receive by id does not.
    qm = QueueManager.open(tmp_path / "qm")
    q = qm.create_queue(Q, transactional=True)
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"held", correlation_id=POOL[0]), tx)
    m = q.peek(0)
    tx = qm.begin_transaction()
    q.receive_by_lookup_id_allow_peek(m.lookup_id, tx)
    assert q.peek_by_correlation_id(POOL[0]).body == b"held"
    assert q.peek_by_id(m.id).body == b"held"
    assert _hresult(q.receive_by_id, m.id, transaction=qm.begin_transaction()) == (
        HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    )
    tx.commit()
    assert _hresult(q.peek_by_id, m.id) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    qm.close()


def test_subqueues_journals_and_a_restart(tmp_path: Path) -> None:
    qm = QueueManager.open(tmp_path / "qm")
    q = qm.create_queue(Q, journal=True)
    kept = Message(body=b"kept", correlation_id=POOL[1], delivery=1)
    moved = Message(body=b"moved", correlation_id=POOL[2], delivery=1)
    q.send(kept)
    q.send(moved)
    q.move(q.peek_by_id(moved.id).lookup_id, "poison")
    poison = q.subqueue("poison")
    # Each handle sees its own queue or subqueue only.
    assert _hresult(q.peek_by_correlation_id, POOL[2]) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert poison.receive_by_correlation_id(POOL[2]).body == b"moved"
    qm.close()
    qm = QueueManager.open(tmp_path / "qm")  # ids and correlation ids are stored with the message
    q = qm.queue(Q)
    assert q.receive_by_id(kept.id).correlation_id == POOL[1]
    assert q.journal.peek_by_id(kept.id).body == b"kept"  # a journal copy keeps the message id
    qm.close()


def test_a_look_reads_only_the_messages_with_the_wanted_value() -> None:
    # The table by field (MessageIndex.by_field): after the first look built it, a look at a long
    # queue visits no other message's entry (a scan would visit every one before the match).
    from pymsmq.qm.index import Entry

    class Counting(dict[int, Entry]):
        gets = 0

        def get(self, key: int, default: Any = None) -> Any:  # type: ignore[override]
            Counting.gets += 1
            return super().get(key, default)

    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(Q)
        wanted = [ObjectId(uuid.UUID(int=7), i) for i in range(2000)]
        q.send_many([Message(body=b"%d" % i, correlation_id=c) for i, c in enumerate(wanted)])
        assert q.peek_by_correlation_id(wanted[0]).body == b"0"  # builds the table
        index = q._index()
        index._entries = Counting(index._entries)
        for i in (1999, 1000, 1):
            assert q.receive_by_correlation_id(wanted[i]).body == b"%d" % i
        with pytest.raises(MSMQError):
            q.peek_by_correlation_id(ObjectId(uuid.UUID(int=8), 0))
        assert Counting.gets <= 12, Counting.gets  # the takes' own lookups only
        # A value shared by more than SCAN_ABOVE messages is looked for by the scan.
        Counting.gets = 0
        shared = ObjectId(uuid.UUID(int=9), 0)
        q.send_many([Message(body=b"shared", correlation_id=shared) for _ in range(100)])
        assert q.peek_by_correlation_id(shared).body == b"shared"
        assert Counting.gets >= 1997, Counting.gets
    finally:
        qm.close()


def test_a_watch_fires_only_when_its_seek_finds_a_message() -> None:
    # notifications.watch: the notification a waiting read by correlation id parks on (the server).
    import threading

    from pymsmq.qm.matching import first_matching
    from pymsmq.qm.notifications import watch

    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(Q)
        fired: list[int] = []
        errors: list[int] = []
        done = threading.Event()

        def arrived(_q: object, cursor: int) -> None:
            fired.append(cursor)
            done.set()

        def failed(_q: object, hresult: int, _c: int) -> None:
            errors.append(hresult)
            done.set()

        n = watch(
            q, lambda index: first_matching(index, "correlation_id", POOL[1], False), arrived, 30, failed
        )
        q.send(Message(body=b"other", correlation_id=POOL[0]))
        q.send(Message(body=b"none"))
        assert not done.wait(0.2) and not n.done  # arrivals that do not match do not fire it
        q.send(Message(body=b"mine", correlation_id=POOL[1]))
        assert done.wait(10) and fired == [0] and errors == [] and n.done
        done.clear()
        watch(q, lambda index: first_matching(index, "id", POOL[2], True), arrived, 0.05, failed)
        assert done.wait(10) and errors == [HResult.MQ_ERROR_IO_TIMEOUT]
        # Already there: fires at once.
        done.clear()
        watch(q, lambda index: first_matching(index, "correlation_id", POOL[0], True), arrived, 0, failed)
        assert done.wait(10) and fired == [0, 0]
    finally:
        qm.close()
