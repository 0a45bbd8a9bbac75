"""[MS-MQCN] Change Notification Message (2.2.4): the body of a directory change notification.

Two versions share the 2-byte envelope ``Version`` (u8), ``NumberOfUpdateNotifications`` (u8):

* Version 0x01 (sent by an MSMQ Directory Service): ``Data`` is NumberOfUpdateNotifications
  Notification Updates (2.2.6) back to back.  An update has no length prefix and its property
  values have no type tag: each value's VARTYPE comes from its PROPID (``PROPID_VT``), so an
  unknown PROPID makes the rest unparseable and is a ``WireError``.
* Version 0x02 (sent by a queue manager): ``Data`` is one Notification Body (2.2.5), a UTF-16LE
  string with an XML-like shape (``NotificationBody``).

[MS-MQCN] 3.3.5.3: the sender puts the message in a buffer "of the size of the Change Notification
Message plus 1"; the extra byte "is unused".  ``ChangeNotificationMessage.trailing`` holds whatever
follows the message in the body (by default that one zero byte), so decode/encode is byte exact
and receivers tolerate 0, 1 or more trailing bytes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar, Final, Self

from pymsmq.errors import WireError
from pymsmq.hresult import HResult
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure
from pymsmq.wire.propvariant import PropVariant, read_propvalue, write_propvalue
from pymsmq.wire.vartype import VarType

__all__ = [
    "MQDS_MACHINE",
    "MQDS_QUEUE",
    "NOTIFICATION_TIME_TO_REACH_QUEUE",
    "NOTIFY_QUEUE_NAME",
    "NOTIFY_QUEUE_PRIVATE_ID",
    "PROPID_VT",
    "ChangeNotificationMessage",
    "NotificationBody",
    "NotificationCommand",
    "NotificationEvent",
    "NotificationOperation",
    "NotificationUpdate",
    "object_type_of_propid",
]

# [MS-MQCN] 1.9 NOTIFY_QUEUE_PRIVATE = "PRIVATE=<Queue Manager GUID>\3": private queue id 3 (hex).
NOTIFY_QUEUE_PRIVATE_ID: Final = 3
# [MS-MQCN] 3.2.1.2.1: QueuePathName = Computer "\private$\notify_queue$".
NOTIFY_QUEUE_NAME: Final = "notify_queue$"
# [MS-MQCN] 3.3.5.3: rMessage.TimeToReachQueue is 300 seconds.
NOTIFICATION_TIME_TO_REACH_QUEUE: Final = 300
# [MS-MQMQ] 2.3.13.4 PROPID_D_OBJTYPE values used by [MS-MQCN] 3.2.5.1.
MQDS_QUEUE: Final = 1
MQDS_MACHINE: Final = 2

_V1: Final = 0x01
_V2: Final = 0x02
_RESERVED_SIZE: Final = 24

_T = VarType
# PROPID -> VARTYPE for every directory-object property of [MS-MQMQ] 2.3.1 (queue), 2.3.2 (queue
# manager) and 2.3.13 (deleted object).  [MS-MQCN] <11>: Windows forwards the directory structure
# "as is", so a v1 parser meets PROPIDs beyond those [MS-MQCN] 2.2.2.1 lists.
PROPID_VT: Final[dict[int, VarType]] = {
    101: _T.VT_CLSID,  # PROPID_Q_INSTANCE
    102: _T.VT_CLSID,  # PROPID_Q_TYPE (a service-type GUID)
    103: _T.VT_LPWSTR,  # PROPID_Q_PATHNAME
    104: _T.VT_UI1,  # PROPID_Q_JOURNAL
    105: _T.VT_UI4,  # PROPID_Q_QUOTA
    106: _T.VT_I2,  # PROPID_Q_BASEPRIORITY (signed)
    107: _T.VT_UI4,  # PROPID_Q_JOURNAL_QUOTA
    108: _T.VT_LPWSTR,  # PROPID_Q_LABEL
    109: _T.VT_I4,  # PROPID_Q_CREATE_TIME
    110: _T.VT_I4,  # PROPID_Q_MODIFY_TIME
    111: _T.VT_UI1,  # PROPID_Q_AUTHENTICATE
    112: _T.VT_UI4,  # PROPID_Q_PRIV_LEVEL
    113: _T.VT_UI1,  # PROPID_Q_TRANSACTION
    114: _T.VT_UI1,  # PROPID_Q_SCOPE
    115: _T.VT_CLSID,  # PROPID_Q_QMID
    116: _T.VT_CLSID,  # PROPID_Q_PARTITIONID
    117: _T.VT_BLOB,  # PROPID_Q_SEQNUM
    118: _T.VT_UI4,  # PROPID_Q_HASHKEY
    119: _T.VT_UI4,  # PROPID_Q_LABEL_HASHKEY
    121: _T.VT_LPWSTR,  # PROPID_Q_FULL_PATH
    123: _T.VT_LPWSTR,  # PROPID_Q_NAME_SUFFIX
    124: _T.VT_LPWSTR,  # PROPID_Q_PATHNAME_DNS
    125: _T.VT_LPWSTR,  # PROPID_Q_MULTICAST_ADDRESS
    126: _T.VT_LPWSTR,  # PROPID_Q_ADS_PATH
    1101: _T.VT_BLOB,  # PROPID_Q_SECURITY
    1102: _T.VT_BLOB,  # PROPID_Q_OBJ_SECURITY
    1103: _T.VT_UI4,  # PROPID_Q_SECURITY_INFORMATION
    201: _T.VT_CLSID,  # PROPID_QM_SITE_ID
    202: _T.VT_CLSID,  # PROPID_QM_MACHINE_ID
    203: _T.VT_LPWSTR,  # PROPID_QM_PATHNAME
    205: _T.VT_VECTOR_UI1,  # PROPID_QM_ENCRYPTION_PK
    206: _T.VT_BLOB,  # PROPID_QM_ADDRESS
    207: _T.VT_VECTOR_CLSID,  # PROPID_QM_CNS
    208: _T.VT_VECTOR_CLSID,  # PROPID_QM_OUTFRS
    209: _T.VT_VECTOR_CLSID,  # PROPID_QM_INFRS
    210: _T.VT_UI4,  # PROPID_QM_SERVICE
    211: _T.VT_CLSID,  # PROPID_QM_PARTITIONID
    212: _T.VT_UI4,  # PROPID_QM_HASHKEY
    213: _T.VT_BLOB,  # PROPID_QM_SEQNUM
    214: _T.VT_UI4,  # PROPID_QM_QUOTA
    215: _T.VT_UI4,  # PROPID_QM_JOURNAL_QUOTA
    216: _T.VT_LPWSTR,  # PROPID_QM_MACHINE_TYPE
    217: _T.VT_I4,  # PROPID_QM_CREATE_TIME
    218: _T.VT_I4,  # PROPID_QM_MODIFY_TIME
    219: _T.VT_UI1,  # PROPID_QM_FOREIGN
    220: _T.VT_UI4,  # PROPID_QM_OS
    221: _T.VT_LPWSTR,  # PROPID_QM_FULL_PATH
    222: _T.VT_VECTOR_CLSID,  # PROPID_QM_SITE_IDS
    223: _T.VT_VECTOR_LPWSTR,  # PROPID_QM_OUTFRS_DN
    224: _T.VT_VECTOR_LPWSTR,  # PROPID_QM_INFRS_DN
    227: _T.VT_UI1,  # PROPID_QM_SERVICE_ROUTING
    228: _T.VT_UI1,  # PROPID_QM_SERVICE_DSSERVER
    229: _T.VT_UI1,  # PROPID_QM_SERVICE_DEPCLIENTS
    231: _T.VT_VECTOR_UI1,  # PROPID_QM_ENCRYPTION_PK_BASE
    232: _T.VT_VECTOR_UI1,  # PROPID_QM_ENCRYPTION_PK_ENHANCED
    233: _T.VT_LPWSTR,  # PROPID_QM_PATHNAME_DNS
    234: _T.VT_BLOB,  # PROPID_QM_OBJ_SECURITY
    237: _T.VT_UI4,  # PROPID_QM_SECURITY_INFORMATION
    238: _T.VT_BLOB,  # PROPID_QM_ENCRYPT_PKS
    239: _T.VT_BLOB,  # PROPID_QM_SIGN_PKS
    241: _T.VT_BLOB,  # PROPID_QM_OWNER_SID
    242: _T.VT_UI1,  # PROPID_QM_GROUP_IN_CLUSTER
    1201: _T.VT_BLOB,  # PROPID_QM_SECURITY
    1202: _T.VT_BLOB,  # PROPID_QM_SIGN_PK
    1203: _T.VT_BLOB,  # PROPID_QM_ENCRYPT_PK
    1205: _T.VT_BLOB,  # PROPID_QM_UPGRADE_DACL
    1401: _T.VT_BLOB,  # PROPID_D_SEQNUM
    1402: _T.VT_CLSID,  # PROPID_D_PARTITIONID
    1403: _T.VT_UI1,  # PROPID_D_SCOPE
    1404: _T.VT_UI1,  # PROPID_D_OBJTYPE
    1405: _T.VT_CLSID,  # PROPID_D_IDENTIFIER
}


class NotificationCommand(IntEnum):
    """Notification Update Command ([MS-MQCN] 2.2.6): MUST be 0x00, 0x01 or 0x02."""

    CREATE = 0x00
    CHANGE = 0x01
    DELETE = 0x02


class NotificationEvent(IntEnum):
    """Notification Body ``event`` ([MS-MQCN] 2.2.5): MUST be 1, 2, 3 or 4 (numbered from 1)."""

    CREATE_QUEUE = 1
    CHANGE_QUEUE = 2
    DELETE_QUEUE = 3
    CHANGE_MACHINE = 4


class NotificationOperation(IntEnum):
    """The iOperation of Send Change Notification ([MS-MQCN] 3.3.4.1) and how each version says it."""

    QUEUE_CREATION = 1
    QUEUE_UPDATE = 2
    QUEUE_DELETION = 3
    QUEUE_MANAGER_UPDATE = 4

    @property
    def event(self) -> NotificationEvent:
        """The v2 Event ([MS-MQCN] 3.3.5.1)."""
        return NotificationEvent(int(self))

    @property
    def command(self) -> NotificationCommand:
        """The v1 Command ([MS-MQCN] 3.3.5.2): create 0x00; queue or machine update 0x01; delete 0x02."""
        return _OP_COMMAND[self]

    @property
    def use_guid(self) -> bool:
        """[MS-MQCN] 3.3.5.2: UseGuid is 0x00 if Command is 0x00, otherwise 0x01."""
        return self is not NotificationOperation.QUEUE_CREATION


_OP_COMMAND: Final = {
    NotificationOperation.QUEUE_CREATION: NotificationCommand.CREATE,
    NotificationOperation.QUEUE_UPDATE: NotificationCommand.CHANGE,
    NotificationOperation.QUEUE_DELETION: NotificationCommand.DELETE,
    NotificationOperation.QUEUE_MANAGER_UPDATE: NotificationCommand.CHANGE,
}


def object_type_of_propid(propid: int) -> int:
    """The object type [MS-MQCN] 3.2.5.1 derives from PropertyId[0] for create and change.

    "If PropertyId[0] > 1000: (PropertyId[0] - 1000) / 100, else PropertyId[0] / 100", integer
    division; 1 is a queue (MQDS_QUEUE), 2 a queue manager (MQDS_MACHINE), anything else means
    the server disregards the message.
    """
    return (propid - 1000) // 100 if propid > 1000 else propid // 100


@dataclass(frozen=True, slots=True)
class NotificationUpdate(Structure):
    """One Notification Update ([MS-MQCN] 2.2.6), the unit of a version 0x01 message.

    Exactly one of ``path_name`` (UseGuid = 0x00) and ``guid_identifier`` (UseGuid = 0x01) is set.
    ``properties`` pairs each PropertyId with its value; every PROPID must be in ``PROPID_VT`` and
    its value must have that VARTYPE.  ``reserved`` is kept as sent ("MUST be ignored by the server").
    """

    _wire_name: ClassVar[str] = "Notification Update"

    command: NotificationCommand
    guid_master_id: uuid.UUID
    properties: tuple[tuple[int, PropVariant], ...] = ()
    path_name: str | None = None
    guid_identifier: uuid.UUID | None = None
    reserved: bytes = bytes(_RESERVED_SIZE)

    def __post_init__(self) -> None:
        if type(self.command) is not NotificationCommand:
            if self.command not in NotificationCommand._value2member_map_:
                raise WireError(f"Notification Update Command {self.command!r} MUST be 0x00, 0x01 or 0x02")
            object.__setattr__(self, "command", NotificationCommand(self.command))
        if (self.path_name is None) == (self.guid_identifier is None):
            raise WireError("a Notification Update carries exactly one of PathName and GuidIdentifier")
        if self.path_name is not None and (type(self.path_name) is not str or "\x00" in self.path_name):
            raise WireError("Notification Update PathName must be a string without U+0000")
        if len(self.reserved) != _RESERVED_SIZE:
            raise WireError("Notification Update Reserved is 24 bytes")
        props = self.properties
        if type(props) is not tuple:
            props = tuple(props)
            object.__setattr__(self, "properties", props)
        if len(props) > 0xFF:
            raise WireError(f"{len(props)} properties do not fit NumberOfProperties (u8)")
        for propid, pv in props:
            expected = PROPID_VT.get(propid)
            if expected is None:
                raise WireError(f"PROPID {propid!r} has no known type", None, HResult.MQ_ERROR_PROPERTY)
            if type(pv) is not PropVariant or pv.vt is not expected:
                raise WireError(
                    f"PROPID {propid} needs a {expected.name} value, got {pv!r:.80}",
                    None,
                    HResult.MQ_ERROR_ILLEGAL_PROPERTY_VT,
                )

    @property
    def use_guid(self) -> bool:
        """UseGuid: True when GuidIdentifier (not PathName) identifies the object."""
        return self.guid_identifier is not None

    @property
    def property_ids(self) -> tuple[int, ...]:
        """PropertyId[] in order."""
        return tuple(p for p, _ in self.properties)

    def get(self, propid: int) -> PropVariant | None:
        """The value of ``propid`` (``PropertyValue[IndexOf(propid)]``), or None when absent."""
        for p, pv in self.properties:
            if p == propid:
                return pv
        return None

    @property
    def object_type(self) -> int | None:
        """The object type the server derives ([MS-MQCN] 3.2.5.1); None when it cannot be derived.

        Create and change: from PropertyId[0] (``object_type_of_propid``).  Delete: PropertyValue[1]
        positionally (the PROPID_D_OBJTYPE value), compared by the server with MQDS_QUEUE.
        """
        props = self.properties
        if self.command is NotificationCommand.DELETE:
            if len(props) < 2 or type(props[1][1].value) is not int:
                return None
            value: int = props[1][1].value
            return value
        return object_type_of_propid(props[0][0]) if props else None

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one Notification Update at the reader's position."""
        start = r.pos
        command = r.u8("Command")
        if command > 0x02:
            raise WireError(f"Notification Update Command 0x{command:02X} MUST be 0x00, 0x01 or 0x02", start)
        use_guid = r.u8("UseGuid")
        path_name: str | None = None
        guid_identifier: uuid.UUID | None = None
        if use_guid == 0x00:
            path_name = r.utf16z("PathName")
        elif use_guid == 0x01:
            guid_identifier = r.guid("GuidIdentifier")
        else:
            raise WireError(f"Notification Update UseGuid 0x{use_guid:02X} MUST be 0x00 or 0x01", start + 1)
        guid_master_id = r.guid("GuidMasterId")
        reserved = r.raw(_RESERVED_SIZE, "Reserved")
        count = r.u8("NumberOfProperties")
        ids_pos = r.pos
        raw_ids = r.raw(4 * count, "PropertyId")  # NOT 4-byte aligned: starts at an odd offset
        ids = [int.from_bytes(raw_ids[i : i + 4], "little") for i in range(0, 4 * count, 4)]
        props: list[tuple[int, PropVariant]] = []
        for i, propid in enumerate(ids):
            vt = PROPID_VT.get(propid)
            if vt is None:
                # [MS-MQCN] 2.2.6: a value's format "is determined by the corresponding property ID";
                # without its type nothing after it can be located.
                raise WireError(f"PropertyId[{i}] {propid} has no known type", ids_pos + 4 * i)
            props.append((propid, read_propvalue(r, vt)))
        update = object.__new__(cls)
        for name, value in (
            ("command", NotificationCommand(command)),
            ("guid_master_id", guid_master_id),
            ("properties", tuple(props)),
            ("path_name", path_name),
            ("guid_identifier", guid_identifier),
            ("reserved", reserved),
        ):
            object.__setattr__(update, name, value)
        return update

    def write(self, w: Writer) -> None:
        """Append this update's bytes."""
        w.u8(self.command)
        if self.guid_identifier is not None:
            w.u8(0x01)
            w.guid(self.guid_identifier)
        else:
            w.u8(0x00)
            w.utf16z(self.path_name or "")
        w.guid(self.guid_master_id)
        w.raw(self.reserved)
        w.u8(len(self.properties))
        for propid, _ in self.properties:
            w.u32(propid)
        for _, pv in self.properties:
            write_propvalue(w, pv)


