"""``hot.read_receive_request`` with its last-payload memo reads exactly what a fresh read gives."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from pymsmq.protocol import Action, hot

bodies = st.builds(
    hot.receive_request_body,
    st.integers(0, 0xFFFFFFFF),
    st.sampled_from([int(a) for a in Action]),
    st.integers(0, 0xFFFFFFFF),
    st.integers(0, 0xFFFFFFFF),
    st.integers(0, (1 << 64) - 1),
    st.none() | st.integers(0, 2) | st.builds(uuid.UUID, int=st.integers(0, (1 << 128) - 1)),
    st.lists(st.integers(0, 0xFFFFFFFF), max_size=6).map(tuple),
    st.integers(0, 0xFFFFFFFF),
)


@given(st.lists(bodies, min_size=1, max_size=4), st.lists(st.integers(0, 3), max_size=12))
def test_memoized_reads_equal_fresh_reads(payloads: list[bytes], order: list[int]) -> None:
    for i in [*range(len(payloads)), *order]:
        data = payloads[i % len(payloads)]
        got = hot.read_receive_request(bytes(data))
        assert got is not None
        assert got == hot._read_receive_request(data)


@given(bodies, st.data())
def test_damaged_payload_after_a_good_one_is_read_fresh(body: bytes, data: st.DataObject) -> None:
    hot.read_receive_request(body)
    damaged = bytearray(body)
    i = data.draw(st.integers(0, len(body) - 1))
    damaged[i] = data.draw(st.integers(0, 255))
    assert hot.read_receive_request(bytes(damaged)) == hot._read_receive_request(bytes(damaged))
