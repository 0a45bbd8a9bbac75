"""Queue names as the queue manager needs them: path names, the private-queue hash, format names.

* ``QueuePath``: a parsed [MS-MQMQ] 2.1.1 path name (``Computer\\QueueName``,
  ``Computer\\private$\\QueueName``, ``Computer\\system$;QueueName``, ``QueueName;Subqueue``).
* ``private_queue_hash``: the [MC-MQAC] 3.1.6.2 hash (``h = h * 33 + ord(ch)`` mod 2**32), which
  the queue manager also uses as the private queue number so that a client-side computation and
  the queue manager agree (digest D3.4 recommendation).
* ``format_name_from_path``: [MC-MQAC] 3.1.6.2 "Get Queue Format Name from Pathname".
* ``LocalFormat``: the minimal format-name parse the local queue manager needs to find a queue
  (``DIRECT=OS:``/``DIRECT=TCP:``, ``PRIVATE=``, ``PUBLIC=``, ``MACHINE=``, with ``;JOURNAL``,
  ``;DEADLETTER``, ``;DEADXACT`` or a subqueue suffix).

Decisions: the computer part is everything before the first backslash; queue names keep their case
and compare case-insensitively (``key``); the private-queue format name is rendered
``PRIVATE=<guid>\\<8 lower-case hex digits>`` ([MS-MQMQ] 2.1.4 separator, errata E2).
Queue names follow the MSMQ 2.0+ character set of [MS-MQMQ] 2.1.1 (no space, ``"+,;\\``, controls).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Final

from pymsmq.errors import FormatNameError, MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.wire.format_name import FormatName, format_name_guid
from pymsmq.wire.path_name import PathGrammar, PathName, check_subqueue

__all__ = [
    "RESERVED_SUBQUEUE_NAMES",
    "LocalFormat",
    "QueuePath",
    "format_name_from_path",
    "private_queue_hash",
    "send_access",
    "several_queues",
    "validate_subqueue_name",
]

# The 2.1.1 path grammar (computer, queue name, subqueue) lives in pymsmq.wire.path_name.
_HEX: Final = re.compile(r"[0-9A-Fa-f]{1,8}")
_SYSTEM_QUEUES: Final = ("JOURNAL", "DEADLETTER", "DEADXACT")
#: The format-name suffix words ([MS-MQMQ] 2.1 Suffix, QUEUE_SUFFIX_TYPE): no subqueue takes one of
#: these names (docs/spec-decisions.md "Names"; a subqueue named JOURNAL could not be told from the
#: queue's journal in a format name).  A path name's ``;JOURNAL`` names the queue's journal.
RESERVED_SUBQUEUE_NAMES: Final = frozenset({"JOURNAL", "DEADLETTER", "DEADXACT", "XACTONLY"})


def _bad_path(text: str, why: str) -> FormatNameError:
    return FormatNameError(
        f"illegal queue path name {quoted(text)}: {why}", HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
    )


def _bad_format(text: str, why: str) -> FormatNameError:
    return FormatNameError(f"illegal format name {quoted(text)}: {why}", HResult.MQ_ERROR_ILLEGAL_FORMATNAME)


def send_access(name: str) -> int | None:
    """The access a sender opens ``name`` with: MQ_SEND_ACCESS (2) for a multiple-element format
    name, which opens with nothing else (``several_queues``); None (the default) otherwise."""
    return 2 if "," in name else None


def several_queues(name: str, what: str) -> MSMQError:
    """MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION for ``what`` on the multiple-element format name
    ``name``, which "identifies more than one queue" ([MC-MQAC] 3.12, digest D3.5): only a send
    may use it (``pymsmq.qm.multiple_destination``)."""
    return MSMQError(
        f"{quoted(name)} names several queues (a multiple-element format name): only sends may use it,"
        f" not {what}",
        HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION,
    )


def _not_local(text: str, why: str) -> MSMQError:
    # A name LocalFormat cannot resolve: MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION when it is a
    # valid [MS-MQMQ] 2.1 format name (multiple elements, DL=, MULTICAST=, DIRECT=HTTP:, which
    # MSMQ sends to and pymsmq does not yet): an MSMQError, not a FormatNameError (the name is not
    # malformed: the CLI's exit code 1, not 2); a FormatNameError (MQ_ERROR_ILLEGAL_FORMATNAME)
    # with the grammar's own reason when it is not one at all (outside QA, 2026-11-27: valid names
    # were called illegal, then malformed ones were given the reason meant for valid ones).
    try:
        FormatName.parse(text)
    except FormatNameError as exc:
        return _bad_format(text, exc.message.removeprefix(f"{quoted(text)}: "))
    return MSMQError(
        f"format name {quoted(text)}: {why} (a valid format name this queue manager does not serve)",
        HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION,
    )


def private_queue_hash(name: str) -> int:
    """[MC-MQAC] 3.1.6.2: ``h = ((h << 5) + ord(ch) + h) mod 2**32`` over the queue name."""
    h = 0
    for ch in name:
        h = ((h << 5) + ord(ch) + h) & 0xFFFFFFFF
    return h


def validate_subqueue_name(name: str) -> str:
    """Check a subqueue name: 1-32 characters of the [MS-MQMQ] 2.1.1 Subqueue rule."""
    if not isinstance(name, str):
        raise FormatNameError(
            f"illegal subqueue name {quoted(name)}", HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
        )
    check_subqueue(name)
    if name.upper() in RESERVED_SUBQUEUE_NAMES:
        raise FormatNameError(
            f"{name} is a format-name suffix, not a subqueue name", HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
        )
    return name


@dataclass(frozen=True, slots=True)
class QueuePath:
    """A parsed queue path name.  ``kind`` is ``"public"``, ``"private"`` or ``"system"``."""

    computer: str
    kind: str
    name: str
    subqueue: str | None = None

    @classmethod
    def parse(cls, text: str) -> QueuePath:
        """Parse ``text``; raise ``FormatNameError`` with MQ_ERROR_ILLEGAL_QUEUE_PATHNAME if invalid."""
        if not isinstance(text, str):
            raise _bad_path(repr(text), "not a string")
        # [MS-MQMQ] 2.1.1 with the MSMQ 4.0 grammar (2.0 characters, optional ";Subqueue").
        try:
            path = PathName.parse(text, PathGrammar.MSMQ_4_0)
        except FormatNameError as exc:
            raise _bad_path(text, exc.message) from None
        if path.system:
            name = path.queue_name.upper()
            if name not in _SYSTEM_QUEUES:
                raise _bad_path(text, "unknown system queue")
            return cls(path.computer, "system", name)
        if path.subqueue is not None and path.subqueue.upper() in RESERVED_SUBQUEUE_NAMES - {"JOURNAL"}:
            raise _bad_path(text, f"{path.subqueue} is a format-name suffix, not a subqueue name")
        return cls(path.computer, "private" if path.private else "public", path.queue_name, path.subqueue)

    @property
    def key(self) -> str:
        """Case-insensitive identity of the queue on its computer (subqueue excluded)."""
        return f"{self.kind}:{self.name.lower()}"

    def render(self, computer: str | None = None) -> str:
        """The path text, optionally with another computer name (e.g. ``.`` expanded)."""
        machine = self.computer if computer is None else computer
        if self.kind == "system":
            return f"{machine}\\system$;{self.name}"
        middle = "private$\\" if self.kind == "private" else ""
        tail = f";{self.subqueue}" if self.subqueue is not None else ""
        return f"{machine}\\{middle}{self.name}{tail}"

    def __str__(self) -> str:
        return self.render()


def format_name_from_path(path: str, qm_guid: uuid.UUID, directory_integrated: bool = True) -> str:
    """[MC-MQAC] 3.1.6.2 Get Queue Format Name from Pathname (the private-queue hash included).

    Public paths need the directory; a queue manager without one answers MQ_ERROR_QUEUE_NOT_FOUND
    (the "DirectoryOffline" branch).  ``system$`` paths are neither public nor private:
    MQ_ERROR_ILLEGAL_QUEUE_PATHNAME.
    """
    parsed = QueuePath.parse(path)
    if parsed.kind == "system":
        raise _bad_path(path, "neither a public nor a private path name")
    if parsed.kind == "public":
        raise MSMQError(f"public queue {quoted(path)} needs the directory", HResult.MQ_ERROR_QUEUE_NOT_FOUND)
    if not directory_integrated:
        return "DIRECT=OS:" + path
    fmt = f"PRIVATE={qm_guid}\\{private_queue_hash(parsed.name):08x}"
    # "append the subqueueName at the end", with its ";" (digest D3.4).
    return fmt if parsed.subqueue is None else f"{fmt};{parsed.subqueue}"


@dataclass(frozen=True, slots=True)
class LocalFormat:
    """A format name reduced to what finds a local queue.

    ``kind``: ``"direct"`` (``computer`` + ``path``), ``"private"`` (``guid`` + ``number``),
    ``"public"`` (``guid``), ``"machine"`` (``guid``).  ``suffix``: ``""``, ``"JOURNAL"``,
    ``"DEADLETTER"`` or ``"DEADXACT"``; ``subqueue`` for the MSMQ 4.0 ``;name`` suffix.
    """

    kind: str
    suffix: str = ""
    subqueue: str | None = None
    computer: str = ""
    path: QueuePath | None = None
    guid: uuid.UUID | None = None
    number: int = 0

    @staticmethod
    def looks_like_format_name(text: str) -> bool:
        """True when ``text`` starts with a format-name keyword (``DIRECT=``, ``PRIVATE=``, ...)."""
        head = text.partition("=")[0].upper()
        return head in ("DIRECT", "PRIVATE", "PUBLIC", "MACHINE", "DL", "MULTICAST", "CONNECTOR")

    @classmethod
    def parse(cls, text: str) -> LocalFormat:
        """Parse a single-element format name; raise ``FormatNameError`` (ILLEGAL_FORMATNAME)."""
        keyword, eq, value = text.partition("=")
        keyword = keyword.upper()
        if not eq:
            raise _bad_format(text, "no '='")
        if not value:
            raise _bad_format(text, "nothing after '='")
        if "," in value:
            error = _not_local(text, "")
            raise error if isinstance(error, FormatNameError) else several_queues(text, "this operation")
        if keyword == "DIRECT":
            protocol, colon, rest = value.partition(":")
            if not colon or protocol.upper() not in ("OS", "TCP"):
                raise _not_local(text, "only DIRECT=OS: and DIRECT=TCP: name local queues")
            try:  # the [MS-MQMQ] 2.1.2 grammar first (a TCP address is a.b.c.d), as everywhere else
                FormatName.parse(text)
            except FormatNameError as exc:
                raise _bad_format(text, exc.message) from None
            computer, sep, tail = rest.partition("\\")
            suffix = ""
            if tail.lower().startswith("system$;"):
                token = tail[8:].upper()
                if token not in _SYSTEM_QUEUES:
                    raise _bad_format(text, "unknown machine queue")
                return cls("direct", token, None, computer, QueuePath(computer or ".", "system", token))
            body, semi, last = tail.rpartition(";")
            if semi and last.upper() == "JOURNAL":
                suffix, tail = "JOURNAL", body
            try:
                path = QueuePath.parse(f"{computer}\\{tail}")
            except FormatNameError as exc:
                raise _bad_format(text, exc.message) from None
            if suffix and path.subqueue is not None:
                raise _bad_format(text, "a subqueue has no journal")
            return cls("direct", suffix, path.subqueue, computer, path)
        base, semi, token = value.partition(";")
        suffix = token.upper() if semi else ""
        if keyword in ("PRIVATE", "PUBLIC", "MACHINE"):
            guid_text = base
            number = 0
            if keyword == "PRIVATE":
                guid_text, sep, hex_text = base.replace("/", "\\").partition("\\")
                if not sep or not _HEX.fullmatch(hex_text):
                    raise _bad_format(text, "PRIVATE= needs <guid>\\<1-8 hex digits>")
                number = int(hex_text, 16)
            try:  # (the grammar's own check: uuid.UUID also took misplaced hyphens)
                guid = format_name_guid(keyword, guid_text)
            except FormatNameError as exc:
                raise _bad_format(text, exc.message) from None
            subqueue: str | None = None
            if keyword == "MACHINE":
                if suffix not in _SYSTEM_QUEUES:
                    raise _bad_format(text, "MACHINE= needs ;JOURNAL, ;DEADLETTER or ;DEADXACT")
            elif semi and suffix != "JOURNAL":
                try:
                    check_subqueue(token)
                except FormatNameError:
                    raise _bad_format(text, "bad subqueue name") from None
                if suffix in RESERVED_SUBQUEUE_NAMES:
                    raise _bad_format(text, f"{token} is a format-name suffix, not a subqueue name")
                subqueue, suffix = token, ""
            return cls(keyword.lower(), suffix, subqueue, guid=guid, number=number)
        raise _not_local(text, f"{keyword}= does not name a local queue")
