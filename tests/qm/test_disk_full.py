"""A full disk: the store releases its reserve, receives drain every queue, sends come back.

Real full filesystem: a 24 MB tmpfs mounted in a user namespace (tests/small_disk.py); the queue
manager runs in a child process on it (tests/qm/_disk_full_child.py) and reports what it saw.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pymsmq.hresult import HResult
from small_disk import need_small_disk, on_small_disk

CHILD = str(Path(__file__).with_name("_disk_full_child.py"))
SRC = str(Path(__file__).resolve().parents[2] / "src")
RESERVE = 4 * 1024 * 1024
PLAIN, JOURNALED, TX = r".\private$\plain", r".\private$\journaled", r".\private$\tx"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    need_small_disk()
    disk = tmp_path_factory.mktemp("disk")
    env = dict(os.environ, PYTHONPATH=SRC)
    r = subprocess.run(
        on_small_disk(disk, "24m", [sys.executable, CHILD, str(disk / "data"), str(RESERVE)]),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    result: dict[str, object] = json.loads(r.stdout)
    return result


def test_the_send_that_fills_the_disk_is_refused_with_storage_failed(report: dict[str, object]) -> None:
    hresult, text = report["refusal"]  # type: ignore[misc]
    assert hresult == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
    assert "is full" in text
    sent = report["sent"]
    assert isinstance(sent, dict)
    assert sum(len(v) for v in sent.values()) > 300  # ~20 MB of 20 KB messages went in first
    assert report["disk_full_after_fill"] is True
    assert report["reserve_after_fill"] == 0  # released to let the drain commit
    assert report["send_while_full"] == HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED
    assert report["express_while_full"] == "express"  # memory only: not refused


def test_every_stored_message_is_received_in_order_with_its_body(report: dict[str, object]) -> None:
    assert report["receive_errors"] == []
    assert report["received"] == report["sent"]  # plain, journaled and transactional queues


def test_sends_are_accepted_again_once_the_drain_gave_the_space_back(report: dict[str, object]) -> None:
    assert report["send_accepted_after_drain"] is not None
    assert report["disk_full_after_drain"] is False
    assert report["reserve_after_drain"] == RESERVE  # held again, for the next time
    warnings = report["warnings"]
    assert isinstance(warnings, list)
    assert any("released the" in w and "reserve" in w for w in warnings)
    assert any("has room again" in w for w in warnings)


def test_a_restart_finds_what_was_committed_and_nothing_received(report: dict[str, object]) -> None:
    assert report["left_after_restart"] == {PLAIN: ["after"], JOURNALED: [], TX: []}


def test_journal_copies_on_a_full_disk_ride_with_the_delete_of_their_message(
    report: dict[str, object],
) -> None:
    # A journal copy is written with the delete of the message it copies (one write, lifecycle.Effects):
    # that write adds no message, so a full disk takes it, and every received message of the
    # journaling queue has its copy, in memory and after the restart.  (Written after the delete,
    # each copy was a write that added a message: a full disk refused and dropped them.)
    received = report["received"]
    assert isinstance(received, dict)
    copies = report["journal_after_restart"]
    assert isinstance(copies, list)
    assert report["journal_while_open"] == len(copies)  # memory held what the store held
    assert sorted(copies) == sorted(received[JOURNALED])
    warnings = report["warnings"]
    assert isinstance(warnings, list)
    assert not [w for w in warnings if "not stored" in w and "journal copies" in w]
