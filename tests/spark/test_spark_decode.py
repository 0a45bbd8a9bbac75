"""Packet decoding for Spark: the per-row reference (``columns.packet_row``), the vectorised Arrow decoder
(``arrow_decode.decode_array``) and ``decode_packets`` on a real SparkSession.

The vectorised decoder must give exactly the reference's values for every row, malformed ones included;
the reference must agree with ``pymsmq.wire.decode_packet`` and with the shared vectors' documented fields.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.spark.arrow_decode import ARROW_SCHEMA, decode_array, slice_ranges
from pymsmq.spark.columns import COLUMNS, clean_text, packet_row
from pymsmq.wire import (
    ConnectionParameters,
    DirectQueueFormatName,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueType,
    SessionHeader,
    TransactionHeader,
    TxSequenceID,
    UserMessage,
    decode_packet,
)

VECTORS = Path(__file__).parents[1] / "vectors"
ALL_VECTORS = sorted(VECTORS.glob("*.bin"))
NAMES = [name for name, _ in COLUMNS]
QM = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")


def rows_of(packets: list[bytes | None]) -> list[dict[str, Any]]:
    batch = decode_array(pa.array(packets, pa.binary()))
    assert batch.schema == ARROW_SCHEMA
    assert batch.num_rows == len(packets)
    return batch.to_pylist()  # type: ignore[no-any-return]


def assert_same_as_reference(packets: list[bytes | None]) -> list[dict[str, Any]]:
    got = rows_of(packets)
    for i, (packet, row) in enumerate(zip(packets, got, strict=True)):
        assert row == packet_row(packet), f"row {i}"
    return got


# -- the shared vectors -----------------------------------------------------------------------------


def test_vectors_are_present() -> None:
    assert len(ALL_VECTORS) == 12


@pytest.mark.parametrize("path", ALL_VECTORS, ids=lambda p: p.name)
def test_reference_row_agrees_with_wire(path: Path) -> None:
    data = path.read_bytes()
    row = packet_row(data)
    assert list(row) == NAMES
    if "malformed" in path.name:
        assert row["kind"] == "error"
        assert "SRMPEnvelopeHeader" in row["error"]
        assert all(row[name] is None for name in NAMES if name not in ("kind", "error"))
        return
    packet = decode_packet(data)
    assert row["error"] is None
    kind = type(packet).__name__
    assert row["kind"] == ("Ping" if kind == "PingPacket" else kind)
    if kind == "PingPacket":
        assert row["packet_size"] is None
        return
    assert row["packet_size"] == packet.base_header.packet_size
    assert row["flags"] == packet.base_header.flags
    assert row["priority"] == packet.base_header.flags & 7
    assert row["time_to_reach_queue"] == packet.base_header.time_to_reach_queue
    if isinstance(packet, UserMessage):
        user = packet.user_header
        props = packet.message_properties_header
        assert row["label"] == props.label
        assert row["body"] == packet.body
        assert row["message_class"] == props.message_class
        assert row["correlation_id"] == props.correlation_id
        assert row["app_specific"] == props.application_tag
        assert row["sent_time"] == dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
            seconds=user.sent_time
        )
        assert row["time_to_be_received"] == user.time_to_be_received
        assert row["user_flags"] == user.flags
        assert row["transactional"] is (packet.transaction_header is not None)
    else:
        assert row["destination"] is None and row["body"] is None


def test_frame7_fields() -> None:
    # [MS-MQQB] 4.1.7 (tests/vectors/README.md): express, priority 3, TTRQ 345600, DQ=7 OS:a04bm02\q.
    row = packet_row((VECTORS / "mqqb-4.1.7-frame7-usermessage.bin").read_bytes())
    assert row["kind"] == "UserMessage"
    assert row["packet_size"] == 2224
    assert row["priority"] == 3
    assert row["time_to_reach_queue"] == 345600
    assert row["delivery"] == "express"
    assert row["destination"] == "DIRECT=OS:a04bm02\\q"
    assert row["label"] == "mqsender label"
    assert row["body"] == "a".encode("utf-16-le") * 1000
    assert row["message_id"].startswith("{") and row["message_id"].split("\\")[0].endswith("}")
    assert row["message_id"] == f"{{{str(uuid.UUID(row['source_queue_manager'])).upper()}}}\\2286"


def test_queuejumper_fields() -> None:
    row = packet_row((VECTORS / "queuejumper-msf-usermessage-srmp.bin").read_bytes())
    assert row["kind"] == "UserMessage"
    assert row["flags"] == 0x1003
    assert row["user_flags"] == 0x02201C01
    assert row["destination"] == "DIRECT=http://192.168.56.113/msmq/private$/queuejumper"
    assert row["label"] == "poc"
    # The body is in the CompoundMessageHeader (MsgBodyOffset 995, MsgBodySize 7); the properties
    # header's MessageBody is empty.  It came out as b"".
    assert row["body"] == b"Message"
    row = packet_row((VECTORS / "queuejumper-nse-usermessage-srmp.bin").read_bytes())
    assert (row["kind"], row["label"], row["body"]) == ("UserMessage", "poc", b"Message")


def test_internal_packet_fields() -> None:
    row = packet_row((VECTORS / "mqqb-4.1.8-frame8-sessionack.bin").read_bytes())
    assert (row["kind"], row["packet_size"], row["flags"], row["priority"]) == ("SessionAck", 36, 0x1B, 3)
    row = packet_row((VECTORS / "mqqb-4.1.5-frame5-connectionparameters-request.bin").read_bytes())
    assert row["kind"] == "ConnectionParameters"
    assert row["packet_size"] == 32


def test_vectorised_decoder_on_vectors() -> None:
    packets: list[bytes | None] = [p.read_bytes() for p in ALL_VECTORS]
    got = assert_same_as_reference(packets)
    kinds = [r["kind"] for r in got]
    assert kinds.count("error") == 2
    assert kinds.count("UserMessage") == 3


def test_null_empty_and_garbage_rows() -> None:
    got = assert_same_as_reference([None, b"", b"LIOR" * 40, bytes(64), bytes(200)])
    assert [r["kind"] for r in got] == ["error"] * 5
    assert got[0]["error"] == "no packet (null)"
    assert all(r["error"] for r in got)


def test_empty_batch() -> None:
    batch = decode_array(pa.array([], pa.binary()))
    assert batch.num_rows == 0
    assert batch.schema == ARROW_SCHEMA


def test_large_binary_and_sliced_input() -> None:
    frame7 = (VECTORS / "mqqb-4.1.7-frame7-usermessage.bin").read_bytes()
    packets = [frame7, b"x", frame7]
    large = decode_array(pa.array(packets, pa.large_binary())).to_pylist()
    assert large == [packet_row(p) for p in packets]
    sliced = pa.array([b"junk", *packets], pa.binary()).slice(1)
    assert decode_array(sliced).to_pylist() == [packet_row(p) for p in packets]


def test_rejects_non_binary() -> None:
    with pytest.raises(TypeError):
        decode_array(pa.array([1, 2]))


def test_slice_ranges() -> None:
    data = pa.py_buffer(bytes(range(100)))
    import numpy as np

    got = slice_ranges(data, np.array([0, 10, 10, 50]), np.array([5, 10, 20, 100])).to_pylist()
    assert got == [bytes(range(5)), b"", bytes(range(10, 20)), bytes(range(50, 100))]
    assert slice_ranges(data, np.array([], np.int64), np.array([], np.int64)).to_pylist() == []


def test_clean_text() -> None:
    assert clean_text("abc") == "abc"
    assert clean_text("é🙂") == "é🙂"
    assert clean_text("a\ud800b") == "a\ufffdb"


def test_lone_surrogate_label_becomes_replacement_character() -> None:
    packet = UserMessage.build(destination="OS:h\\q", label="x\udc00y").encode()
    got = assert_same_as_reference([packet])
    assert got[0]["label"] == "x\ufffdy"


def test_queue_texts_of_every_type_code() -> None:
    sqm = uuid.UUID(int=1)
    qma = uuid.UUID(int=2)
    other = uuid.UUID(int=3)
    msg = UserMessage.build(
        destination=PrivateQueueFormatNameId(0x10),
        source_queue_manager=sqm,
        destination_queue_manager=qma,
        admin_queue=PrivateQueueFormatName(other, 0x20),
        response_queue=PrivateQueueFormatNameId(0x30),
        response_queue_type=QueueType.PRIVATE_QUEUE_ON_ADMIN,
    )
    row = assert_same_as_reference([msg.encode()])[0]
    assert row["destination"] == f"PRIVATE={qma}\\00000010"
    assert row["admin_queue"] == f"PRIVATE={other}\\00000020"
    assert row["response_queue"] == f"PRIVATE={other}\\00000030"
    msg = UserMessage.build(
        destination=PublicQueueFormatName(other),
        source_queue_manager=sqm,
        admin_queue=PrivateQueueFormatNameId(7),
        admin_queue_type=QueueType.PRIVATE_QUEUE_ON_SOURCE,
        response_queue_type=QueueType.SAME_AS_ADMINISTRATION_QUEUE,
    )
    row = assert_same_as_reference([msg.encode()])[0]
    assert row["destination"] == f"PUBLIC={other}"
    assert row["admin_queue"] == f"PRIVATE={sqm}\\00000007"
    assert row["response_queue"] == row["admin_queue"]
    # A private queue on the admin host, when the admin queue is direct: the host's GUID is unknown.
    msg = UserMessage.build(
        destination="OS:h\\q",
        admin_queue="OS:admin\\q",
        response_queue=PrivateQueueFormatNameId(9),
        response_queue_type=QueueType.PRIVATE_QUEUE_ON_ADMIN,
    )
    row = assert_same_as_reference([msg.encode()])[0]
    assert row["admin_queue"] == "DIRECT=OS:admin\\q"
    assert row["response_queue"] is None


def test_transaction_and_session_columns() -> None:
    tx = TransactionHeader(flags=0x4 | (5 << 4), tx_sequence_id=TxSequenceID(1, 2), tx_sequence_number=3)
    msg = UserMessage.build(destination="OS:h\\q", transaction_header=tx, session_header=SessionHeader())
    row = assert_same_as_reference([msg.encode()])[0]
    assert row["transactional"] is True
    assert row["first_in_transaction"] is True
    assert row["last_in_transaction"] is False
    assert row["delivery"] == "recoverable"
    assert row["priority"] == 0


def test_order_ack_class_takes_the_reference_path() -> None:
    msg = UserMessage.build(
        destination="OS:h\\private$\\order_queue$", label="QM Ordering Ack", message_class=0xFF
    )
    got = assert_same_as_reference([msg.encode()])
    assert got[0]["kind"] in ("UserMessage", "OrderAck", "error")


def test_internal_packet_in_a_batch() -> None:
    cp = ConnectionParameters.decode(
        (VECTORS / "mqqb-4.1.5-frame5-connectionparameters-request.bin").read_bytes()
    )
    frame7 = (VECTORS / "mqqb-4.1.7-frame7-usermessage.bin").read_bytes()
    got = assert_same_as_reference([frame7, cp.encode(), frame7])
    assert [r["kind"] for r in got] == ["UserMessage", "ConnectionParameters", "UserMessage"]


# -- Hypothesis: built packets, mutated packets, arbitrary bytes -------------------------------------

names = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x2FFF, exclude_categories=("Cs",)), max_size=40
)
labels = st.none() | st.text(st.characters(min_codepoint=1, max_codepoint=0x10FFFF), max_size=60).filter(
    lambda s: len(s.encode("utf-16-le", "surrogatepass")) <= 2 * 249
)
guids = st.integers(0, 2**128 - 1).map(lambda i: uuid.UUID(int=i))
u32 = st.integers(0, 2**32 - 1)


@st.composite
def user_messages(draw: st.DrawFn) -> UserMessage:
    tx = draw(
        st.none()
        | st.builds(
            TransactionHeader,
            flags=st.integers(0, 2**32 - 1).map(lambda f: f & ~1),
            tx_sequence_id=st.builds(TxSequenceID, u32, u32),
            tx_sequence_number=u32,
            previous_tx_sequence_number=u32,
        )
    )
    return UserMessage.build(
        destination=draw(names.map(lambda s: "OS:" + s) | st.builds(PrivateQueueFormatNameId, u32)),
        body=draw(st.binary(max_size=300)),
        label=draw(labels),
        priority=draw(st.integers(0, 7)),
        source_queue_manager=draw(guids),
        destination_queue_manager=draw(guids),
        message_id=draw(u32),
        sent_time=draw(u32),
        time_to_reach_queue=draw(u32),
        time_to_be_received=draw(u32),
        recoverable=draw(st.booleans()),
        admin_queue=draw(st.none() | names.map(lambda s: "OS:a" + s)),
        response_queue=draw(st.none() | names.map(lambda s: "OS:r" + s)),
        message_class=draw(st.sampled_from([0, 1, 2, 0x8001, 0xFF, 0x4000]) | st.integers(0, 0xFFFF)),
        correlation_id=draw(st.binary(min_size=20, max_size=20)),
        body_type=draw(u32),
        application_tag=draw(u32),
        extension=draw(st.binary(max_size=12)),
        connector_type=draw(st.none() | guids),
        transaction_header=tx,
        session_header=draw(st.none() | st.builds(SessionHeader, window_size=st.integers(1, 0xFFFF))),
    )


@given(st.lists(user_messages(), min_size=1, max_size=8))
def test_built_messages_decode_to_their_values(messages: list[UserMessage]) -> None:
    packets: list[bytes | None] = [m.encode() for m in messages]
    got = assert_same_as_reference(packets)
    for msg, row in zip(messages, got, strict=True):
        if row["kind"] != "UserMessage":
            continue  # an order-queue look-alike class is classified by the wire codec
        props = msg.message_properties_header
        assert row["body"] == props.body
        assert row["label"] == (None if props.label is None else clean_text(props.label))
        assert row["priority"] == msg.priority
        assert (
            row["message_id"]
            == f"{{{str(msg.user_header.source_queue_manager).upper()}}}\\{msg.user_header.message_id}"
        )
        assert row["source_queue_manager"] == str(msg.user_header.source_queue_manager)
        dest = msg.user_header.destination_queue
        if isinstance(dest, DirectQueueFormatName):
            assert row["destination"] == "DIRECT=" + clean_text(dest.direct_format_name)
        assert row["transactional"] is (msg.transaction_header is not None)


@settings(max_examples=300)
@given(st.lists(user_messages(), min_size=1, max_size=4), st.data())
def test_mutated_packets_match_the_reference(messages: list[UserMessage], data: st.DataObject) -> None:
    packets: list[bytes | None] = []
    for msg in messages:
        raw = bytearray(msg.encode())
        for _ in range(data.draw(st.integers(0, 3))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        cut = data.draw(st.sampled_from(["none", "truncate", "extend"]))
        if cut == "truncate":
            raw = raw[: data.draw(st.integers(0, len(raw)))]
        elif cut == "extend":
            raw += data.draw(st.binary(min_size=1, max_size=8))
        packets.append(bytes(raw))
    assert_same_as_reference(packets)


ascii_names = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30)


@settings(max_examples=150)
@given(
    st.lists(
        st.tuples(
            st.none() | ascii_names,
            ascii_names,
            st.none() | ascii_names,
            st.sampled_from(["user", "garbage", "null"]),
        ),
        min_size=2,
        max_size=12,
    ),
    st.booleans(),
    st.booleans(),
    guids,
)
def test_batches_sharing_a_queue_manager_match_the_reference(
    rows: list[tuple[str | None, str, str | None, str]], one_qm: bool, non_ascii: bool, qm: uuid.UUID
) -> None:
    # The decoder's shortcuts: one GUID formatted once for the whole batch, ASCII text assembled with
    # numpy (one non-ASCII label sends the column through Python strings), fast rows gathered out of
    # a batch that also holds reference-path rows, optional queues present in only some rows.
    packets: list[bytes | None] = []
    for i, (label, dest, admin, kind) in enumerate(rows):
        if kind == "null":
            packets.append(None)
            continue
        if kind == "garbage":
            packets.append(b"LIOR" * (i + 1))
            continue
        packets.append(
            UserMessage.build(
                destination="OS:" + dest,
                label=label + ("\u00e9" if non_ascii and i == 1 else "") if label is not None else None,
                admin_queue=None if admin is None else "OS:" + admin,
                source_queue_manager=qm if one_qm else uuid.UUID(int=i),
                destination_queue_manager=qm,
                message_id=i,
            ).encode()
        )
    got = assert_same_as_reference(packets)
    for packet, row in zip(packets, got, strict=True):
        if packet is not None and packet.startswith(b"LIOR"):
            assert row["kind"] == "error"


@given(st.lists(st.none() | st.binary(max_size=200), max_size=8))
def test_arbitrary_bytes_match_the_reference(packets: list[bytes | None]) -> None:
    assert_same_as_reference(packets)


# -- on Spark ---------------------------------------------------------------------------------------


def spark_row(row: dict[str, Any]) -> dict[str, Any]:
    """A reference row as Spark's collect() gives it (timestamps naive, in the UTC session zone)."""
    out = dict(row)
    if out["sent_time"] is not None:
        out["sent_time"] = out["sent_time"].replace(tzinfo=None)
    return out


