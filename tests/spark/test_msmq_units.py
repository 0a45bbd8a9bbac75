"""Readers and writers of the msmq source without Spark: partitions, filters, offsets, commit logic."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pymsmq
from pymsmq.client.range_read import iter_range, queue_position, read_range
from pymsmq.errors import MSMQError, WireError
from pymsmq.model.ids import ObjectId
from pymsmq.protocol.message_batch import decode_batch, encode_batch
from pymsmq.spark.message_arrow import ARROW_SCHEMA, batch_to_arrow
from pymsmq.spark.options import SourceOptions
from pymsmq.spark.reader import plan_partitions
from pymsmq.spark.stream import MsmqStreamReader, admitted_end, receive_committed
from pymsmq.spark.writer import (
    KEEP_MARKERS,
    MARKER_QUEUE,
    Staged,
    check_columns,
    commit_staged,
    row_to_message,
)
from pymsmq.wire.base_header import MAX_PACKET_SIZE

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))
from _pymsmq_server import ThreadServer


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 9))
def test_plan_partitions_cover_the_range(start: int, width: int, parts: int) -> None:
    ranges = plan_partitions(start, start + width, parts)
    if width == 0:
        assert ranges == []
        return
    assert ranges[0][0] == start and ranges[-1][1] == start + width
    assert all(a < b for a, b in ranges) and len(ranges) == min(parts, width)
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1))
    sizes = [b - a for a, b in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_options_parse() -> None:
    o = SourceOptions.parse(
        {"URL": "msmq://h:1", "path": "q", "maxmessagespertrigger": "5", "mode": "Receive"}
    )
    assert (o.url, o.queue, o.max_messages_per_trigger, o.mode, o.writer_id) == (
        "msmq://h:1",
        "q",
        5,
        "receive",
        "q",
    )
    assert o.held_timeout == 60.0
    assert SourceOptions.parse({"url": "u", "queue": "q", "heldTimeout": "0.5"}).held_timeout == 0.5
    for bad in (
        {"queue": "q"},
        {"url": "u"},
        {"url": "u", "queue": "q", "mode": "eat"},
        {"url": "u", "queue": "q", "numPartitions": "0"},
        {"url": "u", "queue": "q", "startingLookupId": "x"},
        {"url": "u", "queue": "q", "heldTimeout": "soon"},
        {"url": "u", "queue": "q", "heldTimeout": "nan"},
        {"url": "u", "queue": "q", "heldTimeout": "-1"},
    ):
        with pytest.raises(MSMQError):
            SourceOptions.parse(bad)


def test_row_to_message_and_columns() -> None:
    m = row_to_message(
        {"body": "hé", "label": "x", "priority": 6, "lookup_id": 5, "correlation_id": bytes(20)}
    )
    assert (m.body, m.label, m.priority, m.lookup_id, m.correlation_id) == (
        "hé".encode(),
        "x",
        6,
        0,
        ObjectId.from_bytes(bytes(20)),
    )
    with pytest.raises(MSMQError):
        row_to_message({"body": None})
    with pytest.raises(MSMQError):
        row_to_message({"body": b"", "priority": 9})
    check_columns(["body", "label", "lookup_id"])
    for bad in (["label"], ["body", "colour"]):
        with pytest.raises(MSMQError):
            check_columns(bad)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@st.composite
def messages(draw: Any) -> pymsmq.Message:
    m = pymsmq.Message(
        body=draw(st.binary(max_size=40)),
        label=draw(_TEXT),
        priority=draw(st.integers(0, 7)),
        msg_class=draw(st.integers(0, 0xFFFF)),
        app_specific=draw(st.integers(0, 0xFFFFFFFF)),
        correlation_id=draw(st.none() | st.builds(ObjectId, st.uuids(), st.integers(0, 0xFFFFFFFF))),
        extension=draw(st.binary(max_size=5)),
    )
    m.lookup_id = draw(st.integers(0, 2**63 - 1))
    m.arrived_time = draw(st.none() | st.floats(0, 2e9).map(lambda x: round(x, 6)))
    m.sent_time = draw(st.none() | st.integers(0, 2**31).map(float))
    m.source_machine_guid = draw(st.none() | st.uuids())
    m.destination_queue = draw(st.none() | _TEXT)
    m.last_move_time = draw(st.none() | st.floats(0, 2e9).map(lambda x: round(x, 6)))
    m.destination_format_name = draw(st.none() | _TEXT)
    return m


@given(st.lists(messages(), max_size=8), st.sampled_from([6, 7, 8]))
def test_arrow_batch_matches_decode_batch(ms: list[pymsmq.Message], columns: int) -> None:
    # With the last_move_time column (RangeFlags.LAST_MOVE_TIME) and the destination_format_name
    # column (RangeFlags.DESTINATION_FORMAT_NAME), and without them (an older server's batch: the
    # columns are all null).
    blob = encode_batch(ms, last_move_time=columns == 7, destination_format_name=columns == 8)
    back = decode_batch(blob)
    for m in ms:
        if columns < 7:
            m.last_move_time = None
        if columns < 8:
            m.destination_format_name = None
    rb = batch_to_arrow(blob, "Q")
    assert rb.schema == ARROW_SCHEMA and rb.num_rows == len(ms)
    for row, m, b in zip(rb.to_pylist(), ms, back, strict=True):
        assert b == m
        assert (row["lookup_id"], row["label"], row["body"], row["priority"]) == (
            m.lookup_id,
            m.label,
            m.body,
            m.priority,
        )
        assert row["correlation_id"] == (None if m.correlation_id is None else bytes(m.correlation_id))
        assert row["source_machine_guid"] == (
            None if m.source_machine_guid is None else str(m.source_machine_guid)
        )
        expected = None if m.arrived_time is None else round(m.arrived_time * 1e6)
        got = row["arrived_time"]
        assert (None if got is None else round(got.timestamp() * 1e6)) == expected
        expected = None if m.last_move_time is None else round(m.last_move_time * 1e6)
        got = row["last_move_time"]
        assert (None if got is None else round(got.timestamp() * 1e6)) == expected
        assert row["destination_queue"] == m.destination_queue and row["queue"] == "Q"
        assert row["destination_format_name"] == m.destination_format_name


@given(
    st.lists(
        st.tuples(st.sampled_from(["shared", "other", "none"]), st.none() | _TEXT), min_size=1, max_size=10
    ),
    st.uuids(),
    st.uuids(),
)
def test_batches_sharing_one_queue_manager_guid(
    rows: list[tuple[str, str | None]], shared: uuid.UUID, other: uuid.UUID
) -> None:
    # The encoder checks the last GUID object by identity and the Arrow side formats a batch's single
    # source GUID once: mixing one shared UUID object with another GUID and with None must change nothing.
    ms = []
    for i, (which, dest) in enumerate(rows):
        m = pymsmq.Message(body=bytes([i]), label=f"m{i}")
        guid = {"shared": shared, "other": other, "none": None}[which]
        m.lookup_id = i + 1
        m.source_machine_guid = guid
        m.id = None if guid is None else ObjectId(guid, i)
        m.destination_queue = dest
        ms.append(m)
    blob = encode_batch(ms)
    assert decode_batch(blob) == ms
    got = batch_to_arrow(blob, "Q").to_pylist()
    for row, m in zip(got, ms, strict=True):
        guid = m.source_machine_guid
        assert row["source_machine_guid"] == (None if guid is None else str(guid))
        assert row["id"] == (None if m.id is None else bytes(m.id))
        assert row["destination_queue"] == m.destination_queue
        assert row["response_queue"] is None and row["admin_queue"] is None


@given(st.binary(max_size=300))
def test_arrow_decoder_rejects_garbage_with_wire_error(data: bytes) -> None:
    try:
        batch_to_arrow(data, "Q")
    except WireError:
        pass


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[ThreadServer]:
    srv = ThreadServer(tmp_path).start()
    yield srv
    srv.stop()


def test_offsets_admission_and_receive_on_commit(tmp_path: Path) -> None:
    qm = pymsmq.QueueManager.open(tmp_path / "qm")
    try:
        q = qm.create_queue(".\\private$\\s", transactional=True)
        with qm.begin_transaction() as tx:
            for i in range(10):
                q.send(pymsmq.Message(body=b"x", label=str(i)), tx)
        pos = queue_position(q)
        assert (pos.first_lookup_id, pos.high_water, pos.queue_count) == (1, 11, 10)
        assert admitted_end(q, 1, 11, None) == 11
        assert admitted_end(q, 1, 11, 4) == 5  # just after the 4th message
        assert admitted_end(q, 11, 11, 4) == 11
        # An uncommitted send holds the high water below its lookup id.
        tx = qm.begin_transaction()
        q.send(pymsmq.Message(body=b"late"), tx)
        q.send(pymsmq.Message(body=b"late2"), tx)
        assert queue_position(q).high_water == 11
        tx.commit()
        assert queue_position(q).high_water == 13
        assert receive_committed(q, qm, 1, 5) == 4
        assert receive_committed(q, qm, 1, 5) == 0  # idempotent
        assert [m.label for m in read_range(q, 0, 0).messages()][:2] == ["4", "5"]
        assert sum(b.count for b in iter_range(q, 1, 13, chunk=3)) == 8
    finally:
        qm.close()


def test_stream_reader_offsets_against_a_server(server: ThreadServer) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    qm = pymsmq.client.connect(server.url)
    try:
        q = qm.create_queue(".\\private$\\st", transactional=True)
        with qm.begin_transaction() as tx:
            q.send_many([pymsmq.Message(body=b"x") for _ in range(7)], tx)
    finally:
        qm.close()
    opts = SourceOptions.parse({"url": server.url, "queue": ".\\private$\\st", "mode": "receive"})
    r = MsmqStreamReader(opts)
    start = r.initialOffset()
    assert start == {"lookup_id": 1, "origin": 1}
    end = r.latestOffset(start, ReadMaxRows(3))
    planned = end.pop("planned")
    assert end == {"lookup_id": 4, "origin": 1, "from": 1}
    assert abs(planned - time.time()) < 60
    end["planned"] = planned
    assert [(p.start, p.end) for p in r.partitions(start, end)] == [(1, 3), (3, 4)]
    rows = [b.num_rows for p in r.partitions(start, end) for b in r.read(p)]
    assert sum(rows) == 3
    assert r.latestOffset(end, ReadAllAvailable())["lookup_id"] == 8
    r.commit(end)
    with pymsmq.client.connect(server.url) as qm2:
        assert queue_position(qm2.queue(".\\private$\\st")).queue_count == 4
    r.prepareForTriggerAvailableNow()
    assert r.latestOffset(end, ReadAllAvailable())["lookup_id"] == 8


def test_commit_staged_is_idempotent_per_batch(server: ThreadServer) -> None:
    name = f".\\private$\\w_{uuid.uuid4().hex[:6]}"
    with pymsmq.client.connect(server.url) as qm:
        qm.create_queue(name, transactional=True)
    opts = SourceOptions.parse({"url": server.url, "queue": name, "writerId": "w"})
    staged: list[Any] = [
        Staged(1, 2, encode_batch([pymsmq.Message(body=b"a"), pymsmq.Message(body=b"b")])),
        None,
        Staged(0, 1, encode_batch([pymsmq.Message(body=b"c")])),
    ]
    assert commit_staged(opts, staged, 7) == 3
    assert commit_staged(opts, staged, 7) == 0  # a replay of batch 7 sends nothing
    assert commit_staged(opts, staged, 8) == 3
    assert commit_staged(opts, staged, None) == 3  # batch writes have no markers
    with pymsmq.client.connect(server.url) as qm:
        bodies = [m.body for m in read_range(qm.queue(name)).messages()]
    assert bodies == [b"c", b"a", b"b"] * 3


def test_a_replay_finds_its_marker_past_another_writer_s_open_commit(server: ThreadServer) -> None:
    # Outside QA: writer A's commit transaction had sent its marker and not committed; writer B's
    # replayed batch looked for its marker only below the marker queue's high water (held at A's
    # pending send), did not find the one it had committed, and sent the batch again.
    name = f".\\private$\\w_{uuid.uuid4().hex[:6]}"
    with pymsmq.client.connect(server.url) as qm:
        target = qm.create_queue(name, transactional=True)
        opts = SourceOptions.parse({"url": server.url, "queue": name, "writerId": "writerB"})
        staged: list[Any] = [Staged(0, 3, encode_batch([pymsmq.Message(body=b"r") for _ in range(3)]))]
        assert commit_staged(opts, [Staged(0, 1, encode_batch([pymsmq.Message(body=b"q")]))], 4) == 1
        markers = qm.queue(MARKER_QUEUE)
        writer_a = qm.begin_transaction()
        markers.send(pymsmq.Message(label="writerA|7|0"), writer_a)  # A inside its commit
        assert commit_staged(opts, staged, 5) == 3
        assert commit_staged(opts, staged, 5) == 0  # the replay while A's commit is open
        writer_a.commit()
        assert commit_staged(opts, staged, 5) == 0
        assert target.message_count == 4


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ({"body": 42}, "body must be binary or string, not int"),
        ({"body": True}, "body must be binary or string, not bool"),
        ({"body": 2**40}, "body must be binary or string, not int"),
        ({"body": [104, 105]}, "body must be binary or string, not list"),
        ({"body": b"x", "extension": "text"}, "extension must be binary, not str"),
        ({"body": b"x", "correlation_id": 7}, "correlation_id must be binary, not int"),
        ({"body": b"x", "label": "\U0001f600" * 200}, "UTF-16 units (max 249)"),
        ({"body": b"x" * MAX_PACKET_SIZE}, "larger than MSMQ allows"),
    ],
)
def test_a_row_a_send_would_refuse_fails_while_staged(row: dict[str, Any], needle: str) -> None:
    # bytes(42) was 42 zero bytes; a label over 249 UTF-16 units or a packet over 4 MB was refused
    # only by the server, during the driver's commit, after other partitions had been sent.
    with pytest.raises(MSMQError) as refused:
        row_to_message(row)
    assert needle in str(refused.value)
    assert row_to_message({"body": bytearray(b"ok"), "extension": memoryview(b"e")}).extension == b"e"


def test_a_refused_commit_into_a_transactional_queue_leaves_nothing(server: ThreadServer) -> None:
    # One transaction for every partition: the queue's quota refuses the third partition, and the
    # two before it are not left in the queue (a retry would have duplicated them).
    name = f".\\private$\\w_{uuid.uuid4().hex[:6]}"
    with pymsmq.client.connect(server.url) as qm:
        qm.create_queue(name, transactional=True, quota=2)  # 2 KB
    opts = SourceOptions.parse({"url": server.url, "queue": name})
    part = [pymsmq.Message(body=b"x" * 800)]
    staged: list[Any] = [Staged(i, 1, encode_batch(part)) for i in range(3)]
    with pytest.raises(MSMQError):
        commit_staged(opts, staged, None)
    with pymsmq.client.connect(server.url) as qm:
        assert qm.queue(name).message_count == 0


def test_old_markers_of_a_non_transactional_target_are_removed(server: ThreadServer) -> None:
    name = f".\\private$\\w_{uuid.uuid4().hex[:6]}"
    with pymsmq.client.connect(server.url) as qm:
        qm.create_queue(name)
    opts = SourceOptions.parse({"url": server.url, "queue": name, "writerId": "plain"})
    staged: list[Any] = [Staged(0, 1, encode_batch([pymsmq.Message(body=b"m", delivery=1)]))]
    for batch_id in range(KEEP_MARKERS * 3):
        commit_staged(opts, staged, batch_id)
    with pymsmq.client.connect(server.url) as qm:
        labels = [m.label for m in read_range(qm.queue(MARKER_QUEUE)).messages()]
    mine = [lbl for lbl in labels if lbl.startswith("plain|")]
    assert len(mine) <= KEEP_MARKERS + 2


def _held_queue(server: ThreadServer, n: int) -> str:
    name = f".\\private$\\h_{uuid.uuid4().hex[:6]}"
    with pymsmq.client.connect(server.url) as qm:
        q = qm.create_queue(name, transactional=True)
        with qm.begin_transaction() as tx:
            q.send_many([pymsmq.Message(body=b"x", label=str(i)) for i in range(n)], tx)
    return name


def _labels(r: MsmqStreamReader, start: dict[str, int], end: dict[str, int]) -> list[str]:
    return [
        str(label)
        for p in r.partitions(start, end)
        for b in r.read(p)
        for label in b.column("label").to_pylist()
    ]


def test_a_receive_stream_never_removes_a_message_another_consumer_gave_back(server: ThreadServer) -> None:
    # Another consumer holds message "2" in an open transaction while the stream's batch passes it.
    # Before: the batch ended at the high water (past it), read 0,1,3,4, and once the consumer
    # aborted, the stream's commit (from its origin) removed "2" unread.  Now the batch ends at
    # the held message and the stream delivers it after the abort.
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    name = _held_queue(server, 5)
    other = pymsmq.client.connect(server.url)
    try:
        oq = other.queue(name)
        tx = other.begin_transaction()
        assert oq.receive_by_lookup_id(3, tx).label == "2"
        r = MsmqStreamReader(SourceOptions.parse({"url": server.url, "queue": name, "mode": "receive"}))
        start = r.initialOffset()
        end = r.latestOffset(start, ReadAllAvailable())
        assert end["lookup_id"] == 3
        delivered = _labels(r, start, end)
        assert delivered == ["0", "1"]
        r.commit(end)
        assert r.latestOffset(end, ReadAllAvailable()) == end  # waits at the held message
        tx.abort()
        end2 = r.latestOffset(end, ReadAllAvailable())
        assert end2["lookup_id"] == 6
        delivered += _labels(r, end, end2)
        r.commit(end2)
    finally:
        other.close()
    assert delivered == ["0", "1", "2", "3", "4"]
    with pymsmq.client.connect(server.url) as qm:
        assert qm.queue(name).message_count == 0


def test_admission_control_stops_at_a_held_message(server: ThreadServer) -> None:
    from pyspark.sql.streaming.datasource import ReadMaxRows

    name = _held_queue(server, 6)
    with pymsmq.client.connect(server.url) as other:
        tx = other.begin_transaction()
        other.queue(name).receive_by_lookup_id(4, tx)
        r = MsmqStreamReader(SourceOptions.parse({"url": server.url, "queue": name}))
        start = r.initialOffset()
        assert r.latestOffset(start, ReadMaxRows(2))["lookup_id"] == 3
        assert r.latestOffset({"lookup_id": 3, "origin": 1}, ReadMaxRows(2))["lookup_id"] == 4
        r.prepareForTriggerAvailableNow()  # the frozen end does not pass a held message either
        assert r.latestOffset({"lookup_id": 3, "origin": 1}, ReadMaxRows(9))["lookup_id"] == 4
        tx.commit()  # taken for good: the stream goes on without it
        assert r.latestOffset({"lookup_id": 4, "origin": 1}, ReadMaxRows(9))["lookup_id"] == 7


def test_a_batch_read_waits_for_a_message_taken_after_its_offsets(server: ThreadServer) -> None:
    # The race: the offsets were fixed with every message visible, then another consumer took one
    # in a transaction before the partition was read.  The read waits for it to settle.
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    name = _held_queue(server, 4)
    r = MsmqStreamReader(SourceOptions.parse({"url": server.url, "queue": name, "heldTimeout": "20"}))
    start = r.initialOffset()
    end = r.latestOffset(start, ReadAllAvailable())
    assert end["lookup_id"] == 5
    with pymsmq.client.connect(server.url) as other:
        tx = other.begin_transaction()
        other.queue(name).receive_by_lookup_id(2, tx)
        timer = threading.Timer(0.3, tx.abort)
        timer.start()
        try:
            assert _labels(r, start, end) == ["0", "1", "2", "3"]
        finally:
            timer.join()


def test_a_batch_read_fails_clearly_when_a_message_stays_held(server: ThreadServer) -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    name = _held_queue(server, 3)
    r = MsmqStreamReader(SourceOptions.parse({"url": server.url, "queue": name, "heldTimeout": "0.2"}))
    start = r.initialOffset()
    end = r.latestOffset(start, ReadAllAvailable())
    with pymsmq.client.connect(server.url) as other:
        tx = other.begin_transaction()
        other.queue(name).receive_by_lookup_id(2, tx)
        with pytest.raises(MSMQError) as stuck:
            _labels(r, start, end)
        assert stuck.value.hresult == pymsmq.HResult.MQ_ERROR_IO_TIMEOUT
        assert "lookup ids 2 to" in str(stuck.value) and "still held after 0.2 s" in str(stuck.value)
        tx.abort()
    assert _labels(r, start, end) == ["0", "1", "2"]


def test_a_batch_read_includes_messages_committed_after_an_open_send(server: ThreadServer) -> None:
    # A send inside an open transaction held the high water: a batch read planned its partitions
    # below it and left out every message committed after that send.
    from pymsmq.spark.reader import MsmqBatchReader

    name = _held_queue(server, 2)
    with pymsmq.client.connect(server.url) as qm:
        q = qm.queue(name)
        tx = qm.begin_transaction()
        q.send(pymsmq.Message(body=b"o", label="open"), tx)
        with qm.begin_transaction() as later:
            q.send(pymsmq.Message(body=b"l", label="later"), later)
        reader = MsmqBatchReader(
            SourceOptions.parse({"url": server.url, "queue": name, "numPartitions": "3"})
        )
        parts = reader.partitions()
        labels = [str(v) for p in parts for b in reader.read(p) for v in b.column("label").to_pylist()]
        assert labels == ["0", "1", "later"]
        tx.commit()  # its message arrives at the commit, after "later"
        parts = reader.partitions()
        labels = [str(v) for p in parts for b in reader.read(p) for v in b.column("label").to_pylist()]
        assert labels == ["0", "1", "later", "open"]


def test_a_receive_stream_leaves_a_message_moved_back_behind_it(server: ThreadServer) -> None:
    # The retry pattern of docs/api.md "Poison messages": "1" goes to the retry subqueue while the
    # stream's first batch passes its lookup id, then comes back to the queue with the same id,
    # behind the stream.  Before: the next commit received [origin, end) and removed "1" unread.
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    name = _held_queue(server, 4)
    with pymsmq.client.connect(server.url) as qm:
        q = qm.queue(name)
        with qm.begin_transaction() as tx:
            q.move(2, "retry", tx)
        r = MsmqStreamReader(SourceOptions.parse({"url": server.url, "queue": name, "mode": "receive"}))
        start = r.initialOffset()
        end = r.latestOffset(start, ReadAllAvailable())
        assert _labels(r, start, end) == ["0", "2", "3"]
        retry = qm.queue(name + ";retry")
        with qm.begin_transaction() as tx:
            retry.move(2, "", tx)  # back, behind the stream
        with qm.begin_transaction() as tx:
            q.send(pymsmq.Message(body=b"x", label="4"), tx)
        end2 = r.latestOffset(end, ReadAllAvailable())
        assert _labels(r, end, end2) == ["4"]
        r.commit(end)
        r.commit(end2)
        # "1" was never delivered, so it is still there (a stream does not go back for it): moved
        # back after the first batch was planned, inside its range, the commit leaves it.
        assert q.message_count == 1
        assert q.peek(timeout=0).label == "1"
        # An offset of an older checkpoint (no "from", no "planned") is committed from its origin.
        r.commit({"lookup_id": end2["lookup_id"], "origin": 1})
        assert q.message_count == 0


def test_a_batch_read_refuses_mode_receive_and_a_schema_of_its_own() -> None:
    # (It peeked and said nothing; a schema of the user's failed late in a worker.)
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StringType, StructField, StructType

    from pymsmq.spark.datasource import MsmqDataSource
    from pymsmq.spark.message_arrow import ARROW_SCHEMA

    opts = {"url": "msmq://127.0.0.1:1", "queue": ".\\private$\\q"}
    own = StructType([StructField(f.name, from_arrow_type(f.type)) for f in ARROW_SCHEMA])
    MsmqDataSource(opts).reader(own)  # (the source's own columns: no connection yet)
    with pytest.raises(pymsmq.MSMQError, match="the schema is the source's own"):  # (other types)
        MsmqDataSource(opts).reader(
            StructType([StructField(name, StringType()) for name in ARROW_SCHEMA.names])
        )
    with pytest.raises(pymsmq.MSMQError, match="mode=receive is for streaming reads"):
        MsmqDataSource({**opts, "mode": "receive"}).reader(own)
    with pytest.raises(pymsmq.MSMQError, match="the schema is the source's own"):
        MsmqDataSource(opts).reader(StructType([StructField("body", StringType())]))
    with pytest.raises(pymsmq.MSMQError, match="the schema is the source's own"):
        MsmqDataSource(opts).streamReader(StructType([StructField("body", StringType())]))


def test_a_writer_id_beyond_the_bmp_goes_by_its_hash() -> None:
    from pymsmq.model.message import label_units
    from pymsmq.spark.writer import _marker_label

    for writer_id in ("\U0001f600" * 159, "\U0001f600" * 109, "é" * 160, "x" * 217):
        label = _marker_label(writer_id, 2**63, 2**31)
        assert label_units(label) <= 249, writer_id[:3]
    assert _marker_label("x" * 160, 1, 0) == "x" * 160 + "|1|0"  # (as before: kept as it is)
    assert _marker_label("é" * 160, 1, 0) == "é" * 160 + "|1|0"


def test_a_receive_stream_removes_its_last_batch_at_the_next_trigger(server: ThreadServer) -> None:
    # Spark calls the source's commit only when a next batch has data: the last batch's messages
    # stayed in the queue while no new message came.  latestOffset(start) commits it first.
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    name = _held_queue(server, 3)
    r = MsmqStreamReader(SourceOptions.parse({"url": server.url, "queue": name, "mode": "receive"}))
    start = r.initialOffset()
    end = r.latestOffset(start, ReadAllAvailable())
    assert _labels(r, start, end) == ["0", "1", "2"]
    with pymsmq.client.connect(server.url) as qm:
        assert qm.queue(name).message_count == 3  # (the batch is not processed yet)
        assert r.latestOffset(end, ReadAllAvailable()) == end  # the next trigger: nothing new
        assert qm.queue(name).message_count == 0
        r.commit(end)  # Spark's own commit of it, later: nothing left to remove
        assert qm.queue(name).message_count == 0
    peek = MsmqStreamReader(SourceOptions.parse({"url": server.url, "queue": _held_queue(server, 2)}))
    s = peek.initialOffset()
    e = peek.latestOffset(s, ReadAllAvailable())
    assert peek.latestOffset(e, ReadAllAvailable()) == e  # (peek mode removes nothing)
    with pymsmq.client.connect(server.url) as qm:
        assert peek.opts.queue and qm.queue(peek.opts.queue).message_count == 2


def test_a_stream_refuses_a_subqueue_and_a_batch_read_takes_it(server: ThreadServer) -> None:
    # Outside QA: messages come into a subqueue only by moves, which keep their lookup ids, behind
    # the stream's position: a stream over a subqueue delivered none of them.
    from pymsmq.spark.datasource import MsmqDataSource

    name = _held_queue(server, 3)
    with pymsmq.client.connect(server.url) as qm:
        q = qm.queue(name)
        q.move(q.peek(0).lookup_id, "retry")
        retry = qm.queue(name + ";retry")
        sub = retry.format_name
    for queue in (name + ";retry", sub):
        with pytest.raises(MSMQError, match="cannot follow the subqueue 'retry'"):
            MsmqDataSource({"url": server.url, "queue": queue}).streamReader(None)
        reader = MsmqDataSource({"url": server.url, "queue": queue}).reader(None)
        batches = [b for p in reader.partitions() for b in reader.read(p)]
        assert [str(v) for b in batches for v in b.column("label").to_pylist()] == ["0"]
    MsmqDataSource({"url": server.url, "queue": name}).streamReader(None)  # the queue itself: a stream
