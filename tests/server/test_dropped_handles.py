"""Queue handles a remote client drops without ``close`` are closed on the server (not kept until the
connection ends): a loop of ``qm.queue(name).send(m)`` one-liners holds one server handle, not one per
iteration."""

from __future__ import annotations

import gc

from _pymsmq_server import ThreadServer

from pymsmq import Message, connect

Q = ".\\private$\\orders"


def _handles(server: ThreadServer) -> int:
    assert server.server is not None
    return sum(len(s.handles) for s in list(server.server.sessions))


def test_one_liners_do_not_pile_up_handles(server: ThreadServer) -> None:
    with connect(server.url) as qm:
        qm.create_queue(Q)
        for i in range(300):
            qm.queue(Q).send(Message(body=b"%d" % i))
        gc.collect()
        assert qm.queue(Q).message_count == 300
        # Each dropped handle's CLOSE_QUEUE went out with the next request; the last one's answer
        # may still be on its way, so at most the last two handles and the one just counted remain.
        assert _handles(server) <= 3
        kept = qm.queue(Q)
        assert [m.body for m in kept.receive_many(300)] == [b"%d" % i for i in range(300)]
        assert _handles(server) >= 1  # the handle still held is open
        kept.close()


def test_a_closed_handle_is_not_closed_twice(server: ThreadServer) -> None:
    # close() then drop: nothing is queued for closing (the handle number may be reused).
    with connect(server.url) as qm:
        q = qm.create_queue(Q)
        q.close()
        del q
        gc.collect()
        assert qm._t.handles_to_close == []
        other = qm.queue(Q)
        other.send(Message(body=b"x"))
        assert other.receive(timeout=1).body == b"x"
        other.close()