# [MS-MQCN] 2.2.5 ABNF.  Quoted literals are case-insensitive (RFC 5234), so tags and hex digits
# match either case; the closing tag is "</ObjectGuid >" in the ABNF and "</ObjectGuid>" in the
# rendering, so both are accepted.  Whitespace between elements (as in the rendering) is accepted;
# none inside them.  DirectoryServiceServer is 1*256 VCHAR (%x21-7E).
_BODY_RE: Final = re.compile(
    r"\s*<notification>\s*<event>([1-4])</event>\s*"
    r"<objectguid>([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})</objectguid ?>\s*"
    r"<domaincontroller>([\x21-\x7e]{1,256}?)</domaincontroller>\s*</notification>\s*",
    re.IGNORECASE | re.ASCII,
)
_DC_RE: Final = re.compile(r"[\x21-\x7e]{1,256}", re.ASCII)


@dataclass(frozen=True, slots=True)
class NotificationBody:
    """The Notification Body of a version 0x02 message ([MS-MQCN] 2.2.5).

    ``encode()`` gives the canonical text (no whitespace, lowercase GUID, ``</ObjectGuid>``
    without the ABNF's space, no terminator).  A decoded body re-encodes to the text it was
    decoded from, so a real message round-trips byte for byte.
    """

    event: NotificationEvent
    object_guid: uuid.UUID
    domain_controller: str
    _source: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.event, bool) or self.event not in NotificationEvent._value2member_map_:
            raise WireError(f"Notification Body Event {self.event!r} MUST be 1, 2, 3 or 4")
        object.__setattr__(self, "event", NotificationEvent(self.event))
        if not isinstance(self.object_guid, uuid.UUID):
            raise WireError(f"ObjectGuid {self.object_guid!r} is not a GUID")
        dc = self.domain_controller
        if type(dc) is not str or _DC_RE.fullmatch(dc) is None:
            raise WireError(f"DomainController {dc!r:.80} MUST be 1 to 256 characters in %x21-7E")

    def text(self) -> str:
        """The body as a string."""
        if self._source is not None:
            return self._source
        return (
            f"<Notification><Event>{int(self.event)}</Event><ObjectGuid>{self.object_guid}</ObjectGuid>"
            f"<DomainController>{self.domain_controller}</DomainController></Notification>"
        )

    def encode(self) -> bytes:
        """The body as UTF-16LE bytes (no BOM, no terminator)."""
        return self.text().encode("utf-16-le")

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse the body string (already cut at its first U+0000, if any)."""
        m = _BODY_RE.fullmatch(text)
        if m is None:
            raise WireError(f"Notification Body does not follow the [MS-MQCN] 2.2.5 ABNF: {text!r:.120}")
        body = cls(NotificationEvent(int(m.group(1))), uuid.UUID(m.group(2)), m.group(3))
        if text != body.text():
            object.__setattr__(body, "_source", text)
        return body

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode UTF-16LE body bytes: an odd last byte is dropped and the text ends at U+0000."""
        if len(data) & 1:
            data = data[:-1]
        text = data.decode("utf-16-le", "surrogatepass")
        nul = text.find("\x00")
        return cls.parse(text if nul < 0 else text[:nul])


