"""An unhashable value for an enumerated message property is refused with MSMQError, not TypeError."""

from __future__ import annotations

import pytest

from pymsmq import Message
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult

ENUMERATED = ("ack", "delivery", "journal", "trace", "priv_level", "auth_level", "sender_id_type")


@pytest.mark.parametrize("name", ENUMERATED)
@pytest.mark.parametrize("value", [bytearray(b"\x01"), [1], {1: 1}, {1}])
def test_unhashable_enumerated_value_is_an_msmq_error(name: str, value: object) -> None:
    m = Message(body=b"x")
    setattr(m, name, value)
    with pytest.raises(MSMQError) as info:
        m.validate()
    assert info.value.hresult == HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE


@pytest.mark.parametrize("name", ENUMERATED)
def test_valid_enumerated_value_still_accepted(name: str) -> None:
    m = Message(body=b"x")
    setattr(m, name, getattr(Message(), name))
    m.validate()
