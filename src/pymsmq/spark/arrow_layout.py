"""Fixed-width reads out of an Arrow batch's data buffer, many positions at once (numpy only, no I/O).

Split out of ``pymsmq.spark.arrow_decode``, which walks MSMQ packet headers with it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]

__all__ = ["U16", "U32", "PacketBytes", "even_indices", "fixed_offsets", "repeat_text"]

#: Little-endian u16 and u32 (every MSMQ header field is little-endian, [MS-MQMQ] 2.2).
U16: Final = np.dtype("<u2")
U32: Final = np.dtype("<u4")


class PacketBytes:
    """The batch's data buffer as numpy, with fixed-width values gathered at many positions at once.

    Each layout is read through a byte-strided view (stride 1: a record may start at any byte), so a
    gather is one fancy-index copy of ``itemsize`` bytes per position, not a byte-by-byte window copy.
    """

    __slots__ = ("aligned", "bytes", "limit", "u16s", "u32s", "views")

    def __init__(self, buffer: pa.Buffer, starts: np.ndarray | None = None) -> None:
        data = np.frombuffer(buffer, np.uint8)
        if len(data) < 64:
            data = np.concatenate([data, np.zeros(64 - len(data), np.uint8)])
        self.bytes = data
        self.limit = len(data)
        self.views: dict[int, np.ndarray] = {}
        # Every packet 4-aligned in memory (the usual Arrow layout: packet sizes are multiples of 4):
        # u16/u32 fields at even/4-aligned offsets of a packet are read through typed views.
        self.aligned = starts is not None and data.ctypes.data % 4 == 0 and not (starts & 3).any()
        self.u16s: np.ndarray | None = data[: self.limit // 2 * 2].view(U16) if self.aligned else None
        self.u32s: np.ndarray | None = data[: self.limit // 4 * 4].view(U32) if self.aligned else None

    def gather(self, positions: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
        """One ``dtype`` value at each of ``positions``; positions past the end are clipped (such rows
        are never on the fast path: every read is also checked against the packet's end)."""
        width = dtype.itemsize
        view = self.views.get(width)
        if view is None:  # opaque "V<width>" items: the gather is a plain memcpy per position
            view = self.views[width] = np.ndarray(
                (self.limit - width + 1,), np.dtype(f"V{width}"), buffer=self.bytes, strides=(1,)
            )
        return view[np.clip(positions, 0, self.limit - width)].view(dtype)  # type: ignore[no-any-return]

    def window(self, positions: np.ndarray, width: int) -> np.ndarray:
        """(n, width) bytes starting at each of ``positions``, zero past the end of the data."""
        view = self.views.get(width)
        if view is None:
            view = self.views[width] = np.ndarray(
                (max(self.limit - width + 1, 0),), np.dtype(f"V{width}"), buffer=self.bytes, strides=(1,)
            )
        over = positions > self.limit - width
        if not over.any():
            return view[positions].view(np.uint8).reshape(-1, width)  # type: ignore[no-any-return]
        # A window running past the end (the last rows only): read those from a zero-padded tail copy.
        base = max(self.limit - width, 0)
        tail = np.zeros(self.limit - base + width, np.uint8)
        tail[: self.limit - base] = self.bytes[base:]
        out = np.empty((len(positions), width), np.uint8)
        out[~over] = view[positions[~over]].view(np.uint8).reshape(-1, width)
        for row, pos in zip(np.flatnonzero(over).tolist(), positions[over].tolist(), strict=True):
            out[row] = tail[pos - base : pos - base + width]
        return out

    def u16(self, positions: np.ndarray) -> np.ndarray:
        """The u16 at each of ``positions`` (as int64).

        With ``aligned`` data, an odd position reads the unit at position - 1: callers read at odd
        positions only for rows they reject anyway (an odd count, a PacketSize not a multiple of 4).
        """
        if self.u16s is not None:
            return self.u16s[np.clip(positions, 0, self.limit - 2) >> 1].astype(np.int64)  # type: ignore[no-any-return]
        return self.gather(positions, U16).astype(np.int64)

    def u32(self, positions: np.ndarray) -> np.ndarray:
        """The u32 at each of ``positions`` (as int64); with ``aligned`` data, every position given is
        4-aligned in its packet (the TransactionHeader)."""
        if self.u32s is not None:
            return self.u32s[np.clip(positions, 0, self.limit - 4) >> 2].astype(np.int64)  # type: ignore[no-any-return]
        return self.gather(positions, U32).astype(np.int64)


# A worker decodes many batches of one length (``maxRecordsPerBatch`` rows): the arrays below depend only
# on that length (and a width or a text), so they are built once per length, not once per batch.  Arrow
# arrays and buffers are immutable, so one object can serve every batch.  Only batches of up to
# ``_CACHE_ROWS`` rows use the caches (at most ``_CACHED`` entries each: a few MB in all).
_CACHED: Final = 16
_CACHE_ROWS: Final = 1 << 16


def repeat_text(text: str, n: int) -> pa.StringArray:
    """``text`` repeated ``n`` times as an Arrow string array (one shared immutable object per
    (text, n) for batches of up to 65,536 rows, e.g. the ``kind`` column or a queue name every row of a
    batch carries)."""
    return _repeat_text(text, n) if n <= _CACHE_ROWS else pa.repeat(pa.scalar(text, pa.string()), n)


@lru_cache(maxsize=_CACHED)
def _repeat_text(text: str, n: int) -> pa.StringArray:
    return pa.repeat(pa.scalar(text, pa.string()), n)


def even_indices(n: int) -> pa.Int32Array:
    """0, 2, ..., 2n - 2 as an Arrow int32 array (``slice_ranges``' take indices)."""
    return _even_indices(n) if n <= _CACHE_ROWS else pa.array(np.arange(0, 2 * n, 2, dtype=np.int32))


@lru_cache(maxsize=_CACHED)
def _even_indices(n: int) -> pa.Int32Array:
    return pa.array(np.arange(0, 2 * n, 2, dtype=np.int32))


def fixed_offsets(n: int, width: int) -> pa.Buffer:
    """The int32 offsets 0, width, ..., n * width of ``n`` values of ``width`` bytes, as an Arrow buffer."""
    return _fixed_offsets(n, width) if n <= _CACHE_ROWS else _offsets(n, width)


def _offsets(n: int, width: int) -> pa.Buffer:
    return pa.py_buffer(np.arange(n + 1, dtype=np.int32) * np.int32(width))


_fixed_offsets: Final = lru_cache(maxsize=_CACHED)(_offsets)
