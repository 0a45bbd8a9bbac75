"""``arrow_walk.walk_uniform`` (one layout for the whole batch) gives exactly ``walk_rows``'s answer.

Batches of UserMessages sharing one layout (queue names, ConnectorType, TransactionHeader with or without
Flags.CG, SessionHeader), labels and bodies varying, then maybe one row differing in layout, corrupted
or null: the uniform walk either declines (``None``) or agrees with the per-row walk on every row still
on the fast path, and ``decode_array`` agrees with the per-row reference decoder ``columns.packet_row``.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.spark.arrow_decode import _FIXED, decode_array
from pymsmq.spark.arrow_layout import PacketBytes
from pymsmq.spark.arrow_walk import walk_rows, walk_uniform
from pymsmq.spark.columns import packet_row
from pymsmq.wire import SessionHeader, TransactionHeader, UserMessage

QM = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
names = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=30)
layouts = st.fixed_dictionaries(
    {
        "destination": names.map(lambda s: "OS:" + s),
        "admin_queue": st.one_of(st.none(), names.map(lambda s: "OS:" + s)),
        "response_queue": st.one_of(st.none(), names.map(lambda s: "OS:" + s)),
        "connector_type": st.one_of(st.none(), st.just(QM)),
        "transaction": st.sampled_from(["none", "plain", "cg"]),
        "session": st.booleans(),
    }
)


def build(layout: dict[str, object], i: int) -> bytes:
    tx = {
        "none": None,
        "plain": TransactionHeader(flags=0x4 if i % 2 else 0),
        "cg": TransactionHeader(flags=0x1 | 0x8, connector_qm_guid=QM),
    }[str(layout["transaction"])]
    session = SessionHeader(ack_sequence_number=1, window_size=1)
    return UserMessage.build(
        destination=str(layout["destination"]),
        admin_queue=layout["admin_queue"],  # type: ignore[arg-type]
        response_queue=layout["response_queue"],  # type: ignore[arg-type]
        connector_type=layout["connector_type"],  # type: ignore[arg-type]
        transaction_header=tx,
        session_header=session if layout["session"] else None,
        label=f"label {i}" if i % 3 else None,
        source_queue_manager=QM,
        message_id=i,
        priority=i % 8,  # BaseHeader.Flags and UserHeader.Flags bits outside the layout vary
        recoverable=bool(i & 1),
        journal_negative=bool(i & 2),
        body=bytes([i & 0xFF]) * (i * 7 % 23),
    ).encode()


def walks(packets: list[bytes | None]) -> tuple[object, object]:
    """(walk_uniform's answer, walk_rows's answer) for the batch, from the same starting rows."""
    array = pa.array(packets, pa.binary())
    _validity, obuf, dbuf = array.buffers()
    offsets = np.frombuffer(obuf, np.int32, count=len(array) + 1).astype(np.int64)
    starts = offsets[:-1]
    data = PacketBytes(dbuf if dbuf is not None else pa.py_buffer(b""), starts)
    fixed = data.gather(starts, _FIXED)
    psize = fixed["packet_size"].astype(np.int64)
    uflags = fixed["uflags"].astype(np.int64)
    valid = np.asarray(array.is_valid())
    ok = valid & (offsets[1:] - starts >= 64) & ((psize & 3) == 0) & (psize <= offsets[1:] - starts)
    uniform = walk_uniform(data, starts, psize, uflags, ok.copy())
    rows = walk_rows(data, starts, starts + psize, uflags, ok.copy())
    return uniform, rows


def assert_same_walk(uniform: object, rows: object) -> None:
    u_ok, u_names, u_pos, u_tx, u_txf = uniform  # type: ignore[misc]
    r_ok, r_names, r_pos, r_tx, r_txf = rows  # type: ignore[misc]
    assert (u_ok == r_ok).all()
    keep = r_ok
    for (up, us, ue), (rp, rs, re) in zip(u_names, r_names, strict=True):
        assert (up[keep] == rp[keep]).all()
        present = keep & rp
        assert (us[present] == rs[present]).all() and (ue[present] == re[present]).all()
    assert (u_pos[keep] == r_pos[keep]).all()
    assert (u_tx[keep] == r_tx[keep]).all()
    assert (u_txf[keep & r_tx] == r_txf[keep & r_tx]).all()


@settings(max_examples=150, deadline=None)
@given(layouts, st.integers(1, 12), st.data())
def test_uniform_walk_matches_the_row_walk(
    layout: dict[str, object], count: int, data: st.DataObject
) -> None:
    packets: list[bytes | None] = [build(layout, i) for i in range(count)]
    change = data.draw(st.sampled_from(["none", "layout", "corrupt", "null"]))
    row = data.draw(st.integers(0, count - 1))
    if change == "layout":
        packets[row] = build(data.draw(layouts), row)
    elif change == "corrupt":
        raw = bytearray(packets[row])  # type: ignore[arg-type]
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] ^= 1 << data.draw(st.integers(0, 7))
        packets[row] = bytes(raw)
    elif change == "null":
        packets[row] = None
    uniform, rows = walks(packets)
    if change == "none" or (change == "null" and count > 1):
        assert uniform is not None  # one layout: the uniform walk takes it
    if uniform is not None:
        assert_same_walk(uniform, rows)
    got = decode_array(pa.array(packets, pa.binary())).to_pylist()
    for i, (packet, decoded) in enumerate(zip(packets, got, strict=True)):
        assert decoded == packet_row(packet), f"row {i}"


def test_uniform_walk_declines_mixed_layouts() -> None:
    base = {
        "destination": "OS:host\\q",
        "admin_queue": None,
        "response_queue": None,
        "connector_type": None,
        "transaction": "none",
        "session": False,
    }
    longer = {**base, "destination": "OS:host\\queue"}
    with_tx = {**base, "transaction": "plain"}
    with_cg = {**base, "transaction": "cg"}
    assert walks([build(base, 1), build(longer, 2)])[0] is None  # Count differs
    assert walks([build(base, 1), build(with_tx, 2)])[0] is None  # UserHeader.Flags differ
    assert walks([build(with_tx, 1), build(with_cg, 2)])[0] is None  # TransactionHeader size differs
    assert walks([None, None])[0] is None  # no candidate row
    uniform, rows = walks([build(with_cg, i) for i in range(5)])
    assert uniform is not None
    assert_same_walk(uniform, rows)
    # A PacketSize ending inside the queue name (or the TransactionHeader): that row only is dropped.
    for layout, size in ((base, 68), (with_tx, 92)):  # the name ends at 88, the TransactionHeader at 108
        short = bytearray(build(layout, 3))
        short[8:12] = size.to_bytes(4, "little")
        packets: list[bytes | None] = [build(layout, 1), bytes(short), build(layout, 5)]
        uniform, rows = walks(packets)
        assert uniform is not None
        assert_same_walk(uniform, rows)
        assert uniform[0].tolist() == [True, False, True]  # type: ignore[index]
