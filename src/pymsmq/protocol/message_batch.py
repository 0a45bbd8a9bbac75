"""The MESSAGE_BATCH blob of READ_RANGE: many messages in a columnar layout (docs/protocol.md, READ_RANGE).

A pymsmq extension for bulk reads (the Spark data source reads whole lookup-id ranges with it).  One
fixed-size little-endian record per message, then six variable-length columns, so that a reader can
turn a batch into columns without a per-message loop (``pymsmq.spark`` maps it onto Arrow buffers)::

    u32 count            number of messages
    u32 var_columns      number of variable-length columns that follow the records (6, or 7)
    count x RECORD       (RECORD_SIZE bytes each, layout RECORD_FIELDS)
    per var column:      count x u32 length (0xFFFFFFFF = null), then the concatenated values

Variable-length columns, in order (``VAR_COLUMNS``): label (UTF-8), body, extension, destination_queue
(UTF-8), response_queue (UTF-8), admin_queue (UTF-8); and when the READ_RANGE asked for it
(``RangeFlags.LAST_MOVE_TIME``) a seventh, last_move_time (PROPID_M_LAST_MOVE_TIME: a float64 of
POSIX seconds, 8 bytes, or null for a message never moved); and when it asked for it
(``RangeFlags.DESTINATION_FORMAT_NAME``) an eighth after the seventh, destination_format_name
(PROPID_M_DEST_FORMAT_NAME, UTF-8: the multiple-element name the message was sent to, null for a
message sent to one queue).  Times are POSIX seconds as float64, NaN = not
set; absent 20-byte ids (``id``, ``correlation_id``, ``transaction_id``) and the source machine GUID
are zero bytes with their presence bit clear in ``bits`` (``Bits``).  A label holding a lone
surrogate (possible in MSMQ's UTF-16) is sent with U+FFFD in its place, because the column is UTF-8.

``encode_batch`` is what the server sends; ``split_batch`` checks every count and length against the
bytes present (``WireError`` otherwise) and ``decode_batch`` gives the ``Message`` objects back.
"""

from __future__ import annotations

import math
import struct
import uuid
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntFlag
from typing import TYPE_CHECKING, Final

from pymsmq.errors import WireError, reason

if TYPE_CHECKING:
    from pymsmq.model.message import Message

__all__ = [
    "NULL_LENGTH",
    "RECORD",
    "RECORD_FIELDS",
    "RECORD_SIZE",
    "VAR_COLUMNS",
    "VAR_COLUMNS_WITH_MOVES",
    "VAR_COLUMNS_WITH_SETS",
    "BatchParts",
    "Bits",
    "decode_batch",
    "encode_batch",
    "first_lookup_id",
    "record_size",
    "split_batch",
]


class Bits(IntFlag):
    """RECORD.bits: which optional values are present, and the transaction boundary flags."""

    HAS_ID = 0x01
    HAS_CORRELATION_ID = 0x02
    HAS_SOURCE_MACHINE = 0x04
    HAS_TRANSACTION_ID = 0x08
    FIRST_IN_TRANSACTION = 0x10
    LAST_IN_TRANSACTION = 0x20
    HAS_SENT_TIME = 0x40
    HAS_ARRIVED_TIME = 0x80


#: (name, struct code) of every RECORD field in wire order; also the numpy dtype of a record.
RECORD_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("lookup_id", "Q"),
    ("sent_time", "d"),
    ("arrived_time", "d"),
    ("app_specific", "I"),
    ("msg_class", "I"),
    ("body_type", "I"),
    ("max_time_to_reach_queue", "I"),
    ("max_time_to_receive", "I"),
    ("abort_count", "I"),
    ("move_count", "I"),
    ("priority", "B"),
    ("delivery", "B"),
    ("journal", "B"),
    ("ack", "B"),
    ("trace", "B"),
    ("bits", "B"),
    ("priv_level", "B"),
    ("auth_level", "B"),
    ("id", "20s"),
    ("correlation_id", "20s"),
    ("source_machine_guid", "16s"),
    ("transaction_id", "20s"),
)
RECORD: Final = struct.Struct("<" + "".join(code for _, code in RECORD_FIELDS))
RECORD_SIZE: Final = RECORD.size
VAR_COLUMNS: Final = ("label", "body", "extension", "destination_queue", "response_queue", "admin_queue")
#: The columns of a batch that carries each message's last move time.
VAR_COLUMNS_WITH_MOVES: Final = (*VAR_COLUMNS, "last_move_time")
#: The columns of a batch that also carries each message's destination_format_name.
VAR_COLUMNS_WITH_SETS: Final = (*VAR_COLUMNS_WITH_MOVES, "destination_format_name")
_LAYOUTS: Final = {len(c): c for c in (VAR_COLUMNS, VAR_COLUMNS_WITH_MOVES, VAR_COLUMNS_WITH_SETS)}
NULL_LENGTH: Final = 0xFFFFFFFF
_HEAD: Final = struct.Struct("<II")
_U64: Final = struct.Struct("<Q")
_F64: Final = struct.Struct("<d")
_NAN: Final = float("nan")
_Z20: Final = bytes(20)
_Z16: Final = bytes(16)


