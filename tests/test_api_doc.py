"""Every Python example of docs/api.md runs as written (embedded, each in an empty directory)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import pymsmq

DOC = Path(__file__).parents[1] / "docs" / "api.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_the_doc_has_examples() -> None:
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example{i + 1}" for i in range(len(EXAMPLES))])
def test_an_example_runs_as_written(code: str, tmp_path: Path) -> None:
    here = os.getcwd()
    os.chdir(tmp_path)
    scope: dict[str, object] = {"__name__": "api_doc_example"}
    try:
        exec(compile(code, str(DOC), "exec"), scope)  # the project's own documentation
    finally:
        os.chdir(here)
        for value in scope.values():
            if isinstance(value, pymsmq.QueueManager):
                value.close()
