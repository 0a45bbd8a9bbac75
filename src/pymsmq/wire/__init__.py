r"""pymsmq.wire: the pure MSMQ codec (bytes <-> frozen dataclasses), format names and constants.

No I/O happens here: every function takes bytes (and, where time matters, ``now``) and returns
values.  Every decoder turns any input into a value or a ``WireError``; every value encodes back to
the bytes it was decoded from.

    from pymsmq.wire import FormatName, PathName, decode_packet, WireError
    fn = FormatName.parse(r"DIRECT=TCP:10.0.0.1\PRIVATE$\orders;JOURNAL")
    pkt = decode_packet(data)          # UserMessage | EstablishConnection | ... | PingPacket
    pkt.encode() == data

Submodules hold the rest (constants tables, helpers): ``pymsmq.wire.propids`` for every PROPID,
``pymsmq.wire.message_class``, ``pymsmq.wire.security`` (access masks), and so on.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from pymsmq.errors import FormatNameError, WireError

if TYPE_CHECKING:
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

#: Where each name lives: a submodule is imported when one of its names is first used, so that
#: importing one of them (``pymsmq.wire.message_class`` for the model's constants, the client's
#: codecs) does not load the whole codec (about 0.3 s of dataclass definitions).
_LAZY: Final[dict[str, str]] = {
    "INFINITE": "pymsmq.wire.base_header",
    "MAX_PACKET_SIZE": "pymsmq.wire.base_header",
    "BaseHeader": "pymsmq.wire.base_header",
    "BaseHeaderFlags": "pymsmq.wire.base_header",
    "CACTransferBufferV1": "pymsmq.wire.cac_transfer_buffer",
    "CreateCursorArm": "pymsmq.wire.cac_transfer_buffer",
    "ReceiveAction": "pymsmq.wire.cac_transfer_buffer",
    "ReceiveArm": "pymsmq.wire.cac_transfer_buffer",
    "SendArm": "pymsmq.wire.cac_transfer_buffer",
    "TransferType": "pymsmq.wire.cac_transfer_buffer",
    "BufferTooSmallError": "pymsmq.wire.cac_transfer_rules",
    "decode_class": "pymsmq.wire.cac_transfer_rules",
    "fill_receive": "pymsmq.wire.cac_transfer_rules",
    "send_defaults": "pymsmq.wire.cac_transfer_rules",
    "ChangeNotificationMessage": "pymsmq.wire.change_notification",
    "NotificationBody": "pymsmq.wire.change_notification",
    "NotificationCommand": "pymsmq.wire.change_notification",
    "NotificationEvent": "pymsmq.wire.change_notification",
    "NotificationUpdate": "pymsmq.wire.change_notification",
    "ConnectorFormatName": "pymsmq.wire.format_name",
    "DirectFormatName": "pymsmq.wire.format_name",
    "DirectProtocol": "pymsmq.wire.format_name",
    "DistributionListFormatName": "pymsmq.wire.format_name",
    "FormatName": "pymsmq.wire.format_name",
    "FormatNameKind": "pymsmq.wire.format_name",
    "MachineFormatName": "pymsmq.wire.format_name",
    "MulticastFormatName": "pymsmq.wire.format_name",
    "MultipleElementFormatName": "pymsmq.wire.format_name",
    "PrivateFormatName": "pymsmq.wire.format_name",
    "PublicFormatName": "pymsmq.wire.format_name",
    "PacketFramer": "pymsmq.wire.framing",
    "ConnectionParameters": "pymsmq.wire.internal_packets",
    "EstablishConnection": "pymsmq.wire.internal_packets",
    "InternalHeader": "pymsmq.wire.internal_packets",
    "OperatingSystemFlags": "pymsmq.wire.internal_packets",
    "PacketType": "pymsmq.wire.internal_packets",
    "SessionAck": "pymsmq.wire.internal_packets",
    "decode_internal_packet": "pymsmq.wire.internal_packets",
    "ULargeInteger": "pymsmq.wire.large_integer",
    "VariantBool": "pymsmq.wire.large_integer",
    "VariantBoolValue": "pymsmq.wire.large_integer",
    "MessageClass": "pymsmq.wire.message_class",
    "EncryptionAlgorithm": "pymsmq.wire.message_properties_header",
    "HashAlgorithm": "pymsmq.wire.message_properties_header",
    "MessagePropertiesFlags": "pymsmq.wire.message_properties_header",
    "MessagePropertiesHeader": "pymsmq.wire.message_properties_header",
    "PrivacyLevel": "pymsmq.wire.message_properties_header",
    "CompoundMessageHeader": "pymsmq.wire.mqrr_headers",
    "DeadLetterHeader": "pymsmq.wire.mqrr_headers",
    "ExtendedAddressHeader": "pymsmq.wire.mqrr_headers",
    "ExtensionHeader": "pymsmq.wire.mqrr_headers",
    "ExtensionHeaderFlags": "pymsmq.wire.mqrr_headers",
    "SRMPEnvelopeHeader": "pymsmq.wire.mqrr_headers",
    "SubqueueHeader": "pymsmq.wire.mqrr_headers",
    "DebugHeader": "pymsmq.wire.optional_headers",
    "MQFAddressHeader": "pymsmq.wire.optional_headers",
    "MQFHeaderId": "pymsmq.wire.optional_headers",
    "MQFSignatureHeader": "pymsmq.wire.optional_headers",
    "MultiQueueFormatHeader": "pymsmq.wire.optional_headers",
    "SoapHeader": "pymsmq.wire.optional_headers",
    "TransactionHeader": "pymsmq.wire.optional_headers",
    "TransactionHeaderFlags": "pymsmq.wire.optional_headers",
    "FinalAckBody": "pymsmq.wire.order_ack",
    "OrderAckBody": "pymsmq.wire.order_ack",
    "FinalAck": "pymsmq.wire.packet",
    "OrderAck": "pymsmq.wire.packet",
    "Packet": "pymsmq.wire.packet",
    "decode_packet": "pymsmq.wire.packet",
    "XACTUOW": "pymsmq.wire.packet_types",
    "DirectQueueFormatName": "pymsmq.wire.packet_types",
    "MessageIdentifier": "pymsmq.wire.packet_types",
    "MQFFormatNameElement": "pymsmq.wire.packet_types",
    "PrivateQueueFormatName": "pymsmq.wire.packet_types",
    "PrivateQueueFormatNameId": "pymsmq.wire.packet_types",
    "PublicQueueFormatName": "pymsmq.wire.packet_types",
    "QueueType": "pymsmq.wire.packet_types",
    "TxSequenceID": "pymsmq.wire.packet_types",
    "PathGrammar": "pymsmq.wire.path_name",
    "PathName": "pymsmq.wire.path_name",
    "PingFlags": "pymsmq.wire.ping",
    "PingPacket": "pymsmq.wire.ping",
    "PropFamily": "pymsmq.wire.propids",
    "PropId": "pymsmq.wire.propids",
    "PropVariant": "pymsmq.wire.propvariant",
    "decode_props": "pymsmq.wire.propvariant",
    "decode_propvalue": "pymsmq.wire.propvariant",
    "encode_props": "pymsmq.wire.propvariant",
    "encode_propvalue": "pymsmq.wire.propvariant",
    "MQDSPublicKey": "pymsmq.wire.public_key",
    "MQDSPublicKeys": "pymsmq.wire.public_key",
    "ProviderType": "pymsmq.wire.public_key",
    "DlId": "pymsmq.wire.queue_format",
    "MulticastId": "pymsmq.wire.queue_format",
    "ObjectId": "pymsmq.wire.queue_format",
    "QueueFormat": "pymsmq.wire.queue_format",
    "QueueFormatType": "pymsmq.wire.queue_format",
    "QueueSuffixType": "pymsmq.wire.queue_format",
    "MQCNAccessMask": "pymsmq.wire.security",
    "MQEntAccessMask": "pymsmq.wire.security",
    "MQQMAccessMask": "pymsmq.wire.security",
    "MQQueueAccessMask": "pymsmq.wire.security",
    "MQSiteAccessMask": "pymsmq.wire.security",
    "SecurityInformation": "pymsmq.wire.security",
    "ProviderInfo": "pymsmq.wire.security_header",
    "SecurityHeader": "pymsmq.wire.security_header",
    "SecurityHeaderFlags": "pymsmq.wire.security_header",
    "SequenceInfo": "pymsmq.wire.sequence_info",
    "SessionHeader": "pymsmq.wire.session_header",
    "AddressType": "pymsmq.wire.ta_address",
    "TAAddress": "pymsmq.wire.ta_address",
    "decode_ta_addresses": "pymsmq.wire.ta_address",
    "encode_ta_addresses": "pymsmq.wire.ta_address",
    "DeliveryMode": "pymsmq.wire.user_header",
    "UserHeader": "pymsmq.wire.user_header",
    "UserHeaderFlags": "pymsmq.wire.user_header",
    "UserMessage": "pymsmq.wire.user_message",
    "MQUserSignCert": "pymsmq.wire.user_sign_cert",
    "MQUserSignCerts": "pymsmq.wire.user_sign_cert",
    "VarType": "pymsmq.wire.vartype",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
