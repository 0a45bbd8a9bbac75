"""The UserMessage packet ([MS-MQMQ] 2.2.20): the canonical encoding of an MSMQ message.

Order on the wire, each header present exactly when its flag says so, each ending 4-aligned:

    BaseHeader                     always (Flags.IN MUST NOT be set)
    UserHeader                     always
    TransactionHeader              iff UserHeader.Flags.TH
    SecurityHeader                 iff UserHeader.Flags.SH
    MessagePropertiesHeader        always (UserHeader.Flags.MP "MUST always be set")
    DebugHeader                    iff BaseHeader.Flags.DH
    SRMPEnvelopeHeader             iff UserHeader.Flags.AH      ([MS-MQRR] 2.2.5.1.2)
    CompoundMessageHeader          iff UserHeader.Flags.AH      ([MS-MQRR] 2.2.5.1.2)
    SoapHeader                     iff UserHeader.Flags.HH
    MultiQueueFormatHeader         iff UserHeader.Flags.MQ
    ExtensionHeader                iff bytes remain inside PacketSize ([MS-MQRR] 2.2.5.2)
      SubqueueHeader               iff ExtensionHeader.Flags.SQ
      DeadLetterHeader             iff ExtensionHeader.Flags.DL
      ExtendedAddressHeader        iff ExtensionHeader.Flags.EA
    SessionHeader                  iff BaseHeader.Flags.SH -- after PacketSize bytes

PacketSize: "the size, in bytes, of the entire packet including the base header and any padding
bytes ... but MUST NOT include the SessionHeader size" ([MS-MQMQ] 2.2.19.1).  The real 1801 traffic
in tests/vectors counts the [MS-MQRR] extension section inside PacketSize, so the decoder reads an
ExtensionHeader whenever the optional headers end before PacketSize does.  Every header is a
multiple of 4 bytes, so PacketSize is one too; anything else is rejected.

``encode`` always writes the true PacketSize (so a value built by hand cannot carry a stale one);
for a decoded packet that is the value it was decoded with, so ``decode(x).encode() == x``.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from dataclasses import dataclass
from typing import Final, Self, TypeVar

from pymsmq.errors import WireError
from pymsmq.hresult import HResult
from pymsmq.wire._buffer import NULL_GUID, Reader, Writer
from pymsmq.wire.base_header import (
    BASE_HEADER_SIGNATURE,
    BASE_HEADER_SIZE,
    BASE_HEADER_VERSION,
    INFINITE,
    MAX_PACKET_SIZE,
    BaseHeader,
)
from pymsmq.wire.message_properties_header import (
    MAX_LABEL_CHARS,
    EncryptionAlgorithm,
    HashAlgorithm,
    MessagePropertiesHeader,
)
from pymsmq.wire.mqrr_headers import (
    CompoundMessageHeader,
    DeadLetterHeader,
    ExtendedAddressHeader,
    ExtensionHeader,
    ExtensionHeaderFlags,
    SRMPEnvelopeHeader,
    SubqueueHeader,
)
from pymsmq.wire.optional_headers import DebugHeader, MultiQueueFormatHeader, SoapHeader, TransactionHeader
from pymsmq.wire.packet_types import (
    DirectQueueFormatName,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueFormat,
    QueueType,
)
from pymsmq.wire.security_header import SecurityHeader
from pymsmq.wire.session_header import SESSION_HEADER_SIZE, SessionHeader
from pymsmq.wire.user_header import UserHeader

__all__ = ["DEFAULT_PRIORITY", "UserMessage"]

# [MS-MQMQ] 2.2.19.1 PR: "The default is 0x3."
DEFAULT_PRIORITY: Final = 3

_BASE: Final = struct.Struct("<BBHIII")
_U32: Final = struct.Struct("<I")
_FLAGS_SIZE: Final = struct.Struct("<2xH4xI")  # BaseHeader.Flags and PacketSize
_new: Final = object.__new__
_setattr: Final = object.__setattr__
# Decoded BaseHeaders memoised by their 16 bytes (a stream repeats flags, size and TimeToReachQueue).
_BASE_CACHE: Final[dict[bytes, BaseHeader]] = {}
_CACHE_MAX: Final = 4096

# BaseHeader.Flags bits ([MS-MQMQ] 2.2.19.1)
_B_IN: Final = 0x0008
_B_SH: Final = 0x0010
_B_DH: Final = 0x0020
_B_TR: Final = 0x0100
# UserHeader.Flags bits ([MS-MQMQ] 2.2.19.2)
_U_SH: Final = 0x00080000
_U_TH: Final = 0x00100000
_U_MP: Final = 0x00200000
_U_CQ: Final = 0x00400000
_U_MQ: Final = 0x00800000
_U_AH: Final = 0x02000000
_U_HH: Final = 0x10000000


@dataclass(frozen=True, kw_only=True)
class UserMessage:
    """A complete UserMessage packet ([MS-MQMQ] 2.2.20), one attribute per header (None = absent).

    Build one with ``UserMessage.build(...)``; ``decode``/``encode`` are byte exact.  Not
    ``slots=True``: ``decode`` and ``build`` create the instance with one ``__dict__`` assignment
    (a frozen slots class costs one ``object.__setattr__`` per field), for >= 100k packets/s.
    """

    base_header: BaseHeader
    user_header: UserHeader
    transaction_header: TransactionHeader | None = None
    security_header: SecurityHeader | None = None
    message_properties_header: MessagePropertiesHeader
    debug_header: DebugHeader | None = None
    srmp_envelope_header: SRMPEnvelopeHeader | None = None
    compound_message_header: CompoundMessageHeader | None = None
    soap_header: SoapHeader | None = None
    multi_queue_format_header: MultiQueueFormatHeader | None = None
    extension_header: ExtensionHeader | None = None
    subqueue_header: SubqueueHeader | None = None
    dead_letter_header: DeadLetterHeader | None = None
    extended_address_header: ExtendedAddressHeader | None = None
    session_header: SessionHeader | None = None

    # -- convenience views ------------------------------------------------------------------------

    @property
    def body(self) -> bytes:
        """The message body: MessagePropertiesHeader.MessageBody or, for an SRMP message whose
        properties header carries none, the body inside its CompoundMessageHeader.

        [MS-MQRR] 2.2.5.1.2.2: MsgBodySize and MsgBodyOffset locate "the message body" inside the
        SRMP message the header holds (a message that came over HTTP keeps its body there; the
        CVE-2023-21554 vectors have an empty MessageBody and ``Message`` at offset 995).
        """
        body = self.message_properties_header.body
        compound = self.compound_message_header
        if body or compound is None:
            return body
        return compound.message_body

    @property
    def label(self) -> str | None:
        """MessagePropertiesHeader.Label (None when absent)."""
        return self.message_properties_header.label

    @property
    def priority(self) -> int:
        """BaseHeader.Flags.PR."""
        return self.base_header.flags & 0x7

    @property
    def destination_queue(self) -> QueueFormat | None:
        """UserHeader.DestinationQueue."""
        return self.user_header.destination_queue

    # -- decode -----------------------------------------------------------------------------------

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        """Decode one whole packet: PacketSize bytes, then the SessionHeader iff BaseHeader.Flags.SH.

        Any malformed input raises ``WireError``; trailing bytes are an error.
        """
        if not isinstance(data, bytes):
            data = bytes(data)
        total = len(data)
        if total < BASE_HEADER_SIZE:
            raise WireError(f"truncated BaseHeader: need 16 bytes, {total} left", 0)
        version, reserved, bflags, signature, packet_size, ttrq = _BASE.unpack_from(data, 0)
        if version != BASE_HEADER_VERSION:
            raise WireError(f"BaseHeader.VersionNumber is 0x{version:02X}, MUST be 0x10", 0)
        if signature != BASE_HEADER_SIGNATURE:
            raise WireError(f"BaseHeader.Signature is 0x{signature:08X}, MUST be 0x524F494C", 4)
        if packet_size > MAX_PACKET_SIZE:
            raise WireError(f"BaseHeader.PacketSize {packet_size} exceeds 0x00400000", 8)
        if packet_size & 3 or packet_size < BASE_HEADER_SIZE:
            raise WireError(f"BaseHeader.PacketSize {packet_size} is not a multiple of 4 of at least 16", 8)
        if bflags & _B_IN:
            # [MS-MQMQ] 2.2.20: "The BaseHeader.Flags.IN field MUST NOT be set."
            raise WireError("BaseHeader.Flags.IN is set: not a UserMessage", 2)
        expected = packet_size + (SESSION_HEADER_SIZE if bflags & _B_SH else 0)
        if total != expected:
            what = "truncated" if total < expected else "trailing bytes after"
            raise WireError(f"{what} UserMessage: PacketSize (+SessionHeader) is {expected}, got {total}", 0)
        key = data[:BASE_HEADER_SIZE]
        base = _BASE_CACHE.get(key)
        if base is None:
            base = BaseHeader(bflags, packet_size, ttrq, version, reserved, signature)
            if len(_BASE_CACHE) >= _CACHE_MAX:
                _BASE_CACHE.clear()
            _BASE_CACHE[key] = base

        r = Reader(data, BASE_HEADER_SIZE, packet_size)
        user = UserHeader.read(r)
        uflags = user.flags
        if not uflags & _U_MP:
            # [MS-MQMQ] 2.2.19.2 MP: "This flag MUST always be set."
            raise WireError("UserHeader.Flags.MP is clear; a MessagePropertiesHeader MUST be present", 60)
        tx = TransactionHeader.read(r) if uflags & _U_TH else None
        sec = SecurityHeader.read(r) if uflags & _U_SH else None
        props = MessagePropertiesHeader.read(r)
        debug = DebugHeader.read(r) if bflags & _B_DH else None
        if uflags & _U_AH:
            srmp: SRMPEnvelopeHeader | None = SRMPEnvelopeHeader.read(r)
            compound: CompoundMessageHeader | None = CompoundMessageHeader.read(r)
        else:
            srmp = compound = None
        soap = SoapHeader.read(r) if uflags & _U_HH else None
        mqf = MultiQueueFormatHeader.read(r) if uflags & _U_MQ else None
        if r.pos < packet_size:
            extension = ExtensionHeader.read(r)
            eflags = extension.flags
            subq = SubqueueHeader.read(r) if eflags & ExtensionHeaderFlags.SQ else None
            dead = DeadLetterHeader.read(r) if eflags & ExtensionHeaderFlags.DL else None
            addr = ExtendedAddressHeader.read(r) if eflags & ExtensionHeaderFlags.EA else None
            if r.pos != packet_size:
                raise WireError(f"{packet_size - r.pos} bytes inside PacketSize after the last header", r.pos)
            ext: ExtensionHeader | None = extension
        else:
            ext = subq = dead = addr = None
        if r.pos != packet_size:  # pragma: no cover - every reader stops at r.end == packet_size
            raise WireError("headers run past PacketSize", r.pos)
        session = SessionHeader.read(Reader(data, packet_size)) if bflags & _B_SH else None
        return _make(
            cls, base, user, tx, sec, props, debug, srmp, compound, soap, mqf, ext, subq, dead, addr, session
        )

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one packet at the reader's position (its PacketSize and SessionHeader decide the length)."""
        start = r.pos
        r.need(BASE_HEADER_SIZE, "BaseHeader")
        bflags, packet_size = _FLAGS_SIZE.unpack_from(r.data, start)
        n = min(packet_size, MAX_PACKET_SIZE + 1) + (SESSION_HEADER_SIZE if bflags & _B_SH else 0)
        return cls.decode(r.raw(n, "UserMessage"))

    # -- encode -----------------------------------------------------------------------------------

    def write(self, w: Writer) -> None:
        """Append the packet; PacketSize is computed, the presence flags are checked."""
        base = self.base_header
        user = self.user_header
        bflags = base.flags
        uflags = user.flags
        if bflags & _B_IN:
            raise WireError("BaseHeader.Flags.IN MUST NOT be set in a UserMessage")
        if not uflags & _U_MP:
            raise WireError("UserHeader.Flags.MP MUST be set")
        _presence(uflags & _U_TH, self.transaction_header, "TransactionHeader", "UserHeader.Flags.TH")
        _presence(uflags & _U_SH, self.security_header, "SecurityHeader", "UserHeader.Flags.SH")
        _presence(bflags & _B_DH, self.debug_header, "DebugHeader", "BaseHeader.Flags.DH")
        _presence(uflags & _U_AH, self.srmp_envelope_header, "SRMPEnvelopeHeader", "UserHeader.Flags.AH")
        _presence(
            uflags & _U_AH, self.compound_message_header, "CompoundMessageHeader", "UserHeader.Flags.AH"
        )
        _presence(uflags & _U_HH, self.soap_header, "SoapHeader", "UserHeader.Flags.HH")
        _presence(
            uflags & _U_MQ, self.multi_queue_format_header, "MultiQueueFormatHeader", "UserHeader.Flags.MQ"
        )
        _presence(bflags & _B_SH, self.session_header, "SessionHeader", "BaseHeader.Flags.SH")
        ext = self.extension_header
        if ext is None:
            if self.subqueue_header or self.dead_letter_header or self.extended_address_header:
                raise WireError("extension headers need an ExtensionHeader")
        else:
            eflags = ext.flags
            _presence(
                eflags & ExtensionHeaderFlags.SQ, self.subqueue_header, "SubqueueHeader", "ExtensionHeader.SQ"
            )
            _presence(
                eflags & ExtensionHeaderFlags.DL,
                self.dead_letter_header,
                "DeadLetterHeader",
                "ExtensionHeader.DL",
            )
            _presence(
                eflags & ExtensionHeaderFlags.EA,
                self.extended_address_header,
                "ExtendedAddressHeader",
                "ExtensionHeader.EA",
            )
        start = len(w.buf)
        base.write(w)
        user.write(w)
        if self.transaction_header is not None:
            self.transaction_header.write(w)
        if self.security_header is not None:
            self.security_header.write(w)
        self.message_properties_header.write(w)
        for header in (
            self.debug_header,
            self.srmp_envelope_header,
            self.compound_message_header,
            self.soap_header,
            self.multi_queue_format_header,
            ext,
            self.subqueue_header,
            self.dead_letter_header,
            self.extended_address_header,
        ):
            if header is not None:
                header.write(w)
        packet_size = len(w.buf) - start
        if packet_size > MAX_PACKET_SIZE:
            # 2.2.19.1 PacketSize: at most 0x00400000.  MSMQ refuses a larger message with
            # MQ_ERROR_INSUFFICIENT_RESOURCES ("insufficient resources to perform operation").
            raise WireError(
                f"UserMessage of {packet_size} bytes exceeds PacketSize maximum 0x00400000",
                hresult=HResult.MQ_ERROR_INSUFFICIENT_RESOURCES,
            )
        if packet_size & 3:  # pragma: no cover - every header writer pads to 4
            raise WireError(f"UserMessage of {packet_size} bytes is not 4-aligned")
        _U32.pack_into(w.buf, start + 8, packet_size)
        if self.session_header is not None:
            self.session_header.write(w)

    def encode(self) -> bytes:
        """The packet's wire bytes (PacketSize computed)."""
        w = Writer()
        self.write(w)
        return bytes(w.buf)

    # -- build ------------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        *,
        destination: QueueFormat | str | None,
        body: bytes = b"",
        label: str | None = None,
        priority: int = DEFAULT_PRIORITY,
        source_queue_manager: uuid.UUID = NULL_GUID,
        destination_queue_manager: uuid.UUID = NULL_GUID,
        message_id: int = 0,
        sent_time: int = 0,
        time_to_reach_queue: int = INFINITE,
        time_to_be_received: int = INFINITE,
        recoverable: bool = False,
        journal_positive: bool = False,
        journal_negative: bool = False,
        admin_queue: QueueFormat | str | None = None,
        admin_queue_type: int | None = None,
        response_queue: QueueFormat | str | None = None,
        response_queue_type: int | None = None,
        acknowledgements: int = 0,
        message_class: int = 0,
        correlation_id: bytes = bytes(20),
        body_type: int = 0,
        application_tag: int = 0,
        extension: bytes = b"",
        privacy_level: int = 0,
        hash_algorithm: int = HashAlgorithm.SHA_512,
        encryption_algorithm: int = EncryptionAlgorithm.RC2,
        trace: bool = False,
        routing_count: int = 0,
        connector_type: uuid.UUID | None = None,
        transaction_header: TransactionHeader | None = None,
        security_header: SecurityHeader | None = None,
        debug_header: DebugHeader | None = None,
        srmp_envelope_header: SRMPEnvelopeHeader | None = None,
        compound_message_header: CompoundMessageHeader | None = None,
        soap_header: SoapHeader | None = None,
        multi_queue_format_header: MultiQueueFormatHeader | None = None,
        extension_header: ExtensionHeader | None = None,
        subqueue_header: SubqueueHeader | None = None,
        dead_letter_header: DeadLetterHeader | None = None,
        extended_address_header: ExtendedAddressHeader | None = None,
        session_header: SessionHeader | None = None,
    ) -> Self:
        """A consistent packet from plain values: every flag, size and padding is derived.

        ``destination``/``admin_queue``/``response_queue`` are queue values (``DirectQueueFormatName``
        ...) or direct format name text (``"OS:host\\private$\\q"``, a leading ``DIRECT=`` is
        dropped).  A ``PrivateQueueFormatNameId`` is ambiguous for the admin and response queues
        (source, destination or admin host): pass ``admin_queue_type``/``response_queue_type``
        (``QueueType``) then; ``response_queue_type=QueueType.SAME_AS_ADMINISTRATION_QUEUE`` with no
        ``response_queue`` means "the admin queue".  Rules applied ([MS-MQMQ] 2.2.19.1, 2.2.19.2,
        [MS-MQDMPR] 3.1.7.1.32): a TransactionHeader makes the message recoverable (DM=1) with
        priority 0; ``trace`` sets TR and needs a DebugHeader; ack flags need an admin queue; the SRMP
        headers set AH (they describe a message received over HTTP).
        """
        if not 0 <= priority <= 7:
            raise WireError(f"priority {priority!r} is not 0..7")
        if transaction_header is not None:
            # 2.2.19.1 PR: "MUST be set to a value of 0x0 if the packet contains a transactional message".
            priority = 0
            recoverable = True  # 2.2.19.2 TH: "If this flag is set the DM flag MUST NOT be 0x0."
        dest = _queue(destination)
        dq = _queue_code(dest, None, "destination", (0, 3, 5, 7))
        admin = _queue(admin_queue)
        aq = _queue_code(admin, admin_queue_type, "admin_queue", (0, 2, 3, 5, 6, 7))
        resp = _queue(response_queue)
        rq = _queue_code(resp, response_queue_type, "response_queue", (0, 1, 2, 3, 4, 5, 6, 7))
        if acknowledgements & 0x0F and admin is None:
            # 2.2.19.2 AdminQueue: "MUST be specified if ... any bits are set in [MPH].Flags".
            raise WireError("acknowledgements requested without an admin queue")
        if rq == QueueType.SAME_AS_ADMINISTRATION_QUEUE and admin is None:
            raise WireError("response queue 'same as admin queue' without an admin queue")
        if trace and debug_header is None:
            raise WireError("trace (BaseHeader.Flags.TR) needs a DebugHeader (Flags.DH)")
        if (srmp_envelope_header is None) != (compound_message_header is None):
            raise WireError("SRMPEnvelopeHeader and CompoundMessageHeader go together (UserHeader.Flags.AH)")
        if not 0 <= routing_count <= 0x1D:
            raise WireError(f"routing_count {routing_count!r} is not 0..0x1D")
        if extension_header is None and (subqueue_header or dead_letter_header or extended_address_header):
            extension_header = ExtensionHeader(0, 0)
        if extension_header is not None:
            eflags = extension_header.flags & ~(
                ExtensionHeaderFlags.SQ | ExtensionHeaderFlags.DL | ExtensionHeaderFlags.EA
            )
            remaining = 0
            if subqueue_header is not None:
                eflags |= ExtensionHeaderFlags.SQ
                remaining += len(subqueue_header.encode())
            if dead_letter_header is not None:
                eflags |= ExtensionHeaderFlags.DL
                remaining += len(dead_letter_header.encode())
            if extended_address_header is not None:
                eflags |= ExtensionHeaderFlags.EA
                remaining += len(extended_address_header.encode())
            extension_header = ExtensionHeader(
                remaining, int(eflags), extension_header.header_size, extension_header.reserved
            )
        bflags = priority
        if session_header is not None:
            bflags |= _B_SH
        if debug_header is not None:
            bflags |= _B_DH
        if trace:
            bflags |= _B_TR
        uflags = (
            routing_count
            | (recoverable << 5)
            | (journal_negative << 8)
            | (journal_positive << 9)
            | (dq << 10)
            | (aq << 13)
            | (rq << 16)
            | _U_MP
        )
        if security_header is not None:
            uflags |= _U_SH
        if transaction_header is not None:
            uflags |= _U_TH
        if connector_type is not None:
            uflags |= _U_CQ
        if multi_queue_format_header is not None:
            uflags |= _U_MQ
        if srmp_envelope_header is not None:
            uflags |= _U_AH
        if soap_header is not None:
            uflags |= _U_HH
        if label is not None and (
            "\x00" in label
            or len(label) > MAX_LABEL_CHARS
            or (not label.isascii() and len(label.encode("utf-16-le", "surrogatepass")) > 2 * MAX_LABEL_CHARS)
        ):
            # 2.2.19.3 Label: "label = 0*249(%x0001-FFFF) 0x0000".
            raise WireError(f"label must be at most {MAX_LABEL_CHARS} UTF-16 units with no NUL")
        user = UserHeader._make(
            source_queue_manager,
            destination_queue_manager,
            time_to_be_received,
            sent_time,
            message_id,
            uflags,
            dest,
            admin,
            resp,
            connector_type,
        )
        props = MessagePropertiesHeader._make(
            acknowledgements,
            message_class,
            correlation_id,
            body_type,
            application_tag,
            privacy_level,
            hash_algorithm,
            encryption_algorithm,
            label,
            extension,
            body,
            b"",
            b"",
        )
        size = BASE_HEADER_SIZE + user.size + props.size
        for header in (
            transaction_header,
            security_header,
            debug_header,
            srmp_envelope_header,
            compound_message_header,
            soap_header,
            multi_queue_format_header,
            extension_header,
            subqueue_header,
            dead_letter_header,
            extended_address_header,
        ):
            if header is not None:
                size += len(header.encode())
        return _make(
            cls,
            BaseHeader(bflags, size, time_to_reach_queue),
            user,
            transaction_header,
            security_header,
            props,
            debug_header,
            srmp_envelope_header,
            compound_message_header,
            soap_header,
            multi_queue_format_header,
            extension_header,
            subqueue_header,
            dead_letter_header,
            extended_address_header,
            session_header,
        )

    def with_packet_size(self) -> Self:
        """This packet with BaseHeader.PacketSize set to its encoded size (what ``encode`` writes)."""
        size = len(self.encode())
        if self.session_header is not None:
            size -= SESSION_HEADER_SIZE
        b = self.base_header
        if b.packet_size == size:
            return self
        base = BaseHeader(b.flags, size, b.time_to_reach_queue, b.version_number, b.reserved, b.signature)
        return dataclasses.replace(self, base_header=base)


