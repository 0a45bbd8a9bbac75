"""The UTF-16LE text fields of ``pymsmq.spark.arrow_decode`` (queue names, labels): cut out of an Arrow
batch's data buffer, checked and decoded per batch, never per row (numpy and pyarrow only, no I/O).
Each field is NUL-terminated UTF-16LE ([MS-MQMQ] 2.2.18.1.5.2 direct queue names, 2.2.19.3 Label); a
NUL before the terminator sends the row to the reference decoder (``inner_nul_rows``).

Two readers give the same answers on any fields:

- ``Texts``: the general path, the fields joined by one Arrow ``take`` and decoded as one string.
- ``WindowTexts``: short fields of similar lengths, each read through a fixed-width window of a power
  of two code units (one gather).  Every check runs on the whole (rows x window) block as one flat
  array: which units are plain ASCII characters is packed to one bit per unit, so a row's bits are one
  integer compared with the mask of its own length.  A field repeated in every row (a batch sent to
  one queue) is checked and decoded once.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from pymsmq.spark.arrow_layout import PacketBytes, even_indices, repeat_text
from pymsmq.spark.columns import clean_text

__all__ = ["Texts", "WindowTexts", "slice_ranges", "texts"]


def slice_ranges(data: pa.Buffer, starts: np.ndarray, ends: np.ndarray) -> pa.BinaryArray:
    """A BinaryArray of ``data[starts[i]:ends[i]]``; the ranges must be ordered and not overlap.

    Built as a 2n-value view of ``data`` whose offsets alternate range start and range end (value 2i is
    range i, value 2i+1 the gap after it), then one ``take`` of the even values: one C++ copy.
    """
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    offsets = np.empty(2 * n + 1, np.int32)
    offsets[0 : 2 * n : 2] = starts
    offsets[1 : 2 * n : 2] = ends
    offsets[2 * n] = offsets[2 * n - 1]
    view = pa.Array.from_buffers(pa.binary(), 2 * n, [None, pa.py_buffer(offsets), data])
    # int32 indices (2n < 2**31: the offsets are int32 already) take measurably less than int64 ones.
    return view.take(even_indices(n))


class Texts:
    """UTF-16LE fields (each with its NUL terminator) of some rows, checked and decoded per batch."""

    def __init__(self, data: pa.Buffer, starts: np.ndarray, ends: np.ndarray) -> None:
        self.values = slice_ranges(data, starts, ends)
        self.count = len(starts)
        units = (ends - starts) // 2
        self.last_unit = np.cumsum(units) - 1  # index of each terminator in the joined text
        buffers = self.values.buffers()
        self.joined = buffers[2].to_pybytes() if self.count and buffers[2] is not None else b""

    def inner_nul_rows(self) -> np.ndarray:
        """Positions (0..count-1) of fields with a NUL before their terminator."""
        if not self.count:
            return np.zeros(0, np.int64)
        zeros = np.flatnonzero(np.frombuffer(self.joined, "<u2") == 0)
        if len(zeros) == self.count:
            return np.zeros(0, np.int64)
        owners = np.searchsorted(self.last_unit, zeros)
        extra = zeros != self.last_unit[np.minimum(owners, self.count - 1)]
        return np.unique(owners[extra])

    def strings(self, prefix: str = "") -> list[str]:
        """The fields (terminators dropped, ``prefix`` before each) as Python strings."""
        if not self.count:
            return []
        text = clean_text(self.joined.decode("utf-16-le", "surrogatepass"))
        if prefix:
            text = prefix + text[:-1].replace("\x00", "\x00" + prefix) + "\x00"
        return text.split("\x00")[:-1]

    def array(self, prefix: str = "") -> pa.StringArray:
        """The fields (terminators dropped, ``prefix`` before each) as an Arrow string array.

        ASCII text (the common case) is narrowed to bytes and assembled with numpy; anything else goes
        through Python strings (lone surrogates become U+FFFD, see ``clean_text``).
        """
        units = np.frombuffer(self.joined, "<u2")
        if not len(units) or int(units.max()) >= 0x80:
            return pa.array(self.strings(prefix), pa.string())
        keep = np.ones(len(units), np.bool_)
        keep[self.last_unit] = False
        chars = units[keep].astype(np.uint8)
        lengths = np.diff(self.last_unit, prepend=-1) - 1  # characters per field, terminator excluded
        offsets = np.zeros(self.count + 1, np.int32)
        np.cumsum(lengths, out=offsets[1:])
        arr = pa.Array.from_buffers(
            pa.string(), self.count, [None, pa.py_buffer(offsets), pa.py_buffer(chars)]
        )
        return pc.binary_join_element_wise(prefix, arr, "") if prefix else arr


# The windowed text path reads every field through a fixed window of the longest field's size: used
# when that window is short and not much longer than the average field.
_WINDOW_MAX_UNITS: Final = 256
_ALL_ONES: Final = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def _window_units(longest: int) -> int:
    """The window, in code units: a power of two (at least 8) holding ``longest`` units."""
    units = 8
    while units < longest:
        units *= 2
    return units


def _bit_masks(lengths: np.ndarray, units: int) -> np.ndarray:
    """Per row, ``units`` bits (as (rows, max(units // 64, 1)) words of ``units`` or 64 bits, bit j of
    the row's bit string = unit j) with the low ``lengths[i]`` bits set: where the characters are."""
    bits = min(units, 64)
    words = np.empty((len(lengths), max(units // 64, 1)), np.uint64)
    for k in range(words.shape[1]):
        count = np.clip(lengths - 64 * k, 0, 64).astype(np.uint64)
        # A shift by the word size is undefined: a full word is written as all ones instead.
        words[:, k] = np.where(
            count >= 64, _ALL_ONES, (np.uint64(1) << (count & np.uint64(63))) - np.uint64(1)
        )
    return words.astype(np.dtype(f"<u{bits // 8}"))


def _packed(flags: np.ndarray, units: int) -> np.ndarray:
    """(rows, units) booleans -> the same bits per row, as ``_bit_masks`` lays them out."""
    bits = min(units, 64)
    packed = np.packbits(flags.reshape(-1), bitorder="little")
    return packed.view(np.dtype(f"<u{bits // 8}")).reshape(len(flags), -1)


class WindowTexts:
    """Like ``Texts`` (same interface and results), for short fields: each field is read through a
    fixed-width window (one gather), so checking and narrowing ASCII text are flat numpy operations.
    A field repeated in every row (a batch sent to one queue) is checked and decoded once."""

    def __init__(self, col_data: PacketBytes, dbuf: pa.Buffer, starts: np.ndarray, ends: np.ndarray) -> None:
        self.count = len(starts)
        self.starts, self.ends, self.dbuf = starts, ends, dbuf
        self.lengths = (ends - starts) // 2 - 1  # characters per field, terminator excluded (>= 0)
        width = int(self.lengths.max())
        self.width = width
        self.units = _window_units(width + 1)  # every field with its terminator
        raw = col_data.window(starts, 2 * self.units)
        self.same = bool((self.lengths == width).all()) and self._rows_equal(raw, 2 * width + 2)
        rows = raw[:1] if self.same else raw
        self.block = rows.view("<u2")  # (rows, units) code units, contiguous
        self.fallback: Texts | None = None
        self.masks: np.ndarray | None = None
        self.plain: bool | None = None

    @staticmethod
    def _rows_equal(raw: np.ndarray, size: int) -> bool:
        """Whether the first ``size`` bytes of every row of ``raw`` (rows of 8-aligned width) are equal:
        compared one word column at a time (small temporaries, no (rows x words) copy)."""
        words = raw.view(np.uint64)
        full, rest = divmod(size, 8)
        for column in range(full):
            if not (words[:, column] == words[0, column]).all():
                return False
        if not rest:
            return True
        mask = np.uint64((1 << (8 * rest)) - 1)  # the low-order bytes come first (little-endian)
        return not ((words[:, full] ^ words[0, full]) & mask).any()

    @staticmethod
    def fits(starts: np.ndarray, ends: np.ndarray) -> bool:
        """Whether the windowed path suits these fields (short, and of similar lengths)."""
        if not len(starts):
            return False
        units = (ends - starts) // 2
        longest = int(units.max())
        return longest <= _WINDOW_MAX_UNITS and longest * len(units) <= 2 * int(units.sum()) + 16 * len(units)

    def _masks(self) -> np.ndarray:
        # Bit j of row i: unit j of field i is a character (before the terminator).
        if self.masks is None:
            self.masks = _bit_masks(self.lengths[:1] if self.same else self.lengths, self.units)
        return self.masks

    def _plain(self) -> bool:
        # Every character ASCII and not NUL (the common case), in one pass: NUL wraps to 0xFFFF.
        if self.plain is None:
            odd = _packed((self.block - np.uint16(1)) >= 0x7F, self.units)
            self.plain = not (odd & self._masks()).any()
        return self.plain

    def _chars(self) -> np.ndarray:
        # (rows, units) booleans: the characters of each row.
        masks = self._masks()
        bits = np.unpackbits(masks.view(np.uint8), bitorder="little")
        return bits.view(np.bool_).reshape(len(masks), self.units)

    def inner_nul_rows(self) -> np.ndarray:
        """Positions (0..count-1) of fields with a NUL before their terminator."""
        if self._plain():
            return np.zeros(0, np.int64)
        bad = np.flatnonzero(((self.block == 0) & self._chars()).any(axis=1))
        if self.same:
            return np.arange(self.count) if len(bad) else bad
        return bad

    def array(self, prefix: str = "") -> pa.StringArray:
        """The fields (terminators dropped, ``prefix`` before each) as an Arrow string array."""
        if not self._plain() and ((self.block >= 0x80) & self._chars()).any():  # not ASCII: the general path
            if self.fallback is None:
                self.fallback = Texts(self.dbuf, self.starts, self.ends)
            return self.fallback.array(prefix)
        n = self.count
        head = prefix.encode("ascii")
        if self.same:
            text = head + self.block[0, : self.width].astype(np.uint8).tobytes()
            return repeat_text(text.decode("ascii"), n)
        narrow = self.block.astype(np.uint8)
        chars = self._chars()
        if head:  # rows of prefix + window, the prefix always kept
            row = np.dtype([("head", f"V{len(head)}"), ("text", f"V{self.units}")])
            block = np.empty(n, row)
            block["head"] = np.frombuffer(head, f"V{len(head)}")[0]
            block["text"] = narrow.view(f"V{self.units}")[:, 0]
            keep = np.empty(n, row)
            keep["head"] = np.frombuffer(b"\x01" * len(head), f"V{len(head)}")[0]
            keep["text"] = chars.view(np.uint8).view(f"V{self.units}")[:, 0]
            values = block.view(np.uint8)[keep.view(np.bool_)]
        else:
            values = narrow.reshape(-1)[chars.reshape(-1)]
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(self.lengths + len(head), out=offsets[1:])
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(values)])


def texts(
    col_data: PacketBytes, dbuf: pa.Buffer, starts: np.ndarray, ends: np.ndarray
) -> Texts | WindowTexts:
    """The text fields ``[starts, ends)`` of some rows, through the windowed path when it suits them."""
    if WindowTexts.fits(starts, ends):
        return WindowTexts(col_data, dbuf, starts, ends)
    return Texts(dbuf, starts, ends)
