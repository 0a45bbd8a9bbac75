"""Salvage of a store whose database is damaged (``pymsmq.qm.store.salvage``): every row SQLite can
still read, whole, is copied into a new store that opens; nothing damaged is delivered."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_contents import BIG, ORDERS, contents, fill

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.hresult import HResult
from pymsmq.qm.store.backup import check
from pymsmq.qm.store.salvage import salvage

FAILED = HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
WORK = r".\private$\work"
SENT = 3000


def _database(data: Path) -> Path:
    return data / "pymsmq.db"


def _pages(data: Path, table: str, kind: str) -> list[int]:
    """The page numbers of ``table``'s b-tree pages of ``kind`` ('leaf' or 'internal'), in key order."""
    with sqlite3.connect(_database(data)) as db:
        return [
            r[0]
            for r in db.execute(
                "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY path", (table, kind)
            )
        ]


def _smash(data: Path, page: int) -> None:
    """Overwrite page ``page`` (from 1) of the store's database after its first byte (malformed)."""
    with sqlite3.connect(_database(data)) as db:
        size = db.execute("PRAGMA page_size").fetchone()[0]
    with open(_database(data), "r+b") as f:
        f.seek((page - 1) * size + 1)  # the page type byte kept: SQLite reads on into garbage
        f.write(b"\xde\xad\xbe\xef" * 64)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stopped store: ``SENT`` messages in one queue (bodies named by their labels), and a second
    queue with a journal and a big message."""
    data = tmp_path_factory.mktemp("filled") / "qm"
    with QueueManager.open(data) as qm:
        work = qm.create_queue(WORK, label="work")
        work.send_many([Message(body=b"body %d " % i * 20, label=str(i), delivery=1) for i in range(SENT)])
        orders = qm.create_queue(ORDERS, journal=True)
        orders.send(Message(body=b"journaled", delivery=1))
        orders.send(Message(body=b"o" * BIG, label="big", delivery=1))
        assert orders.receive(timeout=0).body == b"journaled"  # a copy in the journal
    return data


def _copy(filled: Path, tmp_path: Path) -> Path:
    data = tmp_path / "damaged"
    shutil.copytree(filled, data)
    return data


def _drain(data: Path, name: str) -> list[Message]:
    with QueueManager.open(data) as qm:
        return qm.queue(name).receive_many(SENT + 10, timeout=0)


def _whole(messages: list[Message]) -> bool:
    return all(m.body == b"body %d " % int(m.label) * 20 for m in messages)


def test_a_whole_store_is_salvaged_as_it_is(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        fill(qm)
        expected = contents(qm)
    summary = salvage(tmp_path / "qm", tmp_path / "new")
    assert (summary.unreadable_ranges, summary.queues_left, summary.messages_left) == (0, 0, 0)
    assert summary.identity_kept and summary.losses == ()
    assert summary.messages == check(tmp_path / "qm").messages
    with QueueManager.open(tmp_path / "new") as qm:
        assert contents(qm) == expected  # identity, queues, journals, subqueues, every message
        q = qm.queue(ORDERS)
        before = max(m.lookup_id for m in q.receive_many(100, timeout=0))
        q.send(Message(body=b"after"))
        assert q.receive(timeout=0).lookup_id > before  # no lookup id issued again


def test_a_damaged_leaf_page_loses_its_messages_only(filled: Path, tmp_path: Path) -> None:
    data = _copy(filled, tmp_path)
    _smash(data, _pages(data, "messages", "leaf")[5])
    with pytest.raises(MSMQError) as refused:
        QueueManager.open(data)
    assert refused.value.hresult == FAILED and "pymsmq salvage" in str(refused.value)
    with pytest.raises(MSMQError, match="pymsmq salvage"):
        check(data)
    summary = salvage(data, tmp_path / "new")
    assert summary.unreadable_ranges == 1 and summary.identity_kept
    assert summary.losses[0].startswith("messages: the rows with keys from queue ")
    lost = SENT + 2 - summary.messages  # (the big message and the journal copy of the orders queue)
    assert 0 < lost < 40  # one leaf page of ~200-byte rows
    got = _drain(tmp_path / "new", WORK)
    assert len(got) == SENT - lost and _whole(got)
    assert len({m.label for m in got}) == len(got)
    labels = sorted(int(m.label) for m in got)
    missing = sorted(set(range(SENT)) - set(labels))
    assert missing == list(range(missing[0], missing[0] + lost))  # one range of keys: the page's
    assert [m.body for m in _drain(tmp_path / "new", ORDERS)] == [b"o" * BIG]
    with pytest.raises(MSMQError):  # the damaged store is left as it is
        QueueManager.open(data)


def test_a_damaged_interior_page_is_stepped_over(filled: Path, tmp_path: Path) -> None:
    data = _copy(filled, tmp_path)
    interior = _pages(data, "messages", "internal")
    assert len(interior) > 2
    _smash(data, interior[1])  # a page of the second level: the leaves under it are out of reach
    summary = salvage(data, tmp_path / "new")
    assert summary.unreadable_ranges >= 1
    got = _drain(tmp_path / "new", WORK)
    assert 0 < len(got) < SENT and _whole(got) and len(got) == summary.messages - 2
    labels = {int(m.label) for m in got}
    assert 0 in labels or SENT - 1 in labels  # rows on both sides of the damage... at least one side
    assert max(labels) == SENT - 1  # the scan went on past the damaged page


def test_a_damaged_queue_row_refuses_the_open_and_salvage_leaves_that_queue(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        fill(qm)
        kept = qm.queue(r".\private$\ledger").message_count
    with sqlite3.connect(_database(tmp_path / "qm")) as db:
        db.execute("UPDATE queues SET properties = '{\"label\": 7' WHERE path_name LIKE '%orders'")
    with pytest.raises(MSMQError, match=r"orders.*not JSON.*pymsmq salvage") as refused:
        QueueManager.open(tmp_path / "qm")
    assert refused.value.hresult == FAILED
    with pytest.raises(MSMQError, match=r"orders.*not JSON.*pymsmq salvage"):
        check(tmp_path / "qm")
    summary = salvage(tmp_path / "qm", tmp_path / "new")
    assert summary.queues_left == 2  # the queue and its journal (whose queue is gone)
    assert summary.messages_left == 40 - 1 + 3 + 1  # the queue's messages, its journal's, its subqueue's
    assert any("a journal whose queue" in loss for loss in summary.losses)
    with QueueManager.open(tmp_path / "new") as qm:
        assert not qm.queue_exists(ORDERS)
        assert qm.queue(r".\private$\ledger").message_count == kept == 1
        again = qm.create_queue(ORDERS)  # a new queue id: none is issued twice
        again.send(Message(body=b"new"))
        assert again.receive(timeout=0).body == b"new"


def test_a_journal_whose_queue_is_gone_refuses_the_open_and_the_check(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        fill(qm)
    with sqlite3.connect(_database(tmp_path / "qm")) as db:
        db.execute("DELETE FROM queues WHERE path_name LIKE '%orders'")
    with pytest.raises(MSMQError, match=r"a journal whose queue \(\d+\) is not in the store.*pymsmq salvage"):
        QueueManager.open(tmp_path / "qm")
    with pytest.raises(
        MSMQError, match=r"queue \d+ .*JOURNAL.*a journal whose queue \(\d+\) is not in the store"
    ):
        check(tmp_path / "qm")


def test_a_lost_identity_gives_the_new_store_a_new_one_and_no_queue_id_twice(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        fill(qm)
        old_guid = qm.guid
    with sqlite3.connect(_database(tmp_path / "qm")) as db:
        db.execute("DELETE FROM meta")
        ids = [r[0] for r in db.execute("SELECT queue_id FROM queues")]
    summary = salvage(tmp_path / "qm", tmp_path / "new")
    assert not summary.identity_kept and summary.messages_left == 0
    with QueueManager.open(tmp_path / "new") as qm:
        assert qm.guid != old_guid
        assert len(qm.queue(ORDERS).receive_many(100, timeout=0)) == 40 - 1 + 3 - 1  # (one in ;held)
        qm.create_queue(r".\private$\fresh")
    with sqlite3.connect(_database(tmp_path / "new")) as db:
        (fresh,) = db.execute("SELECT queue_id FROM queues WHERE path_name LIKE '%fresh'").fetchone()
    assert fresh > max(ids)


def test_damaged_packets_and_rows_of_the_wrong_types_are_left_behind(filled: Path, tmp_path: Path) -> None:
    data = _copy(filled, tmp_path)
    with sqlite3.connect(_database(data)) as db:
        (name,) = db.execute("SELECT external FROM messages WHERE external IS NOT NULL").fetchone()
        keys = db.execute(
            "SELECT queue_id, lookup_id FROM messages WHERE queue_id = "
            "(SELECT queue_id FROM queues WHERE path_name LIKE '%work') LIMIT 2"
        ).fetchall()
        db.execute("UPDATE messages SET priority = 'x' WHERE queue_id = ? AND lookup_id = ?", keys[0])
        (packet,) = db.execute(
            "SELECT packet FROM messages WHERE queue_id = ? AND lookup_id = ?", keys[1]
        ).fetchone()
        db.execute(
            "UPDATE messages SET packet = ? WHERE queue_id = ? AND lookup_id = ?",
            (packet[:60] + bytes([packet[60] ^ 1]) + packet[61:], *keys[1]),
        )
    with open(data / "pymsmq.db.packets" / name, "r+b") as f:
        f.seek(BIG // 2)
        f.write(b"X")
    summary = salvage(data, tmp_path / "new")
    assert summary.messages_left == 3 and summary.unreadable_ranges == 0
    text = " ".join(summary.losses)
    assert "not of their types" in text and "its packet is damaged" in text and f"packet file {name}" in text
    got = _drain(tmp_path / "new", WORK)
    assert len(got) == SENT - 2 and _whole(got)
    assert _drain(tmp_path / "new", ORDERS) == []
    assert os.listdir(tmp_path / "new" / "pymsmq.db.packets") == []


def test_nothing_is_salvaged_from_a_database_whose_first_page_is_damaged(
    filled: Path, tmp_path: Path
) -> None:
    data = _copy(filled, tmp_path)
    with open(_database(data), "r+b") as f:
        f.write(b"not a database at all" * 10)
    with pytest.raises(MSMQError, match="nothing can be salvaged") as refused:
        salvage(data, tmp_path / "new")
    assert refused.value.hresult == FAILED
    assert not (tmp_path / "new").exists()  # nothing made


def test_salvage_is_refused_while_a_queue_manager_holds_the_store_or_into_a_used_directory(
    filled: Path, tmp_path: Path
) -> None:
    data = _copy(filled, tmp_path)
    with QueueManager.open(data), pytest.raises(MSMQError) as held:
        salvage(data, tmp_path / "new")
    assert held.value.hresult == FAILED and not (tmp_path / "new").exists()
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("mine")
    with pytest.raises(MSMQError, match="not an empty directory") as used:
        salvage(data, tmp_path / "used")
    assert used.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    assert os.listdir(tmp_path / "used") == ["keep.txt"]
    with pytest.raises(MSMQError, match="holds no pymsmq store"):
        salvage(tmp_path / "used", tmp_path / "new")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pages=st.lists(st.integers(min_value=2, max_value=10_000), min_size=1, max_size=4),
    offset=st.integers(1, 4000),
)
def test_whatever_pages_are_damaged_the_salvaged_store_opens_and_delivers_only_whole_messages(
    filled: Path, tmp_path_factory: pytest.TempPathFactory, pages: list[int], offset: int
) -> None:
    base = tmp_path_factory.mktemp("random")
    data = _copy(filled, base)
    size = os.path.getsize(_database(data))
    with open(_database(data), "r+b") as f:
        for page in pages:
            at = ((page - 1) * 4096 + offset) % size
            f.seek(max(at, 100))
            f.write(os.urandom(48))
    try:
        summary = salvage(data, base / "new")
    except MSMQError as exc:
        assert "nothing can be salvaged" in str(exc)  # the schema's page: the only refusal
        return
    with QueueManager.open(base / "new") as qm:
        got = qm.queue(WORK).receive_many(SENT + 10, timeout=0) if qm.queue_exists(WORK) else []
    assert _whole(got) and len(got) <= SENT
    assert len(got) + summary.messages_left <= SENT + 2


@pytest.mark.parametrize("bad", ["0.5", "1e300", "'text'", "x'0102'"])
def test_a_row_whose_key_is_not_integers_is_left_and_the_scan_goes_on(
    filled: Path, tmp_path: Path, bad: str
) -> None:
    # Outside QA: one bit of a row's key type (an integer read as a real) stopped the scan there:
    # 1,000 of 1,500 messages lost, counted nowhere, exit 0.
    data = _copy(filled, tmp_path)
    with sqlite3.connect(_database(data)) as db:
        (work,) = db.execute("SELECT queue_id FROM queues WHERE path_name LIKE '%work'").fetchone()
        (lid,) = db.execute(
            "SELECT lookup_id FROM messages WHERE queue_id = ? ORDER BY lookup_id LIMIT 1 OFFSET 700", (work,)
        ).fetchone()
        db.execute(f"UPDATE messages SET lookup_id = {bad} WHERE queue_id = ? AND lookup_id = ?", (work, lid))
    summary = salvage(data, tmp_path / "new")
    assert summary.messages_left == 1 and summary.messages == SENT - 1 + 2
    assert any("key is not integers" in loss for loss in summary.losses)
    got = _drain(tmp_path / "new", WORK)
    assert len(got) == SENT - 1 and _whole(got)
    assert [m.body for m in _drain(tmp_path / "new", ORDERS)] == [b"o" * BIG]  # the queue after it


def test_a_lost_message_id_counter_gives_a_new_identity_not_an_id_twice(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        qm.create_queue(WORK).send(Message(body=b"old", delivery=1))
        old_guid = qm.guid
    with sqlite3.connect(_database(tmp_path / "qm")) as db:
        db.execute("UPDATE meta SET value = CAST(value AS BLOB) WHERE key = 'ordinal_reserved'")
    with pytest.raises(MSMQError, match=r"ordinal_reserved.*pymsmq salvage"):
        QueueManager.open(tmp_path / "qm")  # the open refuses it too (it raised a ValueError)
    summary = salvage(tmp_path / "qm", tmp_path / "new")
    assert not summary.identity_kept
    with QueueManager.open(tmp_path / "new") as qm:
        q = qm.queue(WORK)
        q.send(Message(body=b"new"))
        old, new = q.receive_many(2, timeout=0)
        assert qm.guid != old_guid and old.id != new.id and old.body == b"old"


@pytest.mark.parametrize(
    ("key", "value"),
    [("qm_guid", None), ("qm_guid", "'not a guid'"), ("next_queue_id", "'2'"), ("machine_quota", "'lots'")],
)
def test_damaged_meta_refuses_the_open_and_the_check(tmp_path: Path, key: str, value: str | None) -> None:
    # Outside QA: with its qm_guid lost the store opened as a new one and gave out queue ids over
    # its queues (a queue's message ended in the dead-letter queue); bad values raised ValueError.
    with QueueManager.open(tmp_path / "qm", machine_quota=100) as qm:
        qm.create_queue(WORK).send(Message(body=b"kept", delivery=1))
    with sqlite3.connect(_database(tmp_path / "qm")) as db:
        if value is None:
            db.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            db.execute(f"UPDATE meta SET value = {value} WHERE key = ?", (key,))
    with pytest.raises(MSMQError, match=r"cannot load the store.*pymsmq salvage") as refused:
        QueueManager.open(tmp_path / "qm")
    assert refused.value.hresult == FAILED
    with pytest.raises(MSMQError, match="pymsmq salvage"):
        check(tmp_path / "qm")
    summary = salvage(tmp_path / "qm", tmp_path / "new")
    assert summary.identity_kept == (key in ("next_queue_id", "machine_quota"))
    with QueueManager.open(tmp_path / "new") as qm:
        assert qm.queue(WORK).receive(timeout=0).body == b"kept"
        assert qm.machine_quota is None if key == "machine_quota" else qm.machine_quota == 100
        qm.create_queue(r".\private$\another")  # a queue id no other queue has
        assert qm.queue(WORK).message_count == 0 and qm.queue_exists(r".\private$\another")


def test_salvage_leaves_the_store_and_its_wal_as_they_were(tmp_path: Path) -> None:
    # Outside QA: SQLite replayed the source's WAL into its damaged database and removed it (with
    # commits a damaged WAL still held).  A killed sender leaves a WAL behind.
    import hashlib
    import textwrap

    child = textwrap.dedent(
        """
        import sys, pymsmq
        qm = pymsmq.QueueManager.open(sys.argv[1])
        q = qm.create_queue(r".\\private$\\work")
        q.send_many([pymsmq.Message(body=b"w%d" % i, label=str(i), delivery=1) for i in range(300)])
        print("SENT", flush=True)
        import time; time.sleep(60)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child, str(tmp_path / "qm")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "SENT"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert os.path.getsize(str(_database(tmp_path / "qm")) + "-wal") > 0

    def files() -> dict[str, str]:
        return {
            name: hashlib.sha256((tmp_path / "qm" / name).read_bytes()).hexdigest()
            for name in sorted(os.listdir(tmp_path / "qm"))
            if (tmp_path / "qm" / name).is_file() and name != "pymsmq.db.lock"  # (salvage's own lock)
        }

    before = files()
    summary = salvage(tmp_path / "qm", tmp_path / "new")
    assert files() == before  # byte for byte, the WAL included
    assert summary.messages == 300
    assert sorted(os.listdir(tmp_path / "new")) == ["pymsmq.db", "pymsmq.db.packets"]


