"""MQDSPUBLICKEY ([MS-MQMQ] 2.2.1) and MQDSPUBLICKEYS ([MS-MQMQ] 2.2.2): flat byte layouts.

MQDSPUBLICKEYS is the VT_BLOB value of PROPID_QM_ENCRYPT_PKS (238), PROPID_QM_SIGN_PKS (239),
PROPID_QM_SIGN_PK (1202), PROPID_QM_ENCRYPT_PK (1203) and PROPID_S_PSC_SIGNPK (1302).

MQDSPUBLICKEY, little-endian (the spec states no byte order for these diagrams; MSMQ is
little-endian throughout, digest D0.1):

    ulKeyLen u32 | ulProviderLen u32 | ulProviderType u32 | sProviderName | aBuf

MQDSPUBLICKEYS: ``ulLen u32 | cNumofKeys u32 | aPublicKeys``, where ulLen is the size of the
whole structure including its own 8 bytes.  No padding between entries is specified: entries are
packed, and on decode each is walked by its own lengths and the sum is checked against ulLen.

Decisions:

- sProviderName is "a null-terminated Unicode string" whose size in bytes (terminator included)
  is ulProviderLen, so ulProviderLen MUST be even and >= 2 and the last UTF-16 unit MUST be NUL
  (``WireError`` otherwise).  The name is kept without the terminator; any other code units,
  even NULs before the end, are kept, so decode/encode is byte exact.
- ulProviderType "MUST be either PROV_RSA_FULL (1) or PROV_RSA_AES (0x18)": a known value
  decodes to ``ProviderType``; an unknown one is kept as a plain int (like every other enum in
  pymsmq.wire) rather than failing the whole key list.
- aBuf "MUST contain a BLOBHEADER ... aiKeyAlg set to CALG_RSA_KEYX (0xA400)".  This is not
  enforced: the same structure carries *signing* keys (PROPID_QM_SIGN_PKS), for which a
  CryptoAPI key blob says CALG_RSA_SIGN.  ``a_buf`` is kept raw; ``ai_key_alg`` reads the field.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, Final, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure

__all__ = [
    "CALG_RSA_KEYX",
    "MQDSPUBLICKEY",
    "MQDSPUBLICKEYS",
    "MQDSPUBLICKEYS_HEADER_SIZE",
    "MQDSPUBLICKEY_HEADER_SIZE",
    "MQDSPublicKey",
    "MQDSPublicKeys",
    "ProviderType",
]

MQDSPUBLICKEY_HEADER_SIZE: Final = 12
MQDSPUBLICKEYS_HEADER_SIZE: Final = 8
# [MS-MQMQ] 2.2.1: aBuf's BLOBHEADER has "aiKeyAlg ... set to CALG_RSA_KEYX (0x0000a400)".
CALG_RSA_KEYX: Final = 0x0000A400

_KEY_HEADER: Final = struct.Struct("<III")
_KEYS_HEADER: Final = struct.Struct("<II")
_U32: Final = struct.Struct("<I")


class ProviderType(IntEnum):
    """MQDSPUBLICKEY.ulProviderType ([MS-MQMQ] 2.2.1)."""

    PROV_RSA_FULL = 0x00000001
    PROV_RSA_AES = 0x00000018


@dataclass(frozen=True, slots=True)
class MQDSPublicKey(Structure):
    """One public key ([MS-MQMQ] 2.2.1).

    ``ul_provider_type`` is the provider-type code, ``s_provider_name`` the provider name
    (without its NUL) and ``a_buf`` the key blob.  ulKeyLen and ulProviderLen are derived.
    """

    _wire_name: ClassVar[str] = "MQDSPUBLICKEY"

    ul_provider_type: int = ProviderType.PROV_RSA_AES
    s_provider_name: str = ""
    a_buf: bytes = b""

    @property
    def ul_key_len(self) -> int:
        """MQDSPUBLICKEY.ulKeyLen: the size of aBuf in bytes."""
        return len(self.a_buf)

    @property
    def ul_provider_len(self) -> int:
        """MQDSPUBLICKEY.ulProviderLen: bytes of sProviderName including the terminating NUL."""
        return len(self.s_provider_name.encode("utf-16-le", "surrogatepass")) + 2

    @property
    def ai_key_alg(self) -> int | None:
        """BLOBHEADER.aiKeyAlg of aBuf (bytes 4..7), or ``None`` if aBuf is shorter than 8 bytes."""
        if len(self.a_buf) < 8:
            return None
        return int(_U32.unpack_from(self.a_buf, 4)[0])

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one MQDSPUBLICKEY, checking both lengths against the bytes that remain."""
        start = r.pos
        key_len, provider_len, provider_type = r.unpack(_KEY_HEADER, "MQDSPUBLICKEY header")
        if provider_len < 2 or provider_len % 2:
            raise WireError(
                f"MQDSPUBLICKEY.ulProviderLen {provider_len} is not a NUL-terminated UTF-16 size", start + 4
            )
        name_pos = r.pos
        raw_name = r.raw(provider_len, "MQDSPUBLICKEY.sProviderName")
        if raw_name[-2:] != b"\x00\x00":
            raise WireError("MQDSPUBLICKEY.sProviderName is not NUL-terminated", name_pos)
        name = raw_name[:-2].decode("utf-16-le", "surrogatepass")
        a_buf = r.raw(key_len, "MQDSPUBLICKEY.aBuf")
        kind: int = ProviderType(provider_type) if provider_type in (1, 0x18) else provider_type
        return cls(kind, name, a_buf)

    def write(self, w: Writer) -> None:
        """Append the structure; ``WireError`` if a field does not fit its 32-bit slot."""
        name = self.s_provider_name.encode("utf-16-le", "surrogatepass") + b"\x00\x00"
        try:
            w.raw(_KEY_HEADER.pack(len(self.a_buf), len(name), self.ul_provider_type))
        except struct.error as exc:
            raise WireError(f"MQDSPUBLICKEY field out of range: {exc}") from exc
        w.raw(name)
        w.raw(self.a_buf)


