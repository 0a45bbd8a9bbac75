"""The shared client suite, for what a differential run of the embedded queue manager against the
remote client found answered differently (outside QA, 2026-11-28): closed handles and cursors, the
order of the checks of ``mark_rejected`` and ``receive_many(0)``, a message property the packet
gives, and the methods each side has."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from pymsmq import MQ_PEEK_ACCESS, MQ_SINGLE_MESSAGE, Message, MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.message import DEFAULT_PROVIDER_NAME

H = HResult
Q = ".\\private$\\orders"
TQ = ".\\private$\\tx"


def hresult_of(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    with pytest.raises(MSMQError) as info:
        fn(*args, **kwargs)
    return info.value.hresult


def test_a_closed_handle_answers_nothing(qm: Any) -> None:
    # [MS-MQDMPR] 3.1.7.1.6 Close Queue: later calls raise MQ_ERROR_INVALID_HANDLE.  Embedded, the
    # counts and empty batches were still answered, and a wrong transaction kind was said first.
    q = qm.create_queue(Q)
    q.send(Message(body=b"m"))
    q.close()
    tx = qm.begin_transaction()
    try:
        calls: list[Callable[[], object]] = [
            lambda: q.message_count,
            lambda: q.subqueue_names,
            lambda: q.subqueue_count,
            lambda: q.receive_many(0),
            lambda: q.receive_many(0, 0, tx),
            lambda: q.send(Message(body=b"x"), MQ_SINGLE_MESSAGE),
            lambda: q.receive(0, tx),
            lambda: q.send(Message(body=b"x"), tx),
        ]
        for call in calls:
            assert hresult_of(call) == H.MQ_ERROR_INVALID_HANDLE
    finally:
        tx.abort()


def test_receive_many_of_nothing_in_a_transaction_still_judges_the_queue(qm: Any) -> None:
    # A transaction on a non-transactional queue is refused whatever the count (remote: [] for 0).
    q = qm.create_queue(Q)
    with qm.begin_transaction() as tx:
        assert hresult_of(q.receive_many, 0, 0, tx) == H.MQ_ERROR_TRANSACTION_USAGE
        assert hresult_of(q.receive_many, 5, 0, tx) == H.MQ_ERROR_TRANSACTION_USAGE
    assert q.receive_many(0) == []


def test_mark_rejected_with_a_finished_transaction_is_a_sequence_error(qm: Any) -> None:
    t = qm.create_queue(TQ, transactional=True)
    n = qm.create_queue(Q)
    t.send(Message(body=b"m"), MQ_SINGLE_MESSAGE)
    lid = t.peek(0).lookup_id
    send_only = qm.queue(TQ, access=2)
    tx = qm.begin_transaction()
    tx.commit()
    for q in (send_only, n):
        assert hresult_of(q.mark_rejected, lid, tx) == H.MQ_ERROR_TRANSACTION_SEQUENCE
    with qm.begin_transaction() as active:  # the access, then the queue's kind, as before
        assert hresult_of(send_only.mark_rejected, lid, active) == H.MQ_ERROR_ACCESS_DENIED
        assert hresult_of(n.mark_rejected, lid, active) == H.MQ_ERROR_TRANSACTION_USAGE


def test_a_closed_cursor_is_said_before_the_handle_s_access(qm: Any) -> None:
    qm.create_queue(Q).send(Message(body=b"m"))
    q = qm.queue(Q, access=MQ_PEEK_ACCESS)
    c = q.cursor()
    c.peek_current(0)
    c.close()
    for call in (c.receive_current, c.peek_current, c.peek_next):
        assert hresult_of(call, 0) == H.MQ_ERROR_INVALID_HANDLE
    open_cursor = q.cursor()
    assert hresult_of(open_cursor.receive_current, 0) == H.MQ_ERROR_ACCESS_DENIED


@pytest.mark.parametrize("delivery", [0, 1], ids=["express", "recoverable"])
def test_no_authentication_provider_comes_back_as_its_packet_states_it(qm: Any, delivery: int) -> None:
    # A packet states the provider when nothing else is in its SecurityHeader: the default one.
    # An express message, never encoded, kept None embedded.
    q = qm.create_queue(Q)
    q.send(Message(body=b"x", delivery=delivery, authentication_provider_name=None))
    q.send(Message(body=b"y", delivery=delivery, authentication_provider_name=""))
    assert q.receive(0).authentication_provider_name == DEFAULT_PROVIDER_NAME
    assert q.receive(0).authentication_provider_name == ""


def test_both_sides_have_send_async_and_send_many(qm: Any) -> None:
    # The remote send_async writes the SEND at once and returns an awaitable with .result(); the
    # embedded one was a coroutine: not awaited, it sent nothing, and it had no .result().
    q = qm.create_queue(Q)

    async def send() -> None:
        await q.send_async(Message(body=b"a", delivery=1))

    asyncio.run(send())
    assert q.send_async(Message(body=b"b")).result() is None
    q.send_async(Message(body=b"c"))  # not awaited: sent all the same
    qm.send_many(q, [Message(body=b"d"), Message(body=b"e")])
    deadline = time.monotonic() + 10
    while q.message_count < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [m.body for m in q.receive_many(10, 0)] == [b"a", b"b", b"c", b"d", b"e"]
    q.close()
    for call in (
        lambda: q.send_async(Message(body=b"x")),
        lambda: q.send_many([]),
        lambda: qm.send_many(q, []),
    ):
        assert hresult_of(call) == H.MQ_ERROR_INVALID_HANDLE  # at the call
    t = qm.create_queue(TQ, transactional=True)
    refused = t.send_async(Message(body=b"x"))  # a refusal of the queue manager: from its outcome
    assert hresult_of(refused.result) == H.MQ_ERROR_TRANSACTION_USAGE
    tx = qm.begin_transaction()
    assert tx.state == "active"
    tx.abort()
    assert tx.state == "aborted"


def test_the_outcome_of_send_async_is_given_again_when_asked_again(qm: Any) -> None:
    # Remote, a second .result() (or an await after it) waited for an answer the first had taken.
    q = qm.create_queue(Q)
    t = qm.create_queue(TQ, transactional=True)
    sent = q.send_async(Message(body=b"1"))
    assert sent.result() is None and sent.result() is None

    async def twice(pending: Any) -> tuple[Any, Any]:
        return await pending, await pending

    assert asyncio.run(twice(sent)) == (None, None)
    assert asyncio.run(twice(q.send_async(Message(body=b"2")))) == (None, None)
    refused = t.send_async(Message(body=b"x"))
    assert hresult_of(refused.result) == hresult_of(refused.result) == H.MQ_ERROR_TRANSACTION_USAGE
    assert q.message_count == 2


def test_send_async_refuses_bad_arguments_at_the_call(qm: Any) -> None:
    # As the remote client, before anything is sent: the transaction argument, a packet over 4 MB,
    # an invalid property (embedded, they came from .result()).
    q = qm.create_queue(Q)
    assert hresult_of(q.send_async, Message(body=b"x"), 99) == H.MQ_ERROR_INVALID_PARAMETER
    assert hresult_of(q.send_async, Message(body=bytes(5 << 20))) == H.MQ_ERROR_INSUFFICIENT_RESOURCES
    done = qm.begin_transaction()
    done.commit()
    assert hresult_of(q.send_async, Message(body=b"x"), done) == H.MQ_ERROR_TRANSACTION_SEQUENCE
    bad = Message(body=b"x")
    bad.priority = 9
    with pytest.raises(MSMQError):
        q.send_async(bad)
    assert q.message_count == 0
