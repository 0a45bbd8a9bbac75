"""UserMessage optional headers ([MS-MQMQ] 2.2.20.1-2.2.20.8): spec-table bytes, round trips, fuzzing."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire.optional_headers import (
    DebugHeader,
    DebugQueueType,
    MQFAddressHeader,
    MQFHeaderId,
    MQFSignatureHeader,
    MultiQueueFormatHeader,
    SoapHeader,
    TransactionHeader,
    TransactionHeaderFlags,
)
from pymsmq.wire.packet_types import (
    MQFDirectQueueFormatName,
    MQFDistributionQueueFormatName,
    MQFFormatNameElement,
    PrivateQueueFormatName,
    PublicQueueFormatName,
    TxSequenceID,
)
from pymsmq.wire.security_header import ProviderInfo, SecurityHeader, SecurityHeaderFlags, SenderIdType

GUID = uuid.UUID("12345678-9abc-def0-0123-456789abcdef")
GUID_LE = bytes.fromhex("78563412bc9af0de0123456789abcdef")


def test_guid_layout_constant() -> None:
    assert GUID.bytes_le == GUID_LE


# ---------------------------------------------------------------------------------------------
# 2.2.20.5 TransactionHeader


def test_transaction_header_with_connector_guid() -> None:
    # Flags: CG|FA|FM|LM (bits 0-3), ID 0x12345 (bits 4-23), X1 (bit 24, ignored but kept).
    flags = 0x1 | 0x2 | 0x4 | 0x8 | 0x12345 << 4 | 0x01000000
    raw = struct.pack("<IIIII", flags, 7, 0x5F000000, 3, 2) + GUID_LE
    th = TransactionHeader.decode(raw)
    assert th.flags == 0x0112345F
    assert th.has_connector_qm_guid and th.final_ack_required and th.first_message and th.last_message
    assert th.transaction_id == 0x12345
    assert th.tx_sequence_id == TxSequenceID(7, 0x5F000000)
    assert (th.tx_sequence_number, th.previous_tx_sequence_number) == (3, 2)
    assert th.connector_qm_guid == GUID
    assert th.size == 36 == len(raw)
    assert th.encode() == raw


def test_transaction_header_without_connector_guid() -> None:
    raw = struct.pack("<IIIII", TransactionHeaderFlags.FM, 1, 2, 1, 0)
    th = TransactionHeader.decode(raw)
    assert th.connector_qm_guid is None and th.size == 20
    assert th.first_message and not th.last_message and not th.final_ack_required
    assert th.encode() == raw
    with pytest.raises(WireError, match="trailing"):
        TransactionHeader.decode(raw + GUID_LE)  # 16 extra bytes without CG
    with pytest.raises(WireError, match="ConnectorQMGuid"):
        TransactionHeader.decode(struct.pack("<IIIII", TransactionHeaderFlags.CG, 1, 2, 1, 0))
    with pytest.raises(WireError, match=r"iff Flags\.CG"):
        TransactionHeader(flags=0, connector_qm_guid=GUID).encode()
    with pytest.raises(WireError, match=r"iff Flags\.CG"):
        TransactionHeader(flags=TransactionHeaderFlags.CG).encode()
    with pytest.raises(WireError):
        TransactionHeader(tx_sequence_number=1 << 32).encode()


# ---------------------------------------------------------------------------------------------
# 2.2.20.8 DebugHeader


def test_debug_header_layouts() -> None:
    public = bytes.fromhex("0100 0000") + GUID_LE
    dh = DebugHeader.decode(public)
    assert dh.queue_type == DebugQueueType.PUBLIC and dh.has_queue_identifier
    assert dh.queue_identifier == GUID and dh.encode() == public

    none = bytes.fromhex("fc ff cd ab")  # QT 0, X2..X15 all set (ignored, kept), Reserved 0xABCD
    dh = DebugHeader.decode(none)
    assert (dh.flags, dh.reserved, dh.queue_identifier, dh.has_queue_identifier) == (
        0xFFFC,
        0xABCD,
        None,
        False,
    )
    assert dh.encode() == none

    for qt in (2, 3):
        with pytest.raises(WireError, match="QT"):
            DebugHeader.decode(bytes([qt, 0, 0, 0]) + GUID_LE)
    with pytest.raises(WireError, match="QueueIdentifier"):
        DebugHeader.decode(bytes.fromhex("0100 0000") + GUID_LE[:15])
    with pytest.raises(WireError):
        DebugHeader(flags=1).encode()
    with pytest.raises(WireError):
        DebugHeader(flags=0, queue_identifier=GUID).encode()


# ---------------------------------------------------------------------------------------------
# 2.2.20.7 SoapHeader

_H = "<h/>\x00".encode("utf-16-le")  # 5 WCHARs: 8 + 10 = 18, BodySectionID would sit at offset 18
_B = "<b/>\x00".encode("utf-16-le")


def test_soap_header_aligned_body_section() -> None:
    raw = (
        bytes.fromhex("2003 0000 05000000")
        + _H
        + b"\x00\x00"
        + bytes.fromhex("8403 0000 05000000")
        + _B
        + bytes(2)
    )
    sh = SoapHeader.decode(raw)
    assert (sh.header_section_id, sh.body_section_id) == (0x0320, 0x0384)
    assert (sh.header, sh.body, sh.header_text, sh.body_text) == ("<h/>\x00", "<b/>\x00", "<h/>", "<b/>")
    assert (sh.header_data_length, sh.body_data_length) == (5, 5)
    assert sh.header_padding is None and sh.padding == b""
    assert len(raw) == 40 and sh.encode() == raw
    assert SoapHeader("<h/>\x00", "<b/>\x00").encode() == raw


def test_soap_header_unaligned_and_nonzero_padding() -> None:
    packed = bytes.fromhex("2003 0000 05000000") + _H + bytes.fromhex("8403 0000 05000000") + _B
    sh = SoapHeader.decode(packed)
    assert sh.header_padding == b"" and sh.body_text == "<b/>"
    assert len(packed) == 36 and sh.encode() == packed

    garbage = bytes.fromhex("2003 1100 05000000") + _H + b"\x99\x98" + bytes.fromhex("8403 2200 05000000")
    garbage += _B + b"\x01\x02"
    sh = SoapHeader.decode(garbage)
    assert (sh.reserved, sh.reserved1, sh.header_padding, sh.padding) == (
        0x11,
        0x22,
        b"\x99\x98",
        b"\x01\x02",
    )
    assert sh.encode() == garbage


def test_soap_header_rules() -> None:
    with pytest.raises(WireError, match="HeaderSectionID"):
        SoapHeader.decode(bytes.fromhex("2103 0000 00000000 8403 0000 00000000"))
    with pytest.raises(WireError, match="BodySectionID"):
        SoapHeader.decode(bytes.fromhex("2003 0000 00000000 8503 0000 00000000"))
    with pytest.raises(WireError, match="truncated"):
        SoapHeader.decode(bytes.fromhex("2003 0000 ffffff7f"))
    assert SoapHeader.decode(bytes.fromhex("2003 0000 00000000 8403 0000 00000000")) == SoapHeader("", "")
    with pytest.raises(WireError):
        SoapHeader("ab\x00", "", header_padding=b"\x84\x03").encode()  # would read back as "no padding"
    with pytest.raises(WireError):
        SoapHeader("a\x00", "", header_padding=b"").encode()  # 8 + 4 is aligned: no gap to describe
    with pytest.raises(WireError):
        SoapHeader(header_section_id=0).encode()


# ---------------------------------------------------------------------------------------------
# 2.2.20.6 SecurityHeader


def test_security_header_items_are_each_4_aligned() -> None:
    signature = b"\x01\x02\x03\x04\x05"
    provider = struct.pack("<I", 1) + "Prov\x00".encode("utf-16-le")  # 14 bytes
    flags = SenderIdType.QM_GUID | SecurityHeaderFlags.AI  # DE clear: ProviderInfo names the provider
    raw = (
        struct.pack("<HHHHII", flags, 16, 0, 5, 0, 14)
        + GUID_LE  # SecurityID 16..32
        + signature  # Signature 32..37
        + b"\xaa\xbb\xcc"  # alignment 37..40 (any value)
        + provider  # ProviderInfo 40..54
        + b"\x00\x00"  # alignment 54..56
    )
    sh = SecurityHeader.decode(raw)
    assert sh.sender_id_type == SenderIdType.QM_GUID and sh.sender_qm_guid == GUID
    assert sh.security_data_present and not sh.body_encrypted and not sh.default_provider
    assert (sh.sender_id_size, sh.encryption_key_size, sh.signature_size, sh.sender_cert_size) == (
        16,
        0,
        5,
        0,
    )
    assert sh.provider_info_size == 14
    assert sh.signature == signature and sh.encryption_key == b"" and sh.sender_cert == b""
    assert sh.provider_info == ProviderInfo(1, "Prov")
    assert sh.padding == b"\xaa\xbb\xcc\x00\x00"
    assert sh.encode() == raw
    fresh = SecurityHeader(flags, GUID_LE, signature=signature, provider_info=ProviderInfo(1, "Prov"))
    assert fresh.encode() == raw[:37] + bytes(3) + raw[40:]


def test_security_header_key_and_cert_with_provider_extension() -> None:
    flags = SenderIdType.SID | SecurityHeaderFlags.EB | SecurityHeaderFlags.AI
    sid = bytes.fromhex("010100000000000512000000")  # S-1-5-18, 12 bytes
    provider = struct.pack("<I", 24) + "P\x00".encode("utf-16-le") + b"\x07"  # 1 byte after the name
    raw = struct.pack("<HHHHII", flags, 12, 4, 0, 2, 9) + sid + b"KEY!" + b"C1\x00\x00" + provider + bytes(3)
    sh = SecurityHeader.decode(raw)
    assert sh.body_encrypted and sh.sender_id_type == SenderIdType.SID and sh.sender_qm_guid is None
    assert (sh.security_id, sh.encryption_key, sh.sender_cert) == (sid, b"KEY!", b"C1")
    assert sh.provider_info == ProviderInfo(24, "P", b"\x07")
    assert sh.encode() == raw


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (struct.pack("<HHHHII", 0x80, 0, 0, 0, 0, 0), "all five"),
        (struct.pack("<HHHHII", 0x80, 0, 0, 0, 0x10000, 0), "SenderCertSize"),
        (struct.pack("<HHHHII", 0x80, 4, 0, 0, 0, 0) + b"abcd", "ST is 0"),
        (struct.pack("<HHHHII", 0x82, 0, 0, 0, 0, 0xFFFFFFFF), "truncated"),
        (struct.pack("<HHHHII", 0x82, 0, 0, 0, 0, 5) + b"\x01\x00\x00\x00\x41" + bytes(3), "too short"),
        (struct.pack("<HHHHII", 0x82, 0, 0, 0, 0, 8) + b"\x01\x00\x00\x00\x41\x00\x42\x00", "NUL"),
        (struct.pack("<HHHHII", 0x82, 0, 0, 3, 0, 0) + b"abc", "truncated"),  # alignment byte missing
    ],
)
def test_security_header_rules(raw: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        SecurityHeader.decode(raw)


def test_security_header_encoder_checks() -> None:
    with pytest.raises(WireError, match="at least one"):
        SecurityHeader().encode()
    with pytest.raises(WireError, match="ST"):
        SecurityHeader(flags=0, security_id=b"x").encode()
    with pytest.raises(WireError, match="0xFFFF"):
        SecurityHeader(sender_cert=bytes(0x10000)).encode()
    with pytest.raises(WireError, match="padding"):
        SecurityHeader(signature=b"abc", padding=b"\x01\x02").encode()
    with pytest.raises(WireError):
        SecurityHeader(signature=bytes(0x10000)).encode()
    with pytest.raises(WireError):
        ProviderInfo(1, "a\x00b").to_bytes()


# ---------------------------------------------------------------------------------------------
# 2.2.20.1-2.2.20.3 MultiQueueFormatHeader, MQFAddressHeader, MQFSignatureHeader


def _direct(name: str) -> MQFFormatNameElement:
    return MQFFormatNameElement(MQFDirectQueueFormatName(name))


def test_mqf_address_header_bytes() -> None:
    # Fixed part 12; element 1: FormatType 3 at 12, direct name at 14 (2-aligned) "OS:h\q" + NUL
    # = 14 bytes -> 28; element 2: FormatType 2 at 28, 2 alignment bytes, GUID + u32 at 32..52.
    elements = (_direct("OS:h\\q"), MQFFormatNameElement(PrivateQueueFormatName(GUID, 5)))
    body = struct.pack("<H", 3) + "OS:h\\q\x00".encode("utf-16-le") + struct.pack("<H", 2) + b"\x00\x00"
    body += GUID_LE + struct.pack("<I", 5)
    raw = struct.pack("<IHHI", 52, 0x0064, 0, 2) + body
    header = MQFAddressHeader.decode(raw)
    assert header.header_id == MQFHeaderId.DESTINATION and header.element_count == 2
    assert header.format_name_list == elements
    assert header.encode() == raw
    assert MQFAddressHeader(MQFHeaderId.DESTINATION, elements).encode() == raw


def test_mqf_address_header_size_with_and_without_padding() -> None:
    # One direct element "a": 12 + 2 + 4 = 18 bytes, then 2 bytes of padding.
    body = struct.pack("<H", 3) + "a\x00".encode("utf-16-le")
    counted = struct.pack("<IHHI", 20, 0x00C8, 0, 1) + body + b"\x00\x00"
    uncounted = struct.pack("<IHHI", 18, 0x00C8, 0, 1) + body + b"\x5a\x5a"
    a = MQFAddressHeader.decode(counted)
    b = MQFAddressHeader.decode(uncounted)
    assert a.header_size_counts_padding and not b.header_size_counts_padding
    assert a.format_name_list == b.format_name_list == (_direct("a"),)
    assert b.padding == b"\x5a\x5a"
    assert a.encode() == counted and b.encode() == uncounted
    with pytest.raises(WireError, match="does not end"):
        MQFAddressHeader.decode(struct.pack("<IHHI", 24, 0x00C8, 0, 1) + body + bytes(6))
    with pytest.raises(WireError, match="below 12"):
        MQFAddressHeader.decode(struct.pack("<IHHI", 8, 0x0064, 0, 0))
    with pytest.raises(WireError, match="HeaderID"):
        MQFAddressHeader.decode(struct.pack("<IHHI", 12, 0x0065, 0, 0))
    with pytest.raises(WireError, match="ElementCount"):
        MQFAddressHeader.decode(struct.pack("<IHHI", 16, 0x0064, 0, 0xFFFFFFFF) + bytes(4))
    with pytest.raises(WireError, match="FormatType"):
        MQFAddressHeader.decode(struct.pack("<IHHI", 16, 0x0064, 0, 1) + bytes(4))


def test_multi_queue_format_header_bytes() -> None:
    # FormatType 6, 2 alignment bytes, the distribution list GUID: 12 + 4 + 16 = 32 bytes.
    destination = struct.pack("<IHHI", 32, 0x0064, 0, 1) + struct.pack("<HH", 6, 0) + GUID_LE
    admin = struct.pack("<IHHI", 12, 0x00C8, 0, 0)
    response = struct.pack("<IHHI", 32, 0x012C, 0, 1) + struct.pack("<HH", 1, 0) + GUID_LE
    signature = struct.pack("<HHI", 0x015E, 0, 3) + b"xyz" + b"\x00"
    raw = destination + admin + response + signature
    mqf = MultiQueueFormatHeader.decode(raw)
    assert mqf.destination.format_name_list == (MQFFormatNameElement(MQFDistributionQueueFormatName(GUID)),)
    assert mqf.administration.element_count == 0 and mqf.administration.header_id == MQFHeaderId.ADMIN
    assert mqf.response.format_name_list == (MQFFormatNameElement(PublicQueueFormatName(GUID)),)
    assert mqf.signature.signature == b"xyz" and mqf.signature.size == 3 and mqf.signature.id == 0x015E
    assert mqf.encode() == raw
    assert MultiQueueFormatHeader().encode() == (
        struct.pack("<IHHI", 12, 0x64, 0, 0) + struct.pack("<IHHI", 12, 0xC8, 0, 0)
    ) + struct.pack("<IHHI", 12, 0x12C, 0, 0) + struct.pack("<HHI", 0x15E, 0, 0)
    with pytest.raises(WireError, match="0x015E"):
        MQFSignatureHeader.decode(struct.pack("<HHI", 0x015F, 0, 0))
    with pytest.raises(WireError):
        MQFSignatureHeader(id=1).encode()


# ---------------------------------------------------------------------------------------------
# Hypothesis

u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
guids = st.uuids()
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


def _pad(draw: st.DrawFn, n: int) -> bytes:
    """Padding of ``n`` bytes as the decoder reports it: b"" for zeros, else the exact bytes."""
    if not n:
        return b""
    pad = draw(st.binary(min_size=n, max_size=n))
    return pad if pad.strip(b"\x00") else b""


@st.composite
def transaction_headers(draw: st.DrawFn) -> TransactionHeader:
    flags = draw(u32)
    guid = draw(guids) if flags & TransactionHeaderFlags.CG else None
    return TransactionHeader(flags, TxSequenceID(draw(u32), draw(u32)), draw(u32), draw(u32), guid)


@st.composite
def debug_headers(draw: st.DrawFn) -> DebugHeader:
    flags = draw(u16) & ~0x2  # QT 0 or 1
    return DebugHeader(flags, draw(u16), draw(guids) if flags & 1 else None)


def _units(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


@st.composite
def soap_headers(draw: st.DrawFn) -> SoapHeader:
    header, body = draw(text), draw(text)
    header_padding: bytes | None = None
    if _units(header) % 2:  # 8 + 2 * odd is 2 mod 4: a gap before BodySectionID
        choice = draw(st.sampled_from(["zero", "none", "bytes"]))
        if choice == "none":
            header_padding = b""
        elif choice == "bytes":
            header_padding = draw(
                st.binary(min_size=2, max_size=2).filter(lambda b: b.strip(b"\x00") and b != b"\x84\x03")
            )
    end = 16 + 2 * (_units(header) + _units(body))
    if _units(header) % 2 and header_padding != b"":
        end += 2
    return SoapHeader(
        header, body, draw(u16), draw(u16), header_padding=header_padding, padding=_pad(draw, -end & 3)
    )


def _items_padding(draw: st.DrawFn, sizes: list[int]) -> bytes:
    n = sum(-s & 3 for s in sizes)
    return _pad(draw, n)


provider_infos = st.builds(ProviderInfo, u32, text.filter(lambda s: "\x00" not in s), st.binary(max_size=6))


@st.composite
def security_headers(draw: st.DrawFn) -> SecurityHeader:
    flags = draw(u16)
    security_id = draw(st.binary(max_size=30)) if flags & 0xF else b""
    key, sig, cert = draw(st.binary(max_size=20)), draw(st.binary(max_size=20)), draw(st.binary(max_size=20))
    provider = draw(st.none() | provider_infos)
    sizes = [
        len(security_id),
        len(key),
        len(sig),
        len(cert),
        0 if provider is None else len(provider.to_bytes()),
    ]
    if not any(sizes):
        sig = b"s"
        sizes[2] = 1
    return SecurityHeader(flags, security_id, key, sig, cert, provider, _items_padding(draw, sizes))


mqf_elements = st.one_of(
    st.builds(PublicQueueFormatName, guids),
    st.builds(PrivateQueueFormatName, guids, u32),
    st.builds(MQFDirectQueueFormatName, text.filter(lambda s: "\x00" not in s)),
    st.builds(MQFDistributionQueueFormatName, guids),
).map(MQFFormatNameElement)


@st.composite
def mqf_address_headers(draw: st.DrawFn, header_id: int | None = None) -> MQFAddressHeader:
    elements = tuple(draw(st.lists(mqf_elements, max_size=4)))
    value = MQFAddressHeader(
        draw(st.sampled_from(list(MQFHeaderId))) if header_id is None else header_id, elements, draw(u16)
    )
    w = Writer()
    for element in elements:
        element.write(w, -12)
    unpadded = 12 + len(w)
    gap = -unpadded & 3
    counts = draw(st.booleans()) if gap else True
    return MQFAddressHeader(value.header_id, elements, value.reserved, _pad(draw, gap), counts)


@st.composite
def mqf_signature_headers(draw: st.DrawFn) -> MQFSignatureHeader:
    signature = draw(st.binary(max_size=20))
    return MQFSignatureHeader(signature, reserved=draw(u16), padding=_pad(draw, -len(signature) & 3))


multi_queue_headers = st.builds(
    MultiQueueFormatHeader,
    mqf_address_headers(MQFHeaderId.DESTINATION),
    mqf_address_headers(MQFHeaderId.ADMIN),
    mqf_address_headers(MQFHeaderId.RESPONSE),
    mqf_signature_headers(),
)

ALL = [
    (TransactionHeader, transaction_headers()),
    (DebugHeader, debug_headers()),
    (SoapHeader, soap_headers()),
    (SecurityHeader, security_headers()),
    (MQFAddressHeader, mqf_address_headers()),
    (MQFSignatureHeader, mqf_signature_headers()),
    (MultiQueueFormatHeader, multi_queue_headers),
]
IDS = [c.__name__ for c, _ in ALL]


@pytest.mark.parametrize(("cls", "strategy"), ALL, ids=IDS)
@given(data=st.data())
def test_round_trip(cls: Any, strategy: st.SearchStrategy[Any], data: st.DataObject) -> None:
    value = data.draw(strategy)
    raw = value.encode()
    assert len(raw) % 4 == 0
    decoded = cls.decode(raw)
    assert decoded == value
    assert decoded.encode() == raw
    r = Reader(b"\xee" * 8 + raw + b"\xff" * 3, 8)
    assert cls.read(r) == value and r.pos == 8 + len(raw)


@pytest.mark.parametrize("cls", [c for c, _ in ALL], ids=IDS)
@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes_give_value_or_wire_error(cls: Any, raw: bytes) -> None:
    try:
        value = cls.decode(raw)
    except WireError:
        return
    assert isinstance(value, cls)
    encoded = value.encode()
    assert encoded[: len(raw)] == raw and len(encoded) - len(raw) < 4


@pytest.mark.parametrize(("cls", "strategy"), ALL, ids=IDS)
@given(data=st.data())
def test_truncation_and_garbage(cls: Any, strategy: st.SearchStrategy[Any], data: st.DataObject) -> None:
    raw = data.draw(strategy).encode()
    cut = data.draw(st.integers(0, len(raw) - 1))
    try:
        cls.decode(raw[:cut])
    except WireError:
        pass
    with pytest.raises(WireError):
        cls.decode(raw + data.draw(st.binary(min_size=1, max_size=8)))


@pytest.mark.parametrize(("cls", "strategy"), ALL, ids=IDS)
@given(data=st.data())
def test_mutated_encodings(cls: Any, strategy: st.SearchStrategy[Any], data: st.DataObject) -> None:
    raw = bytearray(data.draw(strategy).encode())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    try:
        value = cls.decode(bytes(raw))
    except WireError:
        return
    assert isinstance(value, cls)
