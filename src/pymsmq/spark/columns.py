"""The decoded-packet columns and the per-row reference decoder (pure Python, no pyspark, no pyarrow).

``packet_row(data)`` turns one packet into a dict with exactly the ``COLUMNS`` keys, using
``pymsmq.wire.decode_packet`` (the codec is the single source of truth).  The vectorised Arrow decoder
(``pymsmq.spark.arrow_decode``) must give the same values for every row, and falls back to this function
for everything it does not handle itself; the tests compare the two.

Column meanings (names follow the Message attribute names of DESIGN.md where one exists):

- ``kind``: the packet type (``UserMessage``, ``EstablishConnection``, ``ConnectionParameters``,
  ``SessionAck``, ``OrderAck``, ``FinalAck``, ``Ping``) or ``error`` for a malformed packet, whose
  ``error`` column then holds the ``WireError`` text and every other column is null.
- BaseHeader ([MS-MQMQ] 2.2.19.1), for every packet that has one: ``packet_size`` (PacketSize, the
  trailing SessionHeader not included), ``priority`` (Flags.PR), ``flags`` (the whole 16-bit Flags word),
  ``time_to_reach_queue`` (seconds, 0xFFFFFFFF = infinite).
- UserHeader ([MS-MQMQ] 2.2.19.2), UserMessage/OrderAck/FinalAck only: ``source_queue_manager`` and
  ``destination_queue_manager`` (QueueManagerAddress) as lower-case GUID text, ``message_id`` in the MSMQ
  text form ``{GUID}\\ordinal`` (SourceQueueManager + MessageID, [MS-MQMQ] 2.2.18.1.3), ``sent_time``
  (SentTime, seconds since 1970-01-01 UTC, as a UTC datetime), ``time_to_be_received`` (seconds),
  ``delivery`` (Flags.DM: ``express``, ``recoverable``; undefined values 2 and 3 as their digit),
  ``user_flags`` (the whole Flags word) and the queues as format-name text (``destination``,
  ``admin_queue``, ``response_queue``; see ``queue_text``).
- MessagePropertiesHeader ([MS-MQMQ] 2.2.19.3): ``message_class``, ``correlation_id`` (20 bytes),
  ``label``, ``body``, ``body_type``, ``app_specific`` (ApplicationTag), ``extension`` (ExtensionData),
  ``acknowledgements`` (Flags: PA/PR/NA/NR bits).
- TransactionHeader ([MS-MQMQ] 2.2.20.5): ``transactional`` (the header is present),
  ``first_in_transaction`` / ``last_in_transaction`` (Flags.FM / Flags.LM; False when not transactional,
  as PROPID_M_FIRST_IN_XACT reads 0 for a non-transactional message).

Labels are text: a label holding a lone UTF-16 surrogate (legal on the wire, "%x0001-FFFF") cannot be
stored in a Spark string, so each lone surrogate becomes U+FFFD.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Final

from pymsmq.errors import WireError
from pymsmq.wire.internal_packets import ConnectionParameters, EstablishConnection, SessionAck
from pymsmq.wire.packet import FinalAck, OrderAck, decode_packet
from pymsmq.wire.packet_types import (
    DirectQueueFormatName,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueFormat,
)
from pymsmq.wire.ping import PingPacket
from pymsmq.wire.user_header import UserHeader
from pymsmq.wire.user_message import UserMessage

__all__ = ["COLUMNS", "DELIVERY_NAMES", "EPOCH", "SPARK_SCHEMA", "clean_text", "packet_row", "queue_text"]

#: (name, Spark SQL type) of every decoded column, in output order.
COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("kind", "string"),
    ("packet_size", "bigint"),
    ("priority", "int"),
    ("flags", "int"),
    ("time_to_reach_queue", "bigint"),
    ("source_queue_manager", "string"),
    ("destination_queue_manager", "string"),
    ("message_id", "string"),
    ("sent_time", "timestamp"),
    ("time_to_be_received", "bigint"),
    ("delivery", "string"),
    ("user_flags", "bigint"),
    ("destination", "string"),
    ("admin_queue", "string"),
    ("response_queue", "string"),
    ("message_class", "int"),
    ("correlation_id", "binary"),
    ("label", "string"),
    ("body", "binary"),
    ("body_type", "bigint"),
    ("app_specific", "bigint"),
    ("extension", "binary"),
    ("acknowledgements", "int"),
    ("transactional", "boolean"),
    ("first_in_transaction", "boolean"),
    ("last_in_transaction", "boolean"),
    ("error", "string"),
)

#: The decoded columns as a Spark DDL schema string.
SPARK_SCHEMA: Final = ", ".join(f"`{name}` {kind}" for name, kind in COLUMNS)

#: UserHeader.Flags.DM names ([MS-MQMQ] 2.2.19.2: 0 express, 1 recoverable; 2 and 3 are undefined).
DELIVERY_NAMES: Final = ("express", "recoverable", "2", "3")

EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

_NAMES: Final = tuple(name for name, _ in COLUMNS)
_EMPTY: Final[dict[str, Any]] = dict.fromkeys(_NAMES)
_KINDS: Final[dict[type, str]] = {
    UserMessage: "UserMessage",
    EstablishConnection: "EstablishConnection",
    ConnectionParameters: "ConnectionParameters",
    SessionAck: "SessionAck",
    OrderAck: "OrderAck",
    FinalAck: "FinalAck",
    PingPacket: "Ping",
}


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (Spark strings are UTF-8)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Only lone surrogates fail to encode (a valid pair is one code point in a str).
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


def _private(qm: uuid.UUID, ident: int) -> str:
    # [MS-MQMQ] 2.1.4 canonical text, as pymsmq.wire.PrivateFormatName prints it.
    return f"PRIVATE={qm}\\{ident:08x}"


def queue_text(
    code: int, queue: QueueFormat | None, user: UserHeader, admin: QueueFormat | None
) -> str | None:
    """The format-name text of a UserHeader queue field ([MS-MQMQ] 2.2.19.2 type codes).

    Direct names give ``DIRECT=<name>``; public ``PUBLIC=<guid>``; a private queue ``PRIVATE=<qm>\\<id>``,
    the queue manager being the one the code implies: 2 the source (SourceQueueManager), 3 the
    destination (QueueManagerAddress), 4 the admin queue's host (only known when the admin queue names
    its queue manager; otherwise None), 6 the GUID in the field.  Code 1 ("same as the administration
    queue", ResponseQueue only) gives the admin queue's text.  Absent: None.
    """
    if queue is None:
        if code == 1:
            return queue_text(user.aq, admin, user, None)
        return None
    kind = type(queue)
    if kind is DirectQueueFormatName:
        return "DIRECT=" + clean_text(queue.direct_format_name)  # type: ignore[union-attr]
    if kind is PublicQueueFormatName:
        return f"PUBLIC={queue.public_queue_identifier}"  # type: ignore[union-attr]
    if kind is PrivateQueueFormatName:
        return _private(queue.source_queue_manager, queue.private_queue_identifier)  # type: ignore[union-attr]
    assert isinstance(queue, PrivateQueueFormatNameId)
    ident = queue.private_queue_identifier
    if code == 2:
        return _private(user.source_queue_manager, ident)
    if code == 3:
        return _private(user.queue_manager_address, ident)
    # code 4: a private queue on the admin queue's host.
    if isinstance(admin, PrivateQueueFormatName):
        return _private(admin.source_queue_manager, ident)
    if isinstance(admin, PrivateQueueFormatNameId):
        aq = user.aq
        if aq == 2:
            return _private(user.source_queue_manager, ident)
        if aq == 3:
            return _private(user.queue_manager_address, ident)
    return None


def _user_message_row(row: dict[str, Any], msg: UserMessage) -> None:
    user = msg.user_header
    props = msg.message_properties_header
    uflags = user.flags
    sqm = user.source_queue_manager
    row["source_queue_manager"] = str(sqm)
    row["destination_queue_manager"] = str(user.queue_manager_address)
    row["message_id"] = f"{{{str(sqm).upper()}}}\\{user.message_id}"
    row["sent_time"] = EPOCH + dt.timedelta(seconds=user.sent_time)
    row["time_to_be_received"] = user.time_to_be_received
    row["delivery"] = DELIVERY_NAMES[(uflags >> 5) & 3]
    row["user_flags"] = uflags
    admin = user.admin_queue
    row["destination"] = queue_text((uflags >> 10) & 7, user.destination_queue, user, admin)
    row["admin_queue"] = queue_text((uflags >> 13) & 7, admin, user, None)
    row["response_queue"] = queue_text((uflags >> 16) & 7, user.response_queue, user, admin)
    row["message_class"] = props.message_class
    row["correlation_id"] = props.correlation_id
    row["label"] = None if props.label is None else clean_text(props.label)
    row["body"] = msg.body  # an SRMP message's body may be in its CompoundMessageHeader
    row["body_type"] = props.body_type
    row["app_specific"] = props.application_tag
    row["extension"] = props.extension
    row["acknowledgements"] = props.flags
    tx = msg.transaction_header
    row["transactional"] = tx is not None
    row["first_in_transaction"] = tx is not None and tx.first_message
    row["last_in_transaction"] = tx is not None and tx.last_message


def packet_row(data: bytes | bytearray | memoryview | None) -> dict[str, Any]:
    """One packet as a dict with every ``COLUMNS`` key; a malformed packet gives ``kind="error"``."""
    row = dict(_EMPTY)
    if data is None:
        row["kind"] = "error"
        row["error"] = "no packet (null)"
        return row
    try:
        packet = decode_packet(data)
    except WireError as exc:
        row["kind"] = "error"
        row["error"] = str(exc)
        return row
    row["kind"] = _KINDS[type(packet)]
    if isinstance(packet, PingPacket):
        return row
    base = packet.base_header
    row["packet_size"] = base.packet_size
    row["priority"] = base.flags & 7
    row["flags"] = base.flags
    row["time_to_reach_queue"] = base.time_to_reach_queue
    if isinstance(packet, OrderAck | FinalAck):
        _user_message_row(row, packet.message)
    elif isinstance(packet, UserMessage):
        _user_message_row(row, packet)
    return row
