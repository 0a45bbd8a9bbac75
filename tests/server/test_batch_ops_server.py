"""SEND_MANY / RECEIVE_MANY with real sockets: per-message errors, rights, transactions, frame limits,
waits, peeks, ordering and malformed batches (docs/protocol.md 11)."""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

from pymsmq import Message, MSMQError
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.protocol import (
    ClientConnection,
    ClientHello,
    ErrorResponse,
    ManyFlags,
    OpenQueueRequest,
    PingRequest,
    PingResponse,
    ResponseReceived,
)
from pymsmq.protocol.batch_ops import (
    ReceiveManyRequest,
    ReceiveManyResponse,
    SendManyRequest,
    SendManyResponse,
    decode_received,
    decode_send_results,
    encode_messages,
    encode_packets,
)
from pymsmq.protocol.message_codec import CLIENT_RECEIVE_PROPIDS, encode_packet
from pymsmq.server import AccessPolicy, ServerConfig

Q = ".\\private$\\batch"
TQ = ".\\private$\\batchtx"


def _hresult(fn: Any, *args: Any) -> int:
    with pytest.raises(MSMQError) as err:
        fn(*args)
    return err.value.hresult


def test_send_many_sets_ids_and_receive_many_returns_all_in_order(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(Q)
    sent = [Message(body=b"%d" % i, label=f"L{i}", app_specific=i, priority=3) for i in range(1234)]
    q.send_many(sent)
    assert all(m.id is not None and m.destination_queue == q.format_name for m in sent)
    assert len({m.id for m in sent}) == len(sent)
    got = q.receive_many(5000)
    assert [(m.body, m.label, m.app_specific) for m in got] == [(b"%d" % i, f"L{i}", i) for i in range(1234)]
    assert [m.id for m in got] == [m.id for m in sent]
    assert all(m.lookup_id and m.arrived_time for m in got)
    assert q.receive_many(10) == []
    qm.close()


def test_an_error_in_the_middle_of_a_batch_fails_only_that_message(tmp_path: Path) -> None:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, max_message_size=0x10000)).start()
    try:
        qm = connect(s.url)
        q = qm.create_queue(Q)
        batch = [Message(body=b"a"), Message(body=b"x" * 0x20000), Message(body=b"c")]
        assert _hresult(q.send_many, batch) == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
        assert batch[0].id is not None and batch[2].id is not None and batch[1].id is None
        assert [m.body for m in q.receive_many(10)] == [b"a", b"c"]
        qm.close()
    finally:
        s.stop()


