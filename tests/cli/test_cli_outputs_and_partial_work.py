"""The command line where its output cannot be written (a full disk, a closed standard output), sends
that stop part way (an error, Ctrl-C), bytes of the command line that are not text, and the error
lines and totals an operator reads (outside QA, 2026-11-28; docs/cli.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _serve import started
from click.testing import CliRunner, Result

from pymsmq import Message, QueueManager
from pymsmq.cli import main

Q = r".\private$\orders"
TX = r".\private$\tx"
EXIT_MSMQ, EXIT_USAGE, EXIT_TIMEOUT, EXIT_INTERRUPTED = 1, 2, 3, 130
_HAS_DEV_FULL = os.path.exists("/dev/full")


@pytest.fixture
def data(tmp_path: Path) -> str:
    d = str(tmp_path / "qm")
    with QueueManager.open(d) as qm:
        qm.create_queue(Q, journal=True)
        qm.create_queue(TX, transactional=True)
    return d


def run(data: str | None, *args: str, stdin: bytes | str | None = None) -> Result:
    argv = [*args] if data is None else [*args, "--data", data]
    return CliRunner().invoke(main, argv, input=stdin, env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYMSMQ_")}


def shell(script: str, *args: str | bytes) -> subprocess.CompletedProcess[str]:
    """``script`` run by bash with ``$PYMSMQ`` the command line and ``$1``... ``args``."""
    env = _env()
    env["PYMSMQ"] = f"{sys.executable} -m pymsmq.cli"
    return subprocess.run(
        ["bash", "-c", script, "bash", *args], capture_output=True, text=True, timeout=120, env=env
    )


def cli(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """``pymsmq ARGS`` in a process of its own (an argument may be bytes that are not UTF-8)."""
    argv: list[str | bytes] = [sys.executable, "-m", "pymsmq.cli", *args]
    return subprocess.run(argv, capture_output=True, timeout=120, env=_env())


def spawn(*args: str) -> subprocess.Popen[str]:
    """``pymsmq ARGS`` started in a process of its own, its output read as text."""
    argv = [sys.executable, "-m", "pymsmq.cli", *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())


def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The rest of ``proc``'s output and its errors once it ends (``communicate`` reads the pipes'
    descriptors: it would skip what an earlier ``readline`` left in the text buffer)."""
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    proc.wait(120)
    return out, err


def count(data: str, name: str = Q) -> int:
    with QueueManager.open(data) as qm, qm.queue(name) as q:
        return q.message_count


def put(data: str, n: int, name: str = Q) -> None:
    with QueueManager.open(data) as qm, qm.queue(name) as q:
        for i in range(n):
            q.send(Message(body=b"m%d" % i, delivery=1), 3 if q.transactional else None)


# ------------------------------------------------------------------ an output that cannot be written
@pytest.mark.skipif(not _HAS_DEV_FULL, reason="needs /dev/full (Linux)")
def test_a_receive_into_a_full_disk_names_the_message_it_took(data: str) -> None:
    # Only a broken pipe was handled: a full disk left a traceback, and the message received
    # outside a transaction was gone without a word.
    put(data, 1)
    with QueueManager.open(data) as qm, qm.queue(Q) as q:
        taken = q.peek(0)
    done = shell('$PYMSMQ receive --data "$1" "$2" > /dev/full', data, Q)
    assert done.returncode == EXIT_MSMQ and "Traceback" not in done.stderr
    assert "cannot write the output: No space left on device (ENOSPC)" in done.stderr
    assert f"{taken.id}" in done.stderr and f"(lookup id {taken.lookup_id}) was received but not printed" in (
        done.stderr
    )
    assert count(data) == 0


@pytest.mark.skipif(not _HAS_DEV_FULL, reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "args", [["peek", Q], ["receive", TX, "--transactional"], ["queue", "list"], ["receive", Q, "--json"]]
)
def test_a_read_or_listing_into_a_full_disk_is_one_line_and_keeps_the_messages(
    data: str, args: list[str]
) -> None:
    put(data, 2)
    put(data, 2, TX)
    done = shell('$PYMSMQ "${@:2}" --data "$1" > /dev/full', data, *args)
    assert done.returncode == EXIT_MSMQ, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "cannot write the output: No space left on device" in done.stderr
    if "--transactional" in args:
        assert (
            "the transaction was aborted, the 1 message(s) it received are back in the queue" in done.stderr
        )
        assert count(data, TX) == 2
    elif args[0] == "receive":
        assert count(data) == 1  # the one taken is named (above)
    else:
        assert count(data) == 2