def record_size() -> int:
    """RECORD_SIZE (a function for callers that build a numpy dtype from RECORD_FIELDS)."""
    return RECORD_SIZE


def _text(value: str | None) -> bytes | None:
    if value is None:
        return None
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: U+FFFD in its place (see the module docstring)
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


_B_ID: Final = int(Bits.HAS_ID)
_B_CORR: Final = int(Bits.HAS_CORRELATION_ID)
_B_SRC: Final = int(Bits.HAS_SOURCE_MACHINE)
_B_XACT: Final = int(Bits.HAS_TRANSACTION_ID)
_B_FIRST: Final = int(Bits.FIRST_IN_TRANSACTION)
_B_LAST: Final = int(Bits.LAST_IN_TRANSACTION)
_B_SENT: Final = int(Bits.HAS_SENT_TIME)
_B_ARR: Final = int(Bits.HAS_ARRIVED_TIME)
_U32: Final = struct.Struct("<I")
_LITTLE: Final = array("I", [1]).tobytes() == b"\x01\x00\x00\x00"
_NULL_BYTES: Final = b"\xff\xff\xff\xff"


def encode_batch(
    messages: Sequence[Message], last_move_time: bool = False, destination_format_name: bool = False
) -> bytes:
    """The MESSAGE_BATCH blob of ``messages`` (in the given order); with their last move times
    (a seventh column) when ``last_move_time``, and with their destination_format_name (an eighth
    column, after the seventh, which it implies) when ``destination_format_name``."""
    pack = RECORD.pack
    u32 = _U32.pack
    guids: dict[uuid.UUID, bytes] = {}  # bytes_le per GUID: most ids share their queue manager's GUID
    last_guid: uuid.UUID | None = None  # ... usually the very same UUID object, checked first
    last_bytes = _Z16
    records: list[bytes] = []
    cols: list[list[bytes | None]] = [[] for _ in VAR_COLUMNS]
    labels, bodies, extensions, dests, responses, admins = cols
    rec_append = records.append
    for m in messages:
        bits = 0
        mid = m.id
        if mid is not None:
            bits = _B_ID
            lineage = mid.lineage
            if lineage is last_guid:  # identity first: UUID.__hash__ is Python code
                g = last_bytes
            else:
                cached = guids.get(lineage)
                if cached is None:
                    cached = guids[lineage] = lineage.bytes_le
                last_guid, last_bytes = lineage, cached
                g = cached
            id_bytes = g + u32(mid.uniquifier)
        else:
            id_bytes = _Z20
        corr = m.correlation_id
        if corr is not None:
            bits |= _B_CORR
            corr_bytes = bytes(corr)
        else:
            corr_bytes = _Z20
        source = m.source_machine_guid
        if source is not None:
            bits |= _B_SRC
            if source is last_guid:
                source_bytes = last_bytes
            else:
                cached = guids.get(source)
                if cached is None:
                    cached = guids[source] = source.bytes_le
                last_guid, last_bytes = source, cached
                source_bytes = cached
        else:
            source_bytes = _Z16
        xact = m.transaction_id
        if xact is not None:
            bits |= _B_XACT
            xact_bytes = bytes(xact)
            if m.is_first_in_transaction:
                bits |= _B_FIRST
            if m.is_last_in_transaction:
                bits |= _B_LAST
        else:
            xact_bytes = _Z20
        sent = m.sent_time
        if sent is None:
            sent = _NAN
        else:
            bits |= _B_SENT
        arrived = m.arrived_time
        if arrived is None:
            arrived = _NAN
        else:
            bits |= _B_ARR
        aborts = m.abort_count
        moves = m.move_count
        rec_append(
            pack(
                m.lookup_id,
                sent,
                arrived,
                m.app_specific,
                m.msg_class,
                m.body_type,
                m.max_time_to_reach_queue,
                m.max_time_to_receive,
                aborts if aborts < 0xFFFFFFFF else 0xFFFFFFFF,
                moves if moves < 0xFFFFFFFF else 0xFFFFFFFF,
                m.priority,
                m.delivery,
                m.journal,
                m.ack,
                m.trace,
                bits,
                m.priv_level,
                m.auth_level,
                id_bytes,
                corr_bytes,
                source_bytes,
                xact_bytes,
            )
        )
        label = m.label
        labels.append(label.encode() if label.isascii() else _text(label))
        bodies.append(m.body)
        extensions.append(m.extension)
        dests.append(_text(m.destination_queue))
        responses.append(_text(m.response_queue))
        admins.append(_text(m.admin_queue))
    if last_move_time or destination_format_name:
        f64 = _F64.pack
        cols.append([None if (t := m.last_move_time) is None else f64(t) for m in messages])
    if destination_format_name:
        cols.append([_text(m.destination_format_name) for m in messages])
    out: list[bytes] = [_HEAD.pack(len(records), len(cols)), *records]
    for col in cols:
        lengths = array("I", [NULL_LENGTH if v is None else len(v) for v in col])
        if not _LITTLE:  # pragma: no cover - big-endian host
            lengths.byteswap()
        out.append(lengths.tobytes())
        out.extend([v for v in col if v])  # one join below copies every value once
    return b"".join(out)


