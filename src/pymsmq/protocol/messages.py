"""Operations of the client protocol: one request and one response dataclass per operation code.

docs/protocol.md, "Operations".  A REQUEST frame carries an ``Op`` in its header and the request
payload of that op; the answer is a RESPONSE frame with the same op and request id carrying the
response payload, or an ERROR frame carrying ``ErrorResponse`` (an MSMQ HRESULT and a text).

Messages travel as whole [MS-MQMQ] 2.2.20 UserMessage packets (``PACKET`` fields, checked down to
the BaseHeader here and decoded by ``UserMessage.decode`` where needed).  Queue-manager facts that
live beside a stored packet (lookup id, arrival time, abort and move counts, ...) travel as a
property array of PROPID_M_* values.  Receive requests carry the CACTransferBufferV1 receive fields
([MS-MQMP] 2.2.3.2: ``request_timeout``, ``action``, ``cursor``) plus a lookup id, a transaction and
the list of wanted properties.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar, Final

from pymsmq.errors import WireError
from pymsmq.protocol._fields import (
    BYTES,
    GUID,
    OPT_PACKET,
    PACKET,
    PROPIDS,
    PROPS,
    PROPS_LIST,
    STR,
    STRS,
    U8,
    U32,
    U64,
    XACT,
    Props,
    TransactionRef,
)
from pymsmq.protocol._payload import Payload, payload
from pymsmq.protocol.codes import ACTIONS, Action, Op, QueueFilter, ReceiveFlags
from pymsmq.wire.base_header import INFINITE
from pymsmq.wire.user_message import UserMessage

__all__ = [
    "MATCH_PROPIDS",
    "REQUEST_TYPES",
    "RESPONSE_TYPES",
    "AbortTransactionRequest",
    "AbortTransactionResponse",
    "Action",
    "BeginTransactionRequest",
    "BeginTransactionResponse",
    "CancelReceiveRequest",
    "CancelReceiveResponse",
    "CloseCursorRequest",
    "CloseCursorResponse",
    "CloseQueueRequest",
    "CloseQueueResponse",
    "CommitTransactionRequest",
    "CommitTransactionResponse",
    "CreateCursorRequest",
    "CreateCursorResponse",
    "CreateQueueRequest",
    "CreateQueueResponse",
    "DeleteQueueRequest",
    "DeleteQueueResponse",
    "EndReceiveRequest",
    "EndReceiveResponse",
    "ErrorResponse",
    "GetQueuePropertiesRequest",
    "GetQueuePropertiesResponse",
    "ListQueuesPageRequest",
    "ListQueuesPageResponse",
    "ListQueuesRequest",
    "ListQueuesResponse",
    "MarkRejectedRequest",
    "MarkRejectedResponse",
    "MoveRequest",
    "MoveResponse",
    "Op",
    "OpenQueueRequest",
    "OpenQueueResponse",
    "PingRequest",
    "PingResponse",
    "PurgeQueueRequest",
    "PurgeQueueResponse",
    "QueueFilter",
    "ReadRangeRequest",
    "ReadRangeResponse",
    "ReceiveFlags",
    "ReceiveMatchingRequest",
    "ReceiveMatchingResponse",
    "ReceiveRequest",
    "ReceiveResponse",
    "Request",
    "Response",
    "SendRequest",
    "SendResponse",
    "SetQueuePropertiesRequest",
    "SetQueuePropertiesResponse",
    "StatsRequest",
    "StatsResponse",
]


class Request(Payload):
    """Base of the request payloads; ``OP`` is the frame header's operation code."""

    __slots__ = ()
    OP: ClassVar[Op]


class Response(Payload):
    """Base of the (successful) response payloads; ``OP`` matches the request's."""

    __slots__ = ()
    OP: ClassVar[Op]


@payload(U32, STR)
@dataclass(frozen=True, slots=True)
class ErrorResponse(Payload):
    """ERROR frame payload: the operation failed with this MSMQ HRESULT ([MS-MQMQ] 2.4)."""

    hresult: int
    message: str = ""


# ---------------------------------------------------------------------------------- queue manager


@payload(BYTES)
@dataclass(frozen=True, slots=True)
class PingRequest(Request):
    """PING: the server echoes ``data``."""

    OP = Op.PING
    data: bytes = b""


