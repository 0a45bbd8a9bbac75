"""The Python examples of README.md run as written: the embedded one in an empty directory, the
remote one against a real server (its URL put in), the wire codec's from the repository root.
(QA 2026-11-27: the remote example lacked ``import pymsmq``, the codec's used an undefined ``data``.)
The Spark sketch names a session and DataFrames of the reader's; its calls are tested in tests/spark."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _pymsmq_server import ThreadServer

sys.path.insert(0, str(Path(__file__).parents[1]))

import pymsmq
from _doc_examples import python_examples, run_example

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
EXAMPLES = python_examples(README)


def _run(code: str, where: Path) -> dict[str, object]:
    return run_example(code, README, where)


def _example(marker: str) -> str:
    found = [code for code in EXAMPLES if marker in code]
    assert len(found) == 1, marker
    return found[0]


def test_the_embedded_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(_example("pymsmq.QueueManager.open("), tmp_path)
    label, lookup_id, _ = capsys.readouterr().out.split()
    assert label == "new" and int(lookup_id) > 0


def test_the_remote_example_runs(server: ThreadServer, tmp_path: Path) -> None:
    code = _example("pymsmq.connect(")
    assert "msmq://127.0.0.1:2103" in code
    scope = _run(code.replace("msmq://127.0.0.1:2103", server.url), tmp_path)
    batch = scope["batch"]
    assert isinstance(batch, list) and [m.body for m in batch] == [b"%d" % i for i in range(1000)]
    client = scope["qm"]
    assert isinstance(client, pymsmq.client.RemoteQueueManager)
    client.close()


def test_the_wire_example_runs() -> None:
    scope = _run(_example("decode_packet("), ROOT)
    assert type(scope["pkt"]).__name__ == "UserMessage"
