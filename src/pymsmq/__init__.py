"""pymsmq: Microsoft Message Queuing (MSMQ) rebuilt in Python from Microsoft's open specifications."""

from __future__ import annotations

from pymsmq.errors import FormatNameError, MSMQError, WireError
from pymsmq.hresult import HResult

__version__ = "0.1.0"

__all__ = ["FormatNameError", "HResult", "MSMQError", "WireError", "__version__"]
