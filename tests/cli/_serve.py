"""A real ``pymsmq serve`` subprocess on port 0, for the CLI tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def serving(data: Path, *options: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``pymsmq serve --data DATA --port 0 OPTIONS``: yields its ``msmq://`` URL; SIGTERM at the
    end must stop it with exit code 0."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from pymsmq.cli import main; main()",
            "serve",
            "--data",
            str(data),
            "--port",
            "0",
            *options,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"client=([\d.]+):(\d+)", line)
        assert match, f"unexpected server output {line!r}"
        yield f"msmq://{match.group(1)}:{match.group(2)}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
