"""Ctrl-C in ``export --remove`` and ``import`` (QA 2026-11-27): the command stops between messages,
says what it did, and what it says is true; real processes, a real SIGINT at random moments, embedded
and through a server.  And the smaller CLI findings of the same QA round."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))

from _serve_process import ServeProcess

from pymsmq import Message, QueueManager
from pymsmq.cli import main
from pymsmq.client import connect

Q = r".\private$\drain"
N = 3000


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYMSMQ_")}


def _interrupted(
    args: list[str], started: Callable[[], bool], after: float, cwd: Path, signum: int = signal.SIGINT
) -> subprocess.CompletedProcess[str]:
    """``pymsmq ARGS``, one ``signum`` (Ctrl-C) ``after`` seconds after ``started()`` says it is at
    work (a signal during the interpreter's start is Python's, not the command's)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pymsmq.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=cwd,
    )
    deadline = time.monotonic() + 60
    while not started() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(after)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _fill(qm: object, n: int = N) -> None:
    q = qm.queue(Q)  # type: ignore[attr-defined]
    q.send_many([Message(body=b"msg-%d" % i, delivery=1) for i in range(n)])


def _store_with(tmp_path: Path, *bodies: bytes) -> str:
    """A store in ``tmp_path`` whose queue Q holds ``bodies`` (recoverable); its directory."""
    data = str(tmp_path / "qm")
    with QueueManager.open(data) as qm, qm.create_queue(Q) as q:
        if bodies:
            q.send_many([Message(body=body, delivery=1) for body in bodies])
    return data


def _bodies_in_file(path: Path) -> list[bytes]:
    import base64

    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        row = json.loads(line)
        if "message" in row:
            out.append(base64.b64decode(row["message"]["body"]))
    return out


def _check_drain(
    result: subprocess.CompletedProcess[str], left: list[bytes], tmp: Path, code: int = 130
) -> int:
    """Every message is in exactly one of the part file and the queue; the count said is the file's."""
    if result.returncode == 0:  # the whole queue was exported before the signal came
        assert not left
        return N
    assert result.returncode == code, result.stderr
    said = re.search(r"the (\d+) messages? removed are in (\S+) \(no end line", result.stderr)
    if said is None:  # stopped before the first removal
        assert "stopped after 0 messages" in result.stderr, result.stderr
        assert len(left) == N
        return 0
    in_file = _bodies_in_file(Path(said.group(2)))
    assert int(said.group(1)) == len(in_file)
    assert sorted(in_file + left) == sorted(b"msg-%d" % i for i in range(N))  # none twice, none lost
    assert "Traceback" not in result.stderr and "committer failure" not in result.stderr
    return len(in_file)


@pytest.mark.parametrize(
    ("where", "signum"),
    [("embedded", signal.SIGINT), ("remote", signal.SIGINT), ("embedded", signal.SIGTERM)],
)
def test_export_remove_stops_between_messages_on_one_ctrl_c(where: str, signum: int, tmp_path: Path) -> None:
    # SIGTERM too (QA round 4: it killed the export, leaving its partial file unnamed).
    rng = random.Random()
    stopped_part_way = 0
    for round_ in range(4):
        data = tmp_path / f"qm{round_}"
        server = None
        if where == "remote":
            server = ServeProcess(data)
            qm: object = connect(server.url)
            target = ["--url", server.url]
        else:
            qm = QueueManager.open(data)
            target = ["--data", str(data)]
        try:
            qm.create_queue(Q).close()  # type: ignore[attr-defined]
            _fill(qm)
            qm.close()  # type: ignore[attr-defined]
            out = tmp_path / f"drained{round_}.jsonl"

            def writing(name: str = out.name) -> bool:
                return any(tmp_path.glob(f".{name}.*.part"))

            result = _interrupted(
                ["export", *target, Q, "--remove", "-o", str(out)],
                writing,
                rng.uniform(0.0, 0.6),
                tmp_path,
                signum,
            )
            qm = QueueManager.open(data) if server is None else connect(server.url)
            with qm.queue(Q) as q:  # type: ignore[attr-defined]
                left = [m.body for m in q.receive_many(N, timeout=0)]
            qm.close()  # type: ignore[attr-defined]
            taken = _check_drain(result, left, tmp_path, 128 + signum)
            if 0 < taken < N:
                why = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
                assert f"interrupted ({why})" in result.stderr
            assert not out.exists() or taken == N  # an incomplete export never takes FILE's name
            stopped_part_way += 0 < taken < N
        finally:
            if server is not None:
                assert server.terminate() == 0
    assert stopped_part_way  # the Ctrl-C landed while the export ran (not only before or after)


