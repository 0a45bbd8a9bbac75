"""SecurityHeader ([MS-MQMQ] 2.2.20.6): sender id, encryption key, signature, certificate, provider.

Present in a UserMessage iff UserHeader.Flags.SH is set.  A 16-byte fixed part gives five sizes;
SecurityData then holds the five items in order, "each field MUST be aligned up to the next
4-byte boundary", and "an item with a size of zero occupies no space":

    length = 16 + align4(SenderIdSize) + align4(EncryptionKeySize) + align4(SignatureSize)
                + align4(SenderCertSize) + align4(ProviderInfoSize)
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer, pad4
from pymsmq.wire._structure import Structure

__all__ = [
    "SECURITY_HEADER_FIXED_SIZE",
    "ProviderInfo",
    "SecurityHeader",
    "SecurityHeaderFlags",
    "SenderIdType",
]

_FIXED: Final = struct.Struct("<HHHHII")
SECURITY_HEADER_FIXED_SIZE: Final = 16
# 2.2.20.6: SenderCertSize "has a valid range from 0x00000000 to a value 0x0000FFFF, inclusive."
_MAX_SENDER_CERT_SIZE: Final = 0xFFFF
_U32: Final = struct.Struct("<I")


class SecurityHeaderFlags(IntFlag):
    """SecurityHeader.Flags ([MS-MQMQ] 2.2.20.6); diagram bit n is mask ``1 << n``."""

    ST = 0x000F  # sender-id type (read with ``sender_id_type``)
    AU = 0x0010  # "authenticated": MUST be 0
    EB = 0x0020  # MessageBody is encrypted
    DE = 0x0040  # the default cryptographic provider is used
    AI = 0x0080  # SecurityData is present
    AS = 0x0F00  # authentication signature type: MUST be 0
    X = 0xF000  # X12..X15: unused, MUST be ignored


class SenderIdType(IntEnum):
    """SecurityHeader.Flags.ST ([MS-MQMQ] 2.2.20.6)."""

    NONE = 0x0  # no SecurityID; SenderIdSize MUST be 0
    SID = 0x1  # SecurityID is the sender application's SID ([MS-DTYP] 2.4.2.2)
    QM_GUID = 0x2  # SecurityID is the sending queue manager's GUID


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """SecurityData.ProviderInfo ([MS-MQMQ] 2.2.20.6): the alternative cryptographic provider.

    ProviderType (u32) then ProviderName, a NUL-terminated UTF-16 string.  ``extension`` keeps
    any bytes that ProviderInfoSize covers after the terminator (the spec draws none; they are
    kept verbatim so that such a header re-encodes exactly).
    """

    provider_type: int
    provider_name: str
    extension: bytes = b""

    @classmethod
    def parse(cls, data: bytes, offset: int = 0) -> Self:
        """Parse the ProviderInfo item (``offset`` is only used in error messages)."""
        r = Reader(data)
        if len(data) < 6:
            raise WireError(f"SecurityHeader.ProviderInfo of {len(data)} bytes is too short", offset)
        provider_type = r.u32("ProviderInfo.ProviderType")
        try:
            name = r.utf16z("ProviderInfo.ProviderName")
        except WireError as exc:
            raise WireError("SecurityHeader.ProviderInfo.ProviderName is not NUL-terminated", offset) from exc
        return cls(provider_type, name, r.rest())

    def to_bytes(self) -> bytes:
        """The item's bytes (ProviderInfoSize of them)."""
        if "\x00" in self.provider_name:
            raise WireError("ProviderInfo.ProviderName cannot contain NUL")
        try:
            prefix = _U32.pack(self.provider_type)
        except struct.error as exc:
            raise WireError(f"ProviderInfo.ProviderType out of range: {exc}") from exc
        return prefix + self.provider_name.encode("utf-16-le", "surrogatepass") + b"\x00\x00" + self.extension


