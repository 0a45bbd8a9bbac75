"""Operation codes and the enumerations used inside client-protocol payloads (docs/protocol.md, 5)."""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import Final

__all__ = [
    "ACTIONS",
    "RR_ACK",
    "RR_NACK",
    "Action",
    "ManyFlags",
    "ManyMore",
    "Op",
    "QueueFilter",
    "RangeFlags",
    "ReceiveFlags",
]


class Op(IntEnum):
    """The operation code in a REQUEST/RESPONSE/ERROR frame header (u16)."""

    PING = 0x0001
    STATS = 0x0002
    LIST_QUEUES = 0x0003
    #: pymsmq extension (protocol version 4): LIST_QUEUES a page at a time, for listings larger
    #: than one frame (docs/protocol.md, LIST_QUEUES_PAGE).
    LIST_QUEUES_PAGE = 0x0004
    CREATE_QUEUE = 0x0010
    DELETE_QUEUE = 0x0011
    OPEN_QUEUE = 0x0012
    CLOSE_QUEUE = 0x0013
    GET_QUEUE_PROPERTIES = 0x0014
    SET_QUEUE_PROPERTIES = 0x0015
    PURGE_QUEUE = 0x0016
    SEND = 0x0020
    RECEIVE = 0x0021
    CREATE_CURSOR = 0x0022
    CLOSE_CURSOR = 0x0023
    MOVE = 0x0024
    END_RECEIVE = 0x0025
    #: Cancel a RECEIVE or RECEIVE_MANY that waits ([MS-MQRR] 3.1.4.8 R_CancelReceive).
    CANCEL_RECEIVE = 0x0026
    #: pymsmq extension (protocol version 5): MQMarkMessageRejected, a message marked rejected in a
    #: transaction (docs/protocol.md, MARK_REJECTED).
    MARK_REJECTED = 0x0027
    BEGIN_TRANSACTION = 0x0030
    COMMIT_TRANSACTION = 0x0031
    ABORT_TRANSACTION = 0x0032
    #: pymsmq extension: many messages of a lookup-id range in one MESSAGE_BATCH (docs/protocol.md).
    READ_RANGE = 0x0040
    #: pymsmq extension: many SENDs in one frame (docs/protocol.md 11, SEND_MANY).
    SEND_MANY = 0x0041
    #: pymsmq extension: many RECEIVEs (or peeks) of the queue head in one frame (RECEIVE_MANY).
    RECEIVE_MANY = 0x0042
    #: pymsmq extension (protocol version 3): receive or peek the first message with a given
    #: message id or correlation id, waiting for it (RECEIVE_MATCHING; System.Messaging ReceiveById).
    RECEIVE_MATCHING = 0x0043


class Action(IntEnum):
    """RECEIVE.action: the mq.h values of MQReceiveMessage's dwAction ([MS-MQMP] 2.2.3.2 Receive.Action)
    and of MQReceiveMessageByLookupId's ulAction (Win32 metadata, Windows SDK mq.h)."""

    MQ_ACTION_RECEIVE = 0x00000000
    MQ_ACTION_PEEK_CURRENT = 0x80000000
    MQ_ACTION_PEEK_NEXT = 0x80000001
    MQ_LOOKUP_PEEK_CURRENT = 0x40000010
    MQ_LOOKUP_PEEK_NEXT = 0x40000011
    MQ_LOOKUP_PEEK_PREV = 0x40000012
    MQ_LOOKUP_PEEK_FIRST = 0x40000014
    MQ_LOOKUP_PEEK_LAST = 0x40000018
    MQ_LOOKUP_RECEIVE_CURRENT = 0x40000020
    MQ_LOOKUP_RECEIVE_NEXT = 0x40000021
    MQ_LOOKUP_RECEIVE_PREV = 0x40000022
    MQ_LOOKUP_RECEIVE_FIRST = 0x40000024
    MQ_LOOKUP_RECEIVE_LAST = 0x40000028
    MQ_LOOKUP_RECEIVE_ALLOW_PEEK = 0x40000120

    @property
    def by_lookup_id(self) -> bool:
        """True for the MQ_LOOKUP_* actions (they use ``lookup_id``; FIRST/LAST ignore it)."""
        return bool(self & 0x40000000)

    @property
    def peek(self) -> bool:
        """True when the action leaves the message in the queue."""
        return self in _PEEKS


_PEEKS: Final = frozenset(
    {
        Action.MQ_ACTION_PEEK_CURRENT,
        Action.MQ_ACTION_PEEK_NEXT,
        Action.MQ_LOOKUP_PEEK_CURRENT,
        Action.MQ_LOOKUP_PEEK_NEXT,
        Action.MQ_LOOKUP_PEEK_PREV,
        Action.MQ_LOOKUP_PEEK_FIRST,
        Action.MQ_LOOKUP_PEEK_LAST,
    }
)
#: action value -> Action, for the decoder's membership check.
ACTIONS: Final = {int(a): a for a in Action}


