"""``pymsmq send``, ``receive``, ``peek`` and ``move`` against the embedded queue manager (CliRunner)."""

from __future__ import annotations

import base64
import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pymsmq import Message, MSMQError, ObjectId, QueueManager
from pymsmq.cli import main
from pymsmq.hresult import HResult

ORDERS = r".\private$\orders"
TX = r".\private$\tx"


@pytest.fixture
def data(tmp_path: Path) -> str:
    d = str(tmp_path / "qm")
    with QueueManager.open(d) as qm:
        qm.create_queue(ORDERS, journal=True)
        qm.create_queue(TX, transactional=True)
        qm.create_queue(r".\private$\acks")
    return d


def run(data: str | None, *args: str, stdin: bytes | str | None = None) -> Result:
    argv = [*args] if data is None else [*args, "--data", data]
    return CliRunner().invoke(main, argv, input=stdin, env={"PYMSMQ_DATA": None, "PYMSMQ_URL": None})


def peek_all(data: str, name: str = ORDERS) -> list[Message]:
    out = []
    with QueueManager.open(data) as qm, qm.queue(name) as q:
        c = q.cursor()
        try:
            out.append(c.peek_current(0))
            while True:
                out.append(c.peek_next(0))
        except Exception:
            pass
    return out


def put(data: str, *bodies: bytes, name: str = ORDERS, **props: object) -> None:
    with QueueManager.open(data) as qm, qm.queue(name) as q:
        for body in bodies:
            q.send(Message(body=body, delivery=1, **props), 3 if q.transactional else None)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- send
def test_send_body_argument_with_every_property(data: str) -> None:
    corr = ObjectId(uuid.uuid4(), 7)
    r = run(
        data,
        "send",
        ORDERS,
        "hello",
        "--label",
        "greeting",
        "--priority",
        "6",
        "--recoverable",
        "--correlation-id",
        str(corr),
        "--app-specific",
        "-2",
        "--body-type",
        "lpstr",
        "--extension",
        "0a0b",
        "--ttrq",
        "100",
        "--ttbr",
        "50",
        "--journal",
        "--deadletter",
        "--ack",
        "full-receive",
        "--admin-queue",
        r".\private$\acks",
        "--response-queue",
        r".\private$\acks",
        "--dead-letter-queue",
        r".\private$\acks",
        "--trace",
        "--json",
    )
    assert r.exit_code == 0, r.output
    sent = json.loads(r.stdout)
    [m] = peek_all(data)
    assert str(m.id) == sent["id"]
    assert (m.body, m.label, m.priority, m.delivery) == (b"hello", "greeting", 6, 1)
    assert m.correlation_id == corr and m.app_specific == 0xFFFFFFFE and m.body_type == 30
    assert m.extension == b"\x0a\x0b"
    assert m.max_time_to_reach_queue == 100 and m.max_time_to_receive == 100  # TTBR raised to TTRQ
    assert m.journal == 3 and m.ack == 0x0E and m.trace == 1
    with QueueManager.open(data) as qm:
        acks = qm.format_name(r".\private$\acks")
    assert m.admin_queue == acks and m.response_queue == acks
    assert m.dead_letter_queue == r".\private$\acks"


def test_send_defaults_are_msmq_defaults_and_express_warns(data: str) -> None:
    r = run(data, "send", TX, "x")
    assert r.exit_code == 0 and "warning" not in r.stderr  # transactional: recoverable, no warning
    [m] = peek_all(data, TX)
    assert (m.priority, m.ack, m.journal, m.app_specific, m.body_type) == (0, 0, 0, 0, 0x2011)
    assert m.max_time_to_receive == 0xFFFFFFFF and m.is_first_in_transaction
    r = run(data, "send", ORDERS, "gone")
    assert r.exit_code == 0 and "express messages live in memory only" in r.stderr
    assert peek_all(data) == []  # the express message died with the embedded queue manager


