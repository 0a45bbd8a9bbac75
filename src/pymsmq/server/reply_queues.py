"""The queues a sent message names for the queue manager to write to later: its administration
queue (acknowledgements, [MS-MQQB] 3.1.7.15) and its dead-letter queue ([MC-MQAC] 3.17.4.1.13
DeadLetterQueue).  The queue manager writes there on the sender's behalf, with the message's label
(and, for a negative acknowledgement or a dead letter, its body): a sender that names a local queue
it may not write to would otherwise put messages of its choosing into it.  So a SEND is refused
(MQ_ERROR_ACCESS_DENIED) when one of them names a local application queue on which the sender's
identity lacks MQSEC_WRITE_MESSAGE ([MS-MQMQ] 2.2.24), exactly the queues the queue manager would
write to (``pymsmq.qm.lifecycle``: an application queue, not a subqueue; for acknowledgements a
non-transactional one).  The queue manager looks the name up when it writes, so a name of a queue
of this queue manager that does not exist yet is checked as the queue it would be (a private queue
named by number, whose name is not known, only by the owner).  Another computer's queue is not
checked: nothing is written to it here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pymsmq.errors import FormatNameError, MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.model.names import LocalFormat, QueuePath
from pymsmq.model.packet_queues import check_element_count, name_elements, on_this_host
from pymsmq.server.access import AccessPolicy, queue_key
from pymsmq.wire.security import MQQueueAccessMask

if TYPE_CHECKING:
    from pymsmq.model.message import Message
    from pymsmq.qm.queue_manager import QueueManager

__all__ = ["reply_queue_refusal", "reply_queues_here"]

_WRITE: Final = int(MQQueueAccessMask.MQSEC_WRITE_MESSAGE)
_APP_KINDS: Final = frozenset({"private", "public"})


def reply_queues_here(qm: QueueManager, message: Message) -> bool:
    """Name the private queues ``message``'s administration and response queues name on the null
    host (a SEND packet's queue types 2-4: ``packet_queues.on_this_host``) on this queue manager, as
    the checks and the acknowledgements must see them; True when a name changed (the packet sent
    then no longer holds the message)."""
    changed = False
    for name in ("admin_queue", "response_queue"):
        text = getattr(message, name)
        if text:
            here = on_this_host(text, qm.guid)
            if here is not text:
                setattr(message, name, here)
                changed = True
    return changed


def reply_queue_refusal(
    qm: QueueManager, policy: AccessPolicy, identity: str, message: Message
) -> MSMQError | None:
    """MQ_ERROR_ACCESS_DENIED when ``message`` names as its administration or dead-letter queue a
    local queue the queue manager would write to and ``identity`` may not write to; else None."""
    if identity == policy.owner:
        return None
    for what, whole, acknowledgement in (
        ("administration queue", message.admin_queue, True),
        ("dead-letter queue", message.dead_letter_queue, False),
    ):
        if not whole:
            continue
        refusal = _refusal(qm, policy, identity, what, whole, acknowledgement)
        if refusal is not None:
            return refusal
    return None


def _refusal(
    qm: QueueManager, policy: AccessPolicy, identity: str, what: str, whole: str, acknowledgement: bool
) -> MSMQError | None:
    # Each element of a multiple-element name: the queue manager writes an acknowledgement to every
    # local queue one names (``Lifecycle.admin_queues``; outside QA: the whole name was looked up,
    # failed, and went unchecked, so a sender put acknowledgements, their labels and NACKs' bodies,
    # into any queue).  A name with too many elements is refused by the send itself.
    try:
        check_element_count(whole, what)
        names = name_elements(whole)
    except FormatNameError as exc:
        return MSMQError(f"{what}: {exc.message}", HResult.MQ_ERROR_ILLEGAL_FORMATNAME)
    except MSMQError as exc:
        return exc
    for name in names:
        with qm._lock:
            try:
                state, subqueue = qm._resolve(name)
            except MSMQError:
                # Not a queue now.  The queue manager looks the name up again when it writes
                # there: a queue of this one created meanwhile would get the message.  So a name
                # of a queue of this queue manager is checked as the queue it would be.
                key = _key_of_a_queue_to_be(qm, name)
                if key is None:
                    continue  # another computer's queue: nothing is written to it here
                shown = name
            else:
                if subqueue is not None or state.kind not in _APP_KINDS or state.deleted:
                    continue
                if acknowledgement and state.transactional:
                    continue
                shown = state.props.path_name
                key = queue_key(shown)
        if key == "" or _WRITE & ~policy.rights_of(identity, key):
            return MSMQError(
                f"{quoted(identity)} may not name {quoted(shown)} as a message's {what}: the queue "
                "manager would write to it for the sender, who has no MQSEC_WRITE_MESSAGE on it",
                HResult.MQ_ERROR_ACCESS_DENIED,
            )
    return None


def _key_of_a_queue_to_be(qm: QueueManager, name: str) -> str | None:
    """The policy key of ``name`` when it names a queue of this queue manager that does not exist
    (yet): its path's key, or "" for a private queue named by number (its name is not known: an
    identity other than the owner may not name it); None for another computer's queue, a public
    queue's GUID this queue manager does not have, or a malformed name."""
    try:
        if LocalFormat.looks_like_format_name(name):
            fmt = LocalFormat.parse(name)
            if fmt.kind == "direct":
                if fmt.path is None or not qm._is_local(fmt.computer):
                    return None
                return queue_key(fmt.path.render())
            if fmt.kind == "private" and fmt.guid == qm.guid:
                return ""
            return None
        path = QueuePath.parse(name)
    except MSMQError:
        return None
    if not qm._is_local(path.computer):
        return None
    return queue_key(path.render())