_M = TypeVar("_M", bound=UserMessage)


def _make(
    cls: type[_M],
    base: BaseHeader,
    user: UserHeader,
    tx: TransactionHeader | None,
    sec: SecurityHeader | None,
    props: MessagePropertiesHeader,
    debug: DebugHeader | None,
    srmp: SRMPEnvelopeHeader | None,
    compound: CompoundMessageHeader | None,
    soap: SoapHeader | None,
    mqf: MultiQueueFormatHeader | None,
    ext: ExtensionHeader | None,
    subq: SubqueueHeader | None,
    dead: DeadLetterHeader | None,
    addr: ExtendedAddressHeader | None,
    session: SessionHeader | None,
) -> _M:
    # The dataclass __init__ without its per-field object.__setattr__ calls (see the class docstring).
    value = _new(cls)
    _setattr(
        value,
        "__dict__",
        {
            "base_header": base,
            "user_header": user,
            "transaction_header": tx,
            "security_header": sec,
            "message_properties_header": props,
            "debug_header": debug,
            "srmp_envelope_header": srmp,
            "compound_message_header": compound,
            "soap_header": soap,
            "multi_queue_format_header": mqf,
            "extension_header": ext,
            "subqueue_header": subq,
            "dead_letter_header": dead,
            "extended_address_header": addr,
            "session_header": session,
        },
    )
    return value


