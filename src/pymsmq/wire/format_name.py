"""Queue format names ([MS-MQMQ] 2.1.2-2.1.7): text <-> one frozen value per kind.

``FormatName.parse(text)`` returns a ``PublicFormatName``, ``PrivateFormatName``,
``DirectFormatName``, ``MachineFormatName``, ``ConnectorFormatName``,
``DistributionListFormatName``, ``MulticastFormatName`` or, for comma-separated text, a
``MultipleElementFormatName``; ``str(fn)`` is the canonical text and ``parse(str(fn)) == fn``.
Bad input raises ``FormatNameError`` (MQ_ERROR_ILLEGAL_FORMATNAME 0xC00E001E).

Canonical text (keywords are case-insensitive on input, ABNF quoted literals):

- ``PUBLIC=<guid>[;JOURNAL]``; ``PRIVATE=<guid>\\<8 lower-case hex digits>[;JOURNAL]``
- ``DIRECT=OS:<computer>\\[private$\\]<queue>[;JOURNAL|;<subqueue>]`` (also ``TCP:`` with an
  IPv4 address and ``IPX:<network>:<host>``); machine queues ``DIRECT=OS:<computer>\\SYSTEM$;JOURNAL``
  (``DEADLETTER``, ``DEADXACT``)
- ``DIRECT=http://<host>[:<port>]/msmq/[private$/]<queue>`` (``https``): the spelling Windows uses
  and real traffic carries; ``\\`` is accepted in place of ``/`` after ``/MSMQ`` on input
- ``MACHINE=<guid>;JOURNAL|;DEADLETTER|;DEADXACT``; ``CONNECTOR=<guid>[;XACTONLY]``;
  ``DL=<guid>[@<domain>]``; ``MULTICAST=<224-239>.<0-255>.<0-255>.<0-255>:<0-65535>``
- GUIDs as 36 lower-case hex digits and dashes, without braces (D0.3).

Decisions where the spec is silent or contradicts itself (see digest D1):

- Text must be printable ASCII: every production of 2.1 is built from %x21-7F.
- ``;JOURNAL`` after a queue is the journal suffix; any other ``;x`` is a subqueue (4.0+);
  ``DEADLETTER``, ``DEADXACT`` and ``XACTONLY`` are suffix tokens and cannot name subqueues;
  ``q;sub;JOURNAL`` is rejected (QUEUE_FORMAT has one suffix slot).
- ``PUBLIC=g;JOURNAL`` is accepted (QUEUE_FORMAT allows it; product syntax). ``MACHINE=g`` needs a
  suffix (QUEUE_FORMAT forbids m_qft=MACHINE with suffix NONE). ``CONNECTOR=g;XACTONLY`` is the token
  for QUEUE_SUFFIX_TYPE_XACTONLY.
- Multicast ports are 0-65535 and octets 0-255 without leading zeros (the evident intent of the
  garbled Port rule); the first octet is class D (224-239).
- ``,`` splits a multiple-element name everywhere, so no element may contain one (DL domains and
  direct computer names included).  An element may not be MACHINE= nor a read-only queue
  (journal, dead-letter) ([MS-MQMQ] 2.1.7).
- HTTP(S) ports are 0-65535; an empty port means the default (80/443) and is not kept.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar, Final, Self

from pymsmq.errors import quoted
from pymsmq.wire._format_name_grammar import (
    _BY_TOKEN,
    _DEADLETTER,
    _DEADXACT,
    _DOMAIN_RE,
    _HEX8_RE,
    _HTTP_DEFAULT_PORT,
    _HTTP_RE,
    _ILLEGAL,
    _JOURNAL,
    _MACHINE_SUFFIXES,
    _MULTICAST_RE,
    _NONE,
    _PRINTABLE_RE,
    _READ_ONLY,
    _SUBQUEUE,
    _TOKENS,
    _XACTONLY,
    MAX_DOMAIN_NAME,
    DirectProtocol,
    _check_address,
    _check_suffix,
    _error,
    _parse_guid,
    _split_token,
)
from pymsmq.wire.path_name import (
    PathGrammar,
    PathName,
    check_queue_name,
    check_subqueue,
)
from pymsmq.wire.queue_format import QueueSuffixType

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "MAX_DOMAIN_NAME",
    "ConnectorFormatName",
    "DirectFormatName",
    "DirectProtocol",
    "DistributionListFormatName",
    "FormatName",
    "FormatNameKind",
    "MachineFormatName",
    "MulticastFormatName",
    "MultipleElementFormatName",
    "PrivateFormatName",
    "PublicFormatName",
    "format_name_guid",
]


class FormatNameKind(StrEnum):
    """The kinds of format name ([MS-MQMQ] 2.1.2-2.1.7); values are the text keywords."""

    PUBLIC = "PUBLIC"
    PRIVATE = "PRIVATE"
    DIRECT = "DIRECT"
    MACHINE = "MACHINE"
    CONNECTOR = "CONNECTOR"
    DL = "DL"
    MULTICAST = "MULTICAST"
    MULTIPLE = "MULTIPLE"  # a comma-separated list (2.1.7); not a keyword


class FormatName:
    """A parsed queue format name; ``parse`` is the entry point for every kind.

    Properties common to every kind: ``kind``, ``is_direct``, ``is_public``, ``is_private``
    (for direct names: the queue is public/private), ``is_journal``, ``is_deadletter`` (DEADLETTER or
    DEADXACT), ``is_read_only``, ``suffix``, ``subqueue``, ``elements``, ``queue_name`` and
    ``computer`` (the latter two only for direct names, else ``None``).
    """

    __slots__ = ()
    kind: ClassVar[FormatNameKind]

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse format-name text; ``DirectFormatName.parse`` etc. also check the kind."""
        if not isinstance(text, str):
            raise _error(f"a format name is text, not {type(text).__name__}")
        if not text:
            raise _error("empty format name")
        if not _PRINTABLE_RE.fullmatch(text):
            raise _error(f"format name {quoted(text)} contains a space, control or non-ASCII character")
        value: FormatName
        if "," in text:
            value = MultipleElementFormatName(tuple(_parse_element(part) for part in text.split(",")))
        else:
            value = _parse_element(text)
        if not isinstance(value, cls):
            raise _error(f"{quoted(text)} is a {value.kind} format name, not {cls.__name__}")
        return value

    @staticmethod
    def parse_direct_id(text: str) -> DirectFormatName:
        """Parse a direct format name without its ``DIRECT=`` prefix (``OS:h\\q``, ``http://h/msmq/q``).

        This is how UserHeader and QUEUE_FORMAT.m_pDirectID carry direct names.
        """
        if not isinstance(text, str) or not _PRINTABLE_RE.fullmatch(text):
            raise _error(f"direct format name {quoted(text)} is empty or contains a non-printable character")
        return _parse_direct(text)

    # Defaults, overridden by the kinds that have them.
    @property
    def suffix(self) -> QueueSuffixType:
        """The QUEUE_SUFFIX_TYPE this name selects (NONE when there is none)."""
        return _NONE

    @property
    def subqueue(self) -> str | None:
        """The subqueue name (direct names, MSMQ 4.0+), else ``None``."""
        return None

    @property
    def queue_name(self) -> str | None:
        """The queue name of a direct format name, else ``None``."""
        return None

    @property
    def computer(self) -> str | None:
        """The computer (address) of a direct format name, else ``None``."""
        return None

    @property
    def elements(self) -> tuple[FormatName, ...]:
        """The elements of a multiple-element name; ``(self,)`` for a single name."""
        return (self,)

    @property
    def is_direct(self) -> bool:
        """True for ``DIRECT=`` names."""
        return self.kind is FormatNameKind.DIRECT

    @property
    def is_public(self) -> bool:
        """True for ``PUBLIC=`` names and direct names of public queues."""
        return self.kind is FormatNameKind.PUBLIC

    @property
    def is_private(self) -> bool:
        """True for ``PRIVATE=`` names and direct names of private queues."""
        return self.kind is FormatNameKind.PRIVATE

    @property
    def is_multiple(self) -> bool:
        """True for multiple-element names."""
        return self.kind is FormatNameKind.MULTIPLE

    @property
    def is_journal(self) -> bool:
        """True when the name selects a queue journal or a computer journal."""
        return self.suffix == _JOURNAL

    @property
    def is_deadletter(self) -> bool:
        """True when the name selects a dead-letter queue (DEADLETTER or DEADXACT)."""
        return self.suffix in (_DEADLETTER, _DEADXACT)

    @property
    def is_read_only(self) -> bool:
        """Journals and dead-letter queues: receive only, never in a multiple-element name."""
        return self.suffix in _READ_ONLY

    def __str__(self) -> str:  # pragma: no cover - every kind overrides it
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class PublicFormatName(FormatName):
    """``PUBLIC=<queue guid>[;JOURNAL]`` ([MS-MQMQ] 2.1.3)."""

    kind: ClassVar[FormatNameKind] = FormatNameKind.PUBLIC
    queue_id: uuid.UUID
    suffix: QueueSuffixType = _NONE

    def __post_init__(self) -> None:
        _check_suffix(self.suffix, frozenset((_NONE, _JOURNAL)), "a PUBLIC= format name")

    def __str__(self) -> str:
        tail = ";JOURNAL" if self.suffix == _JOURNAL else ""
        return f"PUBLIC={self.queue_id}{tail}"