@payload(BYTES)
@dataclass(frozen=True, slots=True)
class PingResponse(Response):
    """PING answer: the request's ``data``."""

    OP = Op.PING
    data: bytes = b""


@payload(STR, PROPIDS)
@dataclass(frozen=True, slots=True)
class StatsRequest(Request):
    """STATS: PROPID_MGMT_QUEUE_* of the queue ``name``, or PROPID_MGMT_MSMQ_* when ``name`` is "".

    ``propids`` empty asks for every statistic the server has.
    """

    OP = Op.STATS
    name: str = ""
    propids: tuple[int, ...] = ()


@payload(PROPS)
@dataclass(frozen=True, slots=True)
class StatsResponse(Response):
    """STATS answer: the statistics as a property array."""

    OP = Op.STATS
    properties: Props = ()


@payload(U8, PROPIDS)
@dataclass(frozen=True, slots=True)
class ListQueuesRequest(Request):
    """LIST_QUEUES: the queues selected by ``filter``, each with the PROPID_MGMT_QUEUE_* in ``propids``."""

    OP = Op.LIST_QUEUES
    filter: int = QueueFilter.ALL
    propids: tuple[int, ...] = ()


@payload(STRS, PROPS_LIST)
@dataclass(frozen=True, slots=True)
class ListQueuesResponse(Response):
    """LIST_QUEUES answer: the queues' path names and, index for index, their property arrays.

    Wire form: STRS names, then u32 count (== len(names)) and that many PROPS.
    """

    OP = Op.LIST_QUEUES
    names: tuple[str, ...] = ()
    properties: tuple[Props, ...] = ()

    def _validate(self) -> None:
        if len(self.properties) != len(self.names):
            raise WireError("ListQueuesResponse: one property array per name is required")


@payload(U8, PROPIDS, STR, U32)
@dataclass(frozen=True, slots=True)
class ListQueuesPageRequest(Request):
    """LIST_QUEUES_PAGE (version 4): LIST_QUEUES from the queue after ``after`` on.

    The queues are in the order of their path names compared case-insensitively (``str.casefold``);
    ``after`` "" starts at the first.  At most ``max_count`` of them (0: as many as one answer holds).
    """

    OP = Op.LIST_QUEUES_PAGE
    filter: int = QueueFilter.ALL
    propids: tuple[int, ...] = ()
    after: str = ""
    max_count: int = 0


@payload(STRS, PROPS_LIST, U8)
@dataclass(frozen=True, slots=True)
class ListQueuesPageResponse(Response):
    """LIST_QUEUES_PAGE answer: a page of LIST_QUEUES's answer, in that order; ``more`` 1: ask again
    with ``after`` = the last name (a page holds at least one queue when any is left)."""

    OP = Op.LIST_QUEUES_PAGE
    names: tuple[str, ...] = ()
    properties: tuple[Props, ...] = ()
    more: int = 0

    def _validate(self) -> None:
        if len(self.properties) != len(self.names):
            raise WireError("ListQueuesPageResponse: one property array per name is required")
        if self.more not in (0, 1):
            raise WireError(f"ListQueuesPageResponse.more {self.more} is not 0 or 1")


# ---------------------------------------------------------------------------------- queues


@payload(STR, PROPS)
@dataclass(frozen=True, slots=True)
class CreateQueueRequest(Request):
    """CREATE_QUEUE: the path name ([MS-MQMQ] 2.1.1) and PROPID_Q_* properties of the new queue."""

    OP = Op.CREATE_QUEUE
    path: str
    properties: Props = ()


@payload(STR)
@dataclass(frozen=True, slots=True)
class CreateQueueResponse(Response):
    """CREATE_QUEUE answer: the new queue's format name."""

    OP = Op.CREATE_QUEUE
    format_name: str


@payload(STR)
@dataclass(frozen=True, slots=True)
class DeleteQueueRequest(Request):
    """DELETE_QUEUE: a path name or format name."""

    OP = Op.DELETE_QUEUE
    name: str


@payload()
@dataclass(frozen=True, slots=True)
class DeleteQueueResponse(Response):
    """DELETE_QUEUE answer (empty payload)."""

    OP = Op.DELETE_QUEUE


@payload(STR, U32, U32)
@dataclass(frozen=True, slots=True)
class OpenQueueRequest(Request):
    """OPEN_QUEUE: a path or format name, MQACCESS access bits and an MQSHARE share mode."""

    OP = Op.OPEN_QUEUE
    name: str
    access: int
    share_mode: int = 0


