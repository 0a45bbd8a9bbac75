"""Remote-only throughput paths: send_many / receive_many, and express/recoverable mixes on one handle."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _pymsmq_server import ThreadServer

from pymsmq import Message, MSMQError, connect
from pymsmq.hresult import HResult

Q = ".\\private$\\pipe"


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Any]:
    server = ThreadServer(tmp_path / "qm").start()
    client = connect(server.url)
    yield client
    client.close()
    server.stop()


def test_send_many_then_receive_many_keeps_order_and_content(remote: Any) -> None:
    q = remote.create_queue(Q)
    sent = [Message(body=bytes([i % 256]) * 10, label=f"m{i}", app_specific=i) for i in range(300)]
    q.send_many(sent)
    got = q.receive_many(300)
    assert [m.label for m in got] == [f"m{i}" for i in range(300)]
    assert [(m.body, m.app_specific) for m in got] == [(bytes([i % 256]) * 10, i) for i in range(300)]
    assert all(m.destination_queue == q.format_name for m in got)
    assert [m.id for m in got] == [m.id for m in sent]  # send_many set the ids the server assigned


def test_receive_many_returns_what_is_there(remote: Any) -> None:
    q = remote.create_queue(Q)
    q.send_many([Message(body=b"a"), Message(body=b"b")])
    assert [m.body for m in q.receive_many(5)] == [b"a", b"b"]
    assert q.receive_many(3) == []
    with pytest.raises(MSMQError) as err:
        q.receive_many(-1)
    assert err.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER


def test_express_and_recoverable_mixed_on_one_handle(remote: Any) -> None:
    # The server receives express heads on its event loop and recoverable ones off it (with a peek
    # first after meeting one): every message still comes out once, in order, with its delivery.
    q = remote.create_queue(Q)
    pattern = [0, 0, 1, 0, 1, 1, 0, 0, 0, 1] * 5
    for i, delivery in enumerate(pattern):
        q.send(Message(body=str(i).encode(), delivery=delivery))
    got = [q.receive(0) for _ in pattern]
    assert [m.body for m in got] == [str(i).encode() for i in range(len(pattern))]
    assert [m.delivery for m in got] == pattern
    with pytest.raises(MSMQError) as err:
        q.receive(0)
    assert err.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND


def test_recoverable_send_many_from_two_connections(remote: Any, tmp_path: Path) -> None:
    q = remote.create_queue(Q)
    other = connect(remote.url)
    try:
        q2 = other.queue(Q)
        q.send_many([Message(body=b"x%d" % i, delivery=1) for i in range(50)])
        q2.send_many([Message(body=b"y%d" % i, delivery=1) for i in range(50)])
    finally:
        other.close()
    bodies = [m.body for m in q.receive_many(100)]
    assert sorted(bodies) == sorted([b"x%d" % i for i in range(50)] + [b"y%d" % i for i in range(50)])
    assert [b for b in bodies if b.startswith(b"x")] == [b"x%d" % i for i in range(50)]  # per-sender order


def test_remote_errors_name_their_hresult_once(remote: Any) -> None:
    with pytest.raises(MSMQError) as err:
        remote.queue(".\\private$\\missing")
    assert err.value.hresult == HResult.MQ_ERROR_QUEUE_NOT_FOUND
    assert str(err.value).count("MQ_ERROR_QUEUE_NOT_FOUND") == 1  # the server sends the bare message


def test_threads_sharing_a_handle_each_receive_with_their_own_arguments(remote: Any) -> None:
    # The cached RECEIVE payload was set field by field: a receive could run with another
    # thread's timeout or transaction (outside QA: duplicates when that transaction aborted).
    q = remote.create_queue(r".\private$\shared-handle")
    wrong: list[str] = []
    stop = threading.Event()

    def quick() -> None:  # timeout 0: MESSAGE_NOT_FOUND at once
        while not stop.is_set():
            try:
                q.receive(timeout=0)
            except MSMQError as exc:
                if exc.hresult != HResult.MQ_ERROR_MESSAGE_NOT_FOUND:
                    wrong.append(f"timeout 0 gave {exc.hresult:#x}")

    def waiting() -> None:  # timeout 0.001: MQ_ERROR_IO_TIMEOUT, never NOT_FOUND
        for _ in range(300):
            try:
                q.receive(timeout=0.001)
            except MSMQError as exc:
                if exc.hresult != HResult.MQ_ERROR_IO_TIMEOUT:
                    wrong.append(f"timeout 0.001 gave {exc.hresult:#x}")
        stop.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [
            threading.Thread(target=quick),
            threading.Thread(target=quick),
            threading.Thread(target=waiting),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
        stop.set()
    assert wrong == []


def test_a_message_an_abandoned_receive_holds_goes_back_while_the_next_receive_waits(remote: Any) -> None:
    # A receive interrupted (Ctrl-C) as its message came left the message held for its abandoned
    # answer, given back only when the next call on the connection stopped reading: the next
    # receive waited for it, forever on a quiet queue (outside QA).  Here the abandonment is made
    # by hand, as an interrupted receive makes it.
    from pymsmq import MQMSG_DELIVERY_RECOVERABLE
    from pymsmq.client import remote_queue
    from pymsmq.protocol import hot

    q = remote.create_queue(r".\private$\given-back")
    q.send(Message(body=b"held", delivery=MQMSG_DELIVERY_RECOVERABLE))
    t = q._t
    request = hot.receive_request(
        q._handle,
        remote_queue._RECEIVE_ACTION,
        0,
        0,
        0,
        None,
        remote_queue.CLIENT_RECEIVE_PROPIDS,
        remote_queue._CONFIRM,
    )
    rid = t.send(request)
    t.abandon([rid], q._give_back(False))  # (nobody reads its answer: the message is held)
    assert q.receive(timeout=5).body == b"held"  # given back while this one waits, and taken


def _a_transaction_with_a_send(remote: Any, name: str) -> tuple[Any, Any]:
    """A transactional queue ``name`` and an open transaction that sent b"x" to it."""
    q = remote.create_queue(name, transactional=True)
    tx = remote.begin_transaction()
    q.send(Message(body=b"x"), transaction=tx)
    return q, tx


def _committed(q: Any, tx: Any) -> None:
    assert tx.state == "committed"
    assert q.receive(timeout=1, transaction=3).body == b"x"


def test_a_remote_commit_interrupted_ends_in_its_outcome(
    remote: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while a commit's answer was on its way left the transaction "committing" for good:
    # commit and abort both refused, though the server had committed (outside QA).  It ends in the
    # outcome, then the interrupt goes on, as an embedded commit does.
    from pymsmq.client.transport import Transport

    q, tx = _a_transaction_with_a_send(remote, r".\private$\interrupted-commit")
    real = Transport.wait
    interrupted: list[int] = []

    def wait(self: Transport, rid: int, *args: Any, **kwargs: Any) -> object:
        if not interrupted:
            interrupted.append(rid)
            raise KeyboardInterrupt
        return real(self, rid, *args, **kwargs)

    monkeypatch.setattr(Transport, "wait", wait)
    with pytest.raises(KeyboardInterrupt):
        tx.commit()
    monkeypatch.undo()
    assert interrupted
    _committed(q, tx)


def test_a_receive_async_never_awaited_gives_its_message_back(remote: Any) -> None:
    # The RECEIVE is written at the call: a result never asked for left its message held, hidden
    # from every reader until the handle closed (outside QA).  Let go of, it is abandoned.
    import gc

    from pymsmq import MQMSG_DELIVERY_RECOVERABLE

    q = remote.create_queue(r".\private$\never-awaited")
    q.send(Message(body=b"kept", delivery=MQMSG_DELIVERY_RECOVERABLE))
    pending = q.receive_async(timeout=0)
    del pending
    gc.collect()
    assert q.receive(timeout=5).body == b"kept"


def test_an_interrupt_another_thread_takes_waits_for_the_end_of_an_uninterrupted_block(remote: Any) -> None:
    # The END_RECEIVE RR_ACK is written in such a block: a Ctrl-C that an application thread took
    # (Python runs the handler in the main thread all the same) raised inside it, and a message
    # whose acknowledgement was written was lost (outside QA).  It is raised as the block ends.
    import signal
    import time

    ready, done = threading.Event(), threading.Event()

    def taker() -> None:  # a thread of the application's, SIGINT not blocked
        ready.set()
        done.wait(10)

    th = threading.Thread(target=taker)
    th.start()
    ready.wait(5)
    reached_the_end = False
    # (A test worker may run with SIGINT ignored: Python's own handler, as in an application.)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), remote._t.uninterrupted():
            assert th.ident is not None
            signal.pthread_kill(th.ident, signal.SIGINT)
            for _ in range(200):
                time.sleep(0.001)  # (Python runs pending handlers between these)
            reached_the_end = True
    finally:
        signal.signal(signal.SIGINT, old)
        done.set()
        th.join(10)
    assert reached_the_end


def test_a_remote_commit_interrupted_as_it_is_written_ends_in_its_outcome(
    remote: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Ctrl-C that came while the COMMIT was written was raised as the write returned, and the
    # transaction was left "in doubt" though the server committed (outside QA).
    import signal

    from pymsmq.client.transport import Transport

    q, tx = _a_transaction_with_a_send(remote, r".\private$\commit-as-written")
    real = Transport.send

    def send(self: Transport, request: Any) -> int:
        rid = real(self, request)
        signal.raise_signal(signal.SIGINT)  # a Ctrl-C as the write returns
        return rid

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        monkeypatch.setattr(Transport, "send", send)
        with pytest.raises(KeyboardInterrupt):
            tx.commit()
        monkeypatch.undo()
    finally:
        signal.signal(signal.SIGINT, old)
    _committed(q, tx)