@dataclass(frozen=True, slots=True)
class BatchParts:
    """A checked MESSAGE_BATCH: where its records and each variable column's lengths and data are."""

    count: int
    #: (start, end) of the RECORD area in the blob.
    records: tuple[int, int]
    #: Per VAR_COLUMNS (or VAR_COLUMNS_WITH_MOVES, VAR_COLUMNS_WITH_SETS) entry: (lengths start,
    #: data start, data end).
    columns: tuple[tuple[int, int, int], ...]


def first_lookup_id(data: bytes | bytearray | memoryview) -> int | None:
    """The lookup id of the batch's first message (its first RECORD's first field); None when empty."""
    if len(data) < _HEAD.size + RECORD_SIZE:
        return None
    count, _ = _HEAD.unpack_from(data, 0)
    return _U64.unpack_from(data, _HEAD.size)[0] if count else None


def split_batch(data: bytes | bytearray | memoryview) -> BatchParts:
    """Check a MESSAGE_BATCH blob and locate its parts; ``WireError`` on anything malformed."""
    mv = memoryview(data).cast("B")
    size = len(mv)
    if size < _HEAD.size:
        raise WireError(f"MESSAGE_BATCH needs {_HEAD.size} header bytes, got {size}", 0)
    count, ncols = _HEAD.unpack_from(mv, 0)
    names = _LAYOUTS.get(ncols)
    if names is None:
        raise WireError(f"MESSAGE_BATCH has {ncols} variable columns, not 6, 7 or 8", 4)
    pos = _HEAD.size
    if count > (size - pos) // (RECORD_SIZE + 4 * ncols):
        raise WireError(f"MESSAGE_BATCH count {count} does not fit in {size} bytes", 0)
    records = (pos, pos + count * RECORD_SIZE)
    pos = records[1]
    columns: list[tuple[int, int, int]] = []
    for name in names:
        if pos + 4 * count > size:
            raise WireError(f"MESSAGE_BATCH {name} lengths run past the end", pos)
        raw = bytes(mv[pos : pos + 4 * count])
        if raw == b"\xff" * (4 * count):  # every value null (e.g. no response queue anywhere)
            total = 0
        else:
            lengths = array("I")
            lengths.frombytes(raw)
            if not _LITTLE:  # pragma: no cover - big-endian host
                lengths.byteswap()
            total = sum(lengths)
            if _NULL_BYTES in raw:  # a byte search first (no false negatives): most columns have no null
                total -= lengths.count(NULL_LENGTH) * NULL_LENGTH
        start = pos + 4 * count
        if total > size - start:
            raise WireError(f"MESSAGE_BATCH {name} values need {total} bytes, {size - start} left", start)
        columns.append((pos, start, start + total))
        pos = start + total
    if pos != size:
        raise WireError(f"{size - pos} trailing bytes after MESSAGE_BATCH", pos)
    return BatchParts(count, records, tuple(columns))


