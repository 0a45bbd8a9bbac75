"""The send batcher's answers: the fast frame (``Session.answer_fast``) and the queued one agree.

A session's last awaited recoverable SEND is answered with ``answer_fast`` (the payload built by
``send_answer_body`` on the batcher's thread); a session with more answers to come gets them queued
(``Session.answer``) and written together.  Both must carry the facts the general path gives: the
message id and sent time the stored message has.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

from pymsmq import Message
from pymsmq.client import connect
from pymsmq.server import ServerConfig
from pymsmq.server.session import Session

Q = ".\\private$\\answers"


@pytest.fixture(params=["loop", "thread", "auto"])
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ThreadServer]:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, durable_writes=request.param)).start()
    yield s
    s.stop()


@pytest.fixture
def answer_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the answers written by ``answer_fast`` and by ``answer``."""
    calls = {"fast": 0, "queued": 0}
    fast, queued = Session.answer_fast, Session.answer

    def answer_fast(self: Session, rid: int, op: int, body: bytes | None) -> bool:
        done = fast(self, rid, op, body)
        calls["fast"] += done
        return done

    def answer(self: Session, rid: int, response: Any) -> None:
        calls["queued"] += 1
        queued(self, rid, response)

    monkeypatch.setattr(Session, "answer_fast", answer_fast)
    monkeypatch.setattr(Session, "answer", answer)
    return calls


def _facts(m: Message) -> tuple[object, float | None]:
    return m.id, m.sent_time


def test_one_in_flight_answers_carry_the_stored_facts(
    server: ThreadServer, answer_calls: dict[str, int]
) -> None:
    client = connect(server.url)
    q = client.create_queue(Q)
    sent = [Message(body=b"%d" % i, delivery=1) for i in range(50)]
    for m in sent:
        q.send(m)  # one request in flight: each answer is the session's last awaited one
    # Almost all go the fast way (another request of the session still awaited, e.g. one that
    # arrived on the general lane, sends one the queued way).
    assert answer_calls["fast"] >= 25
    got = q.receive_many(100)
    assert [m.body for m in got] == [m.body for m in sent]
    assert [_facts(m) for m in got] == [_facts(m) for m in sent]
    assert all(m.id is not None for m in sent)
    client.close()


def test_pipelined_and_concurrent_answers_agree_with_the_stored_facts(
    server: ThreadServer, answer_calls: dict[str, int]
) -> None:
    client = connect(server.url)
    client.create_queue(Q).close()
    client.close()
    sent: dict[int, list[Message]] = {}

    def run(k: int) -> None:
        c = connect(server.url)
        q = c.queue(Q)
        msgs = [Message(body=b"%d-%d" % (k, i), delivery=1) for i in range(60)]
        for m in msgs[:20]:
            q.send(m)
        for p in [q.send_async(m) for m in msgs[20:]]:  # several answers of one session per batch
            p.result()
        sent[k] = msgs
        c.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(sent) == list(range(6))
    assert answer_calls["fast"] > 0 and answer_calls["queued"] > 0  # both ways were taken
    client = connect(server.url)
    got = {m.body: _facts(m) for m in client.queue(Q).receive_many(1000)}
    assert len(got) == 360
    for msgs in sent.values():
        for m in msgs:
            assert got[m.body] == _facts(m)
    client.close()
