"""``Message`` <-> JSON objects, for ``receive``/``peek --json`` and the export file (docs/export-format.md).

Every ``Message`` attribute becomes one JSON member of the same name: byte strings as standard
base64 (``null`` when absent), object ids (message, correlation and transaction ids) in their text
form ``{guid}\\ordinal``, GUIDs as ``xxxxxxxx-xxxx-...`` text, times as POSIX seconds, the rest as
JSON numbers, strings, booleans or ``null``.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import fields
from typing import Any, Final

from pymsmq.errors import MSMQError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message

__all__ = [
    "ASSIGNED_FIELDS",
    "MESSAGE_FIELDS",
    "body_text",
    "message_from_json",
    "message_to_json",
    "sendable_copy",
]

MESSAGE_FIELDS: Final = tuple(f.name for f in fields(Message))
_DEFAULTS: Final = Message()
_BYTES: Final = frozenset(
    {
        "body",
        "extension",
        "sender_id",
        "sender_certificate",
        "signature",
        "destination_symmetric_key",
        "compound_message",
    }
)
_IDS: Final = frozenset({"id", "correlation_id", "transaction_id"})
_GUIDS: Final = frozenset({"connector_type_guid", "source_machine_guid"})
_FLOATS: Final = frozenset({"sent_time", "arrived_time", "last_move_time"})
_BOOLS: Final = frozenset({"is_first_in_transaction", "is_last_in_transaction"})
_OPT_STR: Final = frozenset(
    {
        "response_queue",
        "admin_queue",
        "dead_letter_queue",
        "destination_queue",
        "destination_format_name",
        "transaction_status_queue",
        "authentication_provider_name",
        "soap_envelope",
    }
)
_STR: Final = frozenset({"label"})

# Properties the queue manager assigns when a message is sent or arrives ([MC-MQAC] 3.17.4.1.48
# steps 7-11, [MS-MQDMPR] 3.1.1.12): a re-sent (imported) message gets fresh values for these.
ASSIGNED_FIELDS: Final = frozenset(
    {
        "id",
        "lookup_id",
        "sent_time",
        "arrived_time",
        "source_machine_guid",
        "destination_queue",
        "destination_format_name",
        "transaction_status_queue",
        "transaction_id",
        "is_first_in_transaction",
        "is_last_in_transaction",
        "received_authentication_level",
        "abort_count",
        "move_count",
        "last_move_time",
    }
)


#: Members written only when set: newer than the format's first readers, which refuse an unknown
#: member (docs/export-format.md), so that a file without them reads everywhere.
_WRITTEN_WHEN_SET: Final = frozenset({"destination_format_name"})


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def message_to_json(message: Message) -> dict[str, Any]:
    """Every property of ``message`` as a JSON-ready dict (attribute name -> value)."""
    out: dict[str, Any] = {}
    for name in MESSAGE_FIELDS:
        value = getattr(message, name)
        if value is None:
            if name in _WRITTEN_WHEN_SET:
                continue
            out[name] = None
        elif name in _BYTES:
            out[name] = _b64(value)
        elif name in _IDS or name in _GUIDS:
            out[name] = str(value)
        else:
            out[name] = value
    return out


class MessageJSONError(ValueError):
    """A JSON object that is not a valid message (a member is unknown, of the wrong type or invalid)."""


def _decode_member(name: str, value: Any) -> Any:
    if value is None:
        if name in ("body", "extension"):
            return b""
        if name in _BYTES or name in _IDS or name in _GUIDS or name in _FLOATS or name in _OPT_STR:
            return None
        raise MessageJSONError(f"{name} cannot be null")
    if name in _BYTES:
        if not isinstance(value, str):
            raise MessageJSONError(f"{name} must be base64 text")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise MessageJSONError(f"{name} is not valid base64: {exc}") from None
    if name in _IDS:
        if not isinstance(value, str):
            raise MessageJSONError(f"{name} must be {{guid}}\\ordinal text")
        return ObjectId.parse(value)
    if name in _GUIDS:
        if not isinstance(value, str):
            raise MessageJSONError(f"{name} must be GUID text")
        try:
            return uuid.UUID(value)
        except ValueError:
            raise MessageJSONError(f"{name} is not a GUID: {value!r}") from None
    if name in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise MessageJSONError(f"{name} must be a number")
        if not 0 <= value < float("inf"):  # (NaN fails too) JSON has no NaN; Python's json reads it
            raise MessageJSONError(f"{name} must be a finite number of seconds, not below 0: {value!r}")
        return value
    if name in _BOOLS:
        if not isinstance(value, bool):
            raise MessageJSONError(f"{name} must be true or false")
        return value
    if name in _OPT_STR or name in _STR:
        if not isinstance(value, str):
            raise MessageJSONError(f"{name} must be text")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise MessageJSONError(f"{name} must be an integer")
    if value < 0:  # every integer message property is unsigned (docs/export-format.md)
        raise MessageJSONError(f"{name} must not be negative")
    return value


def message_from_json(data: Any) -> Message:
    """The ``Message`` a ``message_to_json`` dict describes; missing members take their defaults.

    Raises ``MessageJSONError`` (a ``ValueError``) for anything that is not a valid message.
    """
    if not isinstance(data, dict):
        raise MessageJSONError("a message must be a JSON object")
    unknown = set(data) - set(MESSAGE_FIELDS)
    if unknown:
        raise MessageJSONError(f"unknown message properties: {', '.join(sorted(unknown))}")
    try:
        kwargs = {name: _decode_member(name, value) for name, value in data.items()}
        return Message(**kwargs)
    except MSMQError as exc:
        raise MessageJSONError(str(exc.args[0]) if exc.args else "invalid message") from None
    except (TypeError, ValueError) as exc:
        raise MessageJSONError(f"invalid message: {exc}") from None


def sendable_copy(message: Message) -> Message:
    """A copy with the queue-manager-assigned properties back at their defaults (what ``send`` takes)."""
    copy = message.copy()
    for name in ASSIGNED_FIELDS:
        setattr(copy, name, getattr(_DEFAULTS, name))
    return copy


def body_text(message: Message) -> str | None:
    """The body as text when it is printable text, else None.

    VT_BSTR (8) and VT_LPWSTR (31) bodies are UTF-16LE ([MS-MQMQ] 2.2.19.3 / MC-MQAC BodyType);
    anything else is tried as UTF-8.
    """
    body = message.body
    encoding = "utf-16-le" if message.body_type in (8, 31) else "utf-8"
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError:
        return None
    if encoding == "utf-16-le":
        text = text.rstrip("\x00")
    if all(ch.isprintable() or ch in "\t\r\n" for ch in text):
        return text
    return None
