"""Bounds-checked little-endian reader and writer shared by every codec in ``pymsmq.wire``.

Every read checks the remaining length first and raises ``WireError`` (with the offset) instead of
``struct.error`` or ``IndexError``; a length field can never make the reader allocate more than the
input holds, because ``raw(n)`` checks ``n`` against what is left before slicing.
All multi-byte integers are little-endian ([MS-MQMQ] 2.2.18: "all fields ... little-endian").
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Final

from pymsmq.errors import WireError

__all__ = ["NULL_GUID", "Reader", "Writer", "pad4"]

_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_I32: Final = struct.Struct("<i")
_U64: Final = struct.Struct("<Q")
_I64: Final = struct.Struct("<q")
_I16: Final = struct.Struct("<h")
_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")

NULL_GUID: Final = uuid.UUID(int=0)


def pad4(n: int) -> int:
    """Bytes of padding that bring ``n`` up to a multiple of 4 ([MS-MQMQ] 2.2.20 alignment)."""
    return -n & 3


class Reader:
    """A cursor over ``data[pos:end]``; each read advances ``pos`` and never passes ``end``."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.data = bytes(data) if not isinstance(data, bytes) else data
        self.pos = pos
        self.end = len(self.data) if end is None else min(end, len(self.data))

    @property
    def remaining(self) -> int:
        """Bytes left before ``end``."""
        return self.end - self.pos

    def need(self, n: int, what: str = "field") -> None:
        """Raise ``WireError`` unless ``n`` more bytes are available."""
        if n < 0 or self.pos + n > self.end:
            raise WireError(f"truncated {what}: need {n} bytes, {self.end - self.pos} left", self.pos)

    def u8(self, what: str = "u8") -> int:
        pos = self.pos
        if pos >= self.end:
            raise WireError(f"truncated {what}: need 1 byte, 0 left", pos)
        self.pos = pos + 1
        return self.data[pos]

    def u16(self, what: str = "u16") -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise WireError(f"truncated {what}: need 2 bytes, {self.end - pos} left", pos)
        self.pos = pos + 2
        return int(_U16.unpack_from(self.data, pos)[0])

    def i16(self, what: str = "i16") -> int:
        self.need(2, what)
        value = int(_I16.unpack_from(self.data, self.pos)[0])
        self.pos += 2
        return value

    def u32(self, what: str = "u32") -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise WireError(f"truncated {what}: need 4 bytes, {self.end - pos} left", pos)
        self.pos = pos + 4
        return int(_U32.unpack_from(self.data, pos)[0])

    def i32(self, what: str = "i32") -> int:
        self.need(4, what)
        value = int(_I32.unpack_from(self.data, self.pos)[0])
        self.pos += 4
        return value

    def u64(self, what: str = "u64") -> int:
        self.need(8, what)
        value = int(_U64.unpack_from(self.data, self.pos)[0])
        self.pos += 8
        return value

    def i64(self, what: str = "i64") -> int:
        self.need(8, what)
        value = int(_I64.unpack_from(self.data, self.pos)[0])
        self.pos += 8
        return value

    def f32(self, what: str = "f32") -> float:
        self.need(4, what)
        value = float(_F32.unpack_from(self.data, self.pos)[0])
        self.pos += 4
        return value

    def f64(self, what: str = "f64") -> float:
        self.need(8, what)
        value = float(_F64.unpack_from(self.data, self.pos)[0])
        self.pos += 8
        return value

    def unpack(self, layout: struct.Struct, what: str) -> tuple[Any, ...]:
        """The fields of the fixed layout at the reader's position (length checked first, as ``need``)."""
        pos = self.pos
        n = layout.size
        if pos + n > self.end:
            raise WireError(f"truncated {what}: need {n} bytes, {self.end - pos} left", pos)
        self.pos = pos + n
        return layout.unpack_from(self.data, pos)

    def guid(self, what: str = "GUID") -> uuid.UUID:
        """A 16-byte GUID in the [MS-DTYP] 2.3.4 packet layout (Data1..3 little-endian)."""
        return uuid.UUID(bytes_le=self.raw(16, what))

    def raw(self, n: int, what: str = "bytes") -> bytes:
        """Exactly ``n`` bytes; the length is checked before anything is sliced or allocated."""
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise WireError(f"truncated {what}: need {n} bytes, {self.end - pos} left", pos)
        self.pos = pos + n
        return self.data[pos : pos + n]

    def rest(self) -> bytes:
        """Everything up to ``end``."""
        return self.raw(self.end - self.pos)

    def utf16(self, n_chars: int, what: str = "string") -> str:
        """``n_chars`` UTF-16LE code units decoded as text (lone surrogates kept via surrogatepass)."""
        if n_chars < 0:
            raise WireError(f"negative length for {what}", self.pos)
        raw = self.raw(2 * n_chars, what)
        return raw.decode("utf-16-le", "surrogatepass")

    def utf16z(self, what: str = "string") -> str:
        """A NUL-terminated UTF-16LE string (terminator consumed, not returned)."""
        pos = self.pos
        data = self.data
        i = pos
        while True:
            i = data.find(b"\x00\x00", i, self.end)
            if i < 0:
                raise WireError(f"unterminated {what}", pos)
            if (i - pos) % 2 == 0:
                break
            i += 1
        self.pos = i + 2
        return data[pos:i].decode("utf-16-le", "surrogatepass")

    def sub(self, n: int, what: str = "structure") -> Reader:
        """A reader over the next ``n`` bytes; this reader moves past them."""
        self.need(n, what)
        sub = Reader(self.data, self.pos, self.pos + n)
        self.pos += n
        return sub

    def align4(self, base: int = 0) -> bytes:
        """Consume and return the padding up to the next 4-byte boundary counted from ``base``."""
        n = pad4(self.pos - base)
        if self.pos + n > self.end:
            # Padding at the very end of a packet may be cut short; take what is there.
            n = self.end - self.pos
        return self.raw(n, "padding")


