"""The shared client suite: sending to a multiple-element format name ([MS-MQMQ] 2.1.7, MSMQ 3.0),
embedded and remote alike: one copy per queue, one id, PROPID_M_DEST_QUEUE per copy and
PROPID_M_DEST_FORMAT_NAME the whole name; send access only; all or nothing."""

from __future__ import annotations

from typing import Any

import pytest

from pymsmq import Message, MSMQError
from pymsmq.hresult import HResult

H = HResult
A = ".\\private$\\a"
B = ".\\private$\\b"
C = ".\\private$\\c"


def hresult_of(fn: Any, *args: Any, **kwargs: Any) -> int:
    with pytest.raises(MSMQError) as info:
        fn(*args, **kwargs)
    return info.value.hresult


def three(qm: Any, **props: Any) -> tuple[list[Any], str]:
    queues = [qm.create_queue(p, **props) for p in (A, B, C)]
    return queues, ",".join(q.format_name for q in queues)


@pytest.mark.parametrize("delivery", [0, 1])
def test_a_copy_goes_to_every_queue_with_one_id(qm: Any, delivery: int) -> None:
    queues, name = three(qm)
    with qm.queue(name, access=2) as dest:  # MQ_SEND_ACCESS
        assert dest.format_name == name
        sent = Message(body=b"fan", label="out", delivery=delivery, app_specific=7)
        dest.send(sent)
    # The sender's message: its id, and the names it went to (no one queue).
    assert sent.id is not None
    assert sent.destination_format_name == name
    assert sent.destination_queue is None
    for q in queues:
        got = q.receive(timeout=0)
        assert (got.body, got.label, got.app_specific, got.delivery) == (b"fan", "out", 7, delivery)
        assert got.id == sent.id  # one message, one id: acknowledgements correlate to it
        assert got.destination_queue == q.format_name  # PROPID_M_DEST_QUEUE: this copy's queue
        assert got.destination_format_name == name  # PROPID_M_DEST_FORMAT_NAME: all of them
        assert q.message_count == 0


def test_a_path_name_element_and_a_repeated_queue_get_one_copy(qm: Any) -> None:
    queues, _ = three(qm)
    a, b = queues[0], queues[1]
    # The same queue under two names (its format name and its direct name) and twice over.
    name = f"{a.format_name},DIRECT=OS:.\\private$\\a,{b.format_name},{b.format_name}"
    with qm.queue(name, access=2) as dest:
        dest.send(Message(body=b"once"))
    assert (a.message_count, b.message_count, queues[2].message_count) == (1, 1, 0)


def test_send_many_sends_each_message_to_every_queue(qm: Any) -> None:
    queues, name = three(qm)
    with qm.queue(name, access=2) as dest:
        batch = [Message(body=bytes([i]), delivery=i % 2) for i in range(5)]
        dest.send_many(batch)
    assert all(m.destination_format_name == name and m.destination_queue is None for m in batch)
    for q in queues:
        got = [q.receive(timeout=0) for _ in range(5)]
        assert [m.body for m in got] == [bytes([i]) for i in range(5)]
        assert [m.id for m in got] == [m.id for m in batch]


def test_copies_in_a_transaction_commit_and_abort_together(qm: Any) -> None:
    queues, name = three(qm, transactional=True)
    dest = qm.queue(name, access=2)
    with qm.begin_transaction() as tx:
        dest.send(Message(body=b"kept"), tx)
        assert [q.message_count for q in queues] == [0, 0, 0]  # not before the commit
    assert [q.message_count for q in queues] == [1, 1, 1]
    tx = qm.begin_transaction()
    dest.send(Message(body=b"gone"), tx)
    tx.abort()
    assert [q.message_count for q in queues] == [1, 1, 1]
    dest.send(Message(body=b"single"), 3)  # MQ_SINGLE_MESSAGE: a transaction of its own
    with qm.begin_transaction() as tx:
        got = [q.receive(timeout=0, transaction=tx) for q in queues for _ in range(2)]
    assert [m.body for m in got] == [b"kept", b"single"] * 3
    # Outside a transaction, to transactional queues: refused, as to one of them.
    assert hresult_of(dest.send, Message(body=b"x")) == H.MQ_ERROR_TRANSACTION_USAGE
    dest.close()


def test_a_send_one_queue_refuses_reaches_no_queue(qm: Any) -> None:
    a = qm.create_queue(A)
    b = qm.create_queue(B, transactional=True)
    c = qm.create_queue(C, quota=1)  # kilobytes
    mixed = qm.queue(f"{a.format_name},{b.format_name}", access=2)
    assert hresult_of(mixed.send, Message(body=b"x")) == H.MQ_ERROR_TRANSACTION_USAGE
    with qm.begin_transaction() as tx:  # and in a transaction the non-transactional one refuses
        assert hresult_of(mixed.send, Message(body=b"x"), tx) == H.MQ_ERROR_TRANSACTION_USAGE
    full = qm.queue(f"{a.format_name},{c.format_name}", access=2)
    with pytest.raises(MSMQError) as info:
        full.send(Message(body=b"y" * 2048, delivery=1))
    assert info.value.hresult == H.MQ_ERROR_INSUFFICIENT_RESOURCES
    assert "no queue was sent a copy" in info.value.message
    assert (a.message_count, b.message_count, c.message_count) == (0, 0, 0)
    full.send(Message(body=b"small"))  # what fits everywhere goes everywhere
    assert (a.message_count, c.message_count) == (1, 1)
    mixed.close()
    full.close()


def test_only_send_access(qm: Any) -> None:
    queues, name = three(qm)
    for access in (1, 0x20, 0x23, None):  # receive, peek, all, the default (all)
        kwargs = {} if access is None else {"access": access}
        assert hresult_of(qm.queue, name, **kwargs) == H.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
    with qm.queue(name, access=2) as dest:
        # Reads on a handle opened to send are refused as on any other send handle.
        assert hresult_of(dest.receive, timeout=0) == H.MQ_ERROR_ACCESS_DENIED
        assert hresult_of(dest.peek, timeout=0) == H.MQ_ERROR_ACCESS_DENIED
        assert hresult_of(dest.purge) == H.MQ_ERROR_ACCESS_DENIED
        # What describes one queue is refused alike, embedded and remote (outside QA: the remote
        # handle asked the server about the list as a queue name, and its journal was the list's
        # last queue's).
        for what in ("properties", "label", "message_count", "journal", "subqueue_names", "subqueue_count"):
            with pytest.raises(MSMQError) as info:
                getattr(dest, what)
            assert info.value.hresult == H.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, what
            assert "names several queues" in info.value.message, what
        assert hresult_of(dest.subqueue, "poison") == H.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
        assert dest.is_open and dest.path_name == "" and dest.access == 2
        # The name's own properties, statistics or deletion: the same refusal.
        assert hresult_of(qm.get_queue_properties, name) == H.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
        assert hresult_of(qm.delete_queue, name) == H.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
    assert [q.message_count for q in queues] == [0, 0, 0]
    assert not dest.is_open
    dest.close()
    assert hresult_of(dest.send, Message(body=b"x")) == H.MQ_ERROR_INVALID_HANDLE


def test_bad_elements_are_refused_at_the_open(qm: Any) -> None:
    queues, _ = three(qm)
    a = queues[0].format_name
    cases = {
        f"{a},DIRECT=OS:.\\private$\\missing": H.MQ_ERROR_QUEUE_NOT_FOUND,
        f"{a},DIRECT=OS:.\\private$\\a;sub": H.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION,  # a subqueue
        f"{a},{a};JOURNAL": H.MQ_ERROR_ILLEGAL_FORMATNAME,  # read-only queues: not an element
        f"{a},": H.MQ_ERROR_ILLEGAL_FORMATNAME,
        f"{a},MACHINE={queues[0].properties.queue_guid}": H.MQ_ERROR_ILLEGAL_FORMATNAME,
        ",".join([a] * 257): H.MQ_ERROR_ILLEGAL_FORMATNAME,  # over the 256-element cap
    }
    for name, hresult in cases.items():
        assert hresult_of(qm.queue, name, access=2) == hresult, name
    # And a queue deleted after the open refuses the send it would have had a copy of.
    dest = qm.queue(f"{a},{queues[1].format_name}", access=2)
    qm.delete_queue(B)
    assert hresult_of(dest.send, Message(body=b"x")) == H.MQ_ERROR_QUEUE_DELETED
    assert queues[0].message_count == 0


def test_a_received_copy_sent_again_goes_to_one_queue_only(qm: Any) -> None:
    queues, name = three(qm)
    with qm.queue(name, access=2) as dest:
        dest.send(Message(body=b"again"))
    copy = queues[0].receive(timeout=0)
    assert copy.destination_format_name == name
    queues[1].purge()
    queues[1].send(copy)
    assert copy.destination_format_name is None and copy.destination_queue == queues[1].format_name
    resent = queues[1].receive(timeout=0)
    assert resent.destination_format_name is None
    assert resent.destination_queue == queues[1].format_name
    # The same through send_many.
    other = queues[2].receive(timeout=0)
    assert other.destination_format_name == name
    queues[2].send_many([other])
    assert other.destination_format_name is None and other.destination_queue == queues[2].format_name
    assert queues[2].receive(timeout=0).destination_format_name is None
