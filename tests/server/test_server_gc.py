"""``server_gc``: the server process's cyclic-GC thresholds while ``run`` serves, restored afterwards."""

from __future__ import annotations

import gc

import pytest

from pymsmq.server.app import SERVER_GC_THRESHOLDS, server_gc


def test_thresholds_inside_and_restored() -> None:
    before = gc.get_threshold()
    with server_gc():
        assert gc.get_threshold() == SERVER_GC_THRESHOLDS
        assert gc.isenabled()
    assert gc.get_threshold() == before


def test_restored_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), server_gc():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before


def test_thresholds_still_collect_cycles() -> None:
    # Cyclic garbage is still freed: the thresholds only make young collections rarer.
    assert SERVER_GC_THRESHOLDS[0] >= 700
    with server_gc():

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        del a, b
        assert gc.collect() >= 2
