"""UserHeader ([MS-MQMQ] 2.2.19.2): source, destination and reply information of a UserMessage.

Layout: SourceQueueManager GUID, QueueManagerAddress GUID, TimeToBeReceived u32, SentTime u32,
MessageID u32, Flags u32 (48 fixed bytes), then DestinationQueue, AdminQueue, ResponseQueue (each laid
out as its Flags.DQ / AQ / RQ code selects, [MS-MQMQ] 2.2.18.1.5) and ConnectorType (GUID, iff
Flags.CQ).  Every queue field is a multiple of 4 bytes (DirectQueueFormatName pads itself "relative to
the start of the header"), so the header ends 4-aligned.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import NULL_GUID, Reader, Writer
from pymsmq.wire._structure import Structure
from pymsmq.wire.packet_types import (
    DirectQueueFormatName,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueFormat,
    QueueType,
    guid_from_le,
    write_queue_format,
)

__all__ = [
    "ADMIN_QUEUE_TYPES",
    "DESTINATION_QUEUE_TYPES",
    "MAX_ROUTING_COUNT",
    "USER_HEADER_FIXED_SIZE",
    "DeliveryMode",
    "UserHeader",
    "UserHeaderFlags",
]

USER_HEADER_FIXED_SIZE: Final = 48
# [MS-MQMQ] 2.2.19.2 RC: "The values in this field MUST be in the range from 0x00 to 0x1D."
MAX_ROUTING_COUNT: Final = 0x1D
# [MS-MQMQ] 2.2.19.2 DQ: "The field MUST be set to 0x0, 0x3, 0x5, or 0x7" ... "Any value for Flags.DQ
# other than those specified in the preceding table MUST be treated as an error by closing the session."
DESTINATION_QUEUE_TYPES: Final = frozenset({0, 3, 5, 7})
# [MS-MQMQ] 2.2.19.2 AQ: "The field MUST be set to 0x0, 0x2, 0x3, 0x5, 0x6 or 0x7" (same error rule).
ADMIN_QUEUE_TYPES: Final = frozenset({0, 2, 3, 5, 6, 7})

_FIXED: Final = struct.Struct("<16s16sIIII")
_new: Final = object.__new__
_setattr: Final = object.__setattr__
_DQ_OK: Final = (True, False, False, True, False, True, False, True)
_AQ_OK: Final = (True, False, True, True, False, True, True, True)


class UserHeaderFlags(IntFlag):
    """UserHeader.Flags ([MS-MQMQ] 2.2.19.2); diagram bit n is mask ``1 << n`` (LSB first)."""

    RC = 0x0000001F  # routing servers that processed the packet (5 bits)
    DM = 0x00000060  # delivery mode (2 bits): 0 express, 1 recoverable
    X1 = 0x00000080  # reserved
    JN = 0x00000100  # negative source journaling
    JP = 0x00000200  # positive source journaling
    DQ = 0x00001C00  # destination queue type (3 bits)
    AQ = 0x0000E000  # administration queue type (3 bits)
    RQ = 0x00070000  # response queue type (3 bits)
    SH = 0x00080000  # SecurityHeader present
    TH = 0x00100000  # TransactionHeader present
    MP = 0x00200000  # MessagePropertiesHeader present (MUST be set)
    CQ = 0x00400000  # ConnectorType present
    MQ = 0x00800000  # MultiQueueFormatHeader present
    X2 = 0x01000000  # reserved
    AH = 0x02000000  # received over HTTP ([MS-MQRR] 2.2.5.1: SRMP headers present)
    X3 = 0x0C000000  # reserved (2 bits)
    HH = 0x10000000  # SoapHeader present
    X4 = 0xE0000000  # reserved (3 bits)


class DeliveryMode(IntEnum):
    """UserHeader.Flags.DM ([MS-MQMQ] 2.2.19.2); 2 and 3 are undefined and kept as plain ints."""

    EXPRESS = 0
    RECOVERABLE = 1


@dataclass(frozen=True)
class UserHeader(Structure):
    """[MS-MQMQ] 2.2.19.2.  ``flags`` keeps the whole u32 (reserved bits too) for byte-exact re-encoding.

    ``destination_queue``, ``admin_queue`` and ``response_queue`` are the decoded queue values
    (``PrivateQueueFormatNameId``, ``PublicQueueFormatName``, ``PrivateQueueFormatName``,
    ``DirectQueueFormatName``) or None when the type code carries no bytes.  The type codes in
    ``flags`` decide the layout; ``encode`` checks that the values match them.

    Not ``slots=True``, unlike most structures: a frozen slots instance costs one
    ``object.__setattr__`` call per field to build, while this class is built (by ``read``) with a
    single ``__dict__`` assignment, which keeps the UserMessage codec above 100k packets/s.
    """

    source_queue_manager: uuid.UUID = NULL_GUID
    queue_manager_address: uuid.UUID = NULL_GUID
    time_to_be_received: int = 0xFFFFFFFF
    sent_time: int = 0
    message_id: int = 0
    flags: int = UserHeaderFlags.MP
    destination_queue: QueueFormat | None = None
    admin_queue: QueueFormat | None = None
    response_queue: QueueFormat | None = None
    connector_type: uuid.UUID | None = None

    # -- typed accessors for Flags ----------------------------------------------------------------

    @property
    def rc(self) -> int:
        """Flags.RC: routing servers that processed the packet (0..0x1D valid)."""
        return self.flags & 0x1F

    @property
    def dm(self) -> DeliveryMode | int:
        """Flags.DM: delivery mode (``DeliveryMode``; undefined values stay ints)."""
        v = (self.flags >> 5) & 0x3
        return DeliveryMode(v) if v < 2 else v

    @property
    def recoverable(self) -> bool:
        """True when Flags.DM is 1 (recoverable, which includes transactional)."""
        return (self.flags >> 5) & 0x3 == 1

    @property
    def jn(self) -> bool:
        """Flags.JN: negative source journaling."""
        return bool(self.flags & 0x100)

    @property
    def jp(self) -> bool:
        """Flags.JP: positive source journaling."""
        return bool(self.flags & 0x200)

    @property
    def dq(self) -> QueueType:
        """Flags.DQ: destination queue type."""
        return QueueType((self.flags >> 10) & 0x7)

    @property
    def aq(self) -> QueueType:
        """Flags.AQ: administration queue type."""
        return QueueType((self.flags >> 13) & 0x7)

    @property
    def rq(self) -> QueueType:
        """Flags.RQ: response queue type."""
        return QueueType((self.flags >> 16) & 0x7)

    @property
    def sh(self) -> bool:
        """Flags.SH: a SecurityHeader is present."""
        return bool(self.flags & 0x80000)

    @property
    def th(self) -> bool:
        """Flags.TH: a TransactionHeader is present."""
        return bool(self.flags & 0x100000)

    @property
    def mp(self) -> bool:
        """Flags.MP: a MessagePropertiesHeader is present (MUST be set)."""
        return bool(self.flags & 0x200000)

    @property
    def cq(self) -> bool:
        """Flags.CQ: the ConnectorType field is present."""
        return bool(self.flags & 0x400000)

    @property
    def mq(self) -> bool:
        """Flags.MQ: a MultiQueueFormatHeader is present."""
        return bool(self.flags & 0x800000)

    @property
    def ah(self) -> bool:
        """Flags.AH: originally received over HTTP ([MS-MQRR] 2.2.5.1); MUST NOT be set when sent."""
        return bool(self.flags & 0x2000000)

    @property
    def hh(self) -> bool:
        """Flags.HH: a SoapHeader is present."""
        return bool(self.flags & 0x10000000)

    @property
    def x1(self) -> bool:
        """Flags.X1 (reserved)."""
        return bool(self.flags & 0x80)

    @property
    def x2(self) -> bool:
        """Flags.X2 (reserved)."""
        return bool(self.flags & 0x1000000)

    @property
    def x3(self) -> int:
        """Flags.X3 (reserved, 2 bits)."""
        return (self.flags >> 26) & 0x3

    @property
    def x4(self) -> int:
        """Flags.X4 (reserved, 3 bits)."""
        return (self.flags >> 29) & 0x7

    @staticmethod
    def make_flags(
        *,
        rc: int = 0,
        dm: int = 0,
        jn: bool = False,
        jp: bool = False,
        dq: int = 0,
        aq: int = 0,
        rq: int = 0,
        sh: bool = False,
        th: bool = False,
        mp: bool = True,
        cq: bool = False,
        mq: bool = False,
        ah: bool = False,
        hh: bool = False,
    ) -> int:
        """Compose a Flags value from its fields (range-checked)."""
        if (
            not 0 <= rc <= 0x1F
            or not 0 <= dm <= 3
            or not 0 <= dq <= 7
            or not 0 <= aq <= 7
            or not 0 <= rq <= 7
        ):
            raise WireError("UserHeader.Flags field out of range")
        return (
            rc
            | dm << 5
            | jn << 8
            | jp << 9
            | dq << 10
            | aq << 13
            | rq << 16
            | sh << 19
            | th << 20
            | mp << 21
            | cq << 22
            | mq << 23
            | ah << 25
            | hh << 28
        )

    # -- codec ------------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Bytes this header takes on the wire."""
        n = USER_HEADER_FIXED_SIZE
        for q in (self.destination_queue, self.admin_queue, self.response_queue):
            if q is not None:
                n += q.size
        return n + (16 if self.connector_type is not None else 0)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the header at the reader's position (the header start is the alignment base)."""
        start = r.pos
        if start + USER_HEADER_FIXED_SIZE > r.end:
            raise WireError(f"truncated UserHeader: need 48 bytes, {r.end - start} left", start)
        sqm, qma, ttbr, sent, msg_id, flags = _FIXED.unpack_from(r.data, start)
        r.pos = start + USER_HEADER_FIXED_SIZE
        dq = (flags >> 10) & 0x7
        aq = (flags >> 13) & 0x7
        rq = (flags >> 16) & 0x7
        if not _DQ_OK[dq]:
            raise WireError(f"UserHeader.Flags.DQ is {dq}; MUST be 0, 3, 5 or 7", start + 44)
        if not _AQ_OK[aq]:
            raise WireError(f"UserHeader.Flags.AQ is {aq}; MUST be 0, 2, 3, 5, 6 or 7", start + 44)
        # Destination, Admin, Response, ConnectorType, in that order ([MS-MQMQ] 2.2.19.2 diagram).
        dest = _read_queue(r, dq, start)
        admin = _read_queue(r, aq, start) if aq else None
        resp = _read_queue(r, rq, start) if rq > 1 else None
        connector = guid_from_le(r.raw(16, "UserHeader.ConnectorType")) if flags & 0x400000 else None
        return cls._make(
            guid_from_le(sqm), guid_from_le(qma), ttbr, sent, msg_id, flags, dest, admin, resp, connector
        )

    @classmethod
    def _make(
        cls,
        source_queue_manager: uuid.UUID,
        queue_manager_address: uuid.UUID,
        time_to_be_received: int,
        sent_time: int,
        message_id: int,
        flags: int,
        destination_queue: QueueFormat | None,
        admin_queue: QueueFormat | None,
        response_queue: QueueFormat | None,
        connector_type: uuid.UUID | None,
    ) -> Self:
        # The dataclass __init__ in one __dict__ assignment (see the class docstring).
        value = _new(cls)
        _setattr(
            value,
            "__dict__",
            {
                "source_queue_manager": source_queue_manager,
                "queue_manager_address": queue_manager_address,
                "time_to_be_received": time_to_be_received,
                "sent_time": sent_time,
                "message_id": message_id,
                "flags": flags,
                "destination_queue": destination_queue,
                "admin_queue": admin_queue,
                "response_queue": response_queue,
                "connector_type": connector_type,
            },
        )
        return value

    def write(self, w: Writer) -> None:
        """Append the header; the queue values must match the DQ/AQ/RQ codes in ``flags``."""
        flags = self.flags
        base = len(w.buf)
        try:
            w.buf += _FIXED.pack(
                _guid(self.source_queue_manager, "SourceQueueManager"),
                _guid(self.queue_manager_address, "QueueManagerAddress"),
                self.time_to_be_received,
                self.sent_time,
                self.message_id,
                flags,
            )
        except struct.error as exc:
            raise WireError(f"UserHeader field out of range: {exc}") from exc
        dq = (flags >> 10) & 0x7
        aq = (flags >> 13) & 0x7
        if not _DQ_OK[dq]:
            raise WireError(f"UserHeader.Flags.DQ is {dq}; MUST be 0, 3, 5 or 7")
        if not _AQ_OK[aq]:
            raise WireError(f"UserHeader.Flags.AQ is {aq}; MUST be 0, 2, 3, 5, 6 or 7")
        dest = self.destination_queue
        if dq == 7 and type(dest) is DirectQueueFormatName:
            dest.write(w, base)  # the common case, without the generic dispatch
        else:
            write_queue_format(w, dq, dest, base, "DestinationQueue")
        if aq or self.admin_queue is not None:
            write_queue_format(w, aq, self.admin_queue, base, "AdminQueue")
        rq = (flags >> 16) & 0x7
        if rq or self.response_queue is not None:
            write_queue_format(w, rq, self.response_queue, base, "ResponseQueue")
        if flags & 0x400000:
            if self.connector_type is None:
                raise WireError("UserHeader.Flags.CQ is set but connector_type is None")
            w.buf += _guid(self.connector_type, "ConnectorType")
        elif self.connector_type is not None:
            raise WireError("connector_type is given but UserHeader.Flags.CQ is clear")


def _read_queue(r: Reader, code: int, base: int) -> QueueFormat | None:
    # [MS-MQMQ] 2.2.19.2 tables; code 1 ("same as the administration queue", RQ only) has no bytes.
    if code == 7:
        return DirectQueueFormatName.read(r, base)
    if code == 5:
        return PublicQueueFormatName.read(r, base)
    if code == 6:
        return PrivateQueueFormatName.read(r, base)
    if code >= 2:
        return PrivateQueueFormatNameId.read(r, base)
    return None


def _guid(value: uuid.UUID, what: str) -> bytes:
    if not isinstance(value, uuid.UUID):
        raise WireError(f"UserHeader.{what} must be a uuid.UUID, not {type(value).__name__}")
    return value.bytes_le
