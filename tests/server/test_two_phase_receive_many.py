"""Two-phase RECEIVE_MANY and READ_RANGE: the recoverable messages of a batch are not lost in transit.

A RECEIVE_MANY with ManyFlags.CONFIRM outside a transaction holds the recoverable messages it takes
and says so in its answer (``ManyMore.HELD``); END_RECEIVE naming the answer's first message removes
them all (RR_ACK) or puts them all back (RR_NACK); a connection that closes first gives them back; a
server that dies first still has them.  READ_RANGE with RangeFlags.CONFIRM (a receive with data)
does the same.  The pymsmq client asks for it on every ``receive_many`` and ``read_range`` receive
outside a transaction and acknowledges before returning.  Real ``pymsmq serve`` processes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _serve_process import ServeProcess, env, serving

from pymsmq import Message, MSMQError
from pymsmq.client import connect
from pymsmq.client.range_read import read_range
from pymsmq.hresult import HResult
from pymsmq.protocol import messages as pm
from pymsmq.protocol.batch_ops import ReceiveManyRequest, ReceiveManyResponse, decode_received
from pymsmq.protocol.codes import RR_ACK, RR_NACK, ManyFlags, ManyMore, RangeFlags
from pymsmq.protocol.message_batch import decode_batch
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS

Q = r".\private$\two-phase-many"
CONFIRM = int(ManyFlags.CONFIRM)
HELD = int(ManyMore.HELD)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    with serving(tmp_path / "qm") as srv:
        yield srv


def _fill(url: str, *bodies: tuple[bytes, int], journal: bool = False) -> None:
    c = connect(url)
    q = c.queue(Q) if c.queue_exists(Q) else c.create_queue(Q, journal=journal)
    for body, delivery in bodies:
        q.send(Message(body=body, delivery=delivery))
    c.close()


def _raw_many(q: Any, count: int, flags: int = CONFIRM) -> tuple[ReceiveManyResponse, list[Message]]:
    """One RECEIVE_MANY as a client that speaks the protocol itself (no END_RECEIVE of its own)."""
    response: ReceiveManyResponse = q._t.call(
        ReceiveManyRequest(q._handle, count, 0, flags, None, CLIENT_RECEIVE_PROPIDS)
    )
    return response, decode_received(response.messages, Q)


def _bodies(url: str) -> list[bytes]:
    """What is left in the queue, received (in order)."""
    c = connect(url)
    out = [m.body for m in c.queue(Q).receive_many(100, timeout=0, transaction=0)]
    c.close()
    return out


def _wait_until_first_is(url: str, body: bytes) -> None:
    """Wait until the queue's first visible message is ``body``: the server gives a vanished
    receiver's held messages back once it has seen the connection end, on its work pool."""
    watcher = connect(url)
    deadline = time.monotonic() + 10
    try:
        while True:
            try:
                if watcher.queue(Q).peek(timeout=0).body == body:
                    return
            except MSMQError:
                pass
            assert time.monotonic() < deadline, "the held messages did not come back"
            time.sleep(0.02)
    finally:
        watcher.close()


R, E = 1, 0  # recoverable, express


def test_a_batch_holds_its_recoverable_messages_until_end_receive_names_its_first(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, (b"a", R), (b"b", E), (b"c", R), (b"d", R))
        c = connect(srv.url)
        q = c.queue(Q)
        answer, got = _raw_many(q, 3)
        assert [m.body for m in got] == [b"a", b"b", b"c"]
        assert answer.more & HELD and not answer.hresult
        other = connect(srv.url).queue(Q)
        assert other.message_count == 3  # a and c locked (b, express, removed at once), and d
        assert other.receive(timeout=0).body == b"d"  # nobody else gets a held one
        with pytest.raises(MSMQError) as not_first:  # END_RECEIVE names the answer's first message
            q._t.call(pm.EndReceiveRequest(q._handle, got[2].lookup_id, RR_ACK))
        assert not_first.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
        q._t.call(pm.EndReceiveRequest(q._handle, got[0].lookup_id, RR_ACK))
        assert other.message_count == 0
    with serving(tmp_path / "qm") as srv:  # the removal was durable (the server was SIGKILLed)
        assert _bodies(srv.url) == []


def test_rr_nack_puts_the_whole_batch_back_in_place(server: Any) -> None:
    _fill(server.url, (b"a", R), (b"b", R), (b"c", R))
    q = connect(server.url).queue(Q)
    _, got = _raw_many(q, 2)
    q._t.call(pm.EndReceiveRequest(q._handle, got[0].lookup_id, RR_NACK))
    again = q.receive_many(3, timeout=0)
    assert [m.body for m in again] == [b"a", b"b", b"c"]
    assert [m.lookup_id for m in again[:2]] == [m.lookup_id for m in got]
    assert [m.abort_count for m in again] == [0, 0, 0]  # a release is not an aborted transaction