@payload(U32, STR, PROPS)
@dataclass(frozen=True, slots=True)
class OpenQueueResponse(Response):
    """OPEN_QUEUE answer: a queue handle (non-zero, valid on this connection only), the queue's
    format name and its PROPID_Q_* properties."""

    OP = Op.OPEN_QUEUE
    handle: int
    format_name: str = ""
    properties: Props = ()


@payload(U32)
@dataclass(frozen=True, slots=True)
class CloseQueueRequest(Request):
    """CLOSE_QUEUE: release a queue handle (its cursors close with it)."""

    OP = Op.CLOSE_QUEUE
    handle: int


@payload()
@dataclass(frozen=True, slots=True)
class CloseQueueResponse(Response):
    """CLOSE_QUEUE answer (empty payload)."""

    OP = Op.CLOSE_QUEUE


@payload(STR, PROPIDS)
@dataclass(frozen=True, slots=True)
class GetQueuePropertiesRequest(Request):
    """GET_QUEUE_PROPERTIES: PROPID_Q_* of a queue; ``propids`` empty asks for all."""

    OP = Op.GET_QUEUE_PROPERTIES
    name: str
    propids: tuple[int, ...] = ()


@payload(PROPS)
@dataclass(frozen=True, slots=True)
class GetQueuePropertiesResponse(Response):
    """GET_QUEUE_PROPERTIES answer."""

    OP = Op.GET_QUEUE_PROPERTIES
    properties: Props = ()


@payload(STR, PROPS)
@dataclass(frozen=True, slots=True)
class SetQueuePropertiesRequest(Request):
    """SET_QUEUE_PROPERTIES: new PROPID_Q_* values for a queue."""

    OP = Op.SET_QUEUE_PROPERTIES
    name: str
    properties: Props = ()


@payload(PROPS)
@dataclass(frozen=True, slots=True)
class SetQueuePropertiesResponse(Response):
    """SET_QUEUE_PROPERTIES answer: the queue's properties after the change (may be empty)."""

    OP = Op.SET_QUEUE_PROPERTIES
    properties: Props = ()


@payload(U32)
@dataclass(frozen=True, slots=True)
class PurgeQueueRequest(Request):
    """PURGE_QUEUE: delete every message of the queue behind a handle opened for receive."""

    OP = Op.PURGE_QUEUE
    handle: int


@payload()
@dataclass(frozen=True, slots=True)
class PurgeQueueResponse(Response):
    """PURGE_QUEUE answer (empty payload)."""

    OP = Op.PURGE_QUEUE


# ---------------------------------------------------------------------------------- messages


@payload(U32, PACKET, XACT, PROPS)
@dataclass(frozen=True, slots=True)
class SendRequest(Request):
    """SEND: one UserMessage packet to the queue behind ``handle``.

    ``transaction``: None (no argument), an MQTRANSACTION constant, or an id from BEGIN_TRANSACTION.
    ``properties``: extra PROPID_M_* values that have no place in the packet (normally empty).
    """

    OP = Op.SEND
    handle: int
    packet: bytes
    transaction: TransactionRef = None
    properties: Props = ()

    @classmethod
    def from_message(
        cls, handle: int, message: UserMessage, transaction: TransactionRef = None, properties: Props = ()
    ) -> SendRequest:
        """A SEND of an encoded ``UserMessage``."""
        return cls(handle, message.encode(), transaction, properties)

    @property
    def message(self) -> UserMessage:
        """The packet decoded (``WireError`` if it is malformed beyond its BaseHeader)."""
        return UserMessage.decode(self.packet)


@payload(PROPS)
@dataclass(frozen=True, slots=True)
class SendResponse(Response):
    """SEND answer: facts the queue manager assigned (PROPID_M_MSGID, PROPID_M_SENTTIME, ...)."""

    OP = Op.SEND
    properties: Props = ()