def _values(mv: memoryview, count: int, col: tuple[int, int, int]) -> list[bytes | None]:
    lengths = array("I")
    lengths.frombytes(mv[col[0] : col[0] + 4 * count])
    if not _LITTLE:  # pragma: no cover - big-endian host
        lengths.byteswap()
    out: list[bytes | None] = []
    pos = col[1]
    for n in lengths:
        if n == NULL_LENGTH:
            out.append(None)
        else:
            out.append(bytes(mv[pos : pos + n]))
            pos += n
    return out


def decode_batch(data: bytes | bytearray | memoryview) -> list[Message]:
    """The messages of a MESSAGE_BATCH blob; ``WireError`` if it is malformed or a value is invalid."""
    from pymsmq.errors import MSMQError
    from pymsmq.model.ids import ObjectId
    from pymsmq.model.message import Message

    parts = split_batch(data)
    mv = memoryview(data).cast("B")
    n = parts.count
    cols = [_values(mv, n, c) for c in parts.columns]
    out: list[Message] = []
    for i, rec in enumerate(RECORD.iter_unpack(mv[parts.records[0] : parts.records[1]])):
        (lid, sent, arrived, app, cls, btype, ttrq, ttbr, aborts, moves, prio, delivery, journal, ack,
         trace, bits, priv, auth, mid, corr, source, xact) = rec  # fmt: skip
        label, body, ext, dest, resp, admin = (c[i] for c in cols[:6])
        try:
            m = Message(
                body=body or b"",
                label="" if label is None else label.decode("utf-8"),
                body_type=btype,
                extension=ext or b"",
                app_specific=app,
                correlation_id=ObjectId.from_bytes(corr) if bits & Bits.HAS_CORRELATION_ID else None,
                msg_class=cls,
                priority=prio,
                delivery=delivery,
                ack=ack,
                journal=journal,
                trace=trace,
                max_time_to_reach_queue=ttrq,
                max_time_to_receive=ttbr,
                response_queue=None if resp is None else resp.decode("utf-8"),
                admin_queue=None if admin is None else admin.decode("utf-8"),
                priv_level=priv,
                auth_level=auth,
            )
        except (MSMQError, UnicodeDecodeError, ValueError) as exc:
            raise WireError(f"MESSAGE_BATCH message {i} is invalid: {reason(exc)}") from None
        m.lookup_id = lid
        m.id = ObjectId.from_bytes(mid) if bits & Bits.HAS_ID else None
        m.sent_time = sent if bits & Bits.HAS_SENT_TIME and math.isfinite(sent) else None
        m.arrived_time = arrived if bits & Bits.HAS_ARRIVED_TIME and math.isfinite(arrived) else None
        m.source_machine_guid = uuid.UUID(bytes_le=source) if bits & Bits.HAS_SOURCE_MACHINE else None
        m.transaction_id = ObjectId.from_bytes(xact) if bits & Bits.HAS_TRANSACTION_ID else None
        m.is_first_in_transaction = bool(bits & Bits.FIRST_IN_TRANSACTION)
        m.is_last_in_transaction = bool(bits & Bits.LAST_IN_TRANSACTION)
        m.abort_count = aborts
        m.move_count = moves
        if len(cols) > 6 and (moved := cols[6][i]) is not None:
            if len(moved) != 8 or not math.isfinite(t := _F64.unpack(moved)[0]) or t < 0:
                raise WireError(f"MESSAGE_BATCH message {i} has a bad last_move_time {moved!r}")
            m.last_move_time = t
        try:
            m.destination_queue = None if dest is None else dest.decode("utf-8")
            if len(cols) > 7 and (dest_set := cols[7][i]) is not None:
                m.destination_format_name = dest_set.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireError(f"MESSAGE_BATCH message {i} destination is not UTF-8: {exc}") from None
        out.append(m)
    return out