@dataclass(frozen=True, slots=True)
class ChangeNotificationMessage:
    """A Change Notification Message ([MS-MQCN] 2.2.4) as carried in rMessage.Body.

    Version 0x01 carries ``updates`` (at most 255); version 0x02 carries one ``body`` and
    NumberOfUpdateNotifications is 0x01 ("If the Version field is set to 0x02, this field MUST
    be set to 0x01").  ``trailing`` is what follows the message in the body: by default the one
    unused byte [MS-MQCN] 3.3.5.3 requires ("plus 1"); receivers accept any trailing bytes.
    """

    version: int
    updates: tuple[NotificationUpdate, ...] = ()
    body: NotificationBody | None = None
    trailing: bytes = b"\x00"

    def __post_init__(self) -> None:
        if type(self.updates) is not tuple:
            object.__setattr__(self, "updates", tuple(self.updates))
        if self.version == _V1:
            if self.body is not None:
                raise WireError(
                    "a version 0x01 message carries Notification Updates, not a Notification Body"
                )
            if len(self.updates) > 0xFF:
                raise WireError(f"{len(self.updates)} updates do not fit NumberOfUpdateNotifications (u8)")
            if not all(type(u) is NotificationUpdate for u in self.updates):
                raise WireError("updates must be NotificationUpdate values")
        elif self.version == _V2:
            if self.updates or type(self.body) is not NotificationBody:
                raise WireError("a version 0x02 message carries exactly one Notification Body")
        else:
            raise WireError(f"Change Notification Message Version {self.version!r} MUST be 0x01 or 0x02")
        if type(self.trailing) is not bytes:
            raise WireError("trailing must be bytes")

    @classmethod
    def v1(cls, updates: Sequence[NotificationUpdate], trailing: bytes = b"\x00") -> Self:
        """A version 0x01 (directory service) message."""
        return cls(_V1, tuple(updates), None, trailing)

    @classmethod
    def v2(cls, body: NotificationBody, trailing: bytes = b"\x00") -> Self:
        """A version 0x02 (queue manager) message."""
        return cls(_V2, (), body, trailing)

    @property
    def number_of_update_notifications(self) -> int:
        """NumberOfUpdateNotifications: the number of updates (v1) or 1 (v2)."""
        return len(self.updates) if self.version == _V1 else 1

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode a message body; bytes after the message are kept in ``trailing``."""
        r = Reader(data)
        version = r.u8("Version")
        count = r.u8("NumberOfUpdateNotifications")
        if version == _V1:
            updates = tuple(NotificationUpdate.read(r) for _ in range(count))
            return cls(_V1, updates, None, r.rest())
        if version == _V2:
            if count != 0x01:
                raise WireError(f"version 0x02 NumberOfUpdateNotifications is {count}, MUST be 0x01", 1)
            rest = r.rest()
            body = NotificationBody.decode(rest)
            used = 2 * len(body.text())
            return cls(_V2, (), body, rest[used:])
        raise WireError(f"Change Notification Message Version 0x{version:02X} MUST be 0x01 or 0x02", 0)

    def encode(self) -> bytes:
        """The message body bytes: Version, NumberOfUpdateNotifications, Data, trailing."""
        w = Writer()
        w.u8(self.version)
        w.u8(self.number_of_update_notifications)
        if self.body is not None:
            w.raw(self.body.encode())
        else:
            for update in self.updates:
                update.write(w)
        w.raw(self.trailing)
        return w.getvalue()
