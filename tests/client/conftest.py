"""The shared client suite's fixture: one queue manager API, embedded or remote (a real server on port 0)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _pymsmq_server import ThreadServer

from pymsmq import connect
from pymsmq.qm.queue_manager import QueueManager


@pytest.fixture(params=["embedded", "remote", "remote-uvloop"])
def qm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A fresh queue manager: ``QueueManager.open(dir)`` or ``connect(msmq://127.0.0.1:<port>)`` to a
    server on asyncio's event loop or on uvloop (the loop ``pymsmq serve`` runs on when installed)."""
    if request.param == "embedded":
        manager = QueueManager.open(tmp_path / "qm")
        yield manager
        manager.close()
        return
    if request.param == "remote-uvloop":
        pytest.importorskip("uvloop", reason="the server extra (uvloop) is not installed")
    server = ThreadServer(
        tmp_path / "qm", loop="uvloop" if request.param == "remote-uvloop" else "asyncio"
    ).start()
    client = connect(server.url)
    yield client
    client.close()
    server.stop()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadServer]:
    """A ``ThreadServer`` on a fresh store (on ``ThreadServer.default_loop``)."""
    s = ThreadServer(tmp_path / "qm").start()
    yield s
    s.stop()


@pytest.fixture
def qm_factory(qm: Any) -> Any:
    """Another connection to the same queue manager (the same object when embedded)."""
    if isinstance(qm, QueueManager):
        return lambda: qm
    return lambda: connect(qm.url)
