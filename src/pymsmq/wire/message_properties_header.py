"""MessagePropertiesHeader ([MS-MQMQ] 2.2.19.3): label, class, correlation id, body and the rest.

Layout: Flags u8, LabelLength u8, MessageClass u16, CorrelationID (20), BodyType, ApplicationTag,
MessageSize, AllocationBodySize, PrivacyLevel, HashAlgorithm, EncryptionAlgorithm, ExtensionSize
(u32 each; 56 fixed bytes), Label (LabelLength WCHARs incl. NUL), ExtensionData (ExtensionSize
bytes), MessageBody, padding to a multiple of 4 ("There are no restrictions on the value of the
padding bytes").

Body area (decision on an ambiguity the spec leaves open).  MessageSize is "the size, in bytes, of
the MessageBody field"; AllocationBodySize is "the size ... of the data allocated for the
MessageBody field. This size can be larger than the actual message body size".  This codec takes the
body area on the wire to be AllocationBodySize bytes (the allocation travels with the packet): the
first MessageSize bytes are ``body`` and the rest is kept verbatim as ``allocation_slack``.
AllocationBodySize < MessageSize is rejected.  Encoders normally leave ``allocation_slack`` empty,
so that AllocationBodySize == MessageSize and both readings agree (real traffic does this).
"""

from __future__ import annotations

import codecs
import struct
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer, pad4
from pymsmq.wire._structure import Structure

__all__ = [
    "MAX_LABEL_CHARS",
    "MESSAGE_PROPERTIES_FIXED_SIZE",
    "EncryptionAlgorithm",
    "HashAlgorithm",
    "MessagePropertiesFlags",
    "MessagePropertiesHeader",
    "PrivacyLevel",
]

MESSAGE_PROPERTIES_FIXED_SIZE: Final = 56
# [MS-MQMQ] 2.2.19.3: "label = 0*249(%x0001-FFFF) 0x0000"; LabelLength "valid range from 0x00 to 0xFA".
MAX_LABEL_CHARS: Final = 249
_MAX_LABEL_LENGTH: Final = 0xFA

_FIXED: Final = struct.Struct("<BBH20sIIIIIIII")
_NUL2: Final = b"\x00\x00"
_utf16_decode: Final = codecs.utf_16_le_decode
_ZERO20: Final = bytes(20)
_new: Final = object.__new__
_setattr: Final = object.__setattr__


class MessagePropertiesFlags(IntFlag):
    """MessagePropertiesHeader.Flags: administration acknowledgements requested ([MS-MQMQ] 2.2.19.3)."""

    PA = 0x01  # positive ack when delivered to the destination queue
    PR = 0x02  # positive ack when retrieved by the application
    NA = 0x04  # negative ack when not delivered
    NR = 0x08  # negative ack when not retrieved
    X = 0xF0  # unused (SHOULD NOT be set, MUST be ignored)


class PrivacyLevel(IntEnum):
    """MessagePropertiesHeader.PrivacyLevel ([MS-MQMQ] 2.2.19.3); other values are kept as ints."""

    NONE = 0x00000000
    BASE = 0x00000001  # 40-bit end-to-end encryption
    ENHANCED = 0x00000003  # 128-bit end-to-end encryption
    ADVANCED = 0x00000005  # AES


class HashAlgorithm(IntEnum):
    """MessagePropertiesHeader.HashAlgorithm ([MS-MQMQ] 2.2.19.3); SHA-512 "SHOULD be used"."""

    MD2 = 0x00008001
    MD4 = 0x00008002
    MD5 = 0x00008003
    SHA1 = 0x00008004
    SHA_256 = 0x0000800C
    SHA_512 = 0x0000800E


class EncryptionAlgorithm(IntEnum):
    """MessagePropertiesHeader.EncryptionAlgorithm ([MS-MQMQ] 2.2.19.3)."""

    RC2 = 0x00006602
    RC4 = 0x00006801
    AES_128 = 0x0000660E
    AES_192 = 0x0000660F
    AES_256 = 0x00006610


