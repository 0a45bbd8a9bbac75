"""Rules applied to a CACTransferBufferV1 ([MS-MQMP] 2.2.3.2, 3.1.5.2, 3.1.5.3).

``decode_class`` splits the pClass word (digest TV-10), ``send_defaults`` applies the send-side
default substitution of rpc_ACSendMessageEx (TV-11) and ``fill_receive`` fills a receive request's
buffers from a stored message with the presence semantics of rpc_ACReceiveMessageEx (TV-12).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from pymsmq.errors import MSMQError, WireError
from pymsmq.hresult import HResult
from pymsmq.wire.cac_transfer_buffer import (
    _NAMES,
    _U32_MAX,
    MAX_TITLE_WCHARS,
    CACTransferBufferV1,
    TransferType,
)

__all__ = [
    "BufferTooSmallError",
    "ClassWord",
    "SendProperties",
    "decode_class",
    "fill_receive",
    "send_defaults",
]


# ---------------------------------------------------------------------- class word (TV-10)


class ClassWord(NamedTuple):
    """The 16-bit pClass word split into its fields ([MS-MQMP] 2.2.3.2 pClass diagram)."""

    s: bool  # bit 15: negative acknowledgement
    r: bool  # bit 14: receive stage (else arrival)
    h: bool  # bit 13: HTTP; the class code is an HTTP status
    reserved: int  # bits 12..9: MUST be 0 on send, MUST be ignored on receipt
    class_code: int  # bits 8..0 (9 bits: HTTP codes such as 404 need them; mask 0xE1FF)


def decode_class(word: int) -> ClassWord:
    """Split a class word; reserved bits are reported, never rejected ("MUST ignore")."""
    if type(word) is not int or not 0 <= word <= 0xFFFF:
        raise WireError(f"class word {word!r} does not fit 16 bits")
    return ClassWord(
        bool(word & 0x8000), bool(word & 0x4000), bool(word & 0x2000), word >> 9 & 0xF, word & 0x1FF
    )


# ---------------------------------------------------------------------- send defaults (TV-11)


@dataclass(frozen=True, slots=True)
class SendProperties:
    """The message properties a send request means once [MS-MQMP] 3.1.5.2's defaults are applied."""

    msg_class: int
    priority: int
    delivery: int
    acknowledge: int
    auditing: int
    application_tag: int
    correlation_id: bytes
    label: str
    body: bytes | None
    msg_extension: bytes | None
    time_to_reach_queue: int
    time_to_be_received: int
    trace: int
    priv_level: int
    hash_alg: int
    encrypt_alg: int
    body_type: int
    sender_id_type: int
    sender_id: bytes | None
    admin_queue_format: str | None
    response_queue_format: str | None
    connector_type: uuid.UUID | None
    uow: bytes | None

    @property
    def transactional(self) -> bool:
        """True when pUow names a transaction (a non-zero XACTUOW)."""
        return self.uow is not None and any(self.uow)


def _invalid(msg: str) -> MSMQError:
    return MSMQError(msg, HResult.MQ_ERROR_INVALID_PARAMETER)


