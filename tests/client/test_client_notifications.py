"""Arrival notifications ([MC-MQAC] 3.11.4.1.9 EnableNotification: one event per call), in the
shared client suite: the embedded queue manager and a remote server behave alike."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest

from pymsmq import (
    MQ_SEND_ACCESS,
    MQMSG_CURRENT,
    MQMSG_FIRST,
    MQMSG_NEXT,
    HResult,
    Message,
    MSMQError,
    QueueManager,
)


class Sink:
    """Records Arrived / ArrivedError events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, int]] = []
        self.cond = threading.Condition()

    def arrived(self, q: Any, cursor: int) -> None:
        with self.cond:
            self.events.append(("arrived", 0, cursor))
            self.cond.notify_all()

    def error(self, q: Any, hresult: int, cursor: int) -> None:
        with self.cond:
            self.events.append(("error", hresult, cursor))
            self.cond.notify_all()

    def wait(self, n: int = 1, timeout: float = 5.0) -> list[tuple[str, int, int]]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.events) >= n, timeout)
            return list(self.events)


def settle(qm: Any) -> None:
    """Let every event due so far be delivered: the embedded queue manager's event thread runs
    what it has queued; a server answers what it has read, and a client's notification threads
    take a moment to call back."""
    if isinstance(qm, QueueManager):
        done = threading.Event()
        qm._dispatcher.submit(done.set)
        assert done.wait(5)
    else:
        assert qm.ping(b"settle") == b"settle"
        time.sleep(0.2)


def test_one_event_per_call(qm: Any) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    n = q.enable_notification(sink.arrived, on_error=sink.error)
    settle(qm)
    assert sink.events == [] and not n.done
    q.send(Message(body=b"1"))
    assert sink.wait() == [("arrived", 0, MQMSG_FIRST)]
    q.send(Message(body=b"2"))
    settle(qm)
    assert len(sink.events) == 1  # not re-armed: no second event
    assert q.message_count == 2  # the notification does not receive


def test_fires_at_once_when_a_message_is_there(qm: Any) -> None:
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"1"))
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_FIRST, 0, sink.error)
    assert sink.wait() == [("arrived", 0, MQMSG_FIRST)]


def test_timeout_zero_and_finite(qm: Any) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_FIRST, 0, sink.error)
    assert sink.wait() == [("error", HResult.MQ_ERROR_MESSAGE_NOT_FOUND, 0)]
    sink2 = Sink()
    q.enable_notification(sink2.arrived, MQMSG_FIRST, 0.2, sink2.error)
    assert sink2.wait() == [("error", HResult.MQ_ERROR_IO_TIMEOUT, 0)]
    # An ``HResult`` member, as ``MSMQError.hresult`` is (QA 2026-11-27: a bare int, no ``.name``).
    assert all(type(hresult) is HResult for _, hresult, _ in sink.events + sink2.events)
    q.send(Message())
    settle(qm)
    assert len(sink2.events) == 1


def test_rearm_inside_callback_receives_everything(qm: Any) -> None:
    q = qm.create_queue(r".\private$\q")
    got: list[bytes] = []
    done = threading.Event()

    def arrived(queue: Any, cursor: int) -> None:
        got.append(queue.receive(timeout=0).body)
        if len(got) == 3:
            done.set()
        else:
            queue.enable_notification(arrived)

    q.enable_notification(arrived)
    for b in (b"a", b"b", b"c"):
        q.send(Message(body=b))
    assert done.wait(5) and got == [b"a", b"b", b"c"]


def test_cursor_modes(qm: Any) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    # NEXT on an Unread cursor: ILLEGAL_CURSOR_ACTION (NOT_FOUND with timeout 0).
    q.enable_notification(sink.arrived, MQMSG_NEXT, None, sink.error)
    q.enable_notification(sink.arrived, MQMSG_NEXT, 0, sink.error)
    assert sink.wait(2) == [
        ("error", HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION, MQMSG_NEXT),
        ("error", HResult.MQ_ERROR_MESSAGE_NOT_FOUND, MQMSG_NEXT),
    ]
    q.send(Message(body=b"1"))
    cur = Sink()
    q.enable_notification(cur.arrived, MQMSG_CURRENT, None, cur.error)
    assert cur.wait() == [("arrived", 0, MQMSG_CURRENT)]
    assert q.peek_current(timeout=0).body == b"1"  # the cursor landed on it
    nxt = Sink()
    q.enable_notification(nxt.arrived, MQMSG_NEXT, None, nxt.error)
    settle(qm)
    assert nxt.events == []
    q.send(Message(body=b"2"))
    assert nxt.wait() == [("arrived", 0, MQMSG_NEXT)]
    assert q.peek_current(timeout=0).body == b"2"


