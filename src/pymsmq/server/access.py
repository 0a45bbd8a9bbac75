"""Authentication (tokens -> identities) and per-queue rights (MQQUEUEACCESSMASK, [MS-MQMQ] 2.2.24).

The policy is a small JSON document (``pymsmq serve --auth FILE``)::

    {
      "owner": "admin",
      "tokens": {"s3cret": "admin", "t0ken": "reporting"},
      "permissions": {
        "reporting": {"private$\\\\orders": ["MQSEC_PEEK_MESSAGE", "MQSEC_GET_QUEUE_PROPERTIES"],
                      "private$\\\\audit*": "read"},
        "admin": {"*": "all"}
      }
    }

* Queue keys are path names without the computer name (``.\\`` is allowed), case-insensitive
  (``private$\\orders``, ``orders`` for a public queue, ``system$;deadletter``); an empty key or
  one naming a computer is refused (``policy_key``); ``fnmatch`` patterns are allowed and the
  most specific (exact first, then the longest pattern) wins.  ``$machine`` holds machine rights
  ([MS-MQMQ] 2.2.23 MQQMACCESSMASK), of which only MQSEC_CREATE_QUEUE is used; a pattern that
  matches ``$machine`` gives only the machine rights it names (``"all"``, MQSEC_CREATE_QUEUE).
* A policy with permissions needs tokens (without them every client is the owner).
* Rights are a number, a list of MQSEC_* names, or ``"all"`` / ``"read"`` / ``"write"`` (the
  MQSEC_QUEUE_GENERIC_* composites).
* The owner identity has every right on everything ("default: owner has all").  With no policy
  file, every authenticated client is the owner.
"""

from __future__ import annotations

import fnmatch
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.protocol.handshake import MAX_TOKEN_SIZE
from pymsmq.wire.security import MQQMAccessMask, MQQueueAccessMask

__all__ = [
    "MACHINE_KEY",
    "OWNER",
    "AccessPolicy",
    "handle_key",
    "parse_rights",
    "policy_key",
    "queue_key",
    "receive_right",
]

OWNER: Final = "owner"
MACHINE_KEY: Final = "$machine"
_Q = MQQueueAccessMask
_NAMED: Final = {
    "all": int(_Q.MQSEC_QUEUE_GENERIC_ALL) | int(MQQMAccessMask.MQSEC_CREATE_QUEUE),
    "read": int(_Q.MQSEC_QUEUE_GENERIC_READ),
    "write": int(_Q.MQSEC_QUEUE_GENERIC_WRITE),
    "none": 0,
}
_QUEUE_RIGHTS: Final = {name: int(m) for name, m in _Q.__members__.items()}
_RECEIVE: Final = int(_Q.MQSEC_RECEIVE_MESSAGE)
_JOURNAL_RECEIVE: Final = int(_Q.MQSEC_RECEIVE_JOURNAL_MESSAGE)
_MACHINE_RIGHTS: Final = {name: int(m) for name, m in MQQMAccessMask.__members__.items()}


def parse_rights(value: object) -> int:
    """A rights value from the policy file (number, MQSEC_* name list, or all/read/write/none)."""
    if isinstance(value, bool):
        raise ValueError(f"invalid rights {value!r}")
    if isinstance(value, int):
        if not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"invalid rights {value!r}")
        return value
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"invalid rights {value!r}")
    mask = 0
    for name in value:
        if not isinstance(name, str):
            raise ValueError(f"invalid right {quoted(name)}")
        if name.lower() in _NAMED:
            mask |= _NAMED[name.lower()]
        elif name in _QUEUE_RIGHTS:
            mask |= _QUEUE_RIGHTS[name]
        elif name in _MACHINE_RIGHTS:
            mask |= _MACHINE_RIGHTS[name]
        else:
            raise ValueError(f"unknown right {quoted(name)}")
    return mask


