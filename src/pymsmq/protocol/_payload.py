"""``Payload``: the base of every client-protocol payload (hello, goodbye, request, response, error).

A payload is a frozen dataclass whose fields are encoded back to back, in declaration order, each
with the ``Codec`` the ``payload(...)`` decorator lists for it (docs/protocol.md, "Payloads").
Construction checks every field (``WireError`` on a bad value); ``decode`` rejects trailing bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar

from pymsmq.errors import WireError
from pymsmq.protocol._fields import Codec
from pymsmq.wire._buffer import Reader, Writer

__all__ = ["Payload", "payload"]

_P = TypeVar("_P", bound="type[Payload]")
_new = object.__new__
_set = object.__setattr__


class Payload:
    """Base class: ``encode``/``decode``/``read``/``write`` driven by the class's field codecs."""

    __slots__ = ()

    #: (field name, codec) in wire order; set by the ``payload`` decorator.
    SPEC: ClassVar[tuple[tuple[str, Codec], ...]] = ()
    _FIELD_READERS: ClassVar[tuple[tuple[str, Callable[[Reader], Any]], ...]] = ()
    _WRITERS: ClassVar[tuple[tuple[str, Callable[[Writer, Any], None]], ...]] = ()
    _CHECKS: ClassVar[tuple[tuple[str, str, Callable[[Any, str], None]], ...]] = ()

    def __post_init__(self) -> None:
        for name, what, check in self._CHECKS:
            check(getattr(self, name), what)
        self._validate()

    def _validate(self) -> None:
        """Rules beyond the field types (overridden where a payload has them)."""

    def write(self, w: Writer) -> None:
        """Append this payload's bytes to ``w``."""
        for name, write in self._WRITERS:
            write(w, getattr(self, name))

    def encode(self) -> bytes:
        """This payload's bytes (the frame payload, without the frame header)."""
        w = Writer()
        self.write(w)
        return bytes(w.buf)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one payload of this type at the reader's position.

        The field readers only produce valid values, so the per-field checks of ``__init__`` are
        skipped; the payload's own rules (``_validate``) still run.
        """
        obj = _new(cls)
        for name, read in cls._FIELD_READERS:
            _set(obj, name, read(r))
        obj._validate()
        return obj

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        """Decode a whole frame payload; trailing bytes are an error."""
        r = Reader(data)
        value = cls.read(r)
        if r.pos != r.end:
            raise WireError(f"{r.end - r.pos} trailing bytes after {cls.__name__}", r.pos)
        return value


def payload(*codecs: Codec) -> Callable[[_P], _P]:
    """Class decorator (applied above ``@dataclass``): one codec per dataclass field, in order."""

    def deco(cls: _P) -> _P:
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        if len(names) != len(codecs):
            raise TypeError(f"{cls.__name__}: {len(names)} fields but {len(codecs)} codecs")
        cls.SPEC = tuple(zip(names, codecs, strict=True))
        cls._FIELD_READERS = tuple((n, c.read) for n, c in cls.SPEC)
        cls._WRITERS = tuple((n, c.write) for n, c in cls.SPEC)
        cls._CHECKS = tuple((n, f"{cls.__name__}.{n}", c.check) for n, c in cls.SPEC)
        return cls

    return deco
