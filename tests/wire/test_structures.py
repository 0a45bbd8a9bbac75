"""[MS-MQMQ] 2.2.1-2.2.5, 2.2.14, 2.2.17, 2.2.21-2.2.27: vectors both ways, round trips, fuzz.

None of the shipped captures (tests/vectors) carries these structures -- they live in directory
and management property values -- so the byte vectors here are hand-built from the spec's
field tables, one commented field per line.
"""

from __future__ import annotations

import hashlib
import ipaddress
import struct
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire.large_integer import (
    ULargeInteger,
    VariantBool,
    VariantBoolValue,
    from_variant_bool,
    to_variant_bool,
)
from pymsmq.wire.public_key import CALG_RSA_KEYX, MQDSPublicKey, MQDSPublicKeys, ProviderType
from pymsmq.wire.security import (
    MQCNAccessMask,
    MQEntAccessMask,
    MQQMAccessMask,
    MQQueueAccessMask,
    MQSiteAccessMask,
    SecurityInformation,
)
from pymsmq.wire.sequence_info import SequenceInfo
from pymsmq.wire.ta_address import AddressType, TAAddress, decode_ta_addresses, encode_ta_addresses
from pymsmq.wire.user_sign_cert import MQUserSignCert, MQUserSignCerts

GUID = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
GUID_LE = bytes.fromhex("d1587355 5091 9595 4997b6e611ea26c6".replace(" ", ""))
AES_PROVIDER = "Microsoft Enhanced RSA and AES Cryptographic Provider"


def _u32(n: int) -> bytes:
    return struct.pack("<I", n)


def _public_key_blob(modulus: bytes) -> bytes:
    # CryptoAPI PUBLICKEYBLOB (digest D2.1, EXT): BLOBHEADER then RSAPUBKEY then the modulus.
    return (
        b"\x06\x02\x00\x00"  # bType PUBLICKEYBLOB, bVersion 2, reserved
        + _u32(CALG_RSA_KEYX)  # aiKeyAlg
        + b"RSA1"  # RSAPUBKEY.magic 0x31415352
        + _u32(len(modulus) * 8)  # bitlen
        + _u32(65537)  # pubexp
        + modulus
    )


# ---------------------------------------------------------------------------------------------
# MQDSPUBLICKEY / MQDSPUBLICKEYS ([MS-MQMQ] 2.2.1, 2.2.2)


def test_public_key_vector_both_ways() -> None:
    a_buf = _public_key_blob(bytes(range(64)))
    name = (AES_PROVIDER + "\0").encode("utf-16-le")
    data = (
        _u32(len(a_buf))  # ulKeyLen
        + _u32(len(name))  # ulProviderLen: bytes including the NUL (108)
        + _u32(0x18)  # ulProviderType PROV_RSA_AES
        + name  # sProviderName
        + a_buf  # aBuf
    )
    key = MQDSPublicKey.decode(data)
    assert key.ul_provider_type is ProviderType.PROV_RSA_AES
    assert key.s_provider_name == AES_PROVIDER
    assert key.ul_provider_len == 108 == len(name)
    assert key.ul_key_len == len(a_buf) == 84
    assert key.a_buf == a_buf
    assert key.ai_key_alg == 0xA400
    assert key.encode() == data
    assert MQDSPublicKey(ProviderType.PROV_RSA_AES, AES_PROVIDER, a_buf).encode() == data