@pytest.mark.parametrize("timeout", [0, 0.3])
def test_a_next_notification_without_a_message_has_advanced_the_cursor(qm: Any, timeout: float) -> None:
    # MQMSG_NEXT advances the handle's cursor at once (its message is behind it) even when no
    # message comes: the remote one stayed on its message (outside QA: always), so a later
    # peek_current gave that message again remotely and the next one embedded.
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"m1"))
    assert q.peek_current(timeout=0).body == b"m1"
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_NEXT, timeout, sink.error)
    expected = HResult.MQ_ERROR_MESSAGE_NOT_FOUND if timeout == 0 else HResult.MQ_ERROR_IO_TIMEOUT
    assert sink.wait() == [("error", expected, MQMSG_NEXT)]
    q.send(Message(body=b"m2"))
    assert q.peek_current(timeout=0).body == b"m2"


def test_queue_deleted_and_handle_closed(qm: Any) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    q.enable_notification(sink.arrived, on_error=sink.error)
    h = qm.queue(r".\private$\q")
    closed = Sink()
    n = h.enable_notification(closed.arrived, on_error=closed.error)
    h.close()
    assert n.done
    qm.delete_queue(r".\private$\q")
    assert sink.wait() == [("error", HResult.MQ_ERROR_QUEUE_DELETED, 0)]
    settle(qm)
    assert closed.events == []


def test_cancel_and_argument_errors(qm: Any) -> None:
    q = qm.create_queue(r".\private$\q")
    sink = Sink()
    n = q.enable_notification(sink.arrived)
    assert n.cancel() and not n.cancel()
    q.send(Message())
    settle(qm)
    assert sink.events == []
    with pytest.raises(MSMQError) as e:
        q.enable_notification(sink.arrived, 3)
    assert e.value.hresult == HResult.E_INVALIDARG
    with pytest.raises(MSMQError) as e:
        q.enable_notification(None)  # type: ignore[arg-type]
    assert e.value.hresult == HResult.E_INVALIDARG
    s = qm.queue(r".\private$\q", access=MQ_SEND_ACCESS)
    with pytest.raises(MSMQError) as e:
        s.enable_notification(sink.arrived)
    assert e.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
    q.close()
    with pytest.raises(MSMQError) as e:
        q.enable_notification(sink.arrived)
    assert e.value.hresult == HResult.MQ_ERROR_INVALID_HANDLE


# ---------------------------------------------------------------------------- remote only


def test_a_remote_notification_waits_on_the_server_without_a_thread_there(server: Any) -> None:
    from pymsmq import connect

    client = connect(server.url)
    q = client.create_queue(r".\private$\q")
    sinks = [Sink() for _ in range(20)]
    for sink in sinks:
        q.enable_notification(sink.arrived, MQMSG_FIRST, None, sink.error)
    assert client.ping(b"p") == b"p"
    assert sum(len(s.waits) for s in list(server.server.sessions)) == 20  # parked peeks
    q.send(Message(body=b"1"))
    for sink in sinks:
        assert sink.wait() == [("arrived", 0, MQMSG_FIRST)]
    assert q.receive(0).body == b"1"  # every notification fired for it; none took it
    client.close()


def test_a_cancelled_remote_notification_stops_the_server_s_wait(server: Any) -> None:
    from pymsmq import connect

    client = connect(server.url)
    q = client.create_queue(r".\private$\q")
    sink = Sink()
    n = q.enable_notification(sink.arrived, MQMSG_FIRST, None, sink.error)
    assert client.ping(b"p") == b"p"
    assert n.cancel() and n.done
    deadline = time.monotonic() + 5
    while any(s.waits for s in list(server.server.sessions)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(s.waits for s in list(server.server.sessions))
    q.send(Message(body=b"later"))
    settle(client)
    assert sink.events == []
    client.close()


def test_a_remote_callback_that_raises_is_logged_and_later_ones_run(
    server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from pymsmq import connect

    client = connect(server.url)
    q = client.create_queue(r".\private$\q")

    def broken(queue: Any, cursor: int) -> None:
        raise RuntimeError("the application's bug")

    q.enable_notification(broken)
    q.send(Message(body=b"1"))
    sink = Sink()
    q.enable_notification(sink.arrived)
    assert sink.wait() == [("arrived", 0, MQMSG_FIRST)]
    deadline = time.monotonic() + 5
    while "the application's bug" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "a notification callback raised" in caplog.text and "the application's bug" in caplog.text
    client.close()


def test_a_server_shutting_down_ends_a_remote_notification_with_an_error(tmp_path: Any) -> None:
    # As every waiting read of a server that shuts down: MQ_ERROR_OPERATION_CANCELLED (protocol.md).
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from _pymsmq_server import ThreadServer

    from pymsmq import connect

    s = ThreadServer(tmp_path / "qm").start()
    client = connect(s.url)
    q = client.create_queue(r".\private$\q")
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_FIRST, None, sink.error)
    assert client.ping(b"p") == b"p"
    s.stop()
    assert sink.wait(timeout=30) == [("error", HResult.MQ_ERROR_OPERATION_CANCELLED, MQMSG_FIRST)]
    client.close()


def test_a_lost_connection_ends_a_remote_notification_with_an_error(server: Any) -> None:
    import socket

    from pymsmq import connect

    client = connect(server.url)
    q = client.create_queue(r".\private$\q")
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_FIRST, None, sink.error)
    assert client.ping(b"p") == b"p"
    client._t._sock.shutdown(socket.SHUT_RDWR)  # the network drops the connection
    assert sink.wait(timeout=30) == [("error", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, MQMSG_FIRST)]
    client.close()


