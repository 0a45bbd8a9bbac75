"""``pymsmq serve`` on a disk that fills: clients are refused sends, drain every message, send again.

The server runs on a 24 MB tmpfs mounted in a user namespace (tests/small_disk.py); the network is
shared, so the test is its client on 127.0.0.1.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _serve_process import ServeProcess, env

from pymsmq import Message, MSMQError
from pymsmq.client import connect
from pymsmq.hresult import HResult
from small_disk import need_small_disk, on_small_disk

Q = r".\private$\fills"
CLI = "from pymsmq.cli import main; main()"


def _served_on_a_small_disk(tmp_path: Path) -> ServeProcess:
    # ``pymsmq serve`` on a 24 MB tmpfs, keeping a 4 MiB reserve.
    need_small_disk()
    disk = tmp_path / "disk"
    return ServeProcess(
        disk / "data",
        wrap=lambda argv: on_small_disk(disk, "24m", argv),
        extra_env={"PYMSMQ_DISK_RESERVE": str(4 * 1024 * 1024)},
    )


@pytest.mark.parametrize("repeat", [5000, 25000])  # 20 KB packets in the database, 100 KB in files
def test_a_full_disk_refuses_sends_and_lets_clients_drain_it(tmp_path: Path, repeat: int) -> None:
    # (Outside QA: a disk filled by packets over 64 KiB, written to files of their own, was not
    # seen as full: raw ENOSPC errors, no warning, disk_full false, the reserve still held.)
    srv = _served_on_a_small_disk(tmp_path)
    try:
        client = connect(srv.url)
        q = client.create_queue(Q)
        sent = 0
        while True:
            try:
                q.send(Message(body=sent.to_bytes(4, "big") * repeat, delivery=1))
            except MSMQError as e:
                assert e.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
                assert "is full" in str(e)
                break
            sent += 1
            assert sent < 5000, "a 24 MB disk took 100 MB of messages"
        assert sent > 6_000_000 // (4 * repeat)  # at least 6 MB of messages
        other = connect(srv.url)  # another client is refused too, and its connection stays up
        with pytest.raises(MSMQError) as refused:
            other.queue(Q).send(Message(body=b"x", delivery=1))
        assert refused.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
        assert other.disk_full
        shown = subprocess.run(
            [sys.executable, "-c", CLI, "stats", "--url", srv.url],
            capture_output=True,
            text=True,
            env=env(),
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        assert "the disk is full: recoverable sends are refused" in shown.stdout
        for k in range(sent):
            m = q.receive(timeout=0)
            assert m.body == k.to_bytes(4, "big") * repeat
        for _ in range(50):
            try:
                other.queue(Q).send(Message(body=b"after", delivery=1))
                break
            except MSMQError:
                time.sleep(0.1)
        assert q.receive(timeout=1).body == b"after"
        assert not other.disk_full
        client.close()
        other.close()
    finally:
        code = srv.terminate()
    err = srv.proc.stderr.read() if srv.proc.stderr else ""
    assert code == 0, err
    assert "released the" in err and "has room again" in err


def test_a_full_disk_refuses_a_send_to_several_queues_whole(tmp_path: Path) -> None:
    # The copies of a recoverable message sent to a multiple-element name go in one store write:
    # a full disk refuses all of them (no queue gets one), and once there is room all arrive.
    srv = _served_on_a_small_disk(tmp_path)
    try:
        client = connect(srv.url)
        a = client.create_queue(Q)
        b = client.create_queue(r".\private$\other")
        both = client.queue(f"{a.format_name},{b.format_name}", access=2)
        sent = 0
        while True:
            try:
                a.send(Message(body=b"f" * 100_000, delivery=1))
            except MSMQError as e:
                assert e.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
                break
            sent += 1
            assert sent < 500, "a 24 MB disk took 50 MB of messages"
        with pytest.raises(MSMQError) as refused:
            both.send(Message(body=b"g" * 100_000, delivery=1))
        assert refused.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
        assert (a.message_count, b.message_count) == (sent, 0)
        for _ in range(sent):
            a.receive(timeout=0)
        for _ in range(50):
            try:
                both.send(Message(body=b"room", delivery=1))
                break
            except MSMQError:
                time.sleep(0.1)
        assert [a.receive(timeout=1).body, b.receive(timeout=1).body] == [b"room", b"room"]
        client.close()
    finally:
        code = srv.terminate()
    assert code == 0
