"""Sans-I/O connection state machines for both ends of the client protocol (h11/h2 style).

``conn.receive_data(bytes) -> list[Event]`` turns whatever arrived (any split, many frames at once,
``b""`` for end of stream) into events; ``conn.send(obj) -> bytes`` turns a payload into the bytes
to write.  Neither does any I/O.  Every state change goes through ``TRANSITIONS``; a frame the
table does not allow, a malformed or oversized frame, an unknown op or request id is a
``ProtocolError`` (docs/protocol.md, "Connection states" and "Pipelining").

A ``ProtocolError`` from ``receive_data`` closes the connection (state CLOSED; the server then drops
it, after writing ``goodbye_frame(...)`` if it likes); one from ``send`` is local misuse, changes
nothing and emits no bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, TypeVar, cast

from pymsmq.errors import WireError, reason
from pymsmq.hresult import HResult
from pymsmq.protocol._payload import Payload
from pymsmq.protocol.errors import ProtocolError
from pymsmq.protocol.frames import FRAME_HEADER_SIZE, FRAME_MAGIC, FRAME_VERSION, FrameType
from pymsmq.protocol.handshake import (
    DEFAULT_MAX_IN_FLIGHT,
    HELLO_MAX_PAYLOAD,
    MAX_PAYLOAD,
    OP_SINCE_VERSION,
    SUPPORTED_VERSIONS,
    ClientHello,
    Goodbye,
    ServerHello,
)
from pymsmq.protocol.hot import PAYLOAD_READERS, PAYLOAD_WRITERS
from pymsmq.protocol.messages import (
    REQUEST_TYPES,
    RESPONSE_TYPES,
    ErrorResponse,
    Op,
    ReceiveRequest,
    Request,
    Response,
    SendRequest,
)
from pymsmq.protocol.states import _MOVES, _READY, TRANSITIONS, Direction, Role, State
from pymsmq.wire._buffer import Writer
from pymsmq.wire.element_budget import element_budget

__all__ = [
    "TRANSITIONS",
    "ClientConnection",
    "ConnectionClosed",
    "Direction",
    "Event",
    "RequestReceived",
    "ResponseReceived",
    "Role",
    "ServerConnection",
    "State",
    "goodbye_frame",
]

_HEADER: Final = struct.Struct("<2sBBHHII")
_MAX_ID: Final = 0xFFFF_FFFF
_ZERO_HEADER: Final = bytes(FRAME_HEADER_SIZE)
_RESPONSE: Final = int(FrameType.RESPONSE)
_REQUEST: Final = int(FrameType.REQUEST)
_P = TypeVar("_P")
# The fast lanes read magic, version and frame type as one 4-byte prefix.
_LANE_HEADER: Final = struct.Struct("<4sHHII")
_REQUEST_HEAD: Final = FRAME_MAGIC + bytes((FRAME_VERSION, _REQUEST))
_RESPONSE_HEAD: Final = FRAME_MAGIC + bytes((FRAME_VERSION, _RESPONSE))


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """Server side: a REQUEST frame; answer it with ``send(response_or_error, request_id)``."""

    request_id: int
    request: Request


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """Client side: the answer to request ``request_id`` (a ``Response`` or an ``ErrorResponse``)."""

    request_id: int
    response: Response | ErrorResponse

    @property
    def ok(self) -> bool:
        """False when the server answered with an ERROR frame."""
        return not isinstance(self.response, ErrorResponse)


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The byte stream ended (``receive_data(b"")``) at a frame boundary."""


Event: TypeAlias = ClientHello | ServerHello | Goodbye | RequestReceived | ResponseReceived | ConnectionClosed

_TYPES: Final = {int(t): t for t in FrameType}
_TOO_MANY: Final = HResult.MQ_ERROR_INSUFFICIENT_RESOURCES  # (pymsmq.wire.element_budget)
_WITH_REQUEST: Final = frozenset({FrameType.REQUEST, FrameType.RESPONSE, FrameType.ERROR})
#: op -> hot payload reader of the requests ``ServerConnection.request_fast`` takes.
_FAST_READERS: Final[dict[int, Callable[[bytes], Any]]] = {
    int(Op.SEND): PAYLOAD_READERS[SendRequest],
    int(Op.RECEIVE): PAYLOAD_READERS[ReceiveRequest],
}
_FIXED_KIND: Final[dict[type, FrameType]] = {
    ClientHello: FrameType.CLIENT_HELLO,
    ServerHello: FrameType.SERVER_HELLO,
    Goodbye: FrameType.GOODBYE,
    ErrorResponse: FrameType.ERROR,
}


