"""Waiting receives park on queue notifications (no thread each) and still behave like blocking ones."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)

from pymsmq import Message, MSMQError, connect
from pymsmq.hresult import HResult

Q = ".\\private$\\waits"


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
