"""One exception tree for pymsmq; every error carries its MSMQ HRESULT ([MS-MQMQ] 2.4).

``MSMQError`` is the root.  Code that catches ``MSMQError`` sees every failure pymsmq raises on
purpose; ``err.hresult`` tells which one, with the value Windows MSMQ uses for the same condition.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

from pymsmq.hresult import HResult, describe, named

__all__ = ["FormatNameError", "MSMQError", "WireError", "printable", "quoted", "reason"]


class MSMQError(Exception):
    """Root of every pymsmq error.  ``hresult`` is the MSMQ HRESULT (an unsigned 32-bit int): an
    ``HResult`` member (an ``IntEnum``) for the values MSMQ names, a plain int otherwise."""

    default_hresult: int = HResult.MQ_ERROR
    #: On the error ``send_many`` raises: every message of the batch it did not send, as (its index
    #: in the batch, why), in batch order (the error raised is the first of them).  Empty otherwise.
    failures: tuple[tuple[int, MSMQError], ...] = ()

    def __init__(self, message: str = "", hresult: int | None = None) -> None:
        # An ``HResult`` member when MSMQ names the value (``err.hresult.name``), else the int.
        self.hresult: int = named(self.default_hresult if hresult is None else hresult)
        self.message = message or describe(self.hresult)
        super().__init__(self.message)

    def with_failures(self, failures: Iterable[tuple[int, MSMQError]]) -> Self:
        """This error, as ``send_many`` raises it, with ``failures`` (sorted by index)."""
        self.failures = tuple(sorted(failures, key=lambda failure: failure[0]))
        return self

    def __str__(self) -> str:
        name = HResult(self.hresult).name if self.hresult in HResult._value2member_map_ else None
        code = f"{name} 0x{self.hresult:08X}" if name else f"0x{self.hresult:08X}"
        return f"{self.message} [{code}]"


class WireError(MSMQError, ValueError):
    """Bytes that are not a valid MSMQ structure: truncated, out of range, or against a MUST rule.

    ``offset`` is where in the input the problem was found (``None`` when not tied to one place).
    The HRESULT is MQ_ERROR_INVALID_PARAMETER: no MSMQ code names a malformed packet, and
    this is the code MSMQ returns when a caller hands it a buffer it cannot use.
    """

    default_hresult = HResult.MQ_ERROR_INVALID_PARAMETER

    def __init__(self, message: str, offset: int | None = None, hresult: int | None = None) -> None:
        self.offset = offset
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"{message}{where}", hresult)


class FormatNameError(MSMQError, ValueError):
    """A queue format name or path name that does not follow the [MS-MQMQ] 2.1 grammar."""

    default_hresult = HResult.MQ_ERROR_ILLEGAL_FORMATNAME


def reason(exc: BaseException) -> str:
    """The text of ``exc`` to put inside another error's message.

    An ``MSMQError``'s own message, without the ``[NAME 0x...]`` its ``str`` adds: the outer error
    carries an HRESULT of its own, so the text shows one code, not two.
    """
    return exc.message if isinstance(exc, MSMQError) else str(exc)


def printable(text: str) -> str:
    """``text`` with its control characters escaped the way Python writes them (a newline as a
    backslash and n) and nothing else changed: one line of plain text, so that a name or label
    cannot break a table, a log line or a message's text."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def quoted(value: object) -> str:
    """``value`` as an error message names it: a string in single quotes, :func:`printable`, its
    backslashes as typed (``'.\\private$\\orders'`` is what ``repr`` would show for a path name);
    anything that is not a string as its ``repr``.  A string over 200 characters is shortened."""
    if isinstance(value, str):
        if len(value) > _QUOTED_MAX:  # a 10,000-character name would make a 10 KB error line
            return f"'{printable(value[: _QUOTED_MAX // 2])}...' ({len(value)} characters)"
        return f"'{printable(value)}'"
    return repr(value)


_QUOTED_MAX = 200
