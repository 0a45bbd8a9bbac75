"""QUEUE_FORMAT, OBJECTID, DL_ID, MULTICAST_ID ([MS-MQMQ] 2.2.6-2.2.11) in NDR form, and conversions."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import FormatNameError, WireError
from pymsmq.hresult import HResult
from pymsmq.wire.format_name import FormatName
from pymsmq.wire.queue_format import (
    DlId,
    MulticastId,
    ObjectId,
    QueueFormat,
    QueueFormatType,
    QueueSuffixType,
    required_flags,
)

T = QueueFormatType
S = QueueSuffixType
G = "557358d1-9150-9595-4997-b6e611ea26c6"
GU = uuid.UUID(G)
# [MS-DTYP] 2.3.4 packet layout of G: Data1..3 little-endian.
GB = bytes.fromhex("d1587355509195954997b6e611ea26c6")


def u32(n: int) -> bytes:
    return n.to_bytes(4, "little")


def ndr_string(text: str) -> bytes:
    units = len(text) + 1
    return u32(units) + u32(0) + u32(units) + text.encode("utf-16-le") + b"\x00\x00"


REF = u32(0x00020000)
PAD = b"\x00\x00\x00"

VECTORS = [
    # (format name text, QUEUE_FORMAT bytes built by hand from the layout in the module docstring)
    (f"PUBLIC={G}", b"\x01\x00\x00\x00" + b"\x01" + PAD + GB),
    (f"PUBLIC={G};JOURNAL", b"\x01\x81\x00\x00" + b"\x01" + PAD + GB),
    (f"PRIVATE={G}\\0000000a;JOURNAL", b"\x02\x81\x00\x00" + b"\x02" + PAD + GB + u32(10)),
    (
        r"DIRECT=OS:srv\private$\q",
        b"\x03\x00\x00\x00" + b"\x03" + PAD + REF + ndr_string(r"OS:srv\private$\q"),
    ),
    (r"DIRECT=OS:srv\q;JOURNAL", b"\x03\x81\x00\x00" + b"\x03" + PAD + REF + ndr_string(r"OS:srv\q")),
    (
        r"DIRECT=OS:srv\SYSTEM$;DEADXACT",
        b"\x03\x83\x00\x00" + b"\x03" + PAD + REF + ndr_string(r"OS:srv\SYSTEM$"),
    ),
    (
        "DIRECT=http://192.168.56.113/msmq/private$/queuejumper",
        b"\x03\x00\x00\x00\x03" + PAD + REF + ndr_string("http://192.168.56.113/msmq/private$/queuejumper"),
    ),
    (f"MACHINE={G};DEADLETTER", b"\x04\x82\x00\x00" + b"\x04" + PAD + GB),
    (f"MACHINE={G};JOURNAL", b"\x04\x81\x00\x00" + b"\x04" + PAD + GB),
    (f"CONNECTOR={G}", b"\x05\x00\x00\x00" + b"\x05" + PAD + GB),
    (f"CONNECTOR={G};XACTONLY", b"\x05\x04\x00\x00" + b"\x05" + PAD + GB),
    (f"DL={G}", b"\x06\x00\x00\x00" + b"\x06" + PAD + GB + u32(0)),
    (f"DL={G}@corp", b"\x06\x00\x00\x00" + b"\x06" + PAD + GB + REF + ndr_string("corp")),
    # m_address holds a.b.c.d in network order in memory: wire bytes EA 01 02 03.
    ("MULTICAST=234.1.2.3:8001", b"\x07\x00\x00\x00" + b"\x07" + PAD + b"\xea\x01\x02\x03" + u32(8001)),
    (
        r"DIRECT=OS:srv\private$\q;poison",
        b"\x08\x05\x00\x00" + b"\x08" + PAD + REF + ndr_string(r"OS:srv\private$\q;poison"),
    ),
]


@pytest.mark.parametrize(("text", "data"), VECTORS, ids=[v[0] for v in VECTORS])
def test_vectors_both_ways(text: str, data: bytes) -> None:
    fn = FormatName.parse(text)
    qf = QueueFormat.from_format_name(fn)
    assert qf.encode() == data
    assert QueueFormat.decode(data) == qf
    assert QueueFormat.decode(data).to_format_name() == fn


def test_header_bytes_from_the_digest() -> None:
    # digest D7.2 item 9: the first four bytes (m_qft, m_SuffixAndFlags, m_reserved).
    assert QueueFormat(T.QUEUE_FORMAT_TYPE_PUBLIC, public_id=GU).encode()[:4] == bytes.fromhex("01000000")
    oid = ObjectId(GU, 1)
    assert QueueFormat(T(2), S(1), private_id=oid).encode()[:4] == bytes.fromhex("02810000")
    assert QueueFormat(T(3), S(3), direct_id=r"OS:s\SYSTEM$").encode()[:4] == bytes.fromhex("03830000")
    assert QueueFormat(T(4), S(2), machine_id=GU).encode()[:4] == bytes.fromhex("04820000")
    assert QueueFormat(T(8), S(5), direct_subqueue_id=r"OS:s\q;x").encode()[:4] == bytes.fromhex("08050000")


def test_unknown_type_has_no_arm() -> None:
    qf = QueueFormat(T.QUEUE_FORMAT_TYPE_UNKNOWN)
    assert qf.encode() == b"\x00\x00\x00\x00\x00"
    assert QueueFormat.decode(b"\x00\x00\x00\x00\x00") == qf and qf.value is None
    with pytest.raises(FormatNameError):
        qf.to_format_name()


def test_reserved_padding_and_referent_are_kept() -> None:
    data = b"\x03\x00\xcd\xab\x03\x11\x22\x33" + u32(0x00020004) + ndr_string(r"OS:h\q")
    qf = QueueFormat.decode(data)
    assert (qf.reserved, qf.ndr_padding, qf.ndr_referent_id) == (0xABCD, b"\x11\x22\x33", 0x00020004)
    assert qf.direct_id == r"OS:h\q" and qf.suffix_and_flags == 0 and not qf.is_system
    assert qf.encode() == data


def test_objectid_multicast_dlid_alone() -> None:
    oid = ObjectId(GU, 0x01020304)
    assert oid.encode() == GB + b"\x04\x03\x02\x01" and ObjectId.decode(oid.encode()) == oid
    mid = MulticastId.from_text("239.0.0.1", 80)
    assert mid.encode() == b"\xef\x00\x00\x01" + u32(80) and mid.address_text == "239.0.0.1"
    assert MulticastId.decode(mid.encode()) == mid
    dl = DlId(GU, "d")
    assert dl.encode() == GB + REF + ndr_string("d") and DlId.decode(dl.encode()) == dl
    assert DlId(GU).encode() == GB + u32(0) and DlId.decode(GB + u32(0)) == DlId(GU)


# [MS-MQMQ] 2.2.7 suffix table, transcribed independently: suffix -> (Flags MUST, m_qft allowed).
SPEC_TABLE: dict[int, tuple[set[int], set[int]]] = {
    0: ({0x00}, {0, 1, 2, 3, 5, 6, 7, 8}),
    1: ({0x80}, {0, 1, 2, 3, 4, 8}),
    2: ({0x80}, {0, 3, 4, 8}),
    3: ({0x80}, {3, 4}),
    4: ({0x00, 0x80}, {5}),  # Flags not stated for XACTONLY
    5: ({0x00}, {8}),
}


def _arm(qft: int) -> dict[str, object]:
    return {
        0: {},
        1: {"public_id": GU},
        2: {"private_id": ObjectId(GU, 1)},
        3: {"direct_id": r"OS:h\q"},
        4: {"machine_id": GU},
        5: {"connector_id": GU},
        6: {"dl_id": DlId(GU)},
        7: {"multicast_id": MulticastId(0, 0)},
        8: {"direct_subqueue_id": r"OS:h\q;s"},
    }[qft]


def _legal(qft: int) -> QueueFormat:
    return QueueFormat(T(qft), S(1) if qft == 4 else S(0), **_arm(qft))  # type: ignore[arg-type]


@pytest.mark.parametrize("qft", range(10))
@pytest.mark.parametrize("suffix_and_flags", range(256))
def test_every_suffix_and_flags_byte_against_the_spec_table(qft: int, suffix_and_flags: int) -> None:
    suffix, flags = suffix_and_flags & 0x0F, suffix_and_flags & 0xF0
    rule = SPEC_TABLE.get(suffix)
    legal = qft <= 8 and rule is not None and flags in rule[0] and qft in rule[1]
    # the discriminant, padding and arm of some legal QUEUE_FORMAT of this type
    body = _legal(qft).encode()[4:] if qft <= 8 else b"\x09"
    data = bytes([qft, suffix_and_flags, 0, 0]) + body
    if legal:
        qf = QueueFormat.decode(data)
        assert (qf.qft, qf.suffix, qf.flags) == (qft, suffix, flags)
        assert qf.encode() == data
    else:
        with pytest.raises(WireError):
            QueueFormat.decode(data)


def test_required_flags() -> None:
    assert [required_flags(s) for s in S] == [0x00, 0x80, 0x80, 0x80, 0x00, 0x00]
    assert QueueFormat(T(1), S(1), public_id=GU).flags == 0x80


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "truncated"),
        (b"\x01\x00\x00\x00\x02" + PAD + GB, "discriminant"),
        (b"\x09\x00\x00\x00\x09", "QUEUE_FORMAT_TYPE"),
        (b"\x01\x00\x00\x00\x01" + PAD + GB[:15], "truncated"),
        (b"\x01\x00\x00\x00\x01" + PAD + GB + b"\x00", "trailing"),
        (b"\x00\x00\x00\x00\x00\x00", "trailing"),
        (b"\x03\x00\x00\x00\x03" + PAD + u32(0), "NULL pointer"),
        (b"\x03\x00\x00\x00\x03" + PAD + REF + u32(2) + u32(1) + u32(2) + b"a\x00\x00\x00", "Offset"),
        (b"\x03\x00\x00\x00\x03" + PAD + REF + u32(3) + u32(0) + u32(2) + b"a\x00\x00\x00", "MaxCount"),
        (b"\x03\x00\x00\x00\x03" + PAD + REF + u32(0) + u32(0) + u32(0), "terminating NUL"),
        (b"\x03\x00\x00\x00\x03" + PAD + REF + u32(1) + u32(0) + u32(1) + b"a\x00", "NUL-terminated"),
        (
            b"\x03\x00\x00\x00\x03" + PAD + REF + u32(3) + u32(0) + u32(3) + b"a\x00\x00\x00\x00\x00",
            "embedded",
        ),
        # A huge count is checked against the bytes left before anything is allocated.
        (b"\x03\x00\x00\x00\x03" + PAD + REF + u32(0x7FFFFFFF) * 2 + b"\x00" * 8, "Offset|truncated"),
        (b"\x03\x00\x00\x00\x03" + PAD + REF + u32(0x7FFFFFFF) + u32(0) + u32(0x7FFFFFFF), "truncated"),
        (b"\x01\x80\x00\x00\x01" + PAD + GB, "flags MUST be 0x00"),
        (b"\x01\x40\x00\x00\x01" + PAD + GB, "not 0x00 or 0x80"),
        (b"\x01\x06\x00\x00\x01" + PAD + GB, "QUEUE_SUFFIX_TYPE"),
        (b"\x04\x00\x00\x00\x04" + PAD + GB, "not allowed with m_qft"),
    ],
)
def test_decode_rejects(data: bytes, fragment: str) -> None:
    with pytest.raises(WireError, match=fragment):
        QueueFormat.decode(data)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"qft": T(1)},  # arm missing
        {"qft": T(1), "public_id": GU, "machine_id": GU},  # two arms
        {"qft": T(3), "direct_id": "a\x00b"},
        {"qft": T(3), "direct_id": "x", "ndr_referent_id": 0},
        {"qft": T(3), "direct_id": "x", "ndr_padding": b"\x00"},
        {"qft": T(1), "public_id": GU, "reserved": 0x10000},
        {"qft": 9},
        {"qft": T(1), "suffix": 7, "public_id": GU},
        {"qft": T(1), "suffix": S(1), "flags": 0x00, "public_id": GU},
    ],
)
def test_constructor_validates(kwargs: dict[str, object]) -> None:
    with pytest.raises(WireError):
        QueueFormat(**kwargs)  # type: ignore[arg-type]


def test_structure_constructors_validate() -> None:
    with pytest.raises(WireError):
        ObjectId(GU, 1 << 32)
    with pytest.raises(WireError):
        MulticastId(-1, 0)
    with pytest.raises(WireError):
        MulticastId.from_text("1.2.3", 0)
    with pytest.raises(WireError):
        DlId(GU, "a\x00")


# -- conversions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qf", "text"),
    [
        # Strings that keep the suffix token are accepted when they agree with the nibble.
        (QueueFormat(T(3), S(1), direct_id=r"OS:h\q;JOURNAL"), r"DIRECT=OS:h\q;JOURNAL"),
        (QueueFormat(T(3), S(2), direct_id=r"OS:h\SYSTEM$;DEADLETTER"), r"DIRECT=OS:h\SYSTEM$;DEADLETTER"),
        (QueueFormat(T(3), S(1), direct_id=r"OS:h\SYSTEM$"), r"DIRECT=OS:h\SYSTEM$;JOURNAL"),
        # A DIRECT= prefix is accepted (the spec does not say whether it is present).
        (QueueFormat(T(3), direct_id=r"DIRECT=OS:h\q"), r"DIRECT=OS:h\q"),
        (QueueFormat(T(8), S(5), direct_subqueue_id=r"direct=OS:h\q;s"), r"DIRECT=OS:h\q;s"),
        # Lenient: m_qft SUBQUEUE with suffix NONE.
        (QueueFormat(T(8), direct_subqueue_id=r"OS:h\q;s"), r"DIRECT=OS:h\q;s"),
        # An empty DL domain string means no domain.
        (QueueFormat(T(6), dl_id=DlId(GU, "")), f"DL={G}"),
    ],
)
def test_to_format_name_lenient_forms(qf: QueueFormat, text: str) -> None:
    assert qf.to_format_name() == FormatName.parse(text)


@pytest.mark.parametrize(
    "qf",
    [
        QueueFormat(T(3), direct_id=r"OS:h\q;JOURNAL"),  # token without the suffix nibble
        QueueFormat(T(3), S(2), direct_id=r"OS:h\q"),  # DEADLETTER only after SYSTEM$
        QueueFormat(T(3), S(1), direct_id=r"OS:h\q;sub"),
        QueueFormat(T(3), direct_id=r"OS:h\q;sub"),  # a subqueue needs m_qft SUBQUEUE
        QueueFormat(T(3), direct_id="nonsense"),
        QueueFormat(T(8), S(5), direct_subqueue_id=r"OS:h\q"),  # no subqueue
        QueueFormat(T(7), multicast_id=MulticastId.from_text("10.0.0.1", 80)),  # not class D
        QueueFormat(T(7), multicast_id=MulticastId.from_text("224.0.0.1", 70000)),
    ],
)
def test_to_format_name_rejects(qf: QueueFormat) -> None:
    with pytest.raises(FormatNameError):
        qf.to_format_name()


def test_multiple_element_names_convert_per_element() -> None:
    fn = FormatName.parse(rf"PUBLIC={G},DIRECT=OS:h\q")
    with pytest.raises(FormatNameError) as info:
        QueueFormat.from_format_name(fn)
    assert info.value.hresult == HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION
    qfs = [QueueFormat.from_format_name(e) for e in fn.elements]
    assert [q.qft for q in qfs] == [T.QUEUE_FORMAT_TYPE_PUBLIC, T.QUEUE_FORMAT_TYPE_DIRECT]


# -- Hypothesis ---------------------------------------------------------------------------------

NAME_CHARS = [chr(c) for c in range(0x21, 0x80) if chr(c) not in '"+,;\\']
names = st.text(NAME_CHARS, min_size=1, max_size=20).map(lambda s: "q" + s)
subs = st.text(NAME_CHARS, min_size=1, max_size=10).map(lambda s: "s" + s)
hosts = st.text("abcdefghijklmnopqrstuvwxyz0123456789.-", min_size=1, max_size=20)


@st.composite
def format_name_texts(draw: st.DrawFn) -> str:
    g = draw(st.uuids())
    kind = draw(st.integers(0, 8))
    if kind == 0:
        return f"PUBLIC={g}" + draw(st.sampled_from(["", ";JOURNAL"]))
    if kind == 1:
        return f"PRIVATE={g}\\{draw(st.integers(0, 0xFFFFFFFF)):x}" + draw(st.sampled_from(["", ";JOURNAL"]))
    if kind == 2:
        return f"MACHINE={g};" + draw(st.sampled_from(["JOURNAL", "DEADLETTER", "DEADXACT"]))
    if kind == 3:
        return f"CONNECTOR={g}" + draw(st.sampled_from(["", ";XACTONLY"]))
    if kind == 4:
        return f"DL={g}" + draw(st.sampled_from(["", "@corp.example"]))
    if kind == 5:
        first, last, port = (
            draw(st.integers(224, 239)),
            draw(st.integers(0, 255)),
            draw(st.integers(0, 65535)),
        )
        return f"MULTICAST={first}.1.2.{last}:{port}"
    head = draw(
        st.sampled_from([r"OS:{h}\{p}", r"TCP:10.0.0.1\{p}", "http://{h}/msmq/{p}", "https://{h}:1/msmq/{p}"])
    )
    head = head.replace("{h}", draw(hosts))
    if kind == 6:
        return (
            "DIRECT="
            + head.replace("{p}", "SYSTEM$;")
            + draw(st.sampled_from(["JOURNAL", "DEADLETTER", "DEADXACT"]))
        )
    sep = "/" if head.startswith("http") else "\\"
    path = draw(st.sampled_from(["", f"private${sep}"])) + draw(names)
    tail = draw(st.sampled_from(["", ";JOURNAL"])) if kind == 7 else ";" + draw(subs)
    return "DIRECT=" + head.replace("{p}", path) + tail


@given(format_name_texts())
def test_format_name_to_queue_format_and_back(text: str) -> None:
    fn = FormatName.parse(text)
    qf = QueueFormat.from_format_name(fn)
    assert qf.to_format_name() == fn
    data = qf.encode()
    again = QueueFormat.decode(data)
    assert again == qf and again.encode() == data
    assert again.to_format_name() == fn


@st.composite
def queue_formats(draw: st.DrawFn) -> QueueFormat:
    qft = draw(st.integers(0, 8))
    suffix = draw(st.sampled_from([s for s, (_, allowed) in SPEC_TABLE.items() if qft in allowed]))
    flags = draw(st.sampled_from(sorted(SPEC_TABLE[suffix][0])))
    text = st.text(st.characters(blacklist_characters="\x00"), max_size=30)
    arm: dict[str, object] = {
        0: {},
        1: {"public_id": draw(st.uuids())},
        2: {"private_id": ObjectId(draw(st.uuids()), draw(st.integers(0, 0xFFFFFFFF)))},
        3: {"direct_id": draw(text)},
        4: {"machine_id": draw(st.uuids())},
        5: {"connector_id": draw(st.uuids())},
        6: {"dl_id": DlId(draw(st.uuids()), draw(st.none() | text), draw(st.integers(1, 0xFFFFFFFF)))},
        7: {"multicast_id": MulticastId(draw(st.integers(0, 0xFFFFFFFF)), draw(st.integers(0, 0xFFFFFFFF)))},
        8: {"direct_subqueue_id": draw(text)},
    }[qft]
    return QueueFormat(
        T(qft),
        S(suffix),
        flags,
        reserved=draw(st.integers(0, 0xFFFF)),
        ndr_referent_id=draw(st.integers(1, 0xFFFFFFFF)) if qft in (3, 8) else 0x00020000,
        ndr_padding=draw(st.binary(min_size=3, max_size=3)) if qft else b"\x00\x00\x00",
        **arm,  # type: ignore[arg-type]
    )


@given(queue_formats())
def test_queue_format_round_trip(qf: QueueFormat) -> None:
    data = qf.encode()
    assert QueueFormat.decode(data) == qf
    assert QueueFormat.decode(data).encode() == data


@given(st.uuids(), st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF), st.none() | st.text(max_size=20))
def test_structure_round_trips(g: uuid.UUID, a: int, b: int, domain: str | None) -> None:
    oid = ObjectId(g, a)
    assert ObjectId.decode(oid.encode()) == oid
    mid = MulticastId(a, b)
    assert MulticastId.decode(mid.encode()) == mid
    if domain is not None and "\x00" in domain:
        return
    dl = DlId(g, domain, b or 1) if domain is not None else DlId(g)
    assert DlId.decode(dl.encode()) == dl


DECODERS = [QueueFormat.decode, ObjectId.decode, MulticastId.decode, DlId.decode]


@pytest.mark.parametrize("decode", DECODERS)
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_give_value_or_wire_error(decode: object, data: bytes) -> None:
    try:
        value = decode(data)  # type: ignore[operator]
    except WireError:
        return
    assert value.encode() == data


@given(queue_formats(), st.data())
def test_truncation_and_trailing_garbage(qf: QueueFormat, d: st.DataObject) -> None:
    data = qf.encode()
    cut = d.draw(st.integers(0, len(data) - 1))
    with pytest.raises(WireError):
        QueueFormat.decode(data[:cut])
    garbage = d.draw(st.binary(min_size=1, max_size=8))
    with pytest.raises(WireError):
        QueueFormat.decode(data + garbage)
