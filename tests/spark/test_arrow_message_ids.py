"""``arrow_decode.message_ids``: the fixed-width build (every ordinal with the same number of digits)
and the joined build give exactly the Python text "{prefix}{ordinal}", with one shared prefix or one
per row; and whole batches of consecutive ids decode as the per-row reference does."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.spark.arrow_decode import decode_array, message_ids
from pymsmq.spark.columns import packet_row
from pymsmq.wire import UserMessage

u32 = st.integers(0, 2**32 - 1)
ascii_rows = st.binary(min_size=39, max_size=39).map(lambda b: bytes(c & 0x7F for c in b))


def expected(prefixes: list[bytes], ordinals: list[int]) -> list[str]:
    return [
        (prefixes[0] if len(prefixes) == 1 else prefixes[i]).decode("ascii") + str(o)
        for i, o in enumerate(ordinals)
    ]


@settings(max_examples=300)
@given(
    st.one_of(
        st.lists(u32, max_size=20),  # mostly mixed digit counts: the joined build
        st.tuples(st.integers(1, 10), st.lists(u32, min_size=1, max_size=20)).map(  # one digit count
            lambda t: (
                [10 ** (t[0] - 1) + o % (min(10 ** t[0], 2**32) - 10 ** (t[0] - 1)) for o in t[1]]
                if t[0] > 1
                else [o % 10 for o in t[1]]
            )
        ),
    ),
    st.booleans(),
    st.data(),
)
def test_message_ids_match_python_text(ordinals: list[int], shared: bool, data: st.DataObject) -> None:
    rows = 1 if shared else len(ordinals)
    prefixes = [data.draw(ascii_rows) for _ in range(rows)] if rows else []
    block = (
        np.frombuffer(b"".join(prefixes), np.uint8).reshape(rows, 39) if rows else np.zeros((0, 39), np.uint8)
    )
    got = message_ids(block, np.array(ordinals, np.uint32))
    assert got.type == pa.string()
    assert got.to_pylist() == (expected(prefixes, ordinals) if prefixes else [])
    got.validate(full=True)


def test_batches_of_consecutive_ids_match_the_reference() -> None:
    qm = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
    for first in (0, 7, 95, 100_000, 2**32 - 3):  # one digit count, or crossing a power of ten
        packets = [
            UserMessage.build(
                destination="OS:host\\q", source_queue_manager=qm, message_id=first + i
            ).encode()
            for i in range(3)
        ]
        got = decode_array(pa.array(packets, pa.binary())).to_pylist()
        assert got == [packet_row(p) for p in packets]
