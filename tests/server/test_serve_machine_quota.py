"""``pymsmq serve --machine-quota KB``: the storage limit of the whole queue manager, kept in the store."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _serve_process import ServeProcess

from pymsmq import Message, MSMQError
from pymsmq.client import connect
from pymsmq.hresult import HResult

Q = r".\private$\q"


def _send(srv: ServeProcess, size: int) -> None:
    client = connect(srv.url)
    try:
        q = client.queue(Q) if client.queue_exists(Q) else client.create_queue(Q)
        q.send(Message(body=b"x" * size, delivery=1))
    finally:
        client.close()


def test_the_limit_refuses_sends_across_restarts_until_made_infinite(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    starts = [
        (("--machine-quota", "1"), True),  # 1 KB
        ((), True),  # kept in the store
        (("--machine-quota", "infinite"), False),  # removed
    ]
    for args, refused in starts:
        srv = ServeProcess(data, *args)
        try:
            client = connect(srv.url)
            assert client.machine_quota == (1 if refused else None)  # was always None remote
            client.close()
            if refused:
                with pytest.raises(MSMQError) as e:
                    _send(srv, 2000)
                assert e.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
                _send(srv, 10)  # a small message still fits
            else:
                _send(srv, 2000)
        finally:
            assert srv.terminate() == 0


def test_a_quota_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not a number of kilobytes"):
        ServeProcess(tmp_path / "qm", "--machine-quota", "lots")