def goodbye_frame(hresult: int = HResult.S_OK, reason: str = "") -> bytes:
    """A complete GOODBYE frame, for a server to write after a ``ProtocolError`` closed the connection."""
    body = Goodbye(hresult, reason[:1000]).encode()
    return _HEADER.pack(FRAME_MAGIC, FRAME_VERSION, FrameType.GOODBYE, 0, 0, 0, len(body)) + body


class _Connection:
    """The machinery both ends share; see ``ClientConnection`` and ``ServerConnection``."""

    role: Role
    #: The frame type this end receives most (REQUEST on the server, RESPONSE on the client).
    _fast_kind: int

    def __init__(self, state: State) -> None:
        self._state = state
        self._moves = _MOVES[self.role][state]
        self._buf = bytearray()
        self._need = FRAME_HEADER_SIZE
        self._closed_reported = False
        #: request id -> op of every request sent (client) or received (server) and not yet answered.
        self.in_flight: dict[int, int] = {}
        self.max_in_flight = DEFAULT_MAX_IN_FLIGHT
        self._recv_limit = HELLO_MAX_PAYLOAD
        self._send_limit = HELLO_MAX_PAYLOAD
        #: The ProtocolError that closed the connection, if one did.
        self.error: ProtocolError | None = None
        #: List elements the decoding of one frame may build (``pymsmq.wire.element_budget``), each
        #: frame its own; None: no bound (a server reading untrusted peers sets one).
        self.frame_elements: int | None = None
        #: With ``frame_elements``: the elements one ``receive_data`` (or ``resume``) builds before it
        #: stops at the next frame boundary and keeps the rest (``deferred``) for ``resume``, so that
        #: one read of many such frames does not hold a server's loop for all of them at once.
        self.read_elements: int | None = None
        #: True when complete frames wait in the buffer for ``resume``.
        self.deferred = False

    @property
    def state(self) -> State:
        """The current state."""
        return self._state

    @property
    def send_limit(self) -> int:
        """The largest frame payload this end may send (the peer's limit)."""
        return self._send_limit

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame held until the rest arrives (for slow-sender timeouts)."""
        return len(self._buf)

    # ------------------------------------------------------------------ receiving

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """Feed received bytes (``b""``: the peer closed the stream); return the complete events."""
        if not data:
            return self._eof()
        if self._state is State.CLOSED:
            raise self._fail(ProtocolError(f"{len(data)} bytes received on a closed connection"), [])
        if self._buf:
            self._buf += data
            if len(self._buf) < self._need:
                return []
            data = bytes(self._buf)
            self._buf.clear()
        elif not isinstance(data, bytes):
            data = bytes(data)
        return self._frames(data)

    def resume(self) -> list[Event]:
        """The events of the frames ``receive_data`` left in the buffer (``deferred``)."""
        self.deferred = False
        if not self._buf or self._state is State.CLOSED:
            return []
        data = bytes(self._buf)
        self._buf.clear()
        return self._frames(data)

    def _frames(self, data: bytes) -> list[Event]:
        events: list[Event] = []
        n = len(data)
        spent = 0
        read_elements = self.read_elements
        pos = 0
        unpack = _HEADER.unpack_from
        fast_kind = self._fast_kind
        try:
            while n - pos >= FRAME_HEADER_SIZE:
                magic, version, kind, op, flags, rid, length = unpack(data, pos)
                if magic != FRAME_MAGIC or version != FRAME_VERSION or flags or kind not in _TYPES:
                    raise self._header_error(magic, version, kind, flags)
                if length > self._recv_limit:
                    raise ProtocolError(
                        f"frame of {length} payload bytes exceeds the limit of {self._recv_limit}"
                    )
                if kind in _WITH_REQUEST:
                    if not op or not rid:
                        raise ProtocolError(f"{_TYPES[kind].name} frame needs a non-zero op and request id")
                elif op or rid:
                    raise ProtocolError(f"{_TYPES[kind].name} frame MUST have op 0 and request id 0")
                end = pos + FRAME_HEADER_SIZE + length
                if end > n:
                    self._need = end - pos
                    break
                if self.frame_elements is not None:
                    budget = element_budget(self.frame_elements)
                    with budget:
                        event = self._frame_event(kind, op, rid, data[pos + FRAME_HEADER_SIZE : end])
                    spent += budget.used
                elif kind == fast_kind and self._state is _READY:
                    # Fast path: the REQUEST (server) / RESPONSE (client) frames of a READY
                    # connection keep it READY (TRANSITIONS): no table lookup, no state change.
                    event = self._on_message(_TYPES[kind], op, rid, data[pos + FRAME_HEADER_SIZE : end])
                else:
                    event = self._on_frame(_TYPES[kind], op, rid, data[pos + FRAME_HEADER_SIZE : end])
                events.append(event)
                pos = end
                if type(event) is Goodbye and pos < n:
                    raise ProtocolError(f"{n - pos} bytes after GOODBYE")
                if read_elements is not None and spent >= read_elements and pos < n:
                    self._need = FRAME_HEADER_SIZE
                    self.deferred = True  # the rest waits for ``resume``
                    break
            else:
                self._need = FRAME_HEADER_SIZE
        except WireError as exc:
            # (an element budget that ran out is no malformation: the frame is over a limit)
            what = "frame payload over a limit" if exc.hresult == _TOO_MANY else "malformed frame payload"
            raise self._fail(ProtocolError(f"{what}: {reason(exc)}"), events) from exc
        except ProtocolError as exc:
            raise self._fail(exc, events) from None
        if pos < n:
            self._buf += data[pos:]
        return events

    def _frame_event(self, kind: int, op: int, rid: int, payload: bytes) -> Event:
        if kind == self._fast_kind and self._state is _READY:
            return self._on_message(_TYPES[kind], op, rid, payload)
        return self._on_frame(_TYPES[kind], op, rid, payload)

    def _header_error(self, magic: bytes, version: int, kind: int, flags: int) -> ProtocolError:
        if magic != FRAME_MAGIC:
            return ProtocolError(f"frame magic {magic!r} is not b'MQ' (not a pymsmq client-protocol frame)")
        if version != FRAME_VERSION:
            return ProtocolError(f"frame version {version} is not {FRAME_VERSION}")
        if flags:
            return ProtocolError(f"frame flags 0x{flags:04X}: reserved bits MUST be 0")
        return ProtocolError(f"unknown frame type {kind}")

    def _fail(self, exc: ProtocolError, events: list[Event]) -> ProtocolError:
        self._enter(State.CLOSED)
        self._buf.clear()
        self.in_flight.clear()
        if self.error is None:
            self.error = exc
        exc.events = list(events)
        return exc

    def _eof(self) -> list[Event]:
        if self._buf:
            raise self._fail(
                ProtocolError(f"stream ended inside a frame ({len(self._buf)} bytes buffered)"), []
            )
        self._enter(State.CLOSED)
        if self._closed_reported:
            return []
        self._closed_reported = True
        return [ConnectionClosed()]

    def _transition(self, send: bool, kind: FrameType) -> State:
        """The next state for sending/receiving ``kind`` (TRANSITIONS), or ProtocolError."""
        new = self._moves.get((send, kind))
        if new is None:
            verb = "send" if send else "receive"
            raise ProtocolError(f"{self.role.value} cannot {verb} {kind.name} in state {self._state.value}")
        return new

    def _enter(self, new: State) -> None:
        if new is not self._state:
            self._state = new
            self._moves = _MOVES[self.role][new]

    def _on_frame(self, kind: FrameType, op: int, rid: int, payload: bytes) -> Event:
        new = self._transition(False, kind)
        event: Event
        if kind is FrameType.GOODBYE:
            event = Goodbye.decode(payload)
            self.in_flight.clear()
        else:
            event = self._on_message(kind, op, rid, payload)
        self._enter(new)
        return event

    def _on_message(self, kind: FrameType, op: int, rid: int, payload: bytes) -> Event:
        raise NotImplementedError  # pragma: no cover - both subclasses override it

    # ------------------------------------------------------------------ sending

    def _frame(self, obj: Payload, kind: FrameType, op: int, rid: int) -> bytes:
        fast = PAYLOAD_WRITERS.get(type(obj))
        if fast is not None:
            body = fast(obj)
            length = len(body)
            if length > self._send_limit:
                raise ProtocolError(
                    f"{type(obj).__name__} of {length} bytes exceeds the peer's limit of {self._send_limit}"
                )
            return _HEADER.pack(FRAME_MAGIC, FRAME_VERSION, kind, op, 0, rid, length) + body
        w = Writer()
        w_buf = w.buf
        w_buf += _ZERO_HEADER
        obj.write(w)
        length = len(w_buf) - FRAME_HEADER_SIZE
        if length > self._send_limit:
            raise ProtocolError(
                f"{type(obj).__name__} of {length} bytes exceeds the peer's limit of {self._send_limit}"
            )
        _HEADER.pack_into(w_buf, 0, FRAME_MAGIC, FRAME_VERSION, kind, op, 0, rid, length)
        return bytes(w_buf)

    def _send_goodbye(self, obj: Goodbye) -> bytes:
        new = self._transition(True, FrameType.GOODBYE)
        data = self._frame(obj, FrameType.GOODBYE, 0, 0)
        self._enter(new)
        self.in_flight.clear()
        return data


class ClientConnection(_Connection):
    """The client end: send CLIENT_HELLO, wait for SERVER_HELLO, then pipeline requests.

    ``send_request(request)`` picks a fresh request id and returns ``(request_id, bytes)``; the
    answer arrives as ``ResponseReceived(request_id, ...)`` from ``receive_data``.
    """

    role = Role.CLIENT
    _fast_kind = int(FrameType.RESPONSE)

    def __init__(self) -> None:
        super().__init__(State.SEND_HELLO)
        self._recv_limit = HELLO_MAX_PAYLOAD
        self._next_id = 1
        self._offered: tuple[int, ...] = SUPPORTED_VERSIONS
        #: The last request framed and its payload bytes (see send_request).
        self._last_request: Request | None = None
        self._last_body = b""
        #: The server's hello, once received.
        self.server_hello: ServerHello | None = None

    def next_request_id(self) -> int:
        """A non-zero request id not in flight (ids count up and wrap around)."""
        rid = self._next_id
        while rid in self.in_flight:
            rid = rid + 1 if rid < _MAX_ID else 1
        self._next_id = rid + 1 if rid < _MAX_ID else 1
        return rid

    def send(self, obj: ClientHello | Request | Goodbye, request_id: int | None = None) -> bytes:
        """The bytes of a CLIENT_HELLO, a REQUEST (``request_id`` None: pick one) or a GOODBYE."""
        if isinstance(obj, Request):
            return self.send_request(obj, request_id)[1]
        if type(obj) is Goodbye:
            return self._send_goodbye(obj)
        if type(obj) is ClientHello:
            new = self._transition(True, FrameType.CLIENT_HELLO)
            data = self._frame(obj, FrameType.CLIENT_HELLO, 0, 0)
            self._offered = obj.versions
            self._enter(new)
            return data
        raise ProtocolError(f"a client cannot send {type(obj).__name__}")

    def send_request(self, request: Request, request_id: int | None = None) -> tuple[int, bytes]:
        """``(request_id, frame bytes)`` of a REQUEST; the id is chosen unless given."""
        new = self._transition(True, FrameType.REQUEST)
        if not isinstance(request, Request):
            raise ProtocolError(f"{type(request).__name__} is not a request")
        if len(self.in_flight) >= self.max_in_flight:
            raise ProtocolError(
                f"{len(self.in_flight)} requests in flight: the server allows {self.max_in_flight}"
            )
        if request_id is None:
            request_id = self.next_request_id()
        elif type(request_id) is not int or not 0 < request_id <= _MAX_ID:
            raise ProtocolError(f"request id {request_id!r} is not a non-zero u32")
        elif request_id in self.in_flight:
            raise ProtocolError(f"request id {request_id} is already in flight")
        op = request.OP
        if request is self._last_request:
            # Fast path: the same (immutable) request again, e.g. receive_many's RECEIVEs: only the
            # header differs (its request id), the payload bytes are reused.
            body = self._last_body
            data = _HEADER.pack(FRAME_MAGIC, FRAME_VERSION, _REQUEST, op, 0, request_id, len(body)) + body
        else:
            data = self._frame(request, FrameType.REQUEST, op, request_id)
            self._last_request = request
            self._last_body = data[FRAME_HEADER_SIZE:]
        self.in_flight[request_id] = op
        self._enter(new)
        return request_id, data

    def request_frame(self, op: int, body: bytes) -> tuple[int, bytes] | None:
        """Fast lane: ``(request_id, frame bytes)`` of a REQUEST of ``op`` whose payload is ``body``.

        ``body`` must be the encoding of a valid request of ``op`` (e.g. ``hot.send_body``); it is
        not re-checked.  None (nothing changed) when the connection is not READY, the window is full
        or the payload exceeds the server's limit: use ``send_request``, which says why.  The bytes
        and state change are those of ``send_request(request)`` for the request ``body`` encodes.
        """
        in_flight = self.in_flight
        length = len(body)
        if self._state is not _READY or len(in_flight) >= self.max_in_flight or length > self._send_limit:
            return None
        rid = self._next_id
        if rid in in_flight:
            rid = self.next_request_id()
        else:
            self._next_id = rid + 1 if rid < _MAX_ID else 1
        in_flight[rid] = op
        return rid, _HEADER.pack(FRAME_MAGIC, FRAME_VERSION, _REQUEST, op, 0, rid, length) + body

    def response_payload(self, data: bytes, rid: int, parse: Callable[[bytes], _P | None]) -> _P | None:
        """Fast lane: ``parse(payload)`` when ``data`` is exactly one RESPONSE frame answering ``rid``.

        ``parse`` returns None for a payload it does not handle (then nothing changes and ``data``
        must go to ``receive_data``); otherwise the request is answered (no longer in flight), as
        ``receive_data(data)`` would have done with ``[ResponseReceived(rid, ...)]``.
        """
        if self._buf or self._state is not _READY or len(data) < FRAME_HEADER_SIZE:
            return None
        head, op, flags, frame_rid, length = _LANE_HEADER.unpack_from(data, 0)
        if head != _RESPONSE_HEAD or frame_rid != rid or flags or length != len(data) - FRAME_HEADER_SIZE:
            return None
        if length > self._recv_limit or self.in_flight.get(rid) != op:
            return None
        value = parse(data[FRAME_HEADER_SIZE:])
        if value is not None:
            del self.in_flight[rid]
        return value

    def _on_message(self, kind: FrameType, op: int, rid: int, payload: bytes) -> Event:
        if kind is FrameType.SERVER_HELLO:
            hello = ServerHello.decode(payload)
            if hello.version not in self._offered:
                raise ProtocolError(f"the server chose version {hello.version}, not one of {self._offered}")
            self.server_hello = hello
            self.max_in_flight = hello.max_in_flight
            self._send_limit = hello.max_payload
            self._recv_limit = MAX_PAYLOAD
            return hello
        expected = self.in_flight.get(rid)
        if expected is None:
            raise ProtocolError(f"{kind.name} for request id {rid}, which is not in flight")
        if op != expected:
            raise ProtocolError(f"{kind.name} with op {op} for request {rid} of op {expected}")
        if kind is FrameType.RESPONSE:
            cls = RESPONSE_TYPES[op]
            fast = PAYLOAD_READERS.get(cls)
            response: Response | ErrorResponse | None = fast(payload) if fast is not None else None
            if response is None:
                response = cls.decode(payload)
        else:
            response = ErrorResponse.decode(payload)
        del self.in_flight[rid]
        return ResponseReceived(rid, response)


class ServerConnection(_Connection):
    """The server end: wait for CLIENT_HELLO, answer SERVER_HELLO (or GOODBYE), then serve requests.

    The limits in the SERVER_HELLO it sends (max_payload, max_in_flight) are the ones it enforces.
    Every ``RequestReceived`` must be answered once, with its op's ``Response`` or an ``ErrorResponse``.
    """

    role = Role.SERVER
    _fast_kind = int(FrameType.REQUEST)

    def __init__(self) -> None:
        super().__init__(State.AWAIT_HELLO)
        self._send_limit = MAX_PAYLOAD
        #: The client's hello, once received.
        self.client_hello: ClientHello | None = None
        #: The protocol version of the SERVER_HELLO sent (1 until then): it fixes the set of ops.
        self.version = 1

    def send(self, obj: ServerHello | Response | ErrorResponse | Goodbye, request_id: int = 0) -> bytes:
        """The bytes of a SERVER_HELLO, a GOODBYE, or the answer to request ``request_id``."""
        writer = PAYLOAD_WRITERS.get(type(obj))
        if writer is not None and self._state is _READY:
            # Fast path: a SEND/RECEIVE answer of a READY connection (RESPONSE keeps it READY).
            # Anything unusual (unknown id, wrong op, too long) falls through to the checks below.
            in_flight = self.in_flight
            fast_op: int = cast(Response, obj).OP
            if in_flight.get(request_id) == fast_op:
                body = writer(obj)
                length = len(body)
                if length <= self._send_limit:
                    del in_flight[request_id]
                    return (
                        _HEADER.pack(FRAME_MAGIC, FRAME_VERSION, _RESPONSE, fast_op, 0, request_id, length)
                        + body
                    )
        if type(obj) is Goodbye:
            return self._send_goodbye(obj)
        if type(obj) is ServerHello:
            new = self._transition(True, FrameType.SERVER_HELLO)
            offered = self.client_hello.versions if self.client_hello is not None else ()
            if obj.version not in offered:
                raise ProtocolError(f"version {obj.version} was not offered by the client ({offered})")
            data = self._frame(obj, FrameType.SERVER_HELLO, 0, 0)
            self.version = obj.version
            self.max_in_flight = obj.max_in_flight
            self._recv_limit = obj.max_payload
            self._enter(new)
            return data
        if isinstance(obj, Response):
            kind = FrameType.RESPONSE
        elif type(obj) is ErrorResponse:
            kind = FrameType.ERROR
        else:
            raise ProtocolError(f"a server cannot send {type(obj).__name__}")
        new = self._transition(True, kind)
        op = self.in_flight.get(request_id)
        if op is None:
            raise ProtocolError(f"request id {request_id!r} is not awaiting an answer")
        if kind is FrameType.RESPONSE and op != obj.OP:  # type: ignore[union-attr]
            raise ProtocolError(f"{type(obj).__name__} does not answer a {Op(op).name} request")
        data = self._frame(obj, kind, op, request_id)
        del self.in_flight[request_id]
        self._enter(new)
        return data

    def request_fast(self, data: bytes) -> tuple[int, Request] | None:
        """Fast lane: ``(request_id, request)`` when ``data`` is exactly one SEND or RECEIVE REQUEST.

        The same checks and state change as ``receive_data(data)`` giving ``[RequestReceived(...)]``;
        None (nothing changed) for anything else (another op, several or partial frames, a payload
        the hot reader does not take, any error): then call ``receive_data(data)``.
        """
        if self._buf or self._state is not _READY or len(data) < FRAME_HEADER_SIZE:
            return None
        head, op, flags, rid, length = _LANE_HEADER.unpack_from(data, 0)
        reader = _FAST_READERS.get(op)
        in_flight = self.in_flight
        if (
            head != _REQUEST_HEAD
            or reader is None
            or flags
            or not rid
            or length != len(data) - FRAME_HEADER_SIZE
        ):
            return None
        if length > self._recv_limit or rid in in_flight or len(in_flight) >= self.max_in_flight:
            return None
        request = reader(data[FRAME_HEADER_SIZE:])
        if request is None:
            return None
        in_flight[rid] = op
        return rid, request

    def answer_frame(self, rid: int, op: int, body: bytes) -> bytes | None:
        """Fast lane: the RESPONSE frame answering ``rid`` (of ``op``) with payload ``body``.

        ``body`` must encode a valid response of ``op`` (e.g. ``hot.send_answer_body``).  The bytes
        and state change of ``send(response, rid)``; None (nothing changed) when that would not
        take its fast path (not READY, ``rid`` not awaiting an ``op`` answer, too long).
        """
        in_flight = self.in_flight
        length = len(body)
        if self._state is not _READY or in_flight.get(rid) != op or length > self._send_limit:
            return None
        del in_flight[rid]
        return _HEADER.pack(FRAME_MAGIC, FRAME_VERSION, _RESPONSE, op, 0, rid, length) + body

    def _on_message(self, kind: FrameType, op: int, rid: int, payload: bytes) -> Event:
        if kind is FrameType.CLIENT_HELLO:
            hello = ClientHello.decode(payload)
            self.client_hello = hello
            return hello
        cls = REQUEST_TYPES.get(op)
        if cls is None:
            raise ProtocolError(f"unknown op 0x{op:04X}")
        if OP_SINCE_VERSION.get(op, 1) > self.version:  # the handshake fixed the set of ops
            raise ProtocolError(f"op 0x{op:04X} is not in protocol version {self.version}")
        if rid in self.in_flight:
            raise ProtocolError(f"request id {rid} is already in flight")
        if len(self.in_flight) >= self.max_in_flight:
            raise ProtocolError(f"more than {self.max_in_flight} requests in flight")
        fast = PAYLOAD_READERS.get(cls)
        request = fast(payload) if fast is not None else None
        if request is None:
            request = cls.decode(payload)
        self.in_flight[rid] = op
        return RequestReceived(rid, request)
