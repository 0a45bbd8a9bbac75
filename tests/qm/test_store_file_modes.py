"""What a store writes is its owner's alone: directories 700, files 600, whatever the umask (the
store holds every identity's message bodies; under umask 022 they were 755 and 644: outside QA)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from pymsmq import MQMSG_DELIVERY_RECOVERABLE, Message, QueueManager
from pymsmq.qm.store.backup import backup, restore
from pymsmq.qm.store.salvage import salvage


@pytest.fixture
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _modes(root: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        out[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return out


def _fill(data: Path) -> None:
    with QueueManager.open(data) as qm:
        q = qm.create_queue(r".\private$\secret")
        q.send(Message(body=b"small secret", delivery=MQMSG_DELIVERY_RECOVERABLE))
        q.send(Message(body=b"big secret" * 10_000, delivery=MQMSG_DELIVERY_RECOVERABLE))  # in a file
        # (open: its -wal and -shm are there)
        modes = _modes(data)
        assert any(name.endswith("-wal") for name in modes) and any(".pkt" in name for name in modes)
        for name, mode in modes.items():
            assert mode == (0o700 if (data / name).is_dir() else 0o600), (name, oct(mode))


def test_a_new_store_and_its_backups_are_the_owners_alone(tmp_path: Path, usual_umask: None) -> None:
    data = tmp_path / "qm"
    _fill(data)
    copy = tmp_path / "backup"
    backup(data, copy)
    for name, mode in _modes(copy).items():
        assert mode == (0o700 if (copy / name).is_dir() else 0o600), (name, oct(mode))
    again = tmp_path / "restored"
    restore(copy, again)
    for name, mode in _modes(again).items():
        assert mode == (0o700 if (again / name).is_dir() else 0o600), (name, oct(mode))
    with QueueManager.open(again) as qm:
        assert qm.queue(r".\private$\secret").message_count == 2
    saved = tmp_path / "salvaged"
    salvage(data, saved)
    for name, mode in _modes(saved).items():
        assert mode == (0o700 if (saved / name).is_dir() else 0o600), (name, oct(mode))
