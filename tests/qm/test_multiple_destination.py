"""``MultipleDestination`` (qm/multiple_destination.py) on the embedded queue manager: what the
shared client suite cannot see -- a restart, acknowledgements per copy, every read refused with an
MSMQError.  (A full disk refusing every copy: tests/server/test_server_disk_full.py.)"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.hresult import HResult
from pymsmq.model.constants import (
    INFINITE,
    MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE,
    MQMSG_CLASS_ACK_REACH_QUEUE,
)
from pymsmq.qm.multiple_destination import MultipleDestination
from pymsmq.qm.queue import Queue

A = ".\\private$\\a"
B = ".\\private$\\b"
ADMIN = ".\\private$\\admin"


def test_recoverable_copies_survive_a_restart_with_their_names_and_one_id(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        a, b = qm.create_queue(A), qm.create_queue(B)
        name = f"{a.format_name},{b.format_name}"
        sent = Message(body=b"durable", delivery=1)
        with qm.queue(name, access=2) as dest:
            dest.send(sent)
    with QueueManager.open(tmp_path / "qm") as qm:
        for path in (A, B):
            with qm.queue(path) as q:
                got = q.receive(timeout=0)
                assert (got.body, got.id, got.destination_format_name) == (b"durable", sent.id, name)
                assert got.destination_queue == q.format_name


def test_each_copy_is_acknowledged_on_arrival_with_the_messages_id(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        a, b = qm.create_queue(A), qm.create_queue(B)
        admin = qm.create_queue(ADMIN)
        sent = Message(
            body=b"ack me",
            delivery=1,
            ack=MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE,
            admin_queue=admin.format_name,
        )
        with qm.queue(f"{a.format_name},{b.format_name}", access=2) as dest:
            dest.send(sent)
        acks = [admin.receive(timeout=0) for _ in range(2)]
        assert admin.message_count == 0
        assert {m.msg_class for m in acks} == {MQMSG_CLASS_ACK_REACH_QUEUE}
        assert {m.correlation_id for m in acks} == {sent.id}
        # Each acknowledgement names the queue its copy reached (PROPID_M_RESP_QUEUE).
        assert sorted(m.response_queue for m in acks) == sorted([a.format_name, b.format_name])


def _arguments(name: str, tx: Any) -> tuple[Any, ...]:
    if "lookup_id" in name and "first" not in name and "last" not in name:
        return (1,)
    if name.endswith(("by_id", "by_id_async", "by_correlation_id", "by_correlation_id_async")):
        return (b"\x00" * 20,)
    if name == "receive_many":
        return (1,)
    if name == "enable_notification":
        return (lambda queue, cursor: None,)
    if name == "move":
        return (1, None)
    if name == "mark_rejected":
        return (1, tx)
    if name == "subqueue":
        return ("sub",)
    return ()


def test_every_read_and_administration_of_the_handle_is_an_msmq_error(tmp_path: Path) -> None:
    with QueueManager.open(tmp_path / "qm") as qm:
        a, b = qm.create_queue(A), qm.create_queue(B)
        a.send(Message(body=b"stays"))
        dest = qm.queue(f"{a.format_name},{b.format_name}", access=2)
        assert isinstance(dest, MultipleDestination)
        tx = qm.begin_transaction()
        tried = []
        described = {"access", "format_name", "is_open", "path_name", "queue_format_name"}
        described |= {"share_mode", "subqueue_name", "transactional"}
        sends = {"send", "send_async", "send_many", "close", "close_with"}
        for name in dir(Queue):
            if name.startswith("_") or name in described | sends:
                continue
            member = inspect.getattr_static(Queue, name)
            with pytest.raises(MSMQError) as info:
                if isinstance(member, property):
                    getattr(dest, name)
                else:
                    result = getattr(dest, name)(*_arguments(name, tx))
                    if inspect.isawaitable(result):
                        asyncio.run(result)  # type: ignore[arg-type]
            assert info.value.hresult in (
                HResult.MQ_ERROR_ACCESS_DENIED,
                HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION,
            ), name
            tried.append(name)
        assert len(tried) >= 40
        tx.abort()
        assert (dest.access, dest.share_mode, dest.subqueue_name, dest.path_name) == (2, 0, None, "")
        assert a.message_count == 1  # nothing was read through it
        dest.send_async(Message(body=b"both")).result()  # a send, to every queue
        assert (a.message_count, b.message_count) == (2, 1)
        dest.close()
        assert not dest.is_open


# ---------------------------------------------------------------------------- a state machine
NAMES = (".\\private$\\s0", ".\\private$\\s1", ".\\private$\\s2", ".\\private$\\t0", ".\\private$\\t1")
QUOTA_KB = 2  # s2's quota: a few sends fill it


class FanOut(RuleBasedStateMachine):
    """Sends to random multiple-element names (repeats and other spellings included), in and out of
    transactions, against a model: every queue holds exactly the copies of the sends that succeeded,
    in send order, with the send's id and name; a refused send leaves no copy anywhere."""

    def __init__(self) -> None:
        super().__init__()
        self.qm = QueueManager.open(":memory:")
        self.queues = [
            self.qm.create_queue(
                n, transactional=n[-2] == "t", quota=QUOTA_KB if n.endswith("s2") else INFINITE
            )
            for n in NAMES
        ]
        self.model: list[list[tuple[bytes, Any, str]]] = [[] for _ in NAMES]
        self.pending: list[tuple[list[int], bytes, Message, str]] = []  # sends in the open transaction
        self.tx: Any = None
        self.count = 0

    def _name(self, picks: list[int], spell: list[bool]) -> str:
        parts = []
        for i, direct in zip(picks, spell, strict=False):
            parts.append(f"DIRECT=OS:.\\{NAMES[i][2:]}" if direct else self.queues[i].format_name)
        return ",".join(parts)

    @rule(
        picks=st.lists(st.integers(0, len(NAMES) - 1), min_size=2, max_size=6),
        spell=st.lists(st.booleans(), min_size=6, max_size=6),
        delivery=st.integers(0, 1),
        size=st.sampled_from([1, 100, 900]),
        how=st.sampled_from(["none", "single", "tx"]),
    )
    def send(self, picks: list[int], spell: list[bool], delivery: int, size: int, how: str) -> None:
        name = self._name(picks, spell)
        self.count += 1
        body = self.count.to_bytes(4, "big") * (size // 4 + 1)
        m = Message(body=body, delivery=delivery)
        targets = sorted(set(picks))
        transactional = [NAMES[i][-2] == "t" for i in targets]
        if how == "tx" and self.tx is None:
            self.tx = self.qm.begin_transaction()
        arg = {"none": None, "single": 3, "tx": self.tx}[how]
        try:
            with self.qm.queue(name, access=2) as dest:
                dest.send(m, arg)
        except MSMQError as exc:
            expected_refusal = (
                (how == "none" and any(transactional))
                or (how != "none" and not all(transactional))
                or any(i == 2 for i in targets)  # s2's quota (the only refusal left)
            )
            assert expected_refusal, exc
            if exc.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES:
                assert 2 in targets
            return
        assert m.destination_format_name is not None and m.destination_queue is None
        if how == "tx":
            self.pending.append((targets, body, m, m.destination_format_name))
            return
        for i in targets:
            self.model[i].append((body, m.id, m.destination_format_name))

    @precondition(lambda self: self.tx is not None)
    @rule(commit=st.booleans())
    def end(self, commit: bool) -> None:
        if commit:
            self.tx.commit()
            for targets, body, m, name in self.pending:
                for i in targets:
                    self.model[i].append((body, m.id, name))
        else:
            self.tx.abort()
        self.tx = None
        self.pending = []

    @rule(i=st.integers(0, len(NAMES) - 1))
    def receive(self, i: int) -> None:
        q = self.queues[i]
        if not self.model[i]:
            assert q.message_count == 0
            return
        got = q.receive(0, transaction=3 if q.transactional else None)
        body, mid, name = self.model[i].pop(0)
        assert (got.body, got.id, got.destination_format_name) == (body, mid, name)
        assert got.destination_queue == q.format_name

    @invariant()
    def counts(self) -> None:
        assert [q.message_count for q in self.queues] == [len(x) for x in self.model]

    def teardown(self) -> None:
        if self.tx is not None:
            self.tx.abort()
        self.qm.close()


FanOut.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
TestFanOut = FanOut.TestCase