@payload(U32, U32, U32, U32, U64, XACT, U32, PROPIDS)
@dataclass(frozen=True, slots=True)
class ReceiveRequest(Request):
    """RECEIVE (and peek): the CACTransferBufferV1 receive fields ([MS-MQMP] 2.2.3.2) and more.

    ``request_timeout`` is in milliseconds (0xFFFFFFFF = INFINITE); ``cursor`` 0 means none;
    ``lookup_id`` is used by the MQ_LOOKUP_* actions; ``propids`` lists the PROPID_M_* values wanted
    in the response's property array (empty: the server's default set).
    """

    OP = Op.RECEIVE
    handle: int
    action: int = Action.MQ_ACTION_RECEIVE
    request_timeout: int = INFINITE
    cursor: int = 0
    lookup_id: int = 0
    transaction: TransactionRef = None
    flags: int = ReceiveFlags.NONE
    propids: tuple[int, ...] = ()

    def _validate(self) -> None:
        # [MS-MQMP] 2.2.3.2: Receive.Action "MUST specify one of the values"; likewise the lookup actions.
        if self.action not in ACTIONS:
            raise WireError(
                f"ReceiveRequest.action 0x{self.action:08X} is not an MQ_ACTION_* or MQ_LOOKUP_* value"
            )


@payload(OPT_PACKET, PROPS)
@dataclass(frozen=True, slots=True)
class ReceiveResponse(Response):
    """RECEIVE answer: the packet (None with ReceiveFlags.NO_PACKET) and the queue-manager facts."""

    OP = Op.RECEIVE
    packet: bytes | None = None
    properties: Props = ()

    @property
    def message(self) -> UserMessage | None:
        """The packet decoded, or None."""
        return None if self.packet is None else UserMessage.decode(self.packet)


_NIL_GUID: Final = uuid.UUID(int=0)
#: RECEIVE_MATCHING.match: the message property compared ([MS-MQMQ] PROPID_M_MSGID, PROPID_M_CORRELATIONID).
MATCH_PROPIDS: Final = {2: "id", 3: "correlation_id"}


@payload(U32, U32, U32, U32, GUID, U32, XACT, U32, PROPIDS)
@dataclass(frozen=True, slots=True)
class ReceiveMatchingRequest(Request):
    """RECEIVE_MATCHING (pymsmq extension, protocol version 3): receive (``action``
    MQ_ACTION_RECEIVE) or peek (MQ_ACTION_PEEK_CURRENT) the first message in queue order whose
    property ``match`` (PROPID_M_MSGID 2 or PROPID_M_CORRELATIONID 3) is the OBJECTID
    ``{lineage, uniquifier}`` ([MS-MQMQ] 2.2.8), waiting up to ``request_timeout`` ms for one to
    arrive.  ``transaction``, ``flags`` and ``propids`` are RECEIVE's."""

    OP = Op.RECEIVE_MATCHING
    handle: int
    action: int = Action.MQ_ACTION_RECEIVE
    request_timeout: int = INFINITE
    match: int = 3
    lineage: uuid.UUID = _NIL_GUID
    uniquifier: int = 0
    transaction: TransactionRef = None
    flags: int = ReceiveFlags.NONE
    propids: tuple[int, ...] = ()

    def _validate(self) -> None:
        if self.action not in (Action.MQ_ACTION_RECEIVE, Action.MQ_ACTION_PEEK_CURRENT):
            raise WireError(
                f"ReceiveMatchingRequest.action 0x{self.action:08X} is not MQ_ACTION_RECEIVE or"
                " MQ_ACTION_PEEK_CURRENT"
            )
        if self.match not in MATCH_PROPIDS:
            raise WireError(
                f"ReceiveMatchingRequest.match {self.match} is not PROPID_M_MSGID (2) or"
                " PROPID_M_CORRELATIONID (3)"
            )


@payload(OPT_PACKET, PROPS)
@dataclass(frozen=True, slots=True)
class ReceiveMatchingResponse(ReceiveResponse):
    """RECEIVE_MATCHING answer: a RECEIVE answer (its packet and facts) under its own op."""

    OP = Op.RECEIVE_MATCHING


@payload(U32)
@dataclass(frozen=True, slots=True)
class CreateCursorRequest(Request):
    """CREATE_CURSOR on the queue behind ``handle``."""

    OP = Op.CREATE_CURSOR
    handle: int


@payload(U32)
@dataclass(frozen=True, slots=True)
class CreateCursorResponse(Response):
    """CREATE_CURSOR answer: a cursor handle (non-zero, valid on this connection only)."""

    OP = Op.CREATE_CURSOR
    cursor: int


