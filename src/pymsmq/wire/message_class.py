"""Message class identifiers ([MS-MQMQ] 2.2.18.1.6; [MC-MQAC] 2.2.2.x MQMSGCLASS).

MessagePropertiesHeader.MessageClass is a u16.  Bit 15 marks a negative acknowledgement and bit
14 a receive-phase class.  Applications may use custom classes built from the bits of 0xE1FF.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

__all__ = ["CUSTOM_CLASS_MASK", "MessageClass", "is_custom_class_valid"]

# [MS-MQMQ] 2.2.18.1.6: custom values use only the bits of 0xE1FF.
CUSTOM_CLASS_MASK: Final = 0xE1FF


class MessageClass(IntEnum):
    """MQMSG_CLASS_* values."""

    MQMSG_CLASS_NORMAL = 0x0000
    MQMSG_CLASS_REPORT = 0x0001
    MQMSG_CLASS_ACK_REACH_QUEUE = 0x0002
    MQMSG_CLASS_ORDER_ACK = 0x00FF
    MQMSG_CLASS_ACK_RECEIVE = 0x4000
    MQMSG_CLASS_NACK_BAD_DST_Q = 0x8000
    # [MS-MQMQ] names 0x8001 MQMSG_CLASS_NACK_DELETED; [MC-MQAC] names it MQMSG_CLASS_NACK_PURGED.
    MQMSG_CLASS_NACK_PURGED = 0x8001
    MQMSG_CLASS_NACK_REACH_QUEUE_TIMEOUT = 0x8002
    MQMSG_CLASS_NACK_Q_EXCEED_QUOTA = 0x8003
    MQMSG_CLASS_NACK_ACCESS_DENIED = 0x8004
    MQMSG_CLASS_NACK_HOP_COUNT_EXCEEDED = 0x8005
    MQMSG_CLASS_NACK_BAD_SIGNATURE = 0x8006
    MQMSG_CLASS_NACK_BAD_ENCRYPTION = 0x8007
    MQMSG_CLASS_NACK_COULD_NOT_ENCRYPT = 0x8008
    MQMSG_CLASS_NACK_NOT_TRANSACTIONAL_Q = 0x8009
    MQMSG_CLASS_NACK_NOT_TRANSACTIONAL_MSG = 0x800A
    MQMSG_CLASS_NACK_UNSUPPORTED_CRYPTO_PROVIDER = 0x800B
    MQMSG_CLASS_NACK_SOURCE_COMPUTER_GUID_CHANGED = 0x800C
    MQMSG_CLASS_NACK_Q_DELETED = 0xC000
    MQMSG_CLASS_NACK_Q_PURGED = 0xC001
    MQMSG_CLASS_NACK_RECEIVE_TIMEOUT = 0xC002
    MQMSG_CLASS_NACK_RECEIVE_TIMEOUT_AT_SENDER = 0xC003
    MQMSG_CLASS_NACK_RECEIVE_REJECTED = 0xC004

    @property
    def is_negative(self) -> bool:
        """True for negative acknowledgements (bit 15)."""
        return bool(self & 0x8000)

    @property
    def is_receive_phase(self) -> bool:
        """True for classes about the receive phase (bit 14)."""
        return bool(self & 0x4000)


# [MS-MQMQ] 2.2.18.1.6 names the same value MQMSG_CLASS_NACK_DELETED.
MQMSG_CLASS_NACK_DELETED: Final = MessageClass.MQMSG_CLASS_NACK_PURGED


def is_custom_class_valid(value: int) -> bool:
    """True when ``value`` fits a u16 and uses only the bits of 0xE1FF."""
    return 0 <= value <= 0xFFFF and value & ~CUSTOM_CLASS_MASK == 0
