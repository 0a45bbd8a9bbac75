"""SEND scheduling for ``Session`` (docs/protocol.md 5 and 8).

An express send outside a DTC transaction, with nothing of its handle still running off the loop, is
done on the event loop.  A recoverable send (or one behind earlier work of its handle) joins the
server-wide ``SendBatcher`` (one store batch and one fsync for every send waiting); a send in a DTC
transaction runs on the work pool after earlier state-changing work of the same handle.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final, cast

from pymsmq.errors import MSMQError, WireError, reason
from pymsmq.hresult import HResult
from pymsmq.protocol import hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import Op
from pymsmq.protocol.fast_packet import decode_for_send, decode_simple
from pymsmq.protocol.message_codec import decode_message, send_answer_body, send_facts, sent_packet_size
from pymsmq.qm.transaction import Transaction
from pymsmq.server.reply_queues import reply_queue_refusal, reply_queues_here
from pymsmq.server.workers import chain_future
from pymsmq.wire.security import MQQueueAccessMask

if TYPE_CHECKING:
    from collections.abc import Callable

    from pymsmq.model.message import Message
    from pymsmq.protocol import ErrorResponse
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.server.access import AccessPolicy
    from pymsmq.server.app import Server
    from pymsmq.server.session import Handle, Session
    from pymsmq.server.stats import ServerStats

__all__ = ["SendMixin"]

# MQQUEUEACCESSMASK bits as plain ints (an IntFlag operation costs a Python call on the hot path).
_WRITE: Final = int(MQQueueAccessMask.MQSEC_WRITE_MESSAGE)


def decode_refusal(exc: WireError) -> int:
    """The HRESULT a SEND or SEND_MANY message that does not decode is refused with:
    MQ_ERROR_INVALID_PARAMETER, or MQ_ERROR_INSUFFICIENT_RESOURCES when the read's element budget
    ran out (``pymsmq.wire.element_budget``)."""
    if exc.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES:
        return HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
    return HResult.MQ_ERROR_INVALID_PARAMETER


_SEND_OP: Final = int(Op.SEND)


class SendMixin:
    """``_send`` for ``Session``."""

    server: Server
    stats: ServerStats
    handles: dict[int, Handle]
    loop: asyncio.AbstractEventLoop
    pending: int
    qm: QueueManager
    identity: str

    if TYPE_CHECKING:

        @property
        def policy(self) -> AccessPolicy: ...

        def handle(self, number: int) -> Handle: ...
        def check(self, h: Handle, needed: int, what: str) -> None: ...
        def transaction(self, ref: object) -> Transaction | int | None: ...
        def answer(self, rid: int, response: pm.Response | ErrorResponse) -> None: ...
        def answer_fast(self, rid: int, op: int, body: bytes | None) -> bool: ...
        def fail(self, rid: int, exc: BaseException) -> None: ...
        def off_loop(self, rid: int, fn: Callable[[], pm.Response], handle: Handle | None = None) -> None: ...

    def _send(self, rid: int, req: pm.SendRequest) -> None:
        h = self.handles.get(req.handle) or self.handle(req.handle)
        if _WRITE & ~h.rights:
            self.check(h, _WRITE, "send to")
        size = len(req.packet) if not req.properties else sent_packet_size(req.packet, req.properties)
        if size > self.server.config.max_message_size:
            raise MSMQError(
                "the message is larger than the server accepts", HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
            )
        packet = None
        try:
            # decode_message, the common case first (no properties beside a simple packet, as
            # encode_simple writes it: the packet stored is derived from it)
            decoded = None if req.properties else decode_for_send(req.packet)
            if decoded is not None:
                message, canonical = decoded
                if canonical:
                    packet = req.packet
            else:
                message = (None if req.properties else decode_simple(req.packet)) or decode_message(
                    req.packet, req.properties
                )
        except WireError as exc:
            # (MQ_ERROR_INSUFFICIENT_RESOURCES for one over the read's element budget: element_budget)
            raise MSMQError(f"malformed message: {reason(exc)}", decode_refusal(exc)) from None
        if (message.admin_queue or message.response_queue) and reply_queues_here(self.qm, message):
            packet = None
        if message.admin_queue or message.dead_letter_queue:
            refusal = reply_queue_refusal(self.qm, self.policy, self.identity, message)
            if refusal is not None:
                raise refusal
        tx = None if req.transaction is None else self.transaction(req.transaction)
        queue = h.queue
        if queue._fans_out:
            self._send_to_each(rid, h, message, tx)
            return
        counters = self.stats.queue(h.stats_key)
        size = len(message.body)
        if message.delivery == 0 and (tx is None or tx in (0, 1)) and (h.tail is None or h.tail.done()):
            # Fast path: an express send outside a DTC transaction, nothing of this handle still
            # running off the loop: done here, on the loop (no closure).
            queue.send(message, tx)
            counters.sent += 1
            counters.bytes_in += size
            if not self.answer_fast(rid, _SEND_OP, send_answer_body(message)):
                self.answer(rid, hot.send_response(send_facts(message)))
            return

        if not isinstance(tx, Transaction):
            # Recoverable (or behind earlier work of its handle): the server-wide send batcher
            # writes it with every other send that is waiting (one store batch, one fsync).
            self._batch_send(rid, h, queue, message, tx, counters, size, packet)
            return

        def run() -> pm.Response:
            queue.send(message, tx)
            counters.sent += 1
            counters.bytes_in += size
            return hot.send_response(send_facts(message))

        self.off_loop(rid, run, h)

    def _send_to_each(self, rid: int, h: Handle, message: Message, tx: Transaction | int | None) -> None:
        # A handle on a multiple-element name (qm.multiple_destination): the copies are written
        # together by the handle itself, off the loop, after earlier work of the handle; each
        # queue's counters count its copy.
        queue = h.queue
        stats = self.stats
        size = len(message.body)

        def run() -> pm.Response:
            queue.send(message, tx)
            for name in h.stats_keys:
                counters = stats.queue(name)
                counters.sent += 1
                counters.bytes_in += size
            return hot.send_response(send_facts(message))

        self.off_loop(rid, run, h)

    def _batch_send(
        self,
        rid: int,
        h: Handle,
        queue: Queue,
        message: Message,
        tx: int | None,
        counters: Any,
        size: int,
        packet: bytes | None,
    ) -> None:
        # docs/protocol.md 8: a send joins the batcher at once when its handle has no earlier work
        # running, or only sends in the batcher (a batch applies its sends in arrival order and the
        # next batch starts after it); otherwise it joins once that work has ended.
        batcher = self.server.send_batcher
        session = cast("Session", self)
        prev = h.tail
        if prev is None or prev.done() or batcher.owns(prev):
            h.tail = batcher.add(session, rid, queue, message, tx, counters, size, packet)
            self.pending += 1
            return
        self.pending += 1
        fut: asyncio.Future[Any] = self.loop.create_future()
        h.tail = fut

        def start(_: object) -> None:
            try:
                inner = batcher.add(session, rid, queue, message, tx, counters, size, packet)
            except Exception as exc:  # the batcher stopped meanwhile (shutdown)
                self.pending -= 1
                self.fail(rid, exc)
                fut.set_result(None)
                return
            inner.add_done_callback(lambda f: chain_future(f, fut))

        prev.add_done_callback(start)