def test_decode_packets_on_the_vectors(spark: Any) -> None:
    from pymsmq.spark import decode_packets

    df = spark.createDataFrame([(p.name, p.read_bytes()) for p in ALL_VECTORS], "name string, packet binary")
    out = decode_packets(df)
    assert out.columns == ["name", "packet", *NAMES]
    rows = {r["name"]: r.asDict() for r in out.collect()}
    assert set(rows) == {p.name for p in ALL_VECTORS}
    for path in ALL_VECTORS:
        row = rows[path.name]
        assert row.pop("name") == path.name
        assert row.pop("packet") == path.read_bytes()
        assert row == spark_row(packet_row(path.read_bytes())), path.name
    assert rows["queuejumper-nse-usermessage-srmp-malformed-datalength.bin"]["kind"] == "error"
    assert "SRMPEnvelopeHeader" in rows["queuejumper-nse-usermessage-srmp-malformed-datalength.bin"]["error"]


def test_decode_packets_thousands_of_random_packets(spark: Any) -> None:
    import random

    rnd = random.Random(6)
    packets: list[tuple[int, bytes | None]] = []
    for i in range(4000):
        msg = UserMessage.build(
            destination=rnd.choice(
                ["OS:host\\private$\\q", "TCP:10.0.0.1\\PRIVATE$\\orders", "http://h/msmq/x"]
            ),
            body=rnd.randbytes(rnd.randrange(0, 400)),
            label=rnd.choice([None, "", f"order {i}", "é🙂" * rnd.randrange(4)]),
            priority=rnd.randrange(8),
            source_queue_manager=uuid.UUID(int=rnd.getrandbits(128)),
            message_id=rnd.getrandbits(32),
            sent_time=rnd.getrandbits(31),
            recoverable=rnd.random() < 0.5,
            message_class=rnd.choice([0, 1, 0x8001]),
            admin_queue=rnd.choice([None, "OS:admin\\q"]),
            correlation_id=rnd.randbytes(20),
            application_tag=rnd.getrandbits(32),
            extension=rnd.randbytes(rnd.choice([0, 4, 9])),
            transaction_header=rnd.choice([None, TransactionHeader()]),
        )
        data = msg.encode()
        if i % 97 == 0:
            data = data[: rnd.randrange(len(data))]  # some truncated packets
        packets.append((i, data))
    packets.append((len(packets), None))
    df = spark.createDataFrame(packets, "id int, packet binary").repartition(3)
    out = decode_packets_sorted(df)
    assert len(out) == len(packets)
    errors = 0
    for (i, data), row in zip(packets, out, strict=True):
        assert row.pop("id") == i
        row.pop("packet")
        assert row == spark_row(packet_row(data)), i
        errors += row["kind"] == "error"
    assert errors == len([1 for i, _ in packets if i % 97 == 0]) + 1


