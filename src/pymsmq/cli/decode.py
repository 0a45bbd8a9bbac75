"""``pymsmq decode``: print MSMQ packets field by field, like a protocol analyser (or as JSON)."""

from __future__ import annotations

import binascii
import json
from typing import Any

import click

from pymsmq.cli._common import EXIT_CODES_HELP, BadInput, error_line, msmq_command, stdin_bytes
from pymsmq.cli.render import rows, to_jsonable
from pymsmq.errors import WireError
from pymsmq.wire.base_header import BASE_HEADER_SIGNATURE
from pymsmq.wire.framing import PacketFramer
from pymsmq.wire.packet import Packet, decode_packet

__all__ = ["decode"]


def _read_input(source: str, as_hex: bool) -> bytes:
    try:
        if source == "-":
            raw = stdin_bytes()
        else:
            with open(source, "rb") as fh:
                raw = fh.read()
    except OSError as exc:
        raise BadInput(f"cannot read {source}: {exc.strerror or exc}") from exc
    if not as_hex:
        return raw
    try:
        return binascii.unhexlify("".join(raw.decode("ascii").split()))
    except (UnicodeDecodeError, binascii.Error, ValueError) as exc:
        raise BadInput(f"{source} is not hex text: {exc}") from exc


def _split(data: bytes) -> list[tuple[int, bytes]]:
    """One packet, or a TCP 1801 stream of packets framed by PacketSize (+ SessionHeader)."""
    if len(data) < 8 or int.from_bytes(data[4:8], "little") != BASE_HEADER_SIGNATURE:
        return [(0, data)]
    framer = PacketFramer()
    framer.feed(data)
    packets: list[tuple[int, bytes]] = []
    offset = 0
    for chunk in framer:
        packets.append((offset, chunk))
        offset += len(chunk)
    framer.end_of_stream()
    return packets


def _print_packet(offset: int, raw: bytes, packet: Packet) -> None:
    click.echo(f"{type(packet).__name__} at offset {offset}, {len(raw)} bytes")
    for depth, name, text in rows(packet):
        if depth == 0:
            continue
        click.echo(f"{'  ' * depth}{name}: {text}")


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("source", metavar="FILE|-")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per packet, in a list).")
@click.option("--hex", "as_hex", is_flag=True, help="The input is hex text (whitespace ignored).")
@msmq_command
def decode(source: str, as_json: bool, as_hex: bool) -> None:
    """Decode MSMQ packets ([MS-MQMQ] UserMessage, [MS-MQQB] session packets, UDP ping) field by field.

    FILE may hold one packet or a captured TCP 1801 stream of several; '-' reads standard input.
    Exit code 2 means the input is not valid MSMQ bytes (the error names the offset).

    \b
    Example:
      echo 10cd1b004c494f5224000000ffffffff0000010001000000000000000000000040000000 | pymsmq decode --hex -
      pymsmq decode capture.bin --json
      xxd -p capture.bin | pymsmq decode --hex --json -
    """
    data = _read_input(source, as_hex)
    try:
        packets = [(offset, raw, decode_packet(raw)) for offset, raw in _split(data)]
    except WireError as exc:
        raise BadInput(f"{source}: not a valid MSMQ packet: {error_line(exc)}") from exc
    if as_json:
        out: list[Any] = [
            {"offset": offset, "size": len(raw), "kind": type(p).__name__, "packet": to_jsonable(p)}
            for offset, raw, p in packets
        ]
        click.echo(json.dumps(out, indent=2))
        return
    for i, (offset, raw, packet) in enumerate(packets):
        if i:
            click.echo("")
        _print_packet(offset, raw, packet)
