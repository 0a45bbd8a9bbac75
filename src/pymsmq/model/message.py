"""``Message``: every MSMQ message property, with the defaults and validation of the specs.

Attribute names are the snake_case of the [MC-MQAC] 3.17 MSMQMessage property names (``label``,
``priority``, ``correlation_id``, ``max_time_to_receive``, ...); values are the MC-MQAC constants.
Defaults are the "client created" column of [MC-MQAC] 3.17.3 (which agrees with the IDL
MQDEFAULT values and with [MS-MQDMPR] 3.1.1.12 where both speak).

Validation happens when a ``Message`` is constructed and again when it is sent (``validate``), with
the HRESULTs MC-MQAC gives for the property puts: MQ_ERROR_ILLEGAL_PROPERTY_VALUE for out-of-range
enumerations and priorities, MQ_ERROR_LABEL_TOO_LONG for labels of 250 characters or more, and
MQ_ERROR_ILLEGAL_PROPERTY_SIZE for ids that are not 20 bytes.

Properties the queue manager assigns (``id``, ``lookup_id``, ``sent_time``, ``arrived_time``,
``source_machine_guid``, ``destination_queue``, ``destination_format_name``, transaction facts,
``abort_count``, ``move_count``, ``last_move_time``) are overwritten by ``send`` and by the
receiving queue manager; senders leave them alone.
Times are POSIX seconds (floats); ``None`` means "not set" (MC-MQAC's 0xFFFFFFFF).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, fields
from typing import Final

from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE, MQ_MAX_MSG_LABEL_LEN, VALID_ACK_VALUES
from pymsmq.model.ids import ObjectId

__all__ = ["DEFAULT_PROVIDER_NAME", "Message"]

# [MC-MQAC] 3.17.3: AuthenticationProviderName defaults to the base provider.
DEFAULT_PROVIDER_NAME: Final = "Microsoft Base Cryptographic Provider, v1.0"

_BAD: Final = HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE
_new: Final = object.__new__
# [MC-MQAC] 3.17.4.1 property puts: the valid values of each enumerated property.
_PRIV_LEVELS: Final = frozenset({0, 1, 3})  # MQMSGPRIVLEVEL: 2 is not valid
_AUTH_LEVELS: Final = frozenset({0, 1, 2, 4, 8})  # MQMSGAUTHLEVEL
_DELIVERIES: Final = frozenset({0, 1})  # MQMSGDELIVERY
_TRACES: Final = frozenset({0, 1})  # MQMSGTRACE
_JOURNALS: Final = frozenset({0, 1, 2, 3})  # MQMSGJOURNAL flags
_SENDERID_TYPES: Final = frozenset({0, 1, 2})  # MQMSGSENDERIDTYPE (+ 2 = QueueManagerIdentifier, MQDMPR)


def _fail(what: str, value: object, hresult: int = _BAD) -> MSMQError:
    return MSMQError(f"invalid {what}: {value!r}", hresult)


def _uint(value: object, bits: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
        raise _fail(what, value)
    return value


def _seconds(value: object, what: str) -> int:
    # [MC-MQAC] D0: 0xFFFFFFFF means infinite; accept -1 (what a COM long shows) as the same value.
    if type(value) is int and value == -1:
        return INFINITE
    return _uint(value, 32, what)


def _opt_bytes(value: object, what: str) -> bytes | None:
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise _fail(what, value)


def _opt_str(value: object, what: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise _fail(what, value)


def _opt_guid(value: object, what: str) -> uuid.UUID | None:
    if value is None or isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            raise _fail(what, value) from None
    raise _fail(what, value)


def _opt_id(value: object, what: str) -> ObjectId | None:
    if value is None or type(value) is ObjectId:
        return value
    if isinstance(value, bytes | bytearray | memoryview | str):
        return ObjectId.coerce(value)
    raise _fail(what, value, HResult.MQ_ERROR_ILLEGAL_PROPERTY_SIZE)


def _member(value: object, valid: Collection[int]) -> bool:
    """``value`` is one of ``valid``: an int that is not a bool (an unhashable value is just invalid)."""
    return isinstance(value, int) and type(value) is not bool and value in valid


def label_units(label: str) -> int:
    """The length of ``label`` in UTF-16 units (WCHARs): what MQ_MAX_MSG_LABEL_LEN limits."""
    if label.isascii():
        return len(label)
    return len(label.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(eq=True)
class Message:
    """One MSMQ message: what an application sends and what ``receive``/``peek`` return.

    Construct with keyword arguments (``Message(body=b"...", label="x", priority=5)``).  Invalid
    values raise ``MSMQError`` with the MC-MQAC HRESULT.  The object stays mutable (MSMQMessage
    properties are settable); ``validate()`` re-checks everything and is called by ``send``.
    """

    # --- payload ([MS-MQDMPR] 3.1.1.12 Body, BodyType, Label, Extension, ApplicationTag)
    body: bytes = b""
    label: str = ""
    body_type: int = 0
    extension: bytes = b""
    app_specific: int = 0
    correlation_id: ObjectId | None = None
    msg_class: int = 0
    # --- delivery
    priority: int = 3
    delivery: int = 0
    ack: int = 0
    journal: int = 0
    trace: int = 0
    max_time_to_reach_queue: int = INFINITE
    max_time_to_receive: int = INFINITE
    # --- addressing (format names; dead_letter_queue is a path name, PROPID_M_DEADLETTER_QUEUE)
    response_queue: str | None = None
    admin_queue: str | None = None
    dead_letter_queue: str | None = None
    # --- security
    priv_level: int = 0
    auth_level: int = 0
    hash_algorithm: int = 0x8004  # MQMSG_CALG_SHA1
    encrypt_algorithm: int = 0x6801  # MQMSG_CALG_RC4
    sender_id: bytes | None = None
    sender_id_type: int = 1  # MQMSG_SENDERID_TYPE_SID
    sender_certificate: bytes | None = None
    signature: bytes | None = None
    destination_symmetric_key: bytes | None = None
    authentication_provider_type: int = 1  # PROV_RSA_FULL
    authentication_provider_name: str | None = DEFAULT_PROVIDER_NAME
    connector_type_guid: uuid.UUID | None = None
    # --- assigned by send / by the queue manager (read-only for applications)
    id: ObjectId | None = None
    lookup_id: int = 0
    sent_time: float | None = None
    arrived_time: float | None = None
    source_machine_guid: uuid.UUID | None = None
    destination_queue: str | None = None
    #: PROPID_M_DEST_FORMAT_NAME (MSMQ 3.0): the multiple-element format name the message was sent
    #: to, of which ``destination_queue`` is this copy's queue; None when it was sent to that queue
    #: alone ([MS-MQMQ] 2.2.20.1 MultiQueueFormatHeader.Destination).
    destination_format_name: str | None = None
    transaction_status_queue: str | None = None
    transaction_id: ObjectId | None = None
    is_first_in_transaction: bool = False
    is_last_in_transaction: bool = False
    received_authentication_level: int = 0
    abort_count: int = 0
    move_count: int = 0
    #: PROPID_M_LAST_MOVE_TIME: when the message was last moved between its queue and a subqueue
    #: (POSIX seconds; None: never moved).
    last_move_time: float | None = None
    soap_envelope: str | None = None
    compound_message: bytes | None = None

    def validate(self) -> None:
        """Check (and normalise) every property; raise ``MSMQError`` with the spec's HRESULT."""
        # Fast path: an instance stores only the properties set to something other than their
        # default (the defaults are class attributes), and each stored value passes a quick exact
        # type/range test; anything unusual takes the full check below, which normalises and raises.
        # Properties whose whole check is an exact type (body, ids, GUIDs, queue names) match
        # ``_EXACT_TYPES`` without a call; None and the rest go to their check in ``_CHECKS``.
        exact = _EXACT_TYPES
        checks = _CHECKS
        for name, value in self.__dict__.items():
            if type(value) is exact.get(name):
                continue
            check = checks.get(name)
            if check is None or not check(value):
                self._validate_slow()
                return

    def _validate_slow(self) -> None:
        body = self.body
        if type(body) is not bytes:
            if not isinstance(body, bytearray | memoryview):
                raise _fail("body (bytes expected)", type(body).__name__)
            self.body = bytes(body)
        label = self.label
        if type(label) is not str:
            if label is not None:
                raise _fail("label", label)
            self.label = label = ""  # [MC-MQAC] 3.17.3: an unset label reads as ""
        # [MC-MQAC] 3.17.4.1.37 put_Label: 250 characters or more -> MQ_ERROR_LABEL_TOO_LONG.  A
        # COM string's characters are WCHARs: a character beyond the BMP counts 2 (a surrogate pair).
        units = label_units(label)
        if units > MQ_MAX_MSG_LABEL_LEN:
            raise MSMQError(f"label has {units} UTF-16 units (max 249)", HResult.MQ_ERROR_LABEL_TOO_LONG)
        # [MC-MQAC] 3.17.4.1.18 put_Priority: 0 <= p <= 7, else MQ_ERROR_ILLEGAL_PROPERTY_VALUE.
        if type(self.priority) is not int or not 0 <= self.priority <= 7:
            raise _fail("priority", self.priority)
        if not _member(self.delivery, _DELIVERIES):
            raise _fail("delivery", self.delivery)
        if not _member(self.ack, VALID_ACK_VALUES):
            raise _fail("ack", self.ack)
        if not _member(self.journal, _JOURNALS):
            raise _fail("journal", self.journal)
        if not _member(self.trace, _TRACES):
            raise _fail("trace", self.trace)
        if not _member(self.priv_level, _PRIV_LEVELS):
            raise _fail("priv_level", self.priv_level)
        if not _member(self.auth_level, _AUTH_LEVELS):
            raise _fail("auth_level", self.auth_level)
        if not _member(self.sender_id_type, _SENDERID_TYPES):
            raise _fail("sender_id_type", self.sender_id_type)
        # AppSpecific is a COM long and a u32 on the wire (MessagePropertiesHeader.ApplicationTag):
        # accept both signed and unsigned 32-bit values and keep the unsigned form.
        app = self.app_specific
        if type(app) is not int or not -(1 << 31) <= app <= 0xFFFFFFFF:
            raise _fail("app_specific", app)
        self.app_specific = app & 0xFFFFFFFF
        ttrq = self.max_time_to_reach_queue
        if type(ttrq) is not int or not 0 <= ttrq <= 0xFFFFFFFF:
            self.max_time_to_reach_queue = _seconds(ttrq, "max_time_to_reach_queue")
        ttbr = self.max_time_to_receive
        if type(ttbr) is not int or not 0 <= ttbr <= 0xFFFFFFFF:
            self.max_time_to_receive = _seconds(ttbr, "max_time_to_receive")
        # [MS-MQMQ] 2.2.18.1.6: MessageClass is a u16.  Fast path: plain ints in range.
        for name, bits in _UINT_FIELDS:
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value < 1 << bits:
                _uint(value, bits, name)
        ext = self.extension
        if type(ext) is not bytes:
            converted = _opt_bytes(ext, "extension")
            self.extension = b"" if converted is None else converted
        for name in ("correlation_id", "id", "transaction_id"):
            value = getattr(self, name)
            if value is not None and type(value) is not ObjectId:
                setattr(self, name, _opt_id(value, name))
        for name in _OPT_BYTES:
            value = getattr(self, name)
            if value is not None and (type(value) is not bytes or not value):
                # An empty optional item is "not set" (on the wire a size-0 item occupies no space).
                setattr(self, name, _opt_bytes(value, name) or None)
        for name in _OPT_STR:
            value = getattr(self, name)
            if value is not None and type(value) is not str:
                _opt_str(value, name)
        # [MS-MQMQ] 2.2.20.6: ProviderName is a NUL-terminated string (a C string in the API), so it
        # cannot hold a NUL; refused here rather than when (and only if) a packet is written.
        provider = self.authentication_provider_name
        if provider is not None and "\x00" in provider:
            raise _fail("authentication_provider_name (it cannot contain NUL)", provider)
        for name in ("connector_type_guid", "source_machine_guid"):
            value = getattr(self, name)
            if value is not None and type(value) is not uuid.UUID:
                setattr(self, name, _opt_guid(value, name))
        for name in ("sent_time", "arrived_time", "last_move_time"):
            value = getattr(self, name)
            if value is not None and (type(value) not in (int, float) or value < 0):
                raise _fail(name, value)
        for name in ("is_first_in_transaction", "is_last_in_transaction"):
            if type(getattr(self, name)) is not bool:
                raise _fail(name, getattr(self, name))

    # --- derived, read-only views (MC-MQAC names)
    @property
    def body_length(self) -> int:
        """[MC-MQAC] BodyLength: the byte length of the body."""
        return len(self.body)

    @property
    def recoverable(self) -> bool:
        """True when ``delivery`` is MQMSG_DELIVERY_RECOVERABLE."""
        return self.delivery == 1

    @property
    def sender_version(self) -> int:
        """[MC-MQAC] 3.17.4.1.56 SenderVersion: always 0x10."""
        return 0x10

    def copy(self) -> Message:
        """A shallow copy (all values are immutable), made without re-validating."""
        # The instance dict holds only the values set: copying it is the whole copy.
        new: Message = _new(Message)
        new.__dict__ = self.__dict__.copy()
        return new


