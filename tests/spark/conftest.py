"""One SparkSession for the whole test run (local[2], UI off, UTC, 2 shuffle partitions).

Nothing here skips: the test command installs the ``spark`` extra, so a missing pyspark is a failure.
Every test in this folder that uses the ``spark`` fixture is marked ``spark``; the others are pure Python.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == HERE and "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
            # With pytest-xdist and --dist loadgroup every Spark test runs in one worker (one JVM).
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shared SparkSession."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers must use the venv interpreter
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("pymsmq-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


class MsmqServer:
    """``pymsmq serve --data DIR --port 0`` in a real subprocess (the Spark workers connect to it);
    ``kill()`` and ``start()`` again serve the same data on the same port."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = 0
        #: Held while a process starts; ``close`` takes it, so that a start a test's thread makes
        #: after the test (it failed meanwhile) starts nothing.
        self._starting = threading.Lock()
        self._closed = False
        self.start()

    def start(self) -> None:
        with self._starting:
            if not self._closed:
                self._start()

    def close(self) -> None:
        """Kill the server and start it no more."""
        with self._starting:
            self._closed = True
            if self.proc.poll() is None:
                self.kill()

    def _start(self) -> None:
        import subprocess

        env = dict(os.environ)
        src = str(HERE.parents[1] / "src")
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from pymsmq.cli.serve import serve; serve()",
                *("--data", str(self.data), "--port", str(self.port), "--log-level", "warning"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening" not in line:
            self.proc.kill()
            raise RuntimeError(f"pymsmq serve did not start: {line!r}")
        self.port = int(line.strip().rpartition(":")[2])
        self.url = f"msmq://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)

    def kill(self) -> None:
        """SIGKILL (a crash: nothing is flushed or said to the clients)."""
        self.proc.kill()
        self.proc.wait(30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture(scope="session")
def msmq_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MsmqServer]:
    """One real server for the Spark tests (each test uses its own queues)."""
    server = MsmqServer(tmp_path_factory.mktemp("msmq-server"))
    yield server
    server.stop()


@pytest.fixture()
def own_msmq_server(tmp_path: Path) -> Iterator[MsmqServer]:
    """A server of the test's own, on its own data directory: the test may kill and start it."""
    server = MsmqServer(tmp_path / "msmq-own")
    yield server
    server.close()


@pytest.fixture(scope="session")
def msmq_spark(spark: Any) -> Any:
    """The shared SparkSession with the ``msmq`` data source registered."""
    from pymsmq.spark import register

    register(spark)
    return spark
