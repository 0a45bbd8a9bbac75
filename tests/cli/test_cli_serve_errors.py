"""``pymsmq serve`` refuses a data directory or store it cannot use with one clear line, no traceback."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from pymsmq.cli import main


def serve(data: Path | str) -> Result:
    return CliRunner().invoke(main, ["serve", "--data", str(data), "--port", "0"])


def test_a_data_directory_that_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = serve(blocker / "qm")  # a directory under a file
    assert r.exit_code == 2 and r.exception is not None and isinstance(r.exception, SystemExit)
    assert r.stderr.strip() == f"Error: cannot open the data directory {blocker / 'qm'}: Not a directory"


def test_a_store_that_is_not_a_database(tmp_path: Path) -> None:
    data = tmp_path / "qm"
    data.mkdir()
    (data / "pymsmq.db").write_bytes(b"\x13" * 8192)
    r = serve(data)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)
    assert r.stderr.startswith("Error: cannot open store ") and "file is not a database" in r.stderr
    assert r.stderr.rstrip().endswith("(MQ_ERROR_MESSAGE_STORAGE_FAILED 0xC00E002A)")


def test_an_auth_file_others_may_read_is_warned_about(tmp_path: Path) -> None:
    # It holds every identity's token; it was read whatever its mode.
    import os
    import subprocess
    import sys

    policy = tmp_path / "policy.json"
    policy.write_text("{")  # malformed: serve stops right after reading it
    for mode, warned in ((0o644, True), (0o600, False)):
        os.chmod(policy, mode)
        command = [sys.executable, "-m", "pymsmq.cli", "serve", "--data", str(tmp_path / "qm")]
        proc = subprocess.run(
            [*command, "--port", "0", "--auth", str(policy)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 1 and "bad --auth file" in proc.stderr
        assert ("may be read by other users (mode 644)" in proc.stderr) is warned, proc.stderr


def test_a_negative_failed_login_limit_is_a_usage_error(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["serve", "--data", str(tmp_path / "qm"), "--max-failed-logins", "-1"])
    assert r.exit_code == 2 and "--max-failed-logins" in r.stderr and not (tmp_path / "qm").exists()


def test_a_token_longer_than_a_handshake_carries_is_refused_at_start(tmp_path: Path) -> None:
    # It started and nobody could log in (outside QA); a policy file's tokens are held to it too.
    long = "t" * 4097
    r = CliRunner().invoke(main, ["serve", "--data", str(tmp_path / "qm"), "--port", "0", "--token", long])
    assert r.exit_code == 1 and "bad --token: a token is 4097 bytes in UTF-8: at most 4096" in r.stderr
    policy = tmp_path / "policy.json"
    policy.write_text('{"tokens": {"' + "é" * 2049 + '": "admin"}}')
    policy.chmod(0o600)
    r = CliRunner().invoke(
        main, ["serve", "--data", str(tmp_path / "qm"), "--port", "0", "--auth", str(policy)]
    )
    assert r.exit_code == 1 and "bad --auth file: a token is 4098 bytes" in r.stderr


def test_a_store_others_may_read_is_warned_about(tmp_path: Path) -> None:
    # A store made before stores were made 600 holds every identity's messages (outside QA).
    import os
    import socket
    import subprocess
    import sys

    from pymsmq import QueueManager

    data = tmp_path / "qm"
    QueueManager.open(data).close()
    db = data / "pymsmq.db"
    for mode, warned in ((0o644, True), (0o600, False)):
        os.chmod(db, mode)
        with socket.socket() as taken:  # serve stops at the listen, after its warnings
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            command = [sys.executable, "-m", "pymsmq.cli", "serve", "--data", str(data)]
            proc = subprocess.run(
                [*command, "--port", str(taken.getsockname()[1])], capture_output=True, text=True, timeout=60
            )
        assert proc.returncode == 1 and "cannot listen" in proc.stderr, proc.stderr
        assert ("may be read by other users (mode 644)" in proc.stderr) is warned, proc.stderr