def test_public_keys_vector_both_ways() -> None:
    k1 = MQDSPublicKey(ProviderType.PROV_RSA_FULL, "P", b"\xaa\xbb")
    k2 = MQDSPublicKey(ProviderType.PROV_RSA_AES, "", b"")
    k1_bytes = _u32(2) + _u32(4) + _u32(1) + b"P\x00\x00\x00" + b"\xaa\xbb"  # 18 bytes
    k2_bytes = _u32(0) + _u32(2) + _u32(0x18) + b"\x00\x00"  # 14 bytes
    data = _u32(8 + 18 + 14) + _u32(2) + k1_bytes + k2_bytes  # ulLen includes its own 8 bytes
    keys = MQDSPublicKeys.decode(data)
    assert keys.a_public_keys == (k1, k2)
    assert (keys.ul_len, keys.c_numof_keys) == (40, 2)
    assert keys.encode() == data
    assert MQDSPublicKeys.of([k1, k2]).encode() == data
    assert MQDSPublicKeys().encode() == _u32(8) + _u32(0)
    assert k2.ai_key_alg is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_u32(0) + _u32(3) + _u32(1) + b"a\x00\x00", "ulProviderLen"),  # odd size
        (_u32(0) + _u32(0) + _u32(1), "ulProviderLen"),  # no room for the NUL
        (_u32(0) + _u32(2) + _u32(1) + b"a\x00", "NUL"),  # not terminated
        (_u32(5) + _u32(2) + _u32(1) + b"\x00\x00" + b"abc", "aBuf"),  # ulKeyLen past the end
        (_u32(0) + _u32(0x7FFFFFFE) + _u32(1) + b"\x00\x00", "sProviderName"),
    ],
)
def test_public_key_rejects(data: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        MQDSPublicKey.decode(data)


def test_public_keys_length_rules() -> None:
    entry = _u32(0) + _u32(2) + _u32(1) + b"\x00\x00"
    with pytest.raises(WireError, match="leaves"):  # ulLen larger than the entries
        MQDSPublicKeys.decode(_u32(8 + 14 + 2) + _u32(1) + entry + b"\x00\x00")
    with pytest.raises(WireError, match="truncated"):  # ulLen smaller than the entries
        MQDSPublicKeys.decode(_u32(8 + 14) + _u32(1) + _u32(0) + _u32(4) + _u32(1) + b"P\x00\x00\x00")
    with pytest.raises(WireError, match="smaller than its header"):
        MQDSPublicKeys.decode(_u32(4) + _u32(0))
    with pytest.raises(WireError, match="cannot fit"):
        MQDSPublicKeys.decode(_u32(8 + 14) + _u32(0xFFFFFFFF) + entry)
    with pytest.raises(WireError, match="trailing"):
        MQDSPublicKeys.decode(_u32(8) + _u32(0) + b"\x00")


def test_public_key_unknown_provider_type_is_kept() -> None:
    key = MQDSPublicKey.decode(_u32(0) + _u32(2) + _u32(7) + b"\x00\x00")
    assert key.ul_provider_type == 7 and not isinstance(key.ul_provider_type, ProviderType)
    assert key.encode() == _u32(0) + _u32(2) + _u32(7) + b"\x00\x00"
    with pytest.raises(WireError):
        MQDSPublicKey(1 << 32, "", b"").encode()


# ---------------------------------------------------------------------------------------------
# SECURITY_INFORMATION and access masks ([MS-MQMQ] 2.2.3, 2.2.23-2.2.27; composites per digest D2.32)


def test_security_information_values() -> None:
    assert [int(f) for f in SecurityInformation] == [1, 2, 4, 8]
    both = SecurityInformation.OWNER_SECURITY_INFORMATION | SecurityInformation.DACL_SECURITY_INFORMATION
    assert both == 5


@pytest.mark.parametrize(
    ("member", "value"),
    [
        (MQQMAccessMask.MQSEC_RECEIVE_DEADLETTER_MESSAGE, 0x00000003),
        (MQQMAccessMask.MQSEC_RECEIVE_JOURNAL_QUEUE_MESSAGE, 0x000000C0),
        (MQQMAccessMask.MQSEC_MACHINE_GENERIC_READ, 0x000200E3),
        (MQQMAccessMask.MQSEC_MACHINE_GENERIC_WRITE, 0x00020024),
        (MQQMAccessMask.MQSEC_MACHINE_GENERIC_ALL, 0x000F00F7),
        (MQQMAccessMask.MQSEC_MACHINE_WORLD_RIGHTS, 0x00020020),
        (MQQueueAccessMask.MQSEC_RECEIVE_MESSAGE, 0x00000003),
        (MQQueueAccessMask.MQSEC_RECEIVE_JOURNAL_MESSAGE, 0x0000000A),
        (MQQueueAccessMask.MQSEC_QUEUE_GENERIC_READ, 0x0002002B),
        (MQQueueAccessMask.MQSEC_QUEUE_GENERIC_WRITE, 0x00020024),
        (MQQueueAccessMask.MQSEC_QUEUE_GENERIC_ALL, 0x000F003F),
        (MQSiteAccessMask.MQSEC_SITE_GENERIC_READ, 0x00020020),
        (MQSiteAccessMask.MQSEC_SITE_GENERIC_WRITE, 0x00020024),
        (MQSiteAccessMask.MQSEC_SITE_GENERIC_ALL, 0x000F0037),
        (MQEntAccessMask.MQSEC_ENTERPRISE_GENERIC_READ, 0x00020021),
        (MQEntAccessMask.MQSEC_ENTERPRISE_GENERIC_WRITE, 0x00020027),
        (MQEntAccessMask.MQSEC_ENTERPRISE_GENERIC_ALL, 0x000F0037),
        (MQCNAccessMask.MQSEC_CN_GENERIC_READ, 0x00020020),
        (MQCNAccessMask.SEC_CN_GENERIC_ALL, 0x000F0031),
        (MQCNAccessMask.MQSEC_CN_GENERIC_ALL, 0x000F0031),
    ],
)
def test_composite_access_masks(member: int, value: int) -> None:
    assert int(member) == value


def test_single_bit_access_rights() -> None:
    expected = {
        MQQMAccessMask: [0x1, 0x2, 0x4, 0x10, 0x20, 0x40, 0x80, 0x10000, 0x20000, 0x40000, 0x80000],
        MQQueueAccessMask: [0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x10000, 0x20000, 0x40000, 0x80000],
        MQSiteAccessMask: [0x1, 0x2, 0x4, 0x10, 0x20, 0x10000, 0x20000, 0x40000, 0x80000],
        MQEntAccessMask: [0x1, 0x2, 0x4, 0x10, 0x20, 0x10000, 0x20000, 0x40000, 0x80000],
        MQCNAccessMask: [0x1, 0x10, 0x20, 0x10000, 0x20000, 0x40000, 0x80000],
    }
    for mask, bits in expected.items():
        assert [int(m) for m in mask] == bits, mask
    assert MQQueueAccessMask.MQSEC_WRITE_MESSAGE == 4 and MQQueueAccessMask.MQSEC_DELETE_QUEUE == 0x10000
    # Unnamed bits survive (KEEP boundary), so a mask from a descriptor re-encodes unchanged.
    assert int(MQQueueAccessMask(0x80000003)) == 0x80000003


# ---------------------------------------------------------------------------------------------
# TA_ADDRESS ([MS-MQMQ] 2.2.4)

TA_VECTORS = [
    # AddressLength, AddressType, Address
    (b"\x04\x00" + b"\x01\x00" + b"\x0a\x01\x02\x03", TAAddress.ip("10.1.2.3")),
    (b"\x04\x00" + b"\x02\x00" + b"\xc0\xa8\x00\x01", TAAddress.ip("192.168.0.1", ras=True)),
    (
        b"\x0a\x00" + b"\x03\x00" + b"\x00\x00\x00\x2a" + b"\x00\x11\x22\x33\x44\x55",
        TAAddress.ipx(b"\x00\x00\x00\x2a", b"\x00\x11\x22\x33\x44\x55"),
    ),
    (b"\x10\x00" + b"\x05\x00" + GUID_LE, TAAddress.foreign(GUID)),
]


@pytest.mark.parametrize(("data", "value"), TA_VECTORS)
def test_ta_address_vectors_both_ways(data: bytes, value: TAAddress) -> None:
    assert TAAddress.decode(data) == value
    assert value.encode() == data
    assert value.address_length == len(data) - 4


def test_ta_address_typed_views() -> None:
    ip = TAAddress.decode(TA_VECTORS[0][0])
    assert ip.address_type is AddressType.IP_ADDRESS_TYPE
    assert ip.ip_address == ipaddress.IPv4Address("10.1.2.3")
    assert ip.ipx_netnum is None and ip.foreign_id is None
    ipx = TAAddress.decode(TA_VECTORS[2][0])
    assert (ipx.ipx_netnum, ipx.ipx_nodenum) == (b"\x00\x00\x00\x2a", b"\x00\x11\x22\x33\x44\x55")
    assert ipx.ip_address is None
    assert TAAddress.decode(TA_VECTORS[3][0]).foreign_id == GUID


def test_ta_address_list_blob() -> None:
    blob = b"".join(data for data, _ in TA_VECTORS)
    addresses = decode_ta_addresses(blob)
    assert addresses == tuple(value for _, value in TA_VECTORS)
    assert encode_ta_addresses(addresses) == blob
    assert decode_ta_addresses(b"") == ()
    with pytest.raises(WireError):
        decode_ta_addresses(blob + b"\x04\x00\x01\x00\x0a")


def test_ta_address_rules() -> None:
    with pytest.raises(WireError, match="MUST be 4"):
        TAAddress.decode(b"\x05\x00\x01\x00" + bytes(5))
    with pytest.raises(WireError, match="MUST be 16"):
        TAAddress(AddressType.FOREIGN_ADDRESS_TYPE, bytes(4)).encode()
    with pytest.raises(WireError):
        TAAddress.ip("300.1.1.1")
    with pytest.raises(WireError):
        TAAddress.ipx(b"\x00", b"\x00")
    # Type 4 is unassigned: kept as a plain int with the record's own length.
    odd = TAAddress.decode(b"\x03\x00\x04\x00abc")
    assert odd.address_type == 4 and not isinstance(odd.address_type, AddressType)
    assert odd.address == b"abc" and odd.encode() == b"\x03\x00\x04\x00abc"


# ---------------------------------------------------------------------------------------------
# SEQUENCE_INFO ([MS-MQMQ] 2.2.5.1), ULARGE_INTEGER (2.2.17), VARIANT_BOOL (2.2.14)


def test_sequence_info_vector_both_ways() -> None:
    data = (
        b"\xfe\xff\xff\xff\xff\xff\xff\xff"  # SeqID -2 (signed 64-bit)
        + b"\x02\x00\x00\x00"  # SeqNo 2
        + b"\x01\x00\x00\x00"  # PrevNo 1
    )
    value = SequenceInfo(seq_id=-2, seq_no=2, prev_no=1)
    assert SequenceInfo.decode(data) == value
    assert value.encode() == data
    with pytest.raises(WireError):
        SequenceInfo(seq_no=-1).encode()
    with pytest.raises(WireError):
        SequenceInfo(seq_id=1 << 63).encode()


def test_ularge_integer_vector_both_ways() -> None:
    data = bytes.fromhex("0807060504030201")
    assert ULargeInteger.decode(data) == ULargeInteger(0x0102030405060708)
    assert ULargeInteger(0x0102030405060708).encode() == data
    with pytest.raises(WireError):
        ULargeInteger(1 << 64).encode()
    with pytest.raises(WireError):
        ULargeInteger(-1).encode()


def test_variant_bool() -> None:
    assert VariantBool.VARIANT_TRUE == 0xFFFF and VariantBool.VARIANT_FALSE == 0
    assert to_variant_bool(True) == 0xFFFF and to_variant_bool(False) == 0
    assert from_variant_bool(0xFFFF) and from_variant_bool(-1) and not from_variant_bool(0)
    assert from_variant_bool(1)  # undefined values read as true ...
    with pytest.raises(WireError):  # ... unless strict
        from_variant_bool(1, strict=True)
    with pytest.raises(WireError):
        from_variant_bool(0x10000)
    true = VariantBoolValue.decode(b"\xff\xff")
    assert true.value and bool(true) and true.is_canonical and true.encode() == b"\xff\xff"
    assert VariantBoolValue.of(False).encode() == b"\x00\x00"
    odd = VariantBoolValue.decode(b"\x01\x00")
    assert odd.value and not odd.is_canonical and odd.encode() == b"\x01\x00"
    with pytest.raises(WireError):
        VariantBoolValue.decode(b"\x01\x00", strict=True)
    with pytest.raises(WireError):
        VariantBoolValue(0x10000).encode()


# ---------------------------------------------------------------------------------------------
# MQUSERSIGNCERT / MQUSERSIGNCERTS ([MS-MQMQ] 2.2.21, 2.2.22)


def test_user_sign_certs_vector_both_ways() -> None:
    cert = b"\x30\x82\x00\x04fake"  # the codec does not parse X.509
    digest = hashlib.md5(cert).digest()
    entry = digest + GUID_LE + _u32(len(cert)) + cert  # Digest, Identifier, CertificateLength, Certificate
    data = _u32(2) + entry + entry  # CertificateCount
    certs = MQUserSignCerts.decode(data)
    one = MQUserSignCert.for_certificate(cert, GUID)
    assert certs.certificates == (one, one)
    assert certs.certificate_count == 2
    assert one.certificate_length == 8 and one.digest_matches()
    assert MQUserSignCert.decode(entry) == one
    assert certs.encode() == data
    assert MQUserSignCerts.of([one]).encode() == _u32(1) + entry
    assert not MQUserSignCert(bytes(16), GUID, cert).digest_matches()


def test_user_sign_cert_rules() -> None:
    with pytest.raises(WireError, match="cannot fit"):
        MQUserSignCerts.decode(_u32(2) + bytes(36))
    with pytest.raises(WireError, match="Certificate"):
        MQUserSignCert.decode(bytes(32) + _u32(10) + b"short")
    with pytest.raises(WireError, match="Digest"):
        MQUserSignCert(b"\x00", GUID, b"").encode()
    with pytest.raises(WireError, match="trailing"):
        MQUserSignCerts.decode(_u32(0) + b"\x00")


# ---------------------------------------------------------------------------------------------
# Hypothesis: value -> encode -> decode == value, for every structure

u32 = st.integers(0, 0xFFFFFFFF)
guids = st.uuids()
names = st.text(st.characters(codec="utf-16", exclude_categories=("Cs",)), max_size=20)
keys = st.builds(MQDSPublicKey, st.one_of(st.sampled_from(ProviderType), u32), names, st.binary(max_size=64))
ta_addresses = st.one_of(
    st.builds(TAAddress.ip, st.ip_addresses(v=4), ras=st.booleans()),
    st.builds(TAAddress.ipx, st.binary(min_size=4, max_size=4), st.binary(min_size=6, max_size=6)),
    st.builds(TAAddress.foreign, guids),
    st.builds(
        TAAddress, st.integers(0, 0xFFFF).filter(lambda t: t not in (1, 2, 3, 5)), st.binary(max_size=40)
    ),
)
sign_certs = st.builds(MQUserSignCert, st.binary(min_size=16, max_size=16), guids, st.binary(max_size=64))

ROUND_TRIPS: list[tuple[st.SearchStrategy[object], Callable[[bytes], object]]] = [
    (keys, MQDSPublicKey.decode),
    (st.builds(MQDSPublicKeys.of, st.lists(keys, max_size=4)), MQDSPublicKeys.decode),
    (ta_addresses, TAAddress.decode),
    (
        st.builds(SequenceInfo, st.integers(-(1 << 63), (1 << 63) - 1), u32, u32),
        SequenceInfo.decode,
    ),
    (st.builds(ULargeInteger, st.integers(0, (1 << 64) - 1)), ULargeInteger.decode),
    (st.builds(VariantBoolValue, st.integers(0, 0xFFFF)), VariantBoolValue.decode),
    (sign_certs, MQUserSignCert.decode),
    (st.builds(MQUserSignCerts.of, st.lists(sign_certs, max_size=4)), MQUserSignCerts.decode),
]
DECODERS: list[Callable[[bytes], object]] = [decode for _, decode in ROUND_TRIPS] + [decode_ta_addresses]


@pytest.mark.parametrize(("strategy", "decode"), ROUND_TRIPS, ids=lambda x: getattr(x, "__qualname__", "st"))
@given(data=st.data())
def test_round_trip(
    strategy: st.SearchStrategy[object], decode: Callable[[bytes], object], data: st.DataObject
) -> None:
    value = data.draw(strategy)
    encoded = value.encode()  # type: ignore[attr-defined]
    assert decode(encoded) == value
    assert decode(encoded).encode() == encoded  # type: ignore[attr-defined]


@given(st.lists(ta_addresses, max_size=5))
def test_ta_address_list_round_trip(addresses: list[TAAddress]) -> None:
    assert decode_ta_addresses(encode_ta_addresses(addresses)) == tuple(addresses)


# ---------------------------------------------------------------------------------------------
# Fuzz: any bytes, truncations and trailing garbage give a value or WireError, nothing else


def _decode_or_wire_error(decode: Callable[[bytes], object], data: bytes) -> object | None:
    try:
        value = decode(data)
    except WireError:
        return None
    return value


@pytest.mark.parametrize("decode", DECODERS, ids=lambda d: d.__qualname__)
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes(decode: Callable[[bytes], object], data: bytes) -> None:
    value = _decode_or_wire_error(decode, data)
    if value is not None and hasattr(value, "encode"):
        assert value.encode() == data  # whatever decodes re-encodes byte for byte


@pytest.mark.parametrize(("strategy", "decode"), ROUND_TRIPS, ids=lambda x: getattr(x, "__qualname__", "st"))
@given(data=st.data())
def test_truncation_and_trailing_bytes(
    strategy: st.SearchStrategy[object], decode: Callable[[bytes], object], data: st.DataObject
) -> None:
    encoded: bytes = data.draw(strategy).encode()  # type: ignore[attr-defined]
    cut = data.draw(st.integers(0, max(len(encoded) - 1, 0)))
    if cut < len(encoded):
        with pytest.raises(WireError):
            decode(encoded[:cut])
    garbage = data.draw(st.binary(min_size=1, max_size=8))
    with pytest.raises(WireError):
        decode(encoded + garbage)
