"""A server killed while its clients' transactions hold messages counts their aborts when it starts
again (``pymsmq.qm.store.in_flight``), as it counts a client's that dies (docs/api.md, poison messages)."""

from __future__ import annotations

from pathlib import Path

from _serve_process import serving

from pymsmq import Message
from pymsmq.client import connect

TQ = r".\private$\orders"


def test_a_killed_server_counts_the_aborts_of_the_transactions_it_held(tmp_path: Path) -> None:
    with serving(tmp_path / "qm") as srv:
        client = connect(srv.url)
        q = client.create_queue(TQ, transactional=True)
        with client.begin_transaction() as tx:
            q.send_many([Message(body=b"held", label="held"), Message(body=b"free", label="free")], tx)
        tx = client.begin_transaction()
        assert q.receive(timeout=0, transaction=tx).abort_count == 0
    # (SIGKILLed at the end of ``serving``, the transaction still open)
    with serving(tmp_path / "qm") as srv:
        q = connect(srv.url).queue(TQ)
        assert [(m.label, m.abort_count) for m in q.receive_many(5, timeout=0)] == [("held", 1), ("free", 0)]
