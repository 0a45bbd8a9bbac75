"""``pymsmq export`` / ``import``: the JSON Lines format, round trips of every property, bad files."""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from pymsmq import Message, ObjectId, QueueManager
from pymsmq.cli import main, transfer
from pymsmq.cli._msgjson import ASSIGNED_FIELDS, MESSAGE_FIELDS, message_from_json
from pymsmq.cli.transfer import ExportFileError, read_export
from pymsmq.qm.queue import Queue

ORDERS = r".\private$\orders"
SETTABLE = [name for name in MESSAGE_FIELDS if name not in ASSIGNED_FIELDS]


def run(data: str | None, *args: str, stdin: bytes | str | None = None) -> Result:
    argv = [*args] if data is None else [*args, "--data", data]
    return CliRunner().invoke(main, argv, input=stdin, env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})


def rich_messages() -> list[Message]:
    """Messages that between them set every settable property to a non-default value."""
    corr = ObjectId(uuid.uuid4(), 42)
    return [
        Message(
            body=bytes(range(256)),
            label="every property",
            body_type=0x2011,
            extension=b"\x01\x02ext",
            app_specific=0xDEADBEEF,
            correlation_id=corr,
            msg_class=0,
            priority=6,
            delivery=1,
            ack=0x0E,
            journal=3,
            trace=1,
            max_time_to_reach_queue=3600,
            max_time_to_receive=7200,
            response_queue=r"DIRECT=TCP:10.0.0.9\private$\replies",
            admin_queue=r"DIRECT=OS:other\private$\admin",
            dead_letter_queue=r".\private$\dlq",
            priv_level=1,
            auth_level=1,
            hash_algorithm=0x800C,
            encrypt_algorithm=0x6610,
            sender_id=b"\x01\x05sid",
            sender_id_type=1,
            sender_certificate=b"cert-bytes",
            signature=b"sig",
            destination_symmetric_key=b"key",
            authentication_provider_type=24,
            authentication_provider_name="Microsoft Enhanced RSA and AES Cryptographic Provider",
            connector_type_guid=uuid.uuid4(),
            soap_envelope="<Envelope/>",
            compound_message=b"<compound/>",
        ),
        Message(body=b"", label="", priority=0, delivery=1, authentication_provider_name=None),
        Message(body="caf\u00e9".encode("utf-16-le"), body_type=8, label="\u00fcnicode \u2713", delivery=1),
    ]


@pytest.fixture
def source(tmp_path: Path) -> str:
    d = str(tmp_path / "a")
    with QueueManager.open(d) as qm:
        q = qm.create_queue(ORDERS, journal=True, label="orders", quota=5000)
        for m in rich_messages():
            q.send(m)
        q.close()
    return d


def peek_all(data: str, name: str = ORDERS) -> list[Message]:
    out: list[Message] = []
    with QueueManager.open(data) as qm, qm.queue(name) as q:
        c = q.cursor()
        try:
            out.append(c.peek_current(0))
            while True:
                out.append(c.peek_next(0))
        except Exception:
            pass
    return out


def test_export_is_non_destructive_and_documented_shape(source: str, tmp_path: Path) -> None:
    out = tmp_path / "orders.jsonl"
    r = run(source, "export", ORDERS, "-o", str(out))
    assert r.exit_code == 0, r.output
    assert "exported 3 messages" in r.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    header, *messages, end = lines
    assert header["format"] == "pymsmq-export" and header["version"] == 1
    assert header["queue"].endswith(r"\private$\orders") and header["format_name"].startswith("PRIVATE=")
    assert header["queue_properties"]["label"] == "orders" and header["queue_properties"]["quota"] == 5000
    assert header["removed"] is False
    assert end == {"end": True, "count": 3}
    assert all(set(m) == {"subqueue", "message"} and m["subqueue"] is None for m in messages)
    assert set(messages[0]["message"]) == set(MESSAGE_FIELDS) - {"destination_format_name"}  # (only when set)
    assert len(peek_all(source)) == 3  # nothing removed


