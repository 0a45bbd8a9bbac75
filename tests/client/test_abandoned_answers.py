"""A call interrupted while it waits (Ctrl-C in the waiting thread) abandons its answer: the messages
a two-phase receive's answer holds go back to their queue as soon as the connection reads that
answer, and answers nobody waits for are not kept (``Transport.abandon``).

Before, such answers stayed in the client's table forever and their held messages stayed locked until
the connection or its queue handle closed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import pytest
from _interrupt import interrupt_next_read
from _pymsmq_server import ThreadServer

from pymsmq import Message
from pymsmq.client import connect
from pymsmq.client.range_read import iter_range, read_range

Q = r".\private$\abandon"


def _fill(url: str, count: int, delivery: int = 1) -> None:
    qm = connect(url)
    if not qm.queue_exists(Q):
        qm.create_queue(Q).close()
    qm.queue(Q).send_many([Message(body=b"m%04d" % i, delivery=delivery) for i in range(count)])
    qm.close()


def _interrupt_once(t: Any, name: str, monkeypatch: pytest.MonkeyPatch, at_call: int = 1) -> None:
    """The ``at_call``-th call of ``t.<name>`` raises KeyboardInterrupt, as Ctrl-C in a waiting thread."""
    real: Callable[..., Any] = getattr(t, name)
    calls = 0

    def patched(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == at_call:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(t, name, patched)


def _settle(qm: Any) -> None:
    """Calls on the interrupted connection until it has read every abandoned answer (and the
    answers of the END_RECEIVEs that gave their messages back): a call reads what has arrived."""
    deadline = time.monotonic() + 10
    while True:
        assert qm.ping(b"after") == b"after"
        if not qm._t._abandoned and not qm._t._to_abandon:
            break
        assert time.monotonic() < deadline, qm._t._abandoned
        time.sleep(0.01)
    assert not qm._t._done  # nothing kept for nobody


def _held(url: str) -> int:
    qm = connect(url)
    try:
        return int(qm.server_stats()["held"])
    finally:
        qm.close()


def _all_back(url: str, expected: list[bytes], within: float = 10.0) -> None:
    """Every message of ``expected`` can be received by another client (nothing is held), in order."""
    deadline = time.monotonic() + within
    while _held(url) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _held(url) == 0
    other = connect(url)
    try:
        got = [m.body for m in other.queue(Q).receive_many(len(expected) + 1, timeout=1)]
    finally:
        other.close()
    assert got == expected


def test_receive_many_interrupted_in_its_window_gives_every_held_message_back(
    server: ThreadServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(server.url, 600)  # a window of three RECEIVE_MANY requests (256 + 256 + 88)
    qm = connect(server.url)
    q = qm.queue(Q)
    _interrupt_once(qm._t, "wait", monkeypatch, at_call=2)  # waiting for the second answer
    with pytest.raises(KeyboardInterrupt):
        q.receive_many(600)
    # The first answer was given back at once (RR_NACK); the two not read are held until this
    # connection reads them: later calls do, and give them back.
    _settle(qm)
    _all_back(server.url, [b"m%04d" % i for i in range(600)])
    qm.close()


@pytest.mark.parametrize("call", ["receive", "cursor", "read_range", "receive_by_id"])
def test_a_receive_interrupted_before_its_answer_is_read_gives_what_it_holds_back(
    server: ThreadServer, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    _fill(server.url, 5)
    qm = connect(server.url)
    q = qm.queue(Q)
    cursor = q.cursor()
    first = cursor.peek_current(0)
    assert first.body == b"m0000"  # the handle and the cursor exist on the server
    interrupt_next_read(qm._t, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        if call == "receive":
            q.receive(timeout=5)
        elif call == "cursor":
            cursor.receive_current(timeout=5)
        elif call == "receive_by_id":
            q.receive_by_id(first.id, timeout=5)
        else:
            read_range(q, 0, 0, receive=True)  # all five, held as one batch
    _settle(qm)
    _all_back(server.url, [b"m%04d" % i for i in range(5)])
    qm.close()


def test_a_waiting_receive_interrupted_gives_back_the_message_it_gets_later(
    server: ThreadServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(server.url, 0)
    qm = connect(server.url)
    q = qm.queue(Q)
    # As with a server of protocol version 1: no CANCEL_RECEIVE stops the wait on the server
    # (tests/server/test_cancel_receive.py covers the cancel), so the answer comes, holding a message.
    monkeypatch.setattr(qm._t, "server_hello", dataclasses.replace(qm._t.server_hello, version=1))
    interrupt_next_read(qm._t, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        q.receive(timeout=30)  # parked on the server; this client stopped waiting
    _fill(server.url, 1)  # the parked receive takes it, held, and answers nobody who waits
    deadline = time.monotonic() + 10
    while not _held(server.url):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    _settle(qm)
    _all_back(server.url, [b"m0000"])
    qm.close()


def test_an_express_receive_interrupted_leaves_no_answer_behind(
    server: ThreadServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(server.url, 2, delivery=0)
    qm = connect(server.url)
    q = qm.queue(Q)
    q.peek(0)
    interrupt_next_read(qm._t, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        q.receive(timeout=5)
    _settle(qm)
    # An express message is removed as it is answered (one-phase): the interrupted call's is gone
    # with its answer, which is dropped, not kept; the next receive gets the next message.
    assert q.receive(timeout=5).body == b"m0001"
    qm.close()


def test_iter_range_left_early_keeps_no_answers(server: ThreadServer) -> None:
    _fill(server.url, 200)
    qm = connect(server.url)
    q = qm.queue(Q)
    first = q.peek(0).lookup_id
    assert first is not None
    batches = iter_range(q, first, first + 200, chunk=10, depth=8)
    assert next(batches).count == 10
    batches.close()  # seven requests still on the way
    _settle(qm)
    assert q.message_count == 200  # peeks: nothing taken
    qm.close()
