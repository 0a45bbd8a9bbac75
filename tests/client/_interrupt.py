"""Ctrl-C in a thread that waits for an answer, for the tests of interrupted calls."""

from __future__ import annotations

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
    """The next read of transport ``t`` is interrupted, as Ctrl-C while a call waits."""
    monkeypatch.setattr(t, "_sock", InterruptedSocket(t._sock))
