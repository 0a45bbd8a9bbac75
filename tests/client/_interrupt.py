"""Ctrl-C in a thread that waits for an answer, for the tests of interrupted calls."""

from __future__ import annotations

import select
from typing import Any

import pytest


class InterruptedSocket:
    """A transport's socket whose next ``recv_into`` raises KeyboardInterrupt; the rest delegated."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._armed = True

    def recv_into(self, view: Any) -> int:
        if self._armed:
            self._armed = False
            raise KeyboardInterrupt
        return int(self._sock.recv_into(view))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def interrupt_next_read(t: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next read of transport ``t`` is interrupted, as Ctrl-C while a call waits: where the
    main thread waits for bytes (``_wait_readable``: it reads only once some are there, so an
    interrupt at the read itself came only when the watchdog's PING was answered, 10 s later), or
    at the read in another thread.  The Ctrl-C comes 0.2 s into the wait (or when bytes come, if
    sooner): the request has reached the server, whose other clients go on meanwhile."""
    sock = InterruptedSocket(t._sock)
    wait_readable = t._wait_readable

    def interrupted_wait() -> None:
        if sock._armed:
            sock._armed = False
            select.select([t._sock._sock], [], [], 0.2)
            raise KeyboardInterrupt
        wait_readable()

    monkeypatch.setattr(t, "_sock", sock)
    monkeypatch.setattr(t, "_wait_readable", interrupted_wait)
