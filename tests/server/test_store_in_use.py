"""One queue manager per store: a second one on the same data directory is refused, not run beside it.

Two queue managers on one store would each keep their own in-memory queues: one would not see what
the other sends, both would hand out the same lookup ids, and a message one had received could still
be delivered by the other.  ``SQLiteStore`` therefore holds ``<db>.lock`` (``flock``) while open.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))

from _serve_process import SERVE, ServeProcess, env

from pymsmq import Message, MSMQError, QueueManager
from pymsmq.cli import main
from pymsmq.client import connect
from pymsmq.hresult import HResult

Q = r".\private$\q"


def _serve_until_it_stops(data: Path) -> subprocess.CompletedProcess[str]:
    """``pymsmq serve --data DATA`` run to its end (it is expected to refuse to start)."""
    return subprocess.run(
        [sys.executable, "-c", SERVE, "--data", str(data), "--port", "0"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )


def test_a_second_queue_manager_on_an_open_store_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    first = QueueManager.open(data)
    first.create_queue(Q).send(Message(body=b"kept", delivery=1))
    with pytest.raises(MSMQError) as e:
        QueueManager.open(data)
    assert e.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
    assert "in use by another queue manager" in str(e.value)
    first.close()
    with QueueManager.open(data) as again, again.queue(Q) as q:  # free once the owner closed it
        assert q.receive(0).body == b"kept"


def test_the_command_line_refuses_a_running_servers_store_and_names_its_process(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    srv = ServeProcess(data)
    try:
        remote = connect(srv.url)
        q = remote.create_queue(Q)
        q.send(Message(body=b"one", delivery=1))
        r = CliRunner().invoke(
            main,
            ["send", "--data", str(data), Q, "two", "--recoverable"],
            env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None},
        )
        assert r.exit_code == 1
        assert f"in use by another queue manager (process {srv.proc.pid})" in r.stderr
        assert "MQ_ERROR_MESSAGE_STORAGE_FAILED" in r.stderr
        # The server is unaffected, and nothing was written beside it.
        assert [m.body for m in q.receive_many(10)] == [b"one"]
        # A second server on the same directory does not start.
        second = _serve_until_it_stops(data)
        assert second.returncode == 1 and "Traceback" not in second.stderr
        assert (
            second.stderr.startswith("Error: the store ")
            and "in use by another queue manager" in second.stderr
        )
        assert second.stderr.rstrip().endswith("(MQ_ERROR_MESSAGE_STORAGE_FAILED 0xC00E002A)")
        remote.close()
    finally:
        srv.kill()


def test_a_killed_owner_leaves_no_stale_lock(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    srv = ServeProcess(data)
    try:
        remote = connect(srv.url)
        remote.create_queue(Q).send(Message(body=b"acked", delivery=1))
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(10)
    finally:
        srv.kill()
    with QueueManager.open(data) as qm, qm.queue(Q) as q:
        assert q.receive(0).body == b"acked"


def test_a_lock_file_that_cannot_be_opened_is_a_storage_error(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    (data / "pymsmq.db.lock").mkdir(parents=True)  # a directory where the lock file goes
    with pytest.raises(MSMQError) as e:
        QueueManager.open(data)
    assert e.value.hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
    assert "lock file" in str(e.value)
    r = _serve_until_it_stops(data)
    assert r.returncode == 1 and "lock file" in r.stderr and "cannot listen" not in r.stderr