@pytest.mark.parametrize("command", ["peek", "receive", "export"])
def test_a_command_started_without_a_standard_output_says_so_and_takes_nothing(
    data: str, command: str
) -> None:
    put(data, 1)
    done = shell('exec 1>&-; $PYMSMQ "$@"', command, "--data", data, Q)
    assert done.returncode == EXIT_MSMQ
    assert "Traceback" not in done.stderr
    assert "the output is closed (the command was started without a standard output)" in done.stderr
    assert count(data) == 1


# ------------------------------------------------------------------ send: bytes, and stopping part way
def test_a_body_argument_that_is_not_utf8_is_sent_as_its_bytes(data: str) -> None:
    # Latin-1 text in a UTF-8 shell ("$(cat legacy.txt)"): a UnicodeEncodeError traceback before.
    done = cli("send", "--data", data, Q, b"caf\xe9", "--recoverable")
    assert done.returncode == 0, done.stderr
    with QueueManager.open(data) as qm, qm.queue(Q) as q:
        assert q.receive(0).body == b"caf\xe9"
    refused = cli("send", "--data", data, Q, b"caf\xe9", "--encoding", "utf-16-le")
    assert refused.returncode == EXIT_USAGE and b"Traceback" not in refused.stderr
    assert b"give its bytes with --file or on standard input" in refused.stderr


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_send_count_stopped_by_a_quota_prints_what_went_in(tmp_path: Path, as_json: bool) -> None:
    # 10 of 50 in the queue, and nothing said which or how many: sending again repeated them.
    d = str(tmp_path / "qm")
    with QueueManager.open(d) as qm:
        qm.create_queue(Q, quota=1)
    body = tmp_path / "body"
    body.write_bytes(bytes(100))
    r = run(d, "send", Q, "-f", str(body), "--count", "50", "--recoverable", *(["--json"] if as_json else []))
    assert r.exit_code == EXIT_MSMQ
    assert "10 of 50 messages were sent to .\\private$\\orders, then: the quota" in r.stderr
    assert "sending again would repeat them (MQ_ERROR_INSUFFICIENT_RESOURCES 0xC00E0027)" in r.stderr
    ids = [item["id"] for item in json.loads(r.stdout)] if as_json else r.stdout.split()
    with QueueManager.open(d) as qm, qm.queue(Q) as q:
        assert sorted(ids) == sorted(str(m.id) for m in q.receive_many(100, 0))


def test_a_send_count_stopped_by_ctrl_c_says_how_many_went_in(data: str) -> None:
    proc = spawn("send", "--data", data, Q, "x", "--count", "1000000", "--recoverable")
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # the first ids are printed as their batch went in
    proc.send_signal(signal.SIGINT)
    out, err = finish(proc)
    assert proc.returncode == EXIT_INTERRUPTED, err
    sent = count(data)
    assert 0 < sent < 1_000_000
    assert len(out.split()) == sent - 1  # (the line read above)
    assert f"interrupted (Ctrl-C): {sent} of 1000000 messages were sent to" in err
    assert "sending again would repeat them" in err and "Aborted!" not in err


def test_ctrl_c_in_stats_interval_is_an_interruption(data: str) -> None:
    proc = spawn("stats", "--data", data, "--interval", "30")
    time.sleep(2.0)  # in its wait between the two samples
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED  # was click's "Aborted!", exit 1 (an MSMQ error's)
    assert "interrupted (Ctrl-C)" in err and "Aborted!" not in err


