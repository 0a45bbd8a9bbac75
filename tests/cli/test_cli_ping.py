"""``pymsmq ping``: a liveness probe of a server (exit 0 answered, 1 not, 2 a bad URL)."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

from pymsmq.cli import main
from pymsmq.server import AccessPolicy, ServerConfig


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["ping", *args], env={"PYMSMQ_URL": None, "PYMSMQ_TOKEN": None})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadServer]:
    s = ThreadServer(tmp_path / "qm", ServerConfig(port=0, policy=AccessPolicy.single_token("t0k"))).start()
    yield s
    s.stop()


def test_a_server_that_answers_is_exit_0_with_its_facts(server: ThreadServer) -> None:
    r = run("--url", server.url, "--token", "t0k")
    assert r.exit_code == 0 and r.output.startswith(f"pymsmq: {server.url} answered in "), r.output
    assert "protocol version 5" in r.output
    facts = json.loads(run("--url", server.url, "--token", "t0k", "--json").output)
    assert facts["protocol_version"] == 5 and facts["round_trip_ms"] > 0
    assert server.server is not None and facts["guid"] == str(server.server.qm.guid)


def test_a_refused_token_an_absent_or_a_silent_server_is_exit_1(server: ThreadServer) -> None:
    r = run("--url", server.url, "--token", "wrong")
    assert r.exit_code == 1 and "MQ_ERROR_ACCESS_DENIED" in r.output
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    r = run("--url", f"msmq://127.0.0.1:{port}")
    assert r.exit_code == 1 and "MQ_ERROR_SERVICE_NOT_AVAILABLE" in r.output
    with socket.socket() as silent:  # accepts connections (the kernel does) and never says hello
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        r = run("--url", f"msmq://127.0.0.1:{silent.getsockname()[1]}", "--timeout", "0.5")
        assert r.exit_code == 1 and time.monotonic() - started < 5, r.output
        assert r.output.startswith("Error: ping msmq://127.0.0.1:")


def test_a_bad_url_is_exit_2() -> None:
    r = run("--url", "http://example.com")
    assert r.exit_code == 2 and "msmq://host:port" in r.output
    assert run("--url", "msmq://h:1", "--timeout", "0").exit_code == 2
    assert "Example:" in run("--help").output
