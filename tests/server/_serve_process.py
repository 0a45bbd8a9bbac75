"""Start ``pymsmq serve`` in a real subprocess on port 0 and read the port it prints."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")
SERVE = "from pymsmq.cli.serve import serve; serve()"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = SRC + os.pathsep + e.get("PYTHONPATH", "")
    return e


class ServeProcess:
    """``pymsmq serve --data DIR --port 0 ARGS...``; ``url``; ``terminate()`` returns the exit code."""

    def __init__(
        self,
        data: Path,
        *args: str,
        wrap: Callable[[list[str]], list[str]] | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        """``wrap``: turns the command into the one run (tests/small_disk.py); ``extra_env``: added."""
        argv = [
            sys.executable,
            "-c",
            SERVE,
            "--data",
            str(data),
            "--port",
            "0",
            "--log-level",
            "warning",
            *args,
        ]
        self.proc = subprocess.Popen(
            argv if wrap is None else wrap(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env(), **(extra_env or {})},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening" not in line:
            self.proc.kill()
            raise RuntimeError(
                f"server did not start: {line!r} {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        self.port = int(line.strip().rpartition(":")[2])

    @property
    def url(self) -> str:
        return f"msmq://127.0.0.1:{self.port}"

    def terminate(self, timeout: float = 30) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@contextlib.contextmanager
def serving(data: Path) -> Iterator[ServeProcess]:
    """``pymsmq serve`` on ``data``, SIGKILLed at the end: only what was durable survives it."""
    srv = ServeProcess(data)
    try:
        yield srv
    finally:
        srv.kill()