@dataclass(frozen=True, slots=True)
class PrivateFormatName(FormatName):
    """``PRIVATE=<computer guid>\\<1-8 hex digits>[;JOURNAL]`` ([MS-MQMQ] 2.1.4).

    ``computer_id`` is OBJECTID.Lineage and ``queue_number`` is OBJECTID.Uniquifier.
    """

    kind: ClassVar[FormatNameKind] = FormatNameKind.PRIVATE
    computer_id: uuid.UUID
    queue_number: int
    suffix: QueueSuffixType = _NONE

    def __post_init__(self) -> None:
        if not 0 <= self.queue_number <= 0xFFFFFFFF:
            raise _error(f"private queue number {self.queue_number} is not 1-8 hex digits")
        _check_suffix(self.suffix, frozenset((_NONE, _JOURNAL)), "a PRIVATE= format name")

    def __str__(self) -> str:
        tail = ";JOURNAL" if self.suffix == _JOURNAL else ""
        return f"PRIVATE={self.computer_id}\\{self.queue_number:08x}{tail}"


@dataclass(frozen=True, slots=True)
class MachineFormatName(FormatName):
    """``MACHINE=<computer guid>;JOURNAL|;DEADLETTER|;DEADXACT`` ([MS-MQMQ] 2.1.6)."""

    kind: ClassVar[FormatNameKind] = FormatNameKind.MACHINE
    machine_id: uuid.UUID
    suffix: QueueSuffixType

    def __post_init__(self) -> None:
        # [MS-MQMQ] 2.2.7: suffix NONE: "The m_qft member MUST NOT be set to 0x04" (MACHINE).
        if self.suffix not in _MACHINE_SUFFIXES:
            raise _error("a MACHINE= format name needs ;JOURNAL, ;DEADLETTER or ;DEADXACT")

    def __str__(self) -> str:
        return f"MACHINE={self.machine_id};{_TOKENS[self.suffix]}"


