"""[MS-MQMQ] 2.2.18.1 packet data types: vectors both ways, Hypothesis round trips, fuzz."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire.packet_types import (
    XACTUOW,
    DirectQueueFormatName,
    MessageIdentifier,
    MQFDirectQueueFormatName,
    MQFDistributionQueueFormatName,
    MQFFormatNameElement,
    MQFFormatType,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueType,
    TxSequenceID,
    guid_from_le,
    queue_format_class,
    read_queue_format,
    write_queue_format,
)

# [MS-MQQB] 4.1.7 SourceQueueManager bytes; [MS-DTYP] rendering per the digest (D0.3).
GUID_BYTES = bytes.fromhex("D1587355509195954997B6E611EA26C6")
GUID = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")

u32 = st.integers(0, 0xFFFFFFFF)
guids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
# Names: any UTF-16 code units but NUL (surrogates included; kept by surrogatepass).
names = st.text(st.characters(min_codepoint=1, max_codepoint=0x10FFFF), max_size=40)


# -- vectors ---------------------------------------------------------------------------------------


def test_guid_layout_is_ms_dtyp_not_netmon() -> None:
    assert guid_from_le(GUID_BYTES) == GUID
    assert guid_from_le(GUID_BYTES) != uuid.UUID("C626EA11-E6B6-9749-9595-9150557358D1")
    assert guid_from_le(bytes(16)) == uuid.UUID(int=0)
    with pytest.raises(WireError):
        guid_from_le(b"short")


def test_tx_sequence_id_vector() -> None:
    # digest D7.4 #6: 01 00 00 00 02 00 00 00 -> Ordinal 1, TimeStamp 2, key 0x0000000200000001.
    raw = bytes.fromhex("0100000002000000")
    value = TxSequenceID.decode(raw)
    assert value == TxSequenceID(ordinal=1, timestamp=2)
    assert value.key == 0x0000000200000001 == int.from_bytes(raw, "little")
    assert value.encode() == raw
    assert TxSequenceID.from_key(value.key) == value


def test_tx_sequence_id_orders_by_timestamp_then_ordinal() -> None:
    assert TxSequenceID(ordinal=0xFFFFFFFF, timestamp=1) < TxSequenceID(ordinal=0, timestamp=2)
    assert TxSequenceID(ordinal=2, timestamp=5) > TxSequenceID(ordinal=1, timestamp=5)
    assert TxSequenceID(1, 1) <= TxSequenceID(1, 1) and TxSequenceID(1, 1) >= TxSequenceID(1, 1)
    with pytest.raises(WireError):
        TxSequenceID(2**32, 0).encode()
    with pytest.raises(WireError):
        TxSequenceID.from_key(2**64)


def test_message_identifier_vector() -> None:
    # digest D7.4 #7: the GUID above + ordinal 2286 -> GUID bytes then EE 08 00 00.
    raw = GUID_BYTES + bytes.fromhex("EE080000")
    value = MessageIdentifier.decode(raw)
    assert value == MessageIdentifier(GUID, 2286)
    assert value.encode() == raw
    assert str(value) == "{557358D1-9150-9595-4997-B6E611EA26C6}\\2286"
    with pytest.raises(WireError):
        MessageIdentifier.decode(raw[:19])
    with pytest.raises(WireError):
        MessageIdentifier.decode(raw + b"\x00")
    with pytest.raises(WireError):
        MessageIdentifier(GUID, -1).encode()


def test_xactuow_keeps_bytes_verbatim() -> None:
    value = XACTUOW.decode(GUID_BYTES)
    assert value.rgb == GUID_BYTES
    assert value.guid == GUID
    assert XACTUOW.from_guid(GUID) == value
    assert value.encode() == GUID_BYTES
    with pytest.raises(WireError):
        XACTUOW(b"\x00" * 15).encode()


def test_fixed_queue_formats_vectors() -> None:
    assert PrivateQueueFormatNameId.decode(bytes.fromhex("04000000")) == PrivateQueueFormatNameId(4)
    assert PrivateQueueFormatNameId(0x12345678).encode() == bytes.fromhex("78563412")
    assert PublicQueueFormatName.decode(GUID_BYTES) == PublicQueueFormatName(GUID)
    assert PublicQueueFormatName(GUID).encode() == GUID_BYTES
    raw = GUID_BYTES + bytes.fromhex("07000000")
    assert PrivateQueueFormatName.decode(raw) == PrivateQueueFormatName(GUID, 7)
    assert PrivateQueueFormatName(GUID, 7).encode() == raw
    assert [PrivateQueueFormatNameId(1).size, PublicQueueFormatName(GUID).size] == [4, 16]
    assert PrivateQueueFormatName(GUID, 1).size == 20
    with pytest.raises(WireError):
        PrivateQueueFormatNameId(2**32).encode()
    with pytest.raises(WireError):
        PublicQueueFormatName("not a uuid").encode()  # type: ignore[arg-type]


# digest D7.4 #4: DirectQueueFormatName encodings (field starting 4-aligned).
DIRECT_VECTORS = [
    (
        "OS:host\\private$\\queue",
        "2e004f0053003a0068006f00730074005c00700072006900760061007400650024005c00710075006500750065000000",
    ),
    ("OS:.\\qqq", "12004f0053003a002e005c007100710071000000"),
    ("TCP:1.2.3.4\\q", "1c005400430050003a0031002e0032002e0033002e0034005c00710000000000"),
    ("OS:m\\q", "0e004f0053003a006d005c0071000000"),
]


@pytest.mark.parametrize(("text", "hexbytes"), DIRECT_VECTORS)
def test_direct_queue_format_name_vectors(text: str, hexbytes: str) -> None:
    raw = bytes.fromhex(hexbytes)
    value = DirectQueueFormatName.decode(raw)
    assert value.direct_format_name == text
    assert value.encode() == raw
    assert value.size == len(raw)
    assert DirectQueueFormatName(text).encode() == raw


def test_direct_queue_format_name_keeps_padding_bytes() -> None:
    raw = bytes.fromhex("1c005400430050003a0031002e0032002e0033002e0034005c0071000000") + b"\xab\xcd"
    value = DirectQueueFormatName.decode(raw)
    assert value.padding == b"\xab\xcd"
    assert value.encode() == raw
    assert value == DirectQueueFormatName("TCP:1.2.3.4\\q")  # padding carries no meaning


def test_direct_queue_format_name_padding_is_relative_to_base() -> None:
    # The name takes 2 + 28 = 30 bytes.  Written 2 bytes into the buffer, it ends at 32: aligned
    # relative to base 0 (no padding), but 30 bytes from base 2 (2 padding bytes).
    w = Writer()
    w.raw(b"\x00\x00")
    DirectQueueFormatName("TCP:1.2.3.4\\q").write(w, base=0)
    assert len(w) == 32
    w2 = Writer()
    w2.raw(b"\x00\x00")
    DirectQueueFormatName("TCP:1.2.3.4\\q").write(w2, base=2)
    assert len(w2) == 34
    r = Reader(w2.getvalue(), 2)
    assert DirectQueueFormatName.read(r, base=2).direct_format_name == "TCP:1.2.3.4\\q"
    assert r.remaining == 0
    r = Reader(w.getvalue(), 2)
    assert DirectQueueFormatName.read(r, base=0).padding == b""
    assert r.remaining == 0


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x01",
        bytes.fromhex("0000"),  # Count 0: no NUL
        bytes.fromhex("03004100"),  # odd Count
        bytes.fromhex("040041004100") + bytes(2),  # not NUL-terminated
        bytes.fromhex("0600410000004100"),  # NUL inside
        bytes.fromhex("0a004100"),  # Count beyond the data
        bytes.fromhex("04004100000000"),  # padding cut short
        bytes.fromhex("ffff") + b"A\x00",  # huge Count
    ],
)
def test_direct_queue_format_name_rejects(raw: bytes) -> None:
    with pytest.raises(WireError):
        DirectQueueFormatName.decode(raw)


def test_direct_queue_format_name_encoder_checks() -> None:
    with pytest.raises(WireError):
        DirectQueueFormatName("a\x00b").encode()
    with pytest.raises(WireError):
        DirectQueueFormatName("x" * 0x8000).encode()


def test_queue_type_table() -> None:
    # [MS-MQMQ] 2.2.19.2 tables.
    assert [queue_format_class(c) for c in range(8)] == [
        None,
        None,
        PrivateQueueFormatNameId,
        PrivateQueueFormatNameId,
        PrivateQueueFormatNameId,
        PublicQueueFormatName,
        PrivateQueueFormatName,
        DirectQueueFormatName,
    ]
    assert QueueType.DIRECT_QUEUE == 7 and QueueType.SAME_AS_ADMINISTRATION_QUEUE == 1
    with pytest.raises(WireError):
        queue_format_class(8)
    r = Reader(bytes.fromhex("04000000"))
    assert read_queue_format(r, 3) == PrivateQueueFormatNameId(4)
    assert read_queue_format(Reader(b""), 1) is None
    w = Writer()
    write_queue_format(w, 5, PublicQueueFormatName(GUID))
    assert w.getvalue() == GUID_BYTES
    with pytest.raises(WireError):
        write_queue_format(Writer(), 5, PrivateQueueFormatNameId(1))
    with pytest.raises(WireError):
        write_queue_format(Writer(), 0, PrivateQueueFormatNameId(1))
    with pytest.raises(WireError):
        write_queue_format(Writer(), 7, None)


# -- MQFFormatNameElement ([MS-MQMQ] 2.2.18.1.4) -----------------------------------------------------


def test_mqf_element_vectors() -> None:
    # Private: FormatType 2, 2 alignment bytes, GUID, u32 (digest D2.18.4: 24 bytes).
    private = MQFFormatNameElement(PrivateQueueFormatName(GUID, 9))
    raw = bytes.fromhex("02000000") + GUID_BYTES + bytes.fromhex("09000000")
    assert private.encode() == raw
    assert MQFFormatNameElement.decode(raw) == private
    assert private.format_type == MQFFormatType.PRIVATE
    # Distribution list: FormatType 6, 2 alignment bytes, GUID (20 bytes).
    dl = MQFFormatNameElement(MQFDistributionQueueFormatName(GUID))
    assert dl.encode() == bytes.fromhex("06000000") + GUID_BYTES
    # Public: aligned like the others (decision, see the class docstring).
    pub = MQFFormatNameElement(PublicQueueFormatName(GUID))
    assert pub.encode() == bytes.fromhex("01000000") + GUID_BYTES
    # Direct: no count, NUL-terminated, starts right after FormatType (2-aligned).
    direct = MQFFormatNameElement(MQFDirectQueueFormatName("OS:a\\q"))
    raw = bytes.fromhex("03004f0053003a0061005c0071000000")
    assert direct.encode() == raw
    assert MQFFormatNameElement.decode(raw) == direct


def test_mqf_element_alignment_after_a_direct_element() -> None:
    # A direct element of odd char count leaves the next element 2 mod 4: its GUID needs no pad.
    first = MQFFormatNameElement(MQFDirectQueueFormatName("ab"))  # 2 + 6 = 8 bytes
    second = MQFFormatNameElement(MQFDirectQueueFormatName("a"))  # 2 + 4 = 6 -> next at 14
    third = MQFFormatNameElement(MQFDistributionQueueFormatName(GUID))
    w = Writer()
    for e in (first, second, third):
        e.write(w)
    data = w.getvalue()
    assert len(data) == 8 + 6 + 2 + 16  # FormatType at 14..16, GUID at 16 (already aligned)
    r = Reader(data)
    assert [MQFFormatNameElement.read(r) for _ in range(3)] == [first, second, third]
    assert r.remaining == 0


def test_mqf_element_keeps_alignment_bytes() -> None:
    raw = bytes.fromhex("0600beef") + GUID_BYTES
    value = MQFFormatNameElement.decode(raw)
    assert value.padding == b"\xbe\xef"
    assert value.encode() == raw


@pytest.mark.parametrize(
    "raw", [b"", b"\x04\x00" + bytes(20), b"\x03\x00A\x00", b"\x02\x00\x00\x00" + bytes(19), b"\x01"]
)
def test_mqf_element_rejects(raw: bytes) -> None:
    with pytest.raises(WireError):
        MQFFormatNameElement.decode(raw)


def test_mqf_element_encoder_checks() -> None:
    with pytest.raises(WireError):
        MQFFormatNameElement(PrivateQueueFormatNameId(1)).encode()  # type: ignore[arg-type]
    with pytest.raises(WireError):
        MQFFormatNameElement(MQFDirectQueueFormatName("a\x00")).encode()


# -- Hypothesis round trips --------------------------------------------------------------------------


@given(u32, u32)
def test_tx_sequence_id_round_trip(ordinal: int, timestamp: int) -> None:
    value = TxSequenceID(ordinal, timestamp)
    assert TxSequenceID.decode(value.encode()) == value


@given(guids, u32)
def test_message_identifier_round_trip(guid: uuid.UUID, ordinal: int) -> None:
    value = MessageIdentifier(guid, ordinal)
    assert MessageIdentifier.decode(value.encode()) == value


@given(st.binary(min_size=16, max_size=16))
def test_xactuow_round_trip(rgb: bytes) -> None:
    assert XACTUOW.decode(XACTUOW(rgb).encode()) == XACTUOW(rgb)


queue_values = st.one_of(
    st.builds(PrivateQueueFormatNameId, u32),
    st.builds(PublicQueueFormatName, guids),
    st.builds(PrivateQueueFormatName, guids, u32),
    st.builds(DirectQueueFormatName, names),
)


@given(queue_values)
def test_queue_format_round_trip(value: object) -> None:
    cls = type(value)
    raw = value.encode()  # type: ignore[attr-defined]
    assert len(raw) % 4 == 0
    assert len(raw) == value.size  # type: ignore[attr-defined]
    assert cls.decode(raw) == value  # type: ignore[attr-defined]


mqf_values = st.one_of(
    st.builds(PublicQueueFormatName, guids),
    st.builds(PrivateQueueFormatName, guids, u32),
    st.builds(MQFDirectQueueFormatName, names),
    st.builds(MQFDistributionQueueFormatName, guids),
)


@given(st.lists(mqf_values, max_size=6))
def test_mqf_element_list_round_trip(values: list[object]) -> None:
    elements = [MQFFormatNameElement(v) for v in values]  # type: ignore[arg-type]
    w = Writer()
    for e in elements:
        e.write(w)
    r = Reader(w.getvalue())
    assert [MQFFormatNameElement.read(r) for _ in elements] == elements
    assert r.remaining == 0


# -- fuzz: any bytes -> value or WireError -----------------------------------------------------------

DECODERS = [
    TxSequenceID.decode,
    MessageIdentifier.decode,
    XACTUOW.decode,
    PrivateQueueFormatNameId.decode,
    PublicQueueFormatName.decode,
    PrivateQueueFormatName.decode,
    DirectQueueFormatName.decode,
    MQFFormatNameElement.decode,
]


@pytest.mark.parametrize("decode", DECODERS)
@given(data=st.binary(max_size=80))
def test_decoders_fuzz(decode: object, data: bytes) -> None:
    try:
        decode(data)  # type: ignore[operator]
    except WireError:
        pass


@given(st.binary(max_size=80), st.integers(0, 7))
def test_read_queue_format_fuzz(data: bytes, code: int) -> None:
    r = Reader(data)
    try:
        read_queue_format(r, code)
    except WireError:
        return
    assert r.pos <= len(data)
