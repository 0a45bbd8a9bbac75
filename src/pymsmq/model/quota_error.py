"""A send refused for a quota: ``QuotaExceededError`` (MQ_ERROR_INSUFFICIENT_RESOURCES), raised by
the queue manager and rebuilt by the remote client from an error's text.

[MS-MQDMPR] 3.1.7.1.9 Enqueue Message step 1: a queue quota or the queue manager's quota that
would be exceeded refuses the message.
"""

from __future__ import annotations

from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.ids import ObjectId

__all__ = ["MACHINE_QUOTA_TEXT", "QuotaExceededError", "queue_quota_text"]


class QuotaExceededError(MSMQError):
    """A send that would exceed the queue or machine quota (MQ_ERROR_INSUFFICIENT_RESOURCES).

    ``msg_class`` is MQMSG_CLASS_NACK_Q_EXCEED_QUOTA (0x8003) for a queue quota and None for the
    machine quota: what an acknowledgement for the rejected message would carry.
    """

    default_hresult = HResult.MQ_ERROR_INSUFFICIENT_RESOURCES

    def __init__(self, message: str, msg_class: int | None, message_id: ObjectId | None = None) -> None:
        super().__init__(message)
        self.msg_class = msg_class
        #: The id the refused message got (a queue quota: its NACK and dead letter carry it).
        self.message_id = message_id

    def with_message_id(self, message_id: ObjectId) -> QuotaExceededError:
        """This refusal naming the id the message got (in its text too, for a remote client)."""
        text = f"{self.message}{_MESSAGE_ID_HEAD}{message_id}"
        return QuotaExceededError(text, self.msg_class, message_id)

    @classmethod
    def from_text(cls, message: str) -> QuotaExceededError | None:
        """The quota refusal an MQ_ERROR_INSUFFICIENT_RESOURCES with text ``message`` is, or None
        (a remote client gets only the HRESULT and the text; docs/protocol.md 11, errors)."""
        if message == MACHINE_QUOTA_TEXT:
            return cls(message, None)
        text, sep, id_text = message.partition(_MESSAGE_ID_HEAD)
        message_id = None
        if sep:
            try:
                message_id = ObjectId.parse(id_text)
            except MSMQError:
                return None
        if text.startswith(_QUEUE_QUOTA_HEAD) and text.endswith(_QUEUE_QUOTA_TAIL):
            return cls(message, 0x8003, message_id)
        return None


#: The texts of quota refusals: MQ_ERROR_INSUFFICIENT_RESOURCES is also a message over 4 MB, a
#: server's connection limit, ...; these tell a quota apart (``QuotaExceededError.from_text``).
MACHINE_QUOTA_TEXT: Final = "the machine quota would be exceeded"
_QUEUE_QUOTA_HEAD: Final = "the quota of "
_QUEUE_QUOTA_TAIL: Final = " would be exceeded"
_MESSAGE_ID_HEAD: Final = "; message id "


def queue_quota_text(path_name: str, quota_kb: int) -> str:
    """The text of a queue quota's refusal (what ``QuotaExceededError.from_text`` recognises)."""
    return f"{_QUEUE_QUOTA_HEAD}{path_name} ({quota_kb} KB){_QUEUE_QUOTA_TAIL}"
