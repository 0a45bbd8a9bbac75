"""Turn decoded wire values (frozen dataclasses) into analyser-style rows or JSON-ready data."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Iterator
from typing import Any

__all__ = ["rows", "to_jsonable"]

_BYTES_PREVIEW = 32


def to_jsonable(value: Any) -> Any:
    """A JSON-serialisable form: dataclasses become objects with a ``_type``; bytes become hex."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"_type": type(value).__name__}
        for f in dataclasses.fields(value):
            out[f.name] = to_jsonable(getattr(value, f.name))
        return out
    if isinstance(value, enum.Enum):
        return {"name": value.name, "value": value.value}
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, tuple | list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def _scalar(value: Any) -> str:
    if isinstance(value, enum.IntFlag):
        return f"0x{int(value):X} ({value!r})"
    if isinstance(value, enum.Enum):
        return f"{value.name} ({value.value!r})"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value} (0x{value:X})" if value > 9 else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        head = raw[:_BYTES_PREVIEW].hex(" ")
        more = f" ... ({len(raw)} bytes)" if len(raw) > _BYTES_PREVIEW else f" ({len(raw)} bytes)"
        return (head + more) if raw else "(empty)"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def rows(value: Any, name: str = "", depth: int = 0) -> Iterator[tuple[int, str, str]]:
    """Yield ``(depth, field name, text)`` rows, a header row per nested structure."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield depth, name or type(value).__name__, f"<{type(value).__name__}>"
        for f in dataclasses.fields(value):
            yield from rows(getattr(value, f.name), f.name, depth + 1)
    elif isinstance(value, tuple | list) and any(dataclasses.is_dataclass(v) for v in value):
        yield depth, name, f"[{len(value)} items]"
        for i, item in enumerate(value):
            yield from rows(item, f"{name}[{i}]", depth + 1)
    elif value is None:
        yield depth, name, "(absent)"
    else:
        yield depth, name, _scalar(value)
