"""Format-name text <-> the queue fields of a UserMessage packet ([MS-MQMQ] 2.2.19.2, 2.2.20.1).

``Message`` keeps its queues (destination, administration, response) as canonical
``pymsmq.wire.FormatName`` text.  A packet carries a queue in one of two places:

* the UserHeader's DestinationQueue / AdminQueue / ResponseQueue, typed by Flags.DQ / AQ / RQ
  ([MS-MQMQ] 2.2.19.2 tables, [MS-MQDMPR] 3.1.7.1.32):

  ============================  ====================================================
  text                          UserHeader field
  ============================  ====================================================
  ``PUBLIC=<g>``                code 5, PublicQueueFormatName
  ``PRIVATE=<g>\\<n>``          destination: code 3 (PrivateQueueFormatNameId), with
                                UserHeader.QueueManagerAddress = <g>;
                                admin/response: code 6 (PrivateQueueFormatName)
  ``DIRECT=<id>``               code 7, DirectQueueFormatName (the text after ``DIRECT=``)
  response == admin             RQ code 1 "same as the administration queue" (no bytes)
  ============================  ====================================================

* the MultiQueueFormatHeader ([MS-MQMQ] 2.2.20.1, UserHeader.Flags.MQ) for multiple-element
  names and distribution lists ("DestinationMultiQueueFormatName", ... of [MS-MQDMPR] 3.1.7.1.30).
  Its element types are public, private, direct and DL (2.2.18.1.4); the UserHeader slot then holds
  the first element when it has a UserHeader form, as the sending QM addresses one copy per element.

Decision (no home in the packet): names that neither place can type -- ``MACHINE=``,
``CONNECTOR=``, ``MULTICAST=``, ``PUBLIC=``/``PRIVATE=`` with ``;JOURNAL``, ``DL=<g>@<domain>``
(an MQF DL element carries only the GUID, digest D1) -- travel as their whole canonical text in a
direct slot (UserHeader code 7 or an MQF direct element).  They are told apart from real direct
names because a direct name's text starts with ``Protocol ":"`` and never has ``=`` before the first
``:``.  Decoding is total: direct text that is not a valid format name comes back as
``"DIRECT=" + text`` verbatim.
"""

from __future__ import annotations

import functools
import uuid
from typing import Final

from pymsmq.errors import FormatNameError, MSMQError
from pymsmq.hresult import HResult
from pymsmq.wire._buffer import NULL_GUID
from pymsmq.wire.format_name import (
    DirectFormatName,
    DistributionListFormatName,
    FormatName,
    MultipleElementFormatName,
    PrivateFormatName,
    PublicFormatName,
)
from pymsmq.wire.optional_headers import MQFAddressHeader, MQFHeaderId, MultiQueueFormatHeader
from pymsmq.wire.packet_types import (
    DirectQueueFormatName,
    MQFDirectQueueFormatName,
    MQFDistributionQueueFormatName,
    MQFFormatNameElement,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    QueueFormat,
    QueueType,
)
from pymsmq.wire.queue_format import QueueSuffixType

__all__ = [
    "MAX_NAME_ELEMENTS",
    "QueueSlots",
    "canonical_format_name",
    "check_element_count",
    "decode_queues",
    "encode_queues",
    "name_elements",
    "on_this_host",
]

_NONE: Final = QueueSuffixType.QUEUE_SUFFIX_TYPE_NONE
# One slot: (UserHeader type code, UserHeader value, MQF element list or None).
QueueSlot = tuple[int, QueueFormat | None, tuple[MQFFormatNameElement, ...] | None]
# Everything the UserHeader/MQF header need: the three slots, QueueManagerAddress, the MQF header.
QueueSlots = tuple[QueueSlot, QueueSlot, QueueSlot, uuid.UUID, MultiQueueFormatHeader | None]

_CANONICAL: Final[dict[str, str]] = {}
_CACHE_MAX: Final = 4096


