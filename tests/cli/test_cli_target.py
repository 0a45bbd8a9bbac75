"""What every command shares: --data / --url / env vars, exit codes, one-line errors, --help examples."""

from __future__ import annotations

import io
import shlex
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from pymsmq import HResult, MSMQError, QueueManager
from pymsmq.cli import main
from pymsmq.cli._common import (
    EXIT_MSMQ,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    BadInput,
    MSMQFailure,
    NoMessage,
    describe_hresult,
    progress,
    translate,
)
from pymsmq.errors import FormatNameError

ORDERS = r".\private$\orders"
QUEUE_COMMANDS = [
    ("queue", "create"),
    ("queue", "delete"),
    ("queue", "list"),
    ("queue", "info"),
    ("queue", "purge"),
    ("send",),
    ("receive",),
    ("peek",),
    ("move",),
    ("export",),
    ("import",),
    ("stats",),
]
ARGS = {
    ("queue", "create"): [ORDERS],
    ("queue", "delete"): [ORDERS],
    ("queue", "info"): [ORDERS],
    ("queue", "purge"): [ORDERS],
    ("send",): [ORDERS, "x"],
    ("receive",): [ORDERS],
    ("peek",): [ORDERS],
    ("move",): [ORDERS, ";p"],
    ("export",): [ORDERS],
    ("import",): ["-"],
}
CLEAN_ENV = {"PYMSMQ_DATA": None, "PYMSMQ_URL": None, "PYMSMQ_TOKEN": None}


def run(*args: str, env: dict[str, str | None] | None = None, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env={**CLEAN_ENV, **(env or {})}, input=stdin)


@pytest.mark.parametrize("command", QUEUE_COMMANDS, ids=" ".join)
def test_neither_data_nor_url_is_a_clear_usage_error(command: tuple[str, ...]) -> None:
    r = run(*command, *ARGS.get(command, []))
    assert r.exit_code == EXIT_USAGE
    assert r.stderr.strip() == (
        "Error: no queue manager: give --data DIR (embedded) or --url msmq://host:port (a server), "
        "or set PYMSMQ_DATA / PYMSMQ_URL"
    )


def _examples(*command: str) -> list[str]:
    text = run(*command, "--help").stdout.split("Example:")[1]
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if lines:
                break
            continue
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1] + line
        else:
            lines.append(line)
    return lines


@pytest.mark.parametrize("command", [(), ("send",), ("decode",)], ids=lambda c: " ".join(c) or "pymsmq")
def test_help_examples_work_as_written(
    command: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run each example line in a fresh directory, in order: `A | pymsmq ...` feeds A's output
    # (echo TEXT, cat FILE) to standard input; lines naming a server or a capture file are skipped.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "order.xml").write_text("<order/>")
    ran = 0
    for line in _examples(*command):
        if "--url" in line or "capture.bin" in line:
            continue
        stdin = None
        if " | " in line:
            feed, line = line.split(" | ", 1)
            words = shlex.split(feed)
            stdin = words[1] + "\n" if words[0] == "echo" else (tmp_path / words[1]).read_text()
        args = shlex.split(line)
        assert args[0] == "pymsmq", line
        r = CliRunner().invoke(main, args[1:], input=stdin, env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})
        assert r.exit_code == 0, (line, r.output)
        ran += 1
    assert ran >= 1


@pytest.mark.parametrize("command", [(), *QUEUE_COMMANDS, ("queue",), ("decode",)], ids=" ".join)
def test_every_command_has_help_with_an_example(command: tuple[str, ...]) -> None:
    r = run(*command, "--help")
    assert r.exit_code == 0
    assert "Example:" in r.stdout and "pymsmq " in r.stdout.split("Example:")[1]
    if command and command != ("queue",) and command != ("decode",):
        assert "Exit codes: 0 ok, 1 MSMQ error" in r.stdout
        assert "--data DIR" in r.stdout and "--url" in r.stdout


def test_root_lists_every_command() -> None:
    out = run("--help").stdout
    for name in ("queue", "send", "receive", "peek", "move", "export", "import", "stats", "decode"):
        assert f"  {name} " in out


def test_env_var_selects_the_embedded_target(tmp_path: Path) -> None:
    data = str(tmp_path / "qm")
    r = run("queue", "create", ORDERS, env={"PYMSMQ_DATA": data})
    assert r.exit_code == 0
    with QueueManager.open(data) as qm:
        assert qm.queue_exists(ORDERS)


def test_both_on_the_command_line_is_an_error(tmp_path: Path) -> None:
    r = run("queue", "list", "--data", str(tmp_path), "--url", "msmq://127.0.0.1:1")
    assert r.exit_code == EXIT_USAGE and "not both" in r.stderr


def test_command_line_beats_the_other_env_var(tmp_path: Path) -> None:
    data = str(tmp_path / "qm")
    r = run("queue", "list", "--json", "--data", data, env={"PYMSMQ_URL": "msmq://127.0.0.1:1"})
    assert r.exit_code == 0 and r.stdout.strip() == "[]"
    r = run("queue", "list", "--url", "http://x", env={"PYMSMQ_DATA": data})
    assert r.exit_code == EXIT_USAGE and "msmq://host:port" in r.stderr


