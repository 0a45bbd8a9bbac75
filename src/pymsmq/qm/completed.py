"""``Completed``: the outcome of an embedded call made at once, awaitable and with ``.result()``.

The remote client's ``send_async`` writes its request at once and returns an awaitable that also has
``.result()`` (``pymsmq.client.transport.Pending``); the embedded ``Queue.send_async`` makes its send
at once too, and gives its outcome the same two ways.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Generic, TypeVar

from pymsmq.errors import MSMQError

__all__ = ["Completed"]

T = TypeVar("T")


class Completed(Generic[T]):
    """A value, or the ``MSMQError`` that came instead: ``result()`` returns or raises it, and so
    does ``await``."""

    __slots__ = ("_error", "_value")

    def __init__(self, value: T, error: MSMQError | None = None) -> None:
        self._value = value
        self._error = error

    def result(self) -> T:
        """The value, or raise the error."""
        if self._error is not None:
            raise self._error
        return self._value

    def done(self) -> bool:
        """Always True: the call is made."""
        return True

    def __await__(self) -> Generator[Any, None, T]:
        return self.result()
        yield  # pragma: no cover - makes this a generator (nothing to wait for)