class ReceiveFlags(IntFlag):
    """RECEIVE.flags; bits not listed here are reserved: senders set 0, servers ignore them."""

    NONE = 0
    #: Return the properties only; RECEIVE's response then carries no packet.
    NO_PACKET = 0x00000001
    #: Two-phase receive ([MS-MQRR] 3.1.4.9 R_EndReceive): a recoverable message received outside a
    #: transaction stays locked in its queue until END_RECEIVE acknowledges it; the answer says so
    #: with PROPID_PYMSMQ_HELD.  A server that does not know the flag ignores it (one-phase receive).
    CONFIRM = 0x00000002
    #: With MQ_ACTION_PEEK_NEXT at a cursor on a message: the cursor advances at once (Read ->
    #: Unread at its position), then the read waits as a PEEK_CURRENT for the first message after
    #: it: [MC-MQAC] 3.11.4.1.9 EnableNotification with MQMSG_NEXT, whose cursor has moved past its
    #: message even when none comes.  A server that does not know the flag ignores it (a plain
    #: PEEK_NEXT: the cursor stays on its message when none comes).
    ADVANCE = 0x00000004


class RangeFlags(IntFlag):
    """READ_RANGE.flags; bits not listed here are reserved: senders set 0, servers ignore them."""

    PEEK = 0
    #: Remove the messages (inside ``transaction`` when one is given) instead of peeking at them.
    RECEIVE = 0x00000001
    #: Leave the MESSAGE_BATCH empty (count, positions and queue facts only).
    NO_DATA = 0x00000002
    #: With RECEIVE, outside a transaction and with data: a two-phase receive, the recoverable
    #: messages held until END_RECEIVE (docs/protocol.md, READ_RANGE; ``ManyMore.HELD`` in ``more``).
    CONFIRM = 0x00000004
    #: ``high_water`` also stops at the lowest held message at or after ``from_lookup_id`` (received
    #: inside an open transaction or by an unacknowledged two-phase receive; it may come back).
    UNTIL_HELD = 0x00000008
    #: Select past the high water (up to the last lookup id handed out; pending sends are not
    #: visible); ``high_water`` is then the queue's next lookup id.  A batch read's snapshot.
    PAST_PENDING = 0x00000010
    #: With data: the MESSAGE_BATCH carries a seventh column, each message's last move time
    #: (PROPID_M_LAST_MOVE_TIME; ``message_batch.VAR_COLUMNS_WITH_MOVES``).  A server that predates
    #: the flag ignores it and sends six columns.
    LAST_MOVE_TIME = 0x00000020
    #: With NO_DATA: select only messages never moved between the queue and a subqueue, or last
    #: moved before ``max_bytes`` (then a time: seconds since 1970 UTC, PROPID_M_LAST_MOVE_TIME's
    #: unit; with NO_DATA there is no byte budget).  A stream's commit removes only what its batch
    #: read: a message moved into the queue after the batch was planned is left.  A server that
    #: predates the flag ignores it and selects them all.
    MOVED_BEFORE = 0x00000040
    #: With data: the MESSAGE_BATCH carries an eighth column after the seventh (LAST_MOVE_TIME's,
    #: present then whether asked or not: columns are positional), each message's
    #: destination_format_name (PROPID_M_DEST_FORMAT_NAME: the multiple-element name it was sent
    #: to; null for a message sent to one queue; ``message_batch.VAR_COLUMNS_WITH_SETS``).  A server
    #: that predates the flag ignores it and sends six or seven columns.
    DESTINATION_FORMAT_NAME = 0x00000080


class ManyFlags(IntFlag):
    """RECEIVE_MANY.flags; bits not listed here are reserved: senders set 0, servers ignore them."""

    RECEIVE = 0
    #: Peek at the first ``max_count`` messages (queue order) instead of removing them.
    PEEK = 0x00000001
    #: Two-phase receive outside a transaction: the recoverable messages taken are held until
    #: END_RECEIVE (``ReceiveFlags.CONFIRM``'s bit; docs/protocol.md, RECEIVE_MANY).
    CONFIRM = 0x00000002


class ManyMore(IntFlag):
    """The ``more`` byte of RECEIVE_MANY and READ_RANGE answers; bits not listed here are reserved (0)."""

    #: The answer stopped early: more messages may be waiting.
    MORE = 0x01
    #: The answer's recoverable messages are held until END_RECEIVE names the answer's first message
    #: (an answer to a request with ``ManyFlags.CONFIRM`` or ``RangeFlags.CONFIRM``).
    HELD = 0x02


class QueueFilter(IntEnum):
    """LIST_QUEUES.filter: which of the queue manager's queues to list."""

    ALL = 0
    PRIVATE = 1
    PUBLIC = 2
    SYSTEM = 3


#: END_RECEIVE.ack ([MS-MQRR] 3.1.4.9 dwAck): the client did not get the message; keep it.
RR_NACK: Final = 0x00000001
#: END_RECEIVE.ack: the client got the message; remove it.
RR_ACK: Final = 0x00000002