_FIELD_NAMES: Final = tuple(f.name for f in fields(Message))
_UINT_FIELDS: Final = (
    ("msg_class", 16),
    ("body_type", 32),
    ("hash_algorithm", 32),
    ("encrypt_algorithm", 32),
    ("authentication_provider_type", 32),
    ("received_authentication_level", 16),
    ("lookup_id", 64),
    ("abort_count", 32),
    ("move_count", 32),
)
_OPT_BYTES: Final = (
    "sender_id",
    "sender_certificate",
    "signature",
    "destination_symmetric_key",
    "compound_message",
)
_OPT_STR: Final = (
    "response_queue",
    "admin_queue",
    "dead_letter_queue",
    "destination_queue",
    "destination_format_name",
    "transaction_status_queue",
    "authentication_provider_name",
    "soap_envelope",
)


def _make_checks() -> dict[str, Callable[[object], bool]]:
    # One conservative test per property: True only when the value is already valid and normal
    # (exact type, in range), so that ``validate`` has nothing to do for it.
    checks: dict[str, str] = {
        "body": "type(v) is bytes",
        "label": "type(v) is str and len(v) <= MAXLABEL and (v.isascii() or units(v) <= MAXLABEL)",
        "priority": "type(v) is int and 0 <= v <= 7",
        "delivery": "type(v) is int and v in DELIVERIES",
        "ack": "type(v) is int and v in ACKS",
        "journal": "type(v) is int and v in JOURNALS",
        "trace": "type(v) is int and v in TRACES",
        "priv_level": "type(v) is int and v in PRIVS",
        "auth_level": "type(v) is int and v in AUTHS",
        "sender_id_type": "type(v) is int and v in SENDERIDS",
        "app_specific": "type(v) is int and 0 <= v <= 0xFFFFFFFF",
        "max_time_to_reach_queue": "type(v) is int and 0 <= v <= 0xFFFFFFFF",
        "max_time_to_receive": "type(v) is int and 0 <= v <= 0xFFFFFFFF",
        "extension": "type(v) is bytes",
        "sent_time": "v is None or (type(v) is float or type(v) is int) and v >= 0",
        "arrived_time": "v is None or (type(v) is float or type(v) is int) and v >= 0",
        "last_move_time": "v is None or (type(v) is float or type(v) is int) and v >= 0",
        "is_first_in_transaction": "type(v) is bool",
        "is_last_in_transaction": "type(v) is bool",
    }
    for name, bits in _UINT_FIELDS:
        checks[name] = f"type(v) is int and 0 <= v < {1 << bits}"
    for name in _OPT_BYTES:
        checks[name] = "v is None or (type(v) is bytes and len(v) > 0)"
    for name in _OPT_STR:
        checks[name] = "v is None or type(v) is str"
    checks["authentication_provider_name"] = "v is None or (type(v) is str and NUL not in v)"
    for name in ("correlation_id", "id", "transaction_id"):
        checks[name] = "v is None or type(v) is ObjectId"
    for name in ("connector_type_guid", "source_machine_guid"):
        checks[name] = "v is None or type(v) is UUID"
    missing = set(_FIELD_NAMES) - set(checks)
    if missing:  # pragma: no cover - a new field needs a check here
        raise AssertionError(f"no fast check for {sorted(missing)}")
    namespace: dict[str, object] = {
        "MAXLABEL": MQ_MAX_MSG_LABEL_LEN,
        "DELIVERIES": _DELIVERIES,
        "ACKS": VALID_ACK_VALUES,
        "JOURNALS": _JOURNALS,
        "TRACES": _TRACES,
        "PRIVS": _PRIV_LEVELS,
        "AUTHS": _AUTH_LEVELS,
        "SENDERIDS": _SENDERID_TYPES,
        "ObjectId": ObjectId,
        "UUID": uuid.UUID,
        "NUL": "\x00",
        "units": label_units,
    }
    return {name: eval(f"lambda v: {test}", namespace) for name, test in checks.items()}


