"""``QueueProperties`` attributes <-> PROPID_Q_* property arrays ([MS-MQMQ] 2.3.1).

CREATE_QUEUE, OPEN_QUEUE, GET_QUEUE_PROPERTIES and SET_QUEUE_PROPERTIES carry queue properties as
PROPID_Q_* values with the VARTYPEs of [MS-MQMQ] 2.3.1.  ``multicast_address`` None travels as
VT_EMPTY ([MS-MQMQ] 2.3.1.23: "an empty string or VT_EMPTY clears it").
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Final

from pymsmq.errors import MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.protocol._fields import Props
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.vartype import VarType

__all__ = [
    "QUEUE_PROPIDS",
    "attrs_to_props",
    "properties_from_props",
    "properties_to_props",
    "props_to_attrs",
]

_V = VarType
#: attribute -> (PROPID_Q_*, VARTYPE)
QUEUE_PROPIDS: Final[Mapping[str, tuple[int, VarType]]] = {
    "queue_guid": (101, _V.VT_CLSID),  # PROPID_Q_INSTANCE
    "service_type_guid": (102, _V.VT_CLSID),  # PROPID_Q_TYPE
    "path_name": (103, _V.VT_LPWSTR),  # PROPID_Q_PATHNAME
    "journal": (104, _V.VT_UI1),  # PROPID_Q_JOURNAL
    "quota": (105, _V.VT_UI4),  # PROPID_Q_QUOTA
    "base_priority": (106, _V.VT_I2),  # PROPID_Q_BASEPRIORITY
    "journal_quota": (107, _V.VT_UI4),  # PROPID_Q_JOURNAL_QUOTA
    "label": (108, _V.VT_LPWSTR),  # PROPID_Q_LABEL
    "create_time": (109, _V.VT_I4),  # PROPID_Q_CREATE_TIME
    "modify_time": (110, _V.VT_I4),  # PROPID_Q_MODIFY_TIME
    "authenticate": (111, _V.VT_UI1),  # PROPID_Q_AUTHENTICATE
    "priv_level": (112, _V.VT_UI4),  # PROPID_Q_PRIV_LEVEL
    "transactional": (113, _V.VT_UI1),  # PROPID_Q_TRANSACTION
    "multicast_address": (125, _V.VT_LPWSTR),  # PROPID_Q_MULTICAST_ADDRESS
}
_BY_PROPID: Final = {pid: (name, vt) for name, (pid, vt) in QUEUE_PROPIDS.items()}
_BAD: Final = HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE


def _to_wire(name: str, value: object) -> PropVariant:
    vt = QUEUE_PROPIDS[name][1]
    if value is None:
        return PropVariant(_V.VT_EMPTY)
    if isinstance(value, int):
        value = int(value)  # a bool, or a constant of pymsmq (MQ_PRIV_LEVEL_BODY: an IntEnum)
    if vt is _V.VT_I4 and isinstance(value, int) and value > 0x7FFFFFFF:
        value -= 1 << 32  # [MS-MQMQ] 2.3.1.9: a VT_I4 time; keep the 32 bits
    if vt is _V.VT_UI4 and value == -1 and type(value) is int:
        value = 0xFFFFFFFF  # a COM long showing INFINITE, as QueueProperties takes it (quotas)
    if vt is _V.VT_CLSID and isinstance(value, str):
        try:
            value = uuid.UUID(value)
        except ValueError:
            raise MSMQError(f"invalid {name}: {value!r}", _BAD) from None
    try:
        return PropVariant(vt, value)  # type: ignore[arg-type]
    except WireError as exc:
        raise MSMQError(f"invalid {name}: {value!r} ({exc})", _BAD) from None


def attrs_to_props(attrs: Mapping[str, object]) -> Props:
    """PROPID_Q_* values of ``attrs`` (attribute name -> value); unknown names: MQ_ERROR_ILLEGAL_PROPID."""
    out = []
    for name, value in attrs.items():
        if name not in QUEUE_PROPIDS:
            raise MSMQError(f"unknown queue property {name!r}", HResult.MQ_ERROR_ILLEGAL_PROPID)
        out.append((QUEUE_PROPIDS[name][0], _to_wire(name, value)))
    return tuple(out)


def props_to_attrs(props: Iterable[tuple[int, PropVariant]]) -> dict[str, object]:
    """Attribute name -> value of a PROPID_Q_* array; unknown PROPIDs: MQ_ERROR_ILLEGAL_PROPID."""
    out: dict[str, object] = {}
    for pid, pv in props:
        entry = _BY_PROPID.get(pid)
        if entry is None:
            raise MSMQError(f"unsupported queue property {pid}", HResult.MQ_ERROR_ILLEGAL_PROPID)
        name, vt = entry
        if pv.vt in (_V.VT_EMPTY, _V.VT_NULL):
            if name != "multicast_address":
                raise MSMQError(f"{name} cannot be empty", _BAD)
            out[name] = None
            continue
        if pv.vt is not vt:
            raise MSMQError(
                f"{name} must be {vt.name}, not {pv.vt.name}", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VT
            )
        value = pv.value
        if vt is _V.VT_I4 and isinstance(value, int) and value < 0:
            value += 1 << 32
        if name in ("journal", "transactional", "authenticate") and isinstance(value, int):
            if value not in (0, 1):
                raise MSMQError(f"invalid {name}: {value!r}", _BAD)
            value = bool(value)
        out[name] = value
    return out


def properties_to_props(props: QueueProperties) -> Props:
    """Every property of a queue as PROPID_Q_* values."""
    return attrs_to_props({name: getattr(props, name) for name in QUEUE_PROPIDS})


def properties_from_props(props: Iterable[tuple[int, PropVariant]]) -> QueueProperties:
    """A ``QueueProperties`` from PROPID_Q_* values (missing ones take their defaults)."""
    return QueueProperties(**props_to_attrs(props))  # type: ignore[arg-type]
