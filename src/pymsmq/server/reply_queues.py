"""The queues a sent message names for the queue manager to write to later: its administration
queue (acknowledgements, [MS-MQQB] 3.1.7.15) and its dead-letter queue ([MC-MQAC] 3.17.4.1.13
DeadLetterQueue).  The queue manager writes there on the sender's behalf, with the message's label
(and, for a negative acknowledgement or a dead letter, its body): a sender that names a local queue
it may not write to would otherwise put messages of its choosing into it.  So a SEND is refused
(MQ_ERROR_ACCESS_DENIED) when one of them names a local application queue on which the sender's
identity lacks MQSEC_WRITE_MESSAGE ([MS-MQMQ] 2.2.24), exactly the queues the queue manager would
write to (``pymsmq.qm.lifecycle``: an application queue, not a subqueue; for acknowledgements a
non-transactional one).  A name that is not such a queue is not checked: the acknowledgement is
then discarded, the dead letter goes to the system dead-letter queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.server.access import AccessPolicy, queue_key
from pymsmq.wire.security import MQQueueAccessMask

if TYPE_CHECKING:
    from pymsmq.model.message import Message
    from pymsmq.qm.queue_manager import QueueManager

__all__ = ["reply_queue_refusal"]

_WRITE: Final = int(MQQueueAccessMask.MQSEC_WRITE_MESSAGE)
_APP_KINDS: Final = frozenset({"private", "public"})


def reply_queue_refusal(
    qm: QueueManager, policy: AccessPolicy, identity: str, message: Message
) -> MSMQError | None:
    """MQ_ERROR_ACCESS_DENIED when ``message`` names as its administration or dead-letter queue a
    local queue the queue manager would write to and ``identity`` may not write to; else None."""
    if identity == policy.owner:
        return None
    for what, name, acknowledgement in (
        ("administration queue", message.admin_queue, True),
        ("dead-letter queue", message.dead_letter_queue, False),
    ):
        if not name:
            continue
        with qm._lock:
            try:
                state, subqueue = qm._resolve(name)
            except MSMQError:
                continue  # not a queue of this queue manager: nothing is written to it here
            if subqueue is not None or state.kind not in _APP_KINDS or state.deleted:
                continue
            if acknowledgement and state.transactional:
                continue
            path = state.props.path_name
        if _WRITE & ~policy.rights_of(identity, queue_key(path)):
            return MSMQError(
                f"{quoted(identity)} may not name {quoted(path)} as a message's {what}: the queue "
                "manager would write to it for the sender, who has no MQSEC_WRITE_MESSAGE on it",
                HResult.MQ_ERROR_ACCESS_DENIED,
            )
    return None
