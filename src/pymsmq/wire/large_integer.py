"""ULARGE_INTEGER ([MS-MQMQ] 2.2.17) and VARIANT_BOOL ([MS-MQMQ] 2.2.14).

Both are fixed-size little-endian scalars (8 and 2 bytes).  VARIANT_BOOL on the wire:

- 0xFFFF is VARIANT_TRUE and 0x0000 is VARIANT_FALSE ([MS-MQMQ] 2.2.14: "MUST indicate").
- Any other 16-bit value is not defined by the spec.  pymsmq reads it as *true* (Windows tests a
  VARIANT_BOOL against VARIANT_FALSE, so every nonzero value behaves as true), keeps the raw value
  in ``VariantBoolValue.raw`` so that decode/encode stays byte exact, and always *writes*
  exactly 0xFFFF or 0x0000 when encoding a Python ``bool``.  ``strict=True`` rejects the
  undefined values with ``WireError`` instead.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure, check_end

__all__ = [
    "ULARGE_INTEGER",
    "ULARGE_INTEGER_SIZE",
    "VARIANT_BOOL_SIZE",
    "ULargeInteger",
    "VariantBool",
    "VariantBoolValue",
    "from_variant_bool",
    "to_variant_bool",
]

ULARGE_INTEGER_SIZE: Final = 8
VARIANT_BOOL_SIZE: Final = 2

_U64: Final = struct.Struct("<Q")
_U16: Final = struct.Struct("<H")


@dataclass(frozen=True, slots=True)
class ULargeInteger(Structure):
    """ULARGE_INTEGER ([MS-MQMQ] 2.2.17): ``QuadPart``, an unsigned 64-bit integer (ULONGLONG)."""

    _wire_name: ClassVar[str] = "ULARGE_INTEGER"

    quad_part: int = 0

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read 8 little-endian bytes."""
        return cls(r.u64("ULARGE_INTEGER.QuadPart"))

    def write(self, w: Writer) -> None:
        """Append 8 little-endian bytes; ``WireError`` unless 0 <= QuadPart < 2**64."""
        try:
            w.raw(_U64.pack(self.quad_part))
        except struct.error as exc:
            raise WireError(f"ULARGE_INTEGER.QuadPart {self.quad_part!r} does not fit 64 bits") from exc


ULARGE_INTEGER = ULargeInteger


class VariantBool(IntEnum):
    """The two VARIANT_BOOL values [MS-MQMQ] 2.2.14 defines (as unsigned 16-bit wire values)."""

    VARIANT_FALSE = 0x0000
    VARIANT_TRUE = 0xFFFF


def to_variant_bool(value: bool) -> int:
    """The wire value of a Python bool: exactly 0xFFFF (true) or 0x0000 (false)."""
    return VariantBool.VARIANT_TRUE if value else VariantBool.VARIANT_FALSE


def from_variant_bool(raw: int, *, strict: bool = False) -> bool:
    """The truth of a VARIANT_BOOL wire value.

    ``raw`` may be the unsigned (0xFFFF) or the signed (-1, ``typedef short``) reading.  Values
    other than 0 / 0xFFFF are read as true, or rejected with ``WireError`` when ``strict``.
    """
    if not -0x8000 <= raw <= 0xFFFF:
        raise WireError(f"VARIANT_BOOL {raw!r} does not fit 16 bits")
    raw &= 0xFFFF
    if strict and raw not in (0x0000, 0xFFFF):
        raise WireError(f"VARIANT_BOOL 0x{raw:04X} is neither VARIANT_TRUE nor VARIANT_FALSE")
    return raw != 0


@dataclass(frozen=True, slots=True)
class VariantBoolValue(Structure):
    """A VARIANT_BOOL as read from the wire: ``raw`` keeps the exact 16 bits (byte-exact round trip)."""

    _wire_name: ClassVar[str] = "VARIANT_BOOL"

    raw: int = VariantBool.VARIANT_FALSE

    @classmethod
    def of(cls, value: bool) -> Self:
        """The canonical encoding of ``value`` (0xFFFF or 0x0000)."""
        return cls(to_variant_bool(value))

    @property
    def value(self) -> bool:
        """True for any nonzero raw value (see the module docstring)."""
        return self.raw != 0

    @property
    def is_canonical(self) -> bool:
        """Whether ``raw`` is one of the two values the spec defines."""
        return self.raw in (0x0000, 0xFFFF)

    def __bool__(self) -> bool:
        return self.raw != 0

    @classmethod
    def read(cls, r: Reader, *, strict: bool = False) -> Self:
        """Read 2 little-endian bytes (``strict`` rejects values other than 0 and 0xFFFF)."""
        pos = r.pos
        raw = r.u16("VARIANT_BOOL")
        if strict and raw not in (0x0000, 0xFFFF):
            raise WireError(f"VARIANT_BOOL 0x{raw:04X} is neither VARIANT_TRUE nor VARIANT_FALSE", pos)
        return cls(raw)

    def write(self, w: Writer) -> None:
        """Append the 2 raw bytes; ``WireError`` unless 0 <= raw <= 0xFFFF."""
        try:
            w.raw(_U16.pack(self.raw))
        except struct.error as exc:
            raise WireError(f"VARIANT_BOOL {self.raw!r} does not fit 16 bits") from exc

    @classmethod
    def decode(cls, data: bytes, *, strict: bool = False) -> Self:
        """Decode exactly 2 bytes (``Structure.decode`` plus ``strict``)."""
        r = Reader(data)
        value = cls.read(r, strict=strict)
        check_end(r, cls._wire_name)
        return value
