"""What docs/protocol.md says the server answers, where a client implementer would otherwise guess:
the order of GET_QUEUE_PROPERTIES answers, LIST_QUEUES with no propids, RECEIVE_MANY entries without
PROPID_PYMSMQ_HELD, the cursor after a receive at it, the HRESULTs of section 6, the size the server
adds to a sent packet, direct names and the transaction id inside packets, and the hash and
encryption algorithm fields (sections 2.3, 5, 6 and 11)."""

from __future__ import annotations

import dataclasses
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

from pymsmq import Message
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.model.packet_mapping import packet_to_message
from pymsmq.protocol import ErrorResponse, hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.batch_ops import ReceiveManyRequest, SendManyRequest, decode_messages, encode_messages
from pymsmq.protocol.codes import Action, ManyFlags, ManyMore
from pymsmq.protocol.message_codec import encode_packet
from pymsmq.wire.packet_types import DirectQueueFormatName
from pymsmq.wire.user_message import UserMessage

Q = ".\\private$\\doc"
_HELD = 0x7F000003


def _ask(q: Any, request: pm.Request) -> Any:
    """The answer (a response or an ErrorResponse) to one raw request on ``q``'s connection."""
    t = q._t
    return t.wait(t.send(request))


def _hresult(answer: object) -> int:
    assert isinstance(answer, ErrorResponse), answer
    return answer.hresult


def test_get_queue_properties_answers_in_ascending_propid_order(server: ThreadServer) -> None:
    q = connect(server.url).create_queue(Q, label="l")
    answer = _ask(q, pm.GetQueuePropertiesRequest(Q, (108, 113, 104, 9999, 108)))
    assert [pid for pid, _ in answer.properties] == [104, 108, 113]  # 9999 left out, 108 once
    every = _ask(q, pm.GetQueuePropertiesRequest(Q, ()))
    ids = [pid for pid, _ in every.properties]
    assert ids == sorted(ids) and {104, 108, 113} <= set(ids)


def test_list_queues_with_no_propids_gives_empty_property_arrays(server: ThreadServer) -> None:
    q = connect(server.url).create_queue(Q)
    answer = _ask(q, pm.ListQueuesRequest(1, ()))
    assert any(name.lower().endswith("private$\\doc") for name in answer.names)
    assert answer.properties == tuple(() for _ in answer.names)
    page = _ask(q, pm.ListQueuesPageRequest(1, (), "", 0))
    assert page.names == answer.names and page.properties == answer.properties


def test_receive_many_entries_carry_no_held_property(server: ThreadServer) -> None:
    q = connect(server.url).create_queue(Q)
    q.send_many([Message(body=b"a", delivery=1), Message(body=b"b", delivery=1)])
    answer = _ask(q, ReceiveManyRequest(q._handle, 2, 0, ManyFlags.CONFIRM))
    assert answer.more & ManyMore.HELD
    entries = decode_messages(answer.messages)
    assert len(entries) == 2
    for _, props in entries:
        assert _HELD not in [pid for pid, _ in props]
    first = next(pv.value for pid, pv in entries[0][1] if pid == 60)
    assert isinstance(_ask(q, pm.EndReceiveRequest(q._handle, first, 2)), pm.EndReceiveResponse)


def test_a_receive_at_a_cursor_leaves_it_after_the_message_it_took(server: ThreadServer) -> None:
    """[MC-MQAC] 3.11.4.1.16 ReceiveCurrent "Advance the cursor"; [MS-MQDMPR] 3.2.7.4: the cursor
    is Unread where the message was: PEEK_NEXT is an illegal action, PEEK_CURRENT and RECEIVE at
    the cursor give the next message."""
    q = connect(server.url).create_queue(Q)
    for body in (b"A", b"B", b"C", b"D"):
        q.send(Message(body=body))
    h = q._handle
    cursor = _ask(q, pm.CreateCursorRequest(h)).cursor

    def at_cursor(action: int) -> object:
        answer = _ask(q, pm.ReceiveRequest(h, action, 0, cursor))
        if isinstance(answer, ErrorResponse):
            return answer.hresult
        assert answer.packet is not None
        return packet_to_message(answer.packet).body

    assert at_cursor(Action.MQ_ACTION_PEEK_CURRENT) == b"A"
    assert at_cursor(Action.MQ_ACTION_PEEK_NEXT) == b"B"
    assert at_cursor(Action.MQ_ACTION_RECEIVE) == b"B"
    assert at_cursor(Action.MQ_ACTION_PEEK_NEXT) == HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION
    assert at_cursor(Action.MQ_ACTION_PEEK_CURRENT) == b"C"
    assert at_cursor(Action.MQ_ACTION_RECEIVE) == b"C"
    assert at_cursor(Action.MQ_ACTION_RECEIVE) == b"D"


