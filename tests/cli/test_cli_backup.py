"""``pymsmq backup`` of a store a real ``pymsmq serve`` works on, ``pymsmq restore``, ``pymsmq
salvage``."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _serve import serving
from click.testing import CliRunner, Result

from pymsmq import Message, QueueManager
from pymsmq.cli import main
from pymsmq.client import connect
from pymsmq.qm.store import BIG_PACKET

ORDERS = r".\private$\orders"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    with serving(tmp_path / "qm") as url:
        yield tmp_path / "qm", url


def test_a_backup_of_a_served_store_under_load_holds_a_prefix_of_the_sends(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    # One client sends numbered recoverable messages, every fifth one big (its own file), one at a
    # time: a backup taken meanwhile is one instant of the store, so it holds messages 0..k-1.
    data, url = served
    client = connect(url)
    q = client.create_queue(ORDERS)
    stop = threading.Event()
    sent = [0]

    def load() -> None:
        while not stop.is_set():
            n = sent[0]
            q.send(Message(body=b"%08d" % n + (b"b" * BIG_PACKET if n % 5 == 0 else b""), delivery=1))
            sent[0] = n + 1

    worker = threading.Thread(target=load)
    worker.start()
    try:
        while sent[0] < 20:
            threading.Event().wait(0.01)
        r = run("backup", "--data", str(data), str(tmp_path / "backup"))
    finally:
        stop.set()
        worker.join(30)
        client.close()
    assert r.exit_code == 0, r.output
    match = re.fullmatch(
        r"pymsmq: backed up (\d+) messages in \d+ queues \([\d.]+ MB\) from .* to .*\n", r.output
    )
    assert match
    held = int(match.group(1))
    assert 20 <= held <= sent[0]
    r = run("restore", str(tmp_path / "backup"), "--data", str(tmp_path / "restored"))
    assert r.exit_code == 0 and f"restored {held} messages" in r.output, r.output
    with QueueManager.open(tmp_path / "restored") as qm:
        bodies = [m.body for m in qm.queue(ORDERS).receive_many(100_000, timeout=0)]
    assert [int(b[:8]) for b in bodies] == list(range(held))
    assert all(len(b) == 8 + (BIG_PACKET if i % 5 == 0 else 0) for i, b in enumerate(bodies))


def test_restore_into_a_served_store_is_refused_and_changes_nothing(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    data, url = served
    with connect(url) as client:
        client.create_queue(ORDERS).send(Message(body=b"live", delivery=1))
        assert run("backup", "--data", str(data), str(tmp_path / "backup")).exit_code == 0
        r = run("restore", str(tmp_path / "backup"), "--data", str(data), "--replace")
        assert r.exit_code == 1 and "in use by another queue manager" in r.output
        assert r.output.count("MQ_ERROR_MESSAGE_STORAGE_FAILED") == 1
        assert client.queue(ORDERS).receive(timeout=0).body == b"live"


def test_backup_and_restore_bad_paths_give_one_line_and_exit_code_2(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        qm.create_queue(ORDERS).send(Message(body=b"one", delivery=1))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    (tmp_path / "file").write_text("x")
    cases = {
        ("backup", "--data", str(tmp_path / "qm"), str(tmp_path / "full")): "not an empty directory",
        ("backup", "--data", str(tmp_path / "nothing"), str(tmp_path / "b")): "holds no pymsmq store",
        ("backup", "--data", str(tmp_path / "qm"), str(tmp_path / "file")): "is a file",
        ("restore", str(tmp_path / "nothing"), "--data", str(tmp_path / "r")): "does not exist",
        ("restore", str(tmp_path / "full"), "--data", str(tmp_path / "r")): "holds no pymsmq store",
    }
    for args, text in cases.items():
        r = run(*args)
        assert r.exit_code == 2 and text in r.output, (args, r.output)
    assert run("backup", "--data", str(tmp_path / "qm"), str(tmp_path / "b")).exit_code == 0
    r = run("restore", str(tmp_path / "b"), "--data", str(tmp_path / "qm"))
    assert r.exit_code == 2 and "--replace" in r.output
    r = run("restore", str(tmp_path / "b"), "--data", str(tmp_path / "file"))
    assert r.exit_code == 2 and "not a directory" in r.output
    assert not (tmp_path / "r").exists() and os.listdir(tmp_path / "full") == ["x"]
    r = run("restore", str(tmp_path / "b"), "--data", str(tmp_path / "qm"), "--replace")
    assert r.exit_code == 0 and "restored 1 message in" in r.output


@pytest.mark.parametrize("command", ["backup", "restore", "salvage"])
def test_help_has_an_example(command: str) -> None:
    r = run(command, "--help")
    assert r.exit_code == 0 and "Example:" in r.output and "pymsmq restore" in r.output


def test_damaged_messages_are_named_and_exit_4_after_a_whole_backup_and_restore(tmp_path: Path) -> None:
    # A message damaged on disk no longer makes every backup fail (outside QA): the backup and
    # the restore are done, the damage is named on stderr and the exit code (4) says so.
    import sqlite3

    with QueueManager.open(tmp_path / "qm") as qm:
        q = qm.create_queue(ORDERS)
        q.send(Message(body=b"good", delivery=1))
        q.send(Message(body=b"rots", delivery=1))
    with sqlite3.connect(tmp_path / "qm" / "pymsmq.db") as conn:
        [(lookup, packet)] = conn.execute(
            "SELECT lookup_id, packet FROM messages WHERE instr(packet, CAST('rots' AS BLOB))"
        )
        conn.execute(
            "UPDATE messages SET packet = ? WHERE lookup_id = ?", (packet.replace(b"rots", b"rats"), lookup)
        )
    r = run("backup", "--data", str(tmp_path / "qm"), str(tmp_path / "backup"))
    assert r.exit_code == 4, r.output
    assert "pymsmq: backed up 2 messages" in r.stdout
    assert re.search(r"pymsmq: damaged: message \d+ of queue \d+: its packet is damaged", r.stderr)
    assert "1 message(s) damaged on disk" in r.stderr and "a purge of their queue removes them" in r.stderr
    r = run("restore", str(tmp_path / "backup"), "--data", str(tmp_path / "restored"))
    assert r.exit_code == 4 and "pymsmq: restored 2 messages" in r.stdout and "damaged" in r.stderr
    with QueueManager.open(tmp_path / "restored") as qm:
        assert [m.body for m in qm.queue(ORDERS).receive_many(5, timeout=0)] == [b"good"]
    r = run("backup", "--help")
    assert "4 (backup, restore, salvage) done, with damaged or lost" in r.output


def test_salvage_copies_a_damaged_store_names_what_it_left_and_the_copy_serves(tmp_path: Path) -> None:
    import sqlite3

    with QueueManager.open(tmp_path / "qm") as qm:
        q = qm.create_queue(ORDERS)
        q.send_many([Message(body=b"%d" % i, delivery=1) for i in range(5)])
    r = run("salvage", "--data", str(tmp_path / "qm"), str(tmp_path / "whole"))
    assert r.exit_code == 0 and "pymsmq: salvaged 5 messages in" in r.stdout and r.stderr == ""
    with sqlite3.connect(tmp_path / "qm" / "pymsmq.db") as conn:
        conn.execute(
            "UPDATE messages SET priority = 'x' WHERE lookup_id = (SELECT max(lookup_id) FROM messages)"
        )
    r = run("salvage", "--data", str(tmp_path / "qm"), str(tmp_path / "new"))
    assert r.exit_code == 4, r.output
    assert "pymsmq: salvaged 4 messages in" in r.stdout
    assert re.search(
        r"pymsmq: left behind: message \d+ of queue \d+: its stored facts are not of their types", r.stderr
    )
    assert "0 damaged range(s) of rows could not be read; 0 queue(s) and 1 message(s)" in r.stderr
    r = run("restore", str(tmp_path / "new"), "--data", str(tmp_path / "qm"), "--replace")
    assert r.exit_code == 0, r.output
    with QueueManager.open(tmp_path / "qm") as qm:
        assert [m.body for m in qm.queue(ORDERS).receive_many(9, timeout=0)] == [b"0", b"1", b"2", b"3"]
    r = run("salvage", "--data", str(tmp_path / "qm"), str(tmp_path / "new"))
    assert r.exit_code == 2 and "not an empty directory" in r.output
    r = run("salvage", "--data", str(tmp_path / "nothing"), str(tmp_path / "n"))
    assert r.exit_code == 2 and "holds no pymsmq store" in r.output


def test_salvage_names_a_dropped_machine_quota_and_exits_4(tmp_path: Path) -> None:
    # Outside QA: a machine quota that is not a number was dropped with exit 0 and no word.
    import sqlite3

    with QueueManager.open(tmp_path / "qm", machine_quota=50) as qm:
        qm.create_queue(ORDERS).send(Message(body=b"kept", delivery=1))
    with sqlite3.connect(tmp_path / "qm" / "pymsmq.db") as conn:
        conn.execute("UPDATE meta SET value = 'lots' WHERE key = 'machine_quota'")
    r = run("salvage", "--data", str(tmp_path / "qm"), str(tmp_path / "new"))
    assert r.exit_code == 4, r.output
    assert "pymsmq: left behind: meta: the machine quota 'lots' is not a whole number" in r.stderr