#: Elements a multiple-element administration or response queue name may have.  [MS-MQMQ] 2.1.7
#: sets no bound; the queue manager resolves each element at every acknowledgement it sends, under
#: its lock (outside QA: 16,000 elements held a server's event loop for a second a message).
MAX_NAME_ELEMENTS: Final = 256


def check_element_count(text: str, what: str) -> None:
    """MQ_ERROR_ILLEGAL_FORMATNAME when ``text`` has more than ``MAX_NAME_ELEMENTS`` elements,
    counted by its commas before anything is parsed."""
    if text.count(",") >= MAX_NAME_ELEMENTS:
        raise MSMQError(
            f"{what}: more than {MAX_NAME_ELEMENTS} elements in a multiple-element format name",
            HResult.MQ_ERROR_ILLEGAL_FORMATNAME,
        )


def name_elements(text: str) -> tuple[str, ...]:
    """The single-element names ``text`` names: itself when it has no comma, else the elements of
    its multiple-element name (``FormatNameError`` when it is no format name)."""
    if "," not in text:
        return (text,)
    return tuple(str(e) for e in FormatName.parse(text).elements)


def canonical_format_name(text: str, what: str = "format name") -> str:
    """The canonical ``FormatName`` text of ``text``; MQ_ERROR_ILLEGAL_FORMATNAME if it is not one
    (or has more than ``MAX_NAME_ELEMENTS`` elements)."""
    value = _CANONICAL.get(text)
    if value is None:
        check_element_count(text, what)
        try:
            value = str(FormatName.parse(text))
        except FormatNameError as exc:
            raise MSMQError(f"{what}: {exc.message}", HResult.MQ_ERROR_ILLEGAL_FORMATNAME) from None
        if len(_CANONICAL) >= _CACHE_MAX:
            _CANONICAL.clear()
        _CANONICAL[text] = value
    return value


def _parse(text: str, what: str) -> FormatName:
    try:
        return FormatName.parse(text)
    except FormatNameError as exc:
        raise MSMQError(f"{what}: {exc.message}", HResult.MQ_ERROR_ILLEGAL_FORMATNAME) from None


def _header_form(fn: FormatName, destination: bool) -> tuple[int, QueueFormat, uuid.UUID | None] | None:
    """(code, UserHeader value, QueueManagerAddress) for a name with a UserHeader form, else None."""
    if type(fn) is DirectFormatName:
        return QueueType.DIRECT_QUEUE, DirectQueueFormatName(fn.direct_id), None
    if type(fn) is PublicFormatName and fn.suffix == _NONE:
        return QueueType.PUBLIC_QUEUE, PublicQueueFormatName(fn.queue_id), None
    if type(fn) is PrivateFormatName and fn.suffix == _NONE:
        if destination:
            # 2.2.19.2 DQ 0x3: "private queue on the destination host"; the host is QueueManagerAddress.
            return (
                QueueType.PRIVATE_QUEUE_ON_DESTINATION,
                PrivateQueueFormatNameId(fn.queue_number),
                fn.computer_id,
            )
        return QueueType.PRIVATE_QUEUE_ON_OTHER, PrivateQueueFormatName(fn.computer_id, fn.queue_number), None
    return None


def _mqf_element(fn: FormatName) -> MQFFormatNameElement:
    if type(fn) is DirectFormatName:
        return MQFFormatNameElement(MQFDirectQueueFormatName(fn.direct_id))
    if type(fn) is PublicFormatName and fn.suffix == _NONE:
        return MQFFormatNameElement(PublicQueueFormatName(fn.queue_id))
    if type(fn) is PrivateFormatName and fn.suffix == _NONE:
        return MQFFormatNameElement(PrivateQueueFormatName(fn.computer_id, fn.queue_number))
    if type(fn) is DistributionListFormatName and fn.domain is None:
        return MQFFormatNameElement(MQFDistributionQueueFormatName(fn.dl_id))
    return MQFFormatNameElement(MQFDirectQueueFormatName(str(fn)))  # see the module docstring


def _slot(text: str | None, destination: bool, what: str) -> tuple[QueueSlot, uuid.UUID | None]:
    if text is None:
        return (0, None, None), None
    return _slot_of(text, destination, what)


