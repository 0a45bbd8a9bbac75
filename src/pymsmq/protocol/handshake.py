"""The handshake and connection-level payloads: CLIENT_HELLO, SERVER_HELLO and GOODBYE frames.

docs/protocol.md, "Handshake": the client's first frame is a CLIENT_HELLO listing the protocol
versions it speaks, an optional authentication token and a name for logs; the server answers with
a SERVER_HELLO (the version it chose, its queue manager's GUID and machine name, and its limits)
or with a GOODBYE carrying the refusal's HRESULT.  Nothing else may come first.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from pymsmq.errors import WireError
from pymsmq.hresult import HResult
from pymsmq.protocol._fields import BYTES, GUID, STR, U16, U16S, U32
from pymsmq.protocol._payload import Payload, payload
from pymsmq.wire._buffer import NULL_GUID
from pymsmq.wire.base_header import MAX_PACKET_SIZE

__all__ = [
    "DEFAULT_MAX_IN_FLIGHT",
    "HELLO_MAX_PAYLOAD",
    "MAX_PAYLOAD",
    "MAX_TOKEN_SIZE",
    "MIN_PAYLOAD_LIMIT",
    "OP_SINCE_VERSION",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "ClientHello",
    "Goodbye",
    "ServerHello",
    "choose_version",
]

#: The protocol version this module implements (SERVER_HELLO.version).  Version 2 is version 1 and
#: the op CANCEL_RECEIVE, version 3 is version 2 and the op RECEIVE_MATCHING, version 4 is version 3
#: and the op LIST_QUEUES_PAGE, version 5 is version 4 and the op MARK_REJECTED (docs/protocol.md): a
#: peer that chose an older version never sees the newer ops.
PROTOCOL_VERSION: Final = 5
SUPPORTED_VERSIONS: Final = (1, 2, 3, 4, PROTOCOL_VERSION)
#: Ops that are not in every supported version: op -> the first version that has it.
#: (0x0026 CANCEL_RECEIVE, 0x0043 RECEIVE_MATCHING, 0x0004 LIST_QUEUES_PAGE, 0x0027 MARK_REJECTED)
OP_SINCE_VERSION: Final = {0x0026: 2, 0x0043: 3, 0x0004: 4, 0x0027: 5}
#: Hard ceiling on a frame's payload: a 4 MiB message ([MS-MQMQ] 2.2.19.1 PacketSize <= 0x00400000)
#: plus 64 KiB for the property array and fixed fields beside it.
MAX_PAYLOAD: Final = MAX_PACKET_SIZE + 0x10000
#: Smallest max_payload a server may announce (every non-message payload must fit).
MIN_PAYLOAD_LIMIT: Final = 0x10000
#: Frames before the handshake completes (hellos, goodbyes) are limited to 64 KiB.
HELLO_MAX_PAYLOAD: Final = 0x10000
#: Longest authentication token.
MAX_TOKEN_SIZE: Final = 4096
#: Requests a connection may have in flight unless the server announces otherwise.
DEFAULT_MAX_IN_FLIGHT: Final = 1024


@payload(U16S, BYTES, STR)
@dataclass(frozen=True, slots=True)
class ClientHello(Payload):
    """CLIENT_HELLO: the versions the client speaks, its token (``b""`` = none) and its name."""

    versions: tuple[int, ...] = SUPPORTED_VERSIONS
    token: bytes = b""
    client_name: str = ""

    def _validate(self) -> None:
        if not self.versions:
            raise WireError("ClientHello.versions is empty")
        if len(self.token) > MAX_TOKEN_SIZE:
            raise WireError(f"ClientHello.token is longer than {MAX_TOKEN_SIZE} bytes")


@payload(U16, GUID, STR, U32, U32, U32)
@dataclass(frozen=True, slots=True)
class ServerHello(Payload):
    """SERVER_HELLO: the chosen version, the queue manager's identity and the server's limits."""

    version: int = PROTOCOL_VERSION
    qm_guid: uuid.UUID = NULL_GUID
    machine_name: str = ""
    #: Largest frame payload the server accepts (MIN_PAYLOAD_LIMIT..MAX_PAYLOAD).
    max_payload: int = MAX_PAYLOAD
    #: Most requests the server lets one connection have in flight (>= 1).
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    #: Largest UserMessage packet the server stores (<= 0x00400000, [MS-MQMQ] 2.2.19.1).
    max_message_size: int = MAX_PACKET_SIZE

    def _validate(self) -> None:
        if not MIN_PAYLOAD_LIMIT <= self.max_payload <= MAX_PAYLOAD:
            raise WireError(
                f"ServerHello.max_payload {self.max_payload} is outside {MIN_PAYLOAD_LIMIT}..{MAX_PAYLOAD}"
            )
        if self.max_in_flight < 1:
            raise WireError("ServerHello.max_in_flight must be at least 1")
        if self.max_message_size > MAX_PACKET_SIZE:
            raise WireError(f"ServerHello.max_message_size {self.max_message_size} exceeds 0x00400000")


@payload(U32, STR)
@dataclass(frozen=True, slots=True)
class Goodbye(Payload):
    """GOODBYE: the sender closes the connection; ``hresult`` 0 (S_OK) for a normal close."""

    hresult: int = HResult.S_OK
    reason: str = ""


def choose_version(hello: ClientHello, supported: tuple[int, ...] = SUPPORTED_VERSIONS) -> int | None:
    """The highest version both sides speak, or None (the server then sends a GOODBYE with
    MQ_ERROR_OPERATION_NOT_SUPPORTED_BY_REMOTE_COMPUTER)."""
    common = set(hello.versions).intersection(supported)
    return max(common) if common else None