@pytest.mark.parametrize("transactional", [False, True])
def test_import_stops_between_messages_and_says_how_many_went_in(transactional: bool, tmp_path: Path) -> None:
    # Through a server, so that the test sees the import at work (an embedded store is the
    # importer's alone while it runs).
    data = tmp_path / "qm"
    export = tmp_path / "all.jsonl"
    with QueueManager.open(data) as qm:
        qm.create_queue(Q).close()
        _fill(qm)
    assert CliRunner().invoke(main, ["export", "--data", str(data), Q, "-o", str(export)]).exit_code == 0
    rng = random.Random()
    part_way = 0
    server = ServeProcess(data)
    client = connect(server.url)
    try:
        for round_ in range(3):
            target = rf".\private$\into{round_}"
            q = client.create_queue(target, transactional=transactional)

            def importing(q: object = q) -> bool:
                return q.message_count > 0  # type: ignore[attr-defined, no-any-return]

            args = ["import", "--url", server.url, str(export), target, "--batch", "100"]
            result = _interrupted(args, importing, rng.uniform(0.0, 0.4), tmp_path)
            bodies = [m.body for m in q.receive_many(N, timeout=0)]
            q.close()
            assert bodies == [b"msg-%d" % i for i in range(len(bodies))]  # a prefix of the file, in order
            if result.returncode == 0:
                assert len(bodies) == N
                continue
            assert result.returncode == 130, result.stderr
            said = re.search(r"interrupted \(Ctrl-C\): (\d+) of 3000 messages were imported", result.stderr)
            assert said is not None, result.stderr
            assert int(said.group(1)) == len(bodies)
            if transactional:
                assert len(bodies) % 100 == 0  # whole batches: the one in progress was aborted
            part_way += 0 < len(bodies) < N
    finally:
        client.close()
        assert server.terminate() == 0
    assert part_way


def test_lookup_id_refuses_a_wait(tmp_path: Path) -> None:
    # It used to retry at full speed until the timeout (97% of a core; on a server, 45% of its CPU).
    data = _store_with(tmp_path)
    for extra in (["--timeout", "2"], ["--follow"]):
        for command in ("receive", "peek"):
            r = CliRunner().invoke(main, [command, "--data", data, Q, "--lookup-id", "5", *extra])
            assert r.exit_code == 2 and "--lookup-id reads that message at once" in r.output
    r = CliRunner().invoke(main, ["peek", "--data", data, Q, "--lookup-id", "5", "--timeout", "0"])
    assert r.exit_code == 3  # no such message, at once


def test_a_journals_export_carries_its_queues_properties(tmp_path: Path) -> None:
    data, fresh = str(tmp_path / "a"), str(tmp_path / "b")
    with QueueManager.open(data) as qm:
        q = qm.create_queue(Q, transactional=True, journal=True, quota=5000, label="tx q")
        with qm.begin_transaction() as tx:
            q.send(Message(body=b"x"), transaction=tx)
        with qm.begin_transaction() as tx:
            q.receive(0, transaction=tx)
        q.close()
    out = tmp_path / "journal.jsonl"
    assert CliRunner().invoke(main, ["export", "--data", data, Q + ";journal", "-o", str(out)]).exit_code == 0
    header = json.loads(out.read_text().splitlines()[0])
    props = header["queue_properties"]
    assert (props["transactional"], props["journal"], props["quota"], props["label"]) == (
        True,
        True,
        5000,
        "tx q",
    )
    r = CliRunner().invoke(main, ["import", "--data", fresh, str(out), "--create"])
    assert r.exit_code == 0, r.output
    with QueueManager.open(fresh) as qm:
        made = qm.get_queue_properties(Q)
        assert (made.transactional, made.journal, made.quota, made.label) == (True, True, 5000, "tx q")


