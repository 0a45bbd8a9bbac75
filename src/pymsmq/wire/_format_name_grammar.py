"""The lexical grammar of queue format names ([MS-MQMQ] 2.1.2-2.1.7) shared by ``format_name``.

The character classes, GUID / number / address patterns, suffix tokens and the small checks built on
them, kept apart from the value classes and their parsers in ``format_name`` (which re-exports
``MAX_DOMAIN_NAME``).  Every error is a ``FormatNameError`` with MQ_ERROR_ILLEGAL_FORMATNAME.
"""

from __future__ import annotations

import re
import uuid
from enum import StrEnum
from typing import Final

from pymsmq.errors import FormatNameError, quoted
from pymsmq.hresult import HResult
from pymsmq.wire.path_name import MAX_COMPUTER_NAME
from pymsmq.wire.queue_format import QueueSuffixType

__all__ = ["MAX_DOMAIN_NAME", "DirectProtocol"]

# [MS-MQMQ] 2.1.5: DomainName = 1*255(VCHAR).
MAX_DOMAIN_NAME: Final = 255
_ILLEGAL: Final = HResult.MQ_ERROR_ILLEGAL_FORMATNAME

# [MS-MQMQ] 2.1.3: Guid = 8HexDig %x2D 3(4HexDig %x2D) 12HexDig (HexDig letters case-insensitive).
_GUID_RE: Final = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
# [MS-MQMQ] 2.1.4: "\" 1*8HEXDIG.
_HEX8_RE: Final = re.compile(r"[0-9A-Fa-f]{1,8}")
# Printable ASCII without space (every 2.1 production uses only %x21-7F).
_PRINTABLE_RE: Final = re.compile(r"[\x21-\x7F]+")
# VCHAR (%x21-7E) without "," (list separator); direct computers also exclude "\".
_DOMAIN_RE: Final = re.compile(r"[\x21-\x2B\x2D-\x7E]+")
_OS_ADDRESS_RE: Final = re.compile(r"[\x21-\x2B\x2D-\x5B\x5D-\x7E]+")
# HTTP(S) Host: a computer name or IP address: VCHAR without / \ : , ; (the URL delimiters here).
_HTTP_HOST_RE: Final = re.compile(r"[\x21-\x2B\x2D\x2E\x30-\x39\x3C-\x5B\x5D-\x7E]+")
# [MS-MQMQ] 2.1.2 HTTP(S): "//" Host [":" Port] "/MSMQ", then the queue ("\" per ABNF, "/" in practice).
_HTTP_RE: Final = re.compile(r"//([^/\\:]*)(?::([0-9]*))?[/\\][Mm][Ss][Mm][Qq][/\\]")
_IPV4_RE: Final = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})")
# [MS-MQMQ] 2.1.2 IPX: "Network number and host number (separated by a colon)".
_IPX_RE: Final = re.compile(r"[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,12}")
# [MS-MQMQ] 2.1.6 dec-octet / Port: decimal without leading zeros.
_DEC_RE: Final = r"(0|[1-9][0-9]{0,4})"
_MULTICAST_RE: Final = re.compile(rf"{_DEC_RE}\.{_DEC_RE}\.{_DEC_RE}\.{_DEC_RE}:{_DEC_RE}")

_TOKENS: Final = {
    QueueSuffixType.QUEUE_SUFFIX_TYPE_JOURNAL: "JOURNAL",
    QueueSuffixType.QUEUE_SUFFIX_TYPE_DEADLETTER: "DEADLETTER",
    QueueSuffixType.QUEUE_SUFFIX_TYPE_DEADXACT: "DEADXACT",
    QueueSuffixType.QUEUE_SUFFIX_TYPE_XACTONLY: "XACTONLY",
}
_BY_TOKEN: Final = {token: suffix for suffix, token in _TOKENS.items()}
_NONE: Final = QueueSuffixType.QUEUE_SUFFIX_TYPE_NONE
_JOURNAL: Final = QueueSuffixType.QUEUE_SUFFIX_TYPE_JOURNAL
_DEADLETTER: Final = QueueSuffixType.QUEUE_SUFFIX_TYPE_DEADLETTER
_DEADXACT: Final = QueueSuffixType.QUEUE_SUFFIX_TYPE_DEADXACT
_XACTONLY: Final = QueueSuffixType.QUEUE_SUFFIX_TYPE_XACTONLY
_SUBQUEUE: Final = QueueSuffixType.QUEUE_SUFFIX_TYPE_SUBQUEUE
_READ_ONLY: Final = frozenset((_JOURNAL, _DEADLETTER, _DEADXACT))
_MACHINE_SUFFIXES: Final = _READ_ONLY


def _error(message: str) -> FormatNameError:
    return FormatNameError(message, _ILLEGAL)


def _parse_guid(text: str, what: str) -> uuid.UUID:
    if not _GUID_RE.fullmatch(text):
        raise _error(f"{what} {quoted(text)} is not a GUID (8-4-4-4-12 hex digits, no braces)")
    return uuid.UUID(text)


def _split_token(body: str, allowed: frozenset[QueueSuffixType], what: str) -> tuple[str, QueueSuffixType]:
    main, sep, token = body.partition(";")
    if not sep:
        return main, _NONE
    suffix = _BY_TOKEN.get(token.upper()) if token.isascii() else None
    if suffix is None:
        raise _error(f"unknown suffix ;{token} in {what}")
    if suffix not in allowed:
        raise _error(f"suffix ;{_TOKENS[suffix]} is not allowed in {what}")
    return main, suffix


def _check_suffix(suffix: QueueSuffixType, allowed: frozenset[QueueSuffixType], what: str) -> None:
    if suffix not in allowed:
        raise _error(f"suffix {QueueSuffixType(suffix).name} is not allowed in {what}")


class DirectProtocol(StrEnum):
    """[MS-MQMQ] 2.1.2: Protocol = "TCP" / "OS" / "HTTP" / "HTTPS" / "IPX"."""

    TCP = "TCP"
    OS = "OS"
    HTTP = "HTTP"
    HTTPS = "HTTPS"
    IPX = "IPX"

    @property
    def is_http(self) -> bool:
        """True for HTTP and HTTPS (the URL-shaped address specification)."""
        return self in (DirectProtocol.HTTP, DirectProtocol.HTTPS)


_HTTP_DEFAULT_PORT: Final = {DirectProtocol.HTTP: 80, DirectProtocol.HTTPS: 443}


def _check_address(protocol: DirectProtocol, address: str) -> None:
    if not isinstance(address, str) or not address:
        raise _error(f"empty {protocol} address")
    if len(address) > MAX_COMPUTER_NAME:
        raise _error(f"{protocol} address is {len(address)} characters, at most {MAX_COMPUTER_NAME}")
    if protocol is DirectProtocol.TCP:
        m = _IPV4_RE.fullmatch(address)
        if m is None or any(int(g) > 255 for g in m.groups()):
            raise _error(f"TCP address {quoted(address)} is not an IPv4 address a.b.c.d")
    elif protocol is DirectProtocol.IPX:
        if not _IPX_RE.fullmatch(address):
            raise _error(f"IPX address {quoted(address)} is not <network hex>:<host hex>")
    elif protocol is DirectProtocol.OS:
        if not _OS_ADDRESS_RE.fullmatch(address):
            raise _error(
                f"OS computer name {quoted(address)} contains a character outside VCHAR, '\\' or ','"
            )
    elif not _HTTP_HOST_RE.fullmatch(address):
        raise _error(f"HTTP host {quoted(address)} contains a character outside VCHAR or one of / \\ : , ;")
