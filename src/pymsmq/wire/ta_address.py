"""TA_ADDRESS ([MS-MQMQ] 2.2.4, 2.2.4.1, 2.2.4.2): one typed transport address.

Layout (little-endian): AddressLength u16 (size of Address only), AddressType u16, Address
(AddressLength bytes).  PROPID_QM_ADDRESS (206) is a VT_BLOB holding TA_ADDRESS records packed
back to back with no count and no padding; ``decode_ta_addresses`` walks such a blob.

Decisions where the spec leaves room:

- [MS-MQMQ] 2.2.4 fixes AddressLength per type (IP_ 4, IPX_ 10, FOREIGN_ 16); a known type with
  another length is a ``WireError`` both ways.  An AddressType outside the table is kept as a
  plain int with whatever length the record gives (the record is self-delimiting), so one
  unfamiliar entry in a PROPID_QM_ADDRESS blob does not make the whole blob unreadable.
- [MS-MQMQ] 2.2.4.1 calls the IPv4 address "a 32-bit unsigned integer" without a byte order;
  Windows stores an ``in_addr``, i.e. network byte order (10.1.2.3 -> 0A 01 02 03).
  ``address`` always keeps the raw bytes; ``ip_address`` / ``TAAddress.ip`` use the order in
  ``IP_ADDRESS_BYTE_ORDER`` (the one switch to flip if a capture shows otherwise).
- [MS-MQMQ] 2.2.4.2 IPX: Netnum is 4 bytes and nodenum 6 bytes, both kept as raw bytes.
"""

from __future__ import annotations

import ipaddress
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, Final, Literal, Self

from pymsmq.errors import WireError
from pymsmq.wire._buffer import Reader, Writer
from pymsmq.wire._structure import Structure

__all__ = [
    "ADDRESS_LENGTHS",
    "IP_ADDRESS_BYTE_ORDER",
    "TA_ADDRESS",
    "TA_ADDRESS_HEADER_SIZE",
    "AddressType",
    "TAAddress",
    "decode_ta_addresses",
    "encode_ta_addresses",
]

TA_ADDRESS_HEADER_SIZE: Final = 4
# EXT (digest D2.4): Windows keeps the IPv4 address as an in_addr, network byte order.
IP_ADDRESS_BYTE_ORDER: Final[Literal["big", "little"]] = "big"

_HEADER: Final = struct.Struct("<HH")


class AddressType(IntEnum):
    """TA_ADDRESS.AddressType ([MS-MQMQ] 2.2.4); the value 4 is unassigned."""

    IP_ADDRESS_TYPE = 0x0001
    IP_RAS_ADDRESS_TYPE = 0x0002
    IPX_ADDRESS_TYPE = 0x0003
    FOREIGN_ADDRESS_TYPE = 0x0005


# [MS-MQMQ] 2.2.4: "AddressLength ... MUST be one of the following (by address type)".
ADDRESS_LENGTHS: Final[dict[int, int]] = {
    AddressType.IP_ADDRESS_TYPE: 4,
    AddressType.IP_RAS_ADDRESS_TYPE: 4,
    AddressType.IPX_ADDRESS_TYPE: 10,
    AddressType.FOREIGN_ADDRESS_TYPE: 16,
}


def _check_length(address_type: int, length: int, offset: int | None = None) -> None:
    expected = ADDRESS_LENGTHS.get(address_type)
    if expected is not None and length != expected:
        raise WireError(
            f"TA_ADDRESS.AddressLength {length} MUST be {expected} for AddressType {address_type}", offset
        )


