"""``decode_array(packets, columns)``: a subset of the decoded columns equals the full decode's columns.

The decoder skips building the columns not wanted, never the checks that pick the reference path, so
every selected column must equal the same column of the full decode (``columns=None``) on the shared
vectors, on built and mutated packets and on arbitrary bytes -- ``kind``/``error`` included, whether
or not ``error`` is selected.  No Spark here.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.spark.arrow_decode import ARROW_SCHEMA, arrow_schema, decode_array, selected_columns
from pymsmq.spark.columns import COLUMNS, packet_row
from pymsmq.wire import SessionHeader, TransactionHeader, UserMessage

VECTORS = sorted((Path(__file__).parents[1] / "vectors").glob("*.bin"))
NAMES = [name for name, _ in COLUMNS]
#: The subset bench/spark.py measures.
TYPICAL = ["kind", "message_id", "sent_time", "priority", "destination", "label"]

subsets = st.lists(st.sampled_from(NAMES), min_size=1, max_size=len(NAMES), unique=True)


def assert_subset_matches(packets: list[bytes | None], columns: list[str]) -> pa.RecordBatch:
    """Decode ``packets`` whole and with ``columns``; the shared columns must be equal."""
    array = pa.array(packets, pa.binary())
    full = decode_array(array)
    part = decode_array(array, columns)
    assert part.schema == arrow_schema(columns)
    assert part.schema.names == columns
    assert part.num_rows == len(packets)
    for name in columns:
        assert part.column(name).to_pylist() == full.column(name).to_pylist(), name
    return part


# -- selected_columns / arrow_schema ----------------------------------------------------------------


def test_none_selects_every_column_in_order() -> None:
    assert selected_columns(None) == tuple(NAMES)
    assert arrow_schema(NAMES) == ARROW_SCHEMA
    assert decode_array(pa.array([VECTORS[0].read_bytes()], pa.binary())).schema == ARROW_SCHEMA


def test_selection_keeps_the_given_order() -> None:
    assert selected_columns(("label", "kind")) == ("label", "kind")
    assert selected_columns(iter(["error"])) == ("error",)


@pytest.mark.parametrize(
    ("columns", "bad"),
    [
        ([], "at least one"),
        (("kind", "nope", "Label"), "['nope', 'Label']"),
        (["kind", "label", "kind", "label", "body"], "['kind', 'label']"),
        ("kind", "'kind'"),
    ],
)
def test_bad_selections_raise_naming_the_bad_and_the_valid_names(columns: list[str], bad: str) -> None:
    with pytest.raises(ValueError) as info:
        selected_columns(columns)
    assert bad in str(info.value)
    assert str(NAMES) in str(info.value)
    with pytest.raises(ValueError):
        decode_array(pa.array([b""], pa.binary()), columns)


def test_empty_batch_has_the_selected_schema() -> None:
    batch = decode_array(pa.array([], pa.binary()), ["label", "kind"])
    assert batch.num_rows == 0
    assert batch.schema == arrow_schema(["label", "kind"])


# -- the shared vectors -----------------------------------------------------------------------------


def test_vectors_are_present() -> None:
    assert len(VECTORS) >= 12


@pytest.mark.parametrize("name", NAMES)
def test_every_single_column_of_the_vectors(name: str) -> None:
    packets: list[bytes | None] = [p.read_bytes() for p in VECTORS] + [None, b"", b"LIOR" * 20]
    assert_subset_matches(packets, [name])


@settings(max_examples=60)
@given(subsets, st.randoms(use_true_random=False))
def test_any_subset_of_the_vectors(columns: list[str], rnd: object) -> None:
    packets: list[bytes | None] = [p.read_bytes() for p in VECTORS] * 2
    rnd.shuffle(packets)  # type: ignore[attr-defined]
    assert_subset_matches(packets, columns)


def test_kind_says_error_when_error_is_not_selected() -> None:
    good = UserMessage.build(destination="OS:h\\q", label="x").encode()
    part = assert_subset_matches([good, good[:40], None, good], ["kind", "label"])
    assert part.column("kind").to_pylist() == ["UserMessage", "error", "error", "UserMessage"]
    assert part.column("label").to_pylist() == ["x", None, None, "x"]


def test_typical_subset_values() -> None:
    qm = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
    packets: list[bytes | None] = [
        UserMessage.build(
            destination="TCP:10.0.0.1\\PRIVATE$\\orders",
            label=f"order {i}",
            priority=i % 8,
            source_queue_manager=qm,
            message_id=i,
            sent_time=1_700_000_000 + i,
        ).encode()
        for i in range(50)
    ]
    part = assert_subset_matches(packets, TYPICAL)
    rows = part.to_pylist()
    for i, row in enumerate(rows):
        ref = packet_row(packets[i])
        assert row == {name: ref[name] for name in TYPICAL}
    assert rows[7]["message_id"] == "{557358D1-9150-9595-4997-B6E611EA26C6}\\7"
    assert rows[7]["destination"] == "DIRECT=TCP:10.0.0.1\\PRIVATE$\\orders"


# -- Hypothesis: built, mutated and arbitrary packets ------------------------------------------------

ascii_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30)
any_text = st.text(
    st.characters(min_codepoint=1, max_codepoint=0x2FFF, exclude_categories=("Cs",)), max_size=40
)
u32 = st.integers(0, 2**32 - 1)


@st.composite
def user_messages(draw: st.DrawFn, shared_destination: str | None = None) -> bytes:
    text = any_text if draw(st.booleans()) else ascii_text
    return UserMessage.build(  # type: ignore[no-any-return]
        destination=shared_destination or "OS:" + draw(text),
        body=draw(st.binary(max_size=100)),
        label=draw(st.none() | text),
        priority=draw(st.integers(0, 7)),
        source_queue_manager=uuid.UUID(int=draw(st.sampled_from([1, 2]) | st.integers(0, 2**128 - 1))),
        message_id=draw(u32),
        sent_time=draw(u32),
        recoverable=draw(st.booleans()),
        admin_queue=draw(st.none() | text.map(lambda s: "OS:a" + s)),
        response_queue=draw(st.none() | text.map(lambda s: "OS:r" + s)),
        message_class=draw(st.sampled_from([0, 1, 0x8001, 0xFF, 0x4000])),
        correlation_id=draw(st.binary(min_size=20, max_size=20)),
        application_tag=draw(u32),
        extension=draw(st.binary(max_size=8)),
        connector_type=draw(st.none() | st.just(uuid.UUID(int=5))),
        transaction_header=draw(st.none() | st.just(TransactionHeader())),
        session_header=draw(st.none() | st.builds(SessionHeader, window_size=st.integers(1, 0xFFFF))),
    ).encode()


def mutated(data: st.DataObject, packet: bytes) -> bytes | None:
    """``packet`` kept, nulled, cut, extended, or with a few bytes changed (a malformed row, maybe)."""
    how = data.draw(st.sampled_from(["keep", "keep", "null", "cut", "extend", "poke"]))
    if how == "null":
        return None
    if how == "cut":
        return packet[: data.draw(st.integers(0, len(packet)))]
    if how == "extend":
        return packet + data.draw(st.binary(min_size=1, max_size=8))
    raw = bytearray(packet)
    if how == "poke":
        for _ in range(data.draw(st.integers(1, 3))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    return bytes(raw)


@settings(max_examples=200)
@given(st.lists(user_messages(), min_size=1, max_size=8), subsets, st.data())
def test_built_and_mutated_packets(packets: list[bytes], columns: list[str], data: st.DataObject) -> None:
    assert_subset_matches([mutated(data, p) for p in packets], columns)


@settings(max_examples=100)
@given(
    st.integers(2, 12),
    st.sampled_from(["OS:host\\private$\\q", "TCP:10.0.0.1\\PRIVATE$\\orders"]),
    subsets,
    st.data(),
)
def test_uniform_batches(count: int, destination: str, columns: list[str], data: st.DataObject) -> None:
    # One destination (the uniform walk, a repeated text), maybe one odd row (the per-row walk or
    # the reference path).
    packets: list[bytes | None] = [data.draw(user_messages(destination)) for _ in range(count)]
    if data.draw(st.booleans()):
        odd = data.draw(st.integers(0, count - 1))
        packets[odd] = mutated(data, packets[odd] or b"")
    assert_subset_matches(packets, columns)


@given(st.lists(st.none() | st.binary(max_size=200), max_size=8), subsets)
def test_arbitrary_bytes(packets: list[bytes | None], columns: list[str]) -> None:
    assert_subset_matches(packets, columns)
