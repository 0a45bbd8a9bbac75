"""The ``decode``/``encode`` pair and the padding helpers that every wire structure shares.

A structure in ``pymsmq.wire`` is a frozen slotted dataclass with ``read(cls, r: Reader) -> Self``
and ``write(self, w: Writer) -> None``.  ``Structure`` adds, on top of those two:

* ``decode(data)``: read one structure from the whole of ``data``; bytes left over are a
  ``WireError`` ("N trailing bytes after <name>", at the offset where they start);
* ``encode()``: the bytes ``write`` appends to an empty ``Writer``.

``<name>`` is the class attribute ``_wire_name`` when a class sets it (the spec's name of the
structure, e.g. ``"MQDSPUBLICKEY"``), else the class name.  The mixin holds no state
(``__slots__ = ()``), so a ``@dataclass(frozen=True, slots=True)`` subclass stays slotted, and it adds
no work to ``read``/``write`` themselves: packet codecs that call ``read``/``write`` directly (the
UserMessage paths) are untouched.  Structures whose ``decode`` differs on purpose (a fixed-size packet
checked by length, BaseHeader's "first 16 bytes", UserMessage's single-pass decoder) keep their own.

The padding helpers implement [MS-MQMQ] 2.2.19.1/2.2.20 alignment of variable-size headers: every
header is followed by padding up to the next 4-byte boundary counted from the header's start, and
the padding bytes "MAY be any value" (2.2.20.2 <13>, 2.2.19.3 <8>), so they are kept, never checked.
"""

from __future__ import annotations

from typing import ClassVar, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer, pad4

__all__ = ["Structure", "check_end", "read_padding", "utf16_units", "write_padding"]


class Structure:
    """Mixin: ``decode``/``encode`` of a whole structure on top of its ``read``/``write``."""

    __slots__ = ()

    # The structure's name in "trailing bytes after <name>" errors; "" means the class name.
    _wire_name: ClassVar[str] = ""

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one structure at the reader's position (every subclass defines it)."""
        raise NotImplementedError(f"{cls.__name__}.read")

    def write(self, w: Writer) -> None:
        """Append this structure's bytes (every subclass defines it)."""
        raise NotImplementedError(f"{type(self).__name__}.write")

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """Decode exactly one structure from ``data``; trailing bytes are an error."""
        r = Reader(data)
        value = cls.read(r)
        if r.remaining:
            raise WireError(f"{r.remaining} trailing bytes after {cls._wire_name or cls.__name__}", r.pos)
        return value

    def encode(self) -> bytes:
        """This structure's wire bytes."""
        w = Writer()
        self.write(w)
        return w.getvalue()


def check_end(r: Reader, what: str) -> None:
    """``decode`` helper: the whole input must have been consumed."""
    if r.remaining:
        raise WireError(f"{r.remaining} trailing bytes after {what}", r.pos)


def read_padding(r: Reader, start: int) -> bytes:
    """Consume the padding that ends a header begun at ``start``; ``b""`` if it is all zeros.

    Padding "MAY be any value" ([MS-MQMQ] 2.2.20.2 <13>, 2.2.19.3 <8>: Windows leaves it
    uninitialized), so it is never validated, only kept.  At the very end of the input the
    padding may be cut short; whatever is there is taken.
    """
    pad = r.align4(start)
    return pad if pad.strip(b"\x00") else b""


def write_padding(w: Writer, start: int, padding: bytes, what: str) -> None:
    """Write the padding that ends a header begun at ``start``: ``padding`` then zeros."""
    n = pad4(len(w) - start)
    if len(padding) > n:
        raise WireError(f"{what}.padding has {len(padding)} bytes, the header needs {n}")
    if n:
        w.raw(padding + bytes(n - len(padding)))


def utf16_units(text: str) -> int:
    """Number of UTF-16 code units ``text`` encodes to (surrogate pairs count as two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1
