"""pymsmq.wire: the pure MSMQ codec (bytes <-> frozen dataclasses), format names and constants.

No I/O happens here: every function takes bytes (and, where time matters, ``now``) and returns values.
"""

from __future__ import annotations

from pymsmq.errors import FormatNameError, WireError
from pymsmq.wire.base_header import BaseHeader, BaseHeaderFlags
from pymsmq.wire.message_class import MessageClass
from pymsmq.wire.vartype import VarType

__all__ = [
    "BaseHeader",
    "BaseHeaderFlags",
    "FormatNameError",
    "MessageClass",
    "VarType",
    "WireError",
]
