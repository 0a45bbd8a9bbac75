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


def started(
    data: Path, *options: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``pymsmq serve --data DATA --port 0 OPTIONS`` started: the process and its ``msmq://`` URL
    (read from its listening line)."""
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
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"client=([\d.]+):(\d+)", line)
    if not match:
        proc.kill()
        proc.wait()
        raise AssertionError(f"unexpected server output {line!r}")
    return proc, f"msmq://{match.group(1)}:{match.group(2)}"


@contextmanager
def serving(data: Path, *options: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``pymsmq serve --data DATA --port 0 OPTIONS``: yields its ``msmq://`` URL; SIGTERM at the
    end must stop it with exit code 0."""
    proc, url = started(data, *options, env=env)
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