def test_queue_list_json_rows_all_have_the_journal_count(tmp_path: Path) -> None:
    data = str(tmp_path / "qm")
    with QueueManager.open(data) as qm:
        qm.create_queue(r".\private$\j", journal=True).close()
        qm.create_queue(r".\private$\nj").close()
    r = CliRunner().invoke(main, ["queue", "list", "--data", data, "--json"])
    rows = [row for row in json.loads(r.output) if row["kind"] == "private"]
    assert len(rows) == 2 and all(row["journal_messages"] == 0 for row in rows)


def test_tls_cert_without_key_is_a_usage_error_and_a_file_is_not_a_data_directory(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    r = CliRunner().invoke(main, ["serve", "--data", str(tmp_path / "qm"), "--tls-cert", str(cert)])
    assert r.exit_code == 2 and "--tls-cert and --tls-key go together" in r.output
    r = CliRunner().invoke(main, ["queue", "list", "--data", str(cert)])
    assert r.exit_code == 2 and "it is not a directory" in r.output


def test_a_second_ctrl_c_right_after_a_removal_keeps_the_removed_message_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # QA round 4: a second Ctrl-C between a message's removal and its count deleted the partial
    # file, the only copy of that message.  The second Ctrl-C is a KeyboardInterrupt raised as the
    # removal returns.
    from pymsmq.qm.queue import Queue

    data = _store_with(tmp_path, *(b"m%d" % i for i in range(5)))
    real = Queue.receive_by_lookup_id

    def removed_then_interrupted(self: Queue, *args: object, **kwargs: object) -> Message:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(Queue, "receive_by_lookup_id", removed_then_interrupted)
    out = tmp_path / "drained.jsonl"
    result = CliRunner().invoke(main, ["export", "--data", data, Q, "--remove", "-o", str(out)])
    monkeypatch.undo()
    assert result.exit_code != 0
    (part,) = tmp_path.glob(".drained.jsonl.*.part")
    assert _bodies_in_file(part) == [b"m0"]
    assert "may also still be in the queue" in result.output
    with QueueManager.open(data) as qm, qm.queue(Q) as q:
        assert [m.body for m in q.receive_many(10, timeout=0)] == [b"m%d" % i for i in range(1, 5)]


def test_an_interrupted_check_of_the_import_file_imports_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pymsmq.cli import transfer

    data = _store_with(tmp_path, b"x")
    export = tmp_path / "one.jsonl"
    assert CliRunner().invoke(main, ["export", "--data", data, Q, "-o", str(export)]).exit_code == 0

    def interrupted(*args: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(transfer, "_check", interrupted)
    result = CliRunner().invoke(
        main, ["import", "--data", data, str(export), r".\private$\other", "--create"]
    )
    assert result.exit_code == 130 and "nothing was imported" in result.output


def test_a_ctrl_c_while_the_command_closes_its_queue_manager_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # QA round 4: a Ctrl-C after a finished export printed "Aborted!" (exit 1).  The close of the
    # queue manager gets the signal here, as a Ctrl-C would come.
    data = _store_with(tmp_path, b"x")
    real_close = QueueManager.close

    def close_with_a_ctrl_c(self: QueueManager) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # (delivered to the main thread between bytecodes)
        real_close(self)

    monkeypatch.setattr(QueueManager, "close", close_with_a_ctrl_c)
    before = signal.getsignal(signal.SIGINT)
    result = CliRunner().invoke(main, ["export", "--data", data, Q, "-o", str(tmp_path / "out.jsonl")])
    monkeypatch.undo()
    assert result.exit_code == 0, result.output
    assert "exported 1 message" in result.output
    assert signal.getsignal(signal.SIGINT) is before  # restored after
