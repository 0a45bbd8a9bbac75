"""The ``Message`` <-> JSON mapping of ``--json`` output and export files: round trips and hostile input."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq import Message, ObjectId
from pymsmq.cli._msgjson import (
    ASSIGNED_FIELDS,
    MESSAGE_FIELDS,
    MessageJSONError,
    body_text,
    message_from_json,
    message_to_json,
    sendable_copy,
)

u32 = st.integers(0, 0xFFFFFFFF)
opt_bytes = st.none() | st.binary(max_size=40)
opt_text = st.none() | st.text(max_size=30)
ids = st.builds(ObjectId, st.uuids(), u32)
times = st.none() | st.floats(0, 4e9, allow_nan=False) | st.integers(0, 1 << 33)

messages = st.builds(
    Message,
    body=st.binary(max_size=200),
    label=st.text(max_size=249),
    body_type=u32,
    extension=st.binary(max_size=20),
    app_specific=u32,
    correlation_id=st.none() | ids,
    msg_class=st.integers(0, 0xFFFF),
    priority=st.integers(0, 7),
    delivery=st.sampled_from([0, 1]),
    ack=st.sampled_from([0, 1, 2, 4, 5, 8, 0x0C, 0x0E]),
    journal=st.integers(0, 3),
    trace=st.sampled_from([0, 1]),
    max_time_to_reach_queue=u32,
    max_time_to_receive=u32,
    response_queue=opt_text,
    admin_queue=opt_text,
    dead_letter_queue=opt_text,
    priv_level=st.sampled_from([0, 1, 3]),
    auth_level=st.sampled_from([0, 1, 2, 4, 8]),
    hash_algorithm=u32,
    encrypt_algorithm=u32,
    sender_id=opt_bytes,
    sender_id_type=st.sampled_from([0, 1, 2]),
    sender_certificate=opt_bytes,
    signature=opt_bytes,
    destination_symmetric_key=opt_bytes,
    authentication_provider_type=u32,
    # [MS-MQMQ] 2.2.20.6: ProviderName is NUL-terminated (validate refuses a NUL in it).
    authentication_provider_name=st.none() | st.text(max_size=30).filter(lambda s: "\x00" not in s),
    connector_type_guid=st.none() | st.uuids(),
    id=st.none() | ids,
    lookup_id=st.integers(0, (1 << 64) - 1),
    sent_time=times,
    arrived_time=times,
    source_machine_guid=st.none() | st.uuids(),
    destination_queue=opt_text,
    transaction_status_queue=opt_text,
    transaction_id=st.none() | ids,
    is_first_in_transaction=st.booleans(),
    is_last_in_transaction=st.booleans(),
    received_authentication_level=st.integers(0, 0xFFFF),
    abort_count=u32,
    move_count=u32,
    last_move_time=times,
    soap_envelope=opt_text,
    compound_message=opt_bytes,
)


@given(messages)
def test_round_trip_through_json_text(m: Message) -> None:
    text = json.dumps(message_to_json(m))
    assert message_from_json(json.loads(text)) == m


@given(messages)
def test_sendable_copy_resets_only_assigned_fields(m: Message) -> None:
    copy = sendable_copy(m)
    default = Message()
    for name in MESSAGE_FIELDS:
        expected = getattr(default if name in ASSIGNED_FIELDS else m, name)
        assert getattr(copy, name) == expected, name


def test_encoding_of_each_kind_of_value() -> None:
    guid = uuid.UUID("12345678-1234-5678-9abc-def012345678")
    m = Message(body=b"\x00\xff", correlation_id=ObjectId(guid, 5), connector_type_guid=guid, sent_time=1.5)
    data = message_to_json(m)
    assert data["body"] == "AP8="
    assert data["correlation_id"] == "{12345678-1234-5678-9abc-def012345678}\\5"
    assert data["connector_type_guid"] == "12345678-1234-5678-9abc-def012345678"
    assert data["sent_time"] == 1.5 and data["sender_id"] is None and data["priority"] == 3
    # Every property, in Message order, but destination_format_name, written only when set (files
    # without it read in older versions too).
    assert list(data) == [f for f in MESSAGE_FIELDS if f != "destination_format_name"]
    m.destination_format_name = r"DIRECT=OS:.\private$\a,DIRECT=OS:.\private$\b"
    assert list(message_to_json(m)) == list(MESSAGE_FIELDS)
    assert message_from_json(message_to_json(m)) == m


def test_missing_members_take_defaults_and_null_bodies_are_empty() -> None:
    assert message_from_json({}) == Message()
    assert message_from_json({"body": None, "extension": None}).body == b""


def test_body_text() -> None:
    assert body_text(Message(body=b"plain\ttext\n")) == "plain\ttext\n"
    assert body_text(Message(body=b"\x00\x01")) is None
    assert body_text(Message(body=b"\xff\xfe")) is None
    assert body_text(Message(body="h\u00e9\x00".encode("utf-16-le"), body_type=8)) == "h\u00e9"
    assert body_text(Message(body=b"\x00\xd8", body_type=31)) is None  # lone surrogate


def test_times_must_be_finite_seconds_not_below_zero() -> None:
    # (Outside QA) an import file could give last_move_time (and sent_time) NaN, Infinity or a
    # negative number; Python's json reads NaN and Infinity although JSON has neither.
    for name in ("sent_time", "arrived_time", "last_move_time"):
        for bad in (float("nan"), float("inf"), -1.0, -5):
            with pytest.raises(MessageJSONError, match=name):
                message_from_json(json.loads(json.dumps({name: bad})))
        assert getattr(message_from_json({name: 1.5}), name) == 1.5
        assert getattr(message_from_json({name: 1e308}), name) == 1e308  # finite: a number of seconds
