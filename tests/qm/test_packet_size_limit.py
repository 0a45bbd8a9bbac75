"""The 4 MB PacketSize maximum ([MS-MQMQ] 2.2.19.1) holds for every send, express ones included.

A recoverable or transactional message is encoded when it is stored, and its encoder refuses a
packet over 0x00400000 bytes; an express message stays in memory, and is encoded only to check its
size when it may be near the limit.  Both refuse the same messages, with MQ_ERROR_INSUFFICIENT_RESOURCES
(what MSMQ answers), and a refused send leaves nothing behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId
from pymsmq.model.packet_mapping import message_to_packet
from pymsmq.wire.base_header import MAX_PACKET_SIZE

Q = r".\private$\q"
TQ = r".\private$\tq"


@pytest.fixture
def qm(tmp_path: object) -> Iterator[QueueManager]:
    manager = QueueManager.open(str(tmp_path) + "/qm")
    yield manager
    manager.close()


def _largest_body(format_name: str, transactional: bool) -> int:
    # The packet of a plain message is its headers (a TransactionHeader too in a transaction of this
    # queue manager's: no ConnectorQMGuid), its destination and its body padded to 4 bytes.
    guid = uuid.uuid4()
    xact: dict[str, Any] = {"transaction_id": ObjectId(guid, 1), "delivery": 1} if transactional else {}
    bare = Message(destination_queue=format_name, source_machine_guid=guid, **xact)
    return MAX_PACKET_SIZE - len(message_to_packet(bare))


@pytest.mark.parametrize(("delivery", "transactional"), [(0, False), (1, False), (1, True)])
def test_the_limit_is_exact_and_the_same_for_every_delivery(
    qm: QueueManager, delivery: int, transactional: bool
) -> None:
    q = qm.create_queue(TQ if transactional else Q, transactional=transactional)
    tx = 3 if transactional else None  # MQ_SINGLE_MESSAGE
    largest = _largest_body(q.format_name, transactional)
    with pytest.raises(MSMQError) as e:
        q.send(Message(body=b"y" * (largest + 1), delivery=delivery), tx)
    assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    assert "0x00400000" in str(e.value)
    assert q.message_count == 0
    q.send(Message(body=b"z" * largest, delivery=delivery), tx)
    got = q.receive(0, transaction=tx)
    assert len(got.body) == largest
    assert len(message_to_packet(got)) <= MAX_PACKET_SIZE


def test_an_express_message_with_a_large_soap_envelope_is_refused(qm: QueueManager) -> None:
    # Not only the body counts: every header of the packet does.
    q = qm.create_queue(Q)
    with pytest.raises(MSMQError) as e:
        q.send(Message(body=b"small", soap_envelope="<e/>" * (MAX_PACKET_SIZE // 8)))
    assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    q.send(Message(body=b"small", soap_envelope="<e/>"))
    assert q.receive(0).soap_envelope == "<e/>"


def test_send_many_refuses_the_large_one_only(qm: QueueManager) -> None:
    q = qm.create_queue(Q)
    with pytest.raises(MSMQError) as e:
        q.send_many([Message(body=b"a"), Message(body=b"b" * (MAX_PACKET_SIZE + 1)), Message(body=b"c")])
    assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    assert [m.body for m in q.receive_many(5)] == [b"a", b"c"]