def test_a_batch_comes_back_when_its_receiver_goes_away_unacknowledged(server: Any) -> None:
    _fill(server.url, (b"a", R), (b"b", R), (b"c", R))
    gone = connect(server.url)
    _raw_many(gone.queue(Q), 2)
    gone.close()  # the network "fails" before END_RECEIVE
    _wait_until_first_is(server.url, b"a")
    assert _bodies(server.url) == [b"a", b"b", b"c"]


def test_a_server_that_dies_before_the_acknowledgement_still_has_the_batch(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, (b"a", R), (b"b", R))
        answer, got = _raw_many(connect(srv.url).queue(Q), 5)
        assert answer.more & HELD and len(got) == 2
    with serving(tmp_path / "qm") as srv:
        assert _bodies(srv.url) == [b"a", b"b"]


def test_express_batches_and_old_clients_take_one_phase(server: Any) -> None:
    _fill(server.url, (b"x1", E), (b"x2", E))
    c = connect(server.url)
    q = c.queue(Q)
    answer, got = _raw_many(q, 5)
    assert [m.body for m in got] == [b"x1", b"x2"] and not answer.more & HELD
    _fill(server.url, (b"old", R))
    answer, got = _raw_many(q, 5, flags=0)
    assert [m.body for m in got] == [b"old"] and not answer.more & HELD
    assert q.message_count == 0
    c.close()


def test_a_journal_batch_is_held_too(server: Any) -> None:
    # A journal handle's receives run off the event loop (the general path of RECEIVE_MANY).
    _fill(server.url, (b"j1", R), (b"j2", R), journal=True)
    c = connect(server.url)
    q = c.queue(Q)
    assert [m.body for m in q.receive_many(2, timeout=0)] == [b"j1", b"j2"]
    journal = q.journal
    assert journal.message_count == 2
    answer, got = _raw_many(journal, 5)
    assert [m.body for m in got] == [b"j1", b"j2"] and answer.more & HELD
    assert connect(server.url).queue(Q).journal.message_count == 2  # held, not removed
    journal._t.call(pm.EndReceiveRequest(journal._handle, got[0].lookup_id, RR_ACK))
    assert journal.message_count == 0
    c.close()


def test_the_client_acknowledges_before_receive_many_returns(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, *((str(i).encode(), R) for i in range(600)))
        q = connect(srv.url).queue(Q)
        got = q.receive_many(500, timeout=0)  # several answers, each acknowledged
        assert [m.body for m in got] == [str(i).encode() for i in range(500)]
        assert connect(srv.url).queue(Q).message_count == 100
    with serving(tmp_path / "qm") as srv:
        assert _bodies(srv.url) == [str(i).encode() for i in range(500, 600)]


_KILLED_CHILD = r"""
import sys, time
from pymsmq.client import connect
from pymsmq.client.range_read import read_range
from pymsmq.protocol.batch_ops import ReceiveManyRequest, decode_received
from pymsmq.protocol.codes import ManyFlags, ManyMore
from pymsmq.protocol.message_batch import decode_batch
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS
q = connect(sys.argv[1]).queue(sys.argv[2])
answer = q._t.call(
    ReceiveManyRequest(q._handle, 10, 5000, int(ManyFlags.CONFIRM), None, CLIENT_RECEIVE_PROPIDS)
)
bodies = [m.body.decode() for m in decode_received(answer.messages)]
print("held" if answer.more & ManyMore.HELD else "removed", *bodies, flush=True)
time.sleep(60)
"""


def test_a_receiver_killed_before_its_acknowledgement_loses_no_message_of_its_batch(server: Any) -> None:
    _fill(server.url, (b"p1", R), (b"p2", R), (b"p3", R))
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, server.url, Q], stdout=subprocess.PIPE, text=True, env=env()
    )
    assert child.stdout is not None
    assert child.stdout.readline().split() == ["held", "p1", "p2", "p3"]
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    c = connect(server.url)
    assert [m.body for m in c.queue(Q).receive_many(5, timeout=5)] == [b"p1", b"p2", b"p3"]
    c.close()


def test_a_one_phase_batch_is_removed_durably_before_its_answer(tmp_path: Path) -> None:
    # Without CONFIRM (an older client) the recoverable messages of a batch are removed together,
    # one durable write, before the answer is written: a server SIGKILLed after the answer has
    # removed them all.  (The first answer stops at the first recoverable message, taken on the
    # event loop; the next request takes the general path, which holds and removes in one write.)
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, (b"a", R), (b"b", E), (b"c", R), (b"d", R), (b"e", R))
        q = connect(srv.url).queue(Q)
        first, got = _raw_many(q, 3, flags=0)
        assert [m.body for m in got] == [b"a"] and first.more == int(ManyMore.MORE)
        second, got = _raw_many(q, 3, flags=0)
        assert [m.body for m in got] == [b"b", b"c", b"d"] and not second.more & HELD
    with serving(tmp_path / "qm") as srv:
        assert _bodies(srv.url) == [b"e"]


