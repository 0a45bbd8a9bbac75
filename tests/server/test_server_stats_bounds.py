"""Server statistics stay the size of the live queues and one STATS answer fits a frame (an outside
scale review, 2026-11-27: the counters of every queue that ever had traffic were kept, and after
about 17,500 deleted queues every STATS failed until the server restarted)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from _pymsmq_server import ThreadServer

from pymsmq import Message
from pymsmq.client import connect
from pymsmq.server.ops import stats_text


def test_deleted_queues_leave_the_statistics(tmp_path: Path) -> None:
    s = ThreadServer(tmp_path / "qm").start()
    client = connect(s.url)
    try:
        live = client.create_queue(".\\private$\\live", journal=True)
        live.send(Message(body=b"x"))
        live.receive(0)
        for i in range(30):
            name = f".\\private$\\temp{i}"
            q = client.create_queue(name)
            q.send(Message(body=b"t"))
            q.receive(0)
            q.close()
            client.delete_queue(name)
        client.queue(".\\private$\\live;journal").peek(0)
        stats = client.server_stats()
        # The live queue, its journal and the three system queues; none of the thirty deleted.
        assert sorted(stats["queues"]) == sorted(
            [live.format_name, live.format_name + ";JOURNAL", *_system_format_names(client)]
        ), sorted(stats["queues"])
        assert stats["rates"]["sent_per_s"] >= 0 and stats["rates"]["received_per_s"] >= 0
        # A queue created again under a deleted one's name starts from zero.
        again = client.create_queue(".\\private$\\temp0")
        entry = client.server_stats()["queues"].get(again.format_name, {})
        assert entry.get("sent", 0) == 0 and entry.get("received", 0) == 0
    finally:
        client.close()
        s.stop()


def _retried_through_subqueues(client: Any, count: int) -> Any:
    """A transactional queue whose ``count`` messages each went through a subqueue of its own
    (``retry0``...), as a retry loop does, and were received from it."""
    from pymsmq import MQ_SINGLE_MESSAGE

    q = client.create_queue(".\\private$\\retries", transactional=True)
    for i in range(count):
        q.send(Message(body=b"%d" % i), MQ_SINGLE_MESSAGE)
        q.move(q.peek(0).lookup_id, f"retry{i}", MQ_SINGLE_MESSAGE)
        sub = client.queue(q.format_name + f";retry{i}")
        assert sub.receive(0, transaction=MQ_SINGLE_MESSAGE).body == b"%d" % i
        sub.close()
    return q


def test_subqueues_that_hold_nothing_leave_the_statistics_and_the_server(tmp_path: Path) -> None:
    # QA 2026-11-27: a subqueue name per retry kept an index and a zero-valued STATS entry each, for
    # the life of the server (4,005 entries and +6 MB after 3,000 names).

    s = ThreadServer(tmp_path / "qm").start()
    client = connect(s.url)
    try:
        q = _retried_through_subqueues(client, 40)
        names = client.server_stats()["queues"]
        assert not [n for n in names if ";retry" in n], sorted(names)
        assert s.server is not None
        state, _ = s.server.qm._resolve(q.format_name)
        assert state.subqueues == {}
    finally:
        client.close()
        s.stop()


def test_counters_of_gone_queues_go_without_a_stats_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # QA 2026-11-27: the counters of gone subqueues and deleted queues' journals went only when a
    # client asked for STATS (3,200 entries after 2,400 subqueue names and 800 journals, none).
    from pymsmq.server import app

    monkeypatch.setattr(app, "COUNTERS_LOOK_MIN", 40)
    s = ThreadServer(tmp_path / "qm").start()
    client = connect(s.url)
    try:
        q = _retried_through_subqueues(client, 60)
        for i in range(30):
            name = f".\\private$\\temp{i}"
            t = client.create_queue(name, journal=True)
            t.send(Message(body=b"t"))
            t.receive(0)
            t.journal.receive(0)
            t.close()
            client.delete_queue(name)
        assert s.server is not None
        counters = s.server.stats.queues
        # Looked at once they grow past twice what the last look left and COUNTERS_LOOK_MIN more:
        # bounded by the live queues, not by every name ever used (120 entries before).
        time.sleep(2.5)
        assert q.format_name in counters and len(counters) <= 40 + 2, sorted(counters)
    finally:
        client.close()
        s.stop()


def test_a_stats_text_too_large_for_a_frame_keeps_the_busiest_queues() -> None:
    queues = {
        f"PRIVATE=00000000-0000-0000-0000-000000000000\\{i:08x}": {"sent": i, "received": 0, "messages": 1}
        for i in range(5000)
    }
    snapshot = {"uptime_s": 1.0, "queues": queues, "held": 0}
    whole = json.dumps(snapshot)
    assert stats_text(snapshot, len(whole)) == whole  # fits: unchanged
    text = stats_text(snapshot, 50_000)
    assert len(text) <= 50_000
    out = json.loads(text)
    kept = out["queues"]
    assert 0 < len(kept) < 5000 and out["queues_omitted"] == 5000 - len(kept)
    assert min(c["sent"] for c in kept.values()) > max(
        c["sent"] for n, c in queues.items() if n not in kept
    )  # the busiest first
    assert out["uptime_s"] == 1.0 and out["held"] == 0


def _system_format_names(client: object) -> list[str]:
    guid = str(client.guid)  # type: ignore[attr-defined]
    return [f"MACHINE={guid};{kind}" for kind in ("DEADLETTER", "DEADXACT", "JOURNAL")]
