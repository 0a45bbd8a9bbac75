"""The client protocol's connection state machine as a transition table (docs/protocol.md, "Connection
states"): ``Role``, ``State``, ``Direction`` and ``TRANSITIONS``.

Split out of ``pymsmq.protocol.connection`` (which re-exports these names); pure data, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import Final

from pymsmq.protocol.frames import FrameType

__all__ = ["TRANSITIONS", "Direction", "Role", "State"]


class Role(Enum):
    """Which end of the connection this object drives."""

    CLIENT = "client"
    SERVER = "server"


class State(Enum):
    """Connection states (docs/protocol.md, "Connection states")."""

    SEND_HELLO = "SEND_HELLO"  # this side's hello is due next (client at start; server after CLIENT_HELLO)
    AWAIT_HELLO = "AWAIT_HELLO"  # waiting for the peer's hello (server at start; client after CLIENT_HELLO)
    READY = "READY"  # handshake done: requests and answers flow
    CLOSED = "CLOSED"  # GOODBYE sent or received, end of stream, or a protocol error


_READY: Final = State.READY


class Direction(Enum):
    """Whether a frame is sent or received by the side the transition belongs to."""

    SEND = "send"
    RECEIVE = "receive"


_C, _S = Role.CLIENT, Role.SERVER
_TX, _RX = Direction.SEND, Direction.RECEIVE
_T = FrameType


def _table() -> dict[tuple[Role, State, Direction, FrameType], State]:
    t = {
        (_C, State.SEND_HELLO, _TX, _T.CLIENT_HELLO): State.AWAIT_HELLO,
        (_C, State.AWAIT_HELLO, _RX, _T.SERVER_HELLO): State.READY,
        (_C, State.READY, _TX, _T.REQUEST): State.READY,
        (_C, State.READY, _RX, _T.RESPONSE): State.READY,
        (_C, State.READY, _RX, _T.ERROR): State.READY,
        (_S, State.AWAIT_HELLO, _RX, _T.CLIENT_HELLO): State.SEND_HELLO,
        (_S, State.SEND_HELLO, _TX, _T.SERVER_HELLO): State.READY,
        (_S, State.READY, _RX, _T.REQUEST): State.READY,
        (_S, State.READY, _TX, _T.RESPONSE): State.READY,
        (_S, State.READY, _TX, _T.ERROR): State.READY,
    }
    # Either side may say GOODBYE at any time before the connection is closed.
    for role in Role:
        for state in (State.SEND_HELLO, State.AWAIT_HELLO, State.READY):
            for direction in Direction:
                t[role, state, direction, _T.GOODBYE] = State.CLOSED
    return t


#: (role, state, direction, frame type) -> next state.  Anything not here is a ProtocolError.
TRANSITIONS: Final[Mapping[tuple[Role, State, Direction, FrameType], State]] = MappingProxyType(_table())

# The same table, indexed for the hot path: role -> state -> (is_send, int(frame type)) -> next state.
_MOVES: Final[dict[Role, dict[State, dict[tuple[bool, int], State]]]] = {
    role: {state: {} for state in State} for role in Role
}
for (_role, _state, _direction, _kind), _next in TRANSITIONS.items():
    _MOVES[_role][_state][_direction is Direction.SEND, int(_kind)] = _next
