"""Rights an identity must not get around (an outside security review, 2026-11-27): queues a sent
message names for the queue manager to write to, a pattern with every bit beside an exact "none",
journal receives, MQ_DENY_RECEIVE_SHARE, and the number of active transactions a connection holds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pymsmq_server import ThreadServer

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.server import AccessPolicy, ServerConfig

INBOX = ".\\private$\\inbox"
ORDERS = ".\\private$\\orders"
PAYMENTS = ".\\private$\\payments"

POLICY = {
    "owner": "admin",
    "tokens": {
        "admin-t": "admin",
        "writer-t": "writer",
        "peeker-t": "peeker",
        "props-t": "props",
        "jdel-t": "jdel",
        "consumer-t": "consumer",
        "wild-t": "wild",
    },
    "permissions": {
        "writer": {"private$\\inbox": "write", "private$\\replies*": "write"},
        "peeker": {"private$\\orders": ["MQSEC_PEEK_MESSAGE", "MQSEC_GET_QUEUE_PROPERTIES"]},
        "props": {"private$\\orders": ["MQSEC_GET_QUEUE_PROPERTIES"]},
        "jdel": {"private$\\orders": ["MQSEC_DELETE_JOURNAL_MESSAGE"]},
        "consumer": {"private$\\orders": "read", "private$\\payments": "read"},
        "wild": {"*": 0xFFFFFFFF, "private$\\payments": "none"},
    },
}


def _hresult(fn: Any, *args: Any, **kwargs: Any) -> int:
    with pytest.raises(MSMQError) as info:
        fn(*args, **kwargs)
    return int(info.value.hresult)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadServer]:
    policy = AccessPolicy.from_json(json.dumps(POLICY))
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, policy=policy, max_transactions=5)).start()
    admin = connect(s.url, token="admin-t")
    admin.create_queue(INBOX)
    admin.create_queue(ORDERS, journal=True)
    admin.create_queue(PAYMENTS, transactional=True)
    admin.create_queue(".\\private$\\replies")
    admin.close()
    try:
        yield s
    finally:
        s.stop()


def test_a_sender_may_name_as_admin_or_dead_letter_queue_only_a_queue_it_may_write_to(
    server: ThreadServer,
) -> None:
    # The queue manager writes acknowledgements and dead letters there for the sender, with the
    # sender's label (and body): "write" on one queue put messages into every queue before.
    admin = connect(server.url, token="admin-t")
    payments = admin.queue(PAYMENTS).format_name
    orders = admin.queue(ORDERS).format_name
    replies = admin.queue(".\\private$\\replies").format_name
    writer = connect(server.url, token="writer-t")
    inbox = writer.queue(INBOX)
    dead = Message(body=b"PAY", dead_letter_queue=payments, journal=1, max_time_to_receive=1)
    assert _hresult(inbox.send, dead) == HResult.MQ_ERROR_ACCESS_DENIED
    fake = Message(body=b"FAKE", admin_queue=orders, ack=8, max_time_to_receive=1)
    assert _hresult(inbox.send, fake) == HResult.MQ_ERROR_ACCESS_DENIED
    # SEND_MANY: the refused message is refused, the others are sent.
    with pytest.raises(MSMQError) as info:
        inbox.send_many([Message(body=b"ok1"), fake, Message(body=b"ok2")])
    assert info.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
    # A queue it may write to, a transactional admin queue (no acknowledgement goes there) and a
    # queue of another computer (nothing is written to it here) are fine.
    inbox.send(Message(body=b"a", admin_queue=replies, ack=8, dead_letter_queue=replies))
    inbox.send(Message(body=b"b", admin_queue=payments, ack=8))
    inbox.send(Message(body=b"c", dead_letter_queue="DIRECT=TCP:10.1.2.3\\private$\\dlq"))
    # A queue of this queue manager that does not exist yet is checked as the queue it would be:
    # the queue manager looks the name up when it writes, so a queue created meanwhile got it.
    for later in (".\\private$\\later", "DIRECT=OS:.\\private$\\later", _private_number(admin)):
        refused = Message(body=b"L", dead_letter_queue=later, journal=1, max_time_to_receive=1)
        assert _hresult(inbox.send, refused) == HResult.MQ_ERROR_ACCESS_DENIED, later
    inbox.send(Message(body=b"e", dead_letter_queue=".\\private$\\replies2"))  # "write" pattern
    # The owner may name any queue.
    admin.queue(INBOX).send(Message(body=b"d", dead_letter_queue=payments))
    assert sorted(m.body for m in admin.queue(INBOX).receive_many(10)) == [
        b"a",
        b"b",
        b"c",
        b"d",
        b"e",
        b"ok1",
        b"ok2",
    ]
    assert admin.queue(ORDERS).message_count == 0
    with admin.begin_transaction() as tx:
        assert _hresult(admin.queue(PAYMENTS).receive, 0, tx) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND


def test_every_element_of_a_multiple_element_admin_queue_is_checked(server: ThreadServer) -> None:
    # The whole name was looked up, failed and went unchecked: a sender got acknowledgements, with
    # its label and a NACK's body, into a queue it may not write to (outside QA, High).
    admin = connect(server.url, token="admin-t")
    orders = admin.queue(ORDERS).format_name
    replies = admin.queue(".\\private$\\replies").format_name
    inbox = connect(server.url, token="writer-t").queue(INBOX)
    forged = Message(body=b"FORGED", label="forged", admin_queue=f"{replies},{orders}", ack=0xE)
    assert _hresult(inbox.send, forged) == HResult.MQ_ERROR_ACCESS_DENIED
    with pytest.raises(MSMQError) as info:
        inbox.send_many([Message(body=b"ok"), forged])
    assert info.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
    inbox.send(Message(body=b"fine", admin_queue=f"{replies},{replies}", ack=5))
    # More elements than a name may have: refused as a format name, cheaply (16,000 of them held
    # the server's loop for a second a message).
    many = ",".join([replies] * 16_000)
    assert (
        _hresult(inbox.send, Message(body=b"x", admin_queue=many, ack=5))
        == HResult.MQ_ERROR_ILLEGAL_FORMATNAME
    )
    assert admin.queue(ORDERS).message_count == 0
    assert sorted(m.body for m in admin.queue(INBOX).receive_many(10)) == [b"fine", b"ok"]
    admin.close()


def test_a_pattern_with_every_bit_does_not_override_an_exact_none(server: ThreadServer) -> None:
    # {"*": 0xFFFFFFFF, "private$\\payments": "none"}: requests naming the queue skipped the exact
    # entry (the pattern matched the empty key the owner test looked up).
    wild = connect(server.url, token="wild-t")
    assert _hresult(wild.queue, PAYMENTS) == HResult.MQ_ERROR_ACCESS_DENIED
    assert _hresult(wild.get_queue_properties, PAYMENTS) == HResult.MQ_ERROR_ACCESS_DENIED
    assert _hresult(wild.set_queue_properties, PAYMENTS, label="pwned") == HResult.MQ_ERROR_ACCESS_DENIED
    assert _hresult(wild.delete_queue, PAYMENTS) == HResult.MQ_ERROR_ACCESS_DENIED
    assert not any(p.lower().endswith("payments") for p in wild.private_queues)
    assert any(p.lower().endswith("orders") for p in wild.private_queues)
    assert wild.get_queue_properties(ORDERS).journal is True  # the pattern still applies elsewhere
    admin = connect(server.url, token="admin-t")
    assert admin.queue_exists(PAYMENTS) and admin.get_queue_properties(PAYMENTS).label == ""


def test_the_bytes_in_all_queues_of_a_restricted_identity_are_its_queues(server: ThreadServer) -> None:
    # PROPID_MGMT_MSMQ_BYTES_IN_ALL_QUEUES counts the queues the identity sees, as _PRIVATEQ lists
    # them (outside QA: `pymsmq stats` of a monitoring identity showed every queue's bytes).
    with connect(server.url, token="admin-t") as admin:
        admin.queue(ORDERS).send(Message(body=b"12"))
        admin.queue(INBOX).send(Message(body=b"x" * 1000))
        admin.queue(PAYMENTS).send(Message(body=b"abcd"), transaction=3)
        assert admin.total_bytes == 1006
    with connect(server.url, token="peeker-t") as peeker:
        assert peeker.total_bytes == 2
        assert [s.bytes_in_queue for s in peeker.queue_statistics()] == [2]
    with connect(server.url, token="consumer-t") as consumer:
        assert consumer.total_bytes == 6


def test_receiving_from_a_journal_needs_the_right_to_peek_too(server: ThreadServer) -> None:
    # [MS-MQMQ] 2.2.24 MQSEC_RECEIVE_JOURNAL_MESSAGE = DELETE_JOURNAL_MESSAGE | PEEK_MESSAGE (0x0A):
    # an identity with 0x8 alone, refused a peek, received the journal's bodies.
    admin = connect(server.url, token="admin-t")
    admin.queue(ORDERS).send(Message(body=b"secret"))
    assert admin.queue(ORDERS).receive(0).body == b"secret"
    jdel = connect(server.url, token="jdel-t")
    journal = jdel.queue(ORDERS + ";journal")
    assert _hresult(journal.peek, 0) == HResult.MQ_ERROR_ACCESS_DENIED
    assert _hresult(journal.receive, 0) == HResult.MQ_ERROR_ACCESS_DENIED
    assert _hresult(journal.receive_many, 5) == HResult.MQ_ERROR_ACCESS_DENIED
    journal.purge()  # purging a journal needs MQSEC_DELETE_JOURNAL_MESSAGE alone
    assert admin.queue(ORDERS + ";journal").message_count == 0
    admin.queue(ORDERS).send(Message(body=b"again"))
    admin.queue(ORDERS).receive(0)
    consumer = connect(server.url, token="consumer-t")  # "read" includes 0x0A
    assert consumer.queue(ORDERS + ";journal").receive(0).body == b"again"


def test_deny_receive_share_needs_the_right_to_receive(server: ThreadServer) -> None:
    # An identity that may only read properties (or peek) opened the queue with
    # MQ_DENY_RECEIVE_SHARE and locked every consumer, the owner included, out of it.
    for token in ("props-t", "peeker-t"):
        client = connect(server.url, token=token)
        assert _hresult(client.queue, ORDERS, 0x20, 1) == HResult.MQ_ERROR_ACCESS_DENIED
        client.queue(ORDERS, 0x20).close()  # without the share mode: a handle as before
    consumer = connect(server.url, token="consumer-t")
    admin = connect(server.url, token="admin-t")
    with admin.queue(ORDERS) as q:
        q.send(Message(body=b"m"))
    with consumer.queue(ORDERS) as q:
        assert q.receive(0).body == b"m"
    exclusive = consumer.queue(ORDERS, 1, 1)  # one that may receive still can
    assert _hresult(admin.queue, ORDERS, 1) == HResult.MQ_ERROR_SHARING_VIOLATION
    exclusive.close()


def test_a_connection_holds_at_most_max_transactions_active(server: ThreadServer) -> None:
    # 400,000 BEGIN_TRANSACTIONs on one connection took 143 MB of server memory.
    client = connect(server.url, token="consumer-t")
    active = [client.begin_transaction() for _ in range(5)]
    assert _hresult(client.begin_transaction) == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    active[0].commit()
    active[1].abort()
    more = [client.begin_transaction() for _ in range(2)]
    assert _hresult(client.begin_transaction) == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    for tx in active[2:] + more:
        tx.commit()
    for _ in range(20):  # ended ones are forgotten: no limit on transactions one after another
        client.begin_transaction().commit()
    other = connect(server.url, token="consumer-t")  # the limit is per connection
    other.begin_transaction().abort()


def test_an_application_dead_letter_queue_over_its_quota_sends_to_the_system_one(tmp_path: Path) -> None:
    # The copy ignored the named queue's quota.
    clock = [1_000_000.0]
    qm = QueueManager.open(tmp_path / "qm", clock=lambda: clock[0])
    try:
        dlq = qm.create_queue(".\\private$\\app-dlq", quota=1)  # 1 KB
        q = qm.create_queue(".\\private$\\work")
        for i in range(3):
            q.send(
                Message(
                    body=b"x" * 600,
                    label=str(i),
                    journal=1,  # MQMSG_DEADLETTER
                    max_time_to_receive=1,
                    dead_letter_queue=dlq.format_name,
                )
            )
        clock[0] += 5
        assert _hresult(q.receive, 0) == HResult.MQ_ERROR_MESSAGE_NOT_FOUND  # all expired
        assert [m.label for m in dlq.receive_many(10)] == ["0"]
        assert sorted(m.label for m in qm.dead_letter_queue.receive_many(10)) == ["1", "2"]
    finally:
        qm.close()


def _private_number(qm: Any) -> str:
    # PRIVATE=<this queue manager's GUID>\<number>: a queue named by number that does not exist.
    return f"PRIVATE={qm.guid}\\0000ffff"


def test_other_identities_cannot_take_the_owners_last_connection(tmp_path: Path) -> None:
    # Any valid token, however low its rights, could take every --max-connections place.
    policy = AccessPolicy.from_json(json.dumps(POLICY))
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, policy=policy, max_connections=3)).start()
    try:
        peekers = [connect(s.url, token="peeker-t") for _ in range(2)]
        with pytest.raises(MSMQError) as info:
            connect(s.url, token="peeker-t")
        assert info.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
        admin = connect(s.url, token="admin-t")  # the place kept for the owner
        assert admin.ping(b"a") == b"a"
        with pytest.raises(MSMQError):
            connect(s.url, token="admin-t")  # the limit itself still holds
        for c in [*peekers, admin]:
            c.close()
    finally:
        s.stop()


@pytest.mark.parametrize("limit", ["max_transactions", "max_cursors", "max_handles"])
def test_a_limit_below_one_is_refused(limit: str) -> None:
    from pymsmq.server import ConfigError

    with pytest.raises(ConfigError, match="cursor and handle limits must be at least 1"):
        ServerConfig(port=0, **{limit: 0}).validate()  # type: ignore[arg-type]


def test_a_multiple_element_name_needs_the_right_to_send_to_every_queue_it_names(
    server: ThreadServer,
) -> None:
    # One element without MQSEC_WRITE_MESSAGE refuses the open: "write" on one queue must not put a
    # copy into another.  The handle has that right and no other (it reads nothing).
    admin = connect(server.url, token="admin-t")
    inbox = admin.queue(INBOX).format_name
    orders = admin.queue(ORDERS).format_name
    replies = admin.queue(".\\private$\\replies").format_name
    writer = connect(server.url, token="writer-t")
    for name in (f"{inbox},{orders}", f"{orders},{inbox}", f"{inbox},DIRECT=OS:.\\private$\\orders"):
        with pytest.raises(MSMQError) as info:
            writer.queue(name, access=2)
        assert info.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
        assert "may not send to every queue" in info.value.message
    both = writer.queue(f"{inbox},{replies}", access=2)
    sent = Message(body=b"to both", delivery=1)
    both.send(sent)
    both.send_many([Message(body=b"many")])
    assert _hresult(both.receive, timeout=0) == HResult.MQ_ERROR_ACCESS_DENIED
    assert _hresult(both.purge) == HResult.MQ_ERROR_ACCESS_DENIED
    for name in (INBOX, ".\\private$\\replies"):
        q = admin.queue(name)
        assert [q.receive(timeout=0).body for _ in range(2)] == [b"to both", b"many"]
        q.close()
    assert admin.queue(ORDERS).message_count == 0
    # A consumer's read rights give no send right on such a name.
    consumer = connect(server.url, token="consumer-t")
    assert _hresult(consumer.queue, f"{orders},{inbox}", access=2) == HResult.MQ_ERROR_ACCESS_DENIED
    # Each queue's statistics count its copies.
    stats = admin.server_stats()
    for name in (INBOX, ".\\private$\\replies"):
        counters = stats["queues"][admin.queue(name).format_name]
        assert counters["sent"] == 2 and counters["bytes_in"] == len(b"to both") + len(b"many")
    assert f"{inbox},{replies}" not in stats["queues"]
    for c in (admin, writer, consumer):
        c.close()
