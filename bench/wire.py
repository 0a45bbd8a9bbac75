"""Codec benchmark: encode and decode of a typical UserMessage on one core.

Typical message (DESIGN.md target: each >= 100k/s per core): a 200-byte body, a direct format name,
a label, a source queue manager GUID and a message id.  Peers measured in the same run:
- ``json``: stdlib json of the same fields (body as hex), the usual "just serialise a dict" choice;
- ``struct floor``: packing/unpacking the same fixed fields with one precompiled struct and raw string
  copies, i.e. the least any Python codec of this layout can cost.

    python bench/wire.py [--quick] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import uuid

from _report import machine, rate, write_section
from pymsmq.wire.packet import decode_packet
from pymsmq.wire.user_message import UserMessage

SECTION = "## Wire codec (bench/wire.py)"
QM = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")
DEST = "TCP:10.0.0.1\\PRIVATE$\\orders"
BODY = bytes(range(200))
LABEL = "order 12345"


def build() -> UserMessage:
    return UserMessage.build(
        destination=DEST,
        body=BODY,
        label=LABEL,
        priority=3,
        source_queue_manager=QM,
        message_id=4242,
        sent_time=1_700_000_000,
        recoverable=True,
    )


_FLOOR = struct.Struct("<BBHIII16s16sIIII20sIIII")


def floor_encode() -> bytes:
    dest = DEST.encode("utf-16-le")
    label = LABEL.encode("utf-16-le")
    head = _FLOOR.pack(
        0x10,
        0,
        3,
        0x524F494C,
        0,
        0xFFFFFFFF,
        QM.bytes_le,
        bytes(16),
        0,
        0,
        4242,
        0,
        bytes(20),
        0,
        0,
        200,
        200,
    )
    return head + dest + label + BODY


def floor_decode(data: bytes) -> tuple[object, ...]:
    fields = _FLOOR.unpack_from(data)
    n = _FLOOR.size
    dest = data[n : n + 58].decode("utf-16-le")
    label = data[n + 58 : n + 80].decode("utf-16-le")
    return (*fields, uuid.UUID(bytes_le=fields[6]), dest, label, data[n + 80 :])


def as_json() -> str:
    return json.dumps(
        {
            "destination": DEST,
            "label": LABEL,
            "body": BODY.hex(),
            "priority": 3,
            "source_queue_manager": str(QM),
            "message_id": 4242,
            "sent_time": 1_700_000_000,
            "recoverable": True,
        }
    )


def from_json(text: str) -> dict[str, object]:
    d: dict[str, object] = json.loads(text)
    d["body"] = bytes.fromhex(str(d["body"]))
    d["source_queue_manager"] = uuid.UUID(str(d["source_queue_manager"]))
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the target says
    n = 20_000 if args.quick else 200_000
    msg = build()
    data = msg.encode()
    assert UserMessage.decode(data) == msg and decode_packet(data) == msg
    text_json = as_json()
    floor = floor_encode()
    # The decoder memoises GUIDs and queue names by their bytes; distinct packets show the cold cost.
    distinct = [
        UserMessage.build(
            destination=f"TCP:10.0.{i // 250}.{i % 250}\\PRIVATE$\\q{i}",
            body=BODY,
            label=LABEL,
            source_queue_manager=uuid.uuid4(),
            message_id=i + 1,
            recoverable=True,
        ).encode()
        for i in range(10_000)
    ]
    cycle = iter(distinct * (3 * n // len(distinct) + 3))
    results = {
        "decode (UserMessage.decode)": rate(n, lambda: UserMessage.decode(data)),
        "decode, 10,000 distinct packets (caches cold)": rate(n, lambda: UserMessage.decode(next(cycle))),
        "decode (decode_packet: identify + decode)": rate(n, lambda: decode_packet(data)),
        "encode (UserMessage.encode of a value)": rate(n, msg.encode),
        "build + encode (UserMessage.build(...).encode())": rate(n, lambda: build().encode()),
    }
    peers = {
        "json.loads (+ body/GUID)": rate(n, lambda: from_json(text_json)),
        "json.dumps": rate(n, as_json),
        "struct floor decode": rate(n, lambda: floor_decode(floor)),
        "struct floor encode": rate(n, floor_encode),
    }
    peer_for = {
        "decode (UserMessage.decode)": ("json.loads (+ body/GUID)", "struct floor decode"),
        "decode, 10,000 distinct packets (caches cold)": ("json.loads (+ body/GUID)", "struct floor decode"),
        "decode (decode_packet: identify + decode)": ("json.loads (+ body/GUID)", "struct floor decode"),
        "encode (UserMessage.encode of a value)": ("json.dumps", "struct floor encode"),
        "build + encode (UserMessage.build(...).encode())": ("json.dumps", "struct floor encode"),
    }
    lines = [
        SECTION,
        "",
        f"UserMessage of {len(data)} bytes: 200-byte body, direct format name `{DEST}`, label, recoverable.",
        f"One core, {n:,} iterations, best of 3; {machine()}. Target: >= 100k/s each (DESIGN.md).",
        "",
        "| operation | rate (/s) | vs target 100k/s | vs json | vs struct floor |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, value in results.items():
        json_peer, floor_peer = peer_for[name]
        lines.append(
            f"| {name} | {value:,.0f} | {value / 100_000:.2f}x | {value / peers[json_peer]:.2f}x "
            f"| {value / peers[floor_peer]:.2f}x |"
        )
    lines += ["", "Peers measured in the same run:", "", "| peer | rate (/s) |", "|---|---:|"]
    lines += [f"| {name} | {value:,.0f} |" for name, value in peers.items()]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
