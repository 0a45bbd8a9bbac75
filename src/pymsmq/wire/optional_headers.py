"""Optional headers of the UserMessage packet ([MS-MQMQ] 2.2.20.1-2.2.20.8, SessionHeader aside).

Each header is a frozen dataclass with ``read``/``write`` (used by the UserMessage codec) and
``decode``/``encode`` (one header on its own).  ``read`` consumes the header *and* its padding up
to the next 4-byte boundary counted from the header's start ([MS-MQMQ] 2.2.19.1: PacketSize
accounts for every header rounded up to 4 bytes); the padding bytes are kept in ``padding`` so a
decoded header re-encodes byte for byte.  ``padding == b""`` means "zeros" (what a fresh header
writes); decoders store ``b""`` for all-zero padding so that fresh and decoded values compare equal.

Length and count fields that only describe other fields (HeaderDataLength, ElementCount, ...)
are not stored: they are properties computed from the data, and the decoder checks them against
the bytes that are really there before it slices anything.

The SecurityHeader (2.2.20.6) lives in ``security_header.py``.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer, pad4
from pymsmq.wire._structure import Structure, read_padding, utf16_units, write_padding

# check_end was defined here before the shared _structure module; kept importable from here.
from pymsmq.wire._structure import check_end as check_end
from pymsmq.wire.element_budget import charge_elements
from pymsmq.wire.packet_types import MQFFormatNameElement, TxSequenceID

__all__ = [
    "BODY_SECTION_ID",
    "DEBUG_HEADER_SIZE",
    "HEADER_SECTION_ID",
    "MQF_ADDRESS_HEADER_FIXED_SIZE",
    "MQF_ELEMENT_WEIGHT",
    "TRANSACTION_HEADER_SIZE",
    "DebugHeader",
    "DebugQueueType",
    "MQFAddressHeader",
    "MQFHeaderId",
    "MQFSignatureHeader",
    "MultiQueueFormatHeader",
    "SoapHeader",
    "TransactionHeader",
    "TransactionHeaderFlags",
]


# --------------------------------------------------------------------------------------------
# 2.2.20.5 TransactionHeader

_TX: Final = struct.Struct("<IIIII")
TRANSACTION_HEADER_SIZE: Final = 20
_ZERO_TX_SEQUENCE_ID: Final = TxSequenceID()


class TransactionHeaderFlags(IntFlag):
    """TransactionHeader.Flags ([MS-MQMQ] 2.2.20.5); diagram bit n is mask ``1 << n``."""

    CG = 0x00000001  # ConnectorQMGuid present
    FA = 0x00000002  # a FinalAck packet is required ([MS-MQQB] 2.2.5)
    FM = 0x00000004  # first message of the transaction
    LM = 0x00000008  # last message of the transaction
    ID = 0x00FFFFF0  # 20-bit transaction identifier (read with ``transaction_id``)
    X = 0xFF000000  # X1..X8: unused, "MUST be ignored on receipt"


@dataclass(frozen=True, slots=True)
class TransactionHeader(Structure):
    """Sequence information of a transactional message ([MS-MQMQ] 2.2.20.5): 20 bytes, 36 with CG.

    ``flags`` is kept whole (X1..X8 included: "MUST be ignored on receipt", so they are neither
    rejected nor cleared).  ``connector_qm_guid`` is present iff Flags.CG is set.  The
    sequence-number ranges (first number 1, previous number 0 for none) are session rules checked
    by the protocol layer.
    """

    flags: int = TransactionHeaderFlags.FM | TransactionHeaderFlags.LM
    tx_sequence_id: TxSequenceID = _ZERO_TX_SEQUENCE_ID
    tx_sequence_number: int = 1
    previous_tx_sequence_number: int = 0
    connector_qm_guid: uuid.UUID | None = None

    @property
    def has_connector_qm_guid(self) -> bool:
        """Flags.CG: the ConnectorQMGuid field follows."""
        return bool(self.flags & TransactionHeaderFlags.CG)

    @property
    def final_ack_required(self) -> bool:
        """Flags.FA."""
        return bool(self.flags & TransactionHeaderFlags.FA)

    @property
    def first_message(self) -> bool:
        """Flags.FM."""
        return bool(self.flags & TransactionHeaderFlags.FM)

    @property
    def last_message(self) -> bool:
        """Flags.LM."""
        return bool(self.flags & TransactionHeaderFlags.LM)

    @property
    def transaction_id(self) -> int:
        """Flags.ID: the sender's 20-bit identifier of the transaction."""
        return (self.flags >> 4) & 0xFFFFF

    @property
    def size(self) -> int:
        """Bytes on the wire: 20, or 36 with ConnectorQMGuid."""
        return TRANSACTION_HEADER_SIZE + (16 if self.has_connector_qm_guid else 0)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read a TransactionHeader (always a multiple of 4 bytes: no padding)."""
        flags, ordinal, timestamp, seq, prev = r.unpack(_TX, "TransactionHeader")
        # 2.2.20.5: "If Flags.CG is set, this field MUST be present; otherwise, it MUST NOT."
        guid = r.guid("TransactionHeader.ConnectorQMGuid") if flags & TransactionHeaderFlags.CG else None
        return cls(flags, TxSequenceID(ordinal, timestamp), seq, prev, guid)

    def write(self, w: Writer) -> None:
        """Append this header."""
        if self.has_connector_qm_guid != (self.connector_qm_guid is not None):
            raise WireError("TransactionHeader: ConnectorQMGuid MUST be present iff Flags.CG is set")
        try:
            w.raw(
                _TX.pack(
                    self.flags,
                    self.tx_sequence_id.ordinal,
                    self.tx_sequence_id.timestamp,
                    self.tx_sequence_number,
                    self.previous_tx_sequence_number,
                )
            )
        except struct.error as exc:
            raise WireError(f"TransactionHeader field out of range: {exc}") from exc
        if self.connector_qm_guid is not None:
            w.guid(self.connector_qm_guid)


# --------------------------------------------------------------------------------------------
# 2.2.20.8 DebugHeader

_DEBUG: Final = struct.Struct("<HH")
DEBUG_HEADER_SIZE: Final = 4


class DebugQueueType(IntEnum):
    """DebugHeader.Flags.QT ([MS-MQMQ] 2.2.20.8)."""

    NONE = 0x0  # no queue; QueueIdentifier absent
    PUBLIC = 0x1  # QueueIdentifier is a public queue GUID


@dataclass(frozen=True, slots=True)
class DebugHeader(Structure):
    """The queue that receives trace (report) messages for this packet ([MS-MQMQ] 2.2.20.8).

    4 bytes, or 20 when Flags.QT = 1 and the 16-byte QueueIdentifier follows.  ``flags`` is kept
    whole (bits X2..X15 "MUST be ignored on receipt").  QT values 2 and 3 are undefined and the
    header length would then be unknown, so they are rejected.
    """

    flags: int = DebugQueueType.NONE
    reserved: int = 0
    queue_identifier: uuid.UUID | None = None

    @property
    def queue_type(self) -> int:
        """Flags.QT (0 none, 1 public queue)."""
        return self.flags & 0x3

    @property
    def has_queue_identifier(self) -> bool:
        """QT = 1: the QueueIdentifier GUID follows."""
        return self.queue_type == DebugQueueType.PUBLIC

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read a DebugHeader (4 or 20 bytes: no padding)."""
        start = r.pos
        flags, reserved = r.unpack(_DEBUG, "DebugHeader")
        qt = flags & 0x3
        # 2.2.20.8: QT "MUST be set to one of the following values" (0x0, 0x1).
        if qt > DebugQueueType.PUBLIC:
            raise WireError(f"DebugHeader.Flags.QT is {qt}, MUST be 0 or 1", start)
        # "This field MUST be present when DebugHeader.Flags.QT is set to 0x1; otherwise ... MUST NOT".
        guid = r.guid("DebugHeader.QueueIdentifier") if qt == DebugQueueType.PUBLIC else None
        return cls(flags, reserved, guid)

    def write(self, w: Writer) -> None:
        """Append this header."""
        qt = self.queue_type
        if qt > DebugQueueType.PUBLIC:
            raise WireError(f"DebugHeader.Flags.QT is {qt}, MUST be 0 or 1")
        if (qt == DebugQueueType.PUBLIC) != (self.queue_identifier is not None):
            raise WireError("DebugHeader: QueueIdentifier MUST be present iff Flags.QT = 1")
        try:
            w.raw(_DEBUG.pack(self.flags, self.reserved))
        except struct.error as exc:
            raise WireError(f"DebugHeader field out of range: {exc}") from exc
        if self.queue_identifier is not None:
            w.guid(self.queue_identifier)