def test_the_hresults_section_6_adds(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(Q, journal=True)
    assert _hresult(_ask(q, pm.OpenQueueRequest("private$\\doc", 0x23, 0))) == 0xC00E0014
    assert _hresult(_ask(q, pm.CreateQueueRequest("private$\\x", ()))) == 0xC00E0014
    assert _hresult(_ask(q, pm.OpenQueueRequest("DIRECT=garbage", 0x23, 0))) == 0xC00E001E
    assert _hresult(_ask(q, pm.OpenQueueRequest("PRIVATE=zz", 0x23, 0))) == 0xC00E001E
    journal = Q + ";journal"
    assert _hresult(_ask(q, pm.SetQueuePropertiesRequest(journal, ()))) == 0xC00E0020
    # MQ_ERROR_MESSAGE_ALREADY_RECEIVED: the message a cursor stands on was taken by another read.
    q.send(Message(body=b"A"))
    cursor = _ask(q, pm.CreateCursorRequest(q._handle)).cursor
    assert _ask(q, pm.ReceiveRequest(q._handle, Action.MQ_ACTION_PEEK_CURRENT, 0, cursor)).packet
    assert q.receive(timeout=0).body == b"A"
    again = _ask(q, pm.ReceiveRequest(q._handle, Action.MQ_ACTION_PEEK_CURRENT, 0, cursor))
    assert _hresult(again) == 0xC00E001D


def _packet_of_size(size: int, **fields: Any) -> bytes:
    """A packet with no destination and no TransactionHeader, of exactly ``size`` bytes."""
    empty = len(encode_packet(Message(body=b"", **fields)))
    packet = encode_packet(Message(body=b"z" * (size - empty), **fields))
    assert len(packet) == size
    return packet


@pytest.mark.parametrize(("path", "added"), [(".\\private$\\big", 4), (".\\big", 16)])
def test_the_server_adds_its_destination_before_the_4_mb_check(
    server: ThreadServer, path: str, added: int
) -> None:
    """docs/protocol.md 2.3: the stored packet carries the destination (4 bytes for a private queue,
    16 for a public one), and a transactional send a 20-byte TransactionHeader too."""
    q = connect(server.url).create_queue(path)
    largest = _packet_of_size(0x400000 - added)
    assert isinstance(_ask(q, hot.send_request(q._handle, largest, None)), pm.SendResponse)
    over = _packet_of_size(0x400000 - added + 4)
    assert _hresult(_ask(q, hot.send_request(q._handle, over, None))) == 0xC00E0027
    # The answer leaves out the destination (the handle's own queue): the size as it was sent.
    assert len(_ask(q, pm.ReceiveRequest(q._handle, 0, 0)).packet) == len(largest)


def test_a_transactional_send_adds_a_transaction_header(server: ThreadServer) -> None:
    q = connect(server.url).create_queue(".\\private$\\bigt", transactional=True)
    largest = _packet_of_size(0x400000 - 24, delivery=1, priority=0)
    assert isinstance(_ask(q, hot.send_request(q._handle, largest, 3)), pm.SendResponse)
    over = _packet_of_size(0x400000 - 20, delivery=1, priority=0)
    assert _hresult(_ask(q, hot.send_request(q._handle, over, 3))) == 0xC00E0027


def test_direct_names_travel_without_direct_prefix(server: ThreadServer) -> None:
    """A DirectQueueFormatName holds the name after ``DIRECT=``; one sent with the prefix comes back
    without it."""
    q = connect(server.url).create_queue(Q)
    for sent in ("OS:otherhost\\private$\\replies", "DIRECT=OS:otherhost\\private$\\replies"):
        plain = UserMessage.decode(encode_packet(Message(body=b"x", response_queue="DIRECT=OS:h\\q")))
        user = dataclasses.replace(plain.user_header, response_queue=DirectQueueFormatName(sent))
        packet = dataclasses.replace(plain, user_header=user).encode()
        assert isinstance(_ask(q, hot.send_request(q._handle, packet, None)), pm.SendResponse)
        got = UserMessage.decode(_ask(q, pm.ReceiveRequest(q._handle, 0, 0)).packet)
        assert got.user_header.response_queue == DirectQueueFormatName("OS:otherhost\\private$\\replies")


def test_the_transaction_id_is_the_source_guid_and_the_tx_sequence_ordinal(server: ThreadServer) -> None:
    client = connect(server.url)
    q = client.create_queue(".\\private$\\tq", transactional=True)
    tx = _ask(q, pm.BeginTransactionRequest()).transaction
    assert isinstance(
        _ask(q, hot.send_request(q._handle, encode_packet(Message(body=b"t")), tx)), pm.SendResponse
    )
    _ask(q, pm.CommitTransactionRequest(tx))
    packet = _ask(q, pm.ReceiveRequest(q._handle, Action.MQ_ACTION_PEEK_CURRENT, 0)).packet
    um = UserMessage.decode(packet)
    header = um.transaction_header
    assert header is not None
    ordinal = header.tx_sequence_id.ordinal
    assert (header.flags >> 4) & 0xFFFFF == ordinal & 0xFFFFF
    m = packet_to_message(packet)
    assert m.transaction_id is not None
    assert (m.transaction_id.lineage, m.transaction_id.uniquifier) == (
        um.user_header.source_queue_manager,
        ordinal,
    )


def test_hash_and_encryption_algorithms_are_kept_unchecked(server: ThreadServer) -> None:
    q = connect(server.url).create_queue(Q)
    for hash_alg, enc_alg in ((0, 0), (0x800E, 0x6602), (0xFFFFFFFF, 0x12345678)):
        q.send(Message(body=b"x", hash_algorithm=hash_alg, encrypt_algorithm=enc_alg))
        m = q.receive(timeout=1)
        assert (m.hash_algorithm, m.encrypt_algorithm) == (hash_alg, enc_alg)


@pytest.mark.parametrize("code", [2, 3, 6])  # on the source host, the destination host; GUID and number
def test_a_private_admin_queue_a_send_packet_names_on_no_host_is_the_servers(
    server: ThreadServer, code: int
) -> None:
    # docs/protocol.md 11: a client leaves SourceQueueManager and QueueManagerAddress zero (the
    # server fills them in), so a private admin or response queue of type 2 or 3 (host from those
    # fields) or type 6 with the null GUID names one of the server's queues.  Outside QA: the
    # acknowledgement went to PRIVATE=00000000-...\<n>, nowhere, with no error.
    from pymsmq.wire.packet_types import PrivateQueueFormatName, PrivateQueueFormatNameId

    qm = connect(server.url)
    q = qm.create_queue(Q)
    acks = qm.create_queue(".\\private$\\doc-acks")
    number = int(acks.format_name.rpartition("\\")[2], 16)
    admin = (
        PrivateQueueFormatNameId(number) if code != 6 else PrivateQueueFormatName(uuid.UUID(int=0), number)
    )
    packet = UserMessage.build(
        destination=None,
        body=b"ack me",
        admin_queue=admin,
        admin_queue_type=code,
        response_queue=admin,
        response_queue_type=code,
        acknowledgements=0x05,  # MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE
    ).encode()
    answer = _ask(q, pm.SendRequest(q._handle, packet, None, ()))
    assert not isinstance(answer, ErrorResponse), answer
    many = _ask(q, SendManyRequest(q._handle, None, encode_messages([(packet, ())])))
    assert not isinstance(many, ErrorResponse), many
    for _ in range(2):  # SEND, SEND_MANY
        got = q.receive(timeout=5)
        assert got.admin_queue == got.response_queue == acks.format_name
        ack = acks.receive(timeout=5)
        assert ack.msg_class == 0x0002 and ack.correlation_id == got.id  # MQMSG_CLASS_ACK_REACH_QUEUE
    qm.close()