_CHECKS: Final = _make_checks()
# Properties for which an exact type is a pass of their ``_CHECKS`` test (which also accepts None).
_EXACT_TYPES: Final[dict[str, type]] = {
    "body": bytes,
    "extension": bytes,
    "is_first_in_transaction": bool,
    "is_last_in_transaction": bool,
    "correlation_id": ObjectId,
    "id": ObjectId,
    "transaction_id": ObjectId,
    "connector_type_guid": uuid.UUID,
    "source_machine_guid": uuid.UUID,
    **{name: str for name in _OPT_STR if name != "authentication_provider_name"},
}


def _make_init() -> Callable[..., None]:
    # The dataclass signature (positional arguments in field order, then keywords), but only the
    # values passed are stored: the defaults are class attributes, so a typical message holds two or
    # three entries and ``validate``/``copy`` touch only those.  A message left at every default is
    # valid as it is.  ``body`` and ``label`` (nearly always given) are named parameters; the other
    # properties arrive in ``**props``, which costs one dict update instead of ~50 default checks.
    names = frozenset(_FIELD_NAMES)
    rest = _FIELD_NAMES[2:]
    d_body, d_label = Message.body, Message.label
    max_label = MQ_MAX_MSG_LABEL_LEN
    units = label_units

    def init(
        self: Message, body: object = d_body, label: object = d_label, *args: object, **props: object
    ) -> None:
        d = self.__dict__
        if body is not d_body:
            d["body"] = body
        if label is not d_label:
            d["label"] = label
        if not props and not args:
            # Only body and/or label: their checks in ``_CHECKS``, without the ``validate`` loop.
            if (body is d_body or type(body) is bytes) and (
                label is d_label
                or (
                    type(label) is str
                    and len(label) <= max_label
                    and (label.isascii() or units(label) <= max_label)
                )
            ):
                return
            self.validate()
            return
        if args:
            props = _positional(rest, args, props)
        if props:
            if not props.keys() <= names:
                bad = sorted(set(props) - names)[0]
                raise TypeError(f"Message.__init__() got an unexpected keyword argument {bad!r}")
            d.update(props)
        if d:
            self.validate()

    init.__name__ = "__init__"
    init.__qualname__ = "Message.__init__"
    init.__doc__ = Message.__init__.__doc__
    return init