@dataclass(frozen=True, slots=True)
class SecurityHeader(Structure):
    """Security information of a message ([MS-MQMQ] 2.2.20.6).

    The five size fields are not stored: they are the lengths of ``security_id``,
    ``encryption_key``, ``signature``, ``sender_cert`` and the encoded ``provider_info``.
    ``flags`` is kept whole (AU/AS/X bits are neither rejected nor cleared; AI is written as
    given: encoders should set it whenever SecurityData is non-empty).  ``padding`` holds the
    alignment bytes after the five items, concatenated in order (``b""``: all zeros).

    Decoding rejects only what makes the layout unusable or is stated as a MUST about the sizes:
    all five sizes zero, SenderCertSize above 0xFFFF, a nonzero SenderIdSize with ST = 0, sizes
    that run past the input, and a ProviderInfo without its NUL-terminated name.
    """

    flags: int = SecurityHeaderFlags.AI
    security_id: bytes = b""
    encryption_key: bytes = b""
    signature: bytes = b""
    sender_cert: bytes = b""
    provider_info: ProviderInfo | None = None
    padding: bytes = b""

    @property
    def sender_id_type(self) -> int:
        """Flags.ST (see ``SenderIdType``)."""
        return self.flags & SecurityHeaderFlags.ST

    @property
    def body_encrypted(self) -> bool:
        """Flags.EB: MessagePropertiesHeader.MessageBody is encrypted."""
        return bool(self.flags & SecurityHeaderFlags.EB)

    @property
    def default_provider(self) -> bool:
        """Flags.DE: the default cryptographic provider was used."""
        return bool(self.flags & SecurityHeaderFlags.DE)

    @property
    def security_data_present(self) -> bool:
        """Flags.AI."""
        return bool(self.flags & SecurityHeaderFlags.AI)

    @property
    def sender_qm_guid(self) -> uuid.UUID | None:
        """SecurityID as the sending QM's GUID when ST = 2 and it is 16 bytes long."""
        if self.sender_id_type == SenderIdType.QM_GUID and len(self.security_id) == 16:
            return uuid.UUID(bytes_le=self.security_id)
        return None

    @property
    def sender_id_size(self) -> int:
        """SenderIdSize."""
        return len(self.security_id)

    @property
    def encryption_key_size(self) -> int:
        """EncryptionKeySize."""
        return len(self.encryption_key)

    @property
    def signature_size(self) -> int:
        """SignatureSize."""
        return len(self.signature)

    @property
    def sender_cert_size(self) -> int:
        """SenderCertSize."""
        return len(self.sender_cert)

    @property
    def provider_info_size(self) -> int:
        """ProviderInfoSize."""
        return 0 if self.provider_info is None else len(self.provider_info.to_bytes())

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read a SecurityHeader with its SecurityData (always a multiple of 4 bytes)."""
        start = r.pos
        flags, sid_size, key_size, sig_size, cert_size, prov_size = r.unpack(_FIXED, "SecurityHeader")
        if not (sid_size or key_size or sig_size or cert_size or prov_size):
            # 2.2.20.6: "At least one of the fields SenderIdSize, ... ProviderInfoSize MUST be nonzero."
            raise WireError("SecurityHeader: all five item sizes are zero", start)
        if cert_size > _MAX_SENDER_CERT_SIZE:
            raise WireError(f"SecurityHeader.SenderCertSize {cert_size} exceeds 0xFFFF", start + 8)
        if sid_size and flags & SecurityHeaderFlags.ST == SenderIdType.NONE:
            # ST = 0: "the SenderIdSize field MUST be set to 0x0000".
            raise WireError("SecurityHeader: SenderIdSize is nonzero but Flags.ST is 0", start + 2)
        sizes = (sid_size, key_size, sig_size, cert_size, prov_size)
        # Check the whole SecurityData against the input before slicing any item.
        r.need(sum(n + pad4(n) for n in sizes), "SecurityHeader.SecurityData")
        items: list[bytes] = []
        pads = b""
        for n in sizes:
            items.append(r.raw(n))
            if n & 3:
                pads += r.raw(pad4(n))
        provider = ProviderInfo.parse(items[4], r.pos - len(items[4])) if prov_size else None
        padding = pads if pads.strip(b"\x00") else b""
        return cls(flags, items[0], items[1], items[2], items[3], provider, padding)

    def write(self, w: Writer) -> None:
        """Append this header and its SecurityData."""
        provider = b"" if self.provider_info is None else self.provider_info.to_bytes()
        items = (self.security_id, self.encryption_key, self.signature, self.sender_cert, provider)
        sizes = [len(item) for item in items]
        if not any(sizes):
            raise WireError("SecurityHeader: at least one item MUST be nonempty")
        if sizes[3] > _MAX_SENDER_CERT_SIZE:
            raise WireError(f"SecurityHeader.SenderCertSize {sizes[3]} exceeds 0xFFFF")
        if sizes[0] and self.sender_id_type == SenderIdType.NONE:
            raise WireError("SecurityHeader: a SecurityID needs Flags.ST 1 or 2")
        pad_total = sum(pad4(n) for n in sizes)
        if self.padding and len(self.padding) != pad_total:
            raise WireError(f"SecurityHeader.padding has {len(self.padding)} bytes, items need {pad_total}")
        try:
            w.raw(_FIXED.pack(self.flags, *sizes))
        except struct.error as exc:
            raise WireError(f"SecurityHeader field out of range: {exc}") from exc
        pads = self.padding or bytes(pad_total)
        at = 0
        for item, n in zip(items, sizes, strict=True):
            w.raw(item)
            gap = pad4(n)
            if gap:
                w.raw(pads[at : at + gap])
                at += gap
