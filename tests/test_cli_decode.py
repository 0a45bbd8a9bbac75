"""``pymsmq decode``: analyser-style text, JSON, hex input, streams, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from pymsmq.cli import main

VECTORS = Path(__file__).parent / "vectors"


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_decode_user_message_prints_fields() -> None:
    code, out, _ = run("decode", str(VECTORS / "queuejumper-msf-usermessage-srmp.bin"))
    assert code == 0
    assert out.startswith("UserMessage at offset 0, 2404 bytes")
    assert "direct_format_name: 'http://192.168.56.113/msmq/private$/queuejumper'" in out
    assert "label: 'poc'" in out
    assert "header_id: 500 (0x1F4)" in out


def test_decode_json_is_machine_readable() -> None:
    code, out, _ = run(
        "decode", "--json", str(VECTORS / "mqqb-4.1.5-frame5-connectionparameters-request.bin")
    )
    assert code == 0
    [item] = json.loads(out)
    assert item["kind"] == "ConnectionParameters"
    assert item["packet"]["recoverable_ack_timeout"] == 1496
    assert item["packet"]["ack_timeout"] == 120000
    assert item["packet"]["window_size"] == 64


def test_decode_stream_of_packets_from_stdin_as_hex() -> None:
    names = [
        "mqqb-4.1.3-frame3-establishconnection-request.bin",
        "mqqb-4.1.5-frame5-connectionparameters-request.bin",
        "queuejumper-nse-usermessage-srmp.bin",
        "mqqb-4.1.8-frame8-sessionack.bin",
    ]
    stream = b"".join((VECTORS / n).read_bytes() for n in names)
    code, out, _ = run("decode", "--hex", "--json", "-", stdin=stream.hex(" ").encode())
    assert code == 0
    kinds = [(p["kind"], p["offset"]) for p in json.loads(out)]
    assert kinds == [
        ("EstablishConnection", 0),
        ("ConnectionParameters", 572),
        ("UserMessage", 604),
        ("SessionAck", 604 + 2380),
    ]


def test_decode_ping_datagram() -> None:
    code, out, _ = run("decode", str(VECTORS / "mqqb-4.1.1-frame1-ping-request.bin"))
    assert code == 0
    assert out.startswith("PingPacket at offset 0, 24 bytes")
    assert "cookie: 4" in out


def test_malformed_packet_is_one_line_error_exit_2() -> None:
    path = VECTORS / "queuejumper-msf-usermessage-srmp-malformed-datalength.bin"
    code, out, err = run("decode", str(path))
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "SRMPEnvelopeHeader" in err
    # The CLI's error form (docs/cli.md): the HRESULT once, at the end, in parentheses.
    assert err.rstrip().endswith("(MQ_ERROR_INVALID_PARAMETER 0xC00E0006)") and err.count("0xC00E0006") == 1


def test_unreadable_file_and_bad_hex_exit_2(tmp_path: Path) -> None:
    code, _, err = run("decode", str(tmp_path / "missing.bin"))
    assert code == 2
    assert "cannot read" in err
    code, _, err = run("decode", "--hex", "-", stdin=b"10 00 zz")
    assert code == 2
    assert "not hex text" in err


def test_truncated_stream_exit_2() -> None:
    data = (VECTORS / "mqqb-4.1.3-frame3-establishconnection-request.bin").read_bytes()[:100]
    code, _, err = run("decode", "-", stdin=data)
    assert code == 2
    assert err.startswith("Error:")


def test_an_output_closed_under_decode_is_reported(tmp_path: Path) -> None:
    # `pymsmq decode capture.bin | head -1`: exit 1 with "the output was closed" on stderr, as every
    # other command (it exited 1 saying nothing).
    capture = tmp_path / "many.bin"
    capture.write_bytes((VECTORS / "queuejumper-msf-usermessage-srmp.bin").read_bytes() * 200)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pymsmq.cli", "decode", str(capture)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("UserMessage at offset 0")
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read()
    assert proc.wait(60) == 1
    assert "the output was closed" in err and "Traceback" not in err
