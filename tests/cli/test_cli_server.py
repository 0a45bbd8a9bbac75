"""The same commands against a real ``pymsmq serve`` subprocess on port 0 (``--url`` / PYMSMQ_URL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _serve import serving
from click.testing import CliRunner, Result

from pymsmq.cli import main
from pymsmq.cli._msgjson import ASSIGNED_FIELDS

ORDERS = r".\private$\orders"
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("srv") / "qm"
    with serving(data, "--token", TOKEN, "--log-level", "warning", env={"PYMSMQ_TOKEN": ""}) as url:
        yield url


def run(url: str, *args: str, token: str | None = TOKEN, stdin: str | None = None) -> Result:
    env = {"PYMSMQ_DATA": None, "PYMSMQ_URL": url, "PYMSMQ_TOKEN": token}
    return CliRunner().invoke(main, list(args), env=env, input=stdin)


def test_queue_lifecycle_send_receive_peek_move_stats(server: str) -> None:
    assert run(server, "queue", "create", ORDERS, "--journal", "--label", "o").exit_code == 0
    r = run(server, "queue", "create", ORDERS)
    assert r.exit_code == 1 and r.stderr.count("MQ_ERROR_QUEUE_EXISTS") == 1  # not repeated
    for body in ("one", "two", "three"):
        r = run(server, "send", ORDERS, body, "--label", body, "--priority", "4")
        assert r.exit_code == 0 and "warning" not in r.stderr  # a server keeps express messages
    rows = json.loads(run(server, "queue", "list", "--json").stdout)
    [row] = [row for row in rows if row["path_name"].endswith("orders")]
    assert row["messages"] == 3 and row["bytes"] == 3 + 3 + 5 + 2 * (3 + 3 + 5)
    r = run(server, "peek", ORDERS, "-n", "5", "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == b"onetwothree"
    r = run(server, "move", ORDERS, ";poison", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout) == {"moved": [1]}
    info = json.loads(run(server, "queue", "info", ORDERS, "--json").stdout)
    assert info["messages"] == 2 and info["subqueues"] == {"poison": 1} and info["label"] == "o"
    r = run(server, "receive", ORDERS, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["body_text"] == "two"
    stats = json.loads(run(server, "stats", "--json").stdout)
    per = {q["path_name"]: q for q in stats["per_queue"]}
    orders = next(q for name, q in per.items() if name.endswith("orders"))
    assert orders["messages"] == 1 and orders["sent"] == 3 and orders["received"] >= 1
    assert stats["server"]["connections"]["total"] >= 1
    r = run(server, "receive", ORDERS + ";poison", "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == b"one"
    assert run(server, "queue", "purge", ORDERS).exit_code == 0
    r = run(server, "receive", ORDERS, "--timeout", "0.1")
    assert r.exit_code == 3 and "MQ_ERROR_IO_TIMEOUT 0xC00E001B" in r.stderr
    assert run(server, "queue", "delete", ORDERS).exit_code == 0


def test_stats_give_the_system_queues_sizes_remotely(server: str) -> None:
    # A server reports every queue's size, the system queues' too (before: "?" for those).
    name = r".\private$\sysq"
    assert run(server, "queue", "create", name).exit_code == 0

    def system_rows() -> dict[str, dict[str, int]]:
        stats = json.loads(run(server, "stats", "--json").stdout)
        assert isinstance(stats["bytes"], int)
        return {q["path_name"]: q for q in stats["per_queue"] if q["path_name"].startswith("MACHINE=")}

    before = system_rows()
    assert sorted(n.rpartition(";")[2] for n in before) == ["DEADLETTER", "DEADXACT", "JOURNAL"]
    assert all(isinstance(q["bytes"], int) for q in before.values())
    # MQMSG_JOURNAL: the machine journal keeps a copy once a non-transactional send is delivered.
    assert run(server, "send", name, "12345", "--label", "ab", "--journal").exit_code == 0
    after = system_rows()
    [journal] = [n for n in after if n.endswith(";JOURNAL")]
    assert after[journal]["messages"] == before[journal]["messages"] + 1
    assert after[journal]["bytes"] == before[journal]["bytes"] + 5 + 4  # body + the label in UTF-16
    r = run(server, "queue", "list", "--system")
    assert r.exit_code == 0 and "?" not in r.stdout
    assert run(server, "queue", "delete", name).exit_code == 0


def test_export_import_round_trip_through_the_server(server: str, tmp_path: Path) -> None:
    src, dst = r".\private$\xsrc", r".\private$\xdst"
    assert run(server, "queue", "create", src, "--transactional").exit_code == 0
    r = run(
        server,
        "send",
        src,
        "payload",
        "--label",
        "L",
        "--app-specific",
        "77",
        "--ack",
        "full-receive",
        "--admin-queue",
        src,
        "--ttbr",
        "3600",
        "--count",
        "2",
    )
    assert r.exit_code == 0
    exported = run(server, "export", src).stdout
    local = tmp_path / "a"
    r = CliRunner().invoke(main, ["import", "-", "--create", "--data", str(local)], input=exported)
    assert r.exit_code == 0, r.output
    r = run(server, "import", "-", dst, "--create", stdin=exported)
    assert r.exit_code == 0, r.output

    def settable(text: str) -> list[dict[str, object]]:
        rows = [json.loads(line) for line in text.splitlines()][1:-1]
        return [{k: v for k, v in row["message"].items() if k not in ASSIGNED_FIELDS} for row in rows]

    assert settable(run(server, "export", dst).stdout) == settable(exported)
    local_export = CliRunner().invoke(main, ["export", r".\private$\xsrc", "--data", str(local)]).stdout
    assert settable(local_export) == settable(exported)


def test_wrong_or_missing_token_is_refused(server: str) -> None:
    r = run(server, "queue", "list", token="wrong")
    assert r.exit_code == 1 and "0xC00E" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run(server, "queue", "list", token=None)
    assert r.exit_code == 1 and "0xC00E" in r.stderr


def test_unknown_queue_and_malformed_names_remotely(server: str) -> None:
    r = run(server, "receive", r".\private$\nope")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003" in r.stderr
    r = run(server, "peek", "PRIVATE=zzz")
    assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_FORMATNAME" in r.stderr


def test_subqueue_bytes_count_in_the_queue_on_a_server_as_embedded(server: str) -> None:
    # The server's row left the subqueue's bytes out (0 here) while the embedded queue manager and
    # the machine total counted them.
    name = r".\private$\subbytes"
    assert run(server, "queue", "create", name).exit_code == 0
    assert run(server, "send", name, "abcd", "--recoverable", "--count", "2").exit_code == 0
    assert run(server, "move", name, ";poison", "--all").exit_code == 0
    info = json.loads(run(server, "queue", "info", name, "--json").stdout)
    assert (info["messages"], info["bytes"], info["subqueues"]) == (0, 8, {"poison": 2})
    sub = json.loads(run(server, "queue", "info", name + ";poison", "--json").stdout)
    assert (sub["messages"], sub["bytes"]) == (2, 8)  # was null: the subqueue's own bytes
    assert run(server, "send", name, "xy", "--recoverable").exit_code == 0
    sub = json.loads(run(server, "queue", "info", name + ";poison", "--json").stdout)
    assert (sub["messages"], sub["bytes"]) == (2, 8)
    stats = json.loads(run(server, "stats", "--json").stdout)
    [row] = [q for q in stats["per_queue"] if q["path_name"].lower().endswith("private$\\subbytes")]
    assert (row["messages"], row["bytes"]) == (1, 10)
    assert run(server, "queue", "delete", name).exit_code == 0


def test_queue_set_over_the_server(server: str) -> None:
    name = r".\private$\settable"
    assert run(server, "queue", "create", name, "--label", "a").exit_code == 0
    r = run(server, "queue", "set", name, "--label", "b", "--quota", "64", "--journal", "--json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.output)
    assert (info["label"], info["quota"], info["journal"]) == ("b", 64, True)
    r = run(server, "queue", "set", name + ";journal", "--label", "c")
    assert r.exit_code == 1 and r.output.count("MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION") == 1
    assert json.loads(run(server, "queue", "info", name, "--json").output)["label"] == "b"
