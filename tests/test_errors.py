"""The exception tree: every error is an MSMQError carrying the HRESULT Windows uses."""

from __future__ import annotations

import pytest

from pymsmq import FormatNameError, HResult, MSMQError, WireError
from pymsmq.errors import printable, quoted, reason
from pymsmq.hresult import DESCRIPTIONS, describe


def test_hresult_table_is_complete_and_spec_exact() -> None:
    codes = [h for h in HResult if h >> 16 in (0x400E, 0xC00E)]
    assert len(codes) == 145  # [MS-MQMQ] 2.4: 9 informational + 136 error codes (incl. MQDS_UNKNOWN_SOURCE)
    assert HResult.MQ_ERROR_MESSAGE_NOT_FOUND == 0xC00E0088
    assert HResult.MQ_ERROR_OPERATION_CANCELLED == 0xC00E0008
    assert HResult.MQ_ERROR_IO_TIMEOUT == 0xC00E001B
    assert HResult.MQ_ERROR_QUEUE_NOT_FOUND == 0xC00E0003
    assert HResult.MQDS_UNKNOWN_SOURCE == 0xC00E0504
    assert all(code in DESCRIPTIONS for code in codes)


def test_errors_carry_hresults() -> None:
    assert MSMQError().hresult == HResult.MQ_ERROR
    assert WireError("x").hresult == HResult.MQ_ERROR_INVALID_PARAMETER
    assert FormatNameError("x").hresult == 0xC00E001E
    err = MSMQError("no message", HResult.MQ_ERROR_IO_TIMEOUT)
    assert "MQ_ERROR_IO_TIMEOUT 0xC00E001B" in str(err)
    assert isinstance(WireError("x"), ValueError)
    assert isinstance(FormatNameError("x"), MSMQError)
    with pytest.raises(MSMQError):
        raise WireError("bad", offset=3)


def test_describe_unknown_and_negative_values() -> None:
    assert describe(0xC00E9999) == "0xC00E9999"
    assert describe(-1072824293).startswith("MQ_ERROR_IO_TIMEOUT (0xC00E001B)")
    assert MSMQError(hresult=-1072824293).hresult == 0xC00E001B


def test_reason_gives_the_text_without_the_hresult() -> None:
    # An error wrapped in another shows one code: the outer one's.
    inner = WireError("frame magic b'HT' is not b'MQ'")
    assert reason(inner) == "frame magic b'HT' is not b'MQ'"
    assert reason(ValueError("plain")) == "plain"
    outer = MSMQError(f"handshake failed: {reason(inner)}", HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE)
    assert str(outer).count("0xC00E") == 1 and str(outer).endswith(
        "[MQ_ERROR_SERVICE_NOT_AVAILABLE 0xC00E000B]"
    )


def test_quoted_names_read_as_typed_and_stay_on_one_line() -> None:
    assert quoted(r".\private$\orders") == r"'.\private$\orders'"
    assert quoted("a\nb\tc\x00") == r"'a\nb\tc\x00'"
    assert quoted("zürich") == "'zürich'"
    assert quoted(17) == "17" and quoted(None) == "None" and quoted(b"x") == "b'x'"
    long = quoted("q" * 10_000)
    assert len(long) < 150 and long.endswith("...' (10000 characters)")
    assert printable("plain") == "plain" and printable("two\nlines") == r"two\nlines"


def test_error_texts_name_paths_as_typed() -> None:
    from pymsmq import QueueManager

    with QueueManager.open(":memory:") as qm:
        with pytest.raises(MSMQError) as info:
            qm.queue(r".\private$\missing")
        assert r"'.\private$\missing'" in str(info.value)
        with pytest.raises(FormatNameError) as bad:
            qm.queue("DIRECT=TCP:1.2.3\\private$\\q\n")
        text = str(bad.value)
        assert "\\\\" not in text and "\n" not in text and r"\private$\q\n" in text


def test_hresult_is_an_hresult_member_when_msmq_names_it() -> None:
    # docs/api.md: `.hresult` is an HResult (err.hresult.name works), equal to its int as before.
    from pymsmq import MSMQError
    from pymsmq.hresult import HResult

    named = MSMQError("x", 0xC00E0003)
    assert (
        named.hresult is HResult.MQ_ERROR_QUEUE_NOT_FOUND and named.hresult.name == "MQ_ERROR_QUEUE_NOT_FOUND"
    )
    assert named.hresult == 0xC00E0003
    unnamed = MSMQError("y", 0x12345)
    assert type(unnamed.hresult) is int and unnamed.hresult == 0x12345
