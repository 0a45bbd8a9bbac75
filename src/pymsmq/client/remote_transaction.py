"""``RemoteTransaction``: an internal transaction on a pymsmq server, and the transaction-argument check.

Split out of ``pymsmq.client.remote`` (which re-exports both names).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from pymsmq.client.transport import error_from
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.xa_transaction import MQ_XA_TRANSACTION_VALUE, xa_transaction_refused
from pymsmq.protocol import ErrorResponse, TransactionRef
from pymsmq.protocol import messages as pm

if TYPE_CHECKING:
    from pymsmq.client.remote import RemoteQueueManager

__all__ = ["RemoteTransaction"]


class RemoteTransaction:
    """An internal transaction on the server (``qm.begin_transaction()``); commit on exit, abort on error."""

    def __init__(self, qm: RemoteQueueManager, tid: uuid.UUID) -> None:
        self._qm = qm
        #: The transaction's id ([MS-MQDMPR] 3.1.1.14 Identifier), as the server assigned it.
        self.id = tid
        self.state = "active"

    def __repr__(self) -> str:
        return f"<RemoteTransaction {self.id} {self.state}>"

    @property
    def active(self) -> bool:
        """True until commit or abort."""
        return self.state == "active"

    def commit(self) -> None:
        """Commit durably (MQ_ERROR_TRANSACTION_SEQUENCE if already finished)."""
        self._finish(pm.CommitTransactionRequest(self.id), "committed")

    def abort(self) -> None:
        """Abort: sends dropped, received messages back in their queues."""
        self._finish(pm.AbortTransactionRequest(self.id), "aborted")

    def _finish(self, request: pm.Request, state: str) -> None:
        if self.state != "active":
            raise MSMQError(f"the transaction is {self.state}", HResult.MQ_ERROR_TRANSACTION_SEQUENCE)
        if state != "committed":
            self.state = state
            self._qm._t.call(request)
            return
        self.state = "committing"
        t = self._qm._t
        rid: int | None = None
        try:
            # An interrupt while the commit is written comes once it is (``uninterrupted``), and
            # is then one that came while its outcome was on its way (outside QA: raised as the
            # write returned, it left the transaction "in doubt" though the server committed).
            with t.uninterrupted():
                rid = t.send(request)
            response = t.wait(rid)
        except MSMQError:
            self.state = "aborted"
            raise
        except BaseException:
            if rid is None:
                self.state = "in doubt (interrupted as its commit was written)"
                raise
            # Interrupted (Ctrl-C) while the commit is on its way: its outcome comes in a moment,
            # and the transaction ends in it before the interrupt goes on, as an embedded commit
            # does (outside QA: it stayed "committing" for good, commit and abort both refused,
            # and the application could not tell that the server had committed).  A second
            # interrupt stops waiting: the outcome is then not known.
            try:
                response = t.wait(rid)
            except BaseException:
                t.abandon([rid])
                self.state = "in doubt (interrupted during its commit)"
                raise
            self.state = "aborted" if type(response) is ErrorResponse else "committed"
            raise
        if type(response) is ErrorResponse:
            self.state = "aborted"
            raise error_from(response)
        self.state = state

    def __copy__(self) -> RemoteTransaction:
        # A handle to the server's transaction: a copy is the same transaction (a second object
        # would abort it when let go of, while this one still says active).
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> RemoteTransaction:
        return self

    def __del__(self) -> None:
        # MSMQ: "If you release the transaction object without calling Commit or Abort, the
        # transaction is aborted for you" (as the embedded queue manager's Transaction is).  The
        # server aborted it only when the connection closed: a long-lived connection kept the
        # messages it received invisible.  The ABORT_TRANSACTION goes out with the connection's
        # next request (no I/O here: this may run in the garbage collector, in any thread).
        if getattr(self, "state", None) == "active":
            self.state = "aborted"
            transport = self._qm._t
            if not transport.closed:
                transport.dropped_requests.append(pm.AbortTransactionRequest(self.id))

    def __enter__(self) -> RemoteTransaction:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        if self.state != "active":
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _receive_xact(qm: RemoteQueueManager, transaction: object) -> TransactionRef:
    """``_xact`` for a receive: MQ_NO_TRANSACTION, MQ_MTS_TRANSACTION and MQ_SINGLE_MESSAGE (0, 1,
    3) all receive outside a transaction (as the queue manager reads them):
    None, so that the receive is two-phase (docs/protocol.md END_RECEIVE)."""
    xact = _xact(qm, transaction)
    return None if type(xact) is int and xact <= 3 else xact


def _xact(qm: RemoteQueueManager, transaction: object) -> TransactionRef:
    if transaction is None:
        return None
    if isinstance(transaction, RemoteTransaction):
        if transaction._qm is not qm:
            raise MSMQError(
                "the transaction belongs to another connection", HResult.MQ_ERROR_TRANSACTION_USAGE
            )
        if transaction.state != "active":
            raise MSMQError(f"the transaction is {transaction.state}", HResult.MQ_ERROR_TRANSACTION_SEQUENCE)
        return transaction.id
    # An MQTRANSACTION constant (0-3); XA and any other value are refused here, as the queue
    # manager refuses them, also with nothing to send or take (no request sent).
    if isinstance(transaction, int) and not isinstance(transaction, bool) and 0 <= transaction <= 3:
        if transaction == MQ_XA_TRANSACTION_VALUE:
            raise xa_transaction_refused()
        return transaction
    raise MSMQError(f"invalid transaction argument {transaction!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