def test_export_to_stdout_then_import_round_trips_every_property(source: str, tmp_path: Path) -> None:
    r = run(source, "export", ORDERS)
    assert r.exit_code == 0
    exported = r.stdout
    target = str(tmp_path / "b")
    r = run(target, "import", "-", "--create", stdin=exported)
    assert r.exit_code == 0, r.output
    assert "imported 3 messages" in r.stderr
    before, after = peek_all(source), peek_all(target)
    assert len(before) == len(after) == 3
    for old, new in zip(before, after, strict=True):
        for name in SETTABLE:
            assert getattr(new, name) == getattr(old, name), name
        # the queue manager assigns these afresh on the importing side
        assert new.id != old.id and new.source_machine_guid != old.source_machine_guid
    with QueueManager.open(source) as a, QueueManager.open(target) as b:
        pa, pb = a.get_queue_properties(ORDERS), b.get_queue_properties(ORDERS)
    for name in ("label", "journal", "quota", "journal_quota", "transactional", "priv_level", "authenticate"):
        assert getattr(pa, name) == getattr(pb, name), name
    # and the file of the copy equals the original file but for the assigned properties
    again = run(target, "export", ORDERS).stdout

    def settable(text: str) -> list[dict[str, object]]:
        rows = [json.loads(line) for line in text.splitlines()][1:-1]
        return [{k: v for k, v in row["message"].items() if k not in ASSIGNED_FIELDS} for row in rows]

    assert settable(again) == settable(exported)


def test_labels_that_are_not_valid_unicode_export_and_import_exactly(tmp_path: Path) -> None:
    # MSMQ strings are UTF-16 and may hold a lone surrogate (a non-UTF-8 byte on a command line
    # becomes one too): export writes it as a \uXXXX escape, so the file is UTF-8 and exact.
    source, target = str(tmp_path / "a"), str(tmp_path / "b")
    odd = ["sur\ud800x", "caf\udce9", "fine \u00e9"]
    with QueueManager.open(source) as qm:
        q = qm.create_queue(ORDERS, label="q\udce9")
        for label in odd:
            q.send(Message(body=b"x", label=label, delivery=1))
    r = run(source, "export", ORDERS)  # to standard output
    assert r.exit_code == 0, r.output
    r.stdout_bytes.decode("utf-8")
    out = tmp_path / "odd.jsonl"
    r = run(source, "export", ORDERS, "-o", str(out), "--remove")
    assert r.exit_code == 0, r.output
    text = out.read_bytes().decode("utf-8")  # strictly UTF-8
    assert "fine \u00e9" in text  # valid text is written as it is
    r = run(target, "import", str(out), "--create")
    assert r.exit_code == 0, r.output
    assert [m.label for m in peek_all(target)] == odd
    with QueueManager.open(target) as qm:
        assert qm.get_queue_properties(ORDERS).label == "q\udce9"