@dataclass(frozen=True, slots=True)
class MQDSPublicKeys(Structure):
    """A set of public keys ([MS-MQMQ] 2.2.2); ulLen and cNumofKeys are derived."""

    _wire_name: ClassVar[str] = "MQDSPUBLICKEYS"

    a_public_keys: tuple[MQDSPublicKey, ...] = ()

    @classmethod
    def of(cls, keys: Iterable[MQDSPublicKey]) -> Self:
        """Build from any iterable of keys."""
        return cls(tuple(keys))

    @property
    def c_numof_keys(self) -> int:
        """MQDSPUBLICKEYS.cNumofKeys: the number of entries."""
        return len(self.a_public_keys)

    @property
    def ul_len(self) -> int:
        """MQDSPUBLICKEYS.ulLen: the size of the whole structure in bytes (header included)."""
        return MQDSPUBLICKEYS_HEADER_SIZE + sum(
            MQDSPUBLICKEY_HEADER_SIZE + k.ul_provider_len + k.ul_key_len for k in self.a_public_keys
        )

    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read the structure; its entries must fill exactly ulLen bytes."""
        start = r.pos
        r.need(MQDSPUBLICKEYS_HEADER_SIZE, "MQDSPUBLICKEYS header")
        ul_len, count = _KEYS_HEADER.unpack_from(r.data, start)
        if ul_len < MQDSPUBLICKEYS_HEADER_SIZE:
            raise WireError(f"MQDSPUBLICKEYS.ulLen {ul_len} is smaller than its header", start)
        body = r.sub(ul_len, "MQDSPUBLICKEYS")  # checks ulLen against the bytes that remain
        body.pos += MQDSPUBLICKEYS_HEADER_SIZE
        # Every entry takes at least 14 bytes (12-byte header + a 2-byte NUL name): bound the
        # count by the bytes present before looping, so a huge cNumofKeys fails fast.
        if count * (MQDSPUBLICKEY_HEADER_SIZE + 2) > body.remaining:
            raise WireError(f"MQDSPUBLICKEYS.cNumofKeys {count} cannot fit in ulLen {ul_len}", start + 4)
        keys = tuple(MQDSPublicKey.read(body) for _ in range(count))
        if body.remaining:
            raise WireError(
                f"MQDSPUBLICKEYS.ulLen {ul_len} leaves {body.remaining} bytes after {count} keys", body.pos
            )
        return cls(keys)

    def write(self, w: Writer) -> None:
        """Append the structure with ulLen and cNumofKeys computed from the entries."""
        inner = Writer()
        for key in self.a_public_keys:
            key.write(inner)
        try:
            w.raw(_KEYS_HEADER.pack(MQDSPUBLICKEYS_HEADER_SIZE + len(inner), len(self.a_public_keys)))
        except struct.error as exc:
            raise WireError(f"MQDSPUBLICKEYS too large: {exc}") from exc
        w.raw(inner.buf)


MQDSPUBLICKEY = MQDSPublicKey
MQDSPUBLICKEYS = MQDSPublicKeys
