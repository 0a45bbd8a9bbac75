"""UserHeader ([MS-MQMQ] 2.2.19.2) and MessagePropertiesHeader (2.2.19.3): vectors, round trips, fuzz."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader
from pymsmq.wire.message_properties_header import (
    EncryptionAlgorithm,
    HashAlgorithm,
    MessagePropertiesFlags,
    MessagePropertiesHeader,
    PrivacyLevel,
)
from pymsmq.wire.packet_types import (
    DirectQueueFormatName,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueFormat,
    QueueType,
)
from pymsmq.wire.user_header import DeliveryMode, UserHeader, UserHeaderFlags

GUID_BYTES = bytes.fromhex("D1587355509195954997B6E611EA26C6")
GUID = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
OTHER = uuid.UUID("43cd8907-394c-8f11-4445-9078909ea0fc")

# [MS-MQQB] 4.1.7 frame 7, bytes 0x10..0x5C: the UserHeader (digest B7).
FRAME7_USER_HEADER = bytes.fromhex(
    "D1587355509195954997B6E611EA26C6"
    "00000000000000000000000000000000"
    "FFFFFFFF4C494F52EE080000001C2800"
    "1A004F0053003A0061003000340062006D00300032005C0071000000"
)


def test_frame7_user_header() -> None:
    h = UserHeader.decode(FRAME7_USER_HEADER)
    assert h.source_queue_manager == GUID
    assert h.queue_manager_address == uuid.UUID(int=0)  # NULL GUID: direct destination
    assert h.time_to_be_received == 0xFFFFFFFF
    assert h.sent_time == 0x524F494C  # the bytes (the printed decode says 0x441105E6; digest B0 #5)
    assert h.message_id == 2286
    assert h.flags == 0x00281C00
    assert (h.rc, h.dm, h.jn, h.jp) == (0, DeliveryMode.EXPRESS, False, False)
    assert (h.dq, h.aq, h.rq) == (QueueType.DIRECT_QUEUE, QueueType.NONE, QueueType.NONE)
    assert (h.sh, h.th, h.mp, h.cq, h.mq, h.ah, h.hh) == (True, False, True, False, False, False, False)
    assert h.destination_queue == DirectQueueFormatName("OS:a04bm02\\q")
    assert h.admin_queue is None and h.response_queue is None and h.connector_type is None
    assert h.size == len(FRAME7_USER_HEADER) == 76
    assert h.encode() == FRAME7_USER_HEADER


def test_queuejumper_user_header(vector: Callable[[str], bytes]) -> None:
    data = vector("queuejumper-msf-usermessage-srmp.bin")
    r = Reader(data, 16, len(data))
    h = UserHeader.read(r)
    assert r.pos == 0xA4
    assert h.flags == 0x02201C01
    assert (h.rc, h.dq, h.mp, h.ah, h.sh, h.hh) == (1, 7, True, True, False, False)
    assert h.destination_queue == DirectQueueFormatName("http://192.168.56.113/msmq/private$/queuejumper")
    assert h.sent_time == 0x64BEAA63 and h.message_id == 1
    assert h.encode() == data[16:0xA4]


def test_flag_masks() -> None:
    # digest D7.3 (diagram bit n = mask 1 << n).
    f = UserHeaderFlags
    assert [f.RC, f.DM, f.X1, f.JN, f.JP, f.DQ, f.AQ, f.RQ] == [
        0x1F,
        0x60,
        0x80,
        0x100,
        0x200,
        0x1C00,
        0xE000,
        0x70000,
    ]
    assert [f.SH, f.TH, f.MP, f.CQ, f.MQ, f.X2, f.AH, f.X3, f.HH, f.X4] == [
        0x80000,
        0x100000,
        0x200000,
        0x400000,
        0x800000,
        0x1000000,
        0x2000000,
        0xC000000,
        0x10000000,
        0xE0000000,
    ]


def test_make_flags_compositions() -> None:
    # digest D7.4 #3.
    assert UserHeader.make_flags(dq=7) == 0x00201C00
    assert UserHeader.make_flags(dq=7, dm=1) == 0x00201C20
    assert UserHeader.make_flags(dq=7, dm=1, th=True) == 0x00301C20
    assert UserHeader.make_flags(dq=3) == 0x00200C00
    assert UserHeader.make_flags(dq=5) == 0x00201400
    assert UserHeader.make_flags(dq=7, sh=True) == 0x00281C00  # frame 7
    assert UserHeader.make_flags(rc=1, dq=7, ah=True) == 0x02201C01  # queuejumper
    with pytest.raises(WireError):
        UserHeader.make_flags(rc=32)


def test_reserved_bits_are_kept() -> None:
    h = UserHeader(flags=UserHeader.make_flags(dq=0) | 0xED000080)
    assert (h.x1, h.x2, h.x3, h.x4) == (True, True, 3, 7)
    assert UserHeader.decode(h.encode()) == h


def test_all_queue_fields_hand_built() -> None:
    # DQ=3 (PrivateQueueFormatNameId), AQ=6 (PrivateQueueFormatName), RQ=5 (public), CQ.
    flags = UserHeader.make_flags(dq=3, aq=6, rq=5, cq=True, jn=True, jp=True, dm=1)
    raw = (
        GUID_BYTES
        + OTHER.bytes_le
        + bytes.fromhex("10000000 20000000 30000000")
        + flags.to_bytes(4, "little")
        + bytes.fromhex("05000000")
        + GUID_BYTES
        + bytes.fromhex("06000000")
        + OTHER.bytes_le
        + GUID_BYTES
    )
    h = UserHeader.decode(raw)
    assert h == UserHeader(
        GUID,
        OTHER,
        0x10,
        0x20,
        0x30,
        flags,
        PrivateQueueFormatNameId(5),
        PrivateQueueFormatName(GUID, 6),
        PublicQueueFormatName(OTHER),
        GUID,
    )
    assert (h.jn, h.jp, h.recoverable, h.cq) == (True, True, True, True)
    assert h.encode() == raw
    assert h.size == len(raw)


def test_response_queue_codes_1_and_4() -> None:
    # RQ=1 ("same as the administration queue") carries no bytes; RQ=4 is a PrivateQueueFormatNameId.
    flags = UserHeader.make_flags(dq=3, aq=2, rq=1)
    h = UserHeader(
        flags=flags, destination_queue=PrivateQueueFormatNameId(1), admin_queue=PrivateQueueFormatNameId(2)
    )
    assert len(h.encode()) == 48 + 4 + 4
    assert UserHeader.decode(h.encode()) == h
    flags = UserHeader.make_flags(dq=3, aq=2, rq=4)
    h = UserHeader(
        flags=flags,
        destination_queue=PrivateQueueFormatNameId(1),
        admin_queue=PrivateQueueFormatNameId(2),
        response_queue=PrivateQueueFormatNameId(3),
    )
    assert len(h.encode()) == 48 + 12
    assert UserHeader.decode(h.encode()).response_queue == PrivateQueueFormatNameId(3)


@pytest.mark.parametrize("dq", [1, 2, 4, 6])
def test_invalid_destination_type_rejected(dq: int) -> None:
    raw = bytes(44) + (0x00200000 | dq << 10).to_bytes(4, "little") + bytes(32)
    with pytest.raises(WireError, match="DQ"):
        UserHeader.decode(raw)
    with pytest.raises(WireError):
        UserHeader(flags=0x00200000 | dq << 10).encode()


@pytest.mark.parametrize("aq", [1, 4])
def test_invalid_admin_type_rejected(aq: int) -> None:
    raw = bytes(44) + (0x00200000 | aq << 13).to_bytes(4, "little") + bytes(32)
    with pytest.raises(WireError, match="AQ"):
        UserHeader.decode(raw)


def test_encoder_checks_queue_values_against_flags() -> None:
    with pytest.raises(WireError):
        UserHeader(flags=UserHeader.make_flags(dq=7)).encode()  # DQ=7 but no queue
    with pytest.raises(WireError):
        UserHeader(flags=UserHeader.make_flags(dq=5), destination_queue=PrivateQueueFormatNameId(1)).encode()
    with pytest.raises(WireError):
        UserHeader(flags=UserHeader.make_flags(), admin_queue=PrivateQueueFormatNameId(1)).encode()
    with pytest.raises(WireError):
        UserHeader(flags=UserHeader.make_flags(cq=True)).encode()
    with pytest.raises(WireError):
        UserHeader(connector_type=GUID).encode()
    with pytest.raises(WireError):
        UserHeader(message_id=2**32).encode()
    with pytest.raises(WireError):
        UserHeader(source_queue_manager="x").encode()  # type: ignore[arg-type]


def test_truncations_of_frame7_header() -> None:
    for n in range(len(FRAME7_USER_HEADER)):
        with pytest.raises(WireError):
            UserHeader.decode(FRAME7_USER_HEADER[:n])
    with pytest.raises(WireError):
        UserHeader.decode(FRAME7_USER_HEADER + b"\x00")


# -- MessagePropertiesHeader ---------------------------------------------------------------------------

# frame 7 bytes 0x88..0xDE (fixed part + label) followed by the 2000-byte body and 2 bytes of padding.
FRAME7_MPH_HEAD = bytes.fromhex(
    "0F0F0000" + "00" * 20 + "0800000000000000D0070000D007000000000000048000000168000000000000"
) + "mqsender label\x00".encode("utf-16-le")


def test_frame7_message_properties_header() -> None:
    raw = FRAME7_MPH_HEAD + b"a\x00" * 1000 + b"\x00\x00"
    h = MessagePropertiesHeader.decode(raw)
    assert h.flags == 0x0F and (h.pa, h.pr, h.na, h.nr) == (True, True, True, True)
    assert h.label_length == 15 and h.label == "mqsender label"
    assert h.message_class == 0 and h.correlation_id == bytes(20)
    assert h.body_type == 8  # VT_BSTR
    assert h.application_tag == 0
    assert h.message_size == 2000 == h.allocation_body_size
    assert h.privacy_level == PrivacyLevel.NONE
    assert h.hash_algorithm == HashAlgorithm.SHA1
    assert h.encryption_algorithm == EncryptionAlgorithm.RC4
    assert h.extension_size == 0 and h.extension == b""
    assert h.body == "a".encode("utf-16-le") * 1000
    assert h.size == len(raw) == 56 + 30 + 2000 + 2
    assert h.encode() == raw


def test_queuejumper_message_properties_header(vector: Callable[[str], bytes]) -> None:
    data = vector("queuejumper-nse-usermessage-srmp.bin")
    h = MessagePropertiesHeader.decode(data[0xA4:0xE4])
    assert (h.flags, h.label_length, h.label, h.body, h.message_size) == (0, 4, "poc", b"", 0)
    assert h.encode() == data[0xA4:0xE4]


def test_hand_built_mph_with_extension_slack_and_padding() -> None:
    # 56 fixed + label "ab\0" (6) + extension 3 + body 2 + slack 1 = 68 -> no padding.
    raw = (
        bytes.fromhex("05 03 0280")
        + bytes(range(20))
        + bytes.fromhex("11000000 22000000 02000000 03000000 01000000 0E800000 02660000 03000000")
        + "ab\x00".encode("utf-16-le")
        + b"EXT"
        + b"BO"
        + b"S"
    )
    h = MessagePropertiesHeader.decode(raw)
    assert h == MessagePropertiesHeader(
        flags=5,
        message_class=0x8002,
        correlation_id=bytes(range(20)),
        body_type=0x11,
        application_tag=0x22,
        privacy_level=1,
        hash_algorithm=0x800E,
        encryption_algorithm=0x6602,
        label="ab",
        extension=b"EXT",
        body=b"BO",
        allocation_slack=b"S",
    )
    assert h.encode() == raw
    # MessageSize 3, AllocationBodySize 4 -> 69 bytes -> 3 padding bytes, kept as sent.
    raw2 = raw[:32] + b"\x03" + raw[33:36] + b"\x04" + raw[37:] + b"\xaa\xbb\xcc\xdd"
    h2 = MessagePropertiesHeader.decode(raw2)
    assert h2.body == b"BOS" and h2.allocation_slack == b"\xaa"
    assert h2.padding == b"\xbb\xcc\xdd"
    assert h2.encode() == raw2


def test_label_only_nul_and_no_label() -> None:
    empty = MessagePropertiesHeader(label="")
    assert empty.label_length == 1
    assert len(empty.encode()) == 60  # 56 + 2 + 2 padding
    assert MessagePropertiesHeader.decode(empty.encode()) == empty
    none = MessagePropertiesHeader()
    assert none.label_length == 0 and len(none.encode()) == 56
    assert MessagePropertiesHeader.decode(none.encode()).label is None


def test_label_limits() -> None:
    longest = MessagePropertiesHeader(label="x" * 249)
    assert longest.label_length == 250
    assert MessagePropertiesHeader.decode(longest.encode()) == longest
    with pytest.raises(WireError):
        MessagePropertiesHeader(label="x" * 250).encode()
    with pytest.raises(WireError):
        MessagePropertiesHeader(label="\U0001f600" * 125).encode()  # 250 UTF-16 units
    with pytest.raises(WireError):
        MessagePropertiesHeader(label="a\x00b").encode()
    with pytest.raises(WireError):
        MessagePropertiesHeader(correlation_id=b"short").encode()
    with pytest.raises(WireError):
        MessagePropertiesHeader(flags=256).encode()


def _fixed(label_length: int = 0, message_size: int = 0, alloc: int = 0, ext: int = 0) -> bytes:
    return (
        bytes([0, label_length])
        + bytes(22)
        + bytes(8)
        + message_size.to_bytes(4, "little")
        + alloc.to_bytes(4, "little")
        + bytes(12)
        + ext.to_bytes(4, "little")
    )


@pytest.mark.parametrize(
    "raw",
    [
        _fixed(label_length=0xFB) + b"\x00" * 502,  # LabelLength above 0xFA
        _fixed(label_length=2) + b"a\x00b\x00",  # no NUL terminator
        _fixed(label_length=2) + b"\x00\x00\x00\x00",  # NUL inside the label
        _fixed(label_length=3) + b"a\x00\x00\x00",  # label runs past the data
        _fixed(message_size=4, alloc=3) + b"abcd",  # AllocationBodySize < MessageSize
        _fixed(message_size=0x7FFFFFFF, alloc=0x7FFFFFFF),  # huge body: rejected before slicing
        _fixed(ext=0xFFFFFFFF),  # huge extension
        _fixed(message_size=1, alloc=1) + b"x",  # padding missing
        _fixed()[:55],
    ],
)
def test_mph_rejects(raw: bytes) -> None:
    with pytest.raises(WireError):
        MessagePropertiesHeader.decode(raw)


def test_mph_flag_masks() -> None:
    f = MessagePropertiesFlags
    assert (f.PA, f.PR, f.NA, f.NR, f.X) == (1, 2, 4, 8, 0xF0)


# -- Hypothesis -----------------------------------------------------------------------------------------

u32 = st.integers(0, 0xFFFFFFFF)
guids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
names = st.text(st.characters(min_codepoint=1, max_codepoint=0x10FFFF), max_size=30)


def _queue_for(code: int, draw: st.DrawFn) -> QueueFormat | None:
    if code in (0, 1):
        return None
    if code in (2, 3, 4):
        return PrivateQueueFormatNameId(draw(u32))
    if code == 5:
        return PublicQueueFormatName(draw(guids))
    if code == 6:
        return PrivateQueueFormatName(draw(guids), draw(u32))
    return DirectQueueFormatName(draw(names))


@st.composite
def user_headers(draw: st.DrawFn) -> UserHeader:
    dq = draw(st.sampled_from([0, 3, 5, 7]))
    aq = draw(st.sampled_from([0, 2, 3, 5, 6, 7]))
    rq = draw(st.integers(0, 7))
    cq = draw(st.booleans())
    other_bits = draw(u32) & ~(0x1C00 | 0xE000 | 0x70000 | 0x400000)
    flags = other_bits | dq << 10 | aq << 13 | rq << 16 | (0x400000 if cq else 0)
    return UserHeader(
        draw(guids),
        draw(guids),
        draw(u32),
        draw(u32),
        draw(u32),
        flags,
        _queue_for(dq, draw),
        _queue_for(aq, draw),
        _queue_for(rq, draw),
        draw(guids) if cq else None,
    )


@given(user_headers())
def test_user_header_round_trip(h: UserHeader) -> None:
    raw = h.encode()
    assert len(raw) == h.size and len(raw) % 4 == 0
    assert UserHeader.decode(raw) == h


labels = st.none() | st.text(st.characters(min_codepoint=1, max_codepoint=0xFFFF), max_size=249)


@given(
    st.integers(0, 255),
    st.integers(0, 0xFFFF),
    st.binary(min_size=20, max_size=20),
    u32,
    u32,
    u32,
    u32,
    u32,
    labels,
    st.binary(max_size=20),
    st.binary(max_size=40),
    st.binary(max_size=5),
)
def test_mph_round_trip(
    flags: int,
    cls: int,
    corr: bytes,
    body_type: int,
    tag: int,
    privacy: int,
    hash_alg: int,
    enc_alg: int,
    label: str | None,
    ext: bytes,
    body: bytes,
    slack: bytes,
) -> None:
    h = MessagePropertiesHeader(
        flags, cls, corr, body_type, tag, privacy, hash_alg, enc_alg, label, ext, body, slack
    )
    raw = h.encode()
    assert len(raw) == h.size and len(raw) % 4 == 0
    assert MessagePropertiesHeader.decode(raw) == h


@given(st.binary(max_size=200))
def test_user_header_fuzz(data: bytes) -> None:
    try:
        UserHeader.decode(data)
    except WireError:
        pass


@given(st.binary(min_size=48, max_size=48), st.binary(max_size=120))
def test_user_header_fuzz_structured(fixed: bytes, rest: bytes) -> None:
    try:
        h = UserHeader.decode(fixed + rest)
    except WireError:
        return
    assert h.encode() == fixed + rest


@given(st.binary(max_size=200))
def test_mph_fuzz(data: bytes) -> None:
    try:
        h = MessagePropertiesHeader.decode(data)
    except WireError:
        return
    assert h.encode() == data