def _presence(flag: int, header: object, name: str, flag_name: str) -> None:
    if bool(flag) != (header is not None):
        state = "set" if flag else "clear"
        raise WireError(f"{flag_name} is {state} but {name} is {'absent' if header is None else 'present'}")


def _queue(value: QueueFormat | str | None) -> QueueFormat | None:
    if isinstance(value, str):
        text = value[7:] if value[:7].upper() == "DIRECT=" else value
        return DirectQueueFormatName(text)
    return value


_IMPLIED_CODE: Final[dict[type, int]] = {
    DirectQueueFormatName: QueueType.DIRECT_QUEUE,
    PublicQueueFormatName: QueueType.PUBLIC_QUEUE,
    PrivateQueueFormatName: QueueType.PRIVATE_QUEUE_ON_OTHER,
}


def _queue_code(value: QueueFormat | None, code: int | None, what: str, allowed: tuple[int, ...]) -> int:
    if code is None:
        if value is None:
            return 0
        implied = _IMPLIED_CODE.get(type(value))
        if implied is None:
            if type(value) is PrivateQueueFormatNameId and what == "destination":
                return QueueType.PRIVATE_QUEUE_ON_DESTINATION
            raise WireError(f"{what}: pass the queue type code for a {type(value).__name__}")
        code = implied
    if code not in allowed:
        raise WireError(f"{what}: queue type code {code} is not allowed here (allowed: {allowed})")
    return code
