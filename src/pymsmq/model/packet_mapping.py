"""``Message`` <-> stored packet bytes.

DESIGN.md: one canonical message encoding everywhere, the [MS-MQMQ] 2.2.20 UserMessage packet.
INTERIM: until the UserMessage codec (``pymsmq.wire.user_message``) is in the tree this module
uses a self-describing JSON encoding behind the same two functions, tagged with ``_MAGIC`` so the
switch can recognise (and refuse) old rows.  Queue-manager facts (lookup id, arrival time,
abort/move counts, subqueue) are not part of the encoding: the store keeps them beside it.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from typing import Final

from pymsmq.errors import MSMQError, WireError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message

__all__ = ["message_to_packet", "packet_to_message"]

_MAGIC: Final = b"PYMSMQ-INTERIM-1\n"
# QM facts kept beside the packet, never inside it.
_FACTS: Final = frozenset({"lookup_id", "arrived_time", "abort_count", "move_count"})
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
_FIELDS: Final = tuple(name for name in Message.__dataclass_fields__ if name not in _FACTS)


def message_to_packet(message: Message) -> bytes:
    """Encode every non-fact property of ``message``."""
    out: dict[str, object] = {}
    for name in _FIELDS:
        value = getattr(message, name)
        if value is None:
            continue
        if name in _BYTES:
            if not value and name in ("body", "extension"):
                continue
            out[name] = base64.b64encode(value).decode("ascii")
        elif name in _IDS:
            out[name] = base64.b64encode(bytes(value)).decode("ascii")
        elif name in _GUIDS:
            out[name] = str(value)
        else:
            out[name] = int(value) if isinstance(value, bool | int) and not isinstance(value, bool) else value
    return _MAGIC + json.dumps(out, separators=(",", ":")).encode()


def packet_to_message(data: bytes) -> Message:
    """Decode bytes made by ``message_to_packet``; anything else raises ``WireError``."""
    if not data.startswith(_MAGIC):
        raise WireError("not a stored message packet", 0)
    try:
        raw = json.loads(data[len(_MAGIC) :])
        if not isinstance(raw, dict):
            raise WireError("stored message is not an object", len(_MAGIC))
        kwargs: dict[str, object] = {}
        for name, value in raw.items():
            if name not in _FIELDS:
                raise WireError(f"unknown stored property {name!r}", len(_MAGIC))
            if name in _BYTES:
                kwargs[name] = base64.b64decode(value, validate=True)
            elif name in _IDS:
                kwargs[name] = ObjectId.from_bytes(base64.b64decode(value, validate=True))
            elif name in _GUIDS:
                kwargs[name] = uuid.UUID(value)
            else:
                kwargs[name] = value
        return Message(**kwargs)  # type: ignore[arg-type]
    except WireError:
        raise
    except (ValueError, TypeError, binascii.Error, MSMQError, RecursionError) as exc:
        raise WireError(f"bad stored message: {exc}", len(_MAGIC)) from None
