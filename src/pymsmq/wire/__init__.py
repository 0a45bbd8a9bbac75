"""pymsmq.wire: the pure MSMQ codec (bytes <-> frozen dataclasses), format names and constants.

No I/O happens here: every function takes bytes (and, where time matters, ``now``) and returns
values.  Every decoder turns any input into a value or a ``WireError``; every value encodes back to
the bytes it was decoded from.

    from pymsmq.wire import FormatName, PathName, decode_packet, WireError
    fn = FormatName.parse(r"DIRECT=TCP:10.0.0.1\\PRIVATE$\\orders;JOURNAL")
    pkt = decode_packet(data)          # UserMessage | EstablishConnection | ... | PingPacket
    pkt.encode() == data

Submodules hold the rest (constants tables, helpers): ``pymsmq.wire.propids`` for every PROPID,
``pymsmq.wire.message_class``, ``pymsmq.wire.security`` (access masks), and so on.
"""

from __future__ import annotations

from pymsmq.errors import FormatNameError, WireError
from pymsmq.wire import propids
from pymsmq.wire.base_header import INFINITE, MAX_PACKET_SIZE, BaseHeader, BaseHeaderFlags
from pymsmq.wire.cac_transfer_buffer import (
    CACTransferBufferV1,
    CreateCursorArm,
    ReceiveAction,
    ReceiveArm,
    SendArm,
    TransferType,
)
from pymsmq.wire.cac_transfer_rules import BufferTooSmallError, decode_class, fill_receive, send_defaults
from pymsmq.wire.change_notification import (
    ChangeNotificationMessage,
    NotificationBody,
    NotificationCommand,
    NotificationEvent,
    NotificationUpdate,
)
from pymsmq.wire.format_name import (
    ConnectorFormatName,
    DirectFormatName,
    DirectProtocol,
    DistributionListFormatName,
    FormatName,
    FormatNameKind,
    MachineFormatName,
    MulticastFormatName,
    MultipleElementFormatName,
    PrivateFormatName,
    PublicFormatName,
)
from pymsmq.wire.framing import PacketFramer
from pymsmq.wire.internal_packets import (
    ConnectionParameters,
    EstablishConnection,
    InternalHeader,
    OperatingSystemFlags,
    PacketType,
    SessionAck,
    decode_internal_packet,
)
from pymsmq.wire.large_integer import ULargeInteger, VariantBool, VariantBoolValue
from pymsmq.wire.message_class import MessageClass
from pymsmq.wire.message_properties_header import (
    EncryptionAlgorithm,
    HashAlgorithm,
    MessagePropertiesFlags,
    MessagePropertiesHeader,
    PrivacyLevel,
)
from pymsmq.wire.mqrr_headers import (
    CompoundMessageHeader,
    DeadLetterHeader,
    ExtendedAddressHeader,
    ExtensionHeader,
    ExtensionHeaderFlags,
    SRMPEnvelopeHeader,
    SubqueueHeader,
)
from pymsmq.wire.optional_headers import (
    DebugHeader,
    MQFAddressHeader,
    MQFHeaderId,
    MQFSignatureHeader,
    MultiQueueFormatHeader,
    SoapHeader,
    TransactionHeader,
    TransactionHeaderFlags,
)
from pymsmq.wire.order_ack import FinalAckBody, OrderAckBody
from pymsmq.wire.packet import FinalAck, OrderAck, Packet, decode_packet
from pymsmq.wire.packet_types import (
    XACTUOW,
    DirectQueueFormatName,
    MessageIdentifier,
    MQFFormatNameElement,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueType,
    TxSequenceID,
)
from pymsmq.wire.path_name import PathGrammar, PathName
from pymsmq.wire.ping import PingFlags, PingPacket
from pymsmq.wire.propids import PropFamily, PropId
from pymsmq.wire.propvariant import (
    PropVariant,
    decode_props,
    decode_propvalue,
    encode_props,
    encode_propvalue,
)
from pymsmq.wire.public_key import MQDSPublicKey, MQDSPublicKeys, ProviderType
from pymsmq.wire.queue_format import (
    DlId,
    MulticastId,
    ObjectId,
    QueueFormat,
    QueueFormatType,
    QueueSuffixType,
)
from pymsmq.wire.security import (
    MQCNAccessMask,
    MQEntAccessMask,
    MQQMAccessMask,
    MQQueueAccessMask,
    MQSiteAccessMask,
    SecurityInformation,
)
from pymsmq.wire.security_header import ProviderInfo, SecurityHeader, SecurityHeaderFlags
from pymsmq.wire.sequence_info import SequenceInfo
from pymsmq.wire.session_header import SessionHeader
from pymsmq.wire.ta_address import AddressType, TAAddress, decode_ta_addresses, encode_ta_addresses
from pymsmq.wire.user_header import DeliveryMode, UserHeader, UserHeaderFlags
from pymsmq.wire.user_message import UserMessage
from pymsmq.wire.user_sign_cert import MQUserSignCert, MQUserSignCerts
from pymsmq.wire.vartype import VarType