def test_a_connection_arms_at_most_half_its_window_of_notifications(tmp_path: Any) -> None:
    # Each armed notification is a request in flight: past the server's window the next one, and
    # every other request of the connection (a ping too), waited until one fired (for good with
    # INFINITE timeouts and no arrival: QA 2026-11-27, 1,025 on the default window of 1,024).
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from _pymsmq_server import ThreadServer

    from pymsmq import connect
    from pymsmq.server import ServerConfig

    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, max_in_flight=8)).start()
    client = connect(s.url)
    try:
        q = client.create_queue(r".\private$\q")
        sinks = [Sink() for _ in range(4)]
        for sink in sinks:
            q.enable_notification(sink.arrived, MQMSG_FIRST, None, sink.error)
        with pytest.raises(MSMQError) as refused:
            q.enable_notification(Sink().arrived)
        assert refused.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
        assert "another connection" in str(refused.value)
        assert client.ping(b"still") == b"still"
        q.send(Message(body=b"1"))
        for sink in sinks:
            assert sink.wait() == [("arrived", 0, MQMSG_FIRST)]
        again = Sink()
        deadline = time.monotonic() + 5
        while True:  # (the fired ones are counted out as their threads call back)
            try:
                n = q.enable_notification(again.arrived)
                break
            except MSMQError:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        assert again.wait() == [("arrived", 0, MQMSG_FIRST)] and n.done
    finally:
        client.close()
        s.stop()


def test_remote_notifications_share_one_thread_and_fire_while_a_call_waits(server: Any) -> None:
    # Each armed notification had a client thread of its own (200 queues watched: 200 threads).
    # One thread per connection waits for all their answers, also while another thread of the
    # application is the connection's reader (a blocking receive on another queue).
    from pymsmq import connect

    client = connect(server.url)
    try:
        queues = [client.create_queue(rf".\private$\watched{i}") for i in range(200)]
        other = client.create_queue(r".\private$\other")
        timed_out: list[int] = []

        def wait_on_other() -> None:  # the connection's reader while the notifications fire
            with pytest.raises(MSMQError) as info:
                other.receive(timeout=4)
            timed_out.append(info.value.hresult)

        blocked = threading.Thread(target=wait_on_other)
        blocked.start()
        time.sleep(0.2)
        before = threading.active_count()
        sinks = [Sink() for _ in queues]
        for q, sink in zip(queues, sinks, strict=True):
            q.enable_notification(sink.arrived, MQMSG_FIRST, None, sink.error)
        assert threading.active_count() <= before + 1
        names = [t.name for t in threading.enumerate()]
        assert names.count("pymsmq-notifications") == 1
        sender = connect(server.url)
        for q in queues[:50]:
            sender.queue(q.format_name).send(Message(body=b"x"))
        for sink in sinks[:50]:
            assert sink.wait(timeout=5) == [("arrived", 0, MQMSG_FIRST)]
        assert blocked.is_alive()  # delivered while that receive still waited
        assert all(not sink.events for sink in sinks[50:])
        sender.close()
        for q in queues[50:]:
            q.close()  # cancelled silently
        blocked.join(10)
        assert timed_out == [HResult.MQ_ERROR_IO_TIMEOUT]
        deadline = time.monotonic() + 5
        while "pymsmq-notifications" in [t.name for t in threading.enumerate()]:
            assert time.monotonic() < deadline  # nothing armed: the thread ends
            time.sleep(0.02)
        assert all(not sink.events for sink in sinks[50:])
    finally:
        client.close()