def test_export_remove_syncs_each_line_before_removing_its_message(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "Never in neither" holds for a crash of the machine too: each line is on disk (fdatasync)
    # before its message is removed, and the finished file's rename is synced (its directory).
    events: list[tuple[str, int]] = []
    real_fdatasync, real_fsync = os.fdatasync, os.fsync
    real_remove = Queue.receive_by_lookup_id

    def fdatasync(fd: int) -> None:
        real_fdatasync(fd)
        events.append(("sync", os.fstat(fd).st_size))

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            events.append(("directory", 0))

    def remove(self: Queue, lookup_id: int, *args: Any, **kwargs: Any) -> Message:
        events.append(("remove", lookup_id))
        return real_remove(self, lookup_id, *args, **kwargs)

    monkeypatch.setattr(transfer.os, "fdatasync", fdatasync)
    monkeypatch.setattr(transfer.os, "fsync", fsync)
    monkeypatch.setattr(Queue, "receive_by_lookup_id", remove)
    r = run(source, "export", ORDERS, "-o", str(tmp_path / "drained.jsonl"), "--remove")
    assert r.exit_code == 0, r.output
    kinds = [kind for kind, _ in events]
    assert kinds == ["sync", "remove"] * 3 + ["sync", "directory"]
    sizes = [size for kind, size in events if kind == "sync"]
    assert sizes == sorted(set(sizes))  # each sync holds one more line
    assert peek_all(source) == []


@pytest.mark.parametrize("refused_at", [1, 2])
def test_export_remove_keeps_only_the_lines_of_removed_messages_when_a_removal_is_refused(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused_at: int
) -> None:
    # A refused removal (no right to receive) left its message's line in the kept file, whose
    # recipe then imported it again (outside QA): the line goes; no file is kept for none removed.
    from pymsmq import MSMQError
    from pymsmq.hresult import HResult

    real_remove = Queue.receive_by_lookup_id
    calls: list[int] = []

    def remove(self: Queue, lookup_id: int, *args: Any, **kwargs: Any) -> Message:
        calls.append(lookup_id)
        if len(calls) == refused_at:
            raise MSMQError("no right to receive", HResult.MQ_ERROR_ACCESS_DENIED)
        return real_remove(self, lookup_id, *args, **kwargs)

    monkeypatch.setattr(Queue, "receive_by_lookup_id", remove)
    before = peek_all(source)
    r = run(source, "export", ORDERS, "-o", str(tmp_path / "drained.jsonl"), "--remove")
    assert r.exit_code == 1 and "no right to receive" in r.stderr
    kept = list(tmp_path.glob(".drained.jsonl.*.part"))
    left = peek_all(source)
    assert len(left) == len(before) - (refused_at - 1)
    if refused_at == 1:
        assert kept == [] and "removed before the error" not in r.stderr
    else:
        (part,) = kept
        lines = [json.loads(line) for line in part.read_text().splitlines()]
        assert [rec["message"]["label"] for rec in lines[1:]] == [before[0].label]
        assert "the 1 message removed before the error" in r.stderr and "may also still" not in r.stderr


def test_import_into_named_existing_transactional_queue_in_batches(source: str, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    run(source, "export", ORDERS, "-o", str(out))
    target = str(tmp_path / "b")
    with QueueManager.open(target) as qm:
        qm.create_queue(r".\private$\tx", transactional=True).close()
    r = run(target, "import", str(out), r".\private$\tx", "--batch", "2")
    assert r.exit_code == 0, r.output
    got = peek_all(target, r".\private$\tx")
    assert [m.body for m in got] == [m.body for m in peek_all(source)]
    assert all(m.transaction_id is not None for m in got)


def test_export_remove_drains_and_subqueues(source: str, tmp_path: Path) -> None:
    with QueueManager.open(source) as qm, qm.queue(ORDERS) as q:
        q.move(q.peek(timeout=0).lookup_id, "poison")
    out = tmp_path / "d.jsonl"
    r = run(source, "export", ORDERS, "--remove", "--subqueues", "-o", str(out))
    assert r.exit_code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["removed"] is True and rows[-1] == {"end": True, "count": 3}
    assert [row["subqueue"] for row in rows[1:-1]] == [None, None, "poison"]
    assert peek_all(source) == [] and peek_all(source, ORDERS + ";poison") == []


def test_export_count_limits(source: str) -> None:
    r = run(source, "export", ORDERS, "-n", "2")
    rows = r.stdout.splitlines()
    assert len(rows) == 4 and json.loads(rows[-1]) == {"end": True, "count": 2}


def test_export_errors(source: str, tmp_path: Path) -> None:
    r = run(source, "export", r".\private$\nope")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.stderr
    r = run(source, "export", ORDERS, "-o", str(tmp_path / "no" / "such" / "dir.jsonl"))
    assert r.exit_code == 2 and "cannot write" in r.stderr
    r = run(source, "export", "DIRECT=nope")
    assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_FORMATNAME" in r.stderr


def _file(source: str) -> list[str]:
    return run(source, "export", ORDERS).stdout.splitlines()


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda lines: lines[:-1], "truncated"),
        (lambda lines: lines[:2], "truncated"),
        (lambda lines: [], "empty file"),
        (lambda lines: lines[1:], "no header"),
        (lambda lines: [*lines[:-1], '{"end": true, "count": 9}'], "found 3"),
        (lambda lines: [*lines, lines[1]], "after the end"),
        (lambda lines: [lines[0], "{not json", *lines[1:]], "line 2: not JSON"),
        (lambda lines: [lines[0], "[1, 2]", *lines[1:]], "not a JSON object"),
        (lambda lines: [lines[0].replace('"version":1', '"version":7'), *lines[1:]], "unsupported version"),
        (lambda lines: [lines[0], '{"subqueue": null}', *lines[1:]], "exactly"),
        (lambda lines: [lines[0], '{"subqueue": 5, "message": {}}', *lines[1:]], "subqueue must be"),
        (lambda lines: [lines[0], '{"subqueue": null, "message": {"priority": 9}}', *lines[1:]], "priority"),
        (lambda lines: [lines[0], '{"subqueue": null, "message": {"colour": 1}}', *lines[1:]], "colour"),
        (lambda lines: [lines[0], '{"subqueue": null, "message": {"body": "***"}}', *lines[1:]], "base64"),
        (lambda lines: [lines[0], "[" * 5000, *lines[1:]], "nested too deeply"),
        (lambda lines: [lines[0].replace('"version":1', '"version":true'), *lines[1:]], "version True"),
        (lambda lines: [lines[0].replace('"version":1', '"version":1.0'), *lines[1:]], "version 1.0"),
        (lambda lines: [*lines[:-1], '{"end": false, "count": 3}'], "the end line is"),
        (lambda lines: [*lines[:-1], '{"end": true, "count": 3.0}'], "the end line is"),
        (lambda lines: [*lines[:-1], '{"end": true, "count": 3, "x": 1}'], "the end line is"),
        (lambda lines: [lines[0], '{"subqueue": "a;b", "message": {}}', *lines[1:]], "subqueue"),
        (
            lambda lines: [lines[0], '{"subqueue": null, "message": {"app_specific": -1}}', *lines[1:]],
            "negative",
        ),
        (
            lambda lines: [
                lines[0],
                '{"subqueue": null, "message": {"max_time_to_receive": -1}}',
                *lines[1:],
            ],
            "negative",
        ),
    ],
)
def test_import_rejects_bad_files_before_sending_anything(
    source: str, tmp_path: Path, mutate: object, needle: str
) -> None:
    lines = mutate(_file(source))  # type: ignore[operator]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    target = str(tmp_path / "b")
    with QueueManager.open(target) as qm:
        qm.create_queue(ORDERS).close()
    r = run(target, "import", str(path), ORDERS)
    assert r.exit_code == 2, r.output
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert peek_all(target) == []


