"""``pymsmq queue create|set|delete|list|info|purge`` against the embedded queue manager (CliRunner)."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pymsmq import Message, QueueManager
from pymsmq.cli import main

ORDERS = r".\private$\orders"


@pytest.fixture
def data(tmp_path: Path) -> str:
    return str(tmp_path / "qm")


def run(data: str | None, *args: str, stdin: bytes | str | None = None) -> Result:
    argv = [*args] if data is None else [*args, "--data", data]
    return CliRunner().invoke(main, argv, input=stdin, env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})


def test_create_prints_the_format_name_and_sets_every_property(data: str) -> None:
    guid = uuid.uuid4()
    r = run(
        data,
        "queue",
        "create",
        ORDERS,
        "--transactional",
        "--journal",
        "--label",
        "orders",
        "--quota",
        "2048",
        "--journal-quota",
        "512",
        "--authenticate",
        "--privacy-level",
        "body",
        "--type-guid",
        str(guid),
        "--multicast-address",
        "234.1.1.1:8001",
    )
    assert r.exit_code == 0, r.output
    assert re.fullmatch(r"PRIVATE=[0-9a-f-]{36}\\[0-9a-f]{8}\n", r.stdout)
    with QueueManager.open(data) as qm:
        props = qm.get_queue_properties(ORDERS)
        assert qm.format_name(ORDERS) == r.stdout.strip()
    assert props.transactional and props.journal and props.authenticate
    assert (props.label, props.quota, props.journal_quota, props.priv_level) == ("orders", 2048, 512, 2)
    assert props.service_type_guid == guid
    assert props.multicast_address == "234.1.1.1:8001"


def test_create_defaults_and_json(data: str) -> None:
    r = run(data, "queue", "create", ORDERS, "--json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert info["path_name"].endswith(r"\private$\orders")
    assert info["transactional"] is False and info["journal"] is False
    assert info["quota"] == 0xFFFFFFFF and info["priv_level"] == 1 and info["messages"] == 0


def test_create_public_queue_with_base_priority(data: str) -> None:
    r = run(data, "queue", "create", r".\pub", "--base-priority", "-5", "--quota", "infinite")
    assert r.exit_code == 0, r.output
    with QueueManager.open(data) as qm:
        assert qm.get_queue_properties(r".\pub").base_priority == -5


def test_create_twice_is_an_msmq_error_with_the_hresult(data: str) -> None:
    assert run(data, "queue", "create", ORDERS).exit_code == 0
    r = run(data, "queue", "create", ORDERS)
    assert r.exit_code == 1
    assert "MQ_ERROR_QUEUE_EXISTS 0xC00E0005" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # The path reads as typed: one backslash between its parts, not repr's two.
    assert "'.\\private$\\orders'" in r.stderr
    assert "\\\\" not in r.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--quota", "lots"), "not a number of kilobytes"),
        (("--quota", "-1"), "out of range"),
        (("--base-priority", "40000"), "40000"),
        (("--privacy-level", "secret"), "secret"),
        (("--type-guid", "not-a-guid"), "not a GUID"),
        (("--label", "x" * 125), "label"),
        (("--multicast-address", "10.0.0.1:80"), "multicast"),
    ],
)
def test_create_bad_property_values_exit_2(data: str, args: tuple[str, ...], needle: str) -> None:
    r = run(data, "queue", "create", ORDERS, *args)
    assert r.exit_code == 2, r.output
    assert needle in r.stderr
    with QueueManager.open(data) as qm:
        assert not qm.queue_exists(ORDERS)


def test_create_malformed_path_exits_2(data: str) -> None:
    r = run(data, "queue", "create", r"no-backslash-at-all")
    assert r.exit_code == 2
    assert "MQ_ERROR_ILLEGAL_QUEUE_PATHNAME" in r.stderr


def test_set_changes_only_the_properties_given(data: str) -> None:
    guid = uuid.uuid4()
    assert (
        run(data, "queue", "create", ORDERS, "--transactional", "--label", "a", "--quota", "50").exit_code
        == 0
    )
    assert (
        run(data, "queue", "create", r".\private$\m", "--multicast-address", "234.1.1.1:8001").exit_code == 0
    )
    r = run(data, "queue", "set", ORDERS, "--label", "orders (EU)", "--journal", "--type-guid", str(guid))
    assert r.exit_code == 0 and r.output.endswith(": set journal, label, service_type_guid\n"), r.output
    with QueueManager.open(data) as qm:
        p = qm.get_queue_properties(ORDERS)
        assert (p.label, p.journal, p.quota, p.transactional, p.service_type_guid) == (
            "orders (EU)",
            True,
            50,
            True,
            guid,
        )
    r = run(
        data,
        "queue",
        "set",
        ORDERS,
        "--no-journal",
        "--quota",
        "infinite",
        "--privacy-level",
        "body",
        "--json",
    )
    info = json.loads(r.output)
    assert r.exit_code == 0 and (info["journal"], info["quota"], info["priv_level"], info["label"]) == (
        False,
        0xFFFFFFFF,
        2,
        "orders (EU)",
    )
    r = run(data, "queue", "set", r".\private$\m", "--multicast-address", "none", "--authenticate", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["multicast_address"] is None
    assert json.loads(r.output)["authenticate"] is True


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        ((), 2, "nothing to change"),
        (("--quota", "lots"), 2, "not a number of kilobytes"),
        (("--label", "x" * 200), 2, "MQ_ERROR_ILLEGAL_PROPERTY_VALUE"),
        (("--multicast-address", "1.2.3.4:1"), 2, "invalid multicast address"),
    ],
)
def test_set_bad_input_exits_2_and_changes_nothing(
    data: str, args: tuple[str, ...], code: int, needle: str
) -> None:
    assert run(data, "queue", "create", ORDERS, "--label", "a").exit_code == 0
    r = run(data, "queue", "set", ORDERS, *args)
    assert r.exit_code == code and needle in r.output, r.output
    with QueueManager.open(data) as qm:
        assert qm.get_queue_properties(ORDERS).label == "a"


def test_set_of_an_unknown_queue_a_journal_or_a_system_queue_is_an_msmq_error(data: str) -> None:
    assert run(data, "queue", "create", ORDERS).exit_code == 0
    r = run(data, "queue", "set", r".\private$\nope", "--label", "x")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.output
    for name in (ORDERS + ";journal", ORDERS + ";poison", r".\SYSTEM$;DEADLETTER"):
        r = run(data, "queue", "set", name, "--label", "x")
        assert r.exit_code == 1 and r.output.count("MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION") == 1, r.output


def test_delete_and_if_exists(data: str) -> None:
    run(data, "queue", "create", ORDERS)
    assert run(data, "queue", "delete", ORDERS).exit_code == 0
    r = run(data, "queue", "delete", ORDERS)
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003" in r.stderr
    assert run(data, "queue", "delete", ORDERS, "--if-exists").exit_code == 0


def _fill(data: str, path: str, n: int, **props: object) -> None:
    with QueueManager.open(data) as qm:
        if not qm.queue_exists(path):
            qm.create_queue(path, **props)  # type: ignore[arg-type]
        with qm.queue(path) as q:
            for i in range(n):
                q.send(Message(body=b"x" * (i + 1), delivery=1), 3 if q.transactional else None)


def test_list_table_and_json(data: str) -> None:
    _fill(data, ORDERS, 3, label="the orders")
    _fill(data, r".\private$\tx", 1, transactional=True)
    r = run(data, "queue", "list")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["PATH", "MESSAGES", "BYTES", "XACT", "LABEL"]
    orders = next(line for line in lines if "orders" in line).split()
    assert orders[1:4] == ["3", "6", "no"] and " ".join(orders[4:]) == "the orders"
    assert next(line for line in lines if "\\tx" in line).split()[1:4] == ["1", "1", "yes"]
    rows = json.loads(run(data, "queue", "list", "--json").stdout)
    assert [(row["messages"], row["bytes"], row["transactional"]) for row in rows] == [
        (3, 6, False),
        (1, 1, True),
    ]
    assert all(row["kind"] == "private" for row in rows)


def test_list_system_and_all(data: str) -> None:
    _fill(data, ORDERS, 0)
    system = json.loads(run(data, "queue", "list", "--system", "--json").stdout)
    assert len(system) == 3 and all(row["format_name"].startswith("MACHINE=") for row in system)
    assert {row["format_name"].rpartition(";")[2] for row in system} == {"DEADLETTER", "DEADXACT", "JOURNAL"}
    everything = json.loads(run(data, "queue", "list", "--all", "--json").stdout)
    assert len(everything) == 4
    assert json.loads(run(data, "queue", "list", "--public", "--json").stdout) == []


def test_list_empty_store(data: str) -> None:
    r = run(data, "queue", "list", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout) == []


def test_info_text_and_json_with_subqueues_and_journal(data: str) -> None:
    _fill(data, ORDERS, 2, journal=True, quota=100)
    with QueueManager.open(data) as qm, qm.queue(ORDERS) as q:
        q.move(q.peek(timeout=0).lookup_id, "poison")
    info = json.loads(run(data, "queue", "info", ORDERS, "--json").stdout)
    assert info["messages"] == 1 and info["subqueues"] == {"poison": 1}
    assert info["journal"] is True and info["journal_messages"] == 0 and info["quota"] == 100
    text = run(data, "queue", "info", ORDERS).stdout
    assert "subqueues" in text and "poison=1" in text and "journal_quota" in text and "infinite" in text
    sub = json.loads(run(data, "queue", "info", ORDERS + ";poison", "--json").stdout)
    assert sub["messages"] == 1 and "subqueues" not in sub
    # The subqueue's own bytes; the queue's count its subqueues' too (what its quota measures).
    assert (sub["bytes"], info["bytes"]) == (1, 1 + 2)


def test_info_unknown_queue_and_malformed_format_name(data: str) -> None:
    r = run(data, "queue", "info", r".\private$\nope")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.stderr
    r = run(data, "queue", "info", "PRIVATE=not-a-guid\\1")
    assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_FORMATNAME 0xC00E001E" in r.stderr
    # A direct name is checked against the [MS-MQMQ] 2.1.2 grammar, as --response-queue's is: a
    # TCP address that is not a.b.c.d is malformed (exit 2), not a queue of another computer (1).
    for bad in (r"DIRECT=TCP:1.2.3\private$\q", r"DIRECT=TCP:999.1.1.1\private$\q"):
        r = run(data, "queue", "info", bad)
        assert r.exit_code == 2 and "not an IPv4 address" in r.stderr, r.output
        r = run(data, "send", bad, "x")
        assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_FORMATNAME" in r.stderr, r.output
    r = run(data, "queue", "info", "." + "\\q" * 5000)  # a long name is shortened in the error
    assert r.exit_code in (1, 2) and len(r.stderr) < 600, r.stderr[:300]


def test_purge_queue_subqueue_and_journal(data: str) -> None:
    _fill(data, ORDERS, 5, journal=True)
    with QueueManager.open(data) as qm, qm.queue(ORDERS) as q:
        q.move(q.peek(timeout=0).lookup_id, "poison")
        q.receive(timeout=0)  # journaled? only when the queue journals on receive
    r = run(data, "queue", "purge", ORDERS, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout) == {"purged": 3}
    r = run(data, "queue", "purge", ORDERS + ";poison")
    assert r.exit_code == 0 and r.stdout.strip() == "purged 1 message"
    with QueueManager.open(data) as qm, qm.queue(ORDERS) as q:
        assert q.message_count == 0 and q.subqueue_names == []
        journal_before = q.journal.message_count
    r = run(data, "queue", "purge", ORDERS, "--journal", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout) == {"purged": journal_before}
    with QueueManager.open(data) as qm, qm.queue(ORDERS) as q:
        assert q.journal.message_count == 0


def test_purge_unknown_queue(data: str) -> None:
    r = run(data, "queue", "purge", r".\private$\nope")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.stderr


def test_python_dash_m_pymsmq_is_the_pymsmq_command(data: str) -> None:
    import subprocess
    import sys

    src = str(Path(__file__).parents[2] / "src")
    proc = subprocess.run(
        [sys.executable, "-m", "pymsmq", "queue", "create", ORDERS, "--data", data],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("PRIVATE=")
    assert run(data, "queue", "list", "--json").output.count("orders") == 1
