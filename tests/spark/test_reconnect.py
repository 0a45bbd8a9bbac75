"""The read side of the ``msmq`` data source rides out a server restart (``pymsmq.spark.reconnect``).

Real ``pymsmq serve`` processes killed with SIGKILL and started again on the same data and port; no
SparkSession here (the streaming query across a restart is in test_msmq_source.py).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

import pymsmq
from pymsmq import MQMSG_DELIVERY_RECOVERABLE, MSMQError
from pymsmq.client import connect
from pymsmq.client.range_read import read_range
from pymsmq.hresult import HResult
from pymsmq.protocol.message_batch import encode_batch
from pymsmq.spark.options import SourceOptions
from pymsmq.spark.reader import read_partition
from pymsmq.spark.reconnect import with_reconnect
from pymsmq.spark.stream import MsmqStreamReader
from pymsmq.spark.writer import Staged, commit_staged

Q = ".\\private$\\restarts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _opts(url: str, **extra: str) -> SourceOptions:
    return SourceOptions.parse({"url": url, "queue": Q, **extra})


def _fill(url: str, n: int, transactional: bool = False) -> None:
    with connect(url) as qm:
        q = qm.create_queue(Q, transactional=transactional)
        batch = [
            pymsmq.Message(body=b"m", label=str(i), delivery=MQMSG_DELIVERY_RECOVERABLE) for i in range(n)
        ]
        if transactional:
            with qm.begin_transaction() as tx:
                q.send_many(batch, tx)
        else:
            q.send_many(batch)


def _start_later(server: Any, delay: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(delay), server.start()))
    thread.start()
    return thread


def test_the_option_parses() -> None:
    assert SourceOptions.parse({"url": "u", "queue": "q"}).reconnect_timeout == 60.0
    assert SourceOptions.parse({"url": "u", "queue": "q", "reconnectTimeout": "0"}).reconnect_timeout == 0
    with pytest.raises(MSMQError, match="reconnectTimeout") as info:
        SourceOptions.parse({"url": "u", "queue": "q", "reconnectTimeout": "-1"})
    assert info.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER


def test_an_unreachable_server_is_tried_again_for_reconnect_timeout_then_the_error_says_so() -> None:
    url = f"msmq://127.0.0.1:{_free_port()}"
    began = time.monotonic()
    with pytest.raises(MSMQError, match=r"tried again for \d+ s: option reconnectTimeout 0\.4 s") as info:
        with_reconnect(_opts(url, reconnectTimeout="0.4"), lambda qm, q: q.message_count)
    assert time.monotonic() - began >= 0.4
    assert info.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    with pytest.raises(MSMQError) as info:
        with_reconnect(_opts(url, reconnectTimeout="0"), lambda qm, q: q.message_count)
    assert "reconnectTimeout" not in str(info.value)  # 0: never tried again


def test_other_errors_are_not_tried_again(own_msmq_server: Any) -> None:
    calls = []

    def count(qm: Any, q: Any) -> int:
        calls.append(1)
        raise MSMQError("refused", HResult.MQ_ERROR_ACCESS_DENIED)

    _fill(own_msmq_server.url, 0)
    with pytest.raises(MSMQError) as info:
        with_reconnect(_opts(own_msmq_server.url), count)
    assert info.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED and calls == [1]
    with pytest.raises(MSMQError) as info:  # (opening the queue fails: not retried either)
        with_reconnect(SourceOptions.parse({"url": own_msmq_server.url, "queue": Q + "x"}), count)
    assert info.value.hresult == HResult.MQ_ERROR_QUEUE_NOT_FOUND and calls == [1]


@pytest.mark.parametrize("stream", [False, True])
def test_a_partition_read_goes_on_after_the_last_message_it_gave(own_msmq_server: Any, stream: bool) -> None:
    server = own_msmq_server
    _fill(server.url, 300)
    reads = read_partition(_opts(server.url, chunk="40"), 1, 301, 10.0 if stream else None)
    first = next(reads)
    seen = list(first.column("label").to_pylist())
    assert 0 < len(seen) < 300
    server.kill()  # between two batches: the next request finds the connection gone
    restart = _start_later(server, 0.5)
    for batch in reads:
        seen += batch.column("label").to_pylist()
    restart.join()
    assert seen == [str(i) for i in range(300)]  # each once, in order


def test_the_stream_reader_waits_out_a_restart_and_commits_after_it(own_msmq_server: Any) -> None:
    server = own_msmq_server
    _fill(server.url, 20, transactional=True)
    reader = MsmqStreamReader(_opts(server.url, mode="receive"))
    start = reader.initialOffset()
    server.kill()
    restart = _start_later(server, 0.5)
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    restart.join()
    # (The high water after a crash is past the block of ids the killed server had reserved.)
    assert end["lookup_id"] > 20 and end["from"] == 1
    server.kill()
    restart = _start_later(server, 0.5)
    reader.commit(end)  # removes the batch's messages once the server is back
    restart.join()
    with connect(server.url) as qm:
        assert qm.queue(Q).message_count == 0


@pytest.mark.parametrize("transactional", [True, False])
def test_a_streaming_write_commit_waits_out_a_restart_and_is_not_sent_twice(
    own_msmq_server: Any, transactional: bool
) -> None:
    server = own_msmq_server
    _fill(server.url, 0, transactional=transactional)
    messages = [
        pymsmq.Message(body=b"w", label=f"w{i}", delivery=MQMSG_DELIVERY_RECOVERABLE) for i in range(5)
    ]
    staged = [Staged(0, 5, encode_batch(messages)), Staged(1, 0, encode_batch([]))]
    opts = _opts(server.url, writerId="restarts")
    server.kill()
    restart = _start_later(server, 0.5)
    assert commit_staged(opts, list(staged), 7) == 5  # sent once the server is back
    restart.join()
    assert commit_staged(opts, list(staged), 7) == 0  # a replay: its marker says it was sent
    with connect(server.url) as qm:
        labels = [m.label for m in read_range(qm.queue(Q)).messages()]
    assert labels == [f"w{i}" for i in range(5)]
    # A batch write is not tried again (a lost commit may have happened): it fails at once.
    server.kill()
    with pytest.raises(MSMQError) as info:
        commit_staged(opts, list(staged), None)
    assert info.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    assert "reconnectTimeout" not in str(info.value)


def test_each_outage_of_a_partition_read_has_its_own_timeout(own_msmq_server: Any) -> None:
    # A task that rode out one restart failed at once at a second one that came more than
    # reconnectTimeout later, "tried again for N s" without trying (outside QA).
    server = own_msmq_server
    _fill(server.url, 300)
    reads = read_partition(_opts(server.url, chunk="20", reconnectTimeout="2"), 1, 301, None)
    server.kill()  # the first request finds it down: the first outage
    restart = _start_later(server, 0.5)
    seen = list(next(reads).column("label").to_pylist())
    restart.join()
    time.sleep(2.5)  # past the first outage's deadline
    server.kill()
    restart = _start_later(server, 0.5)
    for batch in reads:
        seen += batch.column("label").to_pylist()
    restart.join()
    assert seen == [str(i) for i in range(300)]
