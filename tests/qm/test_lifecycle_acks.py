"""Administration acknowledgements ([MS-MQQB] 3.1.5.8.10, 3.1.7.2.1, 3.1.7.15) and arrival-failure
handling: every MQMSG_ACKNOWLEDGMENT_* level, purge and delete NACKs, quota, bad destination."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pymsmq import (
    MQ_SINGLE_MESSAGE,
    MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE,
    MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
    MQMSG_ACKNOWLEDGMENT_NACK_REACH_QUEUE,
    MQMSG_ACKNOWLEDGMENT_NACK_RECEIVE,
    MQMSG_ACKNOWLEDGMENT_NEG_ARRIVAL,
    MQMSG_ACKNOWLEDGMENT_NEG_RECEIVE,
    MQMSG_ACKNOWLEDGMENT_NONE,
    MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL,
    MQMSG_ACKNOWLEDGMENT_POS_RECEIVE,
    MQMSG_DEADLETTER,
    HResult,
    Message,
    MSMQError,
    QueueManager,
    QuotaExceededError,
)
from pymsmq.qm.queue import Queue
from pymsmq.qm.timers import FakeClock

ACK_REACH_QUEUE, ACK_RECEIVE = 0x0002, 0x4000
NACK_BAD_DST_Q, NACK_REACH_QUEUE_TIMEOUT, NACK_Q_EXCEED_QUOTA, NACK_ACCESS_DENIED = (
    0x8000,
    0x8002,
    0x8003,
    0x8004,
)
NACK_Q_DELETED, NACK_Q_PURGED, NACK_RECEIVE_TIMEOUT, NACK_RECEIVE_REJECTED = 0xC000, 0xC001, 0xC002, 0xC004


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_000_000.0)


@pytest.fixture
def qm(clock: FakeClock) -> Iterator[QueueManager]:
    m = QueueManager.open(":memory:", clock=clock)
    yield m
    m.close()


def drain(q: Queue) -> list[Message]:
    out = []
    while True:
        try:
            out.append(q.receive(timeout=0))
        except MSMQError as e:
            assert e.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
            return out


def setup(qm: QueueManager, transactional: bool = False) -> tuple[Queue, Queue]:
    return qm.create_queue(r".\private$\q", transactional=transactional), qm.create_queue(r".\private$\admin")


# The classes each level produces for: arrival, receive, receive timeout, purge (in that order).
LEVELS = [
    (MQMSG_ACKNOWLEDGMENT_NONE, [], [], [], []),
    (MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL, [ACK_REACH_QUEUE], [], [], []),
    (MQMSG_ACKNOWLEDGMENT_POS_RECEIVE, [], [ACK_RECEIVE], [], []),
    (MQMSG_ACKNOWLEDGMENT_NEG_ARRIVAL, [], [], [], []),
    (MQMSG_ACKNOWLEDGMENT_NEG_RECEIVE, [], [], [NACK_RECEIVE_TIMEOUT], [NACK_Q_PURGED]),
    (MQMSG_ACKNOWLEDGMENT_NACK_REACH_QUEUE, [], [], [], []),
    (MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE, [ACK_REACH_QUEUE], [], [], []),
    (MQMSG_ACKNOWLEDGMENT_NACK_RECEIVE, [], [], [NACK_RECEIVE_TIMEOUT], [NACK_Q_PURGED]),
    (MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE, [], [ACK_RECEIVE], [NACK_RECEIVE_TIMEOUT], [NACK_Q_PURGED]),
    # Unions of the levels ([MS-MQMQ] 2.2.19.3; MSMQ's FULL_REACH_QUEUE | FULL_RECEIVE): each bit acts.
    (
        MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE | MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
        [ACK_REACH_QUEUE],
        [ACK_RECEIVE],
        [NACK_RECEIVE_TIMEOUT],
        [NACK_Q_PURGED],
    ),
    (
        MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL | MQMSG_ACKNOWLEDGMENT_POS_RECEIVE,
        [ACK_REACH_QUEUE],
        [ACK_RECEIVE],
        [],
        [],
    ),
]


@pytest.mark.parametrize(("level", "arrival", "receive", "timeout", "purge"), LEVELS)
def test_every_acknowledgement_level(
    qm: QueueManager,
    clock: FakeClock,
    level: int,
    arrival: list[int],
    receive: list[int],
    timeout: list[int],
    purge: list[int],
) -> None:
    q, admin = setup(qm)

    def send(**kw: object) -> Message:
        m = Message(body=b"B", label="lbl", ack=level, admin_queue=admin.format_name, **kw)  # type: ignore[arg-type]
        q.send(m)
        return m

    m = send()
    assert [(a.msg_class, a.correlation_id) for a in drain(admin)] == [(c, m.id) for c in arrival]
    q.receive(timeout=0)
    assert [(a.msg_class, a.correlation_id) for a in drain(admin)] == [(c, m.id) for c in receive]
    m = send(max_time_to_receive=5)
    drain(admin)
    clock.advance(5)
    assert [(a.msg_class, a.correlation_id) for a in drain(admin)] == [(c, m.id) for c in timeout]
    m = send()
    drain(admin)
    q.purge()
    assert [(a.msg_class, a.correlation_id) for a in drain(admin)] == [(c, m.id) for c in purge]


def test_ack_message_fields(qm: QueueManager) -> None:
    q, admin = setup(qm)
    m = Message(
        body=b"payload",
        label="order 7",
        delivery=1,
        priority=6,
        app_specific=77,
        extension=b"ext",
        ack=MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE,
        admin_queue=admin.format_name,
    )
    q.send(m)
    reach = admin.receive(timeout=0)
    # "PROPID_M_APPSPECIFIC ... Same as original message" (MSMQ's Acknowledgment Message
    # Properties; outside QA, 2026-11-27: 0), and PROPID_M_EXTENSION the same.
    assert reach.app_specific == 77 and reach.extension == b"ext"
    assert reach.msg_class == ACK_REACH_QUEUE
    assert reach.correlation_id == m.id and reach.label == "order 7"
    assert reach.body == b""  # [MS-MQQB] 3.1.7.15 step 5: no body for ACK_REACH_QUEUE
    assert reach.response_queue == q.format_name and reach.destination_queue == admin.format_name
    assert reach.delivery == 1 and reach.ack == 0 and reach.journal == 0
    assert reach.max_time_to_receive == reach.max_time_to_reach_queue == 0xFFFFFFFF
    assert reach.source_machine_guid == qm.guid and reach.id is not None and reach.id != m.id
    drain(q)
    m2 = Message(
        body=b"payload2",
        label="order 8",
        ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
        admin_queue=admin.format_name,
    )
    q.send(m2)
    q.purge()
    nack = admin.receive(timeout=0)
    assert nack.msg_class == NACK_Q_PURGED and nack.body == b"payload2"  # NACKs copy the body
    assert nack.correlation_id == m2.id and nack.label == "order 8" and nack.delivery == 0


def test_receive_ack_inside_a_transaction_waits_for_commit(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    admin = qm.create_queue(r".\private$\admin")
    m = Message(body=b"x", ack=MQMSG_ACKNOWLEDGMENT_POS_RECEIVE, admin_queue=admin.format_name)
    q.send(m, transaction=MQ_SINGLE_MESSAGE)
    tx = qm.begin_transaction()
    q.receive(timeout=0, transaction=tx)
    tx.abort()
    assert admin.message_count == 0
    with qm.begin_transaction() as tx:
        q.receive(timeout=0, transaction=tx)
        assert admin.message_count == 0
    assert [(a.msg_class, a.correlation_id) for a in drain(admin)] == [(ACK_RECEIVE, m.id)]


def test_transactional_arrival_ack_at_commit(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    admin = qm.create_queue(r".\private$\admin")
    with qm.begin_transaction() as tx:
        q.send(Message(ack=MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL, admin_queue=admin.format_name), transaction=tx)
        assert admin.message_count == 0
    assert [a.msg_class for a in drain(admin)] == [ACK_REACH_QUEUE]


def test_delete_queue_sends_nack_and_dead_letters_transactional(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    admin = qm.create_queue(r".\private$\admin")
    m = Message(
        body=b"d",
        ack=MQMSG_ACKNOWLEDGMENT_NACK_RECEIVE,
        admin_queue=admin.format_name,
        journal=MQMSG_DEADLETTER,
    )
    q.send(m, transaction=MQ_SINGLE_MESSAGE)
    qm.delete_queue(r".\private$\t")
    assert [(a.msg_class, a.correlation_id) for a in drain(admin)] == [(NACK_Q_DELETED, m.id)]
    assert [(d.body, d.msg_class) for d in drain(qm.transactional_dead_letter_queue)] == [
        (b"d", NACK_Q_DELETED)
    ]


def test_purge_dead_letters_transactional_only(qm: QueueManager) -> None:
    t = qm.create_queue(r".\private$\t", transactional=True)
    n = qm.create_queue(r".\private$\n")
    t.send(Message(body=b"t", journal=MQMSG_DEADLETTER), transaction=MQ_SINGLE_MESSAGE)
    n.send(Message(body=b"n", journal=MQMSG_DEADLETTER))
    t.purge()
    n.purge()
    assert [(d.body, d.msg_class) for d in drain(qm.transactional_dead_letter_queue)] == [
        (b"t", NACK_Q_PURGED)
    ]
    assert qm.dead_letter_queue.message_count == 0


def test_purge_of_locked_message_nacks_when_transaction_aborts(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\t", transactional=True)
    admin = qm.create_queue(r".\private$\admin")
    q.send(
        Message(ack=MQMSG_ACKNOWLEDGMENT_NEG_RECEIVE, admin_queue=admin.format_name),
        transaction=MQ_SINGLE_MESSAGE,
    )
    tx = qm.begin_transaction()
    q.receive(timeout=0, transaction=tx)
    q.purge()
    assert admin.message_count == 0
    tx.abort()
    assert [a.msg_class for a in drain(admin)] == [NACK_Q_PURGED]


def test_quota_refusal_nacks_and_dead_letters(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\small", quota=1)
    admin = qm.create_queue(r".\private$\admin")
    q.send(Message(body=b"x" * 1000))
    m = Message(
        body=b"y" * 100,
        ack=MQMSG_ACKNOWLEDGMENT_NEG_ARRIVAL,
        admin_queue=admin.format_name,
        journal=MQMSG_DEADLETTER,
    )
    with pytest.raises(QuotaExceededError) as e:
        q.send(m)
    assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    assert [(a.msg_class, a.correlation_id) for a in drain(admin)] == [(NACK_Q_EXCEED_QUOTA, m.id)]
    assert [(d.body, d.msg_class) for d in drain(qm.dead_letter_queue)] == [(b"y" * 100, NACK_Q_EXCEED_QUOTA)]
    assert q.message_count == 1


def test_quota_refusal_transactional_goes_to_xact_dlq(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\small", quota=1, transactional=True)
    with pytest.raises(QuotaExceededError):
        q.send(Message(body=b"y" * 2000, journal=MQMSG_DEADLETTER), transaction=MQ_SINGLE_MESSAGE)
    assert [d.msg_class for d in drain(qm.transactional_dead_letter_queue)] == [NACK_Q_EXCEED_QUOTA]


@pytest.mark.parametrize("insecure", [False, True])
def test_bad_destination_at_commit(clock: FakeClock, insecure: bool) -> None:
    qm = QueueManager.open(":memory:", clock=clock, send_insecure_nacks=insecure)
    try:
        q = qm.create_queue(r".\private$\t", transactional=True)
        admin = qm.create_queue(r".\private$\admin")
        m = Message(
            body=b"b",
            ack=MQMSG_ACKNOWLEDGMENT_NEG_ARRIVAL,
            admin_queue=admin.format_name,
            journal=MQMSG_DEADLETTER,
        )
        with qm.begin_transaction() as tx:
            q.send(m, transaction=tx)
            qm.delete_queue(r".\private$\t")
        assert [(d.body, d.msg_class) for d in drain(qm.transactional_dead_letter_queue)] == [
            (b"b", NACK_BAD_DST_Q)
        ]
        # [MS-MQQB] 3.1.7.15 step 2: NACK_BAD_DST_Q is an "insecure" NACK, sent only when enabled.
        assert [a.msg_class for a in drain(admin)] == ([NACK_BAD_DST_Q] if insecure else [])
    finally:
        qm.close()


def test_reject_message_access_denied(clock: FakeClock) -> None:
    qm = QueueManager.open(":memory:", clock=clock, send_insecure_nacks=True)
    try:
        admin = qm.create_queue(r".\private$\admin")
        m = Message(
            body=b"r",
            ack=MQMSG_ACKNOWLEDGMENT_NEG_ARRIVAL,
            admin_queue=admin.format_name,
            journal=MQMSG_DEADLETTER,
        )
        qm.reject_message(m, NACK_ACCESS_DENIED)
        assert [a.msg_class for a in drain(admin)] == [NACK_ACCESS_DENIED]
        assert [d.msg_class for d in drain(qm.dead_letter_queue)] == [NACK_ACCESS_DENIED]
    finally:
        qm.close()


def test_acks_discarded_without_usable_admin_queue(qm: QueueManager) -> None:
    q = qm.create_queue(r".\private$\q")
    tadmin = qm.create_queue(r".\private$\tadmin", transactional=True)
    missing = f"PRIVATE={qm.guid}\\0000abcd"
    remote = r"DIRECT=OS:elsewhere\private$\admin"
    for admin in (None, missing, remote, tadmin.format_name, qm.dead_letter_queue.format_name):
        for level in (MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE, MQMSG_ACKNOWLEDGMENT_POS_ARRIVAL):
            q.send(Message(ack=level, admin_queue=admin))
            q.receive(timeout=0)
    assert tadmin.message_count == 0 and qm.dead_letter_queue.message_count == 0


def test_a_multiple_element_admin_queue_gets_a_copy_in_each_local_queue(tmp_path: object) -> None:
    # "A multiple-element format name can be constructed to ... specify multiple administration
    # queues for sending acknowledgment messages" (MSMQ, Multiple-Element Format Names): a copy of
    # the one acknowledgement (its id) in each local non-transactional queue it names, once per
    # queue; elements naming no such queue here are skipped, as a single one is.  Recoverable acks
    # are stored: both copies are there after a restart.
    qm = QueueManager.open(str(tmp_path))
    try:
        q = qm.create_queue(r".\private$\q")
        a1, a2 = qm.create_queue(r".\private$\a1"), qm.create_queue(r".\private$\a2")
        tadmin = qm.create_queue(r".\private$\tadmin", transactional=True)
        admin = ",".join(
            (
                a1.format_name,
                r"DIRECT=OS:.\private$\a2",
                f"PRIVATE={qm.guid}\\0000abcd",  # no such queue
                tadmin.format_name,  # transactional: no ack
                r"DIRECT=TCP:10.1.2.3\private$\elsewhere",  # not here
                a1.format_name,  # again: still one copy
            )
        )
        full = MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE
        m = Message(body=b"order", label="l", ack=full, admin_queue=admin, delivery=1)
        q.send(m)
        assert q.receive(timeout=0).admin_queue == admin
        assert (a1.message_count, a2.message_count, tadmin.message_count) == (1, 1, 0)
        two = a2.format_name + "," + a1.format_name
        q.send(Message(body=b"x", ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE, admin_queue=two, delivery=1))
        a1_format, a2_format = a1.format_name, a2.format_name
    finally:
        qm.close()
    qm = QueueManager.open(str(tmp_path))
    try:
        a1, a2 = qm.queue(a1_format), qm.queue(a2_format)
        acks = [a.receive(timeout=0) for a in (a1, a2)]
        assert [(x.msg_class, x.correlation_id, x.destination_queue) for x in acks] == [
            (ACK_RECEIVE, m.id, a1_format),
            (ACK_RECEIVE, m.id, a2_format),
        ]
        assert acks[0].id == acks[1].id and acks[0].id != m.id  # one acknowledgement, two copies
        q = qm.queue(r".\private$\q")
        q.purge()  # the second message: NACK_Q_PURGED needs NEG_RECEIVE, which FULL_RECEIVE has
        nacks = [a.receive(timeout=0) for a in (a1, a2)]
        assert {x.msg_class for x in nacks} == {NACK_Q_PURGED}
        assert a1.message_count == a2.message_count == 0
    finally:
        qm.close()


def test_messages_in_dead_letter_queue_generate_no_acks(qm: QueueManager, clock: FakeClock) -> None:
    q, admin = setup(qm)
    q.send(
        Message(
            ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
            admin_queue=admin.format_name,
            journal=MQMSG_DEADLETTER,
            max_time_to_receive=1,
        )
    )
    clock.advance(1)
    assert [a.msg_class for a in drain(admin)] == [NACK_RECEIVE_TIMEOUT]
    qm.dead_letter_queue.receive(timeout=0)
    assert admin.message_count == 0


@pytest.mark.parametrize("delivery", [0, 1])
def test_a_negative_acknowledgement_sent_again_is_not_acknowledged(qm: QueueManager, delivery: int) -> None:
    # docs/api.md: "A message of a NACK class (0x8000 set) asks for no acknowledgement" -- on its
    # arrival too (outside QA: an imported dead-letter queue sent ACK_REACH_QUEUE messages to the
    # original senders' admin queues; receipts and NACKs were already left out).
    q, admin = setup(qm)
    levels = MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE | MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE
    dead = Message(
        msg_class=NACK_RECEIVE_TIMEOUT, ack=levels, admin_queue=admin.format_name, delivery=delivery
    )
    q.send(dead)
    q.send(Message(ack=levels, admin_queue=admin.format_name, delivery=delivery))  # a normal one
    assert [m.msg_class for m in drain(q)] == [NACK_RECEIVE_TIMEOUT, 0]
    assert [(a.msg_class, a.correlation_id == dead.id) for a in drain(admin)] == [
        (ACK_REACH_QUEUE, False),
        (ACK_RECEIVE, False),
    ]


def test_a_message_marked_rejected_leaves_with_nack_receive_rejected(qm: QueueManager) -> None:
    # MQMarkMessageRejected (WCF's ReceiveErrorHandling=Reject; outside QA: no equivalent, and a
    # receive then reject_message sent the sender a positive ack and then the rejection).
    q = qm.create_queue(r".\private$\t", transactional=True)
    admin = qm.create_queue(r".\private$\admin")
    m = Message(
        body=b"bad",
        ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE,
        admin_queue=admin.format_name,
        journal=MQMSG_DEADLETTER,
    )
    q.send(m, transaction=MQ_SINGLE_MESSAGE)
    lid = q.peek(timeout=0).lookup_id
    tx = qm.begin_transaction()  # marked, received, then aborted: nothing is sent, it stays
    q.receive_by_lookup_id(lid, transaction=tx)
    q.mark_rejected(lid, tx)
    tx.abort()
    assert admin.message_count == 0 and q.peek(timeout=0).abort_count == 1
    with qm.begin_transaction() as tx:  # marked first, then received: rejected at commit
        q.mark_rejected(lid, tx)
        assert q.receive_by_lookup_id(lid, transaction=tx).body == b"bad"
        assert admin.message_count == 0
    assert [(a.msg_class, a.correlation_id) for a in drain(admin)] == [(NACK_RECEIVE_REJECTED, m.id)]
    assert [(d.body, d.msg_class) for d in drain(qm.transactional_dead_letter_queue)] == [
        (b"bad", NACK_RECEIVE_REJECTED)
    ]
    q.send(
        Message(body=b"good", ack=MQMSG_ACKNOWLEDGMENT_FULL_RECEIVE, admin_queue=admin.format_name),
        MQ_SINGLE_MESSAGE,
    )
    with qm.begin_transaction() as tx:  # not marked: the positive receive acknowledgement
        q.receive(timeout=0, transaction=tx)
    assert [a.msg_class for a in drain(admin)] == [ACK_RECEIVE]
    plain = qm.create_queue(r".\private$\plain")
    plain.send(Message(body=b"p"))
    with qm.begin_transaction() as tx:
        for call in (lambda: q.mark_rejected(1, MQ_SINGLE_MESSAGE), lambda: plain.mark_rejected(1, tx)):
            with pytest.raises(MSMQError) as refused:
                call()
            assert refused.value.hresult == HResult.MQ_ERROR_TRANSACTION_USAGE
        with pytest.raises(MSMQError) as missing:
            q.mark_rejected(999, tx)
        assert missing.value.hresult == HResult.MQ_ERROR_MESSAGE_NOT_FOUND
