"""One contract suite for every ``Store`` backend (``qm/store/base.py``): memory and SQLite.

Every rule of base.py is checked against both backends through the ``store`` fixture; the few
SQLite-only facts (reopen shows the committed state, packet files, group commit) follow at the end.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.store import (
    BIG_PACKET,
    Batch,
    MemoryStore,
    MessageKey,
    MessageUpdate,
    QueueRow,
    SQLiteStore,
    Store,
    StoredMessage,
    open_store,
)

U64 = (1 << 64) - 1


def _open(kind: str, path: Path) -> MemoryStore | SQLiteStore:
    return MemoryStore() if kind == "memory" else SQLiteStore(path / "store.db")


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore | SQLiteStore]:
    s = _open(request.param, tmp_path)
    yield s
    s.close()


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def msg(qid: int, lid: int, packet: bytes | None = None, **kw: object) -> StoredMessage:
    data = packet if packet is not None else f"packet {qid}/{lid}".encode()
    return StoredMessage(qid, lid, data, **kw)  # type: ignore[arg-type]


def full_state(s: Store) -> tuple[dict[str, str], list[QueueRow], dict[int, int], list[StoredMessage]]:
    """The loaded snapshot with every packet resolved (big ones come back as b"" from load)."""
    snap = s.load()
    messages = []
    for m in snap.messages:
        packet = m.packet or s.read_packet(m.key)
        messages.append(
            StoredMessage(
                m.queue_id,
                m.lookup_id,
                packet,
                m.priority,
                m.arrived_time,
                m.subqueue,
                m.abort_count,
                m.move_count,
                m.expires_at,
                m.last_move_time,
            )
        )
    return snap.meta, snap.queues, snap.last_lookup_ids, messages


def storage_failed(exc: pytest.ExceptionInfo[MSMQError]) -> bool:
    return exc.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED


# -- basic reads and writes -----------------------------------------------------------------------


def test_empty_store_loads_nothing(store: Store) -> None:
    snap = store.load()
    assert (snap.meta, snap.queues, snap.last_lookup_ids, list(snap.messages)) == ({}, [], {}, [])


def test_queues_upsert_replace_and_properties_are_copies(store: Store) -> None:
    store.apply(Batch(upsert_queues=[QueueRow(2, r".\private$\b", {"label": "b", "quota": 10})]))
    store.apply(Batch(upsert_queues=[QueueRow(1, r".\private$\a", {"journal": True, "tags": [1, "x"]})]))
    store.apply(Batch(upsert_queues=[QueueRow(2, r".\private$\b2", {"label": "new"})]))
    queues = store.load().queues
    assert queues == [
        QueueRow(1, r".\private$\a", {"journal": True, "tags": [1, "x"]}),
        QueueRow(2, r".\private$\b2", {"label": "new"}),
    ]
    queues[0].properties["journal"] = False
    assert store.load().queues[0].properties["journal"] is True


def test_messages_load_in_queue_then_lookup_order_with_every_field(store: Store) -> None:
    m1 = msg(
        2, 7, priority=7, arrived_time=1.5, subqueue="poison", abort_count=2, move_count=3, expires_at=9.25
    )
    m2 = msg(1, 9, priority=0, arrived_time=2.0)
    m3 = msg(1, 3, priority=3, arrived_time=3.0, expires_at=None)
    store.apply(Batch(insert=[m1, m2]))
    store.apply(Batch(insert=[m3]))
    assert list(store.load().messages) == [m3, m2, m1]


def test_read_packet_and_read_packets_in_key_order(store: Store) -> None:
    ms = [msg(1, i, priority=1, arrived_time=0.0) for i in range(1, 6)]
    store.apply(Batch(insert=ms))
    assert store.read_packet(MessageKey(1, 4)) == b"packet 1/4"
    keys = [MessageKey(1, 5), MessageKey(1, 1), MessageKey(1, 3)]
    assert store.read_packets(keys) == [b"packet 1/5", b"packet 1/1", b"packet 1/3"]
    assert store.read_packets([]) == []
    with pytest.raises(KeyError):
        store.read_packet(MessageKey(1, 99))
    with pytest.raises(KeyError):
        store.read_packets([MessageKey(1, 1), MessageKey(2, 1)])


def test_meta_upsert(store: Store) -> None:
    store.apply(Batch(meta={"qm_guid": "g1", "machine": "m"}))
    store.apply(Batch(meta={"qm_guid": "g2"}))
    assert store.load().meta == {"qm_guid": "g2", "machine": "m"}


def test_empty_batch_is_a_no_op(store: Store) -> None:
    store.apply(Batch())
    assert list(store.load().messages) == []
    assert getattr(store, "commits") == 0  # noqa: B009 - both backends count commits


# -- updates, deletes, queue deletes -------------------------------------------------------------


def test_updates_change_only_given_fields(store: Store) -> None:
    store.apply(
        Batch(insert=[msg(1, 1, priority=4, arrived_time=5.0, subqueue="a", abort_count=1, move_count=1)])
    )
    store.apply(Batch(update=[MessageUpdate(MessageKey(1, 1), abort_count=2)]))
    (m,) = store.load().messages
    assert (m.subqueue, m.abort_count, m.move_count) == ("a", 2, 1)
    store.apply(Batch(update=[MessageUpdate(MessageKey(1, 1), subqueue="", move_count=5)]))
    (m,) = store.load().messages
    assert (m.subqueue, m.abort_count, m.move_count, m.priority, m.packet) == ("", 2, 5, 4, b"packet 1/1")
    assert m.last_move_time is None
    store.apply(Batch(update=[MessageUpdate(MessageKey(1, 1), last_move_time=1234.5)]))
    (m,) = store.load().messages
    assert (m.subqueue, m.move_count, m.last_move_time) == ("", 5, 1234.5)
    store.apply(Batch(update=[MessageUpdate(MessageKey(1, 1), abort_count=0)]))  # kept when not given
    assert next(iter(store.load().messages)).last_move_time == 1234.5
    # An update or delete of an absent message is a no-op.
    store.apply(Batch(update=[MessageUpdate(MessageKey(1, 2), abort_count=9)], delete=[MessageKey(3, 3)]))
    assert [m.key for m in store.load().messages] == [MessageKey(1, 1)]
    with pytest.raises(MSMQError) as nan:
        store.apply(Batch(update=[MessageUpdate(MessageKey(1, 1), last_move_time=float("nan"))]))
    assert storage_failed(nan)


def test_a_moved_message_is_stored_with_its_last_move_time(store: Store) -> None:
    # A message inserted already moved (a move to another queue keeps nothing, but a restore or
    # an import of a store row does): the row form with every value, big packets too.
    big = b"m" * (BIG_PACKET + 1)
    store.apply(
        Batch(
            insert=[
                msg(1, 1, priority=0, arrived_time=1.0, subqueue="retry", move_count=1, last_move_time=99.25),
                msg(1, 2, big, priority=0, arrived_time=1.0, last_move_time=7.0, move_count=3),
                msg(1, 3, priority=0, arrived_time=1.0),
            ]
        )
    )
    got = {m.lookup_id: (m.subqueue, m.move_count, m.last_move_time) for m in store.load().messages}
    assert got == {1: ("retry", 1, 99.25), 2: ("", 3, 7.0), 3: ("", 0, None)}


def test_delete_removes_only_the_given_messages(store: Store) -> None:
    store.apply(Batch(insert=[msg(1, i, priority=0, arrived_time=0.0) for i in range(1, 5)]))
    store.apply(Batch(delete=[MessageKey(1, 2), MessageKey(1, 4)]))
    assert [m.lookup_id for m in store.load().messages] == [1, 3]
    with pytest.raises(KeyError):
        store.read_packet(MessageKey(1, 2))


@pytest.mark.parametrize("count", [2, 5, 85, 341, 600])
def test_one_batch_deletes_many_messages_of_several_queues(store: Store, count: int) -> None:
    # SQLite deletes such a batch in a few statements of up to 256 keys each: every key must go,
    # absent keys and repeated keys change nothing, the other messages and big packets' files stay.
    big = b"b" * (BIG_PACKET + 1)
    store.apply(
        Batch(
            insert=[
                msg(q, lid, big if lid % 97 == 0 else None, priority=3, arrived_time=0.0)
                for q in (1, 2)
                for lid in range(1, 701)
            ]
        )
    )
    gone = [MessageKey(1 + i % 2, 1 + (i * 7) % 700) for i in range(count)]
    absent = [MessageKey(3, 1), MessageKey(1, 5000)]
    store.apply(Batch(delete=gone + absent + gone[:3]))
    left = {m.key for m in full_state(store)[3]}
    expected = {MessageKey(q, lid) for q in (1, 2) for lid in range(1, 701)} - set(gone)
    assert left == expected
    if isinstance(store, SQLiteStore):
        files = len(list(Path(store.packet_dir).iterdir()))
        assert files == sum(1 for k in expected if k.lookup_id % 97 == 0)


def test_queue_delete_removes_its_messages_and_its_last_lookup_id(store: Store) -> None:
    # Queue ids are never reused: the entry of a deleted queue had no use, and 25,000 deleted
    # queues left 25,000 rows that every open loaded.
    store.apply(Batch(upsert_queues=[QueueRow(1, "a", {}), QueueRow(2, "b", {})]))
    store.apply(
        Batch(
            insert=[msg(1, 1, priority=0, arrived_time=0.0), msg(2, 1, priority=0, arrived_time=0.0)],
            last_lookup_ids={1: 1, 2: 1},
        )
    )
    store.apply(Batch(delete_queues=[1]))
    snap = store.load()
    assert [q.queue_id for q in snap.queues] == [2]
    assert [m.key for m in snap.messages] == [MessageKey(2, 1)]
    assert snap.last_lookup_ids == {2: 1}


def test_order_inside_a_batch(store: Store) -> None:
    # inserts, then updates, then deletes: insert + update in one batch is an updated message,
    # insert + delete is nothing.
    store.apply(
        Batch(
            insert=[msg(1, 1, priority=0, arrived_time=0.0), msg(1, 2, priority=0, arrived_time=0.0)],
            update=[MessageUpdate(MessageKey(1, 1), abort_count=7)],
            delete=[MessageKey(1, 2)],
        )
    )
    assert [(m.lookup_id, m.abort_count) for m in store.load().messages] == [(1, 7)]
    # queue upserts come before queue deletes; inserts into a queue deleted in the same batch vanish.
    store.apply(
        Batch(
            upsert_queues=[QueueRow(5, "q5", {})],
            insert=[msg(5, 1, priority=0, arrived_time=0.0)],
            delete_queues=[5],
        )
    )
    snap = store.load()
    assert [q.queue_id for q in snap.queues] == []
    assert [m.key for m in snap.messages] == [MessageKey(1, 1)]
    # inserts come before deletes: re-inserting a key the same batch deletes is a duplicate.
    with pytest.raises(MSMQError) as exc:
        store.apply(Batch(insert=[msg(1, 1, priority=0, arrived_time=0.0)], delete=[MessageKey(1, 1)]))
    assert storage_failed(exc)


# -- atomicity and failures ----------------------------------------------------------------------


def test_failing_batch_changes_nothing(store: Store) -> None:
    store.apply(Batch(insert=[msg(1, 1, priority=0, arrived_time=0.0)], meta={"k": "v0"}))
    before = full_state(store)
    bad = Batch(
        upsert_queues=[QueueRow(9, "q9", {})],
        insert=[msg(1, 2, priority=0, arrived_time=0.0), msg(1, 1, priority=0, arrived_time=0.0)],
        update=[MessageUpdate(MessageKey(1, 1), abort_count=3)],
        delete=[MessageKey(1, 1)],
        last_lookup_ids={1: 50},
        meta={"k": "v1"},
    )
    with pytest.raises(MSMQError) as exc:
        store.apply(bad)
    assert storage_failed(exc)
    assert full_state(store) == before
    # The store still works afterwards.
    store.apply(Batch(insert=[msg(1, 2, priority=0, arrived_time=0.0)]))
    assert [m.lookup_id for m in store.load().messages] == [1, 2]


@pytest.mark.parametrize(
    "bad",
    [
        Batch(insert=[msg(1, 1, priority=0, arrived_time=0.0), msg(1, 1, priority=0, arrived_time=0.0)]),
        Batch(insert=[msg(1, U64 + 1, priority=0, arrived_time=0.0)]),
        Batch(insert=[msg(1, -1, priority=0, arrived_time=0.0)]),
        Batch(insert=[msg(1 << 63, 1, priority=0, arrived_time=0.0)]),
        Batch(insert=[msg(1, 1, priority=0, arrived_time=float("nan"))]),
        Batch(insert=[msg(1, 1, priority=0, arrived_time=0.0, expires_at=float("nan"))]),
        Batch(insert=[msg(1, 1, priority=0, arrived_time=0.0, last_move_time=float("nan"))]),
        Batch(last_lookup_ids={1: U64 + 1}),
        Batch(delete=[MessageKey(1, U64 + 1)]),
        Batch(upsert_queues=[QueueRow(1, "q", {"x": object()})]),
    ],
    ids=[
        "dup",
        "lookup>u64",
        "lookup<0",
        "queue>i64",
        "nan",
        "nan-expiry",
        "nan-moved",
        "last>u64",
        "del>u64",
        "json",
    ],
)
def test_invalid_batches_fail_with_storage_failed(store: Store, bad: Batch) -> None:
    with pytest.raises(MSMQError) as exc:
        store.apply(bad)
    assert storage_failed(exc)
    assert full_state(store) == ({}, [], {}, [])


def test_full_unsigned_lookup_id_range_keeps_order(store: Store) -> None:
    ids = [U64, 1 << 63, (1 << 63) - 1, 0, 5]
    store.apply(
        Batch(insert=[msg(1, i, priority=0, arrived_time=0.0) for i in ids], last_lookup_ids={1: U64})
    )
    snap = store.load()
    assert [m.lookup_id for m in snap.messages] == sorted(ids)
    assert snap.last_lookup_ids == {1: U64}
    assert store.read_packet(MessageKey(1, U64)) == f"packet 1/{U64}".encode()


def test_last_lookup_ids_never_decrease(store: Store) -> None:
    store.apply(Batch(last_lookup_ids={1: 10, 2: 1 << 63}))
    store.apply(Batch(last_lookup_ids={1: 5, 2: 3}))
    assert store.load().last_lookup_ids == {1: 10, 2: 1 << 63}
    store.apply(Batch(last_lookup_ids={1: 12}))
    assert store.load().last_lookup_ids == {1: 12, 2: 1 << 63}


# -- big packets ---------------------------------------------------------------------------------


def test_big_packets(store: Store) -> None:
    sizes = {1: BIG_PACKET, 2: BIG_PACKET + 1, 3: 4 << 20, 4: 10}
    packets = {lid: os.urandom(n) for lid, n in sizes.items()}
    store.apply(Batch(insert=[msg(1, lid, p, priority=0, arrived_time=0.0) for lid, p in packets.items()]))
    for m in store.load().messages:
        # load() may leave big packets lazy (b""); small ones are always there.
        assert m.packet in (packets[m.lookup_id], b"")
        if len(packets[m.lookup_id]) <= BIG_PACKET:
            assert m.packet == packets[m.lookup_id]
        assert store.read_packet(m.key) == packets[m.lookup_id]
    keys = [MessageKey(1, lid) for lid in (3, 4, 2, 1)]
    assert store.read_packets(keys) == [packets[k.lookup_id] for k in keys]
    store.apply(Batch(delete=[MessageKey(1, 3)]))
    with pytest.raises(KeyError):
        store.read_packet(MessageKey(1, 3))
    assert full_state(store)[3] == [
        msg(1, lid, packets[lid], priority=0, arrived_time=0.0) for lid in (1, 2, 4)
    ]


# -- concurrency ---------------------------------------------------------------------------------


def _run_threads(n: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def wrap(i: int) -> None:
        try:
            target(i)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_concurrent_apply_from_32_threads_all_visible(store: Store) -> None:
    def writer(i: int) -> None:
        for j in range(20):
            store.apply(Batch(insert=[msg(i, j, priority=0, arrived_time=0.0)], last_lookup_ids={i: j}))
            assert store.read_packet(MessageKey(i, j)) == f"packet {i}/{j}".encode()

    _run_threads(32, writer)
    snap = store.load()
    assert [m.key for m in snap.messages] == [MessageKey(i, j) for i in range(32) for j in range(20)]
    assert snap.last_lookup_ids == {i: 19 for i in range(32)}


def test_concurrent_failing_batches_fail_alone(store: Store) -> None:
    store.apply(Batch(insert=[msg(0, j, priority=0, arrived_time=0.0) for j in range(0, 1000, 2)]))
    outcomes: dict[tuple[int, int], bool] = {}
    lock = threading.Lock()

    def writer(i: int) -> None:
        for j in range(i * 20, i * 20 + 20):
            # Even j collide with the messages inserted above.
            try:
                store.apply(Batch(insert=[msg(0, j, priority=1, arrived_time=0.0)], meta={f"w{j}": "x"}))
                ok = True
            except MSMQError as e:
                assert e.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
                ok = False
            with lock:
                outcomes[(i, j)] = ok

    _run_threads(32, writer)
    assert all(ok == (j % 2 == 1) for (_, j), ok in outcomes.items())
    snap = store.load()
    assert snap.meta == {f"w{j}": "x" for j in range(1, 640, 2)}
    by_id = {m.lookup_id: m.priority for m in snap.messages}
    assert by_id == {j: (1 if j % 2 and j < 640 else 0) for j in range(1000) if j % 2 == 0 or j < 640}


# -- close ---------------------------------------------------------------------------------------


def test_close_is_idempotent_and_later_calls_fail_clearly(store: Store) -> None:
    store.apply(Batch(insert=[msg(1, 1, priority=0, arrived_time=0.0)]))
    store.close()
    store.close()
    for call in (
        lambda: store.apply(Batch(insert=[msg(1, 2, priority=0, arrived_time=0.0)])),
        lambda: store.apply(Batch()),
        lambda: store.read_packet(MessageKey(1, 1)),
        lambda: store.read_packets([MessageKey(1, 1)]),
        store.load,
    ):
        with pytest.raises(MSMQError) as exc:
            call()
        assert exc.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
        assert "closed" in str(exc.value)


# -- model-based: random batch sequences give the same state in both backends and in a model ------

_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=8)
_lookup = st.integers(0, 6) | st.sampled_from([U64, 1 << 63])
_qid = st.integers(1, 3)
_message = st.builds(
    StoredMessage,
    queue_id=_qid,
    lookup_id=_lookup,
    packet=st.binary(max_size=40) | st.sampled_from([b"B" * (BIG_PACKET + 1)]),
    priority=st.integers(0, 7),
    arrived_time=st.floats(allow_nan=False),
    subqueue=_text,
    abort_count=st.integers(0, 1 << 40),
    move_count=st.integers(0, 3),
    expires_at=st.none() | st.floats(allow_nan=False),
    last_move_time=st.none() | st.floats(allow_nan=False),
)
_key = st.builds(MessageKey, _qid, _lookup)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 53), 1 << 53) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_batch = st.builds(
    Batch,
    upsert_queues=st.lists(
        st.builds(QueueRow, _qid, _text, st.dictionaries(_text, _json, max_size=3)), max_size=2
    ),
    delete_queues=st.lists(_qid, max_size=1),
    insert=st.lists(_message, max_size=4),
    update=st.lists(
        st.builds(
            MessageUpdate,
            _key,
            st.none() | _text,
            st.none() | st.integers(0, 9),
            st.none() | st.integers(0, 9),
        ),
        max_size=2,
    ),
    delete=st.lists(_key, max_size=3),
    last_lookup_ids=st.dictionaries(_qid, _lookup, max_size=2),
    meta=st.dictionaries(_text, _text, max_size=2),
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batches=st.lists(_batch, min_size=1, max_size=6))
def test_backends_agree_on_random_batches(
    tmp_path_factory: pytest.TempPathFactory, batches: list[Batch]
) -> None:
    mem = MemoryStore()
    sql = SQLiteStore(tmp_path_factory.mktemp("agree") / "s.db")
    try:
        for b in batches:
            results = []
            for s in (mem, sql):
                try:
                    s.apply(b)
                    results.append(None)
                except MSMQError as e:
                    results.append(e.hresult)
            assert results[0] == results[1]
        assert full_state(mem) == full_state(sql)
    finally:
        mem.close()
        sql.close()


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(m=_message)
def test_message_round_trip(tmp_path_factory: pytest.TempPathFactory, m: StoredMessage) -> None:
    for s in (MemoryStore(), SQLiteStore(tmp_path_factory.mktemp("rt") / "s.db")):
        try:
            s.apply(Batch(insert=[m]))
            assert full_state(s)[3] == [m]
            assert s.read_packet(m.key) == m.packet
        finally:
            s.close()


# -- SQLite only ---------------------------------------------------------------------------------


def test_sqlite_reopen_shows_exactly_the_committed_state(sqlite_path: Path) -> None:
    s = SQLiteStore(sqlite_path)
    big = os.urandom(BIG_PACKET * 3)
    s.apply(Batch(upsert_queues=[QueueRow(1, "a", {"label": "L"})], meta={"guid": "x"}))
    s.apply(Batch(insert=[msg(1, i, priority=i % 8, arrived_time=float(i)) for i in range(10)]))
    s.apply(Batch(insert=[msg(1, 10, big, priority=0, arrived_time=0.0)], last_lookup_ids={1: 10}))
    s.apply(Batch(delete=[MessageKey(1, 3)], update=[MessageUpdate(MessageKey(1, 4), subqueue="s")]))
    with pytest.raises(MSMQError):
        s.apply(Batch(insert=[msg(1, 5, priority=0, arrived_time=0.0)], meta={"guid": "y"}))
    before = full_state(s)
    s.close()
    s2 = SQLiteStore(sqlite_path)
    try:
        assert full_state(s2) == before
        assert before[3][-1].packet == big and len(before[3]) == 10
    finally:
        s2.close()


def test_sqlite_opening_an_existing_store_writes_nothing(sqlite_path: Path) -> None:
    # A store on a full disk still opens (and its queues can then be drained): opening writes only
    # when the store is new.  After a clean close the WAL is empty; an open that wrote would fill it.
    s = SQLiteStore(sqlite_path)
    s.apply(Batch(upsert_queues=[QueueRow(1, "a", {})], insert=[msg(1, 1, priority=3, arrived_time=1.0)]))
    s.close()
    s2 = SQLiteStore(sqlite_path)
    try:
        wal = Path(str(sqlite_path) + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0
        assert [m.lookup_id for m in s2.load().messages] == [1]
    finally:
        s2.close()


def test_sqlite_packet_files_are_removed_with_their_messages_and_orphans_on_open(sqlite_path: Path) -> None:
    s = SQLiteStore(sqlite_path)
    pdir = Path(s.packet_dir)
    big = b"x" * (BIG_PACKET + 1)
    s.apply(
        Batch(
            insert=[
                msg(1, 1, big, priority=0, arrived_time=0.0),
                msg(2, 1, big, priority=0, arrived_time=0.0),
            ]
        )
    )
    assert len(list(pdir.iterdir())) == 2
    s.apply(Batch(delete=[MessageKey(1, 1)]))
    assert len(list(pdir.iterdir())) == 1
    s.apply(Batch(delete_queues=[2]))
    assert list(pdir.iterdir()) == []
    # A failing batch leaves no file behind.
    s.apply(Batch(insert=[msg(3, 1, priority=0, arrived_time=0.0)]))
    with pytest.raises(MSMQError):
        s.apply(
            Batch(
                insert=[msg(3, 2, big, priority=0, arrived_time=0.0), msg(3, 1, priority=0, arrived_time=0.0)]
            )
        )
    assert list(pdir.iterdir()) == []
    s.apply(Batch(insert=[msg(3, 3, big, priority=0, arrived_time=0.0)]))
    s.close()
    (pdir / "orphan.pkt").write_bytes(b"half")  # as a crash before the commit would leave it
    s2 = SQLiteStore(sqlite_path)
    try:
        assert [p.name for p in pdir.iterdir()] != [] and not (pdir / "orphan.pkt").exists()
        assert s2.read_packet(MessageKey(3, 3)) == big
    finally:
        s2.close()


def test_sqlite_one_group_with_a_bad_batch_commits_the_others(sqlite_path: Path) -> None:
    """Force every batch into one group: the bad one is rolled back alone (SAVEPOINT)."""
    s = SQLiteStore(sqlite_path)
    s.apply(Batch(insert=[msg(1, 0, priority=0, arrived_time=0.0)]))
    gate = threading.Event()
    sizes: list[int] = []
    original = s._commit_group

    def gated(group: list[object]) -> None:
        sizes.append(len(group))
        gate.wait(10)
        original(group)  # type: ignore[arg-type]

    s._commit_group = gated  # type: ignore[method-assign]
    results: dict[int, BaseException | None] = {}

    def writer(i: int) -> None:
        try:
            # i == 0 duplicates the message above.
            s.apply(Batch(insert=[msg(1, i, priority=0, arrived_time=0.0)], meta={f"m{i}": "v"}))
            results[i] = None
        except MSMQError as e:
            results[i] = e

    def wait_until(cond: Callable[[], bool]) -> None:
        for _ in range(1000):
            if cond():
                return
            threading.Event().wait(0.005)
        raise AssertionError("timed out")

    blocker = threading.Thread(target=writer, args=(1,))
    blocker.start()
    wait_until(lambda: sizes == [1])  # the committer holds the blocker's group at the gate
    threads = [threading.Thread(target=writer, args=(i,)) for i in (0, 2, 3, 4, 5, 6, 7)]
    for t in threads:
        t.start()
    wait_until(lambda: s._queue.qsize() == 7)
    gate.set()
    for t in [blocker, *threads]:
        t.join()
    commits = s.commits
    s.close()
    assert sizes == [1, 7]
    bad = results.pop(0)
    assert isinstance(bad, MSMQError) and bad.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
    assert all(r is None for r in results.values())
    assert commits == 3  # the seed, the blocker, the merged group
    s2 = SQLiteStore(sqlite_path)
    try:
        snap = s2.load()
        assert sorted(m.lookup_id for m in snap.messages) == list(range(8))
        assert snap.meta == {f"m{i}": "v" for i in range(1, 8)}
    finally:
        s2.close()


def test_sqlite_group_commit_merges_concurrent_batches(sqlite_path: Path) -> None:
    s = SQLiteStore(sqlite_path)
    try:

        def writer(i: int) -> None:
            for j in range(30):
                s.apply(Batch(insert=[msg(i, j, priority=0, arrived_time=0.0)]))

        _run_threads(32, writer)
        assert s.batches == 32 * 30
        assert s.commits < s.batches / 3, (s.commits, s.batches)
    finally:
        s.close()


def test_open_store_urls(tmp_path: Path) -> None:
    assert isinstance(open_store("memory:"), MemoryStore)
    for target, expected in [
        (tmp_path, tmp_path / "pymsmq.db"),
        (f"sqlite://{tmp_path / 'u.db'}", tmp_path / "u.db"),
        (str(tmp_path / "p.db"), tmp_path / "p.db"),
    ]:
        s = open_store(target)
        try:
            assert isinstance(s, SQLiteStore) and Path(s.path) == expected and expected.exists()
        finally:
            s.close()


def test_sqlite_interrupted_waiter_strands_nobody(sqlite_path: Path) -> None:
    """A caller interrupted (Ctrl-C) while it waits for the group commit hands its duty to a stand-in:
    the callers queued behind it still commit, and the store stays usable."""
    s = SQLiteStore(sqlite_path)
    gate = threading.Event()
    sizes: list[int] = []
    original_commit, original_prepare = s._commit_group, s._prepare

    def gated(group: list[object]) -> None:
        sizes.append(len(group))
        gate.wait(10)
        original_commit(group)  # type: ignore[arg-type]

    class InterruptOnce:
        def __init__(self, lock: Any) -> None:
            self.lock, self.fired = lock, False

        def acquire(self) -> bool:
            if not self.fired:
                self.fired = True
                raise KeyboardInterrupt
            return bool(self.lock.acquire())

        def release(self) -> None:
            self.lock.release()

    def prepare(batch: Batch) -> Any:
        p = original_prepare(batch)
        if batch.meta.get("who") == "interrupted":
            p.done = InterruptOnce(p.done)
        return p

    s._commit_group = gated  # type: ignore[method-assign]
    s._prepare = prepare  # type: ignore[method-assign]
    outcome: dict[str, BaseException | None] = {}

    def writer(who: str, lid: int) -> None:
        try:
            s.apply(Batch(insert=[msg(1, lid, priority=0, arrived_time=0.0)], meta={"who": who}))
            outcome[who] = None
        except BaseException as e:
            outcome[who] = e

    blocker = threading.Thread(target=writer, args=("blocker", 1))
    blocker.start()
    for _ in range(1000):
        if sizes == [1]:
            break
        threading.Event().wait(0.005)
    interrupted = threading.Thread(target=writer, args=("interrupted", 2))
    interrupted.start()
    interrupted.join(10)
    assert isinstance(outcome["interrupted"], KeyboardInterrupt)
    behind = threading.Thread(target=writer, args=("behind", 3))
    behind.start()
    for _ in range(1000):
        if s._queue.qsize() == 2:
            break
        threading.Event().wait(0.005)
    gate.set()
    for t in (blocker, behind):
        t.join(10)
        assert not t.is_alive(), "a caller was stranded behind the interrupted one"
    assert outcome["blocker"] is None and outcome["behind"] is None
    s.apply(Batch(insert=[msg(1, 4, priority=0, arrived_time=0.0)]))  # the store still works
    s.close()
    s2 = SQLiteStore(sqlite_path)
    try:
        present = sorted(m.lookup_id for m in s2.load().messages)
    finally:
        s2.close()
    assert present == [1, 2, 3, 4]  # the interrupted batch was committed by its stand-in