def machine_rights_of_pattern(value: object) -> int:
    """The machine rights a *pattern* entry that matches ``$machine`` gives: only those it names
    (``"all"``, MQQMACCESSMASK names).  A number, ``"write"`` or a queue right name gives none: in
    [MS-MQMQ] 2.2.23 MQSEC_CREATE_QUEUE is 0x4, the bit of MQSEC_WRITE_MESSAGE, so ``"*": "write"``
    would otherwise let an identity create queues."""
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    mask = 0
    for name in names:
        if isinstance(name, str):
            if name.lower() == "all":
                mask |= int(MQQMAccessMask.MQSEC_CREATE_QUEUE)
            elif name in _MACHINE_RIGHTS and name not in _QUEUE_RIGHTS:
                mask |= _MACHINE_RIGHTS[name]
    return mask


def policy_key(key: str) -> str:
    """A queue key of the policy file, normalised: lower case, ``.\\`` (this computer) removed.

    ``ValueError`` for a key that could never match a queue as meant: an empty one (it used to
    become ``*``, every queue) and one that names a computer (``host\\private$\\q``: queue keys
    are compared without the computer name, so it matched nothing).
    """
    k = key.strip().lower()
    if k.startswith(".\\"):
        k = k[2:]
    if not k or k == ".":
        raise ValueError(f"queue key {quoted(key)} is empty: write the queue's path name or a pattern (*)")
    if k == MACHINE_KEY or k.startswith("system$;"):
        return k
    parts = k.split("\\")
    private = [fnmatch.fnmatchcase("private$", p) for p in parts]
    if (len(parts) == 2 and not private[0]) or (len(parts) == 3 and private[1] and not private[0]):
        rest = "\\".join(parts[1:])
        raise ValueError(
            f"queue key {quoted(key)} names a computer: write the path name without it ({quoted(rest)})"
        )
    if len(parts) > 2 or not all(parts):
        raise ValueError(f"queue key {quoted(key)} is not a queue path name")
    return k


def handle_key(path_name: str) -> tuple[str, bool]:
    """The policy key of the queue a handle with ``path_name`` reads (``queue_key``), and whether
    the handle reads the queue's journal (whose receives need ``receive_right(True)``)."""
    return queue_key(path_name), path_name.upper().endswith(";JOURNAL")


def receive_right(journal: bool) -> int:
    """The right a receive needs ([MS-MQMQ] 2.2.24): MQSEC_RECEIVE_MESSAGE (DELETE | PEEK), from a
    journal MQSEC_RECEIVE_JOURNAL_MESSAGE (0x0A: DELETE_JOURNAL_MESSAGE | PEEK_MESSAGE)."""
    return _JOURNAL_RECEIVE if journal else _RECEIVE


def queue_key(path_name: str) -> str:
    """The policy key of a queue path name: lower case, no computer name, no subqueue/journal suffix."""
    tail = path_name.partition("\\")[2] if "\\" in path_name else path_name
    tail = tail.lower()
    if tail.startswith("system$;"):
        return tail
    return tail.partition(";")[0]