def send_defaults(buf: CACTransferBufferV1) -> SendProperties:
    """Apply the rpc_ACSendMessageEx defaults ([MS-MQMP] 3.1.5.2) to a send request.

    NULL pPriority -> 3; NULL pDelivery -> 0, or 1 when pUow is non-zero; ulAbsoluteTimeToQueue
    0 -> 0xFFFFFFFF; NULL pClass/pAcknowledge/pAuditing/pApplicationTag/pTrace/pulPrivLevel/
    pulHashAlg/pulEncryptAlg/pulBodyType -> 0; NULL ppCorrelationID -> 20 zero bytes; NULL ppTitle
    -> empty label, else the first ulTitleBufferSizeInWCHARs characters cut to 250 (and at a NUL);
    ppBody/ppMsgExtension give their first ulBodyBufferSizeInBytes/ulMsgExtensionBufferInBytes bytes.
    Raises ``MSMQError`` (MQ_ERROR_INVALID_PARAMETER) when the request breaks a send MUST.
    """
    if buf.transfer_type is not TransferType.CACTB_SEND or buf.send is None:
        raise _invalid("rpc_ACSendMessageEx: uTransferType MUST be CACTB_SEND")
    if buf.sender_id_len and buf.sender_id_type is None:
        raise _invalid("pulSenderIDType MUST NOT be NULL when uSenderIDLen is not 0")
    if buf.hash_alg is None and buf.signature_size:
        raise _invalid("pulHashAlg may be NULL only when ulSignatureSize is 0")
    if buf.encrypt_alg is None and buf.priv_level is not None:
        raise _invalid("pulEncryptAlg may be NULL only when pulPrivLevel is NULL")
    uow = buf.uow
    transactional = uow is not None and any(uow)
    label = ""
    if buf.title is not None:
        label = buf.title[: buf.title_buffer_size_in_wchars][:MAX_TITLE_WCHARS].split("\x00", 1)[0]
    body = None if buf.body is None else buf.body[: buf.body_buffer_size_in_bytes]
    ext = None if buf.msg_extension is None else buf.msg_extension[: buf.msg_extension_buffer_in_bytes]
    return SendProperties(
        msg_class=0 if buf.msg_class is None else buf.msg_class,
        priority=3 if buf.priority is None else buf.priority,
        delivery=(1 if transactional else 0) if buf.delivery is None else buf.delivery,
        acknowledge=buf.acknowledge or 0,
        auditing=buf.auditing or 0,
        application_tag=buf.application_tag or 0,
        correlation_id=bytes(20) if buf.correlation_id is None else buf.correlation_id,
        label=label,
        body=body,
        msg_extension=ext,
        time_to_reach_queue=buf.absolute_time_to_queue or _U32_MAX,
        time_to_be_received=buf.relative_time_to_live,
        trace=buf.trace or 0,
        priv_level=buf.priv_level or 0,
        hash_alg=buf.hash_alg or 0,
        encrypt_alg=buf.encrypt_alg or 0,
        body_type=buf.body_type or 0,
        sender_id_type=buf.sender_id_type or 0,
        sender_id=buf.sender_id,
        admin_queue_format=buf.send.admin_queue_format,
        response_queue_format=buf.send.response_queue_format,
        connector_type=buf.connector_type,
        uow=uow,
    )


# ---------------------------------------------------------------------- receive filling (TV-12)


class BufferTooSmallError(MSMQError):
    """A requested buffer cannot hold the property; ``required`` is the full length it needs.

    [MS-MQMP] 3.1.5.3: the server checks each buffer "before filling it"; on a failure HRESULT the
    client disregards every out-parameter, so ``required`` is for pymsmq's own client only.
    """

    default_hresult = HResult.MQ_ERROR_BUFFER_OVERFLOW

    def __init__(self, field: str, required: int, capacity: int, hresult: int) -> None:
        self.field = field
        self.required = required
        self.capacity = capacity
        super().__init__(f"{field} needs {required} units, the buffer holds {capacity}", hresult)