@functools.lru_cache(maxsize=4096)
def _slot_of(text: str, destination: bool, what: str) -> tuple[QueueSlot, uuid.UUID | None]:
    # Cached: a queue manager writes the same few destination names over and over, and the result is
    # made of frozen values.  Errors are raised, never cached.
    fn = _parse(text, what)
    if isinstance(fn, MultipleElementFormatName | DistributionListFormatName) and not (
        isinstance(fn, DistributionListFormatName) and fn.domain is not None
    ):
        elements = fn.elements
        first = _header_form(elements[0], destination)
        mqf = tuple(_mqf_element(e) for e in elements)
        if first is None:
            return (0, None, mqf), None
        return (first[0], first[1], mqf), first[2]
    form = _header_form(fn, destination)
    if form is None:
        return (QueueType.DIRECT_QUEUE, DirectQueueFormatName(str(fn)), None), None
    return (form[0], form[1], None), form[2]


@functools.lru_cache(maxsize=1024)
def _destination_list(text: str) -> tuple[MQFFormatNameElement, ...]:
    # The MQF destination list of a destination_format_name, one element per name (cached as
    # _slot_of: a sender repeats its set).
    check_element_count(text, "destination_format_name")
    return tuple(_mqf_element(e) for e in _parse(text, "destination_format_name").elements)


def encode_queues(
    destination: str | None,
    admin: str | None,
    response: str | None,
    destination_format_name: str | None = None,
) -> QueueSlots:
    """The packet form of the queues; MQ_ERROR_ILLEGAL_FORMATNAME for text that is no format name.

    ``destination_format_name`` (the names a message was sent to, one copy per element): its
    elements go in the MultiQueueFormatHeader's destination list ([MS-MQMQ] 2.2.20.1), and the
    UserHeader's destination holds this copy's queue, ``destination`` -- as the sending queue
    manager addresses each copy ([MS-MQQB] 3.1.5.8.x: one packet per element, same header list).
    """
    dest_slot, qm_address = _slot(destination, True, "destination_queue")
    if destination_format_name is not None:
        if dest_slot[2] is not None:
            raise MSMQError(
                "destination_queue: a copy's queue is one queue when destination_format_name is set",
                HResult.MQ_ERROR_ILLEGAL_FORMATNAME,
            )
        dest_slot = (dest_slot[0], dest_slot[1], _destination_list(destination_format_name))
    admin_slot, _ = _slot(admin, False, "admin_queue")
    if response is not None and admin is not None and response == admin and admin_slot[2] is None:
        # 2.2.19.2 RQ 0x1: "same as the administration queue"; no bytes on the wire.
        resp_slot: QueueSlot = (QueueType.SAME_AS_ADMINISTRATION_QUEUE, None, None)
    else:
        resp_slot, _ = _slot(response, False, "response_queue")
    mqf: MultiQueueFormatHeader | None = None
    if dest_slot[2] is not None or admin_slot[2] is not None or resp_slot[2] is not None:
        mqf = MultiQueueFormatHeader(
            MQFAddressHeader(MQFHeaderId.DESTINATION, dest_slot[2] or ()),
            MQFAddressHeader(MQFHeaderId.ADMIN, admin_slot[2] or ()),
            MQFAddressHeader(MQFHeaderId.RESPONSE, resp_slot[2] or ()),
        )
    return dest_slot, admin_slot, resp_slot, qm_address or NULL_GUID, mqf


# -- decoding ------------------------------------------------------------------------------------


def _direct_text(text: str) -> str:
    colon = text.find(":")
    equals = text.find("=")
    full = equals >= 0 and (colon < 0 or equals < colon)
    candidate = text if full else "DIRECT=" + text
    if "," in candidate:
        # No single-element name holds a comma ([MS-MQMQ] 2.1: the list separator): verbatim,
        # unparsed (outside QA: 50 elements each holding 1,400 names were parsed one by one on a
        # server's event loop, past the element budget and the 256-element cap).
        return candidate
    try:
        return str(FormatName.parse(candidate))
    except FormatNameError:
        return candidate


