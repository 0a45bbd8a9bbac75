"""RECEIVE_MANY's frame budget (server/batches.py): each next message's size is checked before it is taken.

Kept packets (the fast path) fill an answer up to the client's limit, so one answer can carry
``max_count`` small messages; a message of unknown encoded size is taken only while any stored
message surely fits; a message that does not fit stays queued, ``more`` = 1, and the client's
``receive_many`` gets every message, in order, over several answers.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

from pymsmq import Message
from pymsmq.client import connect
from pymsmq.protocol.batch_ops import ReceiveManyRequest, decode_received
from pymsmq.protocol.handshake import MAX_PAYLOAD
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS


def _ask(qm: object, handle: int, count: int) -> tuple[int, list[Message]]:
    answer = qm._t.call(ReceiveManyRequest(handle, count, 0, 0, None, CLIENT_RECEIVE_PROPIDS))  # type: ignore[attr-defined]
    assert not answer.hresult
    assert len(answer.messages) <= MAX_PAYLOAD
    return answer.more, decode_received(answer.messages)


def test_an_answer_carries_max_count_small_messages(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(".\\private$\\small")
    q.send_many([Message(body=b"%05d" % i + b"x" * 195) for i in range(1500)])
    more, got = _ask(qm, q._handle, 1000)  # far more than 48 KiB of packets
    assert (more, len(got)) == (0, 1000)
    more, rest = _ask(qm, q._handle, 1000)
    assert (more, len(rest)) == (0, 500)
    assert [m.body[:5] for m in got + rest] == [b"%05d" % i for i in range(1500)]
    qm.close()


def test_large_kept_packets_stop_at_the_frame_limit(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(".\\private$\\large")
    body = 1 << 20  # 1 MiB: four fit in an answer, not five with their headers
    q.send_many([Message(body=bytes([i]) * body) for i in range(9)])
    more, got = _ask(qm, q._handle, 100)
    assert more == 1 and 1 <= len(got) < 9
    assert [m.body[0] for m in got] == list(range(len(got)))
    # The one that did not fit is still queued, first: the client's receive_many gets the rest.
    rest = q.receive_many(100)
    assert [m.body[0] for m in got + rest] == list(range(9))
    assert all(len(m.body) == body for m in rest)
    qm.close()


def test_mixed_kept_and_encoded_messages_all_arrive_in_order(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(".\\private$\\mixed")
    for i in range(300):
        # Every 7th message is sent alone (SEND: no kept packet, encoded when received).
        m = Message(body=b"%04d" % i + b"y" * (200 if i % 50 else 300_000))
        if i % 7:
            q.send_many([m])
        else:
            q.send(m)
    seen: list[bytes] = []
    while len(seen) < 300:
        _, got = _ask(qm, q._handle, 300)
        assert got
        seen += [m.body[:4] for m in got]
    assert seen == [b"%04d" % i for i in range(300)]
    qm.close()


def test_send_many_answer_is_one_sent_entry_per_message(server: ThreadServer) -> None:
    # server/batches._send_owned reuses the previous entry around the uniquifier: the same bytes as
    # sent_entry for each message (ids of one lineage, one sent time per batch, refused ones between).
    import struct

    from pymsmq.model.ids import ObjectId
    from pymsmq.protocol.batch_ops import SendManyRequest, decode_send_facts, encode_packets, sent_entry
    from pymsmq.protocol.fast_packet import encode_simple

    qm = connect(server.url)
    q = qm.create_queue(".\\private$\\answers")
    packets = []
    for i in range(600):
        packet = encode_simple(Message(body=b"%d" % i, priority=i % 8))
        assert packet is not None
        packets.append(packet)
    response = qm._t.call(SendManyRequest(q._handle, None, encode_packets(packets)))  # type: ignore[attr-defined]
    results = decode_send_facts(response.results)
    assert len(results) == 600
    parts = [struct.pack("<I", 600)]
    ids = []
    for hresult, mid, sent, _ in results:
        assert hresult == 0 and mid is not None and sent is not None
        ids.append(ObjectId.from_bytes(mid))
        parts.append(sent_entry(ids[-1], float(sent)))
    assert response.results == b"".join(parts)
    # The ids the queued messages have, in order of sending (received here in priority order).
    got = {m.body: m.id for m in q.receive_many(600)}
    assert [got[b"%d" % i] for i in range(600)] == ids
    qm.close()
