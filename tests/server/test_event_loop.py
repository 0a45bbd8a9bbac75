"""The server's event loop: uvloop when installed, asyncio's loop on request, a clear refusal when
uvloop is asked for and missing; the same protocol on both."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from _serve_process import ServeProcess
from click.testing import CliRunner, Result

from pymsmq import Message
from pymsmq.cli import main
from pymsmq.client import connect
from pymsmq.server import ConfigError, ServerConfig
from pymsmq.server.event_loop import EVENT_LOOPS, UvloopMissing, describe, loop_factory

Q = r".\private$\loops"


def serve(tmp_path: Path, loop: str) -> Result:
    return CliRunner().invoke(
        main, ["serve", "--data", str(tmp_path / "qm"), "--port", "0", "--event-loop", loop]
    )


@pytest.fixture
def no_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import uvloop`` raises ImportError, as where it is not installed."""
    monkeypatch.setitem(sys.modules, "uvloop", None)


def test_the_choices() -> None:
    assert EVENT_LOOPS == ("auto", "uvloop", "asyncio")


def test_asyncio_is_the_default_loop_of_asyncio() -> None:
    assert loop_factory("asyncio") is None
    loop = asyncio.new_event_loop()
    try:
        assert describe(loop) == "asyncio"
    finally:
        loop.close()


def test_auto_and_uvloop_make_uvloop_loops() -> None:
    uvloop = pytest.importorskip("uvloop", reason="the server extra (uvloop) is not installed")
    for choice in ("auto", "uvloop"):
        factory = loop_factory(choice)  # type: ignore[arg-type]
        assert factory is uvloop.new_event_loop
        loop = factory()
        try:
            assert isinstance(loop, uvloop.Loop)
            assert describe(loop).startswith("uvloop ") and describe(loop)[7].isdigit()
        finally:
            loop.close()


@pytest.mark.usefixtures("no_uvloop")
def test_without_uvloop_auto_falls_back_and_uvloop_is_refused() -> None:
    assert loop_factory("auto") is None
    with pytest.raises(UvloopMissing, match=r"pip install 'pymsmq\[server\]'"):
        loop_factory("uvloop")
    ServerConfig(event_loop="auto").validate()
    with pytest.raises(ConfigError, match="--event-loop uvloop: uvloop is not installed"):
        ServerConfig(event_loop="uvloop").validate()


def test_an_unknown_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="not 'trio'"):
        loop_factory("trio")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="one of auto, uvloop, asyncio, not 'trio'"):
        ServerConfig(event_loop="trio").validate()  # type: ignore[arg-type]


@pytest.mark.usefixtures("no_uvloop")
def test_serve_refuses_uvloop_when_it_is_missing(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main, ["serve", "--data", str(tmp_path / "qm"), "--port", "0", "--event-loop", "uvloop"]
    )
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)
    assert "Error: --event-loop uvloop: uvloop is not installed" in r.stderr
    assert "Traceback" not in r.stderr


def test_serve_rejects_an_unknown_event_loop(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main, ["serve", "--data", str(tmp_path / "qm"), "--port", "0", "--event-loop", "gevent"]
    )
    assert r.exit_code == 2 and "'gevent' is not one of 'auto', 'uvloop', 'asyncio'" in r.stderr


@pytest.mark.parametrize("choice", ["asyncio", "uvloop"])
def test_serve_works_the_same_on_either_loop(tmp_path: Path, choice: str) -> None:
    if choice == "uvloop":
        pytest.importorskip("uvloop", reason="the server extra (uvloop) is not installed")
    srv = ServeProcess(tmp_path / "qm", "--event-loop", choice)
    try:
        qm = connect(srv.url)
        try:
            q = qm.create_queue(Q)
            q.send_many([Message(body=b"%d" % i, delivery=i % 2) for i in range(50)])
            assert [m.body for m in q.receive_many(50, timeout=5)] == [b"%d" % i for i in range(50)]
            q.send(Message(body=b"last", delivery=1))
            assert q.receive(timeout=5).body == b"last"
            loop = qm.server_stats()["event_loop"]
            assert loop == "asyncio" if choice == "asyncio" else loop.startswith("uvloop ")
        finally:
            qm.close()
        r = CliRunner().invoke(main, ["stats", "--url", srv.url], env={"PYMSMQ_DATA": None})
        assert r.exit_code == 0, r.output
        assert f"event loop: {loop}\n" in r.stdout
        r = CliRunner().invoke(main, ["stats", "--url", srv.url, "--json"], env={"PYMSMQ_DATA": None})
        assert json.loads(r.stdout)["server"]["event_loop"] == loop
    finally:
        assert srv.terminate() == 0
