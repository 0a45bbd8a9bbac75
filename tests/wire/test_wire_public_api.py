"""The DESIGN.md wire snippet works as written (the public names are a contract)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pymsmq.wire as wire
from pymsmq.wire import FormatName, FormatNameError, PathName, WireError, decode_packet

VECTORS = Path(__file__).parents[1] / "vectors"


def test_design_snippet() -> None:
    fn = FormatName.parse(r"DIRECT=TCP:10.0.0.1\PRIVATE$\orders;JOURNAL")
    assert str(fn) == r"DIRECT=TCP:10.0.0.1\private$\orders;JOURNAL"
    assert fn.is_direct and fn.is_journal
    with pytest.raises(FormatNameError) as info:
        FormatName.parse("DIRECT=TCP:10.0.0.1")
    assert info.value.hresult == 0xC00E001E
    assert str(PathName.parse(r".\private$\orders")) == r".\private$\orders"
    data = (VECTORS / "queuejumper-nse-usermessage-srmp.bin").read_bytes()
    pkt = decode_packet(data)
    assert isinstance(pkt, wire.UserMessage)
    assert pkt.base_header.packet_size == 2380
    assert pkt.user_header.destination_queue is not None
    assert pkt.encode() == data
    with pytest.raises(WireError):
        decode_packet(data[:100])


def test_every_exported_name_resolves() -> None:
    assert len(wire.__all__) == len(set(wire.__all__))
    for name in wire.__all__:
        assert getattr(wire, name) is not None