@dataclass(frozen=True)
class MessagePropertiesHeader(Structure):
    """[MS-MQMQ] 2.2.19.3.

    ``label`` is the Label text without its NUL, or None when LabelLength is 0 (no Label field);
    ``""`` is a Label holding only the NUL (LabelLength 1).  LabelLength, MessageSize,
    AllocationBodySize and ExtensionSize are derived from ``label``, ``body``, ``allocation_slack``
    and ``extension`` (properties ``label_length``, ``message_size``, ``allocation_body_size``,
    ``extension_size``).  ``message_class``, ``body_type`` and the algorithm fields are plain ints
    (compare equal to their IntEnum members) so that values outside the tables survive a round trip.

    Not ``slots=True``: ``read`` builds the instance with one ``__dict__`` assignment instead of
    one ``object.__setattr__`` per field (the UserMessage codec must stay above 100k packets/s).
    """

    flags: int = 0
    message_class: int = 0
    correlation_id: bytes = _ZERO20
    body_type: int = 0
    application_tag: int = 0
    privacy_level: int = PrivacyLevel.NONE
    hash_algorithm: int = HashAlgorithm.SHA_512
    encryption_algorithm: int = EncryptionAlgorithm.RC2
    label: str | None = None
    extension: bytes = b""
    body: bytes = b""
    allocation_slack: bytes = b""
    padding: bytes = field(default=b"", compare=False, repr=False)

    # -- derived length fields --------------------------------------------------------------------

    @property
    def label_length(self) -> int:
        """LabelLength: WCHARs in Label including the NUL (0 when there is no label)."""
        label = self.label
        return 0 if label is None else len(label.encode("utf-16-le", "surrogatepass")) // 2 + 1

    @property
    def message_size(self) -> int:
        """MessageSize: bytes in MessageBody."""
        return len(self.body)

    @property
    def allocation_body_size(self) -> int:
        """AllocationBodySize: bytes allocated for MessageBody (body plus ``allocation_slack``)."""
        return len(self.body) + len(self.allocation_slack)

    @property
    def extension_size(self) -> int:
        """ExtensionSize: bytes in ExtensionData."""
        return len(self.extension)

    @property
    def pa(self) -> bool:
        """Flags.PA: positive acknowledgement on arrival requested."""
        return bool(self.flags & 0x01)

    @property
    def pr(self) -> bool:
        """Flags.PR: positive acknowledgement on receive requested."""
        return bool(self.flags & 0x02)

    @property
    def na(self) -> bool:
        """Flags.NA: negative acknowledgement on arrival failure requested."""
        return bool(self.flags & 0x04)

    @property
    def nr(self) -> bool:
        """Flags.NR: negative acknowledgement on receive failure requested."""
        return bool(self.flags & 0x08)

    @property
    def size(self) -> int:
        """Bytes this header takes on the wire (padding included)."""
        n = MESSAGE_PROPERTIES_FIXED_SIZE + 2 * self.label_length
        n += len(self.extension) + len(self.body) + len(self.allocation_slack)
        return n + pad4(n)

    # -- codec ------------------------------------------------------------------------------------

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the header and its padding (counted from the header start) at the reader's position."""
        start = r.pos
        end = r.end
        if start + MESSAGE_PROPERTIES_FIXED_SIZE > end:
            raise WireError(f"truncated MessagePropertiesHeader: need 56 bytes, {end - start} left", start)
        (
            flags,
            label_length,
            message_class,
            correlation_id,
            body_type,
            app_tag,
            message_size,
            alloc_size,
            privacy,
            hash_alg,
            enc_alg,
            ext_size,
        ) = _FIXED.unpack_from(r.data, start)
        pos = start + MESSAGE_PROPERTIES_FIXED_SIZE
        data = r.data
        if label_length:
            if label_length > _MAX_LABEL_LENGTH:
                raise WireError(f"MessagePropertiesHeader.LabelLength {label_length} exceeds 0xFA", start + 1)
            lend = pos + 2 * label_length
            if lend > end:
                raise WireError("truncated MessagePropertiesHeader.Label", pos)
            if data[lend - 2 : lend] != _NUL2:
                raise WireError("MessagePropertiesHeader.Label is not NUL-terminated", lend - 2)
            text = _utf16_decode(data[pos : lend - 2], "surrogatepass", True)[0]
            if "\x00" in text:
                raise WireError("MessagePropertiesHeader.Label has a NUL inside (ABNF %x0001-FFFF)", pos)
            label: str | None = text
            pos = lend
        else:
            label = None
        if alloc_size < message_size:
            raise WireError(
                f"MessagePropertiesHeader.AllocationBodySize {alloc_size} < MessageSize {message_size}",
                start + 36,
            )
        # Check every length against the bytes left before slicing (no allocation from a length).
        if ext_size > end - pos:
            raise WireError(
                f"MessagePropertiesHeader.ExtensionSize {ext_size} exceeds the packet", start + 52
            )
        extension = data[pos : pos + ext_size] if ext_size else b""
        pos += ext_size
        if alloc_size > end - pos:
            raise WireError(
                f"MessagePropertiesHeader body of {alloc_size} bytes exceeds the packet", start + 32
            )
        body = data[pos : pos + message_size] if message_size else b""
        slack = data[pos + message_size : pos + alloc_size] if alloc_size != message_size else b""
        pos += alloc_size
        n = pad4(pos - start)
        if n:
            if pos + n > end:
                raise WireError("truncated MessagePropertiesHeader padding", pos)
            padding = data[pos : pos + n]
            pos += n
        else:
            padding = b""
        r.pos = pos
        return cls._make(
            flags,
            message_class,
            correlation_id,
            body_type,
            app_tag,
            privacy,
            hash_alg,
            enc_alg,
            label,
            extension,
            body,
            slack,
            padding,
        )

    @classmethod
    def _make(
        cls,
        flags: int,
        message_class: int,
        correlation_id: bytes,
        body_type: int,
        application_tag: int,
        privacy_level: int,
        hash_algorithm: int,
        encryption_algorithm: int,
        label: str | None,
        extension: bytes,
        body: bytes,
        allocation_slack: bytes,
        padding: bytes,
    ) -> Self:
        # The dataclass __init__ in one __dict__ assignment (see the class docstring).
        value = _new(cls)
        _setattr(
            value,
            "__dict__",
            {
                "flags": flags,
                "message_class": message_class,
                "correlation_id": correlation_id,
                "body_type": body_type,
                "application_tag": application_tag,
                "privacy_level": privacy_level,
                "hash_algorithm": hash_algorithm,
                "encryption_algorithm": encryption_algorithm,
                "label": label,
                "extension": extension,
                "body": body,
                "allocation_slack": allocation_slack,
                "padding": padding,
            },
        )
        return value

    def write(self, w: Writer) -> None:
        """Append the header with its padding (kept bytes, else zeros)."""
        label = self.label
        if label is None:
            raw_label = b""
            label_length = 0
        else:
            if "\x00" in label:
                raise WireError("MessagePropertiesHeader.Label must not contain NUL (ABNF %x0001-FFFF)")
            raw_label = label.encode("utf-16-le", "surrogatepass") + _NUL2
            label_length = len(raw_label) // 2
            if label_length > _MAX_LABEL_LENGTH:
                raise WireError(f"label of {label_length - 1} UTF-16 units exceeds {MAX_LABEL_CHARS}")
        if len(self.correlation_id) != 20:
            raise WireError(f"CorrelationID must be 20 bytes, not {len(self.correlation_id)}")
        body = self.body
        message_size = len(body)
        alloc = message_size + len(self.allocation_slack)
        buf = w.buf
        start = len(buf)
        try:
            buf += _FIXED.pack(
                self.flags,
                label_length,
                self.message_class,
                self.correlation_id,
                self.body_type,
                self.application_tag,
                message_size,
                alloc,
                self.privacy_level,
                self.hash_algorithm,
                self.encryption_algorithm,
                len(self.extension),
            )
        except struct.error as exc:
            raise WireError(f"MessagePropertiesHeader field out of range: {exc}") from exc
        buf += raw_label
        buf += self.extension
        buf += body
        buf += self.allocation_slack
        n = pad4(len(buf) - start)
        if n:
            buf += (self.padding + bytes(n))[:n] if self.padding else bytes(n)