def test_send_body_from_file_stdin_and_utf16(data: str, tmp_path: Path) -> None:
    blob = bytes(range(256))
    (tmp_path / "body.bin").write_bytes(blob)
    assert run(data, "send", ORDERS, "--file", str(tmp_path / "body.bin"), "--recoverable").exit_code == 0
    assert run(data, "send", ORDERS, "--recoverable", stdin=b"\x00from stdin\xff").exit_code == 0
    assert run(data, "send", ORDERS, "--recoverable", "-f", "-", stdin=b"dash").exit_code == 0
    assert run(data, "send", ORDERS, "h\u00e9", "--body-type", "string", "--recoverable").exit_code == 0
    bodies = [(m.body, m.body_type) for m in peek_all(data)]
    assert bodies == [
        (blob, 0x2011),
        (b"\x00from stdin\xff", 0x2011),
        (b"dash", 0x2011),
        ("h\u00e9".encode("utf-16-le"), 8),
    ]


def test_send_count_and_transactional_flag(data: str) -> None:
    r = run(data, "send", TX, "a", "--count", "3", "--json")
    assert r.exit_code == 0
    ids = [item["id"] for item in json.loads(r.stdout)]
    assert len(set(ids)) == 3 and len(peek_all(data, TX)) == 3
    r = run(data, "send", TX, "b", "--no-transactional", "--recoverable")
    assert r.exit_code == 1 and "MQ_ERROR_TRANSACTION_USAGE" in r.stderr
    r = run(data, "send", ORDERS, "c", "--transactional")
    assert r.exit_code == 1 and "MQ_ERROR_TRANSACTION_USAGE" in r.stderr


def test_send_count_over_several_batches_keeps_each_message_apart(data: str) -> None:
    # 2,500 copies go in send_many batches of 1,000: every one is its own message, in its own
    # one-message transaction on a transactional queue, printed in the order they were queued.
    r = run(data, "send", TX, "many", "--count", "2500", "--json")
    assert r.exit_code == 0, r.output
    ids = [item["id"] for item in json.loads(r.stdout)]
    stored = peek_all(data, TX)
    assert ids == [str(m.id) for m in stored] and len(set(ids)) == 2500
    assert len({m.transaction_id for m in stored}) == 2500
    assert all(m.is_first_in_transaction and m.is_last_in_transaction for m in stored)
    r = run(data, "send", ORDERS, "r", "--recoverable", "--count", "1001")
    assert r.exit_code == 0 and len(r.stdout.split()) == 1001 and len(peek_all(data)) == 1001


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--priority", "8"), "8"),
        (("--ack", "sometimes"), "sometimes"),
        (("--ack", "16"), "16"),
        (("--ack", "full-receive,often"), "often"),
        (("--ack", ","), "names no"),
        (("--correlation-id", "nonsense"), "not an id"),
        (("--ttbr", "soon"), "seconds"),
        (("--app-specific", "99999999999"), "99999999999"),
        (("--extension", "xyz"), "not hex"),
        (("--label", "L" * 250), "MQ_ERROR_LABEL_TOO_LONG"),
        (("--body-type", "wat"), "wat"),
        (("--file", "/nonexistent/body.bin"), "cannot read /nonexistent/body.bin"),
    ],
)
def test_send_bad_input_exits_2(data: str, args: tuple[str, ...], needle: str) -> None:
    body = () if "--file" in args else ("x",)
    r = run(data, "send", ORDERS, *body, *args, "--recoverable")
    assert r.exit_code == 2, r.output
    assert needle in r.stderr
    assert len(r.stderr.strip().splitlines()) >= 1 and "Traceback" not in r.output
    assert peek_all(data) == []


@pytest.mark.parametrize(
    ("level", "value"),
    [("full-reach-queue,full-receive", 0x0F), ("pos-arrival, pos-receive", 3), ("0x0F", 0x0F)],
)
def test_send_ors_acknowledgement_levels(data: str, level: str, value: int) -> None:
    # MSMQ's FULL_REACH_QUEUE | FULL_RECEIVE (outside QA: --ack took one level, and 15 was refused).
    r = run(data, "send", ORDERS, "x", "--ack", level, "--admin-queue", r".\private$\acks", "--recoverable")
    assert r.exit_code == 0, r.output
    assert [m.ack for m in peek_all(data)] == [value]
    assert [m.msg_class for m in peek_all(data, r".\private$\acks")] == [0x0002]  # ACK_REACH_QUEUE


