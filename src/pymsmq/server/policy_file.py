"""The ``--auth`` policy file, read at start and again whenever it changes (``pymsmq serve`` looks
once a second): tokens can be added, rotated and revoked, and rights changed, without a restart.

A change is seen by the file's modification time, size and inode (an editor that writes a new
file and renames it over the old one is seen too).  A changed file that cannot be read or parsed
is logged once and the policy in force stays; so does one that gives no tokens while the server
listens beyond loopback (``ServerConfig.validate``'s rule).  What a new policy changes for the
connections already there (``Server.use_policy``): a connection whose token no longer names the
same identity is closed (GOODBYE MQ_ERROR_ACCESS_DENIED); rights apply to every request checked
after the change, and a queue handle keeps the access it was opened with, as MSMQ checks a queue's
security descriptor when the queue is opened ([MS-MQDMPR] 3.1.7.1.5 Open Queue).
"""

from __future__ import annotations

import logging
import os

from pymsmq.server.access import AccessPolicy

__all__ = ["PolicyFile"]

log = logging.getLogger("pymsmq.server")


class PolicyFile:
    """``path``, a JSON policy (``pymsmq.server.access``); ``owner_token``: ``--token``, given as well,
    which is the owner's."""

    def __init__(self, path: str, owner_token: str | bytes | None = None) -> None:
        self.path = path
        self.owner_token = owner_token
        self._seen: tuple[int, int, int] | None = None

    def _signature(self) -> tuple[int, int, int]:
        st = os.stat(self.path)
        if st.st_mode & 0o077:  # the tokens of every identity are in it
            log.warning(
                "the --auth file %s may be read by other users (mode %o): chmod 600 it",
                self.path,
                st.st_mode & 0o777,
            )
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def load(self) -> AccessPolicy:
        """Read and parse the file now (``OSError``, ``ValueError`` when it cannot be used)."""
        signature = self._signature()
        with open(self.path, encoding="utf-8") as f:
            policy = AccessPolicy.from_json(f.read(), self.owner_token)
        self._seen = signature
        return policy

    def changed(self) -> AccessPolicy | None:
        """The file's policy if the file changed since it was last read, else None (also when the
        changed file cannot be used: logged, once for each change)."""
        try:
            st = os.stat(self.path)
        except OSError as exc:
            if self._seen is not None:
                log.error(
                    "cannot read the --auth file %s (%s): the policy in force stays", self.path, exc.strerror
                )
                self._seen = None
            return None
        current = (st.st_mtime_ns, st.st_size, st.st_ino)
        if current == self._seen:
            return None
        try:
            return self.load()
        except (OSError, ValueError) as exc:
            self._seen = current
            log.error(
                "the changed --auth file %s is not used (%s): the policy in force stays", self.path, exc
            )
            return None
