"""The ``--auth`` policy file, read at start and again whenever it changes (``pymsmq serve`` looks
once a second, ``watched_files``): tokens can be added, rotated and revoked, and rights changed,
without a restart.

A changed file that cannot be read or parsed is logged once and the policy in force stays; so does
one that gives no tokens (every client would be the owner: ``Server.use_policy``).  What a new
policy changes for the connections already there (``Server.use_policy``): a connection whose token
no longer names the same identity is closed (GOODBYE MQ_ERROR_ACCESS_DENIED); rights apply to every
request checked after the change, and a queue handle keeps the access it was opened with, as MSMQ
checks a queue's security descriptor when the queue is opened ([MS-MQDMPR] 3.1.7.1.5 Open Queue).
"""

from __future__ import annotations

import logging
import os

from pymsmq.server.access import AccessPolicy
from pymsmq.server.watched_files import WatchedFiles

__all__ = ["PolicyFile"]

log = logging.getLogger("pymsmq.server")


class PolicyFile:
    """``path``, a JSON policy (``pymsmq.server.access``); ``owner_token``: ``--token``, given as well,
    which is the owner's."""

    def __init__(self, path: str, owner_token: str | bytes | None = None) -> None:
        self.path = path
        self.owner_token = owner_token
        self._file = WatchedFiles(path)

    def _read(self) -> AccessPolicy:
        mode = os.stat(self.path).st_mode & 0o777
        if mode & 0o077:  # the tokens of every identity are in it
            log.warning(
                "the --auth file %s may be read by other users (mode %o): chmod 600 it", self.path, mode
            )
        with open(self.path, encoding="utf-8") as f:
            return AccessPolicy.from_json(f.read(), self.owner_token)

    def load(self) -> AccessPolicy:
        """Read and parse the file now (``OSError``, ``ValueError`` when it cannot be used)."""
        self._file.mark()
        return self._read()

    def changed(self) -> AccessPolicy | None:
        """The file's policy if the file changed since it was last read, else None (also when the
        changed file cannot be used: logged, once for each change)."""
        if not self._file.changed():
            return None
        try:
            return self._read()
        except (OSError, ValueError) as exc:
            log.error(
                "the changed --auth file %s is not used (%s): the policy in force stays", self.path, exc
            )
            return None
