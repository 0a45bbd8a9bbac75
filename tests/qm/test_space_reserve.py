"""``SpaceReserve`` and how a store takes it: allocated bytes, given back, refused when no room."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pymsmq import MSMQError
from pymsmq.hresult import HResult
from pymsmq.qm.store.space_reserve import DEFAULT_DISK_RESERVE, SpaceReserve, disk_reserve_from_env
from pymsmq.qm.store.sqlite import SQLiteStore
from small_disk import need_small_disk, on_small_disk

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_acquire_allocates_the_blocks_and_release_gives_them_back(tmp_path: Path) -> None:
    r = SpaceReserve(str(tmp_path / "r"), 1 << 20)
    assert r.acquire() and r.held
    st = os.stat(tmp_path / "r")
    assert st.st_size == 1 << 20
    assert st.st_blocks * 512 >= 1 << 20  # allocated, not a sparse hole
    assert r.acquire()  # idempotent
    assert r.release() and not r.held
    assert os.stat(tmp_path / "r").st_size == 0
    assert not r.release()  # nothing held any more


def test_a_store_holds_its_reserve_and_zero_means_none(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db", disk_reserve=2 << 20) as s:
        assert os.path.getsize(tmp_path / "a.db.reserve") == 2 << 20
        assert not s.low_space
    with SQLiteStore(tmp_path / "b.db", disk_reserve=0) as s:
        assert not (tmp_path / "b.db.reserve").exists()
        assert not s.low_space


def test_the_reserve_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYMSMQ_DISK_RESERVE", raising=False)
    assert disk_reserve_from_env() == DEFAULT_DISK_RESERVE
    monkeypatch.setenv("PYMSMQ_DISK_RESERVE", "12345")
    assert disk_reserve_from_env() == 12345
    for bad in ("lots", "-1", "1.5"):
        monkeypatch.setenv("PYMSMQ_DISK_RESERVE", bad)
        with pytest.raises(ValueError, match="PYMSMQ_DISK_RESERVE"):
            disk_reserve_from_env()


def test_a_bad_reserve_setting_is_a_clear_error_that_opens_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYMSMQ_DISK_RESERVE", "lots")
    with pytest.raises(MSMQError) as e:
        SQLiteStore(tmp_path / "c.db")
    assert e.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    assert not (tmp_path / "c.db").exists()


_NO_ROOM = """
import os, sys
from pymsmq.qm.store.sqlite import SQLiteStore
d = sys.argv[1]
s = SQLiteStore(os.path.join(d, "s.db"), disk_reserve=64 << 20)  # more than the disk holds
print(s.low_space, os.path.getsize(os.path.join(d, "s.db.reserve")))
s.close()
"""


def test_a_store_on_a_disk_without_room_for_the_reserve_opens_refusing_sends(tmp_path: Path) -> None:
    need_small_disk()
    disk = tmp_path / "disk"
    r = subprocess.run(
        on_small_disk(disk, "8m", [sys.executable, "-c", _NO_ROOM, str(disk)]),
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=SRC),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "0"]  # the failed allocation left nothing taking space
    assert "no room for the" in r.stderr