def test_a_receive_stopped_by_sigterm_names_sigterm(data: str) -> None:
    proc = spawn("receive", "--data", data, Q, "--timeout", "30")
    time.sleep(2.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_TIMEOUT
    assert "interrupted (SIGTERM) before any message came" in err


# ------------------------------------------------------------------ what an operator reads
def test_a_url_with_a_path_is_a_bad_url_not_a_bad_token() -> None:
    r = run(None, "queue", "list", "--url", "msmq://127.0.0.1:1/orders")
    assert r.exit_code == EXIT_USAGE
    assert "bad --url msmq://127.0.0.1:1/orders" in r.stderr and "bad --token" not in r.stderr


def test_an_invalid_queue_property_in_an_export_header_ends_with_the_hresult(
    data: str, tmp_path: Path
) -> None:
    put(data, 1)
    exported = tmp_path / "q.jsonl"
    assert run(data, "export", Q, "-o", str(exported)).exit_code == 0
    lines = exported.read_text().splitlines()
    header = json.loads(lines[0])
    header["queue_properties"]["quota"] = -5
    exported.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    r = run(data, "import", str(exported), r".\private$\new", "--create")
    assert r.exit_code == EXIT_USAGE
    assert r.stderr.rstrip().endswith("invalid quota: -5 (MQ_ERROR_ILLEGAL_PROPERTY_VALUE 0xC00E0018)")


def test_stats_totals_name_the_journals_they_count(data: str) -> None:
    put(data, 2)
    with QueueManager.open(data) as qm, qm.queue(Q) as q:
        q.receive(0)  # a copy goes to the queue's journal
    r = run(data, "stats", "--json")
    sample = json.loads(r.stdout)
    assert (sample["messages"], sample["journal_messages"]) == (1, 1)
    assert sample["bytes"] == 2 * 2  # b"m0" in the journal, b"m1" in the queue
    text = run(data, "stats").stdout
    assert "messages: 1  journal messages: 1  bytes: 4 (journals included)" in text


def test_json_and_body_only_together_are_bad_usage(data: str) -> None:
    put(data, 1)
    r = run(data, "peek", Q, "--json", "--body-only")
    assert r.exit_code == EXIT_USAGE and "give one of --json and --body-only" in r.stderr


def test_importing_a_system_queue_export_asks_for_the_target_queue(data: str, tmp_path: Path) -> None:
    with QueueManager.open(data) as qm, qm.queue(TX) as q:
        q.send(Message(body=b"d", journal=1), 3)
        q.purge()  # a transactional message asking for it is dead-lettered (NACK_Q_PURGED)
    exported = tmp_path / "dl.jsonl"
    assert run(data, "export", r".\SYSTEM$;DEADXACT", "-o", str(exported)).exit_code == 0
    r = run(data, "import", str(exported))
    assert r.exit_code == EXIT_USAGE
    assert "was exported from the system queue" in r.stderr and "give the target QUEUE" in r.stderr
    assert count(data, TX) == 0
    assert run(data, "import", str(exported), TX).exit_code == 0
    assert count(data, TX) == 1


def test_a_send_count_cut_by_a_lost_server_counts_what_may_have_gone_in(tmp_path: Path) -> None:
    # The sends a lost connection left unanswered were counted as not sent: 250 more messages in
    # the queue than "39000 of N were sent" said (outside QA), duplicated by sending "the rest".
    data = tmp_path / "qm"
    with QueueManager.open(data) as qm:
        qm.create_queue(Q)
    server, url = started(data)
    try:
        send = spawn("send", "--url", url, Q, "x", "--count", "2000000", "--recoverable")
        assert send.stdout is not None
        send.stdout.readline()  # the first batch is in
        time.sleep(0.5)
    finally:
        server.kill()
        server.wait(30)
    out, err = finish(send)
    assert send.returncode == EXIT_MSMQ, err
    said = re.search(
        r"(\d+) of 2000000 messages were sent to \S+"
        r"(?: \(and perhaps some of the (\d+) left unanswered when the connection was lost\))?, then: ",
        err,
    )
    assert said, err
    sent, in_doubt = int(said[1]), int(said[2] or 0)
    assert len(out.split()) + 1 == sent  # every id said sent is printed (one line was read above)
    assert sent <= count(str(data)) <= sent + in_doubt  # recoverable: answered = stored


def test_a_move_stopped_by_ctrl_c_says_what_it_moved_and_duplicates_nothing(data: str) -> None:
    # A Ctrl-C ended a move with "interrupted (Ctrl-C)" alone, and a SIGTERM between a move's copy
    # and its removal left the message in both queues: it now stops between two messages.
    with QueueManager.open(data) as qm:
        qm.create_queue(r".\private$\archive")
        with qm.queue(Q) as q:
            for start in range(0, 20_000, 1_000):
                q.send_many([Message(body=b"m%d" % i, delivery=1) for i in range(start, start + 1_000)])
    for signum in (signal.SIGINT, signal.SIGTERM):
        before = count(data, r".\private$\archive")
        proc = spawn("move", "--data", data, Q, r".\private$\archive", "--all")
        time.sleep(1.5)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
        moved = count(data, r".\private$\archive") - before
        assert proc.returncode == (130 if signum == signal.SIGINT else 143), err
        assert count(data) + count(data, r".\private$\archive") == 20_000  # none in both, none lost
        assert re.search(
            rf"moved ({moved} messages? \(lookup ids [\d, .]+\)|no message) before it stopped", err
        )
