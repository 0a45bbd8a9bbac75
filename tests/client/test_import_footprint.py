"""What a remote client and a remote CLI command import: not the embedded queue manager (its store,
its SQLite) nor, for a command, the other commands' modules.  A fresh interpreter each time."""

from __future__ import annotations

import json
import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_remote_client_does_not_import_the_embedded_queue_manager() -> None:
    modules = _modules_after("import pymsmq.client")
    assert not {m for m in modules if m.startswith("pymsmq.qm")}
    assert "sqlite3" not in modules


def test_a_remote_command_imports_only_its_own_module() -> None:
    modules = _modules_after(
        "from pymsmq.cli import main\ntry:\n    main(['send', '--help'])\nexcept SystemExit:\n    pass"
    )
    assert "pymsmq.cli.messages" in modules
    assert not {m for m in modules if m.startswith("pymsmq.qm")}
    assert not modules & {"pymsmq.cli.decode", "pymsmq.cli.transfer", "pymsmq.cli.serve", "pymsmq.server"}