_NULL_PRIVATE: Final = f"PRIVATE={NULL_GUID}\\"


def on_this_host(text: str, guid: uuid.UUID) -> str:
    """``text`` with every private queue named on the null GUID named on ``guid`` instead.

    A SEND packet's queue of type 2, 3 or 4 ([MS-MQMQ] 2.2.19.2: a private queue "on the source
    host", "on the destination host", on the administration queue's host) takes its host from
    UserHeader.SourceQueueManager or QueueManagerAddress, which a client of a queue manager leaves
    zero for the queue manager to fill in (docs/protocol.md): such a queue is the queue manager's
    own, ``guid`` (outside QA: its acknowledgements went to ``PRIVATE=00000000-...``, nowhere).
    """
    return text.replace(_NULL_PRIVATE, f"PRIVATE={guid}\\") if _NULL_PRIVATE in text else text


def _private(guid: uuid.UUID, number: int) -> str:
    return f"PRIVATE={guid}\\{number:08x}"


def _queue_text(
    code: int, value: QueueFormat | None, source: uuid.UUID, qm_address: uuid.UUID, admin_host: uuid.UUID
) -> str | None:
    t = type(value)
    if t is DirectQueueFormatName:
        return _direct_text(value.direct_format_name)  # type: ignore[union-attr]
    if t is PublicQueueFormatName:
        return f"PUBLIC={value.public_queue_identifier}"  # type: ignore[union-attr]
    if t is PrivateQueueFormatName:
        return _private(value.source_queue_manager, value.private_queue_identifier)  # type: ignore[union-attr]
    if t is PrivateQueueFormatNameId:
        # 2.2.19.2: 0x2 private queue on the source host, 0x3 on the destination host, 0x4 (RQ) on
        # the administration queue's host.
        host = source if code == 2 else qm_address if code == 3 else admin_host
        return _private(host, value.private_queue_identifier)  # type: ignore[union-attr]
    return None


def _element_text(e: MQFFormatNameElement) -> str:
    f = e.format_name
    if type(f) is MQFDirectQueueFormatName:
        return _direct_text(f.direct_format_name)
    if type(f) is PublicQueueFormatName:
        return f"PUBLIC={f.public_queue_identifier}"
    if type(f) is PrivateQueueFormatName:
        return _private(f.source_queue_manager, f.private_queue_identifier)
    return f"DL={f.distribution_list_identifier}"  # type: ignore[union-attr]


def _list_text(header: MQFAddressHeader) -> str | None:
    elements = header.format_name_list
    if not elements:
        return None
    return ",".join(_element_text(e) for e in elements)


def decode_queues(
    flags: int,
    source: uuid.UUID,
    qm_address: uuid.UUID,
    destination: QueueFormat | None,
    admin: QueueFormat | None,
    response: QueueFormat | None,
    mqf: MultiQueueFormatHeader | None,
) -> tuple[str | None, str | None, str | None, str | None]:
    """(destination, admin, response, destination_format_name) text from a UserHeader's fields and
    the MQF header (total).

    The MQF header's destination list is the ``destination_format_name`` (the names the message
    was sent to), the UserHeader's destination this copy's queue (None when DQ is 0).
    """
    dq = (flags >> 10) & 7
    aq = (flags >> 13) & 7
    rq = (flags >> 16) & 7
    admin_host = NULL_GUID
    if aq == 2:
        admin_host = source
    elif aq == 3:
        admin_host = qm_address
    elif type(admin) is PrivateQueueFormatName:
        admin_host = admin.source_queue_manager
    dest_text = _queue_text(dq, destination, source, qm_address, admin_host)
    admin_text = _queue_text(aq, admin, source, qm_address, admin_host)
    resp_text = admin_text if rq == 1 else _queue_text(rq, response, source, qm_address, admin_host)
    dest_set = None
    if mqf is not None:
        dest_set = _list_text(mqf.destination)
        admin_text = _list_text(mqf.administration) or admin_text
        resp_text = _list_text(mqf.response) or resp_text
    return dest_text, admin_text, resp_text, dest_set