__all__ = [
    "INFINITE",
    "MAX_PACKET_SIZE",
    "XACTUOW",
    "AddressType",
    "BaseHeader",
    "BaseHeaderFlags",
    "BufferTooSmallError",
    "CACTransferBufferV1",
    "ChangeNotificationMessage",
    "CompoundMessageHeader",
    "ConnectionParameters",
    "ConnectorFormatName",
    "CreateCursorArm",
    "DeadLetterHeader",
    "DebugHeader",
    "DeliveryMode",
    "DirectFormatName",
    "DirectProtocol",
    "DirectQueueFormatName",
    "DistributionListFormatName",
    "DlId",
    "EncryptionAlgorithm",
    "EstablishConnection",
    "ExtendedAddressHeader",
    "ExtensionHeader",
    "ExtensionHeaderFlags",
    "FinalAck",
    "FinalAckBody",
    "FormatName",
    "FormatNameError",
    "FormatNameKind",
    "HashAlgorithm",
    "InternalHeader",
    "MQCNAccessMask",
    "MQDSPublicKey",
    "MQDSPublicKeys",
    "MQEntAccessMask",
    "MQFAddressHeader",
    "MQFFormatNameElement",
    "MQFHeaderId",
    "MQFSignatureHeader",
    "MQQMAccessMask",
    "MQQueueAccessMask",
    "MQSiteAccessMask",
    "MQUserSignCert",
    "MQUserSignCerts",
    "MachineFormatName",
    "MessageClass",
    "MessageIdentifier",
    "MessagePropertiesFlags",
    "MessagePropertiesHeader",
    "MultiQueueFormatHeader",
    "MulticastFormatName",
    "MulticastId",
    "MultipleElementFormatName",
    "NotificationBody",
    "NotificationCommand",
    "NotificationEvent",
    "NotificationUpdate",
    "ObjectId",
    "OperatingSystemFlags",
    "OrderAck",
    "OrderAckBody",
    "Packet",
    "PacketFramer",
    "PacketType",
    "PathGrammar",
    "PathName",
    "PingFlags",
    "PingPacket",
    "PrivacyLevel",
    "PrivateFormatName",
    "PrivateQueueFormatName",
    "PrivateQueueFormatNameId",
    "PropFamily",
    "PropId",
    "PropVariant",
    "ProviderInfo",
    "ProviderType",
    "PublicFormatName",
    "PublicQueueFormatName",
    "QueueFormat",
    "QueueFormatType",
    "QueueSuffixType",
    "QueueType",
    "ReceiveAction",
    "ReceiveArm",
    "SRMPEnvelopeHeader",
    "SecurityHeader",
    "SecurityHeaderFlags",
    "SecurityInformation",
    "SendArm",
    "SequenceInfo",
    "SessionAck",
    "SessionHeader",
    "SoapHeader",
    "SubqueueHeader",
    "TAAddress",
    "TransactionHeader",
    "TransactionHeaderFlags",
    "TransferType",
    "TxSequenceID",
    "ULargeInteger",
    "UserHeader",
    "UserHeaderFlags",
    "UserMessage",
    "VarType",
    "VariantBool",
    "VariantBoolValue",
    "WireError",
    "decode_class",
    "decode_internal_packet",
    "decode_packet",
    "decode_props",
    "decode_propvalue",
    "decode_ta_addresses",
    "encode_props",
    "encode_propvalue",
    "encode_ta_addresses",
    "fill_receive",
    "propids",
    "send_defaults",
]