def test_import_unreadable_missing_and_binary_files(tmp_path: Path) -> None:
    target = str(tmp_path / "b")
    r = run(target, "import", str(tmp_path / "missing.jsonl"), ORDERS)
    assert r.exit_code == 2 and "cannot read" in r.stderr and "No such file" in r.stderr
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00garbage")
    r = run(target, "import", str(tmp_path / "bin"), ORDERS)
    assert r.exit_code == 2 and ("UTF-8" in r.stderr or "not JSON" in r.stderr)


def test_import_to_unknown_queue_without_create(source: str, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    run(source, "export", ORDERS, "-o", str(out))
    r = run(str(tmp_path / "b"), "import", str(out))
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.stderr


# ---------------------------------------------------------------------- the parser on its own
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200)
@given(st.lists(st.one_of(st.text(max_size=40), _json_values.map(json.dumps)), max_size=6))
def test_read_export_gives_records_or_export_file_error(lines: list[str]) -> None:
    try:
        list(read_export(lines))
    except ExportFileError as exc:
        assert exc.line >= 1


@settings(max_examples=100)
@given(st.dictionaries(st.sampled_from(MESSAGE_FIELDS), _json_values, max_size=6))
def test_message_from_json_gives_message_or_value_error(data: dict[str, object]) -> None:
    try:
        m = message_from_json(data)
    except ValueError:
        return
    assert isinstance(m, Message)
