"""Queue properties of [MS-MQMQ] 2.3.1 that apply to a local queue, with [MS-MQDMPR] defaults.

[MS-MQDMPR] 3.1.7.1.33 Set Queue Defaults: Label "" · Type NULL GUID · Journaling False · Quota
0xFFFFFFFF · JournalQuota 0xFFFFFFFF · Authentication False · PrivacyLevel Optional ·
Transactional False · MulticastAddress NULL · BasePriority 0.

Attribute names are the snake_case of the MC-MQAC MSMQQueueInfo properties (``label``,
``service_type_guid``, ``journal``, ``quota``, ...).  Quotas are in kilobytes ([MS-MQMQ] 2.3.1.5,
2.3.1.7).  Times are POSIX seconds ([MS-MQMQ] 2.3.1.9/2.3.1.10 VT_I4).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import Final

from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE, MQ_MAX_Q_LABEL_LEN

__all__ = [
    "SETTABLE_QUEUE_PROPERTIES",
    "QueueProperties",
    "check_base_priority",
    "check_settable",
    "validate_multicast_address",
]

_BAD: Final = HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
_NULL_GUID: Final = uuid.UUID(int=0)
# [MS-MQMQ] 2.1.6 Multicast: class D first octet (224-239), octets 0-255, port 0-65535, no leading zeros.
_OCTET: Final = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d)"
_MULTICAST: Final = re.compile(
    rf"(?:22[4-9]|23\d)\.{_OCTET}\.{_OCTET}\.{_OCTET}:(?:6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{{3}}|[1-5]\d{{4}}|[1-9]\d{{0,3}}|0)"
)

# Properties an application may change after creation (MC-MQAC 3.10.4.1.36 Update); transactional,
# path name, instance GUID and the times are fixed.
SETTABLE_QUEUE_PROPERTIES: Final = frozenset(
    {
        "label",
        "service_type_guid",
        "journal",
        "quota",
        "journal_quota",
        "base_priority",
        "authenticate",
        "priv_level",
        "multicast_address",
    }
)


def check_settable(changes: Iterable[str]) -> None:
    """Refuse names in ``changes`` that ``set_queue_properties`` cannot set: MQ_ERROR_PROPERTY for
    a name that is no queue property (a typo read as a rule about creation; outside QA),
    MQ_ERROR_PROPERTY_NOTALLOWED for one fixed at creation."""
    names = set(changes)
    unknown = names - {f.name for f in fields(QueueProperties)}
    if unknown:
        raise MSMQError(
            f"no queue property is called {', '.join(sorted(unknown))}", HResult.MQ_ERROR_PROPERTY
        )
    fixed = names - SETTABLE_QUEUE_PROPERTIES
    if fixed:
        raise MSMQError(f"cannot change {sorted(fixed)} after creation", HResult.MQ_ERROR_PROPERTY_NOTALLOWED)


def validate_multicast_address(value: str) -> str:
    """Check ``a.b.c.d:port`` with a class D address ([MS-MQMQ] 2.3.1.23, 2.1.6)."""
    if not isinstance(value, str) or not _MULTICAST.fullmatch(value):
        raise MSMQError(f"invalid multicast address {value!r}", _BAD)
    return value


def _flag(value: object, what: str) -> bool:
    # PROPID_Q_JOURNAL / _AUTHENTICATE / _TRANSACTION are VT_UI1 0 or 1.
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise MSMQError(f"invalid {what}: {value!r}", _BAD)


def _u32(value: object, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if value == -1:  # a COM long showing 0xFFFFFFFF
            return INFINITE
        if 0 <= value <= 0xFFFFFFFF:
            return int(value)  # a constant (IntEnum) kept as the plain number
    raise MSMQError(f"invalid {what}: {value!r}", _BAD)


def check_base_priority(value: object) -> None:
    """[MS-MQMQ] 2.3.1.6: a base priority is VT_I2, -32768..32767 (else ILLEGAL_PROPERTY_VALUE)."""
    if not isinstance(value, int) or isinstance(value, bool) or not -32768 <= value <= 32767:
        raise MSMQError(f"invalid base_priority {value!r}", _BAD)


@dataclass(frozen=True, slots=True)
class QueueProperties:
    """The properties of one queue.  Construction validates; ``replace(**changes)`` re-validates."""

    path_name: str = ""
    label: str = ""
    service_type_guid: uuid.UUID = _NULL_GUID
    journal: bool = False
    quota: int = INFINITE
    journal_quota: int = INFINITE
    base_priority: int = 0
    transactional: bool = False
    authenticate: bool = False
    priv_level: int = 1  # MQ_PRIV_LEVEL_OPTIONAL
    multicast_address: str | None = None
    queue_guid: uuid.UUID = _NULL_GUID
    create_time: int = 0
    modify_time: int = 0

    def __post_init__(self) -> None:
        # [MS-MQMQ] 2.3.1.8 PROPID_Q_LABEL: at most 124 characters.
        if not isinstance(self.label, str) or len(self.label) > MQ_MAX_Q_LABEL_LEN:
            raise MSMQError(f"invalid queue label {quoted(self.label)} (max 124 characters)", _BAD)
        if "\x00" in self.label:  # a VT_LPWSTR: a NUL would end it
            raise MSMQError(f"invalid queue label {quoted(self.label)} (it cannot contain NUL)", _BAD)
        if not isinstance(self.service_type_guid, uuid.UUID):
            object.__setattr__(self, "service_type_guid", _guid(self.service_type_guid, "service_type_guid"))
        if not isinstance(self.queue_guid, uuid.UUID):
            object.__setattr__(self, "queue_guid", _guid(self.queue_guid, "queue_guid"))
        for name in ("journal", "transactional", "authenticate"):
            object.__setattr__(self, name, _flag(getattr(self, name), name))
        # [MS-MQMQ] 2.3.1.5 / 2.3.1.7: quotas are VT_UI4 kilobytes.
        object.__setattr__(self, "quota", _u32(self.quota, "quota"))
        object.__setattr__(self, "journal_quota", _u32(self.journal_quota, "journal_quota"))
        check_base_priority(self.base_priority)
        object.__setattr__(self, "base_priority", int(self.base_priority))
        # [MS-MQMQ] 2.3.1.12: MQ_PRIV_LEVEL_NONE 0, _OPTIONAL 1, _BODY 2 (pymsmq.MQ_PRIV_LEVEL_*,
        # kept as the plain number).
        if self.priv_level not in (0, 1, 2) or isinstance(self.priv_level, bool):
            raise MSMQError(f"invalid priv_level {self.priv_level!r}", _BAD)
        object.__setattr__(self, "priv_level", int(self.priv_level))
        if self.multicast_address is not None:
            validate_multicast_address(self.multicast_address)
        for name in ("create_time", "modify_time"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 0xFFFFFFFF:
                raise MSMQError(f"invalid {name} {value!r}", _BAD)

    def replace(self, **changes: object) -> QueueProperties:
        """A copy with ``changes`` applied (validated)."""
        unknown = set(changes) - _FIELD_NAMES
        if unknown:
            raise MSMQError(f"unknown queue properties: {sorted(unknown)}", HResult.MQ_ERROR_ILLEGAL_PROPID)
        return replace(self, **changes)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        """JSON-compatible values keyed by attribute name (what the store keeps)."""
        out: dict[str, object] = {}
        for name in _FIELD_NAMES_ORDERED:
            value = getattr(self, name)
            out[name] = str(value) if isinstance(value, uuid.UUID) else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> QueueProperties:
        """Inverse of ``to_dict``; unknown keys are ignored (forward compatibility)."""
        known = {k: v for k, v in data.items() if k in _FIELD_NAMES}
        return cls(**known)  # type: ignore[arg-type]


def _guid(value: object, what: str) -> uuid.UUID:
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise MSMQError(f"invalid {what}: {value!r}", _BAD)


_FIELD_NAMES_ORDERED: Final = tuple(f.name for f in fields(QueueProperties))
_FIELD_NAMES: Final = frozenset(_FIELD_NAMES_ORDERED)
