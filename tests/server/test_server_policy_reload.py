"""The ``--auth`` policy file is read again when it changes (``pymsmq.server.policy_file``): tokens
added, rotated and revoked, rights changed, without a restart; a bad file is not used."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer
from _serve_process import ServeProcess

from pymsmq import Message, MSMQError, connect
from pymsmq.hresult import HResult
from pymsmq.server import PolicyFile, ServerConfig

ORDERS = ".\\private$\\orders"


def _policy(tokens: dict[str, str], permissions: dict[str, Any] | None = None) -> str:
    return json.dumps({"owner": "admin", "tokens": tokens, "permissions": permissions or {}})


def _write(path: Path, text: str) -> None:
    # As an editor that writes a new file and renames it over the old one.
    path.with_suffix(".new").write_text(text)
    os.chmod(path.with_suffix(".new"), 0o600)
    os.replace(path.with_suffix(".new"), path)


def _eventually(check: Callable[[], bool], seconds: float = 10) -> None:
    # Not faster: a bad token every 50 ms is 20 within the server's first look at the file, and
    # the bad-token throttle (20 a minute) would then refuse the address whatever its token.
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.25)


def _refused(url: str, token: str) -> bool:
    try:
        connect(url, token=token).close()
    except MSMQError as exc:
        return exc.hresult == HResult.MQ_ERROR_ACCESS_DENIED
    return False


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.json"
    _write(path, _policy({"admin-t": "admin", "old-t": "reader"}, {"reader": {"private$\\orders": "read"}}))
    return path


@pytest.fixture
def server(tmp_path: Path, policy_path: Path) -> Iterator[ThreadServer]:
    source = PolicyFile(str(policy_path))
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, policy=source.load(), policy_file=source)).start()
    with connect(s.url, token="admin-t") as admin:
        admin.create_queue(ORDERS).send(Message(body=b"one"))
    yield s
    s.stop()


def test_a_token_rotated_in_the_file_works_and_the_revoked_ones_connections_are_closed(
    server: ThreadServer, policy_path: Path
) -> None:
    old = connect(server.url, token="old-t")
    admin = connect(server.url, token="admin-t")
    assert _refused(server.url, "new-t")
    _write(
        policy_path,
        _policy({"admin-t": "admin", "new-t": "reader"}, {"reader": {"private$\\orders": "read"}}),
    )
    _eventually(lambda: not _refused(server.url, "new-t"))
    assert _refused(server.url, "old-t")
    with pytest.raises(MSMQError) as e:  # closed by the server: GOODBYE MQ_ERROR_ACCESS_DENIED
        old.queue(ORDERS).peek(timeout=0)
    assert e.value.hresult in (HResult.MQ_ERROR_ACCESS_DENIED, HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
    assert "revoked" in str(e.value)
    assert admin.ping(b"still here") == b"still here"  # its token stayed
    with connect(server.url, token="new-t") as new:
        assert new.queue(ORDERS).peek(timeout=0).body == b"one"


def test_changed_rights_apply_to_queues_opened_after_the_change(
    server: ThreadServer, policy_path: Path
) -> None:
    reader = connect(server.url, token="old-t")
    held = reader.queue(ORDERS)  # opened with the right to receive
    _write(
        policy_path, _policy({"admin-t": "admin", "old-t": "reader"}, {"reader": {"private$\\other": "read"}})
    )

    def refused_now() -> bool:
        try:
            reader.queue(ORDERS)
        except MSMQError as exc:
            return exc.hresult == HResult.MQ_ERROR_ACCESS_DENIED
        return False

    _eventually(refused_now)
    # The handle keeps the access it was opened with, as MSMQ checks a queue's security when it is
    # opened ([MS-MQDMPR] 3.1.7.1.5).
    assert held.peek(timeout=0).body == b"one"


def test_a_bad_or_missing_file_is_logged_and_the_policy_in_force_stays(
    server: ThreadServer, policy_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="pymsmq.server"):
        _write(policy_path, '{"owner": "admin", "tokens": {"x": ')
        _eventually(lambda: "is not used" in caplog.text)
        assert not _refused(server.url, "old-t")
        policy_path.unlink()
        _eventually(lambda: f"cannot read {policy_path}" in caplog.text)
        assert not _refused(server.url, "old-t")
    assert caplog.text.count("is not used") == 1  # once per change, not once a second
    _write(policy_path, _policy({"admin-t": "admin"}))
    _eventually(lambda: _refused(server.url, "old-t"))


def test_a_policy_without_tokens_is_refused_while_listening_beyond_loopback(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    _write(path, _policy({"admin-t": "admin"}))
    source = PolicyFile(str(path))
    s = ThreadServer(
        tmp_path / "qm", ServerConfig(host="0.0.0.0", port=0, policy=source.load(), policy_file=source)
    ).start()
    try:
        assert s.server is not None
        assert s.server.use_policy(PolicyFile(str(path)).load())
        _write(path, json.dumps({"owner": "admin"}))
        assert not s.server.use_policy(PolicyFile(str(path)).load())
        time.sleep(1.5)  # the server's own look at the file
        assert _refused(s.url, "")
        assert not _refused(s.url, "admin-t")
    finally:
        s.stop()


def test_pymsmq_serve_reads_its_auth_file_again(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    _write(path, _policy({"admin-t": "admin"}))
    srv = ServeProcess(tmp_path / "qm", "--auth", str(path))
    try:
        assert _refused(srv.url, "later-t")
        _write(path, _policy({"admin-t": "admin", "later-t": "admin"}))
        _eventually(lambda: not _refused(srv.url, "later-t"))
    finally:
        assert srv.terminate() == 0


def test_a_reload_to_a_policy_without_tokens_is_refused_on_loopback_too(
    server: ThreadServer, policy_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # QA: emptying the file to revoke every token made every local client the owner.
    with caplog.at_level(logging.ERROR, logger="pymsmq.server"):
        _write(policy_path, json.dumps({"owner": "admin"}))
        _eventually(lambda: "would let every client in as the owner" in caplog.text)
    assert _refused(server.url, "")
    assert not _refused(server.url, "old-t")


def test_a_chmod_that_lets_others_read_the_file_is_warned_about(
    server: ThreadServer, policy_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="pymsmq.server"):
        os.chmod(policy_path, 0o644)
        _eventually(lambda: "may be read by other users" in caplog.text)