@dataclass(frozen=True, slots=True)
class TAAddress(Structure):
    """One transport address: ``address_type`` (an ``AddressType`` or, if unknown, a plain int)
    and the raw ``address`` bytes.  AddressLength is ``len(address)``.
    """

    _wire_name: ClassVar[str] = "TA_ADDRESS"

    address_type: int = AddressType.IP_ADDRESS_TYPE
    address: bytes = bytes(4)

    @property
    def address_length(self) -> int:
        """TA_ADDRESS.AddressLength: the size of ``address`` in bytes."""
        return len(self.address)

    # -- typed views -------------------------------------------------------------------------
    @classmethod
    def ip(cls, value: str | ipaddress.IPv4Address, *, ras: bool = False) -> Self:
        """An IP_ADDRESS_TYPE (or IP_RAS_ADDRESS_TYPE) record for an IPv4 address ([MS-MQMQ] 2.2.4.1)."""
        try:
            packed = int(ipaddress.IPv4Address(value)).to_bytes(4, IP_ADDRESS_BYTE_ORDER)
        except ValueError as exc:
            raise WireError(f"not an IPv4 address: {value!r}") from exc
        kind = AddressType.IP_RAS_ADDRESS_TYPE if ras else AddressType.IP_ADDRESS_TYPE
        return cls(kind, packed)

    @classmethod
    def ipx(cls, netnum: bytes, nodenum: bytes) -> Self:
        """An IPX_ADDRESS_TYPE record: 4-byte Netnum then 6-byte nodenum ([MS-MQMQ] 2.2.4.2)."""
        if len(netnum) != 4 or len(nodenum) != 6:
            raise WireError("IPX address: Netnum is 4 bytes and nodenum 6 bytes")
        return cls(AddressType.IPX_ADDRESS_TYPE, bytes(netnum) + bytes(nodenum))

    @classmethod
    def foreign(cls, connected_network: uuid.UUID) -> Self:
        """A FOREIGN_ADDRESS_TYPE record: the GUID of a connected network ([MS-DTYP] 2.3.4 layout)."""
        return cls(AddressType.FOREIGN_ADDRESS_TYPE, connected_network.bytes_le)

    @property
    def ip_address(self) -> ipaddress.IPv4Address | None:
        """The IPv4 address of an IP_ / IP_RAS_ record, else ``None``."""
        if self.address_type in (AddressType.IP_ADDRESS_TYPE, AddressType.IP_RAS_ADDRESS_TYPE) and (
            len(self.address) == 4
        ):
            return ipaddress.IPv4Address(int.from_bytes(self.address, IP_ADDRESS_BYTE_ORDER))
        return None

    @property
    def ipx_netnum(self) -> bytes | None:
        """The 4-byte IPX network number of an IPX_ record, else ``None``."""
        if self.address_type == AddressType.IPX_ADDRESS_TYPE and len(self.address) == 10:
            return self.address[:4]
        return None

    @property
    def ipx_nodenum(self) -> bytes | None:
        """The 6-byte IPX node number of an IPX_ record, else ``None``."""
        if self.address_type == AddressType.IPX_ADDRESS_TYPE and len(self.address) == 10:
            return self.address[4:]
        return None

    @property
    def foreign_id(self) -> uuid.UUID | None:
        """The connected-network GUID of a FOREIGN_ record, else ``None``."""
        if self.address_type == AddressType.FOREIGN_ADDRESS_TYPE and len(self.address) == 16:
            return uuid.UUID(bytes_le=self.address)
        return None

    # -- codec -------------------------------------------------------------------------------
    @classmethod
    def read(cls, r: Reader) -> Self:
        """Read one record; ``WireError`` if truncated or a known type has the wrong length."""
        start = r.pos
        length, kind = r.unpack(_HEADER, "TA_ADDRESS header")
        _check_length(kind, length, start)
        address = r.raw(length, "TA_ADDRESS.Address")
        address_type: int = AddressType(kind) if kind in ADDRESS_LENGTHS else kind
        return cls(address_type, address)

    def write(self, w: Writer) -> None:
        """Append the record; ``WireError`` if a field is out of range or the length is wrong."""
        _check_length(self.address_type, len(self.address))
        try:
            w.raw(_HEADER.pack(len(self.address), self.address_type))
        except struct.error as exc:
            raise WireError(f"TA_ADDRESS field out of range: {exc}") from exc
        w.raw(self.address)


TA_ADDRESS = TAAddress


def decode_ta_addresses(data: bytes) -> tuple[TAAddress, ...]:
    """The TA_ADDRESS records packed in a PROPID_QM_ADDRESS blob (no count, no padding)."""
    r = Reader(data)
    out: list[TAAddress] = []
    while r.remaining:
        out.append(TAAddress.read(r))
    return tuple(out)


def encode_ta_addresses(addresses: Iterable[TAAddress]) -> bytes:
    """Pack TA_ADDRESS records back to back (the PROPID_QM_ADDRESS blob form)."""
    w = Writer()
    for address in addresses:
        address.write(w)
    return w.getvalue()
