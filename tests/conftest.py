"""Shared test configuration: Hypothesis profiles and the paths of the shipped vectors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Each SQLite store holds a disk reserve (qm/store/space_reserve.py, 32 MiB by default); the suite
# opens thousands of stores, so it holds 1 MiB each (the full-disk tests set their own).
os.environ.setdefault("PYMSMQ_DISK_RESERVE", str(1024 * 1024))

VECTORS = Path(__file__).parent / "vectors"


@pytest.fixture
def vector() -> object:
    """``vector(name)`` returns the bytes of a file in tests/vectors (copied from shared/vectors)."""

    def load(name: str) -> bytes:
        return (VECTORS / name).read_bytes()

    return load