# [MS-MQMP] 3.1.5.3: value pointers returned when non-NULL.
_RECEIVE_VALUES: Final = (
    "msg_class",
    "message_id",
    "correlation_id",
    "sent_time",
    "arrived_time",
    "priority",
    "delivery",
    "acknowledge",
    "auditing",
    "application_tag",
    "relative_time_to_queue",
    "p_relative_time_to_live",
    "trace",
    "priv_level",
    "p_authenticated",
    "hash_alg",
    "encrypt_alg",
    "prov_type",
    "sender_id_type",
    "src_qm_id",
    "connector_type",
    "body_type",
    "version",
)
# Buffers: (buffer, capacity member, full-length out member, HRESULT when too small).
_RECEIVE_BUFFERS: Final = (
    ("body", "body_buffer_size_in_bytes", "body_size", HResult.MQ_ERROR_BUFFER_OVERFLOW),
    (
        "title",
        "title_buffer_size_in_wchars",
        "p_title_buffer_size_in_wchars",
        HResult.MQ_ERROR_LABEL_BUFFER_TOO_SMALL,
    ),
    (
        "msg_extension",
        "msg_extension_buffer_in_bytes",
        "msg_extension_size",
        HResult.MQ_ERROR_BUFFER_OVERFLOW,
    ),
    ("sender_id", "sender_id_len", "sender_id_len_prop", HResult.MQ_ERROR_SENDERID_BUFFER_TOO_SMALL),
    ("prov_name", "prov_name_len", "auth_prov_name_len_prop", HResult.MQ_ERROR_PROV_NAME_BUFFER_TOO_SMALL),
    ("sender_cert", "sender_cert_len", "sender_cert_len_prop", HResult.MQ_ERROR_SENDER_CERT_BUFFER_TOO_SMALL),
    ("symm_keys", "symm_keys_size", "symm_keys_size_prop", HResult.MQ_ERROR_SYMM_KEY_BUFFER_TOO_SMALL),
    ("signature", "signature_size", "signature_size_prop", HResult.MQ_ERROR_SIGNATURE_BUFFER_TOO_SMALL),
)


def fill_receive(request: CACTransferBufferV1, message: Mapping[str, Any]) -> CACTransferBufferV1:
    """The reply to a receive ``request`` for a stored message ([MS-MQMP] 3.1.5.3), as a pure function.

    ``message`` maps record field names (``msg_class``, ``body``, ``title``, ``sender_id`` ...;
    for the Receive arm's names ``response_format_name``, ``admin_format_name``,
    ``dest_format_name``, ``ordering_format_name``) to the stored message's values; a missing key
    or ``None`` is an absent property.  Only non-NULL members of the request are filled: a NULL
    pointer stays NULL.  Size-out members get the full length (0 when absent).  Every buffer's
    capacity is checked before anything is filled; a short one raises ``BufferTooSmallError``.
    Buffer sizes, Cursor and pUow come back unchanged.
    """
    if request.transfer_type is not TransferType.CACTB_RECEIVE or request.receive is None:
        raise _invalid("rpc_ACReceiveMessageEx: uTransferType MUST be CACTB_RECEIVE")
    changes: dict[str, Any] = {}
    for name in _RECEIVE_VALUES:
        if getattr(request, name) is not None and message.get(name) is not None:
            changes[name] = message[name]
    for buf, cap_name, out_name, hresult in _RECEIVE_BUFFERS:
        value = message.get(buf)
        full = 0 if value is None else len(value)
        if getattr(request, buf) is not None:
            capacity: int = getattr(request, cap_name)
            if full > capacity:
                raise BufferTooSmallError(buf, full, capacity, hresult)
            changes[buf] = value if value is not None else type(getattr(request, buf))()
        if getattr(request, out_name) is not None:
            changes[out_name] = full
    rc = request.receive
    arm_changes: dict[str, Any] = {}
    for stem in _NAMES:
        value = message.get(f"{stem}_format_name")
        full = 0 if value is None else len(value)
        if getattr(rc, f"{stem}_format_name") is not None:
            capacity = getattr(rc, f"{stem}_format_name_len")
            if full > capacity:
                raise BufferTooSmallError(
                    f"{stem}_format_name", full, capacity, HResult.MQ_ERROR_FORMATNAME_BUFFER_TOO_SMALL
                )
            arm_changes[f"{stem}_format_name"] = value if value is not None else ""
        if getattr(rc, f"{stem}_format_name_len_prop") is not None:
            arm_changes[f"{stem}_format_name_len_prop"] = full
    if arm_changes:
        changes["receive"] = dataclasses.replace(rc, **arm_changes)
    try:
        return dataclasses.replace(request, **changes)
    except WireError as exc:
        raise MSMQError(f"stored message does not fit the request: {exc.message}", exc.hresult) from exc
