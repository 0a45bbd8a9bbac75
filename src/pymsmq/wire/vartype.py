"""VARTYPE ([MS-MQMQ] 2.2.12, 2.2.12.1): the type tag of a PROPVARIANT value."""

from __future__ import annotations

from enum import IntEnum
from typing import Final

__all__ = ["VECTOR_TYPES", "VT_VECTOR", "VarType"]

# [MS-MQMQ] 2.2.12.1: "VT_VECTOR ... MUST be combined with ... (OR operation)".
VT_VECTOR: Final = 0x1000


class VarType(IntEnum):
    """Every VARTYPE value that has an arm in the [MS-MQMQ] 2.2.13 PROPVARIANT union."""

    VT_EMPTY = 0x0000
    VT_NULL = 0x0001
    VT_I2 = 0x0002
    VT_I4 = 0x0003
    VT_BOOL = 0x000B
    VT_VARIANT = 0x000C
    VT_I1 = 0x0010
    VT_UI1 = 0x0011
    VT_UI2 = 0x0012
    VT_UI4 = 0x0013
    VT_I8 = 0x0014
    VT_UI8 = 0x0015
    VT_LPWSTR = 0x001F
    VT_BLOB = 0x0041
    VT_CLSID = 0x0048
    # Counted arrays ([MS-MQMQ] 2.2.16): only these VT_VECTOR combinations exist.
    VT_VECTOR_UI1 = 0x1011  # CAUB
    VT_VECTOR_UI2 = 0x1012  # CAUI
    VT_VECTOR_I4 = 0x1003  # CAL
    VT_VECTOR_UI4 = 0x1013  # CAUL
    VT_VECTOR_UI8 = 0x1015  # CAUH
    VT_VECTOR_CLSID = 0x1048  # CACLSID
    VT_VECTOR_LPWSTR = 0x101F  # CALPWSTR
    VT_VECTOR_VARIANT = 0x100C  # CAPROPVARIANT


VECTOR_TYPES: Final = frozenset(v for v in VarType if v & VT_VECTOR)
