"""The Python examples of a Markdown document, run as written (tests/test_api_doc.py for
docs/api.md, tests/client/test_readme_examples.py for the README)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pymsmq


def python_examples(doc: Path) -> list[str]:
    """The code of each ```python block of ``doc``."""
    return re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.DOTALL)


def run_example(code: str, doc: Path, where: Path) -> dict[str, object]:
    """Run ``code`` (from ``doc``) with ``where`` as the working directory; its globals after.
    Queue managers it left open are closed."""
    here = os.getcwd()
    os.chdir(where)
    scope: dict[str, object] = {"__name__": "doc_example"}
    try:
        exec(compile(code, str(doc), "exec"), scope)  # the project's own documentation
    finally:
        os.chdir(here)
        for value in scope.values():
            if isinstance(value, pymsmq.QueueManager):
                value.close()
    return scope
