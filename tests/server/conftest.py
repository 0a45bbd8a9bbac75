"""The server tests' ``server`` fixture: a ``ThreadServer`` on a fresh store.

It serves on ``ThreadServer.default_loop``: in a module that imports ``each_event_loop`` (an autouse
fixture), on each event loop in turn.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadServer]:
    s = ThreadServer(tmp_path / "qm").start()
    yield s
    s.stop()
