"""MQ_XA_TRANSACTION, refused: pymsmq has no XA transaction manager for a call to take part in.

[MC-MQAC] 2.2.2.16 MQTRANSACTION: MQ_XA_TRANSACTION means the call "is part of an externally
coordinated, XA-compliant transaction" that MSMQ imports from the caller's transaction manager.
There is none to import here.  Read as "no transaction" (as MQ_MTS_TRANSACTION without an ambient
transaction is, [MC-MQAC] 3.17.4.1.48 step 4 [WIN]), a receive removed the message at once and a
rollback of the caller's XA transaction could not give it back (outside QA, 2026-11-27): refused
instead, by the queue manager, the server and the remote client alike.
"""

from __future__ import annotations

from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

__all__ = ["MQ_XA_TRANSACTION_VALUE", "xa_transaction_refused"]

#: MQTRANSACTION's MQ_XA_TRANSACTION ([MC-MQAC] 2.2.2.16).
MQ_XA_TRANSACTION_VALUE: Final = 2


def xa_transaction_refused() -> MSMQError:
    """The error for a call given MQ_XA_TRANSACTION (MQ_ERROR_TRANSACTION_IMPORT)."""
    return MSMQError(
        "MQ_XA_TRANSACTION: pymsmq has no XA transaction manager to import a transaction from; use a "
        "transaction of the queue manager (begin_transaction) or MQ_SINGLE_MESSAGE",
        HResult.MQ_ERROR_TRANSACTION_IMPORT,
    )