@dataclass(frozen=True, slots=True)
class ConnectorFormatName(FormatName):
    """``CONNECTOR=<connector guid>[;XACTONLY]`` ([MS-MQMQ] 2.1.6, suffix from 2.2.11)."""

    kind: ClassVar[FormatNameKind] = FormatNameKind.CONNECTOR
    connector_id: uuid.UUID
    suffix: QueueSuffixType = _NONE

    def __post_init__(self) -> None:
        _check_suffix(self.suffix, frozenset((_NONE, _XACTONLY)), "a CONNECTOR= format name")

    def __str__(self) -> str:
        tail = ";XACTONLY" if self.suffix == _XACTONLY else ""
        return f"CONNECTOR={self.connector_id}{tail}"


@dataclass(frozen=True, slots=True)
class DistributionListFormatName(FormatName):
    """``DL=<group guid>[@<domain>]`` ([MS-MQMQ] 2.1.5)."""

    kind: ClassVar[FormatNameKind] = FormatNameKind.DL
    dl_id: uuid.UUID
    domain: str | None = None

    def __post_init__(self) -> None:
        d = self.domain
        if d is not None:
            if not 1 <= len(d) <= MAX_DOMAIN_NAME:
                raise _error(f"DL domain name is {len(d)} characters, 1 to {MAX_DOMAIN_NAME} allowed")
            if not _DOMAIN_RE.fullmatch(d):
                raise _error(f"DL domain name {quoted(d)} contains a character outside VCHAR, or a ','")

    def __str__(self) -> str:
        tail = f"@{self.domain}" if self.domain is not None else ""
        return f"DL={self.dl_id}{tail}"


