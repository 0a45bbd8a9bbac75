"""Object identifiers: message ids, correlation ids and transaction ids ([MS-MQMQ] 2.2.8, 2.2.18.1.3).

An OBJECTID is ``{Lineage GUID, Uniquifier u32}``.  A message id is the source queue manager's
GUID plus a 32-bit ordinal that the queue manager increments for every message it accepts
([MS-MQDMPR] 3.1.1.12 Message.Identifier).  On the wire it takes 20 bytes: the GUID in its
[MS-DTYP] 2.3.4 little-endian layout followed by the ordinal as a little-endian u32
([MS-MQMQ] 2.2.18.1.3 MessageIdentifier).  Its text form is ``{guid}\\ordinal`` (decimal ordinal).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Final, Self

from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult

__all__ = ["OBJECTID_SIZE", "MessageId", "ObjectId", "guid_bytes_le", "new_object_id"]

# [MS-MQMQ] 2.2.8 / 2.2.18.1.3: 16-byte GUID + 4-byte unsigned integer.
OBJECTID_SIZE: Final = 20
_U32: Final = struct.Struct("<I")


@dataclass(frozen=True, slots=True, order=True)
class ObjectId:
    """``{lineage, uniquifier}``: a GUID and a u32 ([MS-MQMQ] 2.2.8 OBJECTID)."""

    lineage: uuid.UUID
    uniquifier: int

    def __post_init__(self) -> None:
        if not isinstance(self.lineage, uuid.UUID):
            raise MSMQError("object id lineage must be a UUID", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE)
        if not 0 <= self.uniquifier <= 0xFFFFFFFF:
            raise MSMQError(
                "object id uniquifier must fit in 32 bits", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
            )

    def __bytes__(self) -> bytes:
        # [MS-MQMQ] 2.2.18.1.3: the GUID in [MS-DTYP] layout, then the u32, little-endian.
        return self.lineage.bytes_le + _U32.pack(self.uniquifier)

    def __str__(self) -> str:
        return f"{{{self.lineage}}}\\{self.uniquifier}"

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> Self:
        """The id held in exactly 20 bytes; another size is MQ_ERROR_ILLEGAL_PROPERTY_SIZE."""
        raw = bytes(data)
        if len(raw) != OBJECTID_SIZE:
            raise MSMQError(
                f"an object id is {OBJECTID_SIZE} bytes, got {len(raw)}",
                HResult.MQ_ERROR_ILLEGAL_PROPERTY_SIZE,
            )
        return cls(uuid.UUID(bytes_le=raw[:16]), _U32.unpack_from(raw, 16)[0])

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse ``{guid}\\ordinal`` (braces optional, GUID case-insensitive, decimal ordinal)."""
        guid_text, sep, number = text.rpartition("\\")
        if not sep or not number.isascii() or not number.isdigit():
            raise MSMQError(f"not an object id: {quoted(text)}", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE)
        if guid_text.startswith("{") and guid_text.endswith("}"):
            guid_text = guid_text[1:-1]
        try:
            lineage = uuid.UUID(guid_text)
        except ValueError:
            raise MSMQError(
                f"not an object id: {quoted(text)}", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
            ) from None
        if len(guid_text) != 36:
            raise MSMQError(f"not an object id: {quoted(text)}", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE)
        value = int(number)
        if value > 0xFFFFFFFF:
            raise MSMQError(f"ordinal out of range: {quoted(text)}", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE)
        return cls(lineage, value)

    @classmethod
    def coerce(cls, value: ObjectId | bytes | bytearray | memoryview | str) -> ObjectId:
        """Accept an ``ObjectId``, its 20 bytes, its text form (``{guid}\\ordinal``) or its 20 bytes
        as 40 hex digits (what the command line takes too)."""
        if isinstance(value, ObjectId):
            return value
        if isinstance(value, str):
            text = value.strip()
            if len(text) == 40 and "\\" not in text:
                try:
                    return cls.from_bytes(bytes.fromhex(text))
                except ValueError:
                    raise MSMQError(
                        f"not an object id: {quoted(value)}", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
                    ) from None
            return cls.parse(text)
        if isinstance(value, bytes | bytearray | memoryview):
            return cls.from_bytes(value)
        raise MSMQError(f"not an object id: {value!r}", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE)


# A message id, correlation id and transaction id are all OBJECTIDs.
MessageId = ObjectId


_new: Final = object.__new__
_set_lineage: Final = ObjectId.__dict__["lineage"].__set__
_set_uniquifier: Final = ObjectId.__dict__["uniquifier"].__set__


def new_object_id(lineage: uuid.UUID, uniquifier: int) -> ObjectId:
    """``ObjectId(lineage, uniquifier)`` for values the caller guarantees valid (a ``UUID`` and a u32).

    The queue manager stamps every message with its own GUID and an ordinal it masks to 32 bits;
    this skips the ``__post_init__`` checks (and the frozen-dataclass ``__setattr__`` detour), which
    halves the cost of the most frequent id construction.  The result equals and hashes like the
    checked construction.
    """
    oid: ObjectId = _new(ObjectId)
    _set_lineage(oid, lineage)
    _set_uniquifier(oid, uniquifier)
    return oid


_BYTES_LE: Final[dict[int, bytes]] = {}


def guid_bytes_le(value: uuid.UUID) -> bytes:
    """``value.bytes_le`` ([MS-DTYP] 2.3.4.2 GUID layout), cached: a queue manager's ids share a few GUIDs."""
    key = value.int
    raw = _BYTES_LE.get(key)
    if raw is None:
        raw = value.bytes_le
        if len(_BYTES_LE) >= 1024:
            _BYTES_LE.clear()
        _BYTES_LE[key] = raw
    return raw
