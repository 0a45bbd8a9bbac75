"""The one-request-in-flight lane of ``RemoteQueue.send``/``receive`` against a real server.

Its cached RECEIVE payload follows timeout and transaction changes, its answers equal those of
the general path, it falls back when it cannot be used (window full), and threads sharing one
connection still get their own answers.
"""

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
from pymsmq.client.transport import NOT_SENT
from pymsmq.hresult import HResult
from pymsmq.protocol.codes import Op

Q = ".\\private$\\lean"


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Any]:
    server = ThreadServer(tmp_path / "qm").start()
    client = connect(server.url)
    yield client
    client.close()
    server.stop()


def test_send_and_receive_set_what_the_general_path_sets(remote: Any) -> None:
    q = remote.create_queue(Q)
    m = Message(body=b"abc", label="l", priority=5, app_specific=9)
    q.send(m)
    assert m.id is not None and m.id.lineage == remote.guid
    assert m.sent_time is not None and m.source_machine_guid == remote.guid
    assert m.destination_queue == q.format_name
    got = q.receive(0)
    assert (got.body, got.label, got.priority, got.app_specific) == (b"abc", "l", 5, 9)
    assert got.id == m.id and got.lookup_id > 0 and got.arrived_time is not None
    assert got.destination_queue == q.format_name
    # The general path (a Pending answer) gives the same message.
    m2 = Message(body=b"abc", label="l", priority=5, app_specific=9)
    q.send_async(m2).result()
    general = q.receive_async(0).result()
    # Times are whole seconds set by the server: the two sends may straddle one.
    per_message = ("id", "lookup_id", "arrived_time", "sent_time")
    assert {k: v for k, v in general.__dict__.items() if k not in per_message} == {
        k: v for k, v in got.__dict__.items() if k not in per_message
    }
    assert abs(general.sent_time - got.sent_time) <= 1


def test_receive_payload_cache_follows_timeout_and_transaction(remote: Any) -> None:
    q = remote.create_queue(Q)
    with pytest.raises(MSMQError) as err:
        q.receive(0)
    assert err.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
    with pytest.raises(MSMQError) as err:
        q.receive(0.01)
    assert err.value.hresult == HResult.MQ_ERROR_IO_TIMEOUT
    with pytest.raises(MSMQError) as err:
        q.receive(-1)
    assert err.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    tq = remote.create_queue(Q + "tx", transactional=True)
    with remote.begin_transaction() as tx:
        tq.send(Message(body=b"t"), tx)
    with remote.begin_transaction() as tx:
        assert tq.receive(0, tx).body == b"t"
        tx.abort()
    assert tq.receive(0, 1).body == b"t"  # MQ_SINGLE_MESSAGE after the aborted one came back
    q.send(Message(body=b"x"))
    assert q.receive(0).body == b"x"


def test_closed_handle_and_bad_arguments_raise_as_before(remote: Any) -> None:
    q = remote.create_queue(Q)
    with pytest.raises(MSMQError) as err:
        q.send("not a message")
    assert err.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    q.close()
    with pytest.raises(MSMQError) as err:
        q.send(Message(body=b"x"))
    assert err.value.hresult == HResult.MQ_ERROR_INVALID_HANDLE
    with pytest.raises(MSMQError) as err:
        q.receive(0)
    assert err.value.hresult == HResult.MQ_ERROR_INVALID_HANDLE


def test_roundtrip_is_not_sent_when_the_window_is_full(remote: Any) -> None:
    q = remote.create_queue(Q)
    t = remote._t
    saved = t._conn.max_in_flight
    t._conn.max_in_flight = 0
    try:
        assert t.roundtrip(int(Op.SEND), b"", lambda payload: None) is NOT_SENT
    finally:
        t._conn.max_in_flight = saved
    q.send(Message(body=b"after"))
    assert q.receive(0).body == b"after"


def test_threads_sharing_a_connection_get_their_own_answers(remote: Any) -> None:
    queues = [remote.create_queue(f"{Q}{i}") for i in range(4)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            q = queues[i]
            for n in range(200):
                q.send(Message(body=f"{i}:{n}".encode()))
                assert q.receive(0).body == f"{i}:{n}".encode()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors
