"""Client-protocol connection state machines: handshake, pipelining, chunking, hostile input."""

from __future__ import annotations

import re
import struct
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.hresult import HResult
from pymsmq.protocol import (
    HELLO_MAX_PAYLOAD,
    MAX_PAYLOAD,
    TRANSITIONS,
    Action,
    CancelReceiveRequest,
    ClientConnection,
    ClientHello,
    ConnectionClosed,
    CreateCursorResponse,
    Direction,
    ErrorResponse,
    FrameType,
    Goodbye,
    Op,
    PingRequest,
    PingResponse,
    ProtocolError,
    ReceiveMatchingRequest,
    ReceiveRequest,
    ReceiveResponse,
    RequestReceived,
    ResponseReceived,
    Role,
    SendRequest,
    SendResponse,
    ServerConnection,
    ServerHello,
    SetQueuePropertiesRequest,
    State,
    choose_version,
    encode_frame,
    goodbye_frame,
)
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.user_message import UserMessage
from pymsmq.wire.vartype import VarType

PACKET = UserMessage.build(
    destination="DIRECT=TCP:10.0.0.1\\private$\\q", body=b"x" * 200, label="l"
).encode()
QM = uuid.UUID("11111111-2222-3333-4444-555555555555")


def handshake(
    max_in_flight: int = 1024, max_payload: int = MAX_PAYLOAD
) -> tuple[ClientConnection, ServerConnection]:
    c, s = ClientConnection(), ServerConnection()
    assert (c.state, s.state) == (State.SEND_HELLO, State.AWAIT_HELLO)
    (hello,) = s.receive_data(c.send(ClientHello(token=b"t", client_name="me")))
    assert hello == ClientHello((1, 2, 3, 4, 5), b"t", "me") == s.client_hello
    assert (c.state, s.state) == (State.AWAIT_HELLO, State.SEND_HELLO)
    version = choose_version(hello)
    assert version == 5
    reply = ServerHello(version, QM, "box", max_payload, max_in_flight)
    (event,) = c.receive_data(s.send(reply))
    assert event == reply == c.server_hello
    assert (c.state, s.state) == (State.READY, State.READY)
    return c, s


def test_request_response_round_trip() -> None:
    c, s = handshake()
    rid, data = c.send_request(SendRequest(3, PACKET, 3))
    assert c.in_flight == {rid: Op.SEND}
    (ev,) = s.receive_data(data)
    assert ev == RequestReceived(rid, SendRequest(3, PACKET, 3))
    assert s.in_flight == {rid: Op.SEND}
    (answer,) = c.receive_data(s.send(SendResponse(), rid))
    assert answer == ResponseReceived(rid, SendResponse()) and answer.ok
    assert c.in_flight == {} == s.in_flight


def test_error_response() -> None:
    c, s = handshake()
    rid, data = c.send_request(ReceiveRequest(1, Action.MQ_ACTION_RECEIVE, 0))
    s.receive_data(data)
    err = ErrorResponse(HResult.MQ_ERROR_MESSAGE_NOT_FOUND, "empty")
    out = s.send(err, rid)
    assert out[3] == FrameType.ERROR and struct.unpack_from("<H", out, 4)[0] == Op.RECEIVE
    (answer,) = c.receive_data(out)
    assert answer.response == err and not answer.ok


def test_pipelining_out_of_order_answers() -> None:
    c, s = handshake()
    stream = b""
    ids = []
    for i in range(50):
        rid, data = c.send_request(PingRequest(bytes([i])))
        ids.append(rid)
        stream += data
    assert len(set(ids)) == 50 and 0 not in ids
    events = s.receive_data(stream)
    assert [e.request_id for e in events] == ids  # type: ignore[union-attr]
    answers = b"".join(s.send(PingResponse(e.request.data), e.request_id) for e in reversed(events))  # type: ignore[union-attr]
    got = c.receive_data(answers)
    assert [g.request_id for g in got] == ids[::-1]  # type: ignore[union-attr]
    assert all(g.response.data == bytes([ids.index(g.request_id)]) for g in got)  # type: ignore[union-attr]
    assert not c.in_flight and not s.in_flight


def test_request_ids_skip_those_in_flight_and_wrap() -> None:
    c, _ = handshake()
    c._next_id = 0xFFFFFFFF
    first, _ = c.send_request(PingRequest())
    second, _ = c.send_request(PingRequest())
    assert (first, second) == (0xFFFFFFFF, 1)
    c._next_id = 1
    assert c.send_request(PingRequest())[0] == 2
    with pytest.raises(ProtocolError, match="already in flight"):
        c.send_request(PingRequest(), 2)
    with pytest.raises(ProtocolError, match="non-zero"):
        c.send_request(PingRequest(), 0)
    assert c.send_request(PingRequest(), 77)[0] == 77


def test_requests_before_the_handshake_are_rejected() -> None:
    c = ClientConnection()
    with pytest.raises(ProtocolError, match="cannot send REQUEST in state SEND_HELLO"):
        c.send_request(PingRequest())
    assert c.state is State.SEND_HELLO  # local misuse changes nothing
    s = ServerConnection()
    frame = encode_frame(FrameType.REQUEST, PingRequest().encode(), Op.PING, 1)
    with pytest.raises(ProtocolError, match="cannot receive REQUEST in state AWAIT_HELLO"):
        s.receive_data(frame)
    assert s.state is State.CLOSED and s.error is not None
    with pytest.raises(ProtocolError, match="closed"):
        s.receive_data(b"x")
    # After its hello but before the server's answer the client still may not send.
    c.send(ClientHello())
    with pytest.raises(ProtocolError, match="AWAIT_HELLO"):
        c.send_request(PingRequest())
    # A server that has the client's hello but has not answered may not answer requests.
    s2 = ServerConnection()
    s2.receive_data(ClientConnection().send(ClientHello()))
    with pytest.raises(ProtocolError, match="cannot send RESPONSE in state SEND_HELLO"):
        s2.send(PingResponse(), 1)
    with pytest.raises(ProtocolError, match="cannot receive REQUEST in state SEND_HELLO"):
        s2.receive_data(frame)


def test_second_hello_is_a_protocol_error() -> None:
    c, s = handshake()
    with pytest.raises(ProtocolError, match="cannot send CLIENT_HELLO"):
        c.send(ClientHello())
    with pytest.raises(ProtocolError, match="cannot receive CLIENT_HELLO in state READY"):
        s.receive_data(encode_frame(FrameType.CLIENT_HELLO, ClientHello().encode()))


def test_version_negotiation() -> None:
    c, s = ClientConnection(), ServerConnection()
    (hello,) = s.receive_data(c.send(ClientHello((7, 9))))
    assert choose_version(hello) is None
    with pytest.raises(ProtocolError, match="not offered"):
        s.send(ServerHello(1))
    refusal = Goodbye(HResult.MQ_ERROR_OPERATION_NOT_SUPPORTED_BY_REMOTE_COMPUTER, "no common version")
    (ev,) = c.receive_data(s.send(refusal))
    assert ev == refusal and c.state is State.CLOSED and s.state is State.CLOSED
    # A server that picks a version the client did not offer breaks the protocol.
    c2 = ClientConnection()
    c2.send(ClientHello((1,)))
    with pytest.raises(ProtocolError, match="chose version 2"):
        c2.receive_data(encode_frame(FrameType.SERVER_HELLO, ServerHello(2).encode()))


def test_token_refused_with_goodbye() -> None:
    c, s = ClientConnection(), ServerConnection()
    s.receive_data(c.send(ClientHello(token=b"wrong")))
    (ev,) = c.receive_data(s.send(Goodbye(HResult.MQ_ERROR_ACCESS_DENIED, "bad token")))
    assert ev.hresult == HResult.MQ_ERROR_ACCESS_DENIED  # type: ignore[union-attr]
    assert c.state is State.CLOSED
    with pytest.raises(ProtocolError):
        c.send_request(PingRequest())


def test_goodbye_from_either_side_and_eof() -> None:
    c, s = handshake()
    _, data = c.send_request(PingRequest())
    s.receive_data(data)
    (ev,) = c.receive_data(s.send(Goodbye(HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE, "shutdown")))
    assert isinstance(ev, Goodbye) and c.state is State.CLOSED and not c.in_flight
    assert c.receive_data(b"") == [ConnectionClosed()]
    assert c.receive_data(b"") == []
    c, s = handshake()
    (ev,) = s.receive_data(c.send(Goodbye()))
    assert ev == Goodbye(0, "") and s.state is State.CLOSED
    c, s = handshake()
    assert s.receive_data(b"") == [ConnectionClosed()] and s.state is State.CLOSED


def test_bytes_after_goodbye_and_eof_inside_a_frame() -> None:
    c, s = handshake()
    with pytest.raises(ProtocolError, match="after GOODBYE") as info:
        s.receive_data(c.send(Goodbye()) + b"MQ")
    assert info.value.events == [Goodbye()]
    c, s = handshake()
    s.receive_data(c.send_request(PingRequest(b"abc"))[1][:-1])
    with pytest.raises(ProtocolError, match="inside a frame"):
        s.receive_data(b"")


def test_oversized_frame_refused_from_the_header_alone() -> None:
    c, s = handshake(max_payload=0x10000)
    header = struct.pack("<2sBBHHII", b"MQ", 1, FrameType.REQUEST, Op.SEND, 0, 1, 0x10001)
    with pytest.raises(ProtocolError, match="exceeds the limit of 65536"):
        s.receive_data(header)  # not one payload byte sent
    # Before the handshake, even a hello is limited to 64 KiB.
    s = ServerConnection()
    header = struct.pack("<2sBBHHII", b"MQ", 1, FrameType.CLIENT_HELLO, 0, 0, 0, HELLO_MAX_PAYLOAD + 1)
    with pytest.raises(ProtocolError, match="exceeds"):
        s.receive_data(header[:10])
        s.receive_data(header[10:])
    # The client refuses to send what the server said it will not accept.
    c, s = handshake(max_payload=0x10000)
    big = UserMessage.build(destination="DIRECT=TCP:10.0.0.1\\private$\\q", body=b"x" * 0x10000).encode()
    with pytest.raises(ProtocolError, match="exceeds the peer's limit"):
        c.send_request(SendRequest(1, big))
    assert not c.in_flight


def test_in_flight_limit() -> None:
    c, s = handshake(max_in_flight=2)
    frames = [c.send_request(PingRequest())[1] for _ in range(2)]
    with pytest.raises(ProtocolError, match="in flight"):
        c.send_request(PingRequest())
    s.receive_data(b"".join(frames))
    third = encode_frame(FrameType.REQUEST, PingRequest().encode(), Op.PING, 99)
    with pytest.raises(ProtocolError, match="more than 2"):
        s.receive_data(third)


def test_an_op_of_a_later_version_is_refused_on_an_earlier_one() -> None:
    """The handshake fixes the set of ops: CANCEL_RECEIVE (version 2) is a protocol error on a
    version-1 connection, and a request on a version-2 one."""
    frame = encode_frame(FrameType.REQUEST, CancelReceiveRequest(1, 2).encode(), Op.CANCEL_RECEIVE, 9)
    old = ServerConnection()
    old.receive_data(ClientConnection().send(ClientHello(versions=(1,))))
    old.send(ServerHello(1, QM, "box"))
    with pytest.raises(ProtocolError, match="op 0x0026 is not in protocol version 1"):
        old.receive_data(frame)
    _, s = handshake()
    (event,) = s.receive_data(frame)
    assert event == RequestReceived(9, CancelReceiveRequest(1, 2))


def test_receive_matching_is_an_op_of_version_3() -> None:
    """RECEIVE_MATCHING is a protocol error on a connection that chose version 2, a request on 3."""
    request = ReceiveMatchingRequest(1, lineage=QM, uniquifier=7)
    frame = encode_frame(FrameType.REQUEST, request.encode(), Op.RECEIVE_MATCHING, 9)
    old = ServerConnection()
    old.receive_data(ClientConnection().send(ClientHello(versions=(1, 2))))
    old.send(ServerHello(2, QM, "box"))
    with pytest.raises(ProtocolError, match="op 0x0043 is not in protocol version 2"):
        old.receive_data(frame)
    _, s = handshake()
    (event,) = s.receive_data(frame)
    assert event == RequestReceived(9, request)


def test_duplicate_and_unknown_ids_and_ops() -> None:
    c, s = handshake()
    frame = encode_frame(FrameType.REQUEST, PingRequest().encode(), Op.PING, 5)
    s.receive_data(frame)
    with pytest.raises(ProtocolError, match="already in flight"):
        s.receive_data(frame)
    c, s = handshake()
    with pytest.raises(ProtocolError, match="unknown op 0x0099"):
        s.receive_data(encode_frame(FrameType.REQUEST, b"", 0x99, 1))
    c, s = handshake()
    with pytest.raises(ProtocolError, match="not in flight"):
        c.receive_data(encode_frame(FrameType.RESPONSE, PingResponse().encode(), Op.PING, 5))
    c, s = handshake()
    rid, _ = c.send_request(PingRequest())
    with pytest.raises(ProtocolError, match="op 3 for request"):
        c.receive_data(encode_frame(FrameType.RESPONSE, b"", Op.LIST_QUEUES, rid))
    c, s = handshake()
    rid, data = c.send_request(PingRequest())
    s.receive_data(data)
    with pytest.raises(ProtocolError, match="does not answer a PING"):
        s.send(CreateCursorResponse(1), rid)
    with pytest.raises(ProtocolError, match="not awaiting"):
        s.send(PingResponse(), rid + 1)
    with pytest.raises(ProtocolError, match="cannot send PingRequest"):
        s.send(PingRequest(), rid)  # type: ignore[arg-type]
    with pytest.raises(ProtocolError, match="cannot send PingResponse"):
        c.send(PingResponse())  # type: ignore[arg-type]
    assert s.state is State.READY and c.state is State.READY  # misuse on send changes nothing


def test_malformed_payload_closes_the_connection() -> None:
    c, s = handshake()
    good = c.send_request(PingRequest(b"ok"))[1]
    bad = encode_frame(FrameType.REQUEST, b"\x05\x00\x00\x00ab", Op.PING, 2)
    with pytest.raises(ProtocolError, match="malformed frame payload") as info:
        s.receive_data(good + bad)
    assert [type(e) for e in info.value.events] == [RequestReceived]
    assert s.state is State.CLOSED
    assert goodbye_frame(info.value.hresult, str(info.value)).startswith(b"MQ\x01\x06")


def test_transition_table_shape() -> None:
    for (_role, state, _direction, kind), new in TRANSITIONS.items():
        assert state is not State.CLOSED
        assert (new is State.CLOSED) == (kind is FrameType.GOODBYE)
    assert (
        TRANSITIONS[Role.SERVER, State.AWAIT_HELLO, Direction.RECEIVE, FrameType.CLIENT_HELLO]
        is State.SEND_HELLO
    )
    assert (Role.SERVER, State.READY, Direction.SEND, FrameType.REQUEST) not in TRANSITIONS


@given(
    role=st.sampled_from(Role),
    state=st.sampled_from([State.SEND_HELLO, State.AWAIT_HELLO, State.READY]),
    kind=st.sampled_from(FrameType),
)
def test_receiving_anything_not_in_the_table_is_an_error(role: Role, state: State, kind: FrameType) -> None:
    conn = ClientConnection() if role is Role.CLIENT else ServerConnection()
    conn._enter(state)
    allowed = (role, state, Direction.RECEIVE, kind) in TRANSITIONS
    with_request = kind in (FrameType.REQUEST, FrameType.RESPONSE, FrameType.ERROR)
    payload = {
        FrameType.CLIENT_HELLO: ClientHello().encode(),
        FrameType.SERVER_HELLO: ServerHello().encode(),
        FrameType.REQUEST: PingRequest().encode(),
        FrameType.RESPONSE: PingResponse().encode(),
        FrameType.ERROR: ErrorResponse(1).encode(),
        FrameType.GOODBYE: Goodbye().encode(),
    }[kind]
    if role is Role.CLIENT and with_request and kind is not FrameType.REQUEST:
        conn.in_flight[1] = Op.PING
    frame = encode_frame(kind, payload, Op.PING if with_request else 0, 1 if with_request else 0)
    if allowed:
        (event,) = conn.receive_data(frame)
        assert event is not None
    else:
        with pytest.raises(ProtocolError, match="cannot receive"):
            conn.receive_data(frame)
        assert conn.state is State.CLOSED


def _session_bytes() -> tuple[bytes, bytes, list[object], list[object]]:
    """A whole valid session: the bytes each side sends and the events each side sees."""
    c, s = ClientConnection(), ServerConnection()
    to_server = c.send(ClientHello(token=b"k", client_name="n"))
    server_events: list[object] = list(s.receive_data(to_server))
    to_client = s.send(ServerHello(1, QM, "m"))
    client_events: list[object] = list(c.receive_data(to_client))
    reqs = [SendRequest(1, PACKET, None), ReceiveRequest(1, request_timeout=5), PingRequest(b"p" * 70000)]
    for req in reqs:
        data = c.send_request(req)[1]
        to_server += data
        server_events += s.receive_data(data)
    answers = [SendResponse(), ReceiveResponse(PACKET), ErrorResponse(HResult.MQ_ERROR_IO_TIMEOUT, "t")]
    for ev, ans in zip(server_events[1:], answers, strict=True):
        data = s.send(ans, ev.request_id)  # type: ignore[attr-defined]
        to_client += data
        client_events += c.receive_data(data)
    to_server += c.send(Goodbye())
    server_events.append(Goodbye())
    return to_server, to_client, server_events, client_events


SESSION = _session_bytes()


def _feed(conn: ClientConnection | ServerConnection, data: bytes, cuts: list[int]) -> list[object]:
    events: list[object] = []
    prev = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        if cut > prev:  # an empty chunk would mean end of stream
            events += conn.receive_data(data[prev:cut])
        prev = cut
    return events


HELLO_LEN = 16 + len(ClientHello(token=b"k", client_name="n").encode())


@given(
    st.lists(st.integers(0, len(SESSION[0])), max_size=30),
    st.lists(st.integers(0, len(SESSION[1])), max_size=30),
)
def test_any_split_gives_the_same_events(server_cuts: list[int], client_cuts: list[int]) -> None:
    to_server, to_client, server_events, client_events = SESSION
    # The client sends nothing after its hello until the server's hello came back, so the
    # server's input splits into the hello and the rest; each part is cut anywhere.
    s = ServerConnection()
    got = _feed(s, to_server[:HELLO_LEN], [x for x in server_cuts if x < HELLO_LEN])
    assert s.state is State.SEND_HELLO
    s.send(ServerHello(1, QM, "m"))
    got += _feed(s, to_server[HELLO_LEN:], [x - HELLO_LEN for x in server_cuts if x >= HELLO_LEN])
    assert got == server_events
    c = ClientConnection()
    c.send(ClientHello(token=b"k", client_name="n"))
    c.in_flight.update({1: Op.SEND, 2: Op.RECEIVE, 3: Op.PING})
    assert _feed(c, to_client, client_cuts) == client_events
    assert not c.in_flight


def test_hello_and_request_in_one_read_is_rejected() -> None:
    # A client that does not wait for SERVER_HELLO breaks the handshake rule.
    with pytest.raises(ProtocolError, match="cannot receive REQUEST in state SEND_HELLO"):
        ServerConnection().receive_data(SESSION[0])


def test_byte_at_a_time() -> None:
    to_server, _, server_events, _ = SESSION
    s = ServerConnection()
    got: list[object] = []
    for i in range(len(to_server)):
        got += s.receive_data(to_server[i : i + 1])
        if got and s.state is State.SEND_HELLO:
            s.send(ServerHello(1, QM, "m"))
    assert got == server_events


@given(st.binary(max_size=200), st.booleans())
def test_arbitrary_bytes_give_events_or_protocol_error(data: bytes, ready: bool) -> None:
    for conn in (ClientConnection(), ServerConnection()):
        if ready:
            conn._enter(State.READY)
            conn._recv_limit = MAX_PAYLOAD
        try:
            conn.receive_data(data)
            conn.receive_data(b"")
        except ProtocolError:
            assert conn.state is State.CLOSED


@given(st.binary(min_size=1, max_size=60), st.integers(0, 400))
def test_valid_prefix_then_garbage(garbage: bytes, cut: int) -> None:
    to_server = SESSION[0]
    s = ServerConnection()
    events: list[object] = []
    try:
        events += s.receive_data(to_server[:cut] + garbage)
        if s.state is State.SEND_HELLO:
            s.send(ServerHello(1, QM, "m"))
        events += s.receive_data(garbage)
    except ProtocolError as exc:
        assert s.state is State.CLOSED
        assert all(type(e) in (ClientHello, RequestReceived, Goodbye) for e in exc.events)


# ------------------------------------------------------------------ docs/protocol.md worked examples

DOCS = Path(__file__).parents[2] / "docs" / "protocol.md"


def _doc_examples() -> dict[str, bytes]:
    text = DOCS.read_text()
    out: dict[str, bytes] = {}
    for name, block in re.findall(r"<!-- example: (\w+) -->\n```text\n(.*?)```", text, re.S):
        out[name] = bytes.fromhex("".join(line[6:] for line in block.splitlines()))
    return out


def test_docs_worked_examples_match_the_code() -> None:
    examples = _doc_examples()
    assert set(examples) == {
        "client_hello",
        "server_hello",
        "send",
        "send_response",
        "receive",
        "receive_response",
        "error",
    }
    c, s = ClientConnection(), ServerConnection()
    assert c.send(ClientHello((1,), b"", "cli")) == examples["client_hello"]
    assert s.receive_data(examples["client_hello"]) == [ClientHello((1,), b"", "cli")]
    hello = ServerHello(1, QM, "box", MAX_PAYLOAD, 1024)
    assert s.send(hello) == examples["server_hello"]
    assert c.receive_data(examples["server_hello"]) == [hello]
    # The sender leaves the destination empty (the server uses the handle's queue).
    packet = UserMessage.build(destination=None, body=b"hi", label="x").encode()
    send = SendRequest(1, packet, None)
    assert c.send_request(send, 1)[1] == examples["send"]
    assert s.receive_data(examples["send"]) == [RequestReceived(1, send)]
    # The SEND answer: PROPID_M_MSGID and PROPID_M_SENTTIME (what the server's send_facts gives).
    facts = (
        (2, PropVariant(VarType.VT_VECTOR_UI1, QM.bytes_le + (1).to_bytes(4, "little"))),
        (31, PropVariant(VarType.VT_UI4, 0x65000000)),
    )
    assert s.send(SendResponse(facts), 1) == examples["send_response"]
    assert c.receive_data(examples["send_response"]) == [ResponseReceived(1, SendResponse(facts))]
    receive = ReceiveRequest(1, Action.MQ_ACTION_RECEIVE, 1000, propids=(60, 32))
    assert c.send_request(receive, 2)[1] == examples["receive"]
    assert s.receive_data(examples["receive"]) == [RequestReceived(2, receive)]
    # The stored packet: the sent one with SourceQueueManager, MessageID and SentTime filled in.
    stored = UserMessage.build(
        destination=None, body=b"hi", label="x", source_queue_manager=QM, message_id=1, sent_time=0x65000000
    ).encode()
    lookup = ((60, PropVariant(VarType.VT_UI8, 1)),)
    answer = ReceiveResponse(stored, (*lookup, (32, PropVariant(VarType.VT_UI4, 0x65000000))))
    assert s.send(answer, 2) == examples["receive_response"]
    assert c.receive_data(examples["receive_response"]) == [ResponseReceived(2, answer)]
    c.send_request(ReceiveRequest(1, request_timeout=0), 3)
    s.in_flight[3] = Op.RECEIVE
    error = ErrorResponse(HResult.MQ_ERROR_MESSAGE_NOT_FOUND, "empty")
    assert s.send(error, 3) == examples["error"]
    assert c.receive_data(examples["error"]) == [ResponseReceived(3, error)]


def _vector_request(n: int) -> SetQueuePropertiesRequest:
    empty = PropVariant(VarType.VT_EMPTY, None)
    return SetQueuePropertiesRequest(
        r".\private$\q", ((0x7F0000FF, PropVariant(VarType.VT_VECTOR_VARIANT, (empty,) * n)),)
    )


def test_list_elements_are_budgeted_per_frame_and_a_read_of_many_is_handled_in_turns() -> None:
    # frame_elements: each frame its own budget (a frame over it is a protocol error); read_elements:
    # past that many in one call, the next frames wait in the buffer for resume() (the server's loop
    # serves others meanwhile).  The events are the same, in the same order, however cut.
    c, s = handshake()
    s.frame_elements = s.read_elements = 10_000
    frames = b"".join(c.send_request(_vector_request(6_000))[1] for _ in range(5))
    first = s.receive_data(frames)
    assert [type(e) for e in first] == [RequestReceived, RequestReceived] and s.deferred
    rest = []
    while s.deferred:
        rest += s.resume()
    assert [e.request_id for e in first + rest] == [1, 2, 3, 4, 5]  # type: ignore[union-attr]
    assert s.resume() == [] and not s.deferred
    # Data arriving while frames wait joins them in order.
    more = b"".join(c.send_request(_vector_request(6_000))[1] for _ in range(3))
    got = s.receive_data(more[: len(more) // 2])
    got += s.receive_data(more[len(more) // 2 :])
    while s.deferred:
        got += s.resume()
    assert [e.request_id for e in got] == [6, 7, 8]  # type: ignore[union-attr]
    # A frame over the per-frame budget is a protocol error, named as a limit, not a malformation.
    with pytest.raises(ProtocolError, match="frame payload over a limit"):
        s.receive_data(c.send_request(_vector_request(10_001))[1])
    assert s.state is State.CLOSED