def test_salvage_into_the_store_itself_is_refused(filled: Path, tmp_path: Path) -> None:
    data = _copy(filled, tmp_path)
    for inside in (data / "inside", data / "pymsmq.db.packets" / "x", data):
        with pytest.raises(MSMQError, match="inside the store") as refused:
            salvage(data, inside)
        assert refused.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    assert not (data / "inside").exists() and not (data / "pymsmq.db.packets" / "x").exists()


def test_rows_a_queue_manager_could_not_reach_are_left_behind(filled: Path, tmp_path: Path) -> None:
    # Outside QA: a second queue of one path, a message in a bad subqueue and a row with no
    # checksum naming another message's packet file were copied (the last delivered twice).
    data = _copy(filled, tmp_path)
    with sqlite3.connect(_database(data)) as db:
        (work,) = db.execute("SELECT queue_id FROM queues WHERE path_name LIKE '%work'").fetchone()
        path, props = db.execute(
            "SELECT path_name, properties FROM queues WHERE queue_id = ?", (work,)
        ).fetchone()
        db.execute("INSERT INTO queues VALUES (?, ?, ?)", (1000, path.upper(), props))
        keys = db.execute("SELECT lookup_id FROM messages WHERE queue_id = ? LIMIT 2", (work,)).fetchall()
        db.execute(
            "UPDATE messages SET subqueue = 'bad;name' WHERE queue_id = ? AND lookup_id = ?",
            (work, keys[0][0]),
        )
        (name,) = db.execute("SELECT external FROM messages WHERE external IS NOT NULL").fetchone()
        db.execute(
            "UPDATE messages SET external = ?, packet = x'', packet_crc = NULL "
            "WHERE queue_id = ? AND lookup_id = ?",
            (name, work, keys[1][0]),
        )
    with pytest.raises(MSMQError, match="has the same path"):
        check(data)
    summary = salvage(data, tmp_path / "new")
    assert summary.queues_left == 1 and summary.messages_left == 2
    text = " ".join(summary.losses)
    assert "has the same path" in text and "subqueue" in text and f"packet file {name} is shared" in text
    got = _drain(tmp_path / "new", WORK)
    assert len(got) == SENT - 2 and _whole(got)
    assert [m.body for m in _drain(tmp_path / "new", ORDERS)] == [b"o" * BIG]  # once


def test_a_store_without_its_message_id_counter_goes_on_from_its_messages_ids(tmp_path: Path) -> None:
    # Outside QA: with the ordinal_reserved row gone (it is written with the first id), the open
    # and a salvage gave a new message the id of one still in the queue.
    with QueueManager.open(tmp_path / "qm") as qm:
        q = qm.create_queue(WORK)
        q.send_many([Message(body=b"old %d" % i, delivery=1) for i in range(3)])
    with sqlite3.connect(_database(tmp_path / "qm")) as db:
        db.execute("DELETE FROM meta WHERE key = 'ordinal_reserved'")
    salvage(tmp_path / "qm", tmp_path / "new")
    for data in (tmp_path / "qm", tmp_path / "new"):
        with QueueManager.open(data) as qm:
            q = qm.queue(WORK)
            q.send(Message(body=b"new", delivery=1))
            ids = [m.id for m in q.receive_many(5, timeout=0)]
            assert len(set(ids)) == 4
