"""READ_RANGE payloads and the MESSAGE_BATCH blob: vectors, round trips, arbitrary bytes."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pymsmq
from pymsmq.errors import WireError
from pymsmq.model.ids import ObjectId
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import Op, RangeFlags
from pymsmq.protocol.message_batch import (
    RECORD_SIZE,
    VAR_COLUMNS,
    Bits,
    decode_batch,
    encode_batch,
    first_lookup_id,
    split_batch,
)


def test_read_range_request_vector() -> None:
    req = pm.ReadRangeRequest(7, 1, 0x100, 50, 0x1000, RangeFlags.RECEIVE, None, 2, 6)
    expected = (
        struct.pack("<IQQIII", 7, 1, 0x100, 50, 0x1000, 1) + b"\x00" + b"\x02\x06"
    )  # XACT kind NONE, then min/max priority
    assert req.encode() == expected and pm.ReadRangeRequest.decode(expected) == req
    assert pm.REQUEST_TYPES[Op.READ_RANGE] is pm.ReadRangeRequest and int(Op.READ_RANGE) == 0x40
    with pytest.raises(WireError):
        pm.ReadRangeRequest.decode(expected[:-1] + b"\x08")  # priority 8
    with pytest.raises(WireError):
        pm.ReadRangeRequest.decode(expected + b"\x00")


def test_read_range_response_vector() -> None:
    resp = pm.ReadRangeResponse(2, 1, 9, 3, 12, 40, b"ab")
    expected = struct.pack("<IBQQQQI", 2, 1, 9, 3, 12, 40, 2) + b"ab"
    assert resp.encode() == expected and pm.ReadRangeResponse.decode(expected) == resp


def test_message_batch_vector() -> None:
    m = pymsmq.Message(body=b"hi", label="L")
    m.lookup_id = 5
    m.id = ObjectId(uuid.UUID(int=1), 2)
    blob = encode_batch([m])
    assert blob[:8] == struct.pack("<II", 1, len(VAR_COLUMNS))
    rec = blob[8 : 8 + RECORD_SIZE]
    assert struct.unpack_from("<Q", rec)[0] == 5
    assert rec[57] == Bits.HAS_ID  # bits: after 8+8+8+7*4 bytes and 5 u8 fields
    assert rec[60:80] == bytes(m.id)  # after priv_level and auth_level
    tail = blob[8 + RECORD_SIZE :]
    assert tail[:5] == struct.pack("<I", 1) + b"L"  # label: one length, then the UTF-8 bytes
    assert tail[5:11] == struct.pack("<I", 2) + b"hi"
    assert decode_batch(blob) == [m]
    assert encode_batch([]) == struct.pack("<II", 0, 6) + b""


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(
    st.lists(
        st.builds(
            lambda body, label, prio, resp: pymsmq.Message(
                body=body, label=label, priority=prio, response_queue=resp
            ),
            st.binary(max_size=30),
            _TEXT,
            st.integers(0, 7),
            st.none() | st.just("DIRECT=OS:h\\q"),
        ),
        max_size=6,
    )
)
def test_message_batch_round_trip(ms: list[pymsmq.Message]) -> None:
    assert decode_batch(encode_batch(ms)) == ms


@given(st.lists(st.integers(0, 2**64 - 1), max_size=4))
def test_first_lookup_id_reads_the_first_record(ids: list[int]) -> None:
    # What a two-phase READ_RANGE's END_RECEIVE names (docs/protocol.md).
    ms = [pymsmq.Message(body=b"x") for _ in ids]
    for m, lid in zip(ms, ids, strict=True):
        m.lookup_id = lid
    data = encode_batch(ms)
    assert first_lookup_id(data) == (ids[0] if ids else None)
    assert first_lookup_id(data[: 8 + RECORD_SIZE - 1]) is None  # no whole record: none


@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(0, 3),
    st.none() | st.uuids() | st.integers(0, 255),
    st.integers(0, 7),
    st.integers(0, 7),
)
def test_read_range_request_round_trip(
    handle: int, a: int, b: int, flags: int, xact: object, lo: int, hi: int
) -> None:
    req = pm.ReadRangeRequest(handle, a, b, 10, 20, flags, xact, lo, hi)  # type: ignore[arg-type]
    assert pm.ReadRangeRequest.decode(req.encode()) == req


@given(st.binary(max_size=400))
def test_arbitrary_bytes_give_a_value_or_wire_error(data: bytes) -> None:
    for decode in (pm.ReadRangeRequest.decode, pm.ReadRangeResponse.decode, split_batch, decode_batch):
        try:
            decode(data)
        except WireError:
            pass


@given(st.integers(0, 200), st.binary(max_size=8))
def test_truncated_and_extended_batches(cut: int, extra: bytes) -> None:
    m = pymsmq.Message(body=b"body", label="x")
    blob = encode_batch([m, m])
    with pytest.raises(WireError):
        split_batch(blob[: min(cut, len(blob) - 1)])
    if extra:
        with pytest.raises(WireError):
            split_batch(blob + extra)


@given(
    st.lists(
        st.none() | st.floats(0, 2.0**40, allow_nan=False, allow_infinity=False),
        max_size=6,
    ),
    st.booleans(),
)
def test_a_batch_carries_last_move_times_when_asked(times: list[float | None], asked: bool) -> None:
    # RangeFlags.LAST_MOVE_TIME: a seventh column, an 8-byte float64 or null per message; without
    # the flag (and from a server that predates it) six columns and every last_move_time None.
    ms = []
    for t in times:
        m = pymsmq.Message(body=b"x")
        m.last_move_time = t
        ms.append(m)
    blob = encode_batch(ms, last_move_time=asked)
    assert struct.unpack_from("<I", blob, 4)[0] == (7 if asked else 6)
    assert len(split_batch(blob).columns) == (7 if asked else 6)
    assert [m.last_move_time for m in decode_batch(blob)] == (times if asked else [None] * len(times))


def test_a_batch_with_a_bad_last_move_time_or_column_count_is_refused() -> None:
    m = pymsmq.Message(body=b"x")
    m.last_move_time = 5.0
    blob = encode_batch([m], last_move_time=True)
    assert blob.endswith(struct.pack("<Id", 8, 5.0))
    bads = (struct.pack("<Id", 8, float("nan")), struct.pack("<Id", 8, -1.0), struct.pack("<IHxxxxxx", 6, 1))
    for bad in bads:
        with pytest.raises(WireError):
            decode_batch(blob[:-12] + bad)
    for columns in (5, 9):
        with pytest.raises(WireError, match="not 6, 7 or 8"):
            split_batch(struct.pack("<II", 0, columns))
    assert RangeFlags.LAST_MOVE_TIME == 0x20


@given(
    st.lists(st.none() | st.text(st.characters(blacklist_categories=("Cs",)), max_size=30), max_size=6),
    st.booleans(),
)
def test_a_batch_carries_destination_format_names_when_asked(names: list[str | None], asked: bool) -> None:
    # RangeFlags.DESTINATION_FORMAT_NAME: an eighth column after the last move times (which come
    # with it: columns are positional), UTF-8 text or null per message; without the flag every
    # destination_format_name is None.
    ms = []
    for name in names:
        m = pymsmq.Message(body=b"x")
        m.destination_format_name = name
        m.last_move_time = 7.0
        ms.append(m)
    blob = encode_batch(ms, destination_format_name=asked)
    assert struct.unpack_from("<I", blob, 4)[0] == (8 if asked else 6)
    back = decode_batch(blob)
    assert [m.destination_format_name for m in back] == (names if asked else [None] * len(names))
    assert [m.last_move_time for m in back] == ([7.0] * len(names) if asked else [None] * len(names))


def test_a_batch_with_a_destination_format_name_not_utf8_is_refused() -> None:
    m = pymsmq.Message(body=b"x")
    m.destination_format_name = "DIRECT=OS:a\\private$\\b,DIRECT=OS:a\\private$\\c"
    blob = encode_batch([m], destination_format_name=True)
    assert blob.endswith(m.destination_format_name.encode())
    bad = blob[:-1] + b"\xff"
    with pytest.raises(WireError, match="not UTF-8"):
        decode_batch(bad)
    assert RangeFlags.DESTINATION_FORMAT_NAME == 0x80
