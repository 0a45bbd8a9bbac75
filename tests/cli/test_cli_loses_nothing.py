"""The command line loses nothing and says what it did: express imports into an embedded store, exports
over an earlier file, imports and moves that stop half way, closed pipes, closed standard input, limits
with --follow, labels that would forge output, option values and exit codes (docs/cli.md)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pymsmq import MQ_SINGLE_MESSAGE, Message, QueueManager
from pymsmq.cli import main
from pymsmq.cli._msgjson import message_to_json

Q = r".\private$\orders"
EXIT_MSMQ, EXIT_USAGE, EXIT_TIMEOUT = 1, 2, 3


@pytest.fixture
def data(tmp_path: Path) -> str:
    d = str(tmp_path / "qm")
    with QueueManager.open(d) as qm:
        qm.create_queue(Q)
    return d


def run(data: str | None, *args: str, stdin: bytes | str | None = None) -> Result:
    argv = [*args] if data is None else [*args, "--data", data]
    return CliRunner().invoke(main, argv, input=stdin, env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})


def count(data: str, name: str = Q) -> int:
    with QueueManager.open(data) as qm:
        if not qm.queue_exists(name):
            return -1
        with qm.queue(name) as q:
            return q.message_count


def export_file(path: Path, messages: list[Message], queue: str = r"vm\private$\orders") -> Path:
    lines = [
        {
            "format": "pymsmq-export",
            "version": 1,
            "queue": queue,
            "format_name": "",
            "queue_properties": {},
            "exported_at": 0,
            "removed": False,
        },
        *({"subqueue": None, "message": message_to_json(m)} for m in messages),
        {"end": True, "count": len(messages)},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def cli(*args: str, stdin_closed: bool = False) -> subprocess.CompletedProcess[str]:
    """``pymsmq ARGS`` in a process of its own (``stdin_closed``: with file descriptor 0 closed)."""
    command = [sys.executable, "-m", "pymsmq.cli", *args]
    if stdin_closed:
        command = ["bash", "-c", 'exec 0<&-; exec "$@"', "bash", *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYMSMQ_")}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


# ---------------------------------------------------------------------------- import


def test_importing_express_messages_into_an_embedded_store_is_refused_unless_made_recoverable(
    data: str, tmp_path: Path
) -> None:
    # They lived in the command's memory only: "imported 4 messages", and 3 were gone.
    f = export_file(
        tmp_path / "x.jsonl", [Message(body=b"e%d" % i) for i in range(3)] + [Message(delivery=1)]
    )
    r = run(data, "import", str(f))
    assert r.exit_code == EXIT_USAGE
    assert "3 of the 4 messages are express" in r.output and "--recoverable" in r.output
    assert count(data) == 0
    r = run(data, "import", str(tmp_path / "x.jsonl"), r".\private$\new", "--create")
    assert r.exit_code == EXIT_USAGE and count(data, r".\private$\new") == -1  # not even created
    r = run(data, "import", str(f), "--recoverable")
    assert r.exit_code == 0, r.output
    with QueueManager.open(data) as qm, qm.queue(Q) as q:  # after the command's queue manager closed
        got = q.receive_many(10, timeout=0)
    assert sorted(m.body for m in got) == [b"", b"e0", b"e1", b"e2"]
    assert {m.delivery for m in got} == {1}


def test_a_file_with_a_message_no_send_would_take_is_refused_before_anything_is_sent(
    data: str, tmp_path: Path
) -> None:
    # docs/cli.md: "import checks the whole file first, then sends"; the queue-name members were
    # checked only when sent, so the first messages went in and the command then said "malformed".
    bad = Message(delivery=1)
    good = [Message(body=b"%d" % i, delivery=1) for i in range(3)]
    f = export_file(tmp_path / "bad.jsonl", good)
    lines = f.read_text().splitlines()
    record = json.loads(lines[3])
    record["message"] = {**message_to_json(bad), "response_queue": "not a format name"}
    lines[3] = json.dumps(record)
    f.write_text("\n".join(lines) + "\n")
    r = run(data, "import", str(f))
    assert r.exit_code == EXIT_USAGE
    assert "message 3" in r.output and "MQ_ERROR_ILLEGAL_FORMATNAME" in r.output
    assert count(data) == 0


def test_an_import_that_stops_half_way_says_how_many_went_in(data: str, tmp_path: Path) -> None:
    assert run(data, "queue", "create", r".\private$\small", "--quota", "1").exit_code == 0  # 1 KB
    f = export_file(tmp_path / "big.jsonl", [Message(body=b"x" * 300, delivery=1) for _ in range(6)])
    r = run(data, "import", str(f), r".\private$\small")
    assert r.exit_code == EXIT_MSMQ
    assert "3 of 6 messages were imported into" in r.output
    assert count(data, r".\private$\small") == 3


def test_import_from_a_closed_standard_input_is_a_clear_error(data: str) -> None:
    for args in (["import", "--data", data, "-"], ["send", "--data", data, Q], ["decode", "-"]):
        done = cli(*args, stdin_closed=True)
        assert done.returncode == EXIT_USAGE, done.stderr
        assert "cannot read standard input" in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------------------- export


def test_a_failed_export_leaves_an_earlier_file_as_it_was(data: str, tmp_path: Path) -> None:
    out = tmp_path / "keep.jsonl"
    assert run(data, "send", Q, "one", "--recoverable").exit_code == 0
    assert run(data, "export", Q, "-o", str(out)).exit_code == 0
    out.chmod(0o640)
    before = out.read_bytes()
    assert run(data, "export", r".\private$\typo", "-o", str(out)).exit_code == EXIT_MSMQ
    assert run(data, "export", "bad name", "-o", str(out)).exit_code == EXIT_USAGE
    assert out.read_bytes() == before  # it was emptied before the queue was even opened
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    assert run(data, "send", Q, "two", "--recoverable").exit_code == 0
    assert run(data, "export", Q, "-o", str(out)).exit_code == 0
    assert out.read_text().count('"message"') == 2  # a good export does replace it
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


# ---------------------------------------------------------------------------- receive, peek, move


def test_receive_with_follow_stops_after_n(data: str) -> None:
    assert run(data, "send", Q, "m", "--recoverable", "--count", "10").exit_code == 0
    r = run(data, "receive", Q, "-n", "2", "--follow", "--timeout", "0.5", "--json")
    assert r.exit_code == 0
    assert len(r.stdout.splitlines()) == 2
    assert count(data) == 8  # -n was ignored: all 10 were removed


def test_a_closed_output_pipe_is_reported_as_such(data: str) -> None:
    assert run(data, "send", Q, "m", "--recoverable", "--count", "3000").exit_code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "pymsmq.cli", "peek", "--data", data, Q, "-n", "3000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read()
    assert proc.wait(60) == EXIT_MSMQ
    assert "the output was closed" in err
    assert "cannot reach the queue manager" not in err and "Traceback" not in err
    assert count(data) == 3000


def test_a_move_that_stops_half_way_says_what_it_moved(data: str) -> None:
    assert run(data, "send", Q, "m", "--recoverable", "--count", "2").exit_code == 0
    with QueueManager.open(data) as qm, qm.queue(Q) as q:
        first = q.peek(0).lookup_id
    r = run(data, "move", Q, ";poison", "--lookup-id", str(first), "--lookup-id", str(first))
    assert r.exit_code == EXIT_TIMEOUT
    assert f"moved 1 message (lookup ids {first}), then:" in r.output


def test_moving_a_queue_to_itself_is_bad_usage(data: str) -> None:
    assert run(data, "send", Q, "m", "--recoverable").exit_code == 0
    r = run(data, "move", Q, ";")
    assert r.exit_code == EXIT_USAGE and "same queue" in r.output


def test_a_label_cannot_forge_fields_of_the_text_output(data: str) -> None:
    assert run(data, "send", Q, "b", "--recoverable", "--label", "evil\nlookup_id: 999").exit_code == 0
    r = run(data, "peek", Q)
    assert r.exit_code == 0
    assert [line for line in r.stdout.splitlines() if line.startswith("lookup_id")] == ["lookup_id: 1"]
    assert "label: evil\\nlookup_id: 999" in r.stdout
    assert run(data, "queue", "create", r".\private$\lbl", "--label", "two\nlines").exit_code == 0
    listing = run(data, "queue", "list").stdout
    assert "two\\nlines" in listing and "\nlines" not in listing


# ---------------------------------------------------------------------------- values and exit codes


@pytest.mark.parametrize(
    "args",
    [
        ["queue", "list", "--url", "msmq://"],
        ["queue", "list", "--url", "msmq://127.0.0.1:99999"],
        ["receive", Q, "--timeout", "nan", "--data", "{data}"],
        ["queue", "delete", "garbage", "--if-exists", "--data", "{data}"],
        ["queue", "list", "--private", "--public", "--data", "{data}"],
        ["send", Q, "--file", "{file}", "--encoding", "utf-16-le", "--data", "{data}"],
        ["send", Q, "x", "--dead-letter-queue", "not a queue", "--data", "{data}"],
    ],
    ids=[
        "url without host",
        "port out of range",
        "nan timeout",
        "malformed name",
        "two kinds",
        "encoding",
        "dlq",
    ],
)
def test_bad_values_are_bad_usage(data: str, tmp_path: Path, args: list[str]) -> None:
    body = tmp_path / "body"
    body.write_bytes(b"raw")
    argv = [a.format(data=data, file=body) for a in args]
    r = CliRunner().invoke(main, argv, env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})
    assert r.exit_code == EXIT_USAGE, r.output
    assert count(data) == 0


def test_delete_if_exists_forgives_only_a_missing_queue(data: str) -> None:
    assert run(data, "queue", "delete", r".\private$\missing", "--if-exists").exit_code == 0
    assert run(data, "queue", "delete", r".\private$\missing").exit_code == EXIT_MSMQ


def test_subqueue_messages_count_in_bytes_not_in_messages(data: str) -> None:
    assert run(data, "send", Q, "abcd", "--recoverable", "--count", "2").exit_code == 0
    assert run(data, "move", Q, ";poison", "--all").exit_code == 0
    info = json.loads(run(data, "queue", "info", Q, "--json").stdout)
    assert (info["messages"], info["bytes"], info["subqueues"]) == (0, 8, {"poison": 2})


def test_export_through_a_link_writes_its_target_and_keeps_the_link(data: str, tmp_path: Path) -> None:
    # The temporary file renamed over a link replaced the link (and /dev/stdout with it, as root).
    assert run(data, "send", Q, "one", "--recoverable").exit_code == 0
    target = tmp_path / "target.jsonl"
    target.write_text("OLD\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert run(data, "export", Q, "-o", str(link)).exit_code == 0
    assert link.is_symlink() and '"end":true' in target.read_text()


def test_an_export_that_cannot_write_is_a_clear_error_and_removes_nothing(data: str) -> None:
    assert run(data, "send", Q, "m", "--recoverable", "--count", "300").exit_code == 0
    done = cli("export", "--data", data, Q, "--remove", "-o", "/dev/full")
    assert done.returncode == EXIT_USAGE
    assert "cannot write /dev/full" in done.stderr and "Traceback" not in done.stderr
    assert count(data) == 300


def _big_messages(data: str, name: str, n: int, transactional: bool = False) -> None:
    with QueueManager.open(data) as qm:
        q = qm.queue(name) if qm.queue_exists(name) else qm.create_queue(name, transactional=transactional)
        with q:
            for i in range(n):
                body = bytes([65 + i]) * 1_000_000  # 1.3 MB of JSON: the pipe holds 64 KiB
                if transactional:
                    q.send(Message(body=body, label=f"m{i}"), MQ_SINGLE_MESSAGE)
                else:
                    q.send(Message(body=body, label=f"m{i}", delivery=1))


def _receive_interrupted(data: str, name: str, signals: int, *extra: str) -> tuple[int, list[str], str]:
    # The command is blocked writing the first message into a pipe nobody reads; Ctrl-C arrives.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYMSMQ_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pymsmq.cli", "receive", "--data", data, name, "-n", "3", "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    head = proc.stdout.read(100)  # the first message is being printed
    for _ in range(signals):
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
    rest = proc.stdout.read()
    err = proc.stderr.read().decode()
    return proc.wait(60), (head + rest).decode().splitlines(), err


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
def test_ctrl_c_while_a_message_is_printed_lets_the_print_end(data: str, transactional: bool) -> None:
    # The interrupt was swallowed wherever it landed: a message half printed (or not at all) was
    # received for good, the transaction committed it, and the command said "no message" (exit 3).
    name = r".\private$\tx" if transactional else Q
    _big_messages(data, name, 3, transactional)
    code, lines, err = _receive_interrupted(data, name, 1, *(["--transactional"] if transactional else []))
    assert code == 0, err
    assert len(lines) == 1 and json.loads(lines[0])["label"] == "m0"  # printed whole
    assert count(data, name) == 2  # the two not taken are still there


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
def test_a_second_ctrl_c_interrupts_the_print_and_says_what_it_cost(data: str, transactional: bool) -> None:
    name = r".\private$\tx" if transactional else Q
    _big_messages(data, name, 3, transactional)
    code, _, err = _receive_interrupted(data, name, 2, *(["--transactional"] if transactional else []))
    assert code == EXIT_MSMQ
    assert "Traceback" not in err
    if transactional:
        assert "the transaction was aborted" in err
        assert count(data, name) == 3  # nothing committed
    else:
        assert "was received but not printed" in err and "(lookup id 1)" in err
        assert count(data, name) == 2


def _ids(data: str, name: str) -> list[str]:
    with QueueManager.open(data) as qm, qm.queue(name) as q:
        cursor = q.cursor()
        out: list[str] = []
        try:
            out.append(str(cursor.peek_current(0).id))
            while True:
                out.append(str(cursor.peek_next(0).id))
        except Exception:
            return out


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "transactional"])
def test_two_quick_ctrl_c_during_follow_lose_nothing(data: str, tmp_path: Path, transactional: bool) -> None:
    # Two SIGINTs a few ms apart while `receive --follow` prints to a file: the second one, landing
    # between messages, inside a receive or while committing, took a message that was neither printed
    # nor named (4 of 6 rounds), or a committed transaction was reported as "committer failure" or
    # "Aborted!" (QA, 2026-11-26).  Every message removed is printed whole or named.
    name = r".\private$\tx" if transactional else Q
    body = b"x" * 50_000
    with QueueManager.open(data) as qm:
        if transactional:
            qm.create_queue(name, transactional=True).close()
        q = qm.queue(name)
        for _ in range(150):
            q.send(Message(body=body, delivery=1), MQ_SINGLE_MESSAGE if transactional else None)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYMSMQ_")}
    for round_ in range(4):
        before = _ids(data, name)
        out = tmp_path / f"out{round_}.jsonl"
        args = ["receive", "--data", data, name, "--follow", "--timeout", "2", "--json"]
        with open(out, "wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pymsmq.cli", *args, *(["--transactional"] if transactional else [])],
                stdout=sink,
                stderr=subprocess.PIPE,
                env=env,
            )
            deadline = time.monotonic() + 60
            while out.stat().st_size < 150_000 * (round_ + 1) and time.monotonic() < deadline:
                time.sleep(0.005)
            proc.send_signal(signal.SIGINT)
            time.sleep(0.002 * (round_ + 1))
            proc.send_signal(signal.SIGINT)
            _, err_bytes = proc.communicate(timeout=60)
        err = err_bytes.decode()
        assert proc.returncode in (0, EXIT_MSMQ), err
        assert "Traceback" not in err and "Aborted!" not in err and "committer" not in err, err
        after = set(_ids(data, name))
        printed = []
        for line in out.read_bytes().split(b"\n"):
            try:
                printed.append(json.loads(line)["id"])
            except ValueError:
                pass  # a line cut by the second Ctrl-C
        removed = [i for i in before if i not in after]
        lost = [i for i in removed if i not in printed and i not in err]
        assert not lost, (round_, err)
        if "the transaction was aborted" in err:  # the second Ctrl-C cut a print: all back
            assert transactional and not removed
        else:
            assert removed, "nothing was received before the interrupts"
