"""Queue path names ([MS-MQMQ] 2.1.1): ``Computer\\QueueName``, ``Computer\\private$\\QueueName``,
``Computer\\system$;QueueName``, and (MSMQ 4.0+) ``QueueName;Subqueue``.

[MS-MQMQ] 2.1.1 ABNF (the spec text runs two rules together; this is the evident reading)::

    QueuePathName = Computer "\\" QueueName / Computer "\\private$\\" QueueName
                  / Computer "\\system$;" QueueName
    Computer  = 1*256(VCHAR)                 ; VCHAR = %x21-7E
    QueueName = 1*124(%x21-3A / %x3C-5B / %x5D-7F)                        ; MSMQ 1.0
    QueueName = 1*124(%x21 / %x23-2A / %x2D-3A / %x3C-5B / %x5D-7F)       ; MSMQ 2.0, 3.0
    QueueName = 1*124(%x21 / %x23-2A / %x2D-3A / %x3C-5B / %x5D-7F) [";" Subqueue]   ; 4.0-6.0
    Subqueue  = 1*32(%x21 / %x23-2A / %x2D-3A / %x3C-5B / %x5D-7F)

Decisions where the spec leaves a choice (see the project report):

- VCHAR admits ``\\``, so ``Computer`` is everything before the **first** backslash.
- ``\\system$;`` is matched before the 4.0 "queue ``system$`` with a subqueue" reading, and the
  names ``private$`` and ``system$`` are reserved: a public queue may not be called either.
- Keywords (``private$``, ``system$``) are case-insensitive (ABNF quoted literals) and render in
  lower case; computer and queue names keep their case (compare with ``canonical_key()``).
- ``.`` is the local computer (``is_local``).
- The grammar is ASCII only; anything else is rejected.

Errors raise ``FormatNameError`` with MQ_ERROR_ILLEGAL_QUEUE_PATHNAME (0xC00E0014).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from typing import Final, Self

from pymsmq.errors import FormatNameError, quoted
from pymsmq.hresult import HResult

__all__ = [
    "LOCAL_COMPUTER",
    "MAX_COMPUTER_NAME",
    "MAX_QUEUE_NAME",
    "MAX_SUBQUEUE_NAME",
    "PathGrammar",
    "PathName",
    "check_computer",
    "check_queue_name",
    "check_subqueue",
]

# [MS-MQMQ] 2.1.1: Computer = 1*256(VCHAR); QueueName = 1*124(...); Subqueue = 1*32(...).
MAX_COMPUTER_NAME: Final = 256
MAX_QUEUE_NAME: Final = 124
MAX_SUBQUEUE_NAME: Final = 32
# "." names the local computer.
LOCAL_COMPUTER: Final = "."

# [MS-MQMQ] 2.1.1 character classes.
_VCHAR_NO_BACKSLASH: Final = re.compile(r"[\x21-\x5B\x5D-\x7E]+")
_QNAME_V1: Final = re.compile(r"[\x21-\x3A\x3C-\x5B\x5D-\x7F]+")
_QNAME_V2: Final = re.compile(r"[\x21\x23-\x2A\x2D-\x3A\x3C-\x5B\x5D-\x7F]+")

_PRIVATE: Final = "private$"
_SYSTEM: Final = "system$"
_RESERVED_NAMES: Final = frozenset((_PRIVATE, _SYSTEM))


class PathGrammar(IntEnum):
    """Which [MS-MQMQ] 2.1.1 QueueName grammar applies (the product version that defines it)."""

    MSMQ_1_0 = 1  # excludes only "\" and ";"
    MSMQ_2_0 = 2  # MSMQ 2.0 and 3.0: also excludes '"', "+" and ","
    MSMQ_4_0 = 4  # MSMQ 4.0 to 6.0: the 2.0 set plus an optional ";" Subqueue


def _error(message: str, hresult: int = HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME) -> FormatNameError:
    return FormatNameError(message, hresult)


def check_computer(
    computer: str, what: str = "computer name", hresult: int = HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
) -> None:
    """Raise unless ``computer`` is 1*256 VCHAR without a backslash ([MS-MQMQ] 2.1.1)."""
    if not computer:
        raise _error(f"empty {what}", hresult)
    if len(computer) > MAX_COMPUTER_NAME:
        raise _error(f"{what} is {len(computer)} characters, at most {MAX_COMPUTER_NAME} allowed", hresult)
    if not _VCHAR_NO_BACKSLASH.fullmatch(computer):
        raise _error(
            f"{what} {quoted(computer)} contains a character outside VCHAR (%x21-7E) or a backslash", hresult
        )


def check_queue_name(
    name: str,
    grammar: PathGrammar = PathGrammar.MSMQ_4_0,
    what: str = "queue name",
    hresult: int = HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME,
) -> None:
    """Raise unless ``name`` is a QueueName (without subqueue) of ``grammar`` ([MS-MQMQ] 2.1.1)."""
    if not name:
        raise _error(f"empty {what}", hresult)
    if len(name) > MAX_QUEUE_NAME:
        raise _error(f"{what} is {len(name)} characters, at most {MAX_QUEUE_NAME} allowed", hresult)
    pattern = _QNAME_V1 if grammar == PathGrammar.MSMQ_1_0 else _QNAME_V2
    if not pattern.fullmatch(name):
        excluded = '"\\" and ";"' if grammar == PathGrammar.MSMQ_1_0 else "space, '\"', '+', ',', ';', '\\'"
        raise _error(
            f"{what} {quoted(name)} contains a forbidden character (excluded: {excluded}, non-ASCII)", hresult
        )


def check_subqueue(name: str, hresult: int = HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME) -> None:
    """Raise unless ``name`` is a Subqueue: 1*32 of the 2.0 QueueName characters ([MS-MQMQ] 2.1.1)."""
    if not name:
        raise _error("empty subqueue name", hresult)
    if len(name) > MAX_SUBQUEUE_NAME:
        raise _error(f"subqueue name is {len(name)} characters, at most {MAX_SUBQUEUE_NAME} allowed", hresult)
    if not _QNAME_V2.fullmatch(name):
        raise _error(f"subqueue name {quoted(name)} contains a forbidden character", hresult)


@dataclass(frozen=True, slots=True)
class PathName:
    """A queue path name ([MS-MQMQ] 2.1.1).

    ``private`` selects ``Computer\\private$\\QueueName``; ``system`` selects
    ``Computer\\system$;QueueName`` (``queue_name`` is then the system queue, e.g. ``DEADLETTER``);
    ``subqueue`` is the MSMQ 4.0+ ``;Subqueue`` part.  Construction validates against the
    most permissive grammar (1.0 characters, 4.0 subqueues); ``parse`` applies the chosen one.
    """

    computer: str
    queue_name: str
    private: bool = False
    system: bool = False
    subqueue: str | None = None

    def __post_init__(self) -> None:
        check_computer(self.computer)
        check_queue_name(self.queue_name, PathGrammar.MSMQ_1_0)
        if self.private and self.system:
            raise _error("a path name is private or system, not both")
        if not self.private and not self.system and self.queue_name.lower() in _RESERVED_NAMES:
            raise _error(f"{quoted(self.queue_name)} is reserved and cannot name a public queue")
        if self.subqueue is not None:
            if self.system:
                raise _error("a system queue path name has no subqueue")
            check_subqueue(self.subqueue)
            # [MS-MQMQ] 2.1.1 (4.0+): QueueName [";" Subqueue] uses the 2.0 character set.
            check_queue_name(self.queue_name, PathGrammar.MSMQ_2_0)

    @classmethod
    def parse(cls, text: str, grammar: PathGrammar = PathGrammar.MSMQ_4_0) -> Self:
        """Parse a path name; raise ``FormatNameError`` (MQ_ERROR_ILLEGAL_QUEUE_PATHNAME) if invalid."""
        if not isinstance(text, str):
            raise _error(f"a path name is text, not {type(text).__name__}")
        computer, sep, rest = text.partition("\\")
        if not sep:
            raise _error(f"path name {quoted(text)} has no backslash between computer and queue name")
        check_computer(computer)
        lower = rest[:8].lower()
        private = system = False
        if lower == "system$;":
            system = True
            rest = rest[8:]
        elif lower == "private$" and rest[8:9] == "\\":
            private = True
            rest = rest[9:]
        subqueue: str | None = None
        if not system and grammar == PathGrammar.MSMQ_4_0:
            name, sep, sub = rest.partition(";")
            if sep:
                if ";" in sub:
                    raise _error(f"path name {quoted(text)} has more than one ';'")
                check_subqueue(sub)
                rest, subqueue = name, sub
        check_queue_name(rest, grammar)
        return cls(computer, rest, private, system, subqueue)

    def __str__(self) -> str:
        if self.system:
            return f"{self.computer}\\system$;{self.queue_name}"
        middle = "private$\\" if self.private else ""
        tail = f";{self.subqueue}" if self.subqueue is not None else ""
        return f"{self.computer}\\{middle}{self.queue_name}{tail}"

    @property
    def is_local(self) -> bool:
        """True when the computer is ``.`` (the local computer)."""
        return self.computer == LOCAL_COMPUTER

    @property
    def is_private(self) -> bool:
        """True for ``Computer\\private$\\QueueName``."""
        return self.private

    @property
    def is_public(self) -> bool:
        """True for ``Computer\\QueueName``."""
        return not self.private and not self.system

    @property
    def is_system(self) -> bool:
        """True for ``Computer\\system$;QueueName``."""
        return self.system

    @property
    def parent(self) -> PathName:
        """The queue itself, without the subqueue."""
        if self.subqueue is None:
            return self
        return PathName(self.computer, self.queue_name, self.private, self.system)

    def with_computer(self, computer: str) -> PathName:
        """The same queue on another computer (e.g. to replace ``.`` by the local name)."""
        return PathName(computer, self.queue_name, self.private, self.system, self.subqueue)

    def canonical_key(self) -> str:
        """A case-insensitive comparison key (Windows compares queue names case-insensitively)."""
        return str(self).lower()
