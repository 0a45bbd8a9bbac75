"""``Message`` <-> [MS-MQMQ] UserMessage packet ([MS-MQDMPR] 3.1.7.1.30-32): round trips of every
property, the header fields that carry them, and hostile input (any bytes -> Message or WireError)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq import Message, MSMQError
from pymsmq.errors import WireError
from pymsmq.hresult import HResult
from pymsmq.model import constants as c
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import DEFAULT_PROVIDER_NAME
from pymsmq.model.packet_mapping import (
    INTERIM_MAGIC,
    canonical_queues,
    message_to_packet,
    packet_to_message,
    packet_to_user_message,
)
from pymsmq.model.packet_queues import canonical_format_name
from pymsmq.wire import (
    DirectQueueFormatName,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueType,
    UserMessage,
    decode_packet,
)
from pymsmq.wire.packet_types import MQFDirectQueueFormatName, MQFDistributionQueueFormatName

QM = uuid.UUID("12345678-1234-5678-9abc-def012345678")
OTHER = uuid.UUID("0f0e0d0c-0b0a-0908-0706-050403020100")
FACTS = ("lookup_id", "arrived_time", "abort_count", "move_count")
NOT_CARRIED = ("transaction_status_queue", "received_authentication_level")

# ---------------------------------------------------------------- strategies
u32 = st.integers(0, 0xFFFFFFFF)
guids = st.uuids()
_name_chars = st.characters(codec="ascii", categories=["Ll", "Lu", "Nd"])
qnames = st.text(_name_chars, min_size=1, max_size=12)
computers = st.text(_name_chars, min_size=1, max_size=10)


@st.composite
def single_names(draw: st.DrawFn) -> str:
    kind = draw(
        st.sampled_from(["public", "private", "direct", "direct_public", "http", "machine", "journal"])
    )
    g = draw(guids)
    if kind == "public":
        return f"PUBLIC={g}"
    if kind == "private":
        return f"PRIVATE={g}\\{draw(u32):08x}"
    if kind == "direct":
        return f"DIRECT=OS:{draw(computers)}\\private$\\{draw(qnames)}"
    if kind == "direct_public":
        return f"DIRECT=TCP:10.0.0.{draw(st.integers(0, 255))}\\{draw(qnames)}"
    if kind == "http":
        return f"DIRECT=http://{draw(computers)}/msmq/private$/{draw(qnames)}"
    if kind == "machine":
        return f"MACHINE={g};{draw(st.sampled_from(['JOURNAL', 'DEADLETTER', 'DEADXACT']))}"
    return f"PRIVATE={g}\\{draw(u32):08x};JOURNAL"


@st.composite
def list_names(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(
            st.one_of(
                guids.map(lambda g: f"DL={g}"),
                guids.map(lambda g: f"DL={g}@corp.example"),
                guids.map(lambda g: f"PUBLIC={g}"),
                st.builds(lambda g, n: f"PRIVATE={g}\\{n:08x}", guids, u32),
                qnames.map(lambda q: f"DIRECT=OS:host\\{q}"),
                st.just("MULTICAST=234.1.1.1:8001"),
            ),
            min_size=1,
            max_size=4,
        )
    )
    return ",".join(parts)


queue_names = st.none() | single_names() | list_names()
ids = st.builds(ObjectId, guids, u32)
opt_bytes = st.none() | st.binary(min_size=1, max_size=24)
labels = st.text(st.characters(codec="utf-16", exclude_characters="\x00", max_codepoint=0xFFFF), max_size=249)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    """A Message with every carried property random, consistent with what the packet can hold."""
    source = draw(st.none() | guids)
    mid = (
        None
        if source is None
        else draw(st.none() | st.builds(ObjectId, st.just(source), st.integers(1, 2**32 - 1)))
    )
    transactional = draw(st.booleans())
    lineages = guids if source is None else st.just(source) | guids
    sender_id_type = draw(st.sampled_from([0, 1, 2]))
    return Message(
        body=draw(st.binary(max_size=300)),
        label=draw(labels),
        body_type=draw(u32),
        extension=draw(st.binary(max_size=20)),
        app_specific=draw(u32),
        correlation_id=draw(st.none() | st.builds(ObjectId, guids, st.integers(1, 2**32 - 1))),
        msg_class=draw(st.integers(0, 0xFFFF)),
        priority=0 if transactional else draw(st.integers(0, 7)),
        delivery=1 if transactional else draw(st.sampled_from([0, 1])),
        ack=draw(st.sampled_from(sorted(c.VALID_ACK_VALUES))),
        journal=draw(st.integers(0, 3)),
        trace=draw(st.sampled_from([0, 1])),
        max_time_to_reach_queue=draw(u32),
        max_time_to_receive=draw(u32),
        response_queue=draw(queue_names),
        admin_queue=draw(queue_names),
        dead_letter_queue=draw(st.none() | qnames.map(lambda q: f".\\private$\\{q}")),
        priv_level=draw(st.sampled_from([0, 1, 3])),
        auth_level=draw(st.sampled_from([0, 1, 2, 4, 8])),
        hash_algorithm=draw(u32),
        encrypt_algorithm=draw(u32),
        sender_id=None if sender_id_type == 0 else draw(opt_bytes),
        sender_id_type=sender_id_type,
        sender_certificate=draw(opt_bytes),
        signature=draw(opt_bytes),
        destination_symmetric_key=draw(opt_bytes),
        authentication_provider_type=draw(st.just(1) | u32),
        authentication_provider_name=draw(
            st.just(DEFAULT_PROVIDER_NAME) | st.text(max_size=30).filter(lambda s: "\x00" not in s)
        ),
        connector_type_guid=draw(st.none() | guids),
        id=mid,
        sent_time=draw(st.none() | st.integers(1, 0xFFFFFFFF).map(float)),
        source_machine_guid=source,
        destination_queue=draw(st.none() | single_names()),
        destination_format_name=draw(st.none() | list_names()),
        transaction_id=draw(st.builds(ObjectId, lineages, u32)) if transactional else None,
        is_first_in_transaction=transactional and draw(st.booleans()),
        is_last_in_transaction=transactional and draw(st.booleans()),
        soap_envelope=draw(st.none() | st.text(max_size=40)),
        compound_message=draw(opt_bytes),
    )


def _carried(m: Message) -> dict[str, object]:
    return {n: getattr(m, n) for n in Message.__dataclass_fields__ if n not in FACTS + NOT_CARRIED}


# ---------------------------------------------------------------- round trips
@given(messages())
def test_round_trip_every_property(m: Message) -> None:
    data = message_to_packet(m)
    back = packet_to_message(data)
    assert _carried(back) == _carried(m)
    # The bytes are a real UserMessage: decode_packet and the codec agree, byte for byte.
    um = UserMessage.decode(data)
    assert um.encode() == data
    assert isinstance(decode_packet(data), UserMessage | object)
    assert message_to_packet(back) == data


@given(messages())
def test_headers_carry_the_values_where_the_spec_says(m: Message) -> None:
    um = UserMessage.decode(message_to_packet(m))
    bh, uh, mp = um.base_header, um.user_header, um.message_properties_header
    assert bh.flags & 7 == m.priority  # BaseHeader.Flags.PR
    assert bool(bh.flags & 0x100) == bool(m.trace)  # Flags.TR
    assert (um.debug_header is not None) == bool(m.trace)  # Flags.DH
    assert bh.time_to_reach_queue == m.max_time_to_reach_queue
    assert uh.time_to_be_received == m.max_time_to_receive
    assert uh.jn == bool(m.journal & c.MQMSG_DEADLETTER) and uh.jp == bool(m.journal & c.MQMSG_JOURNAL)
    assert uh.recoverable == (m.delivery == 1)
    assert uh.connector_type == m.connector_type_guid and uh.cq == (m.connector_type_guid is not None)
    assert uh.message_id == (m.id.uniquifier if m.id else 0)
    assert mp.label == (m.label or None)
    assert mp.body == m.body and mp.extension == m.extension
    assert mp.flags & 0x0F == m.ack
    assert (mp.message_class, mp.body_type, mp.application_tag) == (m.msg_class, m.body_type, m.app_specific)
    assert (mp.privacy_level, mp.hash_algorithm, mp.encryption_algorithm) == (
        m.priv_level,
        m.hash_algorithm,
        m.encrypt_algorithm,
    )
    assert mp.correlation_id == (bytes(m.correlation_id) if m.correlation_id else bytes(20))
    assert (um.transaction_header is not None) == (m.transaction_id is not None) == uh.th
    if um.transaction_header is not None and m.transaction_id is not None:
        th = um.transaction_header
        assert th.first_message == m.is_first_in_transaction and th.last_message == m.is_last_in_transaction
        assert th.transaction_id == m.transaction_id.uniquifier & 0xFFFFF
    assert (um.dead_letter_header is not None) == (m.dead_letter_queue is not None)
    if um.dead_letter_header is not None:
        assert um.dead_letter_header.dead_letter_path_name == m.dead_letter_queue
    assert (um.srmp_envelope_header is not None) == (
        m.soap_envelope is not None or m.compound_message is not None
    )
    if um.security_header is not None:
        sh = um.security_header
        assert sh.sender_id_type == m.sender_id_type
        assert sh.security_id == (m.sender_id or b"") and sh.sender_cert == (m.sender_certificate or b"")
        assert sh.signature == (m.signature or b"") and sh.encryption_key == (
            m.destination_symmetric_key or b""
        )
        assert sh.body_encrypted == bool(m.priv_level)


def test_simple_message_bytes_follow_the_spec_tables() -> None:
    m = Message(
        body=b"hello",
        label="l",
        priority=5,
        journal=c.MQMSG_JOURNAL,
        max_time_to_reach_queue=60,
        max_time_to_receive=3600,
        id=ObjectId(QM, 7),
        source_machine_guid=QM,
        sent_time=1_700_000_000.75,
        destination_queue=f"PRIVATE={QM}\\00000012",
        admin_queue=r"DIRECT=OS:adm\private$\acks",
        ack=c.MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
        app_specific=0xDEADBEEF,
    )
    data = message_to_packet(m)
    # BaseHeader ([MS-MQMQ] 2.2.19.1): version 0x10, reserved, Flags (PR=5), signature "LIOR", size, TTRQ.
    assert data[0] == 0x10 and data[2:4] == (5).to_bytes(2, "little")
    assert data[4:8] == b"LIOR" and int.from_bytes(data[8:12], "little") == len(data)
    assert int.from_bytes(data[12:16], "little") == 60
    # UserHeader: SourceQueueManager (MS-DTYP layout), QueueManagerAddress, TTBR, SentTime, MessageID, Flags.
    assert data[16:32] == QM.bytes_le and data[32:48] == QM.bytes_le
    assert int.from_bytes(data[48:52], "little") == 3600
    assert int.from_bytes(data[52:56], "little") == 1_700_000_000  # whole seconds
    assert int.from_bytes(data[56:60], "little") == 7
    flags = int.from_bytes(data[60:64], "little")
    assert flags & 0x200 and not flags & 0x100  # JP set, JN clear
    assert (flags >> 10) & 7 == QueueType.PRIVATE_QUEUE_ON_DESTINATION
    assert (flags >> 13) & 7 == QueueType.DIRECT_QUEUE and flags & 0x00200000  # AQ direct, MP
    assert data[64:68] == (0x12).to_bytes(4, "little")  # PrivateQueueFormatNameId
    um = UserMessage.decode(data)
    assert um.user_header.admin_queue == DirectQueueFormatName(r"OS:adm\private$\acks")
    assert (
        um.message_properties_header.flags == 0x0E
        and um.message_properties_header.application_tag == 0xDEADBEEF
    )
    back = packet_to_message(data)
    assert back.sent_time == 1_700_000_000.0  # SentTime is whole seconds (decision, module docstring)
    assert back.destination_queue == m.destination_queue and back.admin_queue == m.admin_queue


def test_default_message_has_only_the_required_headers() -> None:
    um = UserMessage.decode(message_to_packet(Message()))
    assert um.transaction_header is None and um.security_header is None and um.debug_header is None
    assert um.multi_queue_format_header is None and um.extension_header is None
    assert um.srmp_envelope_header is None and um.user_header.flags & 0x1C00 == 0  # DQ none
    assert um.message_properties_header.label is None
    assert packet_to_message(message_to_packet(Message())) == Message()


def test_transaction_header_fields() -> None:
    m = Message(
        transaction_id=ObjectId(QM, 0xABC12345),
        is_first_in_transaction=True,
        id=ObjectId(QM, 1),
        delivery=1,
        priority=0,
    )
    um = UserMessage.decode(message_to_packet(m))
    th = um.transaction_header
    assert th is not None and um.user_header.th and um.user_header.recoverable
    assert th.first_message and not th.last_message and th.transaction_id == 0x12345
    assert not th.has_connector_qm_guid and um.base_header.flags & 7 == 0
    assert packet_to_message(um.encode()).transaction_id == ObjectId(QM, 0xABC12345)
    # A lineage other than the source QM goes in ConnectorQMGuid (Flags.CG).
    m2 = Message(transaction_id=ObjectId(OTHER, 3), id=ObjectId(QM, 1), delivery=1, priority=0)
    th2 = UserMessage.decode(message_to_packet(m2)).transaction_header
    assert th2 is not None and th2.connector_qm_guid == OTHER
    assert packet_to_message(message_to_packet(m2)).transaction_id == ObjectId(OTHER, 3)


def test_priority_is_zero_with_a_transaction_header() -> None:
    # [MS-MQMQ] 2.2.19.1 PR: MUST be 0 in a transactional packet.
    m = Message(transaction_id=ObjectId(QM, 3), id=ObjectId(QM, 1), priority=6)
    assert UserMessage.decode(message_to_packet(m)).base_header.flags & 7 == 0


def test_security_header_fields_and_provider() -> None:
    m = Message(
        sender_id=b"S-1-5-21",
        sender_id_type=1,
        signature=b"sig",
        sender_certificate=b"cert",
        destination_symmetric_key=b"key",
        priv_level=c.MQMSG_PRIV_LEVEL_BODY_BASE,
        auth_level=c.MQMSG_AUTH_LEVEL_ALWAYS,
        authentication_provider_name="Alt Provider",
        authentication_provider_type=24,
    )
    sh = UserMessage.decode(message_to_packet(m)).security_header
    assert sh is not None and sh.sender_id_type == 1 and sh.security_id == b"S-1-5-21"
    assert sh.body_encrypted and not sh.default_provider and sh.security_data_present
    assert sh.provider_info is not None and sh.provider_info.provider_name == "Alt Provider"
    assert sh.provider_info.provider_type == 24
    assert packet_to_message(message_to_packet(m)) == m
    # Default provider: Flags.DE and no ProviderInfo.
    d = Message(signature=b"s")
    sh2 = UserMessage.decode(message_to_packet(d)).security_header
    assert sh2 is not None and sh2.default_provider and sh2.provider_info is None
    assert packet_to_message(message_to_packet(d)) == d
    # A None provider name: Flags.DE clear, no ProviderInfo.
    n = Message(signature=b"s", authentication_provider_name=None)
    sh3 = UserMessage.decode(message_to_packet(n)).security_header
    assert sh3 is not None and not sh3.default_provider and sh3.provider_info is None
    assert packet_to_message(message_to_packet(n)) == n
    # Only a non-default sender id type: the header still carries a (default) ProviderInfo item.
    t = Message(sender_id_type=0)
    assert packet_to_message(message_to_packet(t)) == t


def test_queue_forms_in_the_user_header() -> None:
    m = Message(
        destination_queue=r"DIRECT=TCP:10.0.0.1\private$\orders",
        admin_queue=f"PUBLIC={OTHER}",
        response_queue=f"PRIVATE={OTHER}\\0000000a",
    )
    uh = UserMessage.decode(message_to_packet(m)).user_header
    assert uh.destination_queue == DirectQueueFormatName(r"TCP:10.0.0.1\private$\orders")
    assert uh.admin_queue == PublicQueueFormatName(OTHER) and uh.aq == QueueType.PUBLIC_QUEUE
    assert (
        uh.response_queue == PrivateQueueFormatName(OTHER, 10) and uh.rq == QueueType.PRIVATE_QUEUE_ON_OTHER
    )
    assert packet_to_message(message_to_packet(m)) == m


def test_response_same_as_admin_uses_rq_1() -> None:
    name = r"DIRECT=OS:h\private$\a"
    m = Message(admin_queue=name, response_queue=name)
    uh = UserMessage.decode(message_to_packet(m)).user_header
    assert uh.rq == QueueType.SAME_AS_ADMINISTRATION_QUEUE and uh.response_queue is None
    assert packet_to_message(message_to_packet(m)).response_queue == name


def test_multiple_element_and_dl_names_use_the_mqf_header() -> None:
    multi = rf"DIRECT=OS:a\q1,PUBLIC={OTHER},DL={QM}"
    m = Message(response_queue=multi, admin_queue=f"DL={QM}")
    um = UserMessage.decode(message_to_packet(m))
    mqf = um.multi_queue_format_header
    assert mqf is not None and um.user_header.mq
    assert [e.format_name for e in mqf.response.format_name_list] == [
        MQFDirectQueueFormatName(r"OS:a\q1"),
        PublicQueueFormatName(OTHER),
        MQFDistributionQueueFormatName(QM),
    ]
    assert um.user_header.response_queue == DirectQueueFormatName(r"OS:a\q1")  # first element
    assert [e.format_name for e in mqf.administration.format_name_list] == [
        MQFDistributionQueueFormatName(QM)
    ]
    assert packet_to_message(message_to_packet(m)) == m


def test_a_copy_names_its_queue_in_the_user_header_and_the_set_in_the_mqf_header() -> None:
    # PROPID_M_DEST_QUEUE and PROPID_M_DEST_FORMAT_NAME of a message sent to a multiple-element
    # name: this copy's queue in UserHeader.DestinationQueue, every queue in the
    # MultiQueueFormatHeader's destination list ([MS-MQMQ] 2.2.20.1).
    multi = rf"DIRECT=OS:a\q1,PUBLIC={OTHER},PRIVATE={QM}\00000007"
    m = Message(destination_queue=f"PUBLIC={OTHER}", destination_format_name=multi)
    um = UserMessage.decode(message_to_packet(m))
    mqf = um.multi_queue_format_header
    assert mqf is not None and um.user_header.mq
    assert um.user_header.destination_queue == PublicQueueFormatName(OTHER)
    assert [e.format_name for e in mqf.destination.format_name_list] == [
        MQFDirectQueueFormatName(r"OS:a\q1"),
        PublicQueueFormatName(OTHER),
        PrivateQueueFormatName(QM, 7),
    ]
    assert packet_to_message(message_to_packet(m)) == m
    # The set alone (no copy's queue): DQ 0, the list.
    alone = packet_to_message(message_to_packet(Message(destination_format_name=multi)))
    assert (alone.destination_queue, alone.destination_format_name) == (None, multi)
    # A copy's queue is one queue.
    with pytest.raises(MSMQError) as info:
        message_to_packet(Message(destination_queue=multi, destination_format_name=multi))
    assert info.value.hresult == HResult.MQ_ERROR_ILLEGAL_FORMATNAME
    with pytest.raises(MSMQError) as info:
        message_to_packet(Message(destination_format_name="DIRECT=nonsense,"))
    assert info.value.hresult == HResult.MQ_ERROR_ILLEGAL_FORMATNAME


def test_names_without_a_packet_form_travel_as_text_in_a_direct_slot() -> None:
    for name in (f"MACHINE={QM};DEADLETTER", f"PRIVATE={QM}\\00000001;JOURNAL", "MULTICAST=234.1.1.1:80"):
        m = Message(destination_queue=name)
        uh = UserMessage.decode(message_to_packet(m)).user_header
        assert uh.destination_queue == DirectQueueFormatName(name) and uh.dq == QueueType.DIRECT_QUEUE
        assert packet_to_message(message_to_packet(m)).destination_queue == name


def test_private_queue_codes_2_3_4_decode_with_their_hosts() -> None:
    # Hand-built packets from a Windows-like sender: AQ 2 (private on source), RQ 4 (on the admin host).
    um = UserMessage.build(
        destination=PrivateQueueFormatNameId(5),
        source_queue_manager=QM,
        destination_queue_manager=OTHER,
        admin_queue=PrivateQueueFormatNameId(6),
        admin_queue_type=QueueType.PRIVATE_QUEUE_ON_SOURCE,
        response_queue=PrivateQueueFormatNameId(7),
        response_queue_type=QueueType.PRIVATE_QUEUE_ON_ADMIN,
    )
    m = packet_to_message(um.encode())
    assert m.destination_queue == f"PRIVATE={OTHER}\\00000005"
    assert m.admin_queue == f"PRIVATE={QM}\\00000006"
    assert m.response_queue == f"PRIVATE={QM}\\00000007"


def test_canonical_format_name() -> None:
    assert canonical_format_name(r"direct=os:Host\PRIVATE$\q") == canonical_format_name(
        r"DIRECT=OS:Host\private$\q"
    )
    with pytest.raises(MSMQError) as e:
        canonical_format_name("not a format name")
    assert e.value.hresult == HResult.MQ_ERROR_ILLEGAL_FORMATNAME


def test_unencodable_messages_raise_msmq_errors() -> None:
    bad = [
        Message(admin_queue="nonsense"),
        Message(label="a\x00b"),
        Message(id=ObjectId(QM, 1), source_machine_guid=OTHER),
        Message(id=ObjectId(QM, 0)),
        Message(sender_id=b"x", sender_id_type=0),
        Message(dead_letter_queue="a\x00"),
        Message(sent_time=2.0**33),
    ]
    for m in bad:
        with pytest.raises(MSMQError):
            message_to_packet(m)


def test_queue_manager_facts_stay_out() -> None:
    m = Message(body=b"x", lookup_id=9, abort_count=2, move_count=3, arrived_time=5.0)
    back = packet_to_message(message_to_packet(m))
    assert (back.lookup_id, back.abort_count, back.move_count, back.arrived_time) == (0, 0, 0, None)


def test_real_usermessage_vector_decodes(vector: object) -> None:
    data = vector("mqqb-4.1.7-frame7-usermessage.bin")  # type: ignore[operator]
    um = UserMessage.decode(data)
    m = packet_to_message(data)
    assert m.body == um.message_properties_header.body
    assert m.label == (um.message_properties_header.label or "")
    assert m.priority == um.base_header.flags & 7
    assert m.source_machine_guid == um.user_header.source_queue_manager


@pytest.mark.parametrize(
    "name", ["queuejumper-msf-usermessage-srmp.bin", "queuejumper-nse-usermessage-srmp.bin"]
)
def test_an_srmp_message_s_body_is_the_one_in_its_compound_message(vector: object, name: str) -> None:
    # [MS-MQRR] 2.2.5.1.2.2: the body of a message that came over SRMP is inside the
    # CompoundMessageHeader (MsgBodyOffset 995, MsgBodySize 7); its MessageBody is empty.  The
    # Message's body was b"".
    data = vector(name)  # type: ignore[operator]
    um = UserMessage.decode(data)
    assert um.message_properties_header.body == b""
    m = packet_to_message(data)
    assert (m.body, m.label) == (b"Message", "poc")
    assert m.compound_message is not None and m.compound_message[995:1002] == b"Message"
    assert m.soap_envelope is not None and m.soap_envelope.startswith("<se:Envelope")
    again = packet_to_message(message_to_packet(m))  # the body travels in MessageBody now
    assert (again.body, again.compound_message, again.soap_envelope) == (
        m.body,
        m.compound_message,
        m.soap_envelope,
    )
    # A body in MessageBody wins over the compound message's.
    assert (
        packet_to_message(message_to_packet(Message(body=b"own", compound_message=b"xMessage"))).body
        == b"own"
    )


# ---------------------------------------------------------------- hostile input
def test_interim_rows_are_refused_clearly() -> None:
    row = INTERIM_MAGIC + b'{"body":"eA=="}'
    with pytest.raises(WireError, match="pre-release"):
        packet_to_message(row)
    with pytest.raises(WireError, match="pre-release"):
        packet_to_user_message(row)


@given(st.binary(max_size=300))
def test_any_bytes_give_a_message_or_wire_error(data: bytes) -> None:
    try:
        m = packet_to_message(data)
    except WireError:
        return
    assert isinstance(m, Message)


@given(messages(), st.data())
def test_truncations_mutations_and_trailing_garbage(m: Message, data: st.DataObject) -> None:
    packet = message_to_packet(m)
    cut = data.draw(st.integers(0, len(packet) - 1))
    at = data.draw(st.integers(0, len(packet) - 1))
    flipped = bytearray(packet)
    flipped[at] ^= data.draw(st.integers(1, 255))
    for candidate in (packet[:cut], packet + data.draw(st.binary(min_size=1, max_size=8)), bytes(flipped)):
        try:
            back = packet_to_message(candidate)
        except WireError:
            continue
        assert isinstance(back, Message)
    with pytest.raises(WireError):
        packet_to_message(packet[:cut])


def test_an_admin_or_response_name_has_at_most_max_name_elements() -> None:
    from pymsmq.model.packet_queues import MAX_NAME_ELEMENTS

    element = r"DIRECT=OS:.\private$\q"
    fits = Message(admin_queue=",".join([element] * MAX_NAME_ELEMENTS))
    canonical_queues(fits)
    assert fits.admin_queue is not None and fits.admin_queue.count(",") == MAX_NAME_ELEMENTS - 1
    for field in ("admin_queue", "response_queue"):
        m = Message(**{field: ",".join([element] * (MAX_NAME_ELEMENTS + 1))})
        with pytest.raises(MSMQError) as info:
            canonical_queues(m)
        assert info.value.hresult == HResult.MQ_ERROR_ILLEGAL_FORMATNAME and "elements" in str(info.value)


def test_an_mqf_element_holding_a_list_is_kept_as_text_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    # 50 MQF direct elements each holding 1,400 names were parsed one by one on a server's event
    # loop, past the element budget and the 256-element cap (outside QA).  A comma has no place in
    # one element: its text is kept verbatim, and the send refuses the name for its elements.
    import dataclasses

    from pymsmq.model import packet_queues
    from pymsmq.wire.optional_headers import MQFAddressHeader, MQFHeaderId
    from pymsmq.wire.packet_types import MQFFormatNameElement

    um = UserMessage.decode(message_to_packet(Message(admin_queue=r"DIRECT=OS:a\q1,DIRECT=OS:a\q2", ack=5)))
    names = ",".join([rf"DIRECT=OS:a\q{i}" for i in range(1000)])
    element = MQFFormatNameElement(MQFDirectQueueFormatName(names[len("DIRECT=") :]))
    mqf = um.multi_queue_format_header
    assert mqf is not None
    admin = MQFAddressHeader(MQFHeaderId.ADMIN, (element,) * 5)
    packet = dataclasses.replace(
        um, multi_queue_format_header=dataclasses.replace(mqf, administration=admin)
    ).encode()
    real = packet_queues.FormatName
    parsed: list[str] = []

    class Counting:
        @staticmethod
        def parse(text: str) -> object:
            parsed.append(text)
            return real.parse(text)

    monkeypatch.setattr(packet_queues, "FormatName", Counting)
    back = packet_to_message(packet)
    assert back.admin_queue == ",".join([names] * 5)
    assert not [text for text in parsed if "," in text]  # (the UserHeader's first element: parsed)
    with pytest.raises(MSMQError) as info:
        canonical_queues(back)
    assert info.value.hresult == HResult.MQ_ERROR_ILLEGAL_FORMATNAME
    assert not [text for text in parsed if "," in text]
