"""The shared ``Structure`` mixin and padding helpers of ``pymsmq.wire._structure``.

Besides the mixin on its own (a toy structure), every structure that uses it is checked here for what
the mixin must keep as each class had it before: the name in the "trailing bytes after <name>" error,
the offset of that error, byte-exact ``decode(encode(x))`` of a sample, and that the class stays slotted.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import WireError
from pymsmq.wire import _structure
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure, check_end, read_padding, utf16_units, write_padding
from pymsmq.wire.cac_transfer_buffer import CACTransferBufferV1
from pymsmq.wire.change_notification import NotificationCommand, NotificationUpdate
from pymsmq.wire.internal_packets import InternalHeader
from pymsmq.wire.large_integer import ULargeInteger, VariantBoolValue
from pymsmq.wire.message_properties_header import MessagePropertiesHeader
from pymsmq.wire.mqrr_headers import (
    CompoundMessageHeader,
    DeadLetterHeader,
    ExtendedAddressHeader,
    ExtensionHeader,
    SRMPEnvelopeHeader,
    SubqueueHeader,
)
from pymsmq.wire.optional_headers import (
    DebugHeader,
    MQFAddressHeader,
    MQFSignatureHeader,
    MultiQueueFormatHeader,
    SoapHeader,
    TransactionHeader,
)
from pymsmq.wire.packet_types import (
    XACTUOW,
    DirectQueueFormatName,
    MessageIdentifier,
    MQFFormatNameElement,
    PrivateQueueFormatName,
    PrivateQueueFormatNameId,
    PublicQueueFormatName,
    TxSequenceID,
)
from pymsmq.wire.public_key import MQDSPublicKey, MQDSPublicKeys
from pymsmq.wire.queue_format import DlId, MulticastId, ObjectId, QueueFormat, QueueFormatType
from pymsmq.wire.security_header import SecurityHeader
from pymsmq.wire.sequence_info import SequenceInfo
from pymsmq.wire.ta_address import TAAddress
from pymsmq.wire.user_header import UserHeader
from pymsmq.wire.user_sign_cert import MQUserSignCert, MQUserSignCerts

GUID = uuid.UUID("557358d1-9150-9595-4997-b6e611ea26c6")

# ---------------------------------------------------------------------------------------------
# a toy structure: u16 count, then count bytes


_HEAD = struct.Struct("<H")


@dataclass(frozen=True, slots=True)
class _Blob(Structure):
    data: bytes = b""

    @classmethod
    def read(cls, r: Reader) -> Self:
        n = r.u16("Blob.Count")
        return cls(r.raw(n, "Blob.Data"))

    def write(self, w: Writer) -> None:
        if len(self.data) > 0xFFFF:
            raise WireError("Blob.Data too long")
        w.raw(_HEAD.pack(len(self.data)) + self.data)


@dataclass(frozen=True, slots=True)
class _NamedBlob(Structure):
    _wire_name: ClassVar[str] = "NAMED_BLOB"

    value: int = 0

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(r.u32("NamedBlob.Value"))

    def write(self, w: Writer) -> None:
        w.u32(self.value)


class _NoCodec(Structure):
    __slots__ = ()


def test_toy_vectors_both_ways() -> None:
    assert _Blob(b"ab").encode() == b"\x02\x00ab"
    assert _Blob.decode(b"\x02\x00ab") == _Blob(b"ab")
    assert _Blob().encode() == b"\x00\x00"
    assert _NamedBlob(0x01020304).encode() == b"\x04\x03\x02\x01"
    assert _NamedBlob.decode(b"\x04\x03\x02\x01") == _NamedBlob(0x01020304)


def test_trailing_bytes_name_and_offset() -> None:
    with pytest.raises(WireError, match=r"^3 trailing bytes after _Blob") as info:
        _Blob.decode(b"\x01\x00a" + b"xyz")
    assert info.value.offset == 3
    with pytest.raises(WireError, match=r"^1 trailing bytes after NAMED_BLOB") as info:
        _NamedBlob.decode(b"\x00" * 5)
    assert info.value.offset == 4


def test_truncation_is_the_read_error() -> None:
    with pytest.raises(WireError, match=r"truncated Blob\.Data"):
        _Blob.decode(b"\x05\x00ab")
    with pytest.raises(WireError, match=r"truncated Blob\.Count"):
        _Blob.decode(b"\x05")


def test_encode_errors_propagate() -> None:
    with pytest.raises(WireError, match="too long"):
        _Blob(bytes(0x10000)).encode()
    with pytest.raises(WireError):
        _NamedBlob(-1).encode()


def test_mixin_stays_slotted_and_stateless() -> None:
    assert Structure.__slots__ == ()
    assert not hasattr(_Blob(), "__dict__")
    assert "_wire_name" not in _Blob.__slots__
    assert _Blob._wire_name == ""


def test_unimplemented_read_and_write() -> None:
    with pytest.raises(NotImplementedError, match=r"_NoCodec\.read"):
        _NoCodec.decode(b"")
    with pytest.raises(NotImplementedError, match=r"_NoCodec\.write"):
        _NoCodec().encode()


@given(st.binary(max_size=300))
def test_toy_round_trip(data: bytes) -> None:
    value = _Blob(data)
    assert _Blob.decode(value.encode()) == value


@given(st.binary(max_size=64))
def test_toy_arbitrary_bytes(data: bytes) -> None:
    try:
        value = _Blob.decode(data)
    except WireError:
        return
    assert value.encode() == data


# ---------------------------------------------------------------------------------------------
# helpers


def test_check_end() -> None:
    r = Reader(b"abc")
    r.raw(1)
    with pytest.raises(WireError, match=r"^2 trailing bytes after Thing") as info:
        check_end(r, "Thing")
    assert info.value.offset == 1
    r.raw(2)
    check_end(r, "Thing")
    assert r.remaining == 0


@pytest.mark.parametrize(
    ("data", "start", "body", "expected", "pos"),
    [
        (b"\x01\x02\x03\x04\x05", 0, 4, b"", 4),  # already aligned: nothing consumed
        (b"\x01\x00\x00\x00", 0, 1, b"", 4),  # 3 zero bytes: kept as b""
        (b"\x01\xaa\x00\xbb\x07", 0, 1, b"\xaa\x00\xbb", 4),  # non-zero padding is kept verbatim
        (b"\x01\xaa", 0, 1, b"\xaa", 2),  # cut short at the end of the input: what is there is taken
        (b"\xff\xff\x01\x02\x00\x00", 2, 2, b"", 6),  # counted from the header's start, not offset 0
        (b"\xff\xff\x01\x02\x00\x09", 2, 2, b"\x00\x09", 6),
    ],
)
def test_read_padding(data: bytes, start: int, body: int, expected: bytes, pos: int) -> None:
    r = Reader(data, start)
    r.raw(body)
    assert read_padding(r, start) == expected
    assert r.pos == pos


@pytest.mark.parametrize(
    ("written", "padding", "expected"),
    [
        (b"\x01", b"", b"\x01\x00\x00\x00"),
        (b"\x01", b"\xaa", b"\x01\xaa\x00\x00"),
        (b"\x01\x02\x03", b"\xbb", b"\x01\x02\x03\xbb"),
        (b"\x01\x02\x03\x04", b"", b"\x01\x02\x03\x04"),
    ],
)
def test_write_padding(written: bytes, padding: bytes, expected: bytes) -> None:
    w = Writer()
    w.raw(b"\xff\xff")  # the header starts at offset 2
    w.raw(written)
    write_padding(w, 2, padding, "X")
    assert w.getvalue() == b"\xff\xff" + expected


def test_write_padding_too_long() -> None:
    w = Writer()
    w.raw(b"\x01\x02\x03")
    with pytest.raises(WireError, match=r"X\.padding has 2 bytes, the header needs 1"):
        write_padding(w, 0, b"\x00\x00", "X")
    w2 = Writer()
    w2.raw(b"\x01\x02\x03\x04")
    with pytest.raises(WireError, match="the header needs 0"):
        write_padding(w2, 0, b"\x00", "X")


@given(st.binary(max_size=7), st.integers(0, 3), st.binary(max_size=3))
def test_padding_round_trip(body: bytes, start: int, padding: bytes) -> None:
    w = Writer()
    w.raw(bytes(start) + body)
    n = -len(body) & 3
    if len(padding) > n:
        with pytest.raises(WireError):
            write_padding(w, start, padding, "X")
        return
    write_padding(w, start, padding, "X")
    out = w.getvalue()
    assert (len(out) - start) % 4 == 0
    r = Reader(out, start + len(body))
    kept = read_padding(r, start)
    assert r.remaining == 0
    assert kept == (padding + bytes(n - len(padding)) if padding.strip(b"\x00") else b"")


@pytest.mark.parametrize(("text", "units"), [("", 0), ("abc", 3), ("\U0001f600", 2), ("\ud800x", 2)])
def test_utf16_units(text: str, units: int) -> None:
    assert utf16_units(text) == units


def test_optional_headers_keeps_the_helper_names() -> None:
    from pymsmq.wire import optional_headers

    assert optional_headers.read_padding is _structure.read_padding
    assert optional_headers.write_padding is _structure.write_padding
    assert optional_headers.check_end is _structure.check_end
    assert optional_headers.utf16_units is _structure.utf16_units


# ---------------------------------------------------------------------------------------------
# every structure that uses the mixin: (sample, name in the trailing-bytes error)

_SAMPLES: list[tuple[Any, str]] = [
    (TxSequenceID(1, 2), "TxSequenceID"),
    (MessageIdentifier(GUID, 7), "MessageIdentifier"),
    (XACTUOW(), "XACTUOW"),
    (PrivateQueueFormatNameId(5), "PrivateQueueFormatNameId"),
    (PublicQueueFormatName(GUID), "PublicQueueFormatName"),
    (PrivateQueueFormatName(GUID, 3), "PrivateQueueFormatName"),
    (DirectQueueFormatName("OS:host\\private$\\q1", b"\x01\x02"), "DirectQueueFormatName"),
    (MQFFormatNameElement(PublicQueueFormatName(GUID)), "MQFFormatNameElement"),
    (TransactionHeader(), "TransactionHeader"),
    (DebugHeader(), "DebugHeader"),
    (SoapHeader("h", "b"), "SoapHeader"),
    (MQFAddressHeader(), "MQFAddressHeader"),
    (MQFSignatureHeader(), "MQFSignatureHeader"),
    (MultiQueueFormatHeader(), "MultiQueueFormatHeader"),
    (SRMPEnvelopeHeader("env"), "SRMPEnvelopeHeader"),
    (CompoundMessageHeader(), "CompoundMessageHeader"),
    (ExtensionHeader(), "ExtensionHeader"),
    (SubqueueHeader(), "SubqueueHeader"),
    (DeadLetterHeader("DIRECT=OS:h\\q"), "DeadLetterHeader"),
    (ExtendedAddressHeader(), "ExtendedAddressHeader"),
    (SecurityHeader(flags=0x81, security_id=b"\x01\x02\x03"), "SecurityHeader"),
    (ObjectId(GUID, 9), "OBJECTID"),
    (MulticastId(0x0100007F, 8000), "MULTICAST_ID"),
    (DlId(GUID), "DL_ID"),
    (QueueFormat(QueueFormatType.QUEUE_FORMAT_TYPE_PUBLIC, public_id=GUID), "QUEUE_FORMAT"),
    (QueueFormat(QueueFormatType.QUEUE_FORMAT_TYPE_DIRECT, direct_id="OS:h\\q"), "QUEUE_FORMAT"),
    (MQDSPublicKey(), "MQDSPUBLICKEY"),
    (MQDSPublicKeys(), "MQDSPUBLICKEYS"),
    (MQUserSignCert(), "MQUSERSIGNCERT"),
    (MQUserSignCerts(), "MQUSERSIGNCERTS"),
    (ULargeInteger(0x0102030405060708), "ULARGE_INTEGER"),
    (VariantBoolValue(), "VARIANT_BOOL"),
    (SequenceInfo(), "SEQUENCE_INFO"),
    (TAAddress(), "TA_ADDRESS"),
    (UserHeader(), "UserHeader"),
    (MessagePropertiesHeader(), "MessagePropertiesHeader"),
    (NotificationUpdate(NotificationCommand.DELETE, GUID, path_name="m\\q"), "Notification Update"),
    (CACTransferBufferV1(), "CACTransferBufferV1"),
    (InternalHeader(), "InternalHeader"),
]

_DICT_CLASSES = (UserHeader, MessagePropertiesHeader)

_IDS = [f"{type(v).__name__}-{i}" for i, (v, _) in enumerate(_SAMPLES)]


@pytest.mark.parametrize(("value", "name"), _SAMPLES, ids=_IDS)
def test_structure_uses_the_mixin(value: Any, name: str) -> None:
    cls = type(value)
    assert issubclass(cls, Structure)
    # The mixin adds no instance state: a slotted class stays slotted; the two UserMessage headers
    # are plain (dict) dataclasses on purpose (their readers fill ``__dict__`` in one step).
    assert hasattr(value, "__dict__") == (cls in _DICT_CLASSES)
    assert (cls._wire_name or cls.__name__) == name


@pytest.mark.parametrize(("value", "name"), _SAMPLES, ids=_IDS)
def test_structure_decode_encode_exact(value: Any, name: str) -> None:
    data = value.encode()
    assert isinstance(data, bytes)
    assert data
    decoded = type(value).decode(data)
    assert decoded == value
    assert decoded.encode() == data


@pytest.mark.parametrize(("value", "name"), _SAMPLES, ids=_IDS)
@pytest.mark.parametrize("extra", [b"\x00", b"\xff\xfe\xfd\xfc\xfb"])
def test_structure_trailing_bytes_error(value: Any, name: str, extra: bytes) -> None:
    data = value.encode()
    with pytest.raises(WireError) as info:
        type(value).decode(data + extra)
    assert str(info.value).startswith(f"{len(extra)} trailing bytes after {name}")
    assert info.value.offset == len(data)


@pytest.mark.parametrize(("value", "name"), _SAMPLES, ids=_IDS)
@given(data=st.binary(max_size=200))
def test_structure_arbitrary_bytes(value: Any, name: str, data: bytes) -> None:
    try:
        type(value).decode(data)
    except WireError:
        pass


@pytest.mark.parametrize(("value", "name"), _SAMPLES, ids=_IDS)
def test_structure_truncations(value: Any, name: str) -> None:
    data = value.encode()
    for n in range(len(data)):
        try:
            type(value).decode(data[:n])
        except WireError:
            pass


# ---------------------------------------------------------------------------------------------
# Reader.unpack: the fixed-layout read the structures share

_PAIR = struct.Struct("<HI")


def test_reader_unpack_vector() -> None:
    r = Reader(b"\xaa\x02\x01\x04\x03\x02\x01\xbb", 1, 7)
    assert r.unpack(_PAIR, "Pair") == (0x0102, 0x01020304)
    assert r.pos == 7
    assert r.remaining == 0


def test_reader_unpack_truncated_is_need_error() -> None:
    data = b"\x00" * 5
    r = Reader(data, 1)
    with pytest.raises(WireError) as got:
        r.unpack(_PAIR, "Pair")
    with pytest.raises(WireError) as want:
        Reader(data, 1).need(_PAIR.size, "Pair")
    assert str(got.value) == str(want.value)
    assert str(got.value).startswith("truncated Pair: need 6 bytes, 4 left at offset 1")
    assert got.value.offset == 1
    assert r.pos == 1  # nothing consumed


@given(st.binary(max_size=12), st.integers(0, 12))
def test_reader_unpack_arbitrary(data: bytes, start: int) -> None:
    r = Reader(data, start)
    try:
        fields = r.unpack(_PAIR, "Pair")
    except WireError:
        assert start + _PAIR.size > len(data)
        assert r.pos == start
        return
    assert fields == _PAIR.unpack_from(data, start)
    assert r.pos == start + _PAIR.size
