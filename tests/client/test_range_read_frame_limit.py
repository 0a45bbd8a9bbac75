"""A remote READ_RANGE with the default byte budget fits a client's frame whatever the messages'
size (outside QA, 2026-11-28: 30,000 small messages made a 5.1 MB answer and the read failed, the
destination queue's name, in every record, not counted in the budget)."""

from __future__ import annotations

from pathlib import Path

from _pymsmq_server import ThreadServer

from pymsmq import Message, connect
from pymsmq.client.range_read import read_range

Q = r".\private$\small-messages-with-a-long-queue-name-to-count-in-every-record"


def test_a_default_read_of_many_small_messages_fits_a_frame(tmp_path: Path) -> None:
    server = ThreadServer(tmp_path / "qm").start()
    try:
        with connect(server.url) as qm:
            q = qm.create_queue(Q)
            for k in range(0, 30_000, 5_000):
                q.send_many([Message(body=b"%d" % (k + i)) for i in range(5_000)])
            first = read_range(q, 0, 0)
            assert first.more and 0 < first.count < 30_000  # cut by the budget, not refused
            seen, at = first.count, first.next_lookup_id
            while True:
                rb = read_range(q, at, 0)
                seen, at = seen + rb.count, rb.next_lookup_id
                if not rb.more:
                    break
            assert seen == 30_000
    finally:
        server.stop()