@dataclass(slots=True)
class AccessPolicy:
    """Who a token is and what that identity may do with each queue."""

    #: token -> identity; empty: no token needed (every client is ``owner``).
    tokens: dict[bytes, str] = field(default_factory=dict)
    #: identity -> [(queue key or pattern, rights mask)], most specific first.
    rights: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    owner: str = OWNER
    #: identity -> its machine rights (``$machine``), when the policy file set them; otherwise an
    #: exact ``$machine`` entry of ``rights`` gives them (patterns do not).
    machine: dict[str, int] = field(default_factory=dict)

    @property
    def requires_token(self) -> bool:
        """True when clients must present a known token."""
        return bool(self.tokens)

    def __post_init__(self) -> None:
        # A token no client can present (the handshake carries at most MAX_TOKEN_SIZE bytes) is a
        # configuration error: the server started and nobody could log in (outside QA).
        for token in self.tokens:
            if len(token) > MAX_TOKEN_SIZE:
                raise ValueError(
                    f"a token is {len(token)} bytes in UTF-8: at most {MAX_TOKEN_SIZE} (what a client's "
                    "handshake carries)"
                )

    @classmethod
    def single_token(cls, token: str | bytes | None) -> AccessPolicy:
        """The policy of ``--token``: that token (if any) is the owner."""
        if not token:
            return cls()
        raw = token.encode() if isinstance(token, str) else token
        return cls({raw: OWNER})

    @classmethod
    def from_json(cls, text: str, extra_token: str | bytes | None = None) -> AccessPolicy:
        """Parse a policy document (see the module docstring); ``ValueError`` if it is malformed."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("the policy must be a JSON object")
        unknown = sorted(set(data) - {"owner", "tokens", "permissions"})
        if unknown:  # a misspelt "permisions" left every identity without rights, silently
            raise ValueError(
                f"unknown member {quoted(unknown[0])}: a policy has owner, tokens and permissions"
            )
        owner = data.get("owner", OWNER)
        if not isinstance(owner, str) or not owner:
            raise ValueError("owner must be a non-empty string")
        tokens_raw = data.get("tokens", {})
        if not isinstance(tokens_raw, dict) or not all(isinstance(v, str) for v in tokens_raw.values()):
            raise ValueError("tokens must map token strings to identity names")
        # An empty token is what a client without one presents: it would let anybody in (with a
        # public bind that "requires a token" all the same); an empty identity is nobody.
        if "" in tokens_raw:
            raise ValueError("a token must not be empty")
        if "" in tokens_raw.values():
            raise ValueError("an identity name must not be empty")
        tokens = {k.encode(): v for k, v in tokens_raw.items()}
        if extra_token:
            tokens[extra_token.encode() if isinstance(extra_token, str) else extra_token] = owner
        perms = data.get("permissions", {})
        if not isinstance(perms, dict):
            raise ValueError("permissions must be an object")
        rights: dict[str, list[tuple[str, int]]] = {}
        machine: dict[str, int] = {}
        for identity, table in perms.items():
            if not isinstance(table, dict):
                raise ValueError(f"permissions of {quoted(identity)} must be an object")
            raw = [(policy_key(k), v) for k, v in table.items()]
            # Exact keys first, then patterns by decreasing length (more specific first).
            raw.sort(key=lambda e: (_is_pattern(e[0]), -len(e[0])))
            rights[identity] = [(key, parse_rights(v)) for key, v in raw]
            for key, v in raw:
                if key == MACHINE_KEY:
                    machine[identity] = parse_rights(v)
                    break
                if _is_pattern(key) and fnmatch.fnmatchcase(MACHINE_KEY, key):
                    machine[identity] = machine_rights_of_pattern(v)
                    break
        if rights and not tokens:
            raise ValueError(
                "the policy gives permissions but no tokens: every client would be the owner "
                "(add tokens, or --token)"
            )
        return cls(tokens, rights, owner, machine)

    def authenticate(self, token: bytes) -> str | None:
        """The identity of ``token`` (constant-time compare), ``owner`` when no token is needed."""
        if not self.tokens:
            return self.owner
        found = None
        for known, identity in self.tokens.items():
            if hmac.compare_digest(known, token):
                found = identity
        return found

    def rights_of(self, identity: str, key: str) -> int:
        """The rights mask ``identity`` has on the queue (or ``$machine``) ``key``."""
        if identity == self.owner:
            return 0xFFFFFFFF
        if key == MACHINE_KEY:
            given = self.machine.get(identity)
            if given is not None:
                return given
            return next((mask for k, mask in self.rights.get(identity, ()) if k == MACHINE_KEY), 0)
        for pattern, mask in self.rights.get(identity, ()):
            if pattern == key or fnmatch.fnmatchcase(key, pattern):
                return mask
        return 0

    def check(self, identity: str, key: str, needed: int, what: str) -> None:
        """Raise MQ_ERROR_ACCESS_DENIED unless ``identity`` has every bit of ``needed`` on ``key``."""
        if needed & ~self.rights_of(identity, key):
            raise MSMQError(
                f"{quoted(identity)} may not {what} {quoted(key)}", HResult.MQ_ERROR_ACCESS_DENIED
            )


def _is_pattern(key: str) -> bool:
    return any(c in key for c in "*?[")


def rights_table(policy: AccessPolicy) -> Mapping[str, list[tuple[str, int]]]:
    """The identity -> rights table (for logs and tests)."""
    return policy.rights