def test_a_valid_name_not_served_here_is_an_msmq_refusal_not_bad_input(data: str) -> None:
    # Outside QA, 2026-11-27: DL=<guid> (a valid format name that needs store-and-forward) exited
    # 2, "bad usage or input", embedded and 1 through --url; a malformed name stays 2.
    dl = "DL=11111111-2222-3333-4444-555555555555"
    r = run(data, "send", dl, "x")
    assert r.exit_code == 1 and "MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION" in r.stderr, r.output
    r = run(data, "send", "DL=nope", "x")
    assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_FORMATNAME" in r.stderr and "not a GUID" in r.stderr


def test_send_unreadable_file_is_one_line(data: str, tmp_path: Path) -> None:
    folder = tmp_path / "adir"
    folder.mkdir()
    r = run(data, "send", ORDERS, "--file", str(folder))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "cannot read" in r.stderr


def test_send_body_and_file_together_is_usage_error(data: str) -> None:
    r = run(data, "send", ORDERS, "x", "--file", "-")
    assert r.exit_code == 2 and "not both" in r.stderr


def test_send_to_unknown_queue_and_malformed_names(data: str) -> None:
    r = run(data, "send", r".\private$\nope", "x", "--recoverable")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND 0xC00E0003" in r.stderr
    r = run(data, "send", "DIRECT=XYZ:here\\q", "x")
    assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_FORMATNAME" in r.stderr
    r = run(data, "send", ORDERS, "x", "--admin-queue", "PUBLIC=zzz")
    assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_FORMATNAME" in r.stderr


def test_send_to_a_multiple_element_name_puts_a_copy_in_each_queue(data: str) -> None:
    # [MS-MQMQ] 2.1.7: a comma-separated list of format names; each copy names the list.
    both = r"DIRECT=OS:.\private$\orders,DIRECT=OS:.\private$\acks"
    r = run(data, "send", both, "fan out", "--recoverable", "--count", "2")
    assert r.exit_code == 0, r.stderr
    for name in (ORDERS, r".\private$\acks"):
        got = peek_all(data, name)
        assert [m.body for m in got] == [b"fan out", b"fan out"]
        assert {m.destination_format_name for m in got} == {both}
    r = run(data, "receive", r".\private$\acks")
    assert r.exit_code == 0 and f"destination_format_name: {both}" in r.stdout
    r = run(data, "receive", r".\private$\acks", "--json")
    assert json.loads(r.stdout)["destination_format_name"] == both
    # A missing element refuses the send (exit 1); reading such a name is refused (exit 1).
    r = run(data, "send", both + r",DIRECT=OS:.\private$\nope", "x", "--recoverable")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.stderr
    assert [m.body for m in peek_all(data)] == [b"fan out", b"fan out"]
    r = run(data, "receive", both)
    assert r.exit_code == 1 and "only sends may use it" in r.stderr
    # An export imported into several queues (outside QA: import opened the list to read too).
    exported = run(data, "export", ORDERS)
    assert exported.exit_code == 0, exported.stderr
    r = run(data, "import", "-", both, "--recoverable", stdin=exported.stdout)
    assert r.exit_code == 0, r.stderr
    assert len(peek_all(data)) == 4 and len(peek_all(data, r".\private$\acks")) == 2  # (2 received)


# ---------------------------------------------------------------------- receive / peek
def test_receive_one_text_output_and_exit_3_when_empty(data: str) -> None:
    put(data, b"first", b"second", label="L")
    r = run(data, "receive", ORDERS)
    assert r.exit_code == 0
    assert "body (5 bytes): first" in r.stdout and "label: L" in r.stdout and "lookup_id: 1" in r.stdout
    assert [m.body for m in peek_all(data)] == [b"second"]
    assert run(data, "receive", ORDERS).exit_code == 0
    r = run(data, "receive", ORDERS)
    assert r.exit_code == 3 and "MQ_ERROR_MESSAGE_NOT_FOUND 0xC00E0088" in r.stderr
    r = run(data, "receive", ORDERS, "--timeout", "0.05")
    assert r.exit_code == 3 and "MQ_ERROR_IO_TIMEOUT 0xC00E001B" in r.stderr


def test_text_output_gives_times_in_utc_beside_the_posix_seconds(data: str) -> None:
    put(data, b"t")
    lines = run(data, "peek", ORDERS).stdout.splitlines()
    times = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in lines if "_time: " in line}
    assert set(times) == {"sent_time", "arrived_time"}
    for text in times.values():
        iso, _, raw = text.partition(" (")
        seconds = float(raw.rstrip(")"))
        assert iso == datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert abs(seconds - time.time()) < 600