@pytest.mark.parametrize("app_reads", [False, True])
def test_a_remote_notification_answered_at_once_is_not_lost(
    server: Any, monkeypatch: pytest.MonkeyPatch, app_reads: bool
) -> None:
    # The notification thread, already waiting for another notification, learnt of a new one's
    # request only after it was written: an answer that came in between was left unread by it
    # (outside QA, with the arming thread held 20 ms there: delivered a minute late or never).
    # Now it knows the request before it is written; the same delay changes nothing.
    from pymsmq import connect
    from pymsmq.client import remote_notification as rn

    real = rn.NotificationPump.watch

    def late(self: Any, n: Any, rid: int, no_wait: bool) -> None:
        time.sleep(0.02)
        real(self, n, rid, no_wait)

    monkeypatch.setattr(rn.NotificationPump, "watch", late)
    client = connect(server.url)
    try:
        x, y, z = (client.create_queue(rf".\private$\{name}") for name in "xyz")
        z.enable_notification(lambda q, c: None)  # the notification thread waits for this one

        def read_other() -> None:
            with contextlib.suppress(MSMQError):  # MQ_ERROR_IO_TIMEOUT after 3 s
                x.receive(3)

        if app_reads:  # another thread of the application is the connection's reader
            threading.Thread(target=read_other, daemon=True).start()
        time.sleep(0.3)
        y.send(Message(body=b"already there"))
        fired = threading.Event()
        y.enable_notification(lambda q, c: fired.set())
        assert fired.wait(2)
    finally:
        client.close()


def test_a_callback_that_calls_sys_exit_does_not_stop_later_notifications(qm: Any) -> None:
    # SystemExit ended the thread that runs the callbacks (the embedded queue manager's event
    # thread, a connection's notification thread): every later notification went undelivered.
    import sys

    q = qm.create_queue(r".\private$\q")
    q.enable_notification(lambda _q, _c: sys.exit(3))
    q.send(Message(body=b"1"))
    settle(qm)
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_FIRST, None, sink.error)
    assert sink.wait() == [("arrived", 0, MQMSG_FIRST)]


def test_remote_callbacks_run_in_arrival_order_on_a_thread_that_leaves_ctrl_c_to_the_application(
    server: Any,
) -> None:
    # Answers read together were handed over in set order; and the notification thread did not
    # block SIGINT as pymsmq's other threads do (a Ctrl-C is the application's main thread's).
    import signal

    from pymsmq import connect

    client = connect(server.url)
    try:
        t = client._t
        with t._cond:
            t._done.update({9: "nine", 3: "three", 7: "seven"})
            assert t._take_done({3, 7, 9, 11}) == [(9, "nine"), (3, "three"), (7, "seven")]
        q = client.create_queue(r".\private$\q")
        masks: list[set[int]] = []
        got = threading.Event()

        def arrived(_q: Any, _c: int) -> None:
            masks.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
            got.set()

        q.enable_notification(arrived)
        q.send(Message(body=b"1"))
        assert got.wait(5) and signal.SIGINT in masks[0]
    finally:
        client.close()


def test_a_cursor_notification_fires_for_a_message_ahead_of_the_cursor(qm: Any) -> None:
    # Outside QA: embedded, a higher priority arrival (placed ahead of the handle's cursor) did not
    # fire MQMSG_NEXT or MQMSG_CURRENT (it timed out); remotely it did.  A cancelled notification
    # no longer waits: a later read with timeout 0 does not jump ahead (remotely it did).
    q = qm.create_queue(r".\private$\q")
    q.send(Message(body=b"p3", priority=3))
    assert q.peek_current(timeout=0).body == b"p3"
    sink = Sink()
    q.enable_notification(sink.arrived, MQMSG_NEXT, 5, sink.error)
    settle(qm)
    q.send(Message(body=b"p7", priority=7))
    assert sink.wait() == [("arrived", 0, MQMSG_NEXT)]
    assert q.peek_current(timeout=0).body == b"p7"  # the cursor moved to it
    assert q.peek_next(timeout=0).body == b"p3"
    cancelled = Sink()
    n = q.enable_notification(cancelled.arrived, MQMSG_NEXT, 30, cancelled.error)
    settle(qm)
    n.cancel()
    settle(qm)
    q.send(Message(body=b"p6", priority=6))
    with pytest.raises(MSMQError) as nothing_ahead:
        q.peek_current(timeout=0)
    assert nothing_ahead.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    assert cancelled.events == []
