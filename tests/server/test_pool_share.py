"""One connection's share of the server's work pool (``pymsmq.server.workers.PoolShare``).

The work pool's queue is first come, first served: outside QA (2026-11-28), one client's flood of
requests that run off the loop queued every other client's commits behind all of them.  A
connection now has at most a quarter of the pool's threads at once; its other requests wait in
the connection, in order.
"""

from __future__ import annotations

import asyncio
import select
import socket
import struct
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)

from pymsmq import MSMQError
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.protocol import ClientConnection, ClientHello
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import Op
from pymsmq.protocol.frames import FrameType
from pymsmq.protocol.queue_props import attrs_to_props
from pymsmq.server import ServerConfig
from pymsmq.server.workers import PoolShare, WorkPool, pool_share

Q = ".\\private$\\share"
_HEAD = struct.Struct("<2sBBHHII")  # magic, version, type, op, flags, request id, length


def _hello(port: int, name: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    conn = ClientConnection()
    sock.sendall(conn.send(ClientHello(client_name=name)))
    while conn.server_hello is None:
        conn.receive_data(sock.recv(65536))
    return sock


def _set_label(rid: int, label: str) -> bytes:
    payload = pm.SetQueuePropertiesRequest(Q, attrs_to_props({"label": label})).encode()
    return _HEAD.pack(b"MQ", 1, FrameType.REQUEST, Op.SET_QUEUE_PROPERTIES, 0, rid, len(payload)) + payload


def test_one_connections_pipelined_work_does_not_queue_anothers_behind_all_of_it(tmp_path: Path) -> None:
    # Client A pipelines 200 property changes (each a store write on the work pool), then client
    # B one.  While the queue manager's lock is held, all of them are read and handed on; then B's
    # answer must come after at most a few of A's, not after nearly all of them.
    config = ServerConfig(port=0, work_threads=4)  # a share of one thread
    server = ThreadServer(tmp_path / "qm", config).start()
    try:
        with connect(server.url) as admin:
            admin.create_queue(Q)
        a, b = _hello(server.port, "flood"), _hello(server.port, "other")
        assert server.server is not None
        lock = server.server.qm._lock
        arrivals: list[str] = []
        with lock:  # (the pool's threads wait for it; the loop does not need it for these)
            a.sendall(b"".join(_set_label(rid, f"a{rid}") for rid in range(1, 201)))
            time.sleep(0.3)
            b.sendall(_set_label(1, "b"))
            time.sleep(0.3)
        buffers = {a: b"", b: b""}
        answered = {a: 0, b: 0}
        until = time.monotonic() + 30
        while (answered[a] < 200 or answered[b] < 1) and time.monotonic() < until:
            for sock in select.select([a, b], [], [], 1)[0]:
                buffers[sock] += sock.recv(1 << 20)
                while len(buffers[sock]) >= 16:
                    length = _HEAD.unpack_from(buffers[sock])[6]
                    if len(buffers[sock]) < 16 + length:
                        break
                    assert buffers[sock][3] == FrameType.RESPONSE
                    buffers[sock] = buffers[sock][16 + length :]
                    answered[sock] += 1
                    arrivals.append("a" if sock is a else "b")
        a.close()
        b.close()
    finally:
        server.stop()
    assert answered == {a: 200, b: 1}
    before_b = arrivals.index("b")
    assert before_b <= 20, f"B was answered after {before_b} of A's 200 requests"


def test_a_share_runs_at_most_its_limit_at_once_in_order() -> None:
    async def run() -> tuple[int, list[int], BaseException | None]:
        pool = WorkPool(asyncio.get_running_loop(), 8)
        share = PoolShare(pool, 2)
        lock = threading.Lock()
        state = {"now": 0, "most": 0}
        started: list[int] = []

        def job(i: int) -> int:
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
                started.append(i)
            time.sleep(0.01)
            with lock:
                state["now"] -= 1
            return i

        futures = [share.submit(lambda i=i: job(i)) for i in range(12)]
        assert [await f for f in futures] == list(range(12))
        # Calls still waiting in the share when the pool shuts down fail; they are not lost.
        block = threading.Event()
        running = [share.submit(block.wait) for _ in range(2)]
        waiting = share.submit(lambda: 1)
        pool.shutdown(wait=False)
        block.set()
        await asyncio.gather(*running)
        error: BaseException | None = None
        try:
            await waiting
        except MSMQError as exc:
            error = exc
        return state["most"], started, error

    most, started, error = asyncio.run(run())
    assert most == 2
    assert started[:2] == [0, 1] or started[:2] == [1, 0]
    assert sorted(started) == list(range(12)) and started[2:] == sorted(started[2:])
    assert isinstance(error, MSMQError) and error.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE


@pytest.mark.parametrize(("threads", "share"), [(64, 16), (4, 1), (1, 1), (7, 1), (8, 2)])
def test_the_share_is_a_quarter_of_the_pool(threads: int, share: int) -> None:
    assert pool_share(threads) == share


def test_requests_of_a_connection_that_closed_still_run_before_a_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Outside QA: a client that queued 1,000 requests and went away, then a stop: the requests
    # waiting in its share were never run, each an "internal error" in the log.
    server = ThreadServer(tmp_path / "qm", ServerConfig(port=0, work_threads=4)).start()
    try:
        with connect(server.url) as admin:
            admin.create_queue(Q)
        a = _hello(server.port, "gone")
        a.sendall(b"".join(_set_label(rid, f"a{rid}") for rid in range(1, 1001)))
        time.sleep(0.1)
        a.close()
    finally:
        server.stop()
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    server = ThreadServer(tmp_path / "qm").start()
    try:
        with connect(server.url) as admin:
            assert admin.queue(Q).label == "a1000"  # every one of them ran, in order
    finally:
        server.stop()


def test_a_stopping_pool_refuses_the_calls_not_started_and_lets_the_running_end() -> None:
    # Outside QA: past a stop's grace, the calls already handed to the pool all ran (a thousand
    # clients that pipelined work and went away held a stop 23 s and more).
    async def run() -> tuple[int, list[object]]:
        pool = WorkPool(asyncio.get_running_loop(), 1)
        block = threading.Event()
        running = pool.submit(block.wait)
        queued = [pool.submit(lambda: "ran") for _ in range(5)]
        await asyncio.sleep(0.1)
        gone = MSMQError("stopping", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
        dropped = pool.drop_queued(gone)
        block.set()
        await running
        pool.shutdown(wait=True)
        outcomes = await asyncio.gather(*queued, return_exceptions=True)
        return dropped, outcomes

    dropped, outcomes = asyncio.run(run())
    assert dropped == 5
    assert all(isinstance(o, MSMQError) for o in outcomes)
    refused = {o.hresult for o in outcomes if isinstance(o, MSMQError)}
    assert refused == {HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE}
