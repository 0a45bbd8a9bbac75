"""What a store holds, as the backup and salvage tests compare it: a queue manager's identity,
queues, journals, subqueues and messages."""

from __future__ import annotations

from typing import Any

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.qm.store import BIG_PACKET

ORDERS = r".\private$\orders"
BIG = BIG_PACKET + 1000


def queue_contents(q: Any) -> list[tuple[object, ...]]:
    """Every message of ``q`` (by lookup id, peeked): what a backup must keep of it."""
    rows: list[tuple[object, ...]] = []
    try:
        m = q.peek_first_by_lookup_id()
    except MSMQError:
        return rows
    while True:
        rows.append(
            (m.lookup_id, m.label, m.body, m.priority, m.correlation_id, m.id, m.delivery, m.app_specific)
        )
        try:
            m = q.peek_next_by_lookup_id(m.lookup_id)
        except MSMQError:
            return rows


def contents(qm: QueueManager) -> dict[str, object]:
    """The queue manager's identity, queues (with properties), journals and subqueues."""
    out: dict[str, object] = {"guid": str(qm.guid), "machine": qm.machine_name}
    for path in sorted(qm.private_queues):
        q = qm.queue(path)
        props = qm.get_queue_properties(path)
        out[path] = (props.transactional, props.label, props.journal, queue_contents(q))
        out[path + ";journal"] = queue_contents(q.journal)
        for name in sorted(q.subqueue_names):
            out[f"{path};{name}"] = len(q.subqueue(name))
    return out


def fill(qm: QueueManager) -> None:
    orders = qm.create_queue(ORDERS, label="orders", journal=True)
    tx_q = qm.create_queue(r".\private$\ledger", transactional=True)
    for i in range(40):
        orders.send(Message(body=b"%d" % i * 10, label=f"m{i}", priority=i % 8, delivery=1, app_specific=i))
    for i in range(3):
        orders.send(Message(body=bytes([65 + i]) * BIG, label=f"big{i}", delivery=1))
    with qm.begin_transaction() as tx:
        tx_q.send(Message(body=b"in a transaction", correlation_id=b"c" * 20), tx)
    orders.receive()  # a journal copy (the queue journals)
    first = orders.peek_first_by_lookup_id()
    orders.move(first.lookup_id, "held")  # into a subqueue
