"""``ProtocolError``: a violation of the pymsmq client protocol (docs/protocol.md) on one connection."""

from __future__ import annotations

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

__all__ = ["ProtocolError"]


class ProtocolError(MSMQError):
    """The peer (or the local caller) broke the client protocol: a malformed or oversized frame, a
    frame the connection state does not allow, an unknown or duplicate request id.

    A ``ProtocolError`` raised by ``receive_data`` is fatal for that connection only: the connection
    is CLOSED and the server drops it (after an optional GOODBYE frame); other connections are not
    affected.  Raised by ``send`` it reports local misuse and emits no bytes.

    The HRESULT is MQ_ERROR_INVALID_PARAMETER, as for ``WireError``: MSMQ has no code for a broken
    client protocol and this is what it returns for input it cannot use.
    """

    default_hresult = HResult.MQ_ERROR_INVALID_PARAMETER

    def __init__(self, message: str = "", hresult: int | None = None) -> None:
        super().__init__(message, hresult)
        #: Events ``receive_data`` decoded from the same input before the violation (in order).
        self.events: list[object] = []
