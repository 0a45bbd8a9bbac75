"""``SendBatcher``: every queued SEND of every connection, written by one thread, one batch at a time.

A recoverable send is answered only once it is durable, and an fsync costs about as much as a
hundred small sends: the server therefore writes them in groups.  Sessions ``add`` their sends (those
outside a DTC transaction that cannot be done on the loop) to ONE server-wide list.  When no batch
is being written, the whole list goes, one loop turn later (so every frame that arrived in that turn
joins it), to the batcher's thread, which calls ``QueueManager.send_batch`` once: one lock
acquisition, one store batch, one fsync for all of them.  When it is done the loop is woken once,
writes every answer (each session flushes once) and hands the list gathered meanwhile to the thread.

Per-handle ordering (docs/protocol.md 8): ``add`` returns the future of the batch the send joined;
sessions keep it as the handle's tail, so later work of the handle waits for it.  Sends of one
handle in one batch are applied in arrival order (``send_batch`` goes through its list in order);
a send whose handle still has earlier work running elsewhere is added only once that work ended.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from typing import TYPE_CHECKING, Any

from pymsmq.errors import MSMQError
from pymsmq.protocol import hot
from pymsmq.protocol.message_codec import send_facts

if TYPE_CHECKING:
    from pymsmq.model.message import Message
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.server.session import Session
    from pymsmq.server.stats import QueueCounters

__all__ = ["SendBatcher"]

log = logging.getLogger("pymsmq.server")

# One queued send: session, request id, queue, message, transaction argument, counters, body size.
_Send = tuple["Session", int, "Queue", "Message", "int | None", "QueueCounters", int]


class SendBatcher:
    """Server-wide batching of SENDs into ``QueueManager.send_batch`` calls on one thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, qm: QueueManager) -> None:
        self.loop = loop
        self.qm = qm
        #: Batches written and sends answered so far (statistics and tests).
        self.batches = 0
        self.sends = 0
        self._gather: list[_Send] = []
        self._gather_fut: asyncio.Future[None] | None = None
        self._running: asyncio.Future[None] | None = None
        self._start_due = False
        self._jobs: queue.SimpleQueue[list[_Send] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False

    def owns(self, fut: object) -> bool:
        """True if ``fut`` is the future of the batch being gathered or written."""
        return fut is not None and (fut is self._gather_fut or fut is self._running)

    @property
    def idle(self) -> bool:
        """Nothing gathered and nothing being written."""
        return self._running is None and not self._gather

    def add(
        self,
        session: Session,
        rid: int,
        q: Queue,
        message: Message,
        tx: int | None,
        counters: QueueCounters,
        size: int,
    ) -> asyncio.Future[None]:
        """Queue ``q.send(message, tx)``; ``session`` is answered for ``rid`` once it is done.

        Call from the loop.  The caller counts the send in ``session.pending``; the batcher
        decrements it when it answers.  Returns the future of the batch the send joined.
        """
        if self._closed:
            raise RuntimeError("the send batcher is stopped")
        fut = self._gather_fut
        if fut is None:
            fut = self._gather_fut = self.loop.create_future()
        self._gather.append((session, rid, q, message, tx, counters, size))
        if self._running is None and not self._start_due:
            self._start_due = True
            self.loop.call_soon(self._start)
        return fut

    def _start(self) -> None:
        self._start_due = False
        if self._running is not None or not self._gather:
            return
        batch = self._gather
        self._running = self._gather_fut
        self._gather = []
        self._gather_fut = None
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="pymsmq-send", daemon=True)
            self._thread.start()
        self._jobs.put(batch)

    def _work(self) -> None:
        jobs = self._jobs
        send_batch = self.qm.send_batch
        while True:
            batch = jobs.get()
            if batch is None:
                return
            outcomes: list[Any]
            try:
                errors = send_batch([(s[2], s[3], s[4]) for s in batch])
                outcomes = [
                    hot.send_response(send_facts(s[3])) if err is None else err
                    for s, err in zip(batch, errors, strict=True)
                ]
            except BaseException as exc:  # never leave a sender unanswered
                outcomes = [exc] * len(batch)
            try:
                self.loop.call_soon_threadsafe(self._done, batch, outcomes)
            except RuntimeError:  # the loop is closed: nobody waits for these any more
                return

    def _done(self, batch: list[_Send], outcomes: list[Any]) -> None:
        fut = self._running
        self._running = None
        self.batches += 1
        self.sends += len(batch)
        for (session, rid, _, _, _, counters, size), outcome in zip(batch, outcomes, strict=True):
            session.pending -= 1
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, MSMQError):
                    log.error("send batch failed", exc_info=outcome)
                session.fail(rid, outcome)
            else:
                counters.sent += 1
                counters.bytes_in += size
                session.answer(rid, outcome)
        if fut is not None and not fut.done():
            fut.set_result(None)  # the handles' later work may start
        if self._gather:
            self._start()

    async def flush(self) -> None:
        """Wait until every send added so far is written and answered."""
        while not self.idle:
            await asyncio.sleep(0.005)

    def shutdown(self) -> None:
        """Stop the thread once the batch it writes (if any) is done; refuse new sends."""
        self._closed = True
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
