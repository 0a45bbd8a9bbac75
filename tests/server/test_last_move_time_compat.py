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