@pytest.mark.parametrize(
    "url",
    ["msmq://127.0.0.1:1/extra/path", "msmq://127.0.0.1:1?token=x", "msmq://tok@127.0.0.1:1", "msmq://h#f"],
)
def test_a_url_with_more_than_host_and_port_is_bad_usage(url: str) -> None:
    # A path, a query, credentials or a fragment were dropped silently.
    r = run("queue", "list", "--url", url)
    assert r.exit_code == EXIT_USAGE and "only msmq://host[:port]" in r.stderr


def test_a_token_longer_than_a_handshake_carries_is_bad_usage_of_the_token() -> None:
    # It was reported as a bad --url (outside QA).
    r = run("queue", "list", "--url", "msmq://127.0.0.1:1", "--token", "t" * 4097)
    assert r.exit_code == EXIT_USAGE
    assert "bad --token: the token is 4097 bytes in UTF-8: at most 4096" in r.stderr


def test_both_env_vars_is_an_error(tmp_path: Path) -> None:
    r = run("queue", "list", env={"PYMSMQ_DATA": str(tmp_path), "PYMSMQ_URL": "msmq://127.0.0.1:1"})
    assert r.exit_code == EXIT_USAGE and "not both" in r.stderr


def test_unopenable_data_directory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = run("queue", "list", "--data", str(blocker / "qm"))
    assert r.exit_code == EXIT_USAGE and "cannot open the data directory" in r.stderr


def test_unreachable_server_is_an_msmq_error() -> None:
    r = run("queue", "list", "--url", "msmq://127.0.0.1:1")
    try:
        from pymsmq.client import connect  # noqa: F401
    except ImportError:
        assert r.exit_code == EXIT_USAGE and "no remote client" in r.stderr
        return
    assert r.exit_code == EXIT_MSMQ and "0xC00E" in r.stderr and len(r.stderr.splitlines()) == 1


def test_translate_picks_the_exit_code() -> None:
    assert isinstance(translate(MSMQError("t", HResult.MQ_ERROR_IO_TIMEOUT)), NoMessage)
    assert isinstance(translate(MSMQError("t", HResult.MQ_ERROR_MESSAGE_NOT_FOUND)), NoMessage)
    assert isinstance(translate(FormatNameError("bad")), BadInput)
    assert isinstance(translate(MSMQError("v", HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE)), BadInput)
    failure = translate(MSMQError("gone", HResult.MQ_ERROR_QUEUE_NOT_FOUND))
    assert isinstance(failure, MSMQFailure) and failure.exit_code == EXIT_MSMQ
    assert failure.message == "gone (MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003)"
    assert (BadInput.exit_code, MSMQFailure.exit_code, NoMessage.exit_code) == (2, 1, EXIT_TIMEOUT)


def test_describe_hresult() -> None:
    assert describe_hresult(HResult.MQ_ERROR_ACCESS_DENIED) == "MQ_ERROR_ACCESS_DENIED 0xC00E0025"
    assert describe_hresult(0x12345678) == "0x12345678"
    assert describe_hresult(-1) == "0xFFFFFFFF"


def test_decode_still_works() -> None:
    vector = Path(__file__).parents[1] / "vectors" / "mqqb-4.1.8-frame8-sessionack.bin"
    r = run("decode", str(vector))
    assert r.exit_code == 0 and r.stdout.startswith("SessionAck at offset 0")


def test_serve_is_listed_only_when_it_exists() -> None:
    names = main.list_commands(click.Context(main))
    try:
        import pymsmq.cli.serve  # noqa: F401
    except ImportError:
        assert "serve" not in names
        assert run("serve").exit_code == EXIT_USAGE
    else:
        assert "serve" in names
        assert "Example:" in run("serve", "--help").stdout


def test_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    data = str(tmp_path / "qm")
    run("queue", "create", ORDERS, "--data", data)
    run("send", ORDERS, "x", "--recoverable", "--count", "5", "--data", data)
    r = run("export", ORDERS, "--data", data)
    assert "exporting" not in r.stderr and r.stderr.strip() == "exported 5 messages"


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _TTY()
    monkeypatch.setattr(sys, "stderr", fake)
    with progress("exporting", 3) as bar:
        for _ in range(3):
            bar.update(1)
    assert "exporting" in fake.getvalue() and "3/3" in fake.getvalue()


def test_progress_is_silent_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    with progress("exporting", 3) as bar:
        bar.update(3)
    assert quiet.getvalue() == ""


def test_a_report_of_an_archive_without_messages_says_so(tmp_path: Path) -> None:
    # An archive of an empty queue (a healthy dead-letter queue) has only its checkpoint: Spark
    # failed with a traceback (UNABLE_TO_INFER_SCHEMA); now one line, exit 3, before Spark starts.
    archive = tmp_path / "archive"
    (archive / "_checkpoint" / "offsets").mkdir(parents=True)
    (archive / "_spark_metadata").mkdir()
    r = run("pipeline", "report", "--archive", str(archive), "--out", str(tmp_path / "report"))
    assert r.exit_code == 3
    assert "has no messages yet" in r.stderr and "Traceback" not in r.output