@dataclass(frozen=True, slots=True)
class MulticastFormatName(FormatName):
    """``MULTICAST=<class D IPv4 address>:<port>`` ([MS-MQMQ] 2.1.6)."""

    kind: ClassVar[FormatNameKind] = FormatNameKind.MULTICAST
    address: str
    port: int

    def __post_init__(self) -> None:
        m = _MULTICAST_RE.fullmatch(f"{self.address}:{self.port}")
        if m is None or not isinstance(self.port, int):
            raise _error(f"multicast address {quoted(self.address)}:{self.port!r} is not a.b.c.d:port")
        octets = [int(g) for g in m.groups()[:4]]
        if any(o > 255 for o in octets):
            raise _error(f"multicast address {quoted(self.address)} has an octet above 255")
        # [MS-MQMQ] 2.1.6: dec-octet1 = 224-239 (an IPv4 class D address).
        if not 224 <= octets[0] <= 239:
            raise _error(
                f"multicast address {quoted(self.address)} is not class D (224.0.0.0-239.255.255.255)"
            )
        if not 0 <= self.port <= 0xFFFF:
            raise _error(f"multicast port {self.port} is not 0-65535")

    @property
    def address_bytes(self) -> bytes:
        """The four octets in network order."""
        return bytes(int(o) for o in self.address.split("."))

    def __str__(self) -> str:
        return f"MULTICAST={self.address}:{self.port}"


