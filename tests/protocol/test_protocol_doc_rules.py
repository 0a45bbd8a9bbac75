"""Rules of docs/protocol.md that a server connection enforces while decoding: the exact list of
VARTYPEs a PROPS entry may carry (section 3, PROPS encoding), VT_BOOL's two values, the ops of
version 1 (section 4.1), and the token's limit (4.1)."""

from __future__ import annotations

import struct
import uuid

import pytest

from pymsmq.protocol import (
    ClientConnection,
    ClientHello,
    FrameType,
    Op,
    ProtocolError,
    RequestReceived,
    ServerConnection,
    ServerHello,
    encode_frame,
)
from pymsmq.protocol.batch_ops import ReceiveManyRequest, SendManyRequest
from pymsmq.protocol.messages import ReadRangeRequest
from pymsmq.server.access import AccessPolicy

QM = uuid.UUID("11111111-2222-3333-4444-555555555555")
_U32 = struct.Struct("<I")
_WSTR_A = "a\x00".encode("utf-16-le")

#: docs/protocol.md 3, PROPS encoding: every VARTYPE a PROPS entry may carry, with a valid PROPVALUE.
LISTED: dict[int, bytes] = {
    0x0000: b"",  # VT_EMPTY
    0x0001: b"",  # VT_NULL
    0x0010: b"\x80",  # VT_I1
    0x0011: b"\xff",  # VT_UI1
    0x0002: b"\x00\x80",  # VT_I2
    0x0012: b"\xff\xff",  # VT_UI2
    0x0003: _U32.pack(7),  # VT_I4
    0x0013: _U32.pack(7),  # VT_UI4
    0x0014: bytes(8),  # VT_I8
    0x0015: bytes(8),  # VT_UI8
    0x000B: b"\xff\xff",  # VT_BOOL
    0x001F: _WSTR_A,  # VT_LPWSTR
    0x0041: _U32.pack(1) + b"x",  # VT_BLOB
    0x0048: QM.bytes_le,  # VT_CLSID
    0x1011: _U32.pack(2) + b"xy",  # VT_VECTOR|VT_UI1
    0x1012: _U32.pack(1) + b"\x01\x00",  # VT_VECTOR|VT_UI2
    0x1003: _U32.pack(1) + _U32.pack(1),  # VT_VECTOR|VT_I4
    0x1013: _U32.pack(1) + _U32.pack(1),  # VT_VECTOR|VT_UI4
    0x1015: _U32.pack(1) + bytes(8),  # VT_VECTOR|VT_UI8
    0x1048: _U32.pack(1) + QM.bytes_le,  # VT_VECTOR|VT_CLSID
    0x101F: _U32.pack(1) + _WSTR_A,  # VT_VECTOR|VT_LPWSTR
    0x100C: _U32.pack(1) + b"\x13\x00" + _U32.pack(1),  # VT_VECTOR|VT_VARIANT of one VT_UI4
}
#: VARTYPEs that are not in the list (integer types and vectors among them): unknown VARTYPEs.
UNLISTED = (0x1002, 0x1010, 0x1014, 0x100B, 0x1041, 0x001E, 0x101E, 0x0016, 0x0017, 0x0005, 0x0004)


def _server(version: int = 5) -> ServerConnection:
    s = ServerConnection()
    s.receive_data(ClientConnection().send(ClientHello(versions=(version,))))
    s.send(ServerHello(version, QM, "box"))
    return s


def _set_props_frame(vt: int, value: bytes) -> bytes:
    """A SET_QUEUE_PROPERTIES request (name "q") whose PROPS has one entry, PROPID 9999, of ``vt``."""
    name = b"\x01\x00" + "q".encode("utf-16-le")
    props = _U32.pack(1) + struct.pack("<IH", 9999, vt) + value
    return encode_frame(FrameType.REQUEST, name + props, Op.SET_QUEUE_PROPERTIES, 1)


@pytest.mark.parametrize("vt", sorted(LISTED), ids=lambda vt: f"0x{vt:04X}")
def test_every_listed_vartype_decodes(vt: int) -> None:
    (event,) = _server().receive_data(_set_props_frame(vt, LISTED[vt]))
    assert isinstance(event, RequestReceived)
    ((propid, pv),) = event.request.properties  # type: ignore[attr-defined]
    assert (propid, int(pv.vt)) == (9999, vt)


@pytest.mark.parametrize("vt", [*UNLISTED, 0x000C], ids=lambda vt: f"0x{vt:04X}")
def test_an_unlisted_vartype_is_a_protocol_error(vt: int) -> None:
    """VT_VARIANT (0x000C) only exists with VT_VECTOR; the others have no PROPVARIANT arm."""
    with pytest.raises(ProtocolError, match=f"VARTYPE 0x{vt:04X} has no PROPVARIANT arm"):
        _server().receive_data(_set_props_frame(vt, bytes(16)))


def test_an_unlisted_vartype_inside_a_variant_vector_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="VARTYPE 0x0016 has no PROPVARIANT arm"):
        _server().receive_data(_set_props_frame(0x100C, _U32.pack(1) + b"\x16\x00" + bytes(4)))


@pytest.mark.parametrize("raw", [0x0001, 0x00FF, 0xFFFE, 0x8000])
def test_a_vt_bool_other_than_ffff_or_0000_is_a_protocol_error(raw: int) -> None:
    with pytest.raises(ProtocolError, match=f"VT_BOOL value 0x{raw:04X} is neither 0xFFFF nor 0x0000"):
        _server().receive_data(_set_props_frame(0x000B, struct.pack("<H", raw)))
    (event,) = _server().receive_data(_set_props_frame(0x000B, b"\x00\x00"))
    assert isinstance(event, RequestReceived)


@pytest.mark.parametrize(
    "request_",
    [ReadRangeRequest(1), SendManyRequest(1), ReceiveManyRequest(1)],
    ids=["READ_RANGE", "SEND_MANY", "RECEIVE_MANY"],
)
def test_the_batch_ops_are_ops_of_version_1(request_: ReadRangeRequest) -> None:
    """docs/protocol.md 4.1: READ_RANGE, SEND_MANY and RECEIVE_MANY are in version 1."""
    frame = encode_frame(FrameType.REQUEST, request_.encode(), request_.OP, 7)
    (event,) = _server(version=1).receive_data(frame)
    assert event == RequestReceived(7, request_)


def test_a_token_over_4096_bytes_is_a_protocol_error() -> None:
    """docs/protocol.md 4.1: not MQ_ERROR_ACCESS_DENIED, the hello itself is malformed."""
    ok = ClientHello((5,), b"t" * 4096, "c")
    (hello,) = ServerConnection().receive_data(ClientConnection().send(ok))
    assert hello == ok
    payload = b"\x01\x00\x05\x00" + _U32.pack(4097) + b"t" * 4097 + b"\x00\x00"
    with pytest.raises(ProtocolError, match=r"ClientHello\.token is longer than 4096 bytes"):
        ServerConnection().receive_data(encode_frame(FrameType.CLIENT_HELLO, payload))


def test_the_token_bytes_are_the_utf8_of_the_token_text() -> None:
    """docs/protocol.md 4.1: a server configured with the text "tökén" accepts its UTF-8 bytes only."""
    for policy in (
        AccessPolicy.single_token("tökén"),
        AccessPolicy.from_json('{"tokens": {"tökén": "someone"}, "permissions": {}}'),
    ):
        assert policy.authenticate("tökén".encode()) is not None
        assert policy.authenticate("tökén".encode("latin-1")) is None
        assert policy.authenticate("tökén".encode("utf-16-le")) is None