def test_text_output_tells_why_a_message_is_in_a_dead_letter_or_admin_queue(data: str) -> None:
    # Outside QA: only --json showed the class, the abort and move counts and the reply queues.
    with QueueManager.open(data) as qm:
        acks = qm.queue(r".\private$\acks")
        orders = qm.queue(ORDERS)
        m = Message(body=b"late", delivery=1, ack=0x0C, admin_queue=acks.format_name, max_time_to_receive=0)
        m.response_queue = acks.format_name
        orders.send(m)
        with pytest.raises(MSMQError):
            orders.receive(timeout=0)  # expired (TTBR 0): NACK_RECEIVE_TIMEOUT to acks
        orders.send(Message(body=b"moved", delivery=1))
        orders.move(orders.peek(0).lookup_id, "retry")
    out = run(data, "peek", r".\private$\acks").stdout
    assert "class: 0xC002 MQMSG_CLASS_NACK_RECEIVE_TIMEOUT" in out
    out = run(data, "peek", ORDERS + ";retry").stdout
    assert "abort_count: 0  move_count: 1" in out and "class:" not in out
    out = run(data, "peek", r".\private$\acks").stdout
    assert "response_queue: " in out  # the ack's response queue: the original destination


def test_receive_n_json_lines(data: str) -> None:
    put(data, b"a", b"b", b"c")
    r = run(data, "receive", ORDERS, "-n", "2", "--json")
    assert r.exit_code == 0
    items = [json.loads(line) for line in r.stdout.splitlines()]
    assert [base64.b64decode(i["body"]) for i in items] == [b"a", b"b"]
    assert [i["body_text"] for i in items] == ["a", "b"]
    assert items[0]["lookup_id"] == 1 and items[0]["delivery"] == 1
    # -n is "at most N": fewer messages is still success
    r = run(data, "receive", ORDERS, "-n", "5", "--json")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1
    assert peek_all(data) == []