def decode_packets_sorted(df: Any) -> list[dict[str, Any]]:
    from pymsmq.spark import decode_packets

    return [r.asDict() for r in decode_packets(df).orderBy("id").collect()]


def test_decode_packets_without_input_columns(spark: Any) -> None:
    from pymsmq.spark import decode_packets

    frame7 = (VECTORS / "mqqb-4.1.7-frame7-usermessage.bin").read_bytes()
    df = spark.createDataFrame([(frame7, 1)], "raw binary, n int")
    out = decode_packets(df, "raw", keep_input=False)
    assert out.columns == NAMES
    assert out.first()["label"] == "mqsender label"


def test_decode_packets_argument_errors(spark: Any) -> None:
    from pymsmq.spark import decode_packets

    df = spark.createDataFrame([(b"x", "y", 1)], "packet binary, s string, label int")
    with pytest.raises(ValueError, match="no column"):
        decode_packets(df, "missing")
    with pytest.raises(ValueError, match="not binary"):
        decode_packets(df, "s")
    with pytest.raises(ValueError, match="clash"):
        decode_packets(df)
    assert "label" in decode_packets(df, keep_input=False).columns


def test_spark_extra_missing_gives_a_clear_error() -> None:
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "import pymsmq.spark\n"
        "import pymsmq.spark.pcap_parse, pymsmq.spark.columns\n"
        "try:\n    pymsmq.spark.decode_packets\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pymsmq[spark]" in out


def test_unknown_attribute() -> None:
    import pymsmq.spark

    with pytest.raises(AttributeError):
        pymsmq.spark.no_such_name  # noqa: B018


def test_common_messages_take_the_vectorised_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import pymsmq.spark.arrow_decode as arrow_decode

    def no_fallback(data: object) -> dict[str, Any]:
        raise AssertionError("the per-row fallback ran")

    packets: list[bytes | None] = [
        UserMessage.build(
            destination="OS:h\\private$\\q",
            label=f"l{i}",
            body=bytes(i),
            admin_queue="OS:a\\q" if i % 2 else None,
            transaction_header=TransactionHeader() if i % 3 else None,
            session_header=SessionHeader() if i % 5 else None,
        ).encode()
        for i in range(50)
    ]
    expected = [packet_row(p) for p in packets]
    monkeypatch.setattr(arrow_decode, "packet_row", no_fallback)
    assert decode_array(pa.array(packets, pa.binary())).to_pylist() == expected
