"""[MS-MQCN] Change Notification Message: the digest's TV-1..TV-9 both ways, round trips, fuzz."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire.change_notification import (
    MQDS_MACHINE,
    MQDS_QUEUE,
    PROPID_VT,
    ChangeNotificationMessage,
    NotificationBody,
    NotificationCommand,
    NotificationEvent,
    NotificationOperation,
    NotificationUpdate,
    object_type_of_propid,
)
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.vartype import VarType as V

Q = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
QM = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
DS = uuid.UUID("fedcba98-7654-3210-fedc-ba9876543210")
OBJ = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")

# Hex dumps copied from digest-ms-mqcn-and-cactransferbuffer.md PART 3.
TV1 = bytes.fromhex(
    "02013c004e006f00740069006600690063006100740069006f006e003e003c004500760065006e0074003e0031003c00"
    "2f004500760065006e0074003e003c004f0062006a0065006300740047007500690064003e0031003200330034003500"
    "3600370038002d0039006100620063002d0064006500660030002d0031003200330034002d0035003600370038003900"
    "61006200630064006500660030003c002f004f0062006a0065006300740047007500690064003e003c0044006f006d00"
    "610069006e0043006f006e00740072006f006c006c00650072003e0044004300300031002e0063006f006e0074006f00"
    "73006f002e0063006f006d003c002f0044006f006d00610069006e0043006f006e00740072006f006c006c0065007200"
    "3e003c002f004e006f00740069006600690063006100740069006f006e003e0000"
)
TV2 = bytes.fromhex(
    "0101010167452301ab89efcd0123456789abcdef98badcfe54761032fedcba9876543210000000000000000000000000"
    "00000000000000000000000002730000006900000033221100554477668899aabbccddeeff0004000000"
)
TV3 = bytes.fromhex(
    "0101020167452301ab89efcd0123456789abcdef98badcfe54761032fedcba9876543210000000000000000000000000"
    "000000000000000000000000027b0500007c050000010100"
)
TV4 = bytes.fromhex(
    "010133221100554477668899aabbccddeeff98badcfe54761032fedcba98765432100000000000000000000000000000"
    "0000000000000000000003ca000000db000000d600000033221100554477668899aabbccddeeff0000001000"
)
TV5 = bytes.fromhex(
    "000048004f005300540031005c006f0072006400650072007300000098badcfe54761032fedcba987654321000000000"
    "00000000000000000000000000000000000000000f66000000650000006a00000068000000690000006b0000006d0000"
    "006e000000720000004d040000670000006c0000006f0000007000000071000000000000000000000000000000000000"
    "0067452301ab89efcd0123456789abcdefffff01ffffffffffffffff00f1536500f15365011400000001000480000000"
    "0000000000000000000000000048004f005300540031005c006f007200640065007200730000006f0072006400650072"
    "0073000000000100000000"
)

SD = bytes.fromhex("01000480") + bytes(16)  # 20-byte self-relative SD with a NULL DACL (TV-5)


def _pv(vt: V, value: object) -> PropVariant:
    return PropVariant(vt, value)  # type: ignore[arg-type]


TV2_UPDATE = NotificationUpdate(
    NotificationCommand.CHANGE,
    DS,
    ((115, _pv(V.VT_CLSID, QM)), (105, _pv(V.VT_UI4, 1024))),
    guid_identifier=Q,
)
TV3_UPDATE = NotificationUpdate(
    NotificationCommand.DELETE,
    DS,
    ((1403, _pv(V.VT_UI1, 1)), (1404, _pv(V.VT_UI1, 1))),
    guid_identifier=Q,
)
TV4_UPDATE = NotificationUpdate(
    NotificationCommand.CHANGE,
    DS,
    ((202, _pv(V.VT_CLSID, QM)), (219, _pv(V.VT_UI1, 0)), (214, _pv(V.VT_UI4, 0x00100000))),
    guid_identifier=QM,
)
TV5_UPDATE = NotificationUpdate(
    NotificationCommand.CREATE,
    DS,
    (
        (102, _pv(V.VT_CLSID, uuid.UUID(int=0))),
        (101, _pv(V.VT_CLSID, Q)),
        (106, _pv(V.VT_I2, -1)),
        (104, _pv(V.VT_UI1, 1)),
        (105, _pv(V.VT_UI4, 0xFFFFFFFF)),
        (107, _pv(V.VT_UI4, 0xFFFFFFFF)),
        (109, _pv(V.VT_I4, 1700000000)),
        (110, _pv(V.VT_I4, 1700000000)),
        (114, _pv(V.VT_UI1, 1)),
        (1101, _pv(V.VT_BLOB, SD)),
        (103, _pv(V.VT_LPWSTR, "HOST1\\orders")),
        (108, _pv(V.VT_LPWSTR, "orders")),
        (111, _pv(V.VT_UI1, 0)),
        (112, _pv(V.VT_UI4, 1)),
        (113, _pv(V.VT_UI1, 0)),
    ),
    path_name="HOST1\\orders",
)
TV1_BODY = NotificationBody(NotificationEvent.CREATE_QUEUE, OBJ, "DC01.contoso.com")


def test_vector_hashes_match_the_digest() -> None:
    assert (
        hashlib.sha256(TV1).hexdigest() == "e162c3add1624e9dfd40f083c25d28d96e32a8ddba302690165b81da40727397"
    )
    assert (
        hashlib.sha256(TV2).hexdigest() == "b9f739cecf4a7c9d911b036e78f55aad0bc3f4a44e335c012ebc780e905f4c3d"
    )
    assert (
        hashlib.sha256(TV3).hexdigest() == "d5a31dc8d6d9a0de9f80c5d0c012345180626e2767f79a6f2eb9ea28741d9979"
    )


# ---------------------------------------------------------------- TV-1 (v2)


def test_tv1_v2_create_queue_both_ways() -> None:
    msg = ChangeNotificationMessage.decode(TV1)
    assert msg.version == 2
    assert msg.number_of_update_notifications == 1
    assert msg.body == TV1_BODY
    assert msg.body is not None and msg.body.event is NotificationEvent.CREATE_QUEUE
    assert msg.trailing == b"\x00"
    assert msg.encode() == TV1
    assert ChangeNotificationMessage.v2(TV1_BODY).encode() == TV1
    assert len(TV1) == 289 + 2 * len("DC01.contoso.com")  # the digest's length law
    assert TV1[0x2C:0x2E] == b"1\x00"
    assert hashlib.sha256(TV1[:-1]).hexdigest() == (
        "8096c52eefc07fa9d9d7289fcb08984241688c70b43663d3538e184861eeffbc"
    )


def _v2(text: str, tail: bytes = b"\x00") -> bytes:
    return b"\x02\x01" + text.encode("utf-16-le") + tail


CANON = TV1_BODY.text()


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("TV-1a uppercase GUID", _v2(CANON.replace(str(OBJ), str(OBJ).upper()))),
        ("TV-1b NUL before pad", _v2(CANON, b"\x00\x00\x00")),
        ("TV-1c ABNF closing tag", _v2(CANON.replace("</ObjectGuid>", "</ObjectGuid >"))),
        ("TV-1d no pad byte", _v2(CANON, b"")),
        ("tags in lower case", _v2(CANON.lower().replace("dc01.contoso.com", "DC01.contoso.com"))),
        ("whitespace between elements", _v2(CANON.replace("><", ">\r\n  <"))),
    ],
)
def test_tv1_variants_parse_to_the_same_value(name: str, data: bytes) -> None:
    msg = ChangeNotificationMessage.decode(data)
    assert msg.body == TV1_BODY, name
    assert msg.encode() == data, name  # byte exact, even for non-canonical text


def test_tv1b_hash() -> None:
    data = _v2(CANON, b"\x00\x00\x00")
    assert len(data) == 323
    assert (
        hashlib.sha256(data).hexdigest() == "e9301f794ad6c3055bdb61e469a7751216fc8a5de047d46a812293738192f99a"
    )


@pytest.mark.parametrize("event", [2, 3, 4])
def test_tv1e_other_events_change_one_byte(event: int) -> None:
    data = TV1[:0x2C] + bytes([0x30 + event]) + TV1[0x2D:]
    msg = ChangeNotificationMessage.decode(data)
    assert msg.body is not None and msg.body.event == event
    assert (
        ChangeNotificationMessage.v2(
            NotificationBody(NotificationEvent(event), OBJ, "DC01.contoso.com")
        ).encode()
        == data
    )


@pytest.mark.parametrize(
    "text",
    [
        CANON.replace("<Event>1<", "<Event>0<"),
        CANON.replace("<Event>1<", "<Event>5<"),
        CANON.replace("<Event>1<", "<Event>01<"),
        CANON.replace("<Event>1<", "<Event> 1<"),
        CANON.replace(str(OBJ), "{" + str(OBJ) + "}"),
        CANON.replace(str(OBJ), str(OBJ) + "1"),  # last group of 13 digits
        CANON.replace(str(OBJ), str(OBJ)[:-1]),
        CANON.replace("DC01.contoso.com", "DC01 contoso.com"),
        CANON.replace("DC01.contoso.com", "DC01.contosö.com"),
        CANON.replace("DC01.contoso.com", "D" * 257),
        CANON.replace("DC01.contoso.com", ""),
        CANON.replace("<Notification>", ""),
        CANON + "x",
        "",
    ],
)
def test_tv1_rejected_variants(text: str) -> None:
    with pytest.raises(WireError):
        ChangeNotificationMessage.decode(_v2(text))


def test_tv1_longest_dc_accepted() -> None:
    body = NotificationBody(NotificationEvent.CHANGE_MACHINE, OBJ, "D" * 256)
    assert ChangeNotificationMessage.decode(_v2(CANON.replace("DC01.contoso.com", "D" * 256))).body == (
        NotificationBody(NotificationEvent.CREATE_QUEUE, OBJ, "D" * 256)
    )
    assert NotificationBody.decode(body.encode()) == body


@pytest.mark.parametrize(
    "data",
    [
        b"\x03\x01" + TV1[2:],  # Version 0x03
        b"\x00\x01" + TV1[2:],
        b"\x02\x02" + TV1[2:],  # v2 NumberOfUpdateNotifications MUST be 0x01
        b"\x02",
        b"",
    ],
)
def test_bad_envelope_rejected(data: bytes) -> None:
    with pytest.raises(WireError):
        ChangeNotificationMessage.decode(data)


def test_naive_utf16_decode_would_fail_tv9() -> None:
    # TV-9: the Data field is odd-length, so body[2:].decode("utf-16-le") raises; ours does not.
    with pytest.raises(UnicodeDecodeError):
        TV1[2:].decode("utf-16-le")
    assert ChangeNotificationMessage.decode(TV1).body == TV1_BODY


# ---------------------------------------------------------------- TV-2..TV-6 (v1)


def test_tv2_queue_update_both_ways() -> None:
    msg = ChangeNotificationMessage.decode(TV2)
    assert msg == ChangeNotificationMessage.v1([TV2_UPDATE])
    (update,) = msg.updates
    assert update.use_guid and update.guid_identifier == Q and update.path_name is None
    assert update.guid_master_id == DS
    assert update.reserved == bytes(24)
    assert update.property_ids == (115, 105)
    assert update.get(105) == _pv(V.VT_UI4, 1024)
    assert update.get(999) is None
    assert update.object_type == MQDS_QUEUE  # 115 // 100
    assert msg.trailing == b"\x00"
    assert msg.encode() == TV2
    assert ChangeNotificationMessage.v1([TV2_UPDATE]).encode() == TV2
    assert TV2_UPDATE.encode() == TV2[2:89]
    assert len(TV2_UPDATE.encode()) == 87
    # The PropertyId array starts at an odd offset (59 within the update).
    assert TV2[2 + 59 : 2 + 63] == (115).to_bytes(4, "little")


def test_tv3_queue_delete_both_ways() -> None:
    msg = ChangeNotificationMessage.decode(TV3)
    assert msg == ChangeNotificationMessage.v1([TV3_UPDATE])
    assert msg.updates[0].object_type == MQDS_QUEUE  # PropertyValue[1], positionally
    assert msg.encode() == TV3
    assert len(TV3_UPDATE.encode()) == 69
    mutated = TV3[:0x46] + b"\x02" + TV3[0x47:]
    assert ChangeNotificationMessage.decode(mutated).updates[0].object_type == MQDS_MACHINE


def test_tv4_machine_update_both_ways() -> None:
    assert NotificationUpdate.decode(TV4) == TV4_UPDATE
    assert TV4_UPDATE.encode() == TV4
    assert TV4_UPDATE.object_type == MQDS_MACHINE  # 202 // 100
    assert len(TV4) == 92


def test_tv5_queue_create_both_ways() -> None:
    update = NotificationUpdate.decode(TV5)
    assert update == TV5_UPDATE
    assert update.command is NotificationCommand.CREATE
    assert not update.use_guid and update.path_name == "HOST1\\orders"
    assert update.get(106) == _pv(V.VT_I2, -1)  # BasePriority is signed
    assert update.get(1101) == _pv(V.VT_BLOB, SD)
    assert update.object_type == 1  # 102 // 100
    assert TV5_UPDATE.encode() == TV5
    assert len(TV5) == 251
    assert TV5[68] == 15  # NumberOfProperties @68, PropertyId @69 (odd)


def test_tv6_two_updates_both_ways() -> None:
    data = b"\x01\x02" + TV5 + TV2[2:89] + b"\x00"
    assert len(data) == 341
    assert (
        hashlib.sha256(data).hexdigest() == "b3c29e1e6d0939dfb19c258e5a2680113145e9398ff968a1e2c4b86de5ca9c08"
    )
    msg = ChangeNotificationMessage.decode(data)
    assert msg.updates == (TV5_UPDATE, TV2_UPDATE)
    assert msg.number_of_update_notifications == 2
    assert msg.encode() == data
    assert ChangeNotificationMessage.v1([TV5_UPDATE, TV2_UPDATE]).encode() == data
    assert data[253:255] == b"\x01\x01"  # the second update starts at body offset 253


@pytest.mark.parametrize(
    ("propid", "expected"),
    [
        (101, 1), (102, 1), (115, 1), (126, 1), (1101, 1),
        (202, 2), (214, 2), (219, 2), (242, 2), (1201, 2),
        (1000, 10), (1001, 0), (1403, 4), (1404, 4), (99, 0), (301, 3),
    ],
)  # fmt: skip
def test_tv7_object_type_derivation(propid: int, expected: int) -> None:
    assert object_type_of_propid(propid) == expected


def test_tv7_no_properties_has_no_object_type() -> None:
    update = NotificationUpdate(NotificationCommand.CHANGE, DS, (), guid_identifier=Q)
    assert update.object_type is None
    assert NotificationUpdate.decode(update.encode()) == update
    short_delete = NotificationUpdate(
        NotificationCommand.DELETE, DS, ((1403, _pv(V.VT_UI1, 1)),), guid_identifier=Q
    )
    assert short_delete.object_type is None


def test_tv8_message_bytes_carry_no_sender_metadata() -> None:
    # TV-8's gate reads rMessage.SenderIdentifierType / AuthenticationLevel, which live outside the
    # body: the body decodes identically whatever the metadata, and v2 carries no gate fields at all.
    assert ChangeNotificationMessage.decode(TV2).version == 1
    assert ChangeNotificationMessage.decode(TV1).version == 2


@pytest.mark.parametrize("tail", [b"", b"\x00", b"\x01\x02\x03\x04\x05"])
def test_tv9_trailing_bytes_v1(tail: bytes) -> None:
    data = TV2[:89] + tail
    msg = ChangeNotificationMessage.decode(data)
    assert msg.updates == (TV2_UPDATE,)
    assert msg.trailing == tail
    assert msg.encode() == data


def test_operations_map_to_event_and_command() -> None:
    op = NotificationOperation
    assert [o.event for o in op] == [1, 2, 3, 4]
    assert [o.command for o in op] == [0, 1, 2, 1]
    assert [o.use_guid for o in op] == [False, True, True, True]


@pytest.mark.parametrize(
    "data",
    [
        TV2[:2] + b"\x03" + TV2[3:],  # Command 0x03
        TV2[:3] + b"\x02" + TV2[4:],  # UseGuid 0x02
        TV2[:61] + (116 + 9999).to_bytes(4, "little") + TV2[65:],  # unknown PROPID
        TV2[:88],  # truncated value
        b"\x01\x02" + TV2[2:89],  # two updates announced, one present
        b"\x01\x01\x00\x00" + "ab".encode("utf-16-le"),  # unterminated PathName
    ],
)
def test_malformed_v1_rejected(data: bytes) -> None:
    with pytest.raises(WireError):
        ChangeNotificationMessage.decode(data)


def test_construction_checks() -> None:
    with pytest.raises(WireError):
        NotificationUpdate(NotificationCommand.CHANGE, DS, ())  # neither PathName nor GuidIdentifier
    with pytest.raises(WireError):
        NotificationUpdate(NotificationCommand.CHANGE, DS, (), path_name="a", guid_identifier=Q)
    with pytest.raises(WireError):
        NotificationUpdate(3, DS, (), guid_identifier=Q)  # type: ignore[arg-type]
    with pytest.raises(WireError):
        NotificationUpdate(NotificationCommand.CHANGE, DS, ((105, _pv(V.VT_UI2, 1)),), guid_identifier=Q)
    with pytest.raises(WireError):
        NotificationUpdate(NotificationCommand.CHANGE, DS, ((7, _pv(V.VT_UI4, 1)),), guid_identifier=Q)
    with pytest.raises(WireError):
        NotificationUpdate(NotificationCommand.CHANGE, DS, (), guid_identifier=Q, reserved=b"\0")
    with pytest.raises(WireError):
        NotificationUpdate(NotificationCommand.CREATE, DS, (), path_name="a\x00b")
    with pytest.raises(WireError):
        NotificationUpdate(
            NotificationCommand.CHANGE, DS, ((105, _pv(V.VT_UI4, 1)),) * 256, guid_identifier=Q
        )
    assert NotificationUpdate(1, DS, (), guid_identifier=Q).command is NotificationCommand.CHANGE  # type: ignore[arg-type]
    with pytest.raises(WireError):
        ChangeNotificationMessage(3)
    with pytest.raises(WireError):
        ChangeNotificationMessage(2)
    with pytest.raises(WireError):
        ChangeNotificationMessage(1, (), TV1_BODY)
    with pytest.raises(WireError):
        ChangeNotificationMessage.v1([TV2_UPDATE] * 256)
    with pytest.raises(WireError):
        NotificationBody(5, OBJ, "dc")  # type: ignore[arg-type]
    with pytest.raises(WireError):
        NotificationBody(True, OBJ, "dc")  # type: ignore[arg-type]
    with pytest.raises(WireError):
        NotificationBody(NotificationEvent.CHANGE_QUEUE, OBJ, "a b")
    with pytest.raises(WireError):
        NotificationBody(NotificationEvent.CHANGE_QUEUE, str(OBJ), "dc")  # type: ignore[arg-type]
    assert ChangeNotificationMessage.v1([TV2_UPDATE] * 255).number_of_update_notifications == 255


# ---------------------------------------------------------------- Hypothesis

_guids = st.uuids()
_text = st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=12)
_BY_VT: dict[V, st.SearchStrategy[object]] = {
    V.VT_CLSID: _guids,
    V.VT_LPWSTR: _text,
    V.VT_UI1: st.integers(0, 255),
    V.VT_UI4: st.integers(0, 2**32 - 1),
    V.VT_I2: st.integers(-(2**15), 2**15 - 1),
    V.VT_I4: st.integers(-(2**31), 2**31 - 1),
    V.VT_BLOB: st.binary(max_size=24),
    V.VT_VECTOR_UI1: st.binary(max_size=24),
    V.VT_VECTOR_CLSID: st.lists(_guids, max_size=3).map(tuple),
    V.VT_VECTOR_LPWSTR: st.lists(_text, max_size=3).map(tuple),
}
assert set(PROPID_VT.values()) <= set(_BY_VT)


@st.composite
def _property(draw: st.DrawFn) -> tuple[int, PropVariant]:
    propid = draw(st.sampled_from(sorted(PROPID_VT)))
    vt = PROPID_VT[propid]
    return propid, PropVariant(vt, draw(_BY_VT[vt]))  # type: ignore[arg-type]


@st.composite
def updates(draw: st.DrawFn) -> NotificationUpdate:
    by_guid = draw(st.booleans())
    return NotificationUpdate(
        draw(st.sampled_from(NotificationCommand)),
        draw(_guids),
        tuple(draw(st.lists(_property(), max_size=6))),
        path_name=None if by_guid else draw(_text),
        guid_identifier=draw(_guids) if by_guid else None,
        reserved=draw(st.binary(min_size=24, max_size=24)),
    )


_dcs = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=256)
bodies = st.builds(NotificationBody, st.sampled_from(NotificationEvent), _guids, _dcs)
messages = st.one_of(
    st.builds(ChangeNotificationMessage.v1, st.lists(updates(), max_size=4), st.binary(max_size=6)),
    st.builds(ChangeNotificationMessage.v2, bodies, st.sampled_from([b"", b"\x00", b"\x00\x00\x00"])),
)


@given(updates())
def test_update_round_trip(update: NotificationUpdate) -> None:
    data = update.encode()
    assert NotificationUpdate.decode(data) == update
    assert NotificationUpdate.decode(data).encode() == data


@given(bodies)
def test_body_round_trip(body: NotificationBody) -> None:
    assert NotificationBody.decode(body.encode()) == body
    assert NotificationBody.parse(body.text()).text() == body.text()


@given(messages)
def test_message_round_trip(msg: ChangeNotificationMessage) -> None:
    data = msg.encode()
    back = ChangeNotificationMessage.decode(data)
    assert back == msg
    assert back.encode() == data


@given(st.binary(max_size=400))
def test_arbitrary_bytes(data: bytes) -> None:
    for decoder in (ChangeNotificationMessage.decode, NotificationUpdate.decode, NotificationBody.decode):
        try:
            decoder(data)
        except WireError:
            pass


@given(st.binary(max_size=300))
def test_arbitrary_v1_and_v2_payloads(data: bytes) -> None:
    for head in (b"\x01\x01", b"\x01\x03", b"\x02\x01"):
        try:
            msg = ChangeNotificationMessage.decode(head + data)
        except WireError:
            continue
        assert msg.encode() == head + data


@given(st.sampled_from([TV1, TV2, TV3, b"\x01\x01" + TV5 + b"\x00"]), st.data())
def test_vector_truncations_and_trailing_garbage(vector: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(vector)))
    try:
        msg = ChangeNotificationMessage.decode(vector[:cut])
    except WireError:
        pass
    else:
        assert msg.encode() == vector[:cut]
    extra = data.draw(st.binary(max_size=9))
    try:
        ChangeNotificationMessage.decode(vector + extra)
    except WireError:
        pass


@given(st.sampled_from([TV4, TV5]), st.data())
def test_update_truncations(vector: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(vector) - 1))
    with pytest.raises(WireError):
        NotificationUpdate.decode(vector[:cut])
    with pytest.raises(WireError):
        NotificationUpdate.decode(vector + data.draw(st.binary(min_size=1, max_size=8)))