@payload(U32)
@dataclass(frozen=True, slots=True)
class CloseCursorRequest(Request):
    """CLOSE_CURSOR."""

    OP = Op.CLOSE_CURSOR
    cursor: int


@payload()
@dataclass(frozen=True, slots=True)
class CloseCursorResponse(Response):
    """CLOSE_CURSOR answer (empty payload)."""

    OP = Op.CLOSE_CURSOR


@payload(U32, U64, U32)
@dataclass(frozen=True, slots=True)
class EndReceiveRequest(Request):
    """END_RECEIVE: acknowledge (``ack`` RR_ACK 2: remove it) or refuse (RR_NACK 1: put it back) the
    message ``lookup_id`` that a RECEIVE with ReceiveFlags.CONFIRM on ``handle`` holds ([MS-MQRR]
    3.1.4.9 R_EndReceive, dwAck)."""

    OP = Op.END_RECEIVE
    handle: int
    lookup_id: int
    ack: int


@payload()
@dataclass(frozen=True, slots=True)
class EndReceiveResponse(Response):
    """END_RECEIVE answer (empty payload): sent once the removal is durable."""

    OP = Op.END_RECEIVE


@payload(U32, U32)
@dataclass(frozen=True, slots=True)
class CancelReceiveRequest(Request):
    """CANCEL_RECEIVE: the RECEIVE (or RECEIVE_MANY) ``request_id`` on ``handle`` that waits for a
    message stops waiting and is answered MQ_ERROR_OPERATION_CANCELLED ([MS-MQRR] 3.1.4.8
    R_CancelReceive, dwRequestId; [MS-MQDMPR] 3.1.7.1.17)."""

    OP = Op.CANCEL_RECEIVE
    handle: int
    request_id: int


@payload()
@dataclass(frozen=True, slots=True)
class CancelReceiveResponse(Response):
    """CANCEL_RECEIVE answer (empty payload): the read was waiting and is cancelled."""

    OP = Op.CANCEL_RECEIVE


@payload(U32, U64, STR, XACT)
@dataclass(frozen=True, slots=True)
class MoveRequest(Request):
    """MOVE the message ``lookup_id`` of the queue behind ``handle`` to ``target``: a subqueue name,
    "" for the parent queue, or a queue's path/format name."""

    OP = Op.MOVE
    handle: int
    lookup_id: int
    target: str = ""
    transaction: TransactionRef = None


@payload()
@dataclass(frozen=True, slots=True)
class MoveResponse(Response):
    """MOVE answer (empty payload)."""

    OP = Op.MOVE


@payload(U32, U64, XACT)
@dataclass(frozen=True, slots=True)
class MarkRejectedRequest(Request):
    """MARK_REJECTED (protocol version 5): MQMarkMessageRejected of the message ``lookup_id`` of the
    queue behind ``handle``, in ``transaction`` (a BEGIN_TRANSACTION GUID): received in it, the
    message leaves with MQMSG_CLASS_NACK_RECEIVE_REJECTED when it commits."""

    OP = Op.MARK_REJECTED
    handle: int
    lookup_id: int
    transaction: TransactionRef = None


@payload()
@dataclass(frozen=True, slots=True)
class MarkRejectedResponse(Response):
    """MARK_REJECTED answer (empty payload)."""

    OP = Op.MARK_REJECTED


# ---------------------------------------------------------------------------------- transactions


@payload()
@dataclass(frozen=True, slots=True)
class BeginTransactionRequest(Request):
    """BEGIN_TRANSACTION: start an internal transaction owned by this connection."""

    OP = Op.BEGIN_TRANSACTION


@payload(GUID)
@dataclass(frozen=True, slots=True)
class BeginTransactionResponse(Response):
    """BEGIN_TRANSACTION answer: the transaction's id (XACT kind INTERNAL in later requests)."""

    OP = Op.BEGIN_TRANSACTION
    transaction: uuid.UUID


@payload(GUID)
@dataclass(frozen=True, slots=True)
class CommitTransactionRequest(Request):
    """COMMIT_TRANSACTION."""

    OP = Op.COMMIT_TRANSACTION
    transaction: uuid.UUID


@payload()
@dataclass(frozen=True, slots=True)
class CommitTransactionResponse(Response):
    """COMMIT_TRANSACTION answer (empty payload): the commit is durable."""

    OP = Op.COMMIT_TRANSACTION


