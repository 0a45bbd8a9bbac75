"""``SendBatcher``: every queued SEND of every connection, written one batch at a time.

A recoverable send is answered only once it is durable, and an fsync costs about as much as a
hundred small sends: the server therefore writes them in groups.  Sessions ``add`` their sends (those
outside a DTC transaction that cannot be done on the loop) to ONE server-wide list, and the whole list
goes to ``QueueManager.send_batch`` at once: one lock acquisition, one store batch, one fsync for all
of them; then every answer is written (each session flushes once).  The first send of a batch
releases it one loop turn later, so that every frame read in that turn joins it.

Where batches are written (``ServerConfig.durable_writes``):

* ``"auto"`` (the default): as ``"loop"`` while nothing but these sends arrives, and on a writer
  thread (one batch at a time, the next released when it ends) while other requests came in the
  last 50 ms, so that express work and receives do not wait for the disk.  Interleaved runs of
  2026-11-25: 32 clients 17.3-17.7k/s (``"loop"`` 17.5-19.7k, ``"thread"`` 13.4-13.7k); an express
  round trip beside them 0.18 ms (p50; ``"loop"`` 1.9-2.0 ms, ``"thread"`` 0.21-0.25 ms).  Other
  requests are seen as the server's request count minus the sends added here, at each decision.
* ``"loop"``: on the event loop itself, at the end of the turn, as Redis does with
  ``appendfsync always``.  No thread hand-offs and no second thread contending for the GIL: the
  most recoverable sends per second (17.4-18.5k from 32 clients against 13.0-14.7k for ``"thread"``,
  interleaved runs of 2026-11-25).  The loop waits for the fsync, so the work of other connections
  waits too (0.2-1 ms per commit on a quiet disk, more on a busy one): beside 32 recoverable senders
  an express send + receive round trip took 2.56 ms (p50) against 0.27 ms with ``"thread"``.
  Cohorts: the senders a batch answered send again while the loop reads the others, so with
  clients that keep one request in flight the batch would go with those that happen to be back and
  the senders would split into cohorts that alternate, a commit each.  When some senders of the
  last batch have not sent again, the batch therefore waits for them, loop turn after loop turn
  (the loop goes on reading, so every frame that arrives joins it), for at most half the last
  write's duration (and 1 ms) after the answers went out.  8 clients: 4.1 -> 7.4-7.7 sends per
  commit and 9.0-10.1k -> 11.7-13.1k/s; 1 and 32 clients: no change in rate (interleaved runs of
  2026-11-25).
* ``"thread"``: on a thread of its own, so that the loop keeps serving while the disk syncs.  The
  thread takes the list gathered meanwhile as soon as it has written a batch.  Cohorts: with clients
  that keep one request in flight, the senders answered by one batch send again while the next batch
  is written, and would from then on alternate in two half-size commits.  The thread therefore
  remembers how many senders the last round had (the batch plus what gathered while it was written)
  and, when fewer are waiting, waits for the rest -- at most half the last write's duration (and
  2 ms) -- so that they share one commit.  One client: the round had one sender, its next send goes
  at once.

Per-handle ordering (docs/protocol.md 8): ``add`` returns the future of the batch the send joined;
sessions keep it as the handle's tail, so later work of the handle waits for it.  Sends of one
handle in one batch are applied in arrival order (``send_batch`` goes through its list in order);
a send whose handle still has earlier work running elsewhere is added only once that work ended.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from pymsmq.errors import MSMQError
from pymsmq.protocol import hot
from pymsmq.protocol.codes import Op
from pymsmq.protocol.message_codec import send_answer_body, send_facts
from pymsmq.qm.send_batch import send_batch

if TYPE_CHECKING:
    from pymsmq.model.message import Message
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.server.session import Session
    from pymsmq.server.stats import QueueCounters

__all__ = ["DURABLE_WRITES", "DurableWrites", "SendBatcher"]

log = logging.getLogger("pymsmq.server")

#: The thread waits at most this share of the last batch's write time for more sends, and at most
#: _MAX_WAIT seconds.
_WAIT_SHARE = 0.5
_MAX_WAIT = 0.002
#: ``"loop"``: a batch waits for the senders the last one answered for at most this share of the
#: last write's duration after the answers went out, and at most _MAX_LOOP_WAIT seconds.
_MAX_LOOP_WAIT = 0.001
_SEND_OP: Final = int(Op.SEND)

#: Where batches are written: on the event loop, on a thread of their own, or on the loop while only
#: recoverable sends arrive and on a thread otherwise (module docstring).
DurableWrites = Literal["loop", "thread", "auto"]
#: The values of ``DurableWrites`` (what the configuration and the command line accept).
DURABLE_WRITES: Final[tuple[DurableWrites, ...]] = get_args(DurableWrites)
#: ``"auto"``: batches go off the loop while other requests arrived less than this long ago (seconds).
_QUIET = 0.05

# One queued send: session, request id, queue, message, transaction argument, counters, body size,
# the packet it was sent as when the message is given away (send_batch.send_batch's ``packets``).
_Send = tuple["Session", int, "Queue", "Message", "int | None", "QueueCounters", int, "bytes | None"]


class SendBatcher:
    """Server-wide batching of SENDs into ``QueueManager.send_batch`` calls, one batch at a time."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        qm: QueueManager,
        writes: DurableWrites = "loop",
        requests: Callable[[], int] | None = None,
    ) -> None:
        if writes not in DURABLE_WRITES:
            raise ValueError(f"durable writes go on the 'loop', a 'thread' or 'auto', not {writes!r}")
        self.loop = loop
        self.qm = qm
        #: True: the loop takes the batches (``_release_now``); the batch thread is not started.
        self.on_loop = writes != "thread"
        #: ``"auto"``: each batch is written on the loop, or off it (``_writer``) when other requests
        #: came recently; ``requests()`` counts every request the server read (``ServerStats``).
        self.auto = writes == "auto"
        self._requests = requests or (lambda: 0)
        self._added = 0
        self._others = 0
        self._other_at = self._decided_at = -1.0
        self._writer: ThreadPoolExecutor | None = None
        self._writing_off_loop = False
        #: Batches written off the loop (``"auto"``).
        self.batches_off_loop = 0
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
        # Under _cond: how many senders the last round had, and how long the thread may wait for
        # that many (a share of the last write's duration, so waiting costs at most that share).
        self._target = 1
        self._delay = 0.0
        # Loop only: futures of batches not answered yet; a release is scheduled.
        self._unanswered: set[asyncio.Future[None]] = set()
        self._release_due = False
        # Loop only ("loop" and "auto"): the sessions the last batch answered that have not sent again,
        # when its answers went out and how long its write took.
        self._expected: set[Session] = set()
        self._answered_at = 0.0
        self._write_time = 0.0
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
        packet: bytes | None = None,
    ) -> asyncio.Future[None]:
        """Queue ``q.send(message, tx)``; ``session`` is answered for ``rid`` once it is done.

        ``packet``: None, or the packet ``message`` was decoded from, and then ``message`` is given
        away (``send_batch.send_batch``'s ``packets``).

        Call from the loop.  The caller counts the send in ``session.pending``; the batcher
        decrements it when it answers.  Returns the future of the batch the send joined (done once
        the batch is answered).
        """
        if self._closed:
            raise RuntimeError("the send batcher is stopped")
        if self._thread is None and not self.on_loop:
            self._thread = threading.Thread(target=self._work, name="pymsmq-send", daemon=True)
            self._thread.start()
        send = (session, rid, q, message, tx, counters, size, packet)
        if self.on_loop:  # the list is the loop's alone
            fut = self._join(send)
            self._expected.discard(session)
            self._added += 1
        else:
            with self._cond:
                fut = self._join(send)
                if len(self._gather) == self._target:
                    self._cond.notify()  # as many as the last round had: no need to wait for more
        # The batch is taken one loop turn later: every frame read in this turn joins it.
        self._schedule_release()
        return fut

    def _schedule_release(self) -> None:
        # ``_release_now`` at the next loop turn, unless it is already due.
        if not self._release_due:
            self._release_due = True
            self.loop.call_soon(self._release_now)

    def _take_gathered(self) -> tuple[list[_Send], asyncio.Future[None] | None]:
        # The batch gathered so far and its future; a new one starts.  (Under ``_cond`` when a
        # thread takes the batches.)
        batch, fut = self._gather, self._gather_fut
        self._gather = []
        self._gather_fut = None
        return batch, fut

    def _join(self, send: _Send) -> asyncio.Future[None]:
        # ``send`` joins the batch being gathered; the future of that batch.  (Under ``_cond`` when
        # a thread takes the batches.)
        fut = self._gather_fut
        if fut is None:
            fut = self._gather_fut = self.loop.create_future()
            self._unanswered.add(fut)
        self._gather.append(send)
        return fut

    def _release_now(self) -> None:
        self._release_due = False
        if self.on_loop:
            self._write_on_loop()
            return
        with self._cond:
            if not self._release and self._gather:  # one wake-up of the thread per batch
                self._release = True
                self._cond.notify()

    def _write_on_loop(self) -> None:
        # ``durable_writes="loop"``: the batch gathered so far, written and answered now -- unless
        # senders of the last batch are still to come back (cohorts, module docstring): then one
        # more loop turn, within the wait allowed.  ``"auto"``: the same, or written off the loop.
        if self._writing_off_loop:
            return  # the write in progress releases what gathered meanwhile when it ends
        if self.auto and self._other_requests_lately():
            self._write_off_loop()
            return
        if self._expected and not self._closed:
            waited = time.monotonic() - self._answered_at
            if waited < min(self._write_time * _WAIT_SHARE, _MAX_LOOP_WAIT):
                self._schedule_release()
                return
        batch, fut = self._take_gathered()
        if batch:
            started = time.monotonic()
            outcomes = self._write(batch)
            self._write_time = time.monotonic() - started
            self._done(batch, outcomes, fut)
            self._answered_at = time.monotonic()
            self._expected = {s[0] for s in batch}

    def _other_requests_lately(self) -> bool:
        # Requests other than the sends added here (express work, receives, ...) in the last _QUIET
        # seconds: they would wait for the disk if the loop wrote the batch.  Seen at decisions only:
        # those that came since the last decision are dated to it when it is long past (they may be
        # as old), to now otherwise.
        others = self._requests() - self._added
        now = time.monotonic()
        if others != self._others:
            self._others = others
            last = self._decided_at
            self._other_at = last if now - last >= _QUIET else now
        self._decided_at = now
        return now - self._other_at < _QUIET

    def _write_off_loop(self) -> None:
        # ``"auto"``: the batch is written by the writer thread while the loop goes on serving; the
        # next batch waits until it ends (batches are applied one after the other).
        batch, fut = self._take_gathered()
        self._expected = set()
        if not batch:
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="pymsmq-send")
        self._writing_off_loop = True
        written = self.loop.run_in_executor(self._writer, self._write, batch)
        written.add_done_callback(lambda w: self._written_off_loop(batch, w.result(), fut))

    def _written_off_loop(
        self, batch: list[_Send], outcomes: list[Any], fut: asyncio.Future[None] | None
    ) -> None:
        self._writing_off_loop = False
        self.batches_off_loop += 1
        self._done(batch, outcomes, fut)
        if self._gather:
            self._schedule_release()

    def _write(self, batch: list[_Send]) -> list[Any]:
        """``send_batch`` for ``batch``: per send, the answer's payload or the exception to answer."""
        try:
            errors = send_batch(self.qm, [(s[2], s[3], s[4]) for s in batch], [s[7] for s in batch])
            # The answer's payload (the bytes its SendResponse encodes to), built before the loop
            # answers (off the loop in "thread" mode).
            return [
                send_answer_body(s[3]) if err is None else err for s, err in zip(batch, errors, strict=True)
            ]
        except BaseException as exc:  # never leave a sender unanswered
            return [exc] * len(batch)

    def _take(self, just_wrote: bool) -> list[_Send] | None:
        """Under ``_cond``: wait for the next batch; None once stopped with nothing left."""
        cond = self._cond
        deadline: float | None = None
        while True:
            n = len(self._gather)
            if n and (n >= self._target or self._stop):
                return self._gather
            if n and (self._release or just_wrote):
                # Fewer sends than the last round had: the senders just answered are probably
                # about to send again; waiting a little for them keeps them in one commit instead
                # of splitting them into two cohorts that alternate (a commit each).
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self._delay
                if now >= deadline:
                    return self._gather
                cond.wait(deadline - now)
                continue
            if self._stop:
                return None
            just_wrote = False
            deadline = None
            cond.wait()

    def _work(self) -> None:
        cond = self._cond
        just_wrote = False
        while True:
            with cond:
                if self._take(just_wrote) is None:
                    return
                batch, fut = self._take_gathered()
                self._release = False
            started = time.monotonic()
            outcomes = self._write(batch)
            just_wrote = True
            with cond:
                # The senders of this round: those just written and those that came meanwhile.
                self._target = len(batch) + len(self._gather)
                self._delay = min((time.monotonic() - started) * _WAIT_SHARE, _MAX_WAIT)
            try:
                self.loop.call_soon_threadsafe(self._done, batch, outcomes, fut)
            except RuntimeError:  # the loop is closed: nobody waits for these any more
                return

    def _done(self, batch: list[_Send], outcomes: list[Any], fut: asyncio.Future[None] | None) -> None:
        self.batches += 1
        self.sends += len(batch)
        for (session, rid, _, message, _, counters, size, _), outcome in zip(batch, outcomes, strict=True):
            session.pending -= 1
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, MSMQError):
                    log.error("send batch failed", exc_info=outcome)
                session.fail(rid, outcome)
            else:
                counters.sent += 1
                counters.bytes_in += size
                # The session's last awaited answer goes out at once (``answer_fast``: one write,
                # behind anything already queued); answers with more to follow are queued and
                # leave in one write at the end of the loop turn.
                if session.pending or not session.answer_fast(rid, _SEND_OP, outcome):
                    session.answer(rid, hot.send_response(send_facts(message)))
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
        if self._writer is not None:
            self._writer.shutdown(wait=True)