# --------------------------------------------------------------------------------------------
# 2.2.20.7 SoapHeader

_SECTION: Final = struct.Struct("<HHI")
# 2.2.20.7: "HeaderSectionID ... MUST be set to 0x0320"; "BodySectionID ... MUST be set to 0x0384".
HEADER_SECTION_ID: Final = 0x0320
BODY_SECTION_ID: Final = 0x0384
_BODY_SECTION_ID_BYTES: Final = BODY_SECTION_ID.to_bytes(2, "little")


@dataclass(frozen=True, slots=True)
class SoapHeader(Structure):
    """Application-defined SOAP header and body text ([MS-MQMQ] 2.2.20.7).

    ``header`` and ``body`` hold *all* HeaderDataLength / BodyDataLength UTF-16 units, the
    terminating NUL included (the spec counts it), so that any bytes re-encode exactly; the
    ``header_text``/``body_text`` properties drop the terminator.  An empty string means a
    length of 0.

    The spec states no padding between Header and BodySectionID.  When HeaderDataLength is odd
    BodySectionID would not be 4-aligned, so ``header_padding`` records what was seen: ``None``
    for "aligned with zero padding, or no padding needed" (what the encoder writes by default),
    ``b""`` for "BodySectionID follows Header directly", or the two padding bytes when nonzero.
    The decoder accepts BodySectionID at either place.  ``padding`` ends the whole header.
    """

    header: str = "\x00"
    body: str = "\x00"
    reserved: int = 0
    reserved1: int = 0
    header_section_id: int = HEADER_SECTION_ID
    body_section_id: int = BODY_SECTION_ID
    header_padding: bytes | None = None
    padding: bytes = b""

    @property
    def header_data_length(self) -> int:
        """HeaderDataLength: UTF-16 units in Header, terminator included."""
        return utf16_units(self.header)

    @property
    def body_data_length(self) -> int:
        """BodyDataLength: UTF-16 units in Body, terminator included."""
        return utf16_units(self.body)

    @property
    def header_text(self) -> str:
        """Header without its terminating NUL."""
        return self.header.removesuffix("\x00")

    @property
    def body_text(self) -> str:
        """Body without its terminating NUL."""
        return self.body.removesuffix("\x00")

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read a SoapHeader and the padding after it."""
        start = r.pos
        header_id, reserved, header_len = r.unpack(_SECTION, "SoapHeader")
        if header_id != HEADER_SECTION_ID:
            raise WireError(f"SoapHeader.HeaderSectionID is 0x{header_id:04X}, MUST be 0x0320", start)
        header = r.utf16(header_len, "SoapHeader.Header")
        header_padding: bytes | None = None
        gap = pad4(r.pos - start)
        if gap:
            r.need(2, "SoapHeader.BodySectionID")
            if r.data[r.pos : r.pos + 2] == _BODY_SECTION_ID_BYTES:
                header_padding = b""
            else:
                pad = r.raw(gap, "SoapHeader padding")
                header_padding = pad if pad.strip(b"\x00") else None
        body_start = r.pos
        body_id, reserved1, body_len = r.unpack(_SECTION, "SoapHeader body section")
        if body_id != BODY_SECTION_ID:
            raise WireError(f"SoapHeader.BodySectionID is 0x{body_id:04X}, MUST be 0x0384", body_start)
        body = r.utf16(body_len, "SoapHeader.Body")
        padding = read_padding(r, start)
        return cls(header, body, reserved, reserved1, header_id, body_id, header_padding, padding)

    def write(self, w: Writer) -> None:
        """Append this header and its padding."""
        if self.header_section_id != HEADER_SECTION_ID or self.body_section_id != BODY_SECTION_ID:
            raise WireError("SoapHeader section ids MUST be 0x0320 and 0x0384")
        start = len(w)
        header = self.header.encode("utf-16-le", "surrogatepass")
        body = self.body.encode("utf-16-le", "surrogatepass")
        try:
            w.raw(_SECTION.pack(self.header_section_id, self.reserved, len(header) >> 1))
            w.raw(header)
            gap = pad4(len(w) - start)
            hp = self.header_padding
            if hp is None:
                w.raw(bytes(gap))
            elif not gap or len(hp) not in (0, gap) or hp == _BODY_SECTION_ID_BYTES:
                # Padding equal to the BodySectionID bytes would be read back as "no padding".
                raise WireError(f"SoapHeader.header_padding {hp!r} does not fit a {gap}-byte gap")
            else:
                w.raw(hp)
            w.raw(_SECTION.pack(self.body_section_id, self.reserved1, len(body) >> 1))
            w.raw(body)
        except struct.error as exc:
            raise WireError(f"SoapHeader field out of range: {exc}") from exc
        write_padding(w, start, self.padding, "SoapHeader")


# --------------------------------------------------------------------------------------------
# 2.2.20.2 MQFAddressHeader, 2.2.20.3 MQFSignatureHeader, 2.2.20.1 MultiQueueFormatHeader

_MQF_ADDRESS: Final = struct.Struct("<IHHI")
MQF_ADDRESS_HEADER_FIXED_SIZE: Final = 12
#: What one FormatNameList element counts against a reader's element budget
#: (``pymsmq.wire.element_budget``): decoding it and turning it into format-name text costs about
#: four times a property vector's element (outside QA: 16,000 of them took a server's loop 250 ms).
#: Valid lists hold a handful, and a name at most 256 (``pymsmq.model.packet_queues``).
MQF_ELEMENT_WEIGHT: Final = 4
_MQF_SIGNATURE: Final = struct.Struct("<HHI")
# The smallest MQFFormatNameElement: FormatType (2) + an empty direct name's NUL (2).
_MIN_ELEMENT_SIZE: Final = 4


class MQFHeaderId(IntEnum):
    """MQFAddressHeader.HeaderID and MQFSignatureHeader.ID values ([MS-MQMQ] 2.2.20.2, 2.2.20.3)."""

    DESTINATION = 0x0064
    ADMIN = 0x00C8
    RESPONSE = 0x012C
    SIGNATURE = 0x015E


_ADDRESS_HEADER_IDS: Final = frozenset(int(v) for v in MQFHeaderId)


@dataclass(frozen=True, slots=True)
class MQFAddressHeader(Structure):
    """A list of queue format names ([MS-MQMQ] 2.2.20.2) inside a MultiQueueFormatHeader.

    ElementCount and HeaderSize are computed.  The spec does not say whether HeaderSize counts the
    padding that rounds FormatNameList up to 4 bytes: both readings are accepted, the one seen is
    kept in ``header_size_counts_padding`` (encoders count it by default, so HeaderSize is a
    multiple of 4), and any other HeaderSize is rejected.  The padding bytes themselves are in
    ``padding`` (``b""``: zeros).
    """

    header_id: int = MQFHeaderId.DESTINATION
    format_name_list: tuple[MQFFormatNameElement, ...] = ()
    reserved: int = 0
    padding: bytes = b""
    header_size_counts_padding: bool = True

    @property
    def element_count(self) -> int:
        """ElementCount."""
        return len(self.format_name_list)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the header, its FormatNameList and the padding after it."""
        start = r.pos
        header_size, header_id, reserved, count = r.unpack(_MQF_ADDRESS, "MQFAddressHeader")
        if header_id not in _ADDRESS_HEADER_IDS:
            raise WireError(
                f"MQFAddressHeader.HeaderID 0x{header_id:04X} is not in the 2.2.20.2 table", start + 4
            )
        # 2.2.20.2: HeaderSize "has a valid range between 0x0000000C and the size limit ...".
        if header_size < MQF_ADDRESS_HEADER_FIXED_SIZE:
            raise WireError(f"MQFAddressHeader.HeaderSize {header_size} is below 12", start)
        body = r.sub(header_size - MQF_ADDRESS_HEADER_FIXED_SIZE, "MQFAddressHeader.FormatNameList")
        if count * _MIN_ELEMENT_SIZE > body.remaining:
            raise WireError(
                f"MQFAddressHeader.ElementCount {count} cannot fit in HeaderSize {header_size}", start + 8
            )
        charge_elements(count, start + 8, "MQFAddressHeader.FormatNameList", MQF_ELEMENT_WEIGHT)
        elements = tuple(MQFFormatNameElement.read(body, start) for _ in range(count))
        unpadded = body.pos - start
        if header_size == unpadded:
            counts_padding = not pad4(unpadded)
            r.pos = body.pos
        elif header_size == unpadded + pad4(unpadded):
            counts_padding = True
            r.pos = body.pos  # the padding inside HeaderSize is read below like any other
        else:
            raise WireError(
                f"MQFAddressHeader.HeaderSize {header_size} does not end FormatNameList ({unpadded} bytes)",
                start,
            )
        return cls(header_id, elements, reserved, read_padding(r, start), counts_padding)

    def write(self, w: Writer) -> None:
        """Append the header, its FormatNameList and the padding."""
        start = len(w)
        w.raw(bytes(MQF_ADDRESS_HEADER_FIXED_SIZE))  # fixed part, filled in once the size is known
        for element in self.format_name_list:
            element.write(w, start)
        unpadded = len(w) - start
        header_size = unpadded + (pad4(unpadded) if self.header_size_counts_padding else 0)
        try:
            fixed = _MQF_ADDRESS.pack(header_size, self.header_id, self.reserved, len(self.format_name_list))
        except struct.error as exc:
            raise WireError(f"MQFAddressHeader field out of range: {exc}") from exc
        w.buf[start : start + MQF_ADDRESS_HEADER_FIXED_SIZE] = fixed
        write_padding(w, start, self.padding, "MQFAddressHeader")