@dataclass(frozen=True, slots=True)
class DirectFormatName(FormatName):
    """``DIRECT=<protocol>:<address>\\...`` ([MS-MQMQ] 2.1.2).

    ``address`` is the computer name (OS), IPv4 address (TCP), ``network:host`` (IPX) or the host
    (HTTP/HTTPS, with ``port`` when one is given).  ``queue_name`` is ``None`` for the machine
    queues ``SYSTEM$;JOURNAL|DEADLETTER|DEADXACT`` (selected by ``suffix``).  A ``subqueue`` sets
    ``suffix`` to QUEUE_SUFFIX_TYPE_SUBQUEUE.
    """

    kind: ClassVar[FormatNameKind] = FormatNameKind.DIRECT
    protocol: DirectProtocol
    address: str
    queue_name: str | None
    private: bool = False
    suffix: QueueSuffixType = _NONE
    subqueue: str | None = None
    port: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.protocol, DirectProtocol):
            raise _error(f"unknown direct protocol {quoted(self.protocol)}")
        _check_address(self.protocol, self.address)
        if self.port is not None and (not self.protocol.is_http or not 0 <= self.port <= 0xFFFF):
            raise _error(f"port {self.port!r} is only allowed for HTTP(S), as 0-65535")
        if self.queue_name is None:
            # [MS-MQMQ] 2.1.2: MachineQueuePath = ... "\SYSTEM$;" ("JOURNAL" / "DEADLETTER" / "DEADXACT").
            if self.suffix not in _MACHINE_SUFFIXES:
                raise _error("a direct SYSTEM$ queue needs ;JOURNAL, ;DEADLETTER or ;DEADXACT")
            if self.private or self.subqueue is not None:
                raise _error("a direct SYSTEM$ queue is not private and has no subqueue")
            return
        check_queue_name(self.queue_name, PathGrammar.MSMQ_2_0, hresult=_ILLEGAL)
        lower = self.queue_name.lower()
        if not self.private and (lower in ("private$", "system$") or lower.startswith("private$/")):
            raise _error(f"{quoted(self.queue_name)} is reserved and cannot name a public queue")
        if self.subqueue is not None:
            check_subqueue(self.subqueue, hresult=_ILLEGAL)
            if self.subqueue.upper() in _BY_TOKEN:
                raise _error(f";{self.subqueue} is a suffix token, not allowed after a queue name")
            if self.suffix == _NONE:
                object.__setattr__(self, "suffix", _SUBQUEUE)
            elif self.suffix != _SUBQUEUE:
                raise _error("a direct format name has either a subqueue or ;JOURNAL, not both")
        elif self.suffix not in (_NONE, _JOURNAL):
            raise _error(f"suffix {QueueSuffixType(self.suffix).name} is not allowed after a queue name")

    @classmethod
    def from_path_name(cls, path: PathName, protocol: DirectProtocol = DirectProtocol.OS) -> DirectFormatName:
        """``DIRECT=OS:<computer>\\...`` for a path name (system path names must be a machine queue)."""
        if path.system:
            suffix = _BY_TOKEN.get(path.queue_name.upper())
            if suffix not in _MACHINE_SUFFIXES:
                raise _error(f"system queue {quoted(path.queue_name)} has no direct format name")
            return cls(protocol, path.computer, None, suffix=suffix)
        return cls(protocol, path.computer, path.queue_name, path.private, subqueue=path.subqueue)

    @property
    def computer(self) -> str:
        """The address part (computer name, IP address, IPX address or HTTP host)."""
        return self.address

    @property
    def is_public(self) -> bool:
        return self.queue_name is not None and not self.private

    @property
    def is_private(self) -> bool:
        return self.private

    @property
    def is_system(self) -> bool:
        """True for the machine queues ``SYSTEM$;JOURNAL|DEADLETTER|DEADXACT``."""
        return self.queue_name is None

    @property
    def direct_id(self) -> str:
        """The name without ``DIRECT=`` (as UserHeader and QUEUE_FORMAT.m_pDirectID carry it)."""
        return self.format_direct_id(True)

    def format_direct_id(self, with_suffix: bool) -> str:
        """The direct id, with or without its ``;JOURNAL``/``;DEADLETTER``/``;DEADXACT`` token.

        A subqueue is always kept ([MS-MQMQ] 2.2.7: m_pDirectSubqueueID contains the Subqueue).
        """
        proto = self.protocol
        if proto.is_http:
            port = f":{self.port}" if self.port is not None else ""
            head, sep = f"{proto.value.lower()}://{self.address}{port}/msmq/", "/"
        else:
            head, sep = f"{proto.value}:{self.address}\\", "\\"
        token = _TOKENS.get(self.suffix)
        if self.queue_name is None:
            return f"{head}SYSTEM$;{token}" if with_suffix else f"{head}SYSTEM$"
        path = f"private${sep}{self.queue_name}" if self.private else self.queue_name
        if self.subqueue is not None:
            return f"{head}{path};{self.subqueue}"
        if token is not None and with_suffix:
            return f"{head}{path};{token}"
        return f"{head}{path}"

    @property
    def effective_port(self) -> int | None:
        """The HTTP(S) port, with the spec defaults 80 / 443 when none is given."""
        if not self.protocol.is_http:
            return None
        return self.port if self.port is not None else _HTTP_DEFAULT_PORT[self.protocol]

    def __str__(self) -> str:
        return f"DIRECT={self.format_direct_id(True)}"


