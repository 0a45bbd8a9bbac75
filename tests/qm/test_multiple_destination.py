"""``MultipleDestination`` (qm/multiple_destination.py) on the embedded queue manager: what the
shared client suite cannot see -- a restart, acknowledgements per copy, every read refused with an
MSMQError.  (A full disk refusing every copy: tests/server/test_server_disk_full.py.)"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.hresult import HResult
from pymsmq.model.constants import MQMSG_ACKNOWLEDGMENT_FULL_REACH_QUEUE, MQMSG_CLASS_ACK_REACH_QUEUE
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
        for name in dir(Queue):
            if name.startswith("_") or name in described | {"send", "send_many", "close", "close_with"}:
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
        dest.close()
        assert not dest.is_open
