"""What the server stores for a recoverable SEND, whichever shape of packet the client sent.

A canonical simple packet (what ``encode_simple`` writes) is stored with its destination put in
(``packet_with_destination``); any other packet (a non-canonical one, a PrivacyLevel, queues) goes
through ``message_to_packet``.  Either way, after the server stops, the store holds
``message_to_packet`` of each queued message, and a queue manager opened on it gives the messages back.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

from pymsmq import Message, QueueManager
from pymsmq.client import connect
from pymsmq.model.packet_mapping import message_to_packet, packet_to_message
from pymsmq.protocol import hot
from pymsmq.protocol.fast_packet import decode_for_send, encode_simple
from pymsmq.qm.store.base import MessageKey


def _reserved(p: bytearray) -> None:
    p[1] = 1  # BaseHeader.Reserved: decoded as it is, but not what encode_simple writes


def _padding(p: bytearray) -> None:
    p[-1] = 0x55  # a padding byte (the body is 3 bytes long, so the last byte is padding)


def _unchanged(p: bytearray) -> None:
    pass


_SHAPES: list[tuple[str, Message, Callable[[bytearray], None], bool]] = [
    ("canonical", Message(body=b"abc", label="plain", priority=5, app_specific=9), _unchanged, True),
    ("reserved byte", Message(body=b"abc", label="r"), _reserved, False),
    ("padding", Message(body=b"abc"), _padding, False),
    ("privacy level", Message(body=b"abc", priv_level=1), _unchanged, False),
]


@pytest.mark.parametrize(("name", "message", "damage", "canonical"), _SHAPES, ids=[s[0] for s in _SHAPES])
def test_recoverable_send_stores_the_queued_message(
    tmp_path: Path, name: str, message: Message, damage: Callable[[bytearray], None], canonical: bool
) -> None:
    message.delivery = 1
    message.validate()
    simple = encode_simple(message)
    assert simple is not None
    raw = bytearray(simple)
    damage(raw)
    packet = bytes(raw)
    decoded = decode_for_send(packet)
    assert (decoded is not None and decoded[1]) is canonical  # the path this case is meant to take
    expected = packet_to_message(packet)

    server = ThreadServer(tmp_path / "qm").start()
    try:
        client = connect(server.url)
        q = client.create_queue(".\\private$\\stored")
        t = q._t  # type: ignore[attr-defined]
        for _ in range(3):
            answer = t.wait(t.send(hot.send_request(q._handle, packet, None)))  # type: ignore[attr-defined]
            assert type(answer).__name__ == "SendResponse", answer
        client.close()
    finally:
        server.stop()

    qm = QueueManager.open(tmp_path / "qm")
    try:
        handle = qm.queue(".\\private$\\stored")
        cursor = handle.cursor()
        got = [cursor.peek_current(0), cursor.peek_next(0), cursor.peek_next(0)]
        for m in got:
            for field in ("body", "label", "priority", "app_specific", "priv_level", "delivery"):
                assert getattr(m, field) == getattr(expected, field), field
            assert m.id is not None and m.id.lineage == qm.guid
            assert m.destination_queue == handle.format_name
            assert m.lookup_id is not None
            stored = qm._store.read_packet(MessageKey(handle._state.queue_id, m.lookup_id))
            assert stored == message_to_packet(m)
        assert len({m.id for m in got}) == 3
    finally:
        qm.close()
