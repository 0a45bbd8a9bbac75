"""SEND_MANY's owned express fast path (server/batches.py ``_send_owned``) against SEND one by one.

A batch whose messages all decode with ``decode_for_send`` is queued without copies; any other batch
(a PrivacyLevel, a recoverable message, a transaction) takes the general path.  Both must queue the
same messages and answer the same results as SENDs of them one at a time.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

from pymsmq import Message, MSMQError
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.protocol.batch_ops import (
    ReceiveManyRequest,
    SendManyRequest,
    decode_received,
    decode_send_results,
    encode_packets,
)
from pymsmq.protocol.fast_packet import decode_simple
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS, encode_packet

_PLAIN = [
    Message(body=b"a" * i, label=f"L{i}" * (i % 3), priority=i % 8, app_specific=i, journal=i % 3)
    for i in range(40)
]
_ODD = [
    Message(body=b"c", correlation_id=ObjectId.from_bytes(bytes(range(20))), extension=b"ext", msg_class=7),
    Message(body=b"t", max_time_to_receive=3600, max_time_to_reach_queue=60, body_type=8, hash_algorithm=3),
]


def _view(m: Message) -> dict[str, object]:
    d = dict(m.__dict__)
    for name in ("id", "lookup_id", "arrived_time", "sent_time", "destination_queue"):
        d.pop(name, None)
    return d


def _fresh(batch: list[Message]) -> list[Message]:
    return [m.copy() for m in batch]


@pytest.mark.parametrize(
    "batch",
    [
        _PLAIN,
        _PLAIN + _ODD,
        [*_ODD, Message(body=b"p", priv_level=1), *_PLAIN[:3]],  # PrivacyLevel: the general path
        [*_PLAIN[:5], Message(body=b"r", delivery=1)],  # recoverable: the general path
    ],
)
def test_send_many_queues_what_sends_one_by_one_queue(server: ThreadServer, batch: list[Message]) -> None:
    qm = connect(server.url)
    one = qm.create_queue(".\\private$\\one")
    many = qm.create_queue(".\\private$\\many")
    singles = _fresh(batch)
    for m in singles:
        one.send(m)
    sent = _fresh(batch)
    many.send_many(sent)
    for a, b in zip(singles, sent, strict=True):
        assert b.id is not None and b.sent_time is not None and b.destination_queue == many.format_name
        assert (a.source_machine_guid, a.id is not None) == (b.source_machine_guid, True)
    got_one = one.receive_many(1000)
    got_many = many.receive_many(1000)
    assert [_view(m) for m in got_one] == [_view(m) for m in got_many]
    assert [m.id for m in got_many] == [m.id for m in sorted(sent, key=lambda m: -m.priority)]
    qm.close()


def test_send_many_errors_on_the_fast_path(server: ThreadServer) -> None:
    qm = connect(server.url)
    qm.create_queue(".\\private$\\tx", transactional=True).close()
    tq = qm.queue(".\\private$\\tx")
    batch = _fresh(_PLAIN[:4])
    with pytest.raises(MSMQError) as err:
        tq.send_many(batch)  # non-transactional sends to a transactional queue: each refused
    assert err.value.hresult == HResult.MQ_ERROR_TRANSACTION_USAGE
    assert all(m.id is None for m in batch)
    q = qm.create_queue(".\\private$\\plain")
    q.close()
    with pytest.raises(MSMQError):
        q.send_many(_fresh(_PLAIN[:2]))
    qm.close()


def test_receive_many_answers_what_the_encoder_writes(server: ThreadServer) -> None:
    # Kept packets (canonical SEND_MANY packets) and re-encoded ones (a non-canonical packet: reserved
    # byte set, non-zero padding) give the packets encode_packet writes for the queued messages.
    qm = connect(server.url)
    q = qm.create_queue(".\\private$\\raw")
    batch = [*_fresh(_PLAIN[:6]), Message(body=b"abc"), *_fresh(_ODD)]
    packets = [encode_packet(m) for m in batch]
    odd = bytearray(packets[1])
    odd[1] = 1  # BaseHeader reserved byte
    packets[1] = bytes(odd)
    assert len(packets[6]) == 124  # 120 + 3 body bytes + 1 padding byte
    packets[6] = packets[6][:-1] + b"\xee"
    response = qm._t.call(SendManyRequest(q._handle, None, encode_packets(packets)))
    assert [r[0] for r in decode_send_results(response.results)] == [0] * len(batch)
    answer = qm._t.call(ReceiveManyRequest(q._handle, 100, 0, 0, None, CLIENT_RECEIVE_PROPIDS))
    blob = answer.messages
    (count,) = struct.unpack_from("<I", blob)
    pos, got = 4, []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", blob, pos)
        got.append(blob[pos + 4 : pos + 4 + n])
        pos += 4 + n + 58  # the five facts of CLIENT_RECEIVE_PROPIDS
    assert len(got) == len(batch)
    for packet in got:
        m = decode_simple(packet)
        assert m is not None
        m.destination_queue = q.format_name
        assert encode_packet(m, q.format_name) == packet
    want = sorted(batch, key=lambda m: -m.priority)
    assert [(m.body, m.label, m.priority) for m in decode_received(blob)] == [
        (m.body, m.label, m.priority) for m in want
    ]
    qm.close()
