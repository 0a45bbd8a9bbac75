"""The header walk of ``pymsmq.spark.arrow_decode``'s fast path: from the UserHeader's queue names to
the MessagePropertiesHeader, over a whole Arrow batch of packets at once (numpy only, no I/O).

Two walks give the same answer:

- ``walk_rows``: every row walked on its own (its own flags, its own queue-name lengths), as arrays.
- ``walk_uniform``: when every candidate row has the same UserHeader layout flags, the same
  queue-name Counts and the same TransactionHeader size (a batch sent by one application to one
  queue), each header sits at the same offset from every packet start: the offsets are worked out
  once, as scalars, and only the per-row checks stay vectorised.  ``None`` when the batch is not
  uniform; the caller then uses ``walk_rows``.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from pymsmq.spark.arrow_layout import PacketBytes

__all__ = ["Walk", "walk_rows", "walk_uniform"]

# UserHeader.Flags ([MS-MQMQ] 2.2.19.2): TH (TransactionHeader), CQ (ConnectorType GUID follows).
_U_TH: Final = 0x00100000
_U_CQ: Final = 0x00400000
# The queue-type fields of UserHeader.Flags (destination, admin, response), 7 = direct format name.
_QUEUE_SHIFTS: Final = (10, 13, 16)
# The UserHeader.Flags bits that decide the walk (the three queue types, TH, CQ); the others
# (delivery, journaling, ...) may vary from row to row in a uniform batch.
_LAYOUT_BITS: Final = 0x1FF << 10 | _U_TH | _U_CQ

#: (ok, names, mph_start, has_tx, tx_flags): the rows still on the fast path; per queue name
#: (present, text start, text end incl. terminator); the MessagePropertiesHeader's position; whether
#: each row has a TransactionHeader and its Flags (0 where absent).
Walk = tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray]], np.ndarray, np.ndarray, np.ndarray]


def walk_rows(
    col_data: PacketBytes, starts: np.ndarray, end: np.ndarray, uflags: np.ndarray, ok: np.ndarray
) -> Walk:
    """Walk every row on its own; ``ok`` is narrowed in place to the rows whose headers check out."""
    n = len(starts)
    pos = starts + 64
    # Direct queue names: Count u16, NUL-terminated UTF-16LE, padding to 4 from the UserHeader start
    # (the packet start + 16, itself 4-aligned) -- [MS-MQMQ] 2.2.18.1.5.2.
    names: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for shift in _QUEUE_SHIFTS:
        present = ((uflags >> shift) & 7) == 7
        if not present.any():  # no row has this queue: nothing to read
            names.append((present, pos, pos))
            continue
        count = col_data.u16(pos)
        stop = pos + 2 + count
        field_end = stop + ((-(stop - starts)) & 3)
        good = (pos + 2 <= end) & (count >= 2) & ((count & 1) == 0) & (field_end <= end)
        good &= col_data.u16(stop - 2) == 0
        ok &= ~present | good
        names.append((present, pos + 2, stop))
        pos = np.where(present, field_end, pos)
    pos = pos + np.where(uflags & _U_CQ, 16, 0)
    # TransactionHeader: 20 bytes, 36 with Flags.CG ([MS-MQMQ] 2.2.20.5).
    has_tx = (uflags & _U_TH) != 0
    tx_flags = col_data.u32(pos) if has_tx.any() else np.zeros(n, np.int64)
    tx_size = 20 + np.where(tx_flags & 1, 16, 0)
    ok &= ~has_tx | (pos + tx_size <= end)
    pos = np.where(has_tx, pos + tx_size, pos)
    return ok, names, pos, has_tx, tx_flags


def _same(values: np.ndarray, ok: np.ndarray, first: int) -> bool:
    """Whether ``values`` is the same in every ``ok`` row (row ``first`` is one of them)."""
    return bool(((values == values[first]) | ~ok).all())


def walk_uniform(
    col_data: PacketBytes,
    starts: np.ndarray,
    psize: np.ndarray,
    uflags: np.ndarray,
    ok: np.ndarray,
) -> Walk | None:
    """``walk_rows``'s answer for a batch whose ``ok`` rows all share one layout, or ``None``.

    Rows already off the fast path (``ok`` False) do not count; ``ok`` is narrowed in place only when
    the answer is not ``None``.  Every check ``walk_rows`` makes per row is made here too: the ones on
    values shared by the batch once, the others (against each PacketSize, each name's terminator) per
    row.
    """
    candidates = np.flatnonzero(ok)
    if not len(candidates):
        return None
    first = int(candidates[0])
    layout = uflags & _LAYOUT_BITS
    if not _same(layout, ok, first):
        return None
    n = len(starts)
    flags = int(layout[first])
    good = ok.copy()
    rel = 64  # offset from the packet start, the same in every row
    names: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for shift in _QUEUE_SHIFTS:
        present = ((flags >> shift) & 7) == 7
        if not present:
            names.append((np.zeros(n, np.bool_), starts + rel, starts + rel))
            continue
        count = col_data.u16(starts + rel)
        if not _same(count, good, first):
            return None
        c = int(count[first])
        stop = rel + 2 + c
        field_end = stop + ((-stop) & 3)
        # [MS-MQMQ] 2.2.18.1.5.2: an even Count of at least one character's terminator, inside the packet.
        if c < 2 or c & 1:
            return None
        good &= (field_end <= psize) & (col_data.u16(starts + (stop - 2)) == 0)
        names.append((np.ones(n, np.bool_), starts + (rel + 2), starts + stop))
        rel = field_end
    if flags & _U_CQ:
        rel += 16
    has_tx = flags & _U_TH != 0
    tx_flags = np.zeros(n, np.int64)
    if has_tx:
        tx_flags = col_data.u32(starts + rel)
        cg = (tx_flags & 1) != 0
        if not _same(cg, good, first):
            return None
        # TransactionHeader: 20 bytes, 36 with Flags.CG ([MS-MQMQ] 2.2.20.5).
        rel += 36 if cg[first] else 20
        good &= rel <= psize
    ok &= good
    return ok, names, starts + rel, np.full(n, has_tx), tx_flags
