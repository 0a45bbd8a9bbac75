"""``SendBatcher``: every queued SEND of every connection, written by one thread, one batch at a time.

A recoverable send is answered only once it is durable, and an fsync costs about as much as a
hundred small sends: the server therefore writes them in groups.  Sessions ``add`` their sends (those
outside a DTC transaction that cannot be done on the loop) to ONE server-wide list.  The batcher's
thread takes the whole list and calls ``QueueManager.send_batch`` once: one lock acquisition, one
store batch, one fsync for all of them.  Then it wakes the loop once to write every answer (each
session flushes once) and at once takes the list gathered meanwhile.  When the thread is idle, the
first send releases it one loop turn later, so that every frame read in that turn joins the batch.

Per-handle ordering (docs/protocol.md 8): ``add`` returns the future of the batch the send joined;
sessions keep it as the handle's tail, so later work of the handle waits for it.  Sends of one
handle in one batch are applied in arrival order (``send_batch`` goes through its list in order);
a send whose handle still has earlier work running elsewhere is added only once that work ended.
"""

from __future__ import annotations

import asyncio
import logging
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
        self._cond = threading.Condition(threading.Lock())
        # Under _cond: the sends gathered for the next batch, its future, and whether the thread may
        # take them now (set one loop turn after the first send found the thread idle).
        self._gather: list[_Send] = []
        self._gather_fut: asyncio.Future[None] | None = None
        self._release = False
        self._stop = False
        # Loop only: futures of batches not answered yet; a release is scheduled.
        self._unanswered: set[asyncio.Future[None]] = set()
        self._release_due = False
        self._thread: threading.Thread | None = None
        self._closed = False

    def owns(self, fut: object) -> bool:
        """True if ``fut`` is the future of a batch that is gathered, written or not yet answered."""
        return fut in self._unanswered

    @property
    def idle(self) -> bool:
        """Every send added so far has been answered."""
        return not self._unanswered

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
        decrements it when it answers.  Returns the future of the batch the send joined (done once
        the batch is answered).
        """
        if self._closed:
            raise RuntimeError("the send batcher is stopped")
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="pymsmq-send", daemon=True)
            self._thread.start()
        with self._cond:
            fut = self._gather_fut
            if fut is None:
                fut = self._gather_fut = self.loop.create_future()
                self._unanswered.add(fut)
            self._gather.append((session, rid, q, message, tx, counters, size))
        if not self._release_due:
            # The thread takes the list one loop turn later: every frame read in this turn joins.
            self._release_due = True
            self.loop.call_soon(self._release_now)
        return fut

    def _release_now(self) -> None:
        self._release_due = False
        with self._cond:
            self._release = True
            self._cond.notify()

    def _work(self) -> None:
        cond = self._cond
        send_batch = self.qm.send_batch
        just_wrote = False
        while True:
            with cond:
                # After a batch, what gathered meanwhile goes at once; when idle, on release.
                while not (self._gather and (self._release or just_wrote or self._stop)):
                    if self._stop:
                        return
                    just_wrote = False
                    cond.wait()
                batch, fut = self._gather, self._gather_fut
                self._gather = []
                self._gather_fut = None
                self._release = False
            outcomes: list[Any]
            try:
                errors = send_batch([(s[2], s[3], s[4]) for s in batch])
                outcomes = [
                    hot.send_response(send_facts(s[3])) if err is None else err
                    for s, err in zip(batch, errors, strict=True)
                ]
            except BaseException as exc:  # never leave a sender unanswered
                outcomes = [exc] * len(batch)
            just_wrote = True
            try:
                self.loop.call_soon_threadsafe(self._done, batch, outcomes, fut)
            except RuntimeError:  # the loop is closed: nobody waits for these any more
                return

    def _done(self, batch: list[_Send], outcomes: list[Any], fut: asyncio.Future[None] | None) -> None:
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
        if fut is not None:
            self._unanswered.discard(fut)
            if not fut.done():
                fut.set_result(None)  # the handles' later work may start

    async def flush(self) -> None:
        """Wait until every send added so far is written and answered."""
        while not self.idle:
            await asyncio.sleep(0.005)

    def shutdown(self) -> None:
        """Refuse new sends; the thread writes what it holds, then stops (call after ``flush``)."""
        self._closed = True
        with self._cond:
            self._stop = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
