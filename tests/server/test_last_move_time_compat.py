"""PROPID_M_LAST_MOVE_TIME on the wire, with clients that predate it: a client that asks for the
four facts pymsmq clients asked for before gets those four, and a READ_RANGE without
``RangeFlags.LAST_MOVE_TIME`` gets the six-column MESSAGE_BATCH it knows."""

from __future__ import annotations

import struct

from _pymsmq_server import ThreadServer

from pymsmq import Message, connect
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import RangeFlags
from pymsmq.protocol.message_batch import decode_batch
from pymsmq.protocol.message_codec import (
    CLIENT_RECEIVE_PROPIDS,
    PROPID_M_LAST_MOVE_TIME,
    decode_message,
    props_dict,
)

Q = ".\\private$\\orders"
_OLD_CLIENT_PROPIDS = CLIENT_RECEIVE_PROPIDS[:4]  # lookup id, arrived time, abort and move counts


def test_clients_from_before_last_move_time_get_what_they_asked_for(server: ThreadServer) -> None:
    with connect(server.url) as qm:
        q = qm.create_queue(Q)
        q.send(Message(body=b"m", delivery=1))
        lid = q.peek(0).lookup_id
        q.move(lid, "retry")
        retry = q.subqueue("retry")
        t = qm._t
        old = t.call(pm.ReceiveRequest(retry._handle, 0x80000000, 0, 0, 0, None, 0, _OLD_CLIENT_PROPIDS))
        assert [pid for pid, _ in old.properties] == list(_OLD_CLIENT_PROPIDS)
        assert decode_message(old.packet, old.properties).last_move_time is None
        new = t.call(pm.ReceiveRequest(retry._handle, 0x80000000, 0, 0, 0, None, 0, CLIENT_RECEIVE_PROPIDS))
        moved = props_dict(new.properties)[PROPID_M_LAST_MOVE_TIME]
        assert isinstance(moved, int) and moved > 1_700_000_000
        assert decode_message(new.packet, new.properties).last_move_time == float(moved)
        for flags, columns in ((0, 6), (RangeFlags.LAST_MOVE_TIME, 7)):
            answer = t.call(pm.ReadRangeRequest(retry._handle, 0, 0, flags=flags))
            assert struct.unpack_from("<I", answer.batch, 4)[0] == columns
            [m] = decode_batch(answer.batch)
            # The batch carries the stored time itself (a float), the property its whole seconds.
            assert (m.last_move_time is None) == (columns == 6)
            assert columns == 6 or int(m.last_move_time or 0) == moved


def test_read_range_gives_destination_format_names_only_to_clients_that_ask(server: ThreadServer) -> None:
    # RangeFlags.DESTINATION_FORMAT_NAME: an eighth column (the seventh comes with it); a client that
    # predates the flag gets the six or seven columns it knows.
    with connect(server.url) as qm:
        a = qm.create_queue(Q)
        b = qm.create_queue(Q + "_copy")
        both = qm.queue(f"{a.format_name},{b.format_name}", access=2)
        both.send(Message(body=b"m", delivery=1))
        a.send(Message(body=b"alone"))
        t = qm._t
        for flags, columns in (
            (0, 6),
            (RangeFlags.LAST_MOVE_TIME, 7),
            (RangeFlags.DESTINATION_FORMAT_NAME, 8),
            (RangeFlags.LAST_MOVE_TIME | RangeFlags.DESTINATION_FORMAT_NAME, 8),
        ):
            answer = t.call(pm.ReadRangeRequest(a._handle, 0, 0, flags=flags))
            assert struct.unpack_from("<I", answer.batch, 4)[0] == columns
            copy, alone = decode_batch(answer.batch)
            assert copy.destination_format_name == (both.format_name if columns == 8 else None)
            assert alone.destination_format_name is None
            assert copy.destination_queue == alone.destination_queue == a.format_name