@dataclass(frozen=True, slots=True)
class MQFSignatureHeader(Structure):
    """The signature part of a MultiQueueFormatHeader ([MS-MQMQ] 2.2.20.3).

    ID (MUST be 0x015E), Reserved, Size, Signature.  Size is computed.  The spec states no padding;
    the header is padded to 4 bytes like every header PacketSize counts (``padding``).
    """

    signature: bytes = b""
    id: int = MQFHeaderId.SIGNATURE
    reserved: int = 0
    padding: bytes = b""

    @property
    def size(self) -> int:
        """Size: bytes in Signature."""
        return len(self.signature)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the header and its padding."""
        start = r.pos
        header_id, reserved, size = r.unpack(_MQF_SIGNATURE, "MQFSignatureHeader")
        if header_id != MQFHeaderId.SIGNATURE:
            raise WireError(f"MQFSignatureHeader.ID is 0x{header_id:04X}, MUST be 0x015E", start)
        signature = r.raw(size, "MQFSignatureHeader.Signature")
        return cls(signature, header_id, reserved, read_padding(r, start))

    def write(self, w: Writer) -> None:
        """Append the header and its padding."""
        if self.id != MQFHeaderId.SIGNATURE:
            raise WireError(f"MQFSignatureHeader.ID is 0x{self.id:04X}, MUST be 0x015E")
        start = len(w)
        try:
            w.raw(_MQF_SIGNATURE.pack(self.id, self.reserved, len(self.signature)))
        except struct.error as exc:
            raise WireError(f"MQFSignatureHeader field out of range: {exc}") from exc
        w.raw(self.signature)
        write_padding(w, start, self.padding, "MQFSignatureHeader")


@dataclass(frozen=True, slots=True)
class MultiQueueFormatHeader(Structure):
    """All destinations of a message sent to a multiple-element format name ([MS-MQMQ] 2.2.20.1).

    Present iff UserHeader.Flags.MQ.  Four parts, each ending on a 4-byte boundary: Destination,
    Administration and Response (MQFAddressHeader, HeaderID 0x0064 / 0x00C8 / 0x012C) and
    Signature (MQFSignatureHeader).  The parts carry no presence flags, so all four are always
    there (an empty list has ElementCount 0, an empty signature Size 0).  HeaderIDs are kept as
    read; they are not required to match their position.
    """

    destination: MQFAddressHeader = MQFAddressHeader(MQFHeaderId.DESTINATION)
    administration: MQFAddressHeader = MQFAddressHeader(MQFHeaderId.ADMIN)
    response: MQFAddressHeader = MQFAddressHeader(MQFHeaderId.RESPONSE)
    signature: MQFSignatureHeader = MQFSignatureHeader()

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the four parts."""
        return cls(
            MQFAddressHeader.read(r),
            MQFAddressHeader.read(r),
            MQFAddressHeader.read(r),
            MQFSignatureHeader.read(r),
        )

    def write(self, w: Writer) -> None:
        """Append the four parts."""
        self.destination.write(w)
        self.administration.write(w)
        self.response.write(w)
        self.signature.write(w)
