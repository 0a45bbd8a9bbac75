"""MQUSERSIGNCERT ([MS-MQMQ] 2.2.22) and MQUSERSIGNCERTS ([MS-MQMQ] 2.2.21).

MQUSERSIGNCERTS is the VT_BLOB value of PROPID_U_SIGN_CERT (702): a little-endian
``CertificateCount u32`` followed by that many MQUSERSIGNCERT entries packed back to back (no
padding is specified).  MQUSERSIGNCERT:

    Digest (16 bytes) | Identifier GUID (16) | CertificateLength u32 | Certificate

(PROPID_MQU_SIGN_CERT and PROPID_COM_SIGN_CERT hold one raw X.509 certificate, not this.)

Decision: Digest "is computed as the MD5 hash of the user's X.509 certificate" -- the decoder
does not recompute it (a directory blob is data, not a claim pymsmq can act on); use
``digest_matches()`` to check, and ``MQUserSignCert.for_certificate`` to build an entry with a
correct digest.  The decoder keeps whatever 16 bytes it finds, so decode/encode is byte exact.
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import NULL_GUID, Reader, Writer
from pymsmq.wire._structure import Structure

__all__ = [
    "MQUSERSIGNCERT",
    "MQUSERSIGNCERTS",
    "MQUSERSIGNCERT_HEADER_SIZE",
    "MQUserSignCert",
    "MQUserSignCerts",
]

MQUSERSIGNCERT_HEADER_SIZE: Final = 36

_U32: Final = struct.Struct("<I")


def _md5(data: bytes) -> bytes:
    return hashlib.md5(data, usedforsecurity=False).digest()


@dataclass(frozen=True, slots=True)
class MQUserSignCert(Structure):
    """One registered signing certificate ([MS-MQMQ] 2.2.22); CertificateLength is derived."""

    _wire_name: ClassVar[str] = "MQUSERSIGNCERT"

    digest: bytes = bytes(16)
    identifier: uuid.UUID = NULL_GUID
    certificate: bytes = b""

    @classmethod
    def for_certificate(cls, certificate: bytes, identifier: uuid.UUID) -> Self:
        """An entry whose Digest is the MD5 of ``certificate`` (RFC 1321), as the spec requires."""
        return cls(_md5(certificate), identifier, bytes(certificate))

    @property
    def certificate_length(self) -> int:
        """MQUSERSIGNCERT.CertificateLength: the size of Certificate in bytes."""
        return len(self.certificate)

    def digest_matches(self) -> bool:
        """Whether Digest is the MD5 of Certificate."""
        return self.digest == _md5(self.certificate)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one entry; CertificateLength is checked against the bytes that remain."""
        digest = r.raw(16, "MQUSERSIGNCERT.Digest")
        identifier = r.guid("MQUSERSIGNCERT.Identifier")
        length = r.u32("MQUSERSIGNCERT.CertificateLength")
        return cls(digest, identifier, r.raw(length, "MQUSERSIGNCERT.Certificate"))

    def write(self, w: Writer) -> None:
        """Append the entry; ``WireError`` unless Digest is 16 bytes and the certificate fits."""
        if len(self.digest) != 16:
            raise WireError(f"MQUSERSIGNCERT.Digest is {len(self.digest)} bytes, MUST be 16")
        if len(self.certificate) > 0xFFFFFFFF:
            raise WireError("MQUSERSIGNCERT.Certificate does not fit a 32-bit length")
        w.raw(self.digest)
        w.guid(self.identifier)
        w.raw(_U32.pack(len(self.certificate)))
        w.raw(self.certificate)


@dataclass(frozen=True, slots=True)
class MQUserSignCerts(Structure):
    """A user's signing-certificate list ([MS-MQMQ] 2.2.21); CertificateCount is derived."""

    _wire_name: ClassVar[str] = "MQUSERSIGNCERTS"

    certificates: tuple[MQUserSignCert, ...] = ()

    @classmethod
    def of(cls, certificates: Iterable[MQUserSignCert]) -> Self:
        """Build from any iterable of entries."""
        return cls(tuple(certificates))

    @property
    def certificate_count(self) -> int:
        """MQUSERSIGNCERTS.CertificateCount."""
        return len(self.certificates)

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read CertificateCount and that many entries."""
        start = r.pos
        count = r.u32("MQUSERSIGNCERTS.CertificateCount")
        # Each entry is at least 36 bytes: refuse an impossible count before looping.
        if count * MQUSERSIGNCERT_HEADER_SIZE > r.remaining:
            raise WireError(f"MQUSERSIGNCERTS.CertificateCount {count} cannot fit in the bytes left", start)
        return cls(tuple(MQUserSignCert.read(r) for _ in range(count)))

    def write(self, w: Writer) -> None:
        """Append CertificateCount and the entries."""
        w.u32(len(self.certificates))
        for cert in self.certificates:
            cert.write(w)


MQUSERSIGNCERT = MQUserSignCert
MQUSERSIGNCERTS = MQUserSignCerts