@dataclass(frozen=True, slots=True)
class MultipleElementFormatName(FormatName):
    """A comma-separated list of format names ([MS-MQMQ] 2.1.7), at least two elements."""

    kind: ClassVar[FormatNameKind] = FormatNameKind.MULTIPLE
    elements: tuple[FormatName, ...]

    def __post_init__(self) -> None:
        if len(self.elements) < 2:
            raise _error("a multiple-element format name has at least two elements")
        for e in self.elements:
            if not isinstance(e, FormatName) or isinstance(e, MultipleElementFormatName):
                raise _error(f"{e!r} cannot be an element of a multiple-element format name")
            # [MS-MQMQ] 2.1.7: FormatName = DirectName / PublicName / PrivateName /
            # DistributionListName / Connector / Multicast  (no MACHINE=).
            if isinstance(e, MachineFormatName):
                raise _error(f"{e} cannot be an element of a multiple-element format name")
            # [MS-MQMQ] 2.1.7: "cannot contain the format names of read-only queues".
            if e.is_read_only:
                raise _error(f"{e} names a read-only queue (journal or dead-letter queue)")

    def __str__(self) -> str:
        return ",".join(str(e) for e in self.elements)


# ---------------------------------------------------------------------------------------------
# Parsing


_PROTOCOLS: Final = {p.value: p for p in DirectProtocol}


def _parse_direct(body: str) -> DirectFormatName:
    proto_text, colon, rest = body.partition(":")
    protocol = _PROTOCOLS.get(proto_text.upper())
    if not colon or protocol is None:
        raise _error(
            f"direct format name {quoted(body)} does not start with TCP:, OS:, HTTP:, HTTPS: or IPX:"
        )
    port: int | None = None
    if protocol.is_http:
        m = _HTTP_RE.match(rest)
        if m is None:
            raise _error(f"{protocol} direct format name {quoted(body)} is not //host[:port]/MSMQ/queue")
        address, port_text = m.group(1), m.group(2)
        if port_text:
            if len(port_text) > 5 or int(port_text) > 0xFFFF:
                raise _error(f"HTTP port {port_text} is not 0-65535")
            port = int(port_text)
        path, seps = rest[m.end() :], "/\\"
    else:
        address, backslash, path = rest.partition("\\")
        if not backslash:
            raise _error(f"direct format name {quoted(body)} has no '\\' before the queue name")
        seps = "\\"
    _check_address(protocol, address)
    head = path[:8].lower()
    if head == "system$;":
        suffix = _BY_TOKEN.get(path[8:].upper())
        if suffix not in _MACHINE_SUFFIXES:
            raise _error(f"SYSTEM$;{path[8:]} is not SYSTEM$;JOURNAL, ;DEADLETTER or ;DEADXACT")
        return DirectFormatName(protocol, address, None, suffix=suffix, port=port)
    private = head == "private$" and path[8:9] != "" and path[8:9] in seps
    if private:
        path = path[9:]
    name, semi, tail = path.partition(";")
    suffix = _NONE
    subqueue: str | None = None
    if semi:
        if ";" in tail:
            raise _error(f"direct format name {quoted(body)} has more than one ';' suffix")
        token = _BY_TOKEN.get(tail.upper())
        if token == _JOURNAL:
            suffix = _JOURNAL
        elif token is not None:
            raise _error(f"suffix ;{tail} is only allowed after SYSTEM$ (or in CONNECTOR=)")
        else:
            subqueue = tail
    return DirectFormatName(protocol, address, name, private, suffix, subqueue, port)


#: What each keyword's GUID is called in an error ([MS-MQMQ] 2.1.2-2.1.6).
_GUID_PARTS: Final = {
    "PUBLIC": "PUBLIC= queue GUID",
    "PRIVATE": "PRIVATE= computer GUID",
    "MACHINE": "MACHINE= GUID",
    "CONNECTOR": "CONNECTOR= GUID",
    "DL": "DL= GUID",
}


