"""Shared helpers of the benchmark commands: timing and writing one section of docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"


def rate(n: int, fn: Callable[[], object], repeat: int = 3) -> float:
    """Best of ``repeat`` runs of ``n`` calls of ``fn``, as calls per second."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return n / best


def machine() -> str:
    """One line saying where the numbers were measured."""
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return f"{python}, {os.cpu_count()} cores, {platform.machine()}"


def write_section(section: str, text: str) -> None:
    """Replace only ``section`` of docs/benchmarks.md (from its heading to the next "## ")."""
    old = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    start = old.find(section)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        end = old.find("\n## ", start + len(section))
        new = old[:start] + text + ("\n" + old[end + 1 :] if end >= 0 else "")
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(new)
