"""Model layer: Message defaults and validation ([MC-MQAC] 3.17), object ids, queue names and the
private-queue hash ([MC-MQAC] 3.1.6.2), queue properties ([MS-MQDMPR] 3.1.7.1.33), constants
([MC-MQAC] 2.2.2).  The stored-packet mapping is tested in test_packet_mapping.py."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pymsmq
from pymsmq import HResult, Message, MSMQError, QueueManager
from pymsmq.errors import FormatNameError
from pymsmq.model import constants as c
from pymsmq.model.ids import ObjectId
from pymsmq.model.names import LocalFormat, QueuePath, format_name_from_path, private_queue_hash
from pymsmq.model.queue_properties import QueueProperties

QM = uuid.UUID("12345678-1234-5678-9abc-def012345678")


def _hr(excinfo: pytest.ExceptionInfo[MSMQError]) -> int:
    return excinfo.value.hresult


# ---------------------------------------------------------------- constants (D9 1-6)
def test_constants_have_spec_values() -> None:
    assert (c.MQ_RECEIVE_ACCESS, c.MQ_SEND_ACCESS, c.MQ_PEEK_ACCESS, c.MQ_ADMIN_ACCESS) == (1, 2, 0x20, 0x80)
    assert c.MQMSG_CLASS_ACK_RECEIVE == 0x4000 and c.MQMSG_CLASS_NACK_Q_DELETED == 0xC000
    assert c.MQMSG_CLASS_NACK_RECEIVE_TIMEOUT_AT_SENDER == 0xC003
    assert c.MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE == 0x05 and c.MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE == 0x0E
    assert c.MQMSG_ACKNOWLEDGMENT_NACK_REACH_QUEUE == c.MQMSG_ACKNOWLEDGMENT_NEG_ARRIVAL == 0x04
    assert (c.MQMSG_AUTH_LEVEL_SIG10, c.MQMSG_AUTH_LEVEL_SIG20, c.MQMSG_AUTH_LEVEL_SIG30) == (2, 4, 8)
    assert c.MQMSG_AUTHENTICATED_SIG30 == 5 and c.MQMSG_AUTHENTICATED_SIGXML == 9
    assert c.MQ_QUEUE_STATE_LOCAL_CONNECTION == 0 and c.MQ_QUEUE_STATE_LOCKED == 8
    assert c.MQMSG_CALG_SHA == c.MQMSG_CALG_SHA1 == 0x8004 and c.MQMSG_CALG_RC4 == 0x6801
    assert c.XACTTC_SYNC == c.XACTTC_SYNC_PHASETWO == 2 and c.XACTTC_ASYNC == 4
    assert (c.MQ_NO_TRANSACTION, c.MQ_MTS_TRANSACTION, c.MQ_XA_TRANSACTION, c.MQ_SINGLE_MESSAGE) == (
        0,
        1,
        2,
        3,
    )
    assert (c.MQ_DENY_NONE, c.MQ_DENY_RECEIVE_SHARE) == (0, 1)
    assert (c.MQMSG_DELIVERY_EXPRESS, c.MQMSG_DELIVERY_RECOVERABLE) == (0, 1)
    assert (c.MQMSG_JOURNAL_NONE, c.MQMSG_DEADLETTER, c.MQMSG_JOURNAL) == (0, 1, 2)


def test_constants_importable_from_pymsmq() -> None:
    assert pymsmq.MQMSG_DEADLETTER == 1
    assert pymsmq.MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE == 0x0E
    assert pymsmq.MQ_PEEK_ACCESS == 0x20
    assert pymsmq.MQMSG_CLASS_NORMAL == 0
    assert "MQMSG_DELIVERY_RECOVERABLE" in pymsmq.__all__


# ---------------------------------------------------------------- Message defaults (D9 83)
def test_message_defaults() -> None:
    m = Message()
    assert m.priority == 3 and m.delivery == 0 and m.ack == 0 and m.journal == 0 and m.trace == 0
    assert m.priv_level == 0 and m.auth_level == 0 and m.sender_id_type == 1
    assert m.hash_algorithm == 0x8004 and m.encrypt_algorithm == 0x6801
    assert m.max_time_to_reach_queue == m.max_time_to_receive == 0xFFFFFFFF
    assert m.label == "" and m.app_specific == 0 and m.body == b"" and m.body_length == 0
    assert m.authentication_provider_type == 1
    assert m.authentication_provider_name == "Microsoft Base Cryptographic Provider, v1.0"
    assert m.lookup_id == 0 and m.id is None and m.correlation_id is None and m.msg_class == 0
    assert m.sender_version == 0x10 and not m.recoverable


@pytest.mark.parametrize("value", [0, 7])
def test_priority_bounds_accepted(value: int) -> None:
    assert Message(priority=value).priority == value


@pytest.mark.parametrize("value", [8, -1, 100])
def test_priority_out_of_range(value: int) -> None:
    with pytest.raises(MSMQError) as e:
        Message(priority=value)
    assert _hr(e) == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE


def test_label_length_limit() -> None:
    assert Message(label="x" * 249).label == "x" * 249
    with pytest.raises(MSMQError) as e:
        Message(label="x" * 250)
    assert _hr(e) == HResult.MQ_ERROR_LABEL_TOO_LONG == 0xC00E005D


def test_label_length_counts_utf16_units() -> None:
    # [MC-MQAC] put_Label counts WCHARs: a character beyond the BMP is a surrogate pair (2).  125 of
    # them were refused later, by the encoder, with MQ_ERROR_ILLEGAL_PROPERTY_VALUE.
    assert Message(label="\U0001f600" * 124 + "x").label  # 249 units
    for make in (
        lambda: Message(label="\U0001f600" * 125),
        lambda: Message(body=b"x", label="\U0001f600" * 125, priority=1),
    ):
        with pytest.raises(MSMQError) as e:
            make()
        assert _hr(e) == HResult.MQ_ERROR_LABEL_TOO_LONG
        assert "250 UTF-16 units (max 249)" in str(e.value)
    m = Message()
    m.label = "\u00e9" * 249  # BMP characters count one each
    m.validate()


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("priv_level", [0, 1, 3], [2, 4]),
        ("auth_level", [0, 1, 2, 4, 8], [3, 5, 16]),
        ("journal", [0, 1, 2, 3], [4, -1]),
        ("ack", [0, 1, 2, 3, 4, 5, 6, 8, 0xC, 0xE, 0xF], [-1, 0x10, 0x14]),
        ("delivery", [0, 1], [2]),
        ("trace", [0, 1], [2]),
    ],
)
def test_enumerated_properties(name: str, good: list[int], bad: list[int]) -> None:
    for value in good:
        assert getattr(Message(**{name: value}), name) == value
    for value in bad:
        with pytest.raises(MSMQError) as e:
            Message(**{name: value})
        assert _hr(e) == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE


def test_validate_catches_later_mutation() -> None:
    m = Message()
    m.priority = 9
    with pytest.raises(MSMQError) as e:
        m.validate()
    assert _hr(e) == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE


def test_body_must_be_bytes() -> None:
    assert Message(body=bytearray(b"ab")).body == b"ab"
    assert Message(body=memoryview(b"cd")).body == b"cd"
    with pytest.raises(MSMQError) as e:
        Message(body={"a": 1})  # type: ignore[arg-type]
    assert _hr(e) == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE


def test_app_specific_signed_is_stored_unsigned() -> None:
    assert Message(app_specific=-1).app_specific == 0xFFFFFFFF
    with pytest.raises(MSMQError):
        Message(app_specific=1 << 32)


def test_infinite_times_accept_minus_one() -> None:
    assert Message(max_time_to_receive=-1).max_time_to_receive == 0xFFFFFFFF
    with pytest.raises(MSMQError):
        Message(max_time_to_reach_queue=-2)


def test_correlation_id_sizes() -> None:
    oid = ObjectId(QM, 7)
    assert Message(correlation_id=bytes(oid)).correlation_id == oid
    assert Message(correlation_id=str(oid)).correlation_id == oid
    with pytest.raises(MSMQError) as e:
        Message(correlation_id=b"x" * 19)
    assert _hr(e) == HResult.MQ_ERROR_ILLEGAL_PROPERTY_SIZE


def test_connector_type_guid_accepts_text() -> None:
    g = uuid.uuid4()
    assert Message(connector_type_guid=str(g)).connector_type_guid == g  # type: ignore[arg-type]
    with pytest.raises(MSMQError):
        Message(connector_type_guid="not-a-guid")  # type: ignore[arg-type]


def test_msg_class_accepts_enum_and_u16() -> None:
    assert Message(msg_class=c.MQMSG_CLASS_REPORT).msg_class == 1
    with pytest.raises(MSMQError):
        Message(msg_class=0x10000)


def test_copy_is_equal_and_independent() -> None:
    m = Message(body=b"a", label="l", priority=5)
    n = m.copy()
    assert n == m and n is not m
    n.label = "other"
    assert m.label == "l"


# ---------------------------------------------------------------- ids
def test_object_id_bytes_layout() -> None:
    oid = ObjectId(QM, 0x01020304)
    raw = bytes(oid)
    assert len(raw) == 20
    assert raw[:16] == QM.bytes_le and raw[16:] == b"\x04\x03\x02\x01"
    assert ObjectId.from_bytes(raw) == oid


def test_object_id_text_form() -> None:
    oid = ObjectId(QM, 42)
    assert str(oid) == "{12345678-1234-5678-9abc-def012345678}\\42"
    assert ObjectId.parse(str(oid)) == oid
    assert ObjectId.parse("12345678-1234-5678-9ABC-DEF012345678\\42") == oid
    for bad in ("nope", "{x}\\1", "{12345678-1234-5678-9abc-def012345678}\\-1", f"{{{QM}}}\\{1 << 32}"):
        with pytest.raises(MSMQError):
            ObjectId.parse(bad)


@given(st.uuids(), st.integers(0, 0xFFFFFFFF))
def test_object_id_round_trip(g: uuid.UUID, n: int) -> None:
    oid = ObjectId(g, n)
    assert ObjectId.from_bytes(bytes(oid)) == oid
    assert ObjectId.parse(str(oid)) == oid


@given(st.binary(max_size=40))
def test_object_id_from_any_bytes(data: bytes) -> None:
    try:
        ObjectId.from_bytes(data)
    except MSMQError as e:
        assert e.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_SIZE
    else:
        assert len(data) == 20


# ---------------------------------------------------------------- names (D9 7-11)
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a", 0x00000061),
        ("ab", 0x00000CE3),
        ("test", 0x004158E0),
        ("TEST", 0x002F4060),
        ("orders", 0x0B3419EF),
        ("MyQueue", 0x4780206B),
        ("abcdefghijklmnop", 0x3A492B88),
    ],
)
def test_private_queue_hash_vectors(name: str, expected: int) -> None:
    assert private_queue_hash(name) == expected


def test_format_name_from_path_directory_integrated() -> None:
    assert format_name_from_path("m\\private$\\test", QM) == f"PRIVATE={QM}\\004158e0"
    assert format_name_from_path("m\\private$\\test;poison", QM) == f"PRIVATE={QM}\\004158e0;poison"


def test_format_name_from_path_workgroup() -> None:
    assert (
        format_name_from_path("m\\private$\\q", QM, directory_integrated=False) == "DIRECT=OS:m\\private$\\q"
    )


def test_format_name_from_path_errors() -> None:
    with pytest.raises(MSMQError) as e:
        format_name_from_path("m\\pubq", QM)
    assert _hr(e) == HResult.MQ_ERROR_QUEUE_NOT_FOUND
    with pytest.raises(MSMQError) as e:
        format_name_from_path("m\\system$;journal", QM)
    assert _hr(e) == HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME


@pytest.mark.parametrize(
    ("text", "kind", "name", "sub"),
    [
        (".\\private$\\Orders", "private", "Orders", None),
        ("host\\PRIVATE$\\q;poison", "private", "q", "poison"),
        ("host\\pub", "public", "pub", None),
        ("host\\system$;deadletter", "system", "DEADLETTER", None),
    ],
)
def test_queue_path_parse(text: str, kind: str, name: str, sub: str | None) -> None:
    p = QueuePath.parse(text)
    assert (p.kind, p.name, p.subqueue) == (kind, name, sub)


@pytest.mark.parametrize(
    "text",
    [
        "noslash",
        "\\private$\\q",
        ".\\private$\\",
        ".\\bad name",
        ".\\a,b",
        ".\\q;",
        ".\\system$;other",
        ".\\private$",
    ],
)
def test_queue_path_rejects(text: str) -> None:
    with pytest.raises(FormatNameError) as e:
        QueuePath.parse(text)
    assert e.value.hresult == HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME


def test_queue_path_key_is_case_insensitive() -> None:
    assert QueuePath.parse(".\\private$\\Orders").key == QueuePath.parse("X\\PRIVATE$\\orders").key


def test_local_format_parse() -> None:
    f = LocalFormat.parse(f"PRIVATE={QM}\\0b3419ef;JOURNAL")
    assert (f.kind, f.guid, f.number, f.suffix) == ("private", QM, 0x0B3419EF, "JOURNAL")
    f = LocalFormat.parse("DIRECT=OS:.\\private$\\q;sub")
    assert f.kind == "direct" and f.subqueue == "sub" and f.path is not None and f.path.name == "q"
    f = LocalFormat.parse(f"MACHINE={QM};DEADXACT")
    assert (f.kind, f.suffix) == ("machine", "DEADXACT")
    for bad in (f"PRIVATE={QM}", "PUBLIC=zz", f"MACHINE={QM}", "DL=x", "X=1"):
        with pytest.raises(FormatNameError) as e:
            LocalFormat.parse(bad)
        assert e.value.hresult == HResult.MQ_ERROR_ILLEGAL_FORMATNAME
    # Valid format names that name no local queue: unsupported, not illegal (outside QA, 2026-11-27).
    multiple = f"PRIVATE={QM}\\1,PRIVATE={QM}\\2"
    for valid in ("DIRECT=HTTP://x/msmq\\q", f"DL={QM}", multiple, "MULTICAST=234.1.1.1:8001"):
        with pytest.raises(MSMQError) as caught:
            LocalFormat.parse(valid)
        assert caught.value.hresult == HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION, valid
        assert not isinstance(caught.value, FormatNameError)  # not malformed


# ---------------------------------------------------------------- queue properties
def test_queue_property_defaults() -> None:
    p = QueueProperties()
    assert p.label == "" and p.service_type_guid == uuid.UUID(int=0) and not p.journal
    assert p.quota == p.journal_quota == 0xFFFFFFFF
    assert not p.authenticate and p.priv_level == 1 and not p.transactional
    assert p.multicast_address is None and p.base_priority == 0


@pytest.mark.parametrize(
    "changes",
    [
        {"label": "x" * 125},
        {"priv_level": 3},
        {"base_priority": 40000},
        {"quota": 1 << 32},
        {"multicast_address": "10.0.0.1:80"},
        {"multicast_address": "224.1.1.1:65536"},
        {"journal": 2},
    ],
)
def test_queue_property_validation(changes: dict[str, object]) -> None:
    with pytest.raises(MSMQError) as e:
        QueueProperties().replace(**changes)
    assert _hr(e) == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE


def test_queue_properties_round_trip_dict() -> None:
    p = QueueProperties(label="x", multicast_address="234.1.1.1:8001", journal=True, quota=5, queue_guid=QM)
    assert QueueProperties.from_dict(p.to_dict()) == p
    with pytest.raises(MSMQError) as e:
        p.replace(bogus=1)
    assert _hr(e) == HResult.MQ_ERROR_ILLEGAL_PROPID


@pytest.mark.parametrize("name", ["\x00", "Microsoft\x00Base", "provider\x00"])
def test_a_provider_name_with_nul_is_refused_before_any_send(name: str) -> None:
    # [MS-MQMQ] 2.2.20.6: ProviderName is NUL-terminated.  Refused when the message is made, when
    # it is set afterwards and sent (express and recoverable alike: a recoverable send used to fail
    # only when its packet was written, an express one not at all).
    with pytest.raises(MSMQError) as e:
        Message(body=b"x", authentication_provider_name=name)
    assert e.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
    qm = QueueManager.open(":memory:")
    try:
        q = qm.create_queue(r".\private$\nul")
        for delivery in (0, 1):
            m = Message(body=b"x", delivery=delivery)
            m.authentication_provider_name = name
            with pytest.raises(MSMQError) as e:
                q.send(m)
            assert e.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
            assert "cannot contain NUL" in str(e.value)
        assert len(q._index()) == 0  # nothing was queued
    finally:
        qm.close()