def test_a_malformed_message_inside_a_valid_list_gets_its_own_error(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(Q)
    good = encode_packet(Message(body=b"ok"))
    # A BaseHeader that passes the PACKET checks, followed by garbage instead of a UserHeader.
    bad = struct.pack("<BBHII", 0x10, 0, 0, 0x524F494C, 32) + b"\xff" * 20
    blob = encode_messages([(good, ()), (bad, ()), (good, ())])
    response = qm._t.call(SendManyRequest(q._handle, None, blob))
    results = decode_send_results(response.results)
    assert [r[0] for r in results] == [0, HResult.MQ_ERROR_INVALID_PARAMETER, 0]
    assert results[1][2].startswith("malformed message")
    assert len(q.receive_many(10)) == 2
    qm.close()


def test_a_malformed_message_list_is_an_error_answer_and_the_connection_lives(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(Q)
    for blob in (b"", b"\x05\x00\x00\x00", encode_packets([encode_packet(Message())]) + b"junk"):
        with pytest.raises(MSMQError) as err:
            qm._t.call(SendManyRequest(q._handle, None, blob))
        assert err.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    assert qm.ping(b"alive") == b"alive"
    assert q.receive_many(5) == []
    qm.close()


def test_a_malformed_batch_frame_closes_the_connection(server: ThreadServer) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    conn = ClientConnection()
    sock.sendall(conn.send(ClientHello(client_name="raw")))
    while conn.server_hello is None:
        conn.receive_data(sock.recv(65536))
    frame = bytearray(conn.send(SendManyRequest(1, None, b"\x00\x00\x00\x00")))
    frame[16 + 4] = 9  # XACT kind 9 does not exist: the payload is malformed
    sock.sendall(bytes(frame))
    sock.settimeout(5)
    closed = False
    try:
        while True:
            if not sock.recv(65536):
                closed = True
                break
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    assert closed
    sock.close()
    assert connect(server.url).ping(b"x") == b"x"  # the server itself is fine


def test_batches_larger_than_one_frame(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(Q)
    big = [Message(body=bytes([i]) * 0x180000) for i in range(6)]  # 9 MB: several SEND_MANY frames
    q.send_many(big)
    got = q.receive_many(10)
    assert [m.body for m in got] == [m.body for m in big]
    largest = Message(body=b"z" * (0x400000 - 4096))  # a 4 MB packet still goes through
    q.send_many([Message(body=b"s"), largest, Message(body=b"t")])
    assert [len(m.body) for m in q.receive_many(3)] == [1, len(largest.body), 1]
    qm.close()


def test_rights_are_checked_like_send_and_receive(tmp_path: Path) -> None:
    policy = AccessPolicy.from_json(
        json.dumps(
            {
                "owner": "admin",
                "tokens": {"admin-token": "admin", "reader-token": "reader"},
                "permissions": {"reader": {"private$\\batch": ["MQSEC_PEEK_MESSAGE"]}},
            }
        )
    )
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, policy=policy)).start()
    try:
        admin = connect(s.url, token="admin-token")
        admin.create_queue(Q).send_many([Message(body=b"1"), Message(body=b"2")])
        reader = connect(s.url, token="reader-token")
        rq = reader.queue(Q)
        assert _hresult(rq.send_many, [Message(body=b"no")]) == HResult.MQ_ERROR_ACCESS_DENIED
        assert _hresult(rq.receive_many, 2) == HResult.MQ_ERROR_ACCESS_DENIED
        peeked = reader._t.call(
            ReceiveManyRequest(rq._handle, 5, 0, ManyFlags.PEEK, None, CLIENT_RECEIVE_PROPIDS)
        )
        assert [m.body for m in decode_received(peeked.messages)] == [b"1", b"2"]
        assert [m.body for m in admin.queue(Q).receive_many(5)] == [b"1", b"2"]
    finally:
        s.stop()


def test_peek_many_leaves_the_messages_and_respects_max_count(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(Q)
    q.send_many([Message(body=b"%d" % i, delivery=i % 2) for i in range(5)])
    resp = qm._t.call(ReceiveManyRequest(q._handle, 3, 0, ManyFlags.PEEK, None, ()))
    assert isinstance(resp, ReceiveManyResponse) and resp.more == 0 and resp.hresult == 0
    assert [m.body for m in decode_received(resp.messages)] == [b"0", b"1", b"2"]
    assert qm._t.call(ReceiveManyRequest(q._handle, 0, 0, 0, None, ())).messages == b"\x00\x00\x00\x00"
    assert [m.body for m in q.receive_many(9)] == [b"%d" % i for i in range(5)]
    with pytest.raises(MSMQError) as err:
        qm._t.call(ReceiveManyRequest(q._handle, 3, 0, 0, None, ()))
    assert err.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # nothing there: as RECEIVE
    qm.close()


def test_transactions(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(TQ, transactional=True)
    assert _hresult(q.send_many, [Message(body=b"x")]) == HResult.MQ_ERROR_TRANSACTION_USAGE
    tx = qm.begin_transaction()
    q.send_many([Message(body=b"a"), Message(body=b"b")], tx)
    assert q.receive_many(5) == []  # not committed yet
    tx.commit()
    tx = qm.begin_transaction()
    assert [m.body for m in q.receive_many(5, 0, tx)] == [b"a", b"b"]
    tx.abort()  # back in the queue
    tx = qm.begin_transaction()
    q.send_many([Message(body=b"c")], tx)
    tx.abort()  # never sent
    tx = qm.begin_transaction()
    assert [m.body for m in q.receive_many(5, 0, tx)] == [b"a", b"b"]
    tx.commit()
    assert q.message_count == 0
    qm.close()


def test_recoverable_and_express_mixed_keep_order(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(Q)
    pattern = [0, 0, 1, 0, 1, 1, 0, 0, 0, 1] * 30
    q.send(Message(body=b"first", delivery=1))  # off the loop: the batch is chained behind it
    q.send_many([Message(body=b"%d" % i, delivery=d) for i, d in enumerate(pattern)])
    got = q.receive_many(1000)
    assert [m.body for m in got] == [b"first"] + [b"%d" % i for i in range(len(pattern))]
    assert [m.delivery for m in got] == [1, *pattern]
    qm.close()


def test_receive_many_waits_for_the_first_message_only(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(Q)
    start = time.monotonic()
    assert q.receive_many(5, 0.2) == []
    assert time.monotonic() - start >= 0.15
    other = connect(server.url)

    def later() -> None:
        time.sleep(0.2)
        other.queue(Q).send_many([Message(body=b"late1"), Message(body=b"late2")])

    t = threading.Thread(target=later)
    t.start()
    got = q.receive_many(5, 10)
    t.join()
    assert got and got[0].body == b"late1"
    rest = q.receive_many(5)
    assert [m.body for m in got + rest] == [b"late1", b"late2"]
    other.close()
    qm.close()


def test_raw_frames_answer_with_the_request_op(server: ThreadServer) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    conn = ClientConnection()
    sock.sendall(conn.send(ClientHello(client_name="raw")))
    while conn.server_hello is None:
        conn.receive_data(sock.recv(65536))
    connect(server.url).create_queue(Q).close()
    sock.sendall(conn.send(OpenQueueRequest(Q, 0x23)))
    answers: list[Any] = []

    def pump(n: int) -> None:
        while len(answers) < n:
            answers.extend(
                e.response for e in conn.receive_data(sock.recv(65536)) if type(e) is ResponseReceived
            )

    pump(1)
    assert type(answers[0]) is not ErrorResponse, answers[0]
    handle = answers[0].handle
    sock.sendall(
        conn.send(SendManyRequest(handle, None, encode_packets([encode_packet(Message(body=b"r"))])))
        + conn.send(ReceiveManyRequest(handle, 4, 0, 0, None, ()))
        + conn.send(PingRequest(b"p"))
    )
    pump(4)
    assert type(answers[1]) is SendManyResponse and decode_send_results(answers[1].results)[0][0] == 0
    assert type(answers[2]) is ReceiveManyResponse
    assert [m.body for m in decode_received(answers[2].messages)] == [b"r"]
    assert type(answers[3]) is PingResponse
    assert not any(type(a) is ErrorResponse for a in answers)
    sock.close()


def test_a_message_over_a_small_frame_limit_stops_the_batch_there(tmp_path: Path) -> None:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, max_payload=0x10000)).start()
    try:
        qm = connect(s.url)
        q = qm.create_queue(Q)
        batch = [Message(body=b"%d" % i) for i in range(300)] + [Message(body=b"x" * 0x20000), Message()]
        assert _hresult(q.send_many, batch) == HResult.MQ_ERROR_INVALID_PARAMETER
        assert all(m.id is not None for m in batch[:250])  # the frames written before it were sent
        assert batch[-1].id is None
        got = q.receive_many(1000)
        assert [m.body for m in got] == [m.body for m in batch if m.id is not None]
        qm.close()
    finally:
        s.stop()


def test_receive_many_after_huge_messages_still_takes_small_ones_in_bulk(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(Q)
    q.send_many([Message(body=b"h" * 0x100000) for _ in range(3)])
    assert len(q.receive_many(3)) == 3
    for _ in range(3):
        q.send_many([Message(body=b"s%d" % i) for i in range(700)])
        assert [m.body for m in q.receive_many(700)] == [b"s%d" % i for i in range(700)]
    assert q._many_chunk >= 64  # grew back after the huge messages taught it 1
    qm.close()