def _positional(
    names: tuple[str, ...], args: tuple[object, ...], props: dict[str, object]
) -> dict[str, object]:
    # Positional arguments after body and label, in dataclass field order (as the generated
    # dataclass __init__ accepts them).
    if len(args) > len(names):
        raise TypeError(f"Message.__init__() takes at most {len(names) + 2} positional arguments")
    merged = dict(zip(names, args, strict=False))
    for name in props:
        if name in merged:
            raise TypeError(f"Message.__init__() got multiple values for argument {name!r}")
    merged.update(props)
    return merged


Message.__init__ = _make_init()  # type: ignore[method-assign]

# CPython 3.11+ keeps an instance's attributes inline in the object, without a dict, while their
# names are among the class's shared keys.  That table is fixed early: it takes the first names set
# on instances, and every instance created shrinks its room for new names, down to none.  The
# queue's copy of a sent message relies on it (one object instead of two for the garbage collector),
# so claim the table now, before any message exists, for the properties that send sets and the ones
# applications set most; otherwise whatever the first messages of a process carry would decide.
# Each name costs every instance a slot (8 bytes, about 4 ns to allocate), so the list is short;
# a message with other properties simply gets a dict, as every message did before.
_COMMON_PROPERTIES: Final = (
    "body",
    "label",
    "id",
    "source_machine_guid",
    "destination_queue",
    "sent_time",
    "arrived_time",
    "lookup_id",
    "priority",
    "delivery",
    "max_time_to_receive",
    "app_specific",
    "correlation_id",
    "response_queue",
)


def _claim_shared_keys() -> None:
    seed: Message = _new(Message)
    for name in _COMMON_PROPERTIES:
        setattr(seed, name, None)
    for _ in range(32):  # use up the room for names that the first messages would otherwise add
        _new(Message)


_claim_shared_keys()