# ------------------------------------------------------------------ READ_RANGE with CONFIRM
def _raw_range(q: Any, flags: int) -> tuple[pm.ReadRangeResponse, list[Message]]:
    """One READ_RANGE receive of the whole queue, as a client that speaks the protocol itself."""
    response: pm.ReadRangeResponse = q._t.call(
        pm.ReadRangeRequest(q._handle, 0, 0, 100, 0x3F0000, flags, None, 0, 7)
    )
    return response, decode_batch(response.batch) if response.batch else []


RANGE_RECEIVE = int(RangeFlags.RECEIVE)
RANGE_CONFIRM = int(RangeFlags.RECEIVE | RangeFlags.CONFIRM)


def test_a_range_receive_holds_its_recoverable_messages_until_end_receive(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, (b"a", R), (b"b", E), (b"c", R))
        q = connect(srv.url).queue(Q)
        answer, got = _raw_range(q, RANGE_CONFIRM)
        assert [m.body for m in got] == [b"a", b"b", b"c"] and answer.more & HELD
        assert connect(srv.url).queue(Q).message_count == 2  # a and c held, b removed
        q._t.call(pm.EndReceiveRequest(q._handle, got[0].lookup_id, RR_ACK))
        assert connect(srv.url).queue(Q).message_count == 0
    with serving(tmp_path / "qm") as srv:
        assert _bodies(srv.url) == []


def test_a_range_receive_comes_back_when_its_receiver_goes_away(server: Any) -> None:
    _fill(server.url, (b"a", R), (b"b", R))
    gone = connect(server.url)
    answer, _ = _raw_range(gone.queue(Q), RANGE_CONFIRM)
    assert answer.more & HELD
    gone.close()
    _wait_until_first_is(server.url, b"a")
    assert _bodies(server.url) == [b"a", b"b"]


def test_range_receives_without_data_or_confirm_take_one_phase(server: Any) -> None:
    _fill(server.url, (b"a", R), (b"b", R))
    q = connect(server.url).queue(Q)
    no_data, _ = _raw_range(q, RANGE_CONFIRM | int(RangeFlags.NO_DATA))
    assert no_data.count == 2 and not no_data.more & HELD  # nothing travels: nothing to lose
    assert q.message_count == 0
    _fill(server.url, (b"c", R))
    old, got = _raw_range(q, RANGE_RECEIVE)
    assert [m.body for m in got] == [b"c"] and not old.more & HELD
    assert q.message_count == 0


def test_the_client_read_range_acknowledges_before_returning(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        _fill(srv.url, (b"a", R), (b"b", R), (b"c", R))
        q = connect(srv.url).queue(Q)
        rb = read_range(q, 0, 0, max_count=2, receive=True)
        assert [m.body for m in rb.messages()] == [b"a", b"b"] and rb.more
        assert connect(srv.url).queue(Q).message_count == 1  # removed, not held
    with serving(tmp_path / "qm") as srv:
        assert _bodies(srv.url) == [b"c"]


def test_a_graceful_shutdown_with_a_batch_held_exits_0_and_keeps_it(tmp_path: Path) -> None:
    srv = ServeProcess(tmp_path / "qm")
    try:
        _fill(srv.url, (b"a", R), (b"b", R), (b"c", R))
        answer, _ = _raw_many(connect(srv.url).queue(Q), 2)
        assert answer.more & HELD
    finally:
        assert srv.terminate() == 0  # SIGTERM: the held messages are given back, nothing lost
    with serving(tmp_path / "qm") as again:
        assert _bodies(again.url) == [b"a", b"b", b"c"]


def test_stats_count_the_held_messages(server: Any) -> None:
    _fill(server.url, (b"a", R), (b"b", R), (b"c", E))
    c = connect(server.url)
    _raw_many(c.queue(Q), 3)  # a and b held, c (express) removed

    def stats(*extra: str) -> str:
        cli = "from pymsmq.cli import main; main()"
        shown = subprocess.run(
            [sys.executable, "-c", cli, "stats", "--url", server.url, *extra],
            capture_output=True,
            text=True,
            env=env(),
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        return shown.stdout

    assert json.loads(stats("--json"))["server"]["held"] == 2
    assert "held: 2 received messages wait for their receivers' acknowledgement" in stats()
    c.close()  # given back (the server sees the close a moment later)
    deadline = time.monotonic() + 10
    while json.loads(stats("--json"))["server"]["held"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert json.loads(stats("--json"))["server"]["held"] == 0
