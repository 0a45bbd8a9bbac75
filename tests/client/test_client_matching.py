"""The shared client suite, reads by message id and correlation id (System.Messaging's ReceiveById,
PeekById, ReceiveByCorrelationId, PeekByCorrelationId; qm/matching.py, RECEIVE_MATCHING remote)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from typing import Any

import pytest

from pymsmq import Message, MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId

H = HResult
REQUESTS = ".\\private$\\requests"
REPLIES = ".\\private$\\replies"
TQ = ".\\private$\\tx_replies"


def hresult_of(fn: Any, *args: Any, **kwargs: Any) -> int:
    with pytest.raises(MSMQError) as info:
        fn(*args, **kwargs)
    return info.value.hresult


def _replies(q: Any, to: ObjectId, bodies: list[bytes], **props: Any) -> list[Message]:
    sent = [Message(body=b, correlation_id=to, **props) for b in bodies]
    for m in sent:
        q.send(m)
    return sent


def test_request_response_on_a_shared_reply_queue(qm: Any) -> None:
    # Two requesters share one reply queue: each takes only the reply to its own request.
    requests = qm.create_queue(REQUESTS)
    replies = qm.create_queue(REPLIES)
    first, second = Message(body=b"q1"), Message(body=b"q2")
    requests.send(first)
    requests.send(second)
    for _ in range(2):  # the service answers in arrival order
        request = requests.receive(timeout=1)
        replies.send(Message(body=b"re:" + request.body, correlation_id=request.id))
    assert replies.receive_by_correlation_id(second.id).body == b"re:q2"
    assert replies.receive_by_correlation_id(first.id).body == b"re:q1"
    assert len(replies) == 0


def test_by_id_reads_one_message_from_the_middle(qm: Any) -> None:
    q = qm.create_queue(REPLIES)
    sent = [Message(body=b"m%d" % i, label=f"l{i}") for i in range(5)]
    for m in sent:
        q.send(m)
    peeked = q.peek_by_id(sent[2].id)
    assert (peeked.body, peeked.label, peeked.id) == (b"m2", "l2", sent[2].id)
    assert len(q) == 5
    got = q.receive_by_id(sent[2].id)
    assert (got.body, got.id, got.lookup_id) == (b"m2", sent[2].id, peeked.lookup_id)
    assert [q.receive(0).body for _ in range(4)] == [b"m0", b"m1", b"m3", b"m4"]
    assert hresult_of(q.receive_by_id, sent[2].id) == H.MQ_ERROR_MESSAGE_NOT_FOUND


def test_ids_in_their_text_and_byte_forms(qm: Any) -> None:
    q = qm.create_queue(REPLIES)
    m = Message(body=b"x", correlation_id=ObjectId(uuid.uuid4(), 9))
    q.send(m)
    assert q.peek_by_id(str(m.id)).body == b"x"  # "{guid}\\n", System.Messaging's Message.Id
    assert q.peek_by_correlation_id(str(m.correlation_id)).body == b"x"
    assert q.peek_by_id(bytes(m.id).hex()).body == b"x"  # its 20 bytes in hex, as the CLI takes it
    assert q.peek_by_correlation_id(bytes(m.correlation_id).hex().upper()).body == b"x"
    assert q.receive_by_id(bytes(m.id)).body == b"x"  # the 20-byte OBJECTID


def test_the_first_match_in_queue_order_wins(qm: Any) -> None:
    q = qm.create_queue(REPLIES)
    request = ObjectId(uuid.uuid4(), 1)
    other = ObjectId(uuid.uuid4(), 2)
    _replies(q, other, [b"other"])
    _replies(q, request, [b"low-1", b"low-2"], priority=1)
    _replies(q, request, [b"high"], priority=6)
    # Priority first, then arrival ([MS-MQDMPR] 3.1.1.2), as a receive at the head would take them.
    assert [q.receive_by_correlation_id(request).body for _ in range(3)] == [b"high", b"low-1", b"low-2"]
    assert hresult_of(q.receive_by_correlation_id, request) == H.MQ_ERROR_MESSAGE_NOT_FOUND
    assert q.receive(0).body == b"other"


def test_not_there_timeouts(qm: Any) -> None:
    q = qm.create_queue(REPLIES)
    _replies(q, ObjectId(uuid.uuid4(), 1), [b"someone else's"])
    missing = ObjectId(uuid.uuid4(), 5)
    # timeout 0 (the default, as System.Messaging's ReceiveById(id)): MESSAGE_NOT_FOUND at once;
    # a positive timeout waits and ends in IO_TIMEOUT ([MC-MQAC] 3.11.4.1 timeout semantics).
    assert hresult_of(q.receive_by_correlation_id, missing) == H.MQ_ERROR_MESSAGE_NOT_FOUND
    assert hresult_of(q.peek_by_id, missing) == H.MQ_ERROR_MESSAGE_NOT_FOUND
    start = time.monotonic()
    assert hresult_of(q.receive_by_correlation_id, missing, timeout=0.3) == H.MQ_ERROR_IO_TIMEOUT
    assert time.monotonic() - start >= 0.25
    assert hresult_of(q.peek_by_correlation_id, missing, timeout=0.1) == H.MQ_ERROR_IO_TIMEOUT
    assert len(q) == 1


def test_bad_ids_are_refused(qm: Any) -> None:
    q = qm.create_queue(REPLIES)
    assert hresult_of(q.receive_by_id, 5) == H.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
    assert hresult_of(q.peek_by_correlation_id, "not an id") == H.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
    assert hresult_of(q.peek_by_correlation_id, "g" * 40) == H.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
    assert hresult_of(q.peek_by_correlation_id, "a" * 38) == H.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
    assert hresult_of(q.receive_by_correlation_id, b"short") == H.MQ_ERROR_ILLEGAL_PROPERTY_SIZE
    assert hresult_of(q.receive_by_id, ObjectId(uuid.uuid4(), 1), timeout=-1) == H.MQ_ERROR_INVALID_PARAMETER


def test_a_waiting_read_takes_the_matching_arrival_only(qm: Any, qm_factory: Any) -> None:
    q = qm.create_queue(REPLIES)
    sender = qm_factory().queue(REPLIES)
    wanted = ObjectId(uuid.uuid4(), 1)

    def later() -> None:
        time.sleep(0.2)
        _replies(sender, ObjectId(uuid.uuid4(), 2), [b"not this"])
        time.sleep(0.2)
        _replies(sender, wanted, [b"this"])

    t = threading.Thread(target=later)
    t.start()
    start = time.monotonic()
    got = q.receive_by_correlation_id(wanted, timeout=10)
    t.join()
    assert got.body == b"this"
    assert time.monotonic() - start >= 0.35  # it did not end at the first arrival
    assert q.receive(0).body == b"not this"


def test_peek_waits_and_leaves_the_message(qm: Any, qm_factory: Any) -> None:
    q = qm.create_queue(REPLIES)
    sender = qm_factory().queue(REPLIES)
    wanted = ObjectId(uuid.uuid4(), 4)
    t = threading.Timer(0.2, lambda: _replies(sender, wanted, [b"later"]))
    t.start()
    assert q.peek_by_correlation_id(wanted, timeout=5).body == b"later"
    t.join()
    assert q.receive(0).body == b"later"


def test_in_a_transaction_abort_puts_it_back(qm: Any) -> None:
    q = qm.create_queue(TQ, transactional=True)
    request = ObjectId(uuid.uuid4(), 3)
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"a", correlation_id=ObjectId(uuid.uuid4(), 1)), tx)
        q.send(Message(body=b"b", correlation_id=request, delivery=1), tx)
    tx = qm.begin_transaction()
    assert q.receive_by_correlation_id(request, transaction=tx).body == b"b"
    # Locked by the open transaction: another read by the same id does not see it.
    assert hresult_of(q.receive_by_correlation_id, request, transaction=qm.begin_transaction()) == (
        H.MQ_ERROR_MESSAGE_NOT_FOUND
    )
    assert hresult_of(q.peek_by_correlation_id, request) == H.MQ_ERROR_MESSAGE_NOT_FOUND
    tx.abort()
    back = q.peek_by_correlation_id(request)
    assert (back.body, back.abort_count) == (b"b", 1)
    with qm.begin_transaction() as tx2:
        assert q.receive_by_correlation_id(request, transaction=tx2).body == b"b"
    with qm.begin_transaction() as tx3:
        assert [m.body for m in q.receive_many(5, transaction=tx3)] == [b"a"]


def test_a_transactional_queue_without_a_transaction(qm: Any) -> None:
    # As receive: a receive outside a transaction from a (local) transactional queue takes the
    # message; a send outside one is refused.
    q = qm.create_queue(TQ, transactional=True)
    request = ObjectId(uuid.uuid4(), 1)
    with qm.begin_transaction() as tx:
        q.send(Message(body=b"b", correlation_id=request), tx)
    m = q.peek(0)
    assert q.peek_by_id(m.id).body == b"b"
    assert q.receive_by_id(m.id).body == b"b"
    assert len(q) == 0


def test_recoverable_reply_is_removed_durably(qm: Any) -> None:
    q = qm.create_queue(REPLIES)
    request = ObjectId(uuid.uuid4(), 1)
    _replies(q, request, [b"r"], delivery=1)
    got = q.receive_by_correlation_id(request, timeout=1)
    assert (got.body, got.delivery) == (b"r", 1)
    assert len(q) == 0
    assert hresult_of(q.peek, 0) == H.MQ_ERROR_MESSAGE_NOT_FOUND


def test_racing_readers_of_one_correlation_id_never_share_a_message(qm: Any, qm_factory: Any) -> None:
    q = qm.create_queue(REPLIES)
    request = ObjectId(uuid.uuid4(), 1)
    _replies(q, request, [b"%03d" % i for i in range(60)], delivery=1)
    got: list[bytes] = []
    lock = threading.Lock()

    def reader() -> None:
        mine = qm_factory().queue(REPLIES)
        while True:
            try:
                m = mine.receive_by_correlation_id(request)
            except MSMQError as exc:
                assert exc.hresult == H.MQ_ERROR_MESSAGE_NOT_FOUND
                return
            with lock:
                got.append(m.body)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [b"%03d" % i for i in range(60)]  # each exactly once


def test_rights_are_receives(qm: Any) -> None:
    # A handle opened for peeking may peek by id but not receive (MQ_ERROR_ACCESS_DENIED, as receive).
    q = qm.create_queue(REPLIES)
    m = Message(body=b"x")
    q.send(m)
    peeker = qm.queue(REPLIES, access=0x20)  # MQ_PEEK_ACCESS
    assert peeker.peek_by_id(m.id).body == b"x"
    assert hresult_of(peeker.receive_by_id, m.id) == H.MQ_ERROR_ACCESS_DENIED
    sender = qm.queue(REPLIES, access=2)  # MQ_SEND_ACCESS
    assert hresult_of(sender.peek_by_id, m.id) == H.MQ_ERROR_ACCESS_DENIED


def test_a_server_of_protocol_version_2_is_told_apart(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A server that speaks versions 1 and 2 only (pymsmq before RECEIVE_MATCHING): the client says
    # so instead of sending an op that server would close the connection for; the connection
    # keeps working.
    from _pymsmq_server import ThreadServer

    import pymsmq.server.session as session
    from pymsmq import connect
    from pymsmq.protocol.handshake import choose_version

    monkeypatch.setattr(session, "choose_version", lambda hello: choose_version(hello, (1, 2)))
    server = ThreadServer(tmp_path / "qm").start()
    try:
        client = connect(server.url)
        assert client._t.server_hello.version == 2
        q = client.create_queue(REPLIES)
        m = Message(body=b"x")
        q.send(m)
        for read in (q.receive_by_id, q.peek_by_id, q.receive_by_correlation_id, q.peek_by_correlation_id):
            assert hresult_of(read, m.id) == H.MQ_ERROR_OPERATION_NOT_SUPPORTED_BY_REMOTE_COMPUTER
        assert q.receive(0).body == b"x"
        client.close()
    finally:
        server.stop()


def test_a_server_of_protocol_version_4_cannot_mark_rejected(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server of versions 1-4 (pymsmq before MARK_REJECTED): the client says so instead of
    # sending an op that server would close the connection for; the connection keeps working.
    from _pymsmq_server import ThreadServer

    import pymsmq.server.session as session
    from pymsmq import connect
    from pymsmq.protocol.handshake import choose_version

    monkeypatch.setattr(session, "choose_version", lambda hello: choose_version(hello, (1, 2, 3, 4)))
    server = ThreadServer(tmp_path / "qm").start()
    try:
        client = connect(server.url)
        assert client._t.server_hello.version == 4
        q = client.create_queue(r".\private$\tx", transactional=True)
        q.send(Message(body=b"x"), 3)
        with client.begin_transaction() as tx:
            lid = q.receive(0, transaction=tx).lookup_id
            assert (
                hresult_of(q.mark_rejected, lid, tx) == H.MQ_ERROR_OPERATION_NOT_SUPPORTED_BY_REMOTE_COMPUTER
            )
        assert q.message_count == 0
        client.close()
    finally:
        server.stop()


# ---------------------------------------------------------------------------- asyncio


def test_async_reads_by_id_and_correlation_id(qm: Any) -> None:
    # A request/response client on asyncio: ``await`` the reply to its request, no thread of its own.
    q = qm.create_queue(REPLIES)
    first = ObjectId(uuid.uuid4(), 1)
    second = ObjectId(uuid.uuid4(), 2)
    (there,) = _replies(q, first, [b"there"])

    async def main() -> list[bytes]:
        loop = asyncio.get_running_loop()
        out = [
            (await q.peek_by_id_async(there.id)).body,
            (await q.peek_by_correlation_id_async(str(first))).body,
            (await q.receive_by_id_async(there.id)).body,
        ]
        later = loop.call_later(0.2, q.send, Message(body=b"reply", correlation_id=second, delivery=1))
        peeked = await q.peek_by_correlation_id_async(second, timeout=10)
        out.append(peeked.body)
        out.append((await q.receive_by_correlation_id_async(second, timeout=10)).body)
        later.cancel()
        return out

    assert asyncio.run(main()) == [b"there", b"there", b"there", b"reply", b"reply"]
    assert len(q) == 0


def test_async_reads_by_id_time_out_as_the_blocking_ones(qm: Any) -> None:
    q = qm.create_queue(REPLIES)
    _replies(q, ObjectId(uuid.uuid4(), 1), [b"someone else's"])
    missing = ObjectId(uuid.uuid4(), 5)

    async def code(read: Any) -> int:
        try:
            await read
        except MSMQError as exc:
            return exc.hresult
        return 0

    async def main() -> list[int]:
        return [
            await code(q.receive_by_correlation_id_async(missing)),  # timeout 0 by default
            await code(q.peek_by_id_async(missing)),
            await code(q.receive_by_correlation_id_async(missing, timeout=0.2)),
            await code(q.peek_by_correlation_id_async(missing, timeout=0.1)),
        ]

    assert asyncio.run(main()) == [H.MQ_ERROR_MESSAGE_NOT_FOUND] * 2 + [H.MQ_ERROR_IO_TIMEOUT] * 2
    assert len(q) == 1


@pytest.mark.parametrize("delivery", [0, 1], ids=["express", "recoverable"])
def test_a_cancelled_async_read_by_correlation_id_takes_no_message(qm: Any, delivery: int) -> None:
    q = qm.create_queue(REPLIES)
    request = ObjectId(uuid.uuid4(), 3)

    async def main() -> None:
        task = asyncio.ensure_future(q.receive_by_correlation_id_async(request, timeout=30))
        await asyncio.sleep(0.3)  # the read waits (on the server, remote)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    q.send(Message(body=b"late reply", correlation_id=request, delivery=delivery))
    assert q.receive_by_correlation_id(request, timeout=5).body == b"late reply"
