"""``pymsmq stats``: counts and bytes per queue (system queues and journals too), totals, rates."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from pymsmq import Message, QueueManager
from pymsmq.cli import main

ORDERS = r".\private$\orders"


def run(data: str, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--data", data], env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})


def journal_of(data: str) -> tuple[int, int]:
    """(messages, bytes) in the orders journal, as the library reports them (journaling may be off)."""
    with QueueManager.open(data) as qm, qm.queue(ORDERS) as q, q.journal as j:
        n = j.message_count
    return n, 9 * n  # the journal copy: body "12345" (5) + label "ab" in UTF-16 (4), as orders counts 3 + 4


def make(tmp_path: Path) -> str:
    data = str(tmp_path / "qm")
    with QueueManager.open(data, machine_name="box") as qm:
        q = qm.create_queue(ORDERS, journal=True)
        for body in (b"12345", b"123"):
            q.send(Message(body=body, label="ab", delivery=1))
        q.receive(timeout=0)  # one message to the journal
        t = qm.create_queue(r".\private$\tx", transactional=True)
        t.send(Message(body=b"x" * 10, delivery=1), 3)
        q.close()
        t.close()
    return data


def test_stats_json(tmp_path: Path) -> None:
    data = make(tmp_path)
    r = run(data, "stats", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["machine_name"] == "box" and s["queues"] == 2 and s["queue_manager"] == data
    per = {q["path_name"]: q for q in s["per_queue"]}
    orders, tx = per[r"box\private$\orders"], per[r"box\private$\tx"]
    journal_messages, journal_bytes = journal_of(data)
    assert (orders["messages"], orders["bytes"], orders["journal_messages"]) == (1, 3 + 4, journal_messages)
    assert (tx["messages"], tx["bytes"]) == (1, 10)
    assert len(per) == 5  # + dead-letter, transactional dead-letter, machine journal
    assert s["messages"] == 2
    assert s["bytes"] == 7 + 10 + journal_bytes  # journal copies count against the machine quota too


def test_stats_table_and_rate(tmp_path: Path) -> None:
    data = make(tmp_path)
    r = run(data, "stats")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == f"queue manager: {data} (box)"
    journal_messages, journal_bytes = journal_of(data)
    assert lines[1] == (
        f"queues: 2  messages: 2  journal messages: {journal_messages}  bytes: {17 + journal_bytes}"
        " (journals included)"
    )
    assert lines[3].split() == ["QUEUE", "MESSAGES", "BYTES", "JOURNAL"]
    assert any(line.split() == [r"box\private$\orders", "1", "7", str(journal_messages)] for line in lines)
    r = run(data, "stats", "--interval", "0.01", "--json")
    assert r.exit_code == 0
    assert all(q["rate"] == 0 for q in json.loads(r.stdout)["per_queue"])
    assert run(data, "stats", "--interval", "0").exit_code == 2
