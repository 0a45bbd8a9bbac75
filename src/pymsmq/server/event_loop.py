"""Which event loop ``pymsmq serve`` runs on: uvloop when installed (``pip install 'pymsmq[server]'``),
else asyncio's own.

uvloop cuts the server's CPU per request: interleaved runs of 2026-11-26 (one client, express send +
receive, one request in flight, the same code) took 230-270 us of server CPU per message on uvloop
against 317-358 us on asyncio's loop, and made 1.0-1.3x the messages per second.  The protocol and
its behaviour are the same on both; the test suite runs servers on both (``pymsmq serve`` processes
on uvloop, most in-process servers on asyncio's loop; the shared client suite and the tests of the
server's limits, timeouts, security, TLS, waiting receives and malformed frames on each).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from importlib import metadata
from typing import Final, Literal, get_args

__all__ = ["EVENT_LOOPS", "EventLoop", "UvloopMissing", "describe", "loop_factory"]

#: ``"auto"``: uvloop when it can be imported, else asyncio's loop; ``"uvloop"``: uvloop or an error;
#: ``"asyncio"``: asyncio's loop even when uvloop is installed.
EventLoop = Literal["auto", "uvloop", "asyncio"]
#: The values of ``EventLoop`` (what the configuration and the command line accept).
EVENT_LOOPS: Final[tuple[EventLoop, ...]] = get_args(EventLoop)


class UvloopMissing(ImportError):
    """``"uvloop"`` was asked for and uvloop cannot be imported."""


def loop_factory(choice: EventLoop) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The ``asyncio.Runner`` loop factory for ``choice``: None means asyncio's default loop.

    Raises ``UvloopMissing`` for ``"uvloop"`` when uvloop is not installed, and ``ValueError`` for a
    choice that is not one of ``EVENT_LOOPS``.
    """
    if choice not in EVENT_LOOPS:
        raise ValueError(f"the event loop is one of {', '.join(EVENT_LOOPS)}, not {choice!r}")
    if choice == "asyncio":
        return None
    try:
        import uvloop  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        if choice == "uvloop":
            raise UvloopMissing(
                "uvloop is not installed: pip install 'pymsmq[server]' (or use --event-loop asyncio)"
            ) from exc
        return None
    return uvloop.new_event_loop  # type: ignore[no-any-return,unused-ignore]


def describe(loop: asyncio.AbstractEventLoop) -> str:
    """``"uvloop 0.23.0"`` or ``"asyncio"``: what ``loop`` is, for the log and the statistics."""
    if type(loop).__module__.partition(".")[0] != "uvloop":
        return "asyncio"
    try:
        return f"uvloop {metadata.version('uvloop')}"
    except metadata.PackageNotFoundError:  # uvloop imported from a path pip did not install
        return "uvloop"
