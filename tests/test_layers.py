"""The pure layers (wire, model, protocol) do no I/O: no module of theirs imports an I/O module.

DESIGN.md: "wire, model, protocol do no I/O: no sockets, files, threads, clocks or logging.
A test enforces this (import scan)".  The arrows between layers are checked by import-linter
(``lint-imports``, configured in pyproject.toml) in the test command.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "pymsmq"
PURE_LAYERS = ("wire", "model", "protocol")
FORBIDDEN = {
    "socket",
    "asyncio",
    "threading",
    "sqlite3",
    "time",
    "os",
    "logging",
    "subprocess",
    "selectors",
    "multiprocessing",
    "concurrent",
    "shutil",
    "tempfile",
    "pathlib",
    "random",
    "io",
}


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def _pure_files() -> list[Path]:
    return [p for layer in PURE_LAYERS if (SRC / layer).exists() for p in (SRC / layer).rglob("*.py")]


def test_pure_layers_exist() -> None:
    assert (SRC / "wire").is_dir()
    assert _pure_files()


@pytest.mark.parametrize("path", _pure_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_pure_module_imports_no_io(path: Path) -> None:
    bad = _imported_roots(path) & FORBIDDEN
    assert not bad, f"{path.relative_to(SRC)} imports I/O modules {sorted(bad)}"


def test_scanner_detects_forbidden_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import os.path\nfrom socket import socket\nfrom . import sibling\n")
    assert _imported_roots(probe) & FORBIDDEN == {"os", "socket"}
