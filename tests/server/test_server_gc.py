"""``server_gc``: the server process's cyclic-GC thresholds while ``run`` serves, restored afterwards."""

from __future__ import annotations

import gc
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

from pymsmq.server.app import SERVER_GC_THRESHOLDS, server_gc


def test_thresholds_inside_and_restored() -> None:
    before = gc.get_threshold()
    with server_gc():
        assert gc.get_threshold() == SERVER_GC_THRESHOLDS
        assert gc.isenabled()
    assert gc.get_threshold() == before


def test_restored_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), server_gc():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before


def test_thresholds_still_collect_cycles() -> None:
    # Cyclic garbage is still freed: the thresholds only make young collections rarer.
    assert SERVER_GC_THRESHOLDS[0] >= 700
    with server_gc():

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        del a, b
        assert gc.collect() >= 2


def test_the_reads_of_a_connection_that_died_while_they_waited_leave_no_cyclic_garbage(
    tmp_path: Path,
) -> None:
    # QA 2026-11-27: each parked read of a client that died became a reference cycle (closures
    # that referred to each other, a wait's bound method kept on itself, a kept error's traceback),
    # freed only by a full collection, which the server's thresholds make rare: a real server grew
    # 41 -> 97 MB over 17,000 such reads.  Now they go by reference counting alone.
    from pymsmq import MQ_SINGLE_MESSAGE, Message, MSMQError
    from pymsmq.client import connect
    from pymsmq.model.ids import ObjectId

    server = ThreadServer(tmp_path / "qm").start()
    try:
        owner = connect(server.url)
        owner.create_queue(".\\private$\\plain")
        owner.create_queue(".\\private$\\xact", transactional=True)
        gc.collect()
        gc.disable()
        try:
            for _ in range(3):
                client = connect(server.url)
                plain, xact = client.queue(".\\private$\\plain"), client.queue(".\\private$\\xact")
                for i in range(60):
                    plain.receive_async(timeout=600)  # parked on the loop
                    xact.receive_async(timeout=600, transaction=MQ_SINGLE_MESSAGE)  # tried on the pool
                    plain.receive_by_correlation_id_async(ObjectId(uuid.uuid4(), i), timeout=600)
                    plain.peek_async(timeout=600)
                assert client.ping(b"parked") == b"parked"
                client.close()
            assert server.server is not None
            deadline = time.monotonic() + 10
            while len(server.server.sessions) > 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            owner.queue(".\\private$\\plain").send(Message(body=b"after"))
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
        finally:
            gc.set_debug(0)
            gc.enable()
        # What the reads left as garbage (asyncio's own transports of the closed sockets aside):
        # before, every read's wait, closures, error and frames, and the dead sessions.
        from pymsmq.server.session import Session
        from pymsmq.server.waits import ArrivalWait

        left = [o for o in gc.garbage if isinstance(o, (ArrivalWait, Session, MSMQError))]
        left += [o for o in gc.garbage if type(o).__name__ == "_WorkPoolRead"]
        left += [o for o in gc.garbage if "try_or_park" in getattr(o, "__qualname__", "")]
        gc.garbage.clear()
        assert not left, left[:10]
        assert owner.queue(".\\private$\\plain").receive(timeout=5).body == b"after"
    finally:
        server.stop()


def test_an_idle_work_pool_thread_keeps_nothing_of_its_last_call() -> None:
    # QA 2026-11-27: each idle thread held its last job, future and result (23 threads held 1 MB
    # answers, 22.5 MB, after every client had left).
    import asyncio
    import weakref

    from pymsmq.server.workers import WorkPool

    class Answer:
        pass

    async def main() -> bool:
        pool = WorkPool(asyncio.get_running_loop(), 2)
        answer = await pool.submit(Answer)
        ref = weakref.ref(answer)
        del answer
        await asyncio.sleep(0.05)  # the thread is idle, waiting for its next call
        kept = ref() is not None
        pool.shutdown(wait=False)
        return kept

    assert asyncio.run(main()) is False