def test_receive_binary_body_shown_as_hex_or_base64_and_body_only_raw(data: str) -> None:
    small, big = b"\x00\x01\xfe", bytes(range(200))
    put(data, small, big, small)
    r = run(data, "receive", ORDERS)
    assert "body (3 bytes, hex): 0001fe" in r.stdout
    r = run(data, "receive", ORDERS)
    assert f"body (200 bytes, base64): {base64.b64encode(big).decode()}" in r.stdout
    r = run(data, "receive", ORDERS, "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == small


def test_utf16_body_printed_as_text(data: str) -> None:
    put(data, "caf\u00e9".encode("utf-16-le"), body_type=8)
    r = run(data, "peek", ORDERS, "--json")
    assert json.loads(r.stdout)["body_text"] == "caf\u00e9"


def test_receive_follow_until_idle_timeout(data: str) -> None:
    put(data, b"1", b"2", b"3")
    r = run(data, "receive", ORDERS, "--follow", "--timeout", "0.05", "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == b"123"
    r = run(data, "receive", ORDERS, "--follow", "--timeout", "0.05")
    assert r.exit_code == 3


def test_receive_by_lookup_id_and_transactional(data: str) -> None:
    put(data, b"a", b"b", b"c", name=TX)
    r = run(data, "receive", TX, "--lookup-id", "2", "--body-only", "--transactional")
    assert r.exit_code == 0 and r.stdout_bytes == b"b"
    assert [m.body for m in peek_all(data, TX)] == [b"a", b"c"]
    r = run(data, "receive", TX, "--lookup-id", "2")
    assert r.exit_code == 3 and "MQ_ERROR_MESSAGE_NOT_FOUND" in r.stderr
    r = run(data, "receive", ORDERS, "--transactional")
    assert r.exit_code == 1 and "MQ_ERROR_TRANSACTION_USAGE" in r.stderr
    assert run(data, "receive", TX, "--lookup-id", "0").exit_code == 2


def test_a_transactional_receive_that_loses_its_server_says_what_was_printed_is_back(
    data: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server went away after three printed messages: the error said only that (outside QA);
    # the messages were not consumed, and the operator must know.
    from pymsmq.qm.queue import Queue

    put(data, b"a", b"b", b"c", name=TX)
    real_receive = Queue.receive
    calls: list[int] = []

    def receive(self: Queue, *args: object, **kwargs: object) -> Message:
        calls.append(1)
        if len(calls) == 3:
            raise MSMQError("the server closed the connection", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
        return real_receive(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Queue, "receive", receive)
    r = run(data, "receive", TX, "-n", "3", "--body-only", "--transactional")
    assert r.exit_code == 1 and r.stdout_bytes == b"ab"
    assert "the transaction was not committed: the 2 message(s) printed are back in the queue" in r.stderr
    monkeypatch.setattr(Queue, "receive", real_receive)
    assert [m.body for m in peek_all(data, TX)] == [b"a", b"b", b"c"]


def test_a_text_body_cannot_pass_for_the_listings_own_lines(data: str) -> None:
    # A carriage return overwrote "10 USD" with "99999 USD" on a terminal, and a body's lines
    # looked like another message's fields (outside QA).
    forged = "Amount: 10 USD\rAmount: 99999 USD\n\nlookup_id: 1\nlabel: payroll"
    put(data, forged.encode())
    r = run(data, "peek", ORDERS)
    assert r.exit_code == 0
    shown = "Amount: 10 USD\\rAmount: 99999 USD\n  \n  lookup_id: 1\n  label: payroll\n"
    assert f"body ({len(forged)} bytes): {shown}" in r.stdout
    assert "\r" not in r.stdout and [
        line for line in r.stdout.splitlines() if line.startswith("lookup_id:")
    ] == ["lookup_id: 1"]
    assert run(data, "peek", ORDERS, "--body-only").stdout == forged  # as it is


def test_receive_and_peek_by_id_and_correlation_id(data: str) -> None:
    request = ObjectId(uuid.uuid4(), 3)
    put(data, b"other", correlation_id=ObjectId(uuid.uuid4(), 1))
    put(data, b"r1", b"r2", correlation_id=request)
    put(data, b"last")
    r = run(data, "peek", ORDERS, "--correlation-id", str(request), "-n", "5", "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == b"r1"  # a peek prints the first match only
    r = run(data, "receive", ORDERS, "--correlation-id", str(request), "-n", "5", "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == b"r1r2"  # each match in turn
    r = run(data, "receive", ORDERS, "--correlation-id", str(request), "--timeout", "0.1")
    assert r.exit_code == 3 and "MQ_ERROR_IO_TIMEOUT" in r.stderr
    last = peek_all(data)[-1]
    r = run(data, "peek", ORDERS, "--id", str(last.id), "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["body"] == base64.b64encode(b"last").decode()
    r = run(data, "receive", ORDERS, "--id", str(last.id), "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == b"last"
    assert [m.body for m in peek_all(data)] == [b"other"]
    # Bad usage: an id that does not parse, or two ways of naming the message.
    r = run(data, "receive", ORDERS, "--id", "12")
    assert r.exit_code == 2 and "is not an id" in r.stderr
    r = run(data, "receive", ORDERS, "--id", str(last.id), "--lookup-id", "1")
    assert r.exit_code == 2 and "give one of --lookup-id, --id and --correlation-id" in r.stderr
    assert [m.body for m in peek_all(data)] == [b"other"]


def test_peek_does_not_remove_and_walks_a_cursor(data: str) -> None:
    put(data, b"a", b"b")
    put(data, b"urgent", priority=7)
    r = run(data, "peek", ORDERS, "-n", "10", "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == b"urgentab"
    assert len(peek_all(data)) == 3
    r = run(data, "peek", ORDERS, "--lookup-id", "2", "--json")
    assert json.loads(r.stdout)["body"] == base64.b64encode(b"b").decode()
    r = run(data, "peek", ORDERS, "--lookup-id", "99")
    assert r.exit_code == 3
    assert run(data, "peek", TX).exit_code == 3
    assert run(data, "peek", ORDERS, "--transactional").exit_code == 2  # receive-only option


def test_peek_subqueue_and_journal(data: str) -> None:
    put(data, b"a")
    with QueueManager.open(data) as qm, qm.queue(ORDERS) as q:
        q.move(1, "poison")
    r = run(data, "peek", ORDERS + ";poison", "--body-only")
    assert r.exit_code == 0 and r.stdout_bytes == b"a"
    assert run(data, "peek", ORDERS).exit_code == 3


def test_receive_unknown_queue_and_bad_names(data: str) -> None:
    r = run(data, "receive", r".\private$\nope")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.stderr
    r = run(data, "peek", "PRIVATE=x")
    assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_FORMATNAME" in r.stderr
    r = run(data, "receive", ORDERS, "--timeout", "-1")
    assert r.exit_code == 2


# ---------------------------------------------------------------------- move
def test_move_to_subqueue_by_lookup_id_and_back(data: str) -> None:
    put(data, b"a", b"b", b"c")
    r = run(data, "move", ORDERS, ";poison", "--lookup-id", "2", "--lookup-id", "3", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout) == {"moved": [2, 3]}
    assert [m.body for m in peek_all(data)] == [b"a"]
    poison = peek_all(data, ORDERS + ";poison")
    assert [(m.body, m.lookup_id, m.move_count) for m in poison] == [(b"b", 2, 1), (b"c", 3, 1)]
    assert all(m.last_move_time is not None for m in poison)
    r = run(data, "peek", ORDERS + ";poison", "--json")  # the JSON of a message has it too
    assert r.exit_code == 0 and json.loads(r.stdout.splitlines()[0])["last_move_time"] is not None
    r = run(data, "move", ORDERS + ";poison", ORDERS, "--all")
    assert r.exit_code == 0 and r.stdout.strip() == "moved 2 messages"
    assert [(m.body, m.lookup_id, m.move_count) for m in peek_all(data)] == [
        (b"a", 1, 0),
        (b"b", 2, 2),
        (b"c", 3, 2),
    ]


def test_move_first_n_to_subqueue_by_path(data: str) -> None:
    put(data, b"a", b"b", b"c")
    r = run(data, "move", ORDERS, ORDERS + ";retry", "-n", "2")
    assert r.exit_code == 0
    assert [m.body for m in peek_all(data, ORDERS + ";retry")] == [b"a", b"b"]
    r = run(data, "move", ORDERS + ";retry", ";")  # ';' = the queue itself
    assert r.exit_code == 0 and [m.body for m in peek_all(data)] == [b"a", b"c"]


def test_move_to_another_queue(data: str) -> None:
    put(data, b"a", b"b", label="keep")
    r = run(data, "move", ORDERS, r".\private$\acks", "--all")
    assert r.exit_code == 0 and peek_all(data) == []
    moved = peek_all(data, r".\private$\acks")
    assert [(m.body, m.label, m.delivery) for m in moved] == [(b"a", "keep", 1), (b"b", "keep", 1)]


def test_move_between_transactional_queues_in_one_transaction(data: str) -> None:
    with QueueManager.open(data) as qm:
        qm.create_queue(r".\private$\tx2", transactional=True)
    put(data, b"a", b"b", name=TX)
    r = run(data, "move", TX, r".\private$\tx2", "--lookup-id", "2")
    assert r.exit_code == 0
    assert [m.body for m in peek_all(data, TX)] == [b"a"]
    assert [m.body for m in peek_all(data, r".\private$\tx2")] == [b"b"]


def test_move_errors(data: str) -> None:
    r = run(data, "move", ORDERS, ";poison")
    assert r.exit_code == 3 and "no message to move" in r.stderr
    put(data, b"a")
    r = run(data, "move", ORDERS, ";poison", "--lookup-id", "9")
    assert r.exit_code == 3 and "MQ_ERROR_MESSAGE_NOT_FOUND" in r.stderr
    r = run(data, "move", ORDERS, ";bad name!")
    assert r.exit_code == 2 and "MQ_ERROR_ILLEGAL_QUEUE_PATHNAME" in r.stderr
    r = run(data, "move", ORDERS, r".\private$\nope")
    assert r.exit_code == 1 and "MQ_ERROR_QUEUE_NOT_FOUND" in r.stderr
    r = run(data, "move", ORDERS, ORDERS)
    assert r.exit_code == 2 and "same queue" in r.stderr
    r = run(data, "move", ORDERS, ";p", "-n", "1", "--all")
    assert r.exit_code == 2 and "one of" in r.stderr
    assert [m.body for m in peek_all(data)] == [b"a"]
