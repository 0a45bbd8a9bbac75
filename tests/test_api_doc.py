"""Every Python example of docs/api.md runs as written (embedded, each in an empty directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _doc_examples import python_examples, run_example

DOC = Path(__file__).parents[1] / "docs" / "api.md"
EXAMPLES = python_examples(DOC)


def test_the_doc_has_examples() -> None:
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("code", EXAMPLES, ids=[f"example{i + 1}" for i in range(len(EXAMPLES))])
def test_an_example_runs_as_written(code: str, tmp_path: Path) -> None:
    run_example(code, DOC, tmp_path)
