"""``pymsmq.wire`` loads its submodules on first use of one of their names: every exported name
resolves, to the object its submodule defines."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pymsmq.wire


def test_every_exported_name_resolves_to_its_submodule_s_object() -> None:
    for name in pymsmq.wire.__all__:
        value = getattr(pymsmq.wire, name)
        module = pymsmq.wire._LAZY.get(name)
        if module is not None:
            assert value is getattr(importlib.import_module(module), name)
    assert set(pymsmq.wire._LAZY) | {"FormatNameError", "WireError", "propids"} == set(pymsmq.wire.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        pymsmq.wire.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_importing_one_submodule_does_not_load_the_codec() -> None:
    code = (
        "import sys; import pymsmq.wire.message_class; "
        "print(sorted(m for m in sys.modules if m.startswith('pymsmq.wire.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pymsmq.wire.message_class" in out and "pymsmq.wire.cac_transfer_buffer" not in out
