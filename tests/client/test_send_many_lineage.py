"""``RemoteQueue.send_many`` gives each message's id the server's GUID object itself as lineage.

The id's lineage and the message's source machine are then the same object (equal as before), so
that a message sent again is encoded by ``encode_plain`` without a UUID comparison.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _pymsmq_server import ThreadServer

from pymsmq import Message
from pymsmq.client import connect
from pymsmq.protocol.fast_packet import encode_plain, encode_simple


def test_sent_ids_share_the_source_guid_object(server: ThreadServer) -> None:
    qm = connect(server.url)
    q = qm.create_queue(".\\private$\\lineage")
    batch = [Message(body=b"%d" % i) for i in range(5)]
    for _ in range(2):  # the second time, the messages already carry the first send's facts
        q.send_many(batch)
        for m in batch:
            assert m.id is not None and m.id.lineage is m.source_machine_guid
            assert m.source_machine_guid == qm.guid
            assert encode_plain(m) == encode_simple(m)
    assert [m.body for m in q.receive_many(20)] == [m.body for m in batch] * 2
    qm.close()
