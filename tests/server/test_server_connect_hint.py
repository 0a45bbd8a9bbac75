"""``pymsmq serve`` says where it listens and how to connect (the README's run command relies on it)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path


def test_serve_prints_the_url_to_connect_to(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "pymsmq.cli", "serve", "--data", str(tmp_path / "qm"), "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        listening = proc.stdout.readline()
        hint = proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    port = re.fullmatch(r"pymsmq: listening client=127\.0\.0\.1:(\d+)\n", listening)
    assert port, listening
    assert f"pymsmq.connect('msmq://127.0.0.1:{port.group(1)}')" in hint
    assert proc.returncode == 0