class Writer:
    """An append-only little-endian byte builder (the inverse of ``Reader``)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def __len__(self) -> int:
        return len(self.buf)

    def u8(self, value: int) -> None:
        if not 0 <= value <= 0xFF:
            raise WireError(f"{value!r} does not fit a u8 field")
        self.buf.append(value)

    def u16(self, value: int) -> None:
        try:
            self.buf += _U16.pack(value)
        except struct.error as exc:
            raise WireError(f"{value!r} does not fit a u16 field") from exc

    def i16(self, value: int) -> None:
        try:
            self.buf += _I16.pack(value)
        except struct.error as exc:
            raise WireError(f"{value!r} does not fit a i16 field") from exc

    def u32(self, value: int) -> None:
        try:
            self.buf += _U32.pack(value)
        except struct.error as exc:
            raise WireError(f"{value!r} does not fit a u32 field") from exc

    def i32(self, value: int) -> None:
        try:
            self.buf += _I32.pack(value)
        except struct.error as exc:
            raise WireError(f"{value!r} does not fit a i32 field") from exc

    def u64(self, value: int) -> None:
        try:
            self.buf += _U64.pack(value)
        except struct.error as exc:
            raise WireError(f"{value!r} does not fit a u64 field") from exc

    def i64(self, value: int) -> None:
        try:
            self.buf += _I64.pack(value)
        except struct.error as exc:
            raise WireError(f"{value!r} does not fit a i64 field") from exc

    def f32(self, value: float) -> None:
        try:
            self.buf += _F32.pack(value)
        except struct.error as exc:
            raise WireError(f"{value!r} does not fit a f32 field") from exc

    def f64(self, value: float) -> None:
        try:
            self.buf += _F64.pack(value)
        except struct.error as exc:
            raise WireError(f"{value!r} does not fit a f64 field") from exc

    def guid(self, value: uuid.UUID) -> None:
        self.buf += value.bytes_le

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.buf += data

    def utf16(self, text: str) -> None:
        self.buf += text.encode("utf-16-le", "surrogatepass")

    def utf16z(self, text: str) -> None:
        self.buf += text.encode("utf-16-le", "surrogatepass") + b"\x00\x00"

    def pad_to4(self, base: int = 0, fill: bytes = b"") -> None:
        """Append padding up to a 4-byte boundary counted from ``base``.

        ``fill`` gives the exact padding bytes to write (to reproduce decoded bytes); missing
        bytes are zeros.
        """
        n = pad4(len(self.buf) - base)
        self.buf += (fill + bytes(n))[:n] if n else b""

    def getvalue(self) -> bytes:
        return bytes(self.buf)