def format_name_guid(keyword: str, text: str) -> uuid.UUID:
    """The GUID of a ``keyword=`` format name (``PUBLIC``, ``PRIVATE``, ...): 8-4-4-4-12 hex digits,
    no braces ([MS-MQMQ] Guid), else ``FormatNameError`` (MQ_ERROR_ILLEGAL_FORMATNAME) naming it."""
    return _parse_guid(text, _GUID_PARTS[keyword])


def _parse_public(body: str) -> FormatName:
    main, suffix = _split_token(body, frozenset((_NONE, _JOURNAL)), "a PUBLIC= format name")
    return PublicFormatName(format_name_guid("PUBLIC", main), suffix)


def _parse_private(body: str) -> FormatName:
    main, suffix = _split_token(body, frozenset((_NONE, _JOURNAL)), "a PRIVATE= format name")
    guid_text, backslash, number = main.partition("\\")
    if not backslash:
        raise _error(f"PRIVATE= format name {quoted(body)} needs <computer guid>\\<queue number>")
    guid = format_name_guid("PRIVATE", guid_text)
    if not _HEX8_RE.fullmatch(number):
        raise _error(f"private queue number {quoted(number)} is not 1-8 hex digits")
    return PrivateFormatName(guid, int(number, 16), suffix)


def _parse_machine(body: str) -> FormatName:
    main, suffix = _split_token(body, _MACHINE_SUFFIXES | {_NONE}, "a MACHINE= format name")
    return MachineFormatName(format_name_guid("MACHINE", main), suffix)


def _parse_connector(body: str) -> FormatName:
    main, suffix = _split_token(body, frozenset((_NONE, _XACTONLY)), "a CONNECTOR= format name")
    return ConnectorFormatName(format_name_guid("CONNECTOR", main), suffix)


def _parse_dl(body: str) -> FormatName:
    # [MS-MQMQ] 2.1.5: DistributionListName = "DL=" DistributionListGuid ["@" DomainName] -- no
    # suffix (a distribution list has no journal; ``DL=<g>;JOURNAL`` was blamed on its GUID).  The
    # domain name is 1*255 VCHAR, ';' included.
    guid_text, at, domain = body.partition("@")
    if ";" in guid_text:
        suffix = guid_text.partition(";")[2]
        raise _error(f"a DL= format name takes no suffix (;{suffix}): DL=<guid>[@domain]")
    guid = format_name_guid("DL", guid_text)
    if at and not domain:
        raise _error("DL= format name has '@' without a domain name")
    return DistributionListFormatName(guid, domain if at else None)


def _parse_multicast(body: str) -> FormatName:
    address, colon, port = body.rpartition(":")
    if not colon or not port.isdigit() or len(port) > 5:
        raise _error(f"MULTICAST= format name {quoted(body)} is not a.b.c.d:port")
    if port != str(int(port)):
        raise _error(f"multicast port {quoted(port)} has leading zeros")
    return MulticastFormatName(address, int(port))


_PARSERS: Final[dict[str, Callable[[str], FormatName]]] = {
    "DIRECT": _parse_direct,
    "PUBLIC": _parse_public,
    "PRIVATE": _parse_private,
    "MACHINE": _parse_machine,
    "CONNECTOR": _parse_connector,
    "DL": _parse_dl,
    "MULTICAST": _parse_multicast,
}


def _parse_element(text: str) -> FormatName:
    if not text:
        raise _error("empty element in a multiple-element format name")
    key, eq, body = text.partition("=")
    parser = _PARSERS.get(key.upper())
    if not eq or parser is None:
        keywords = "DIRECT=, PUBLIC=, PRIVATE=, DL=, MACHINE=, CONNECTOR= or MULTICAST="
        raise _error(f"{quoted(text)} does not start with {keywords}")
    return parser(body)
