"""A real pymsmq server on 127.0.0.1 (port 0) in a background thread with its own event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pymsmq.qm.queue_manager import QueueManager
from pymsmq.server import Server, ServerConfig
from pymsmq.server.event_loop import EventLoop, loop_factory


class ThreadServer:
    """Start with ``ThreadServer(data_dir, config).start()``; ``url``; ``stop()``.

    ``loop``: the event loop it serves on; by default ``ThreadServer.default_loop``, asyncio's
    (``pymsmq serve`` processes run on uvloop when it is installed, so the suite covers both; a module
    that imports ``each_event_loop`` runs every test on both), "uvloop" for uvloop (``UvloopMissing``
    where it is not installed).
    """

    default_loop: EventLoop = "asyncio"

    def __init__(self, data: Any, config: ServerConfig | None = None, loop: EventLoop | None = None) -> None:
        self.data = data
        self.config = config or ServerConfig(port=0)
        self.loop = (loop_factory(loop or self.default_loop) or asyncio.new_event_loop)()
        self.server: Server | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            qm = QueueManager.open(self.data)
            self.server = Server(qm, self.config)
            self.loop.run_until_complete(self.server.start())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            self.loop.run_forever()
        finally:
            # (its selector and wake-up pipe: left open, a test worker ran out of the descriptors
            # select() takes, in the thousands of tests it runs)
            self.loop.close()

    def start(self) -> ThreadServer:
        self.thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    @property
    def url(self) -> str:
        return f"msmq://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.server is None or not self.thread.is_alive():
            return
        fut = asyncio.run_coroutine_threadsafe(self.server.shutdown(), self.loop)
        fut.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(autouse=True, params=["asyncio", "uvloop"])
def each_event_loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Imported into a test module: each of its tests runs with its ``ThreadServer``s on asyncio's
    event loop and again on uvloop (the loop ``pymsmq serve`` runs on when it is installed)."""
    if request.param == "uvloop":
        pytest.importorskip("uvloop", reason="the server extra (uvloop) is not installed")
    monkeypatch.setattr(ThreadServer, "default_loop", request.param)
    yield request.param
