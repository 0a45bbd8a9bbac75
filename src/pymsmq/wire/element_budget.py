"""A bound on the list elements decoders build one by one, for a server reading untrusted input.

Most of a packet decodes in time proportional to its bytes at memory speed (bodies, labels and
blobs are sliced). A few structures are lists whose elements are each a Python object built by a
call -- the elements of a VT_VECTOR of VARIANTs, strings or GUIDs ([MS-MQMQ] 2.2.12 PROPVARIANT)
and the FormatNameList of an MQFAddressHeader ([MS-MQMQ] 2.2.20.2) -- and there every two to four
bytes cost a microsecond or more: a 4 MB frame of them held a server's event loop for 3-5 s, every
other client waiting (outside QA, 2026-11-28). Valid MSMQ structures hold a handful.

A caller that decodes input from others sets a budget (``element_budget``) for everything decoded
within it; each such list charges its length before it is built (``charge_elements``), and a list
that would take the budget below zero raises ``WireError`` (MQ_ERROR_INSUFFICIENT_RESOURCES)
before any element is built. Without a budget (the default: decoding a file, a capture, one's own
packets) nothing is bounded. The budget lives in a ``contextvars`` variable, so concurrent decodes
in other threads or tasks have their own.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Final

from pymsmq.errors import WireError
from pymsmq.hresult import HResult

__all__ = ["charge_elements", "element_budget"]

#: [elements left, elements granted] of the innermost ``element_budget``; None: no bound.
_BUDGET: Final[ContextVar[list[int] | None]] = ContextVar("pymsmq_wire_element_budget", default=None)


class element_budget:  # noqa: N801 - used as a context manager, as contextlib's are
    """``with element_budget(n):`` the decodes inside the block build at most ``n`` list elements in
    all (a class, not a generator: a server enters one per frame and per request)."""

    __slots__ = ("_elements", "_left", "_token")

    def __init__(self, elements: int) -> None:
        self._elements = elements
        self._left = [elements, elements]
        self._token: Token[list[int] | None] | None = None

    @property
    def used(self) -> int:
        """The elements charged inside the block (so far)."""
        return self._elements - self._left[0]

    def __enter__(self) -> None:
        self._left = [self._elements, self._elements]
        self._token = _BUDGET.set(self._left)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _BUDGET.reset(self._token)
            self._token = None


def charge_elements(count: int, offset: int, what: str, weight: int = 1) -> None:
    """Charge ``count`` elements of the list ``what`` (at ``offset``), each ``weight`` (what it
    costs to build, against a property vector's element), to the current budget, if any;
    ``WireError`` with MQ_ERROR_INSUFFICIENT_RESOURCES when the budget cannot pay them."""
    budget = _BUDGET.get()
    if budget is None:
        return
    left = budget[0] - count * weight
    if left < 0:
        each = f", each counting {weight}," if weight > 1 else ""
        raise WireError(
            f"{what} of {count} elements{each}: more than the {budget[1]} list elements this reader"
            " decodes at once (a limit of the server, docs/protocol.md)",
            offset,
            HResult.MQ_ERROR_INSUFFICIENT_RESOURCES,
        )
    budget[0] = left