@payload(GUID)
@dataclass(frozen=True, slots=True)
class AbortTransactionRequest(Request):
    """ABORT_TRANSACTION."""

    OP = Op.ABORT_TRANSACTION
    transaction: uuid.UUID


@payload()
@dataclass(frozen=True, slots=True)
class AbortTransactionResponse(Response):
    """ABORT_TRANSACTION answer (empty payload)."""

    OP = Op.ABORT_TRANSACTION


# ---------------------------------------------------------------------------------- bulk reads


@payload(U32, U64, U64, U32, U32, U32, XACT, U8, U8)
@dataclass(frozen=True, slots=True)
class ReadRangeRequest(Request):
    """READ_RANGE (pymsmq extension): the messages with ``from_lookup_id <= lookup_id < to_lookup_id``
    (``to_lookup_id`` 0 = no upper bound) and ``min_priority <= priority <= max_priority``, in lookup-id
    order, at most ``max_count`` of them and about ``max_bytes`` of MESSAGE_BATCH (at least one message).
    ``flags``: ``RangeFlags`` (peek by default; RECEIVE removes them, inside ``transaction`` if given)."""

    OP = Op.READ_RANGE
    handle: int
    from_lookup_id: int = 0
    to_lookup_id: int = 0
    max_count: int = 0xFFFFFFFF
    max_bytes: int = 0x003F0000
    flags: int = 0
    transaction: TransactionRef = None
    min_priority: int = 0
    max_priority: int = 7

    def _validate(self) -> None:
        # [MS-MQMQ] 2.2.19.1 BaseHeader.Flags.PR: priorities are 0..7.
        if self.min_priority > 7 or self.max_priority > 7:
            raise WireError("ReadRangeRequest priorities must be 0..7")


@payload(U32, U8, U64, U64, U64, U64, BYTES)
@dataclass(frozen=True, slots=True)
class ReadRangeResponse(Response):
    """READ_RANGE answer: ``count`` messages in ``batch`` (a MESSAGE_BATCH, empty with NO_DATA); ``more``
    is 1 when a limit cut the range short and ``next_lookup_id`` is where to continue; ``first_lookup_id``
    (lowest live lookup id, else ``high_water``), ``high_water`` (every lookup id below it is settled:
    no uncommitted or unwritten send can still appear there) and ``queue_count`` describe the queue."""

    OP = Op.READ_RANGE
    count: int = 0
    more: int = 0
    next_lookup_id: int = 0
    first_lookup_id: int = 0
    high_water: int = 0
    queue_count: int = 0
    batch: bytes = b""


REQUEST_TYPES: Final[dict[int, type[Request]]] = {
    cls.OP: cls
    for cls in (
        PingRequest,
        StatsRequest,
        ListQueuesRequest,
        ListQueuesPageRequest,
        CreateQueueRequest,
        DeleteQueueRequest,
        OpenQueueRequest,
        CloseQueueRequest,
        GetQueuePropertiesRequest,
        SetQueuePropertiesRequest,
        PurgeQueueRequest,
        SendRequest,
        ReceiveRequest,
        ReceiveMatchingRequest,
        CreateCursorRequest,
        CloseCursorRequest,
        EndReceiveRequest,
        CancelReceiveRequest,
        MarkRejectedRequest,
        MoveRequest,
        BeginTransactionRequest,
        CommitTransactionRequest,
        AbortTransactionRequest,
        ReadRangeRequest,
    )
}
RESPONSE_TYPES: Final[dict[int, type[Response]]] = {
    cls.OP: cls
    for cls in (
        PingResponse,
        StatsResponse,
        ListQueuesResponse,
        ListQueuesPageResponse,
        CreateQueueResponse,
        DeleteQueueResponse,
        OpenQueueResponse,
        CloseQueueResponse,
        GetQueuePropertiesResponse,
        SetQueuePropertiesResponse,
        PurgeQueueResponse,
        SendResponse,
        ReceiveResponse,
        ReceiveMatchingResponse,
        CreateCursorResponse,
        CloseCursorResponse,
        EndReceiveResponse,
        CancelReceiveResponse,
        MarkRejectedResponse,
        MoveResponse,
        BeginTransactionResponse,
        CommitTransactionResponse,
        AbortTransactionResponse,
        ReadRangeResponse,
    )
}
