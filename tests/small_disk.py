"""A real small, full-able filesystem for tests: a tmpfs mounted in a user and mount namespace.

``unshare --user --map-root-user --mount`` gives the command a mount namespace of its own in which
it may mount a tmpfs (no root needed where unprivileged user namespaces are allowed); the network
is shared, so a server started that way is reachable on 127.0.0.1 from the test.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

_MOUNT = 'mount -t tmpfs -o size="$1" tmpfs "$0" && shift && exec "$@"'


def on_small_disk(mount: Path, size: str, argv: Sequence[str]) -> list[str]:
    """``argv`` run with a fresh tmpfs of ``size`` (e.g. ``"24m"``) mounted on directory ``mount``."""
    mount.mkdir(parents=True, exist_ok=True)
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _MOUNT, str(mount), size, *argv]


@functools.cache
def _can_mount() -> str | None:
    if shutil.which("unshare") is None:
        return "no unshare command (util-linux)"
    with tempfile.TemporaryDirectory() as d:
        try:
            r = subprocess.run(
                on_small_disk(Path(d), "1m", ["true"]), capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"unshare failed: {e}"
    return None if r.returncode == 0 else f"cannot mount a tmpfs in a user namespace: {r.stderr.strip()}"


def need_small_disk() -> None:
    """Skip (saying why) where this machine cannot mount a tmpfs in a user namespace."""
    why = _can_mount()
    if why is not None:
        pytest.skip(why)
