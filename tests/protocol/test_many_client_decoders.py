"""The client's SEND_MANY / RECEIVE_MANY fast paths against the general ones.

``decode_received`` (in-place ``decode_simple_at`` fast path, ``destination``), ``decode_sent_ids``
(against ``decode_send_facts``), ``decode_simple_at`` (against ``decode_simple`` of the slice) and
``encode_plain`` (against ``encode_simple``).
"""

from __future__ import annotations

import struct
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.protocol.batch_fast import decode_sent_ids
from pymsmq.protocol.batch_ops import (
    decode_messages,
    decode_received,
    decode_send_facts,
    encode_messages,
    encode_send_results,
    error_result,
    send_result,
)
from pymsmq.protocol.fast_packet import decode_simple, decode_simple_at, encode_plain, encode_simple
from pymsmq.protocol.message_codec import (
    CLIENT_RECEIVE_PROPIDS,
    decode_message,
    encode_packet,
    fact_properties,
)

sys.path.insert(0, str(Path(__file__).parent))

from test_batch_ops_codecs import _stored
from test_client_fast_paths import GUID, simple_messages

Q = "DIRECT=OS:h\\private$\\q"
OTHER = "DIRECT=OS:h\\private$\\other"


def _general(data: bytes, destination: str | None) -> list[dict[str, object]]:
    out = []
    for p, props in decode_messages(data):
        m = decode_message(p, props)
        if destination is not None:  # what the client's receive_batches did with its format name
            m.destination_queue = m.destination_queue or destination
        out.append(m.__dict__)
    return out


def _client_list(messages: list[Message], dest: str) -> bytes:
    return encode_messages(
        [(encode_packet(m, dest), fact_properties(m, CLIENT_RECEIVE_PROPIDS)) for m in messages]
    )


@settings(max_examples=200)
@given(
    st.lists(_stored(), max_size=6),
    st.sampled_from([Q, OTHER]),
    st.sampled_from([None, Q]),
)
def test_decode_received_with_destination(messages: list[Message], stored_in: str, dest: str | None) -> None:
    for m in messages[::2]:
        m.destination_queue = stored_in  # OTHER: the packet carries it (not a simple packet)
    data = _client_list(messages, Q)
    got = [m.__dict__ for m in decode_received(data, dest)]
    assert got == _general(data, dest)


@given(st.lists(_stored(), min_size=1, max_size=4), st.data())
def test_decode_received_on_damaged_client_lists(messages: list[Message], data: st.DataObject) -> None:
    encoded = bytearray(_client_list(messages, "q"))
    i = data.draw(st.integers(0, len(encoded) - 1))
    encoded[i] = data.draw(st.integers(0, 255))
    blob = bytes(encoded)
    try:
        general = _general(blob, "q")
    except WireError:
        with pytest.raises(WireError):
            decode_received(blob, "q")
        return
    assert [m.__dict__ for m in decode_received(blob, "q")] == general


@given(
    st.lists(_stored(), max_size=5),
    st.lists(st.tuples(st.integers(1, 0xFFFF), st.text(max_size=5)), max_size=2),
)
def test_decode_sent_ids_equals_decode_send_facts(
    messages: list[Message], errors: list[tuple[int, str]]
) -> None:
    data = struct.pack("<I", len(messages) + len(errors)) + b"".join(send_result(m) for m in messages)
    data += b"".join(error_result(h, t) for h, t in errors)
    ids = decode_sent_ids(data)
    if errors:
        assert ids is None
        return
    assert ids is not None
    facts = decode_send_facts(data)
    assert [(0, lineage + ordinal.to_bytes(4, "little"), sent, "") for lineage, ordinal, sent in ids] == facts


@given(st.binary(max_size=120))
def test_decode_sent_ids_on_arbitrary_bytes(blob: bytes) -> None:
    ids = decode_sent_ids(blob)
    if ids is not None:
        facts = decode_send_facts(blob)
        assert [(0, a + b.to_bytes(4, "little"), c, "") for a, b, c in ids] == facts


def test_decode_sent_ids_other_shapes() -> None:
    assert decode_sent_ids(b"") is None
    assert decode_sent_ids(encode_send_results([])) == []
    assert decode_sent_ids(encode_send_results([(0, (), "")])) is None


@given(simple_messages, st.binary(max_size=9), st.binary(max_size=9), st.integers(-1, 1))
def test_decode_simple_at_is_decode_simple_of_the_slice(
    m: Message, before: bytes, after: bytes, skew: int
) -> None:
    m.validate()
    packet = encode_packet(m)
    data = before + packet + after
    n = min(len(packet) + skew, len(packet) + len(after))
    assert decode_simple_at(data, len(before), n) == decode_simple(data[len(before) : len(before) + n])


_plain_messages = st.builds(
    Message,
    body=st.binary(max_size=300),
    label=st.text(max_size=249),
    priority=st.integers(0, 7),
    delivery=st.integers(0, 1),
    id=st.none() | st.builds(ObjectId, st.sampled_from([GUID, uuid.UUID(int=0)]), st.integers(0, 0xFFFFFFFF)),
    source_machine_guid=st.none() | st.sampled_from([GUID, uuid.UUID(int=5)]),
    sent_time=st.none() | st.floats(0, 2.0**33, allow_nan=False),
    destination_queue=st.none() | st.just(Q),
    lookup_id=st.integers(0, 2**64 - 1),
)


@given(st.one_of(_plain_messages, simple_messages))
def test_encode_plain_is_encode_simple(m: Message) -> None:
    try:
        m.validate()
    except Exception:
        return
    plain = encode_plain(m)
    assert plain is None or plain == encode_simple(m)
    if (
        m.__dict__.keys() <= {"body", "priority", "delivery", "sent_time", "lookup_id"}
        and m.sent_time is not None
    ):
        assert (plain is None) == (encode_simple(m) is None)
