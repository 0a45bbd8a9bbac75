"""Queue path names ([MS-MQMQ] 2.1.1): every grammar rule, every reject, round trips and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymsmq.errors import FormatNameError
from pymsmq.hresult import HResult
from pymsmq.wire.path_name import PathGrammar, PathName

# [MS-MQMQ] 2.1.1 QueueName characters for 2.0+ (%x21 / %x23-2A / %x2D-3A / %x3C-5B / %x5D-7F).
NAME_CHARS = [chr(c) for c in range(0x21, 0x80) if chr(c) not in '"+,;\\']
VCHAR_NO_BACKSLASH = [chr(c) for c in range(0x21, 0x7F) if c != 0x5C]


@pytest.mark.parametrize(
    ("text", "computer", "queue", "private", "system", "subqueue", "canonical"),
    [
        (r"srv\orders", "srv", "orders", False, False, None, r"srv\orders"),
        (r".\private$\orders", ".", "orders", True, False, None, r".\private$\orders"),
        (r"srv\PRIVATE$\Orders", "srv", "Orders", True, False, None, r"srv\private$\Orders"),
        (r"srv\system$;DEADLETTER", "srv", "DEADLETTER", False, True, None, r"srv\system$;DEADLETTER"),
        (r"srv\SYSTEM$;journal", "srv", "journal", False, True, None, r"srv\system$;journal"),
        (r"srv\private$\q;poison", "srv", "q", True, False, "poison", r"srv\private$\q;poison"),
        (r"srv\q;retry", "srv", "q", False, False, "retry", r"srv\q;retry"),
        (r"srv.example.com\a/b.c~!", "srv.example.com", "a/b.c~!", False, False, None, None),
        # VCHAR admits ";" in the computer; Computer ends at the first backslash.
        (r"a;b\q", "a;b", "q", False, False, None, None),
        # 0x7F (DEL) is in the QueueName ranges though not VCHAR (a quirk of the grammar).
        ("srv\\q\x7f", "srv", "q\x7f", False, False, None, None),
        # "private$" needs the following backslash; "private$x" is an ordinary public queue name.
        (r"srv\private$x", "srv", "private$x", False, False, None, None),
        (r"srv\private$\private$", "srv", "private$", True, False, None, None),
    ],
)
def test_valid_path_names(
    text: str,
    computer: str,
    queue: str,
    private: bool,
    system: bool,
    subqueue: str | None,
    canonical: str | None,
) -> None:
    p = PathName.parse(text)
    assert (p.computer, p.queue_name, p.private, p.system, p.subqueue) == (
        computer,
        queue,
        private,
        system,
        subqueue,
    )
    assert str(p) == (canonical or text)
    assert PathName.parse(str(p)) == p


@pytest.mark.parametrize(
    ("text", "grammar", "fragment"),
    [
        ("orders", PathGrammar.MSMQ_4_0, "no backslash"),
        (r"\orders", PathGrammar.MSMQ_4_0, "empty computer"),
        ("srv\\", PathGrammar.MSMQ_4_0, "empty queue"),
        (r"srv\private$\ ", PathGrammar.MSMQ_4_0, "forbidden"),
        ("srv\\private$\\", PathGrammar.MSMQ_4_0, "empty queue"),
        (r"srv\private$", PathGrammar.MSMQ_4_0, "reserved"),
        (r"srv\System$", PathGrammar.MSMQ_4_0, "reserved"),
        (r"srv\a\b", PathGrammar.MSMQ_4_0, "forbidden"),
        (r"srv\a b", PathGrammar.MSMQ_4_0, "forbidden"),
        (r"srv\a+b", PathGrammar.MSMQ_4_0, "forbidden"),
        (r"srv\a,b", PathGrammar.MSMQ_4_0, "forbidden"),
        (r"srv\a" + '"' + "b", PathGrammar.MSMQ_4_0, "forbidden"),
        ("srv\\caf\u00e9", PathGrammar.MSMQ_4_0, "forbidden"),
        ("srv\\a\tb", PathGrammar.MSMQ_4_0, "forbidden"),
        (r"srv\q;", PathGrammar.MSMQ_4_0, "empty subqueue"),
        (r"srv\q;a;b", PathGrammar.MSMQ_4_0, "more than one"),
        (r"srv\q;a+b", PathGrammar.MSMQ_4_0, "subqueue"),
        (r"srv\;sub", PathGrammar.MSMQ_4_0, "empty queue"),
        (r"srv\system$;", PathGrammar.MSMQ_4_0, "empty queue"),
        (r"srv\system$;a;b", PathGrammar.MSMQ_4_0, "forbidden"),
        ("s v\\q", PathGrammar.MSMQ_4_0, "computer"),
        ("caf\u00e9\\q", PathGrammar.MSMQ_4_0, "computer"),
        # 2.0/3.0 and 1.0 have no subqueues.
        (r"srv\q;sub", PathGrammar.MSMQ_2_0, "forbidden"),
        (r"srv\q;sub", PathGrammar.MSMQ_1_0, "forbidden"),
        # 2.0+ exclude " + , which 1.0 admits.
        (r"srv\a+b", PathGrammar.MSMQ_2_0, "forbidden"),
        ("srv\\" + "q" * 125, PathGrammar.MSMQ_4_0, "at most 124"),
        ("c" * 257 + "\\q", PathGrammar.MSMQ_4_0, "at most 256"),
        ("srv\\q;" + "s" * 33, PathGrammar.MSMQ_4_0, "at most 32"),
    ],
)
def test_invalid_path_names(text: str, grammar: PathGrammar, fragment: str) -> None:
    with pytest.raises(FormatNameError, match=fragment) as info:
        PathName.parse(text, grammar)
    assert info.value.hresult == HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME == 0xC00E0014


@pytest.mark.parametrize("name", [r"a+b", "a,b", 'a"b'])
def test_msmq_1_0_admits_plus_comma_quote(name: str) -> None:
    p = PathName.parse("srv\\" + name, PathGrammar.MSMQ_1_0)
    assert p.queue_name == name and p.subqueue is None
    with pytest.raises(FormatNameError):
        PathName.parse("srv\\" + name, PathGrammar.MSMQ_2_0)


def test_length_limits_are_inclusive() -> None:
    assert PathName.parse("srv\\" + "q" * 124).queue_name == "q" * 124
    assert PathName.parse("c" * 256 + "\\q").computer == "c" * 256
    assert PathName.parse("srv\\q;" + "s" * 32).subqueue == "s" * 32
    # The private$ prefix and the subqueue do not count towards the 124.
    p = PathName.parse("srv\\private$\\" + "q" * 124 + ";" + "s" * 32)
    assert p.private and len(p.queue_name) == 124 and p.subqueue == "s" * 32


def test_properties() -> None:
    p = PathName.parse(r".\private$\orders;poison")
    assert p.is_local and p.is_private and not p.is_public and not p.is_system
    assert p.parent == PathName(".", "orders", private=True)
    parent = p.parent
    assert parent.parent is parent
    assert str(p.with_computer("host1")) == r"host1\private$\orders;poison"
    q = PathName.parse(r"srv\system$;DEADXACT")
    assert q.is_system and not q.is_local and not q.is_public
    assert PathName.parse(r"SRV\Orders").canonical_key() == PathName.parse(r"srv\orders").canonical_key()
    assert PathName.parse(r"SRV\Orders") != PathName.parse(r"srv\orders")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"computer": "srv", "queue_name": "q", "private": True, "system": True},
        {"computer": "srv", "queue_name": "DEADLETTER", "system": True, "subqueue": "x"},
        {"computer": "srv", "queue_name": "a+b", "subqueue": "x"},  # 1.0 name with a 4.0 subqueue
        {"computer": "", "queue_name": "q"},
        {"computer": "srv", "queue_name": "q", "subqueue": ""},
    ],
)
def test_constructor_validates(kwargs: dict[str, object]) -> None:
    with pytest.raises(FormatNameError):
        PathName(**kwargs)  # type: ignore[arg-type]


def test_parse_rejects_non_text() -> None:
    with pytest.raises(FormatNameError):
        PathName.parse(b"srv\\q")  # type: ignore[arg-type]


queue_names = st.text(NAME_CHARS, min_size=1, max_size=124)
computers = st.text(VCHAR_NO_BACKSLASH, min_size=1, max_size=256)


@st.composite
def path_names(draw: st.DrawFn) -> PathName:
    computer = draw(computers)
    kind = draw(st.sampled_from(["public", "private", "system"]))
    name = draw(queue_names)
    if kind == "public" and name.lower() in ("private$", "system$"):
        name = "q" + name
    if kind == "system":
        return PathName(computer, name, system=True)
    sub = draw(st.none() | st.text(NAME_CHARS, min_size=1, max_size=32))
    return PathName(computer, name, private=kind == "private", subqueue=sub)


@given(path_names())
def test_round_trip(p: PathName) -> None:
    text = str(p)
    assert PathName.parse(text) == p
    assert str(PathName.parse(text)) == text


@given(path_names())
def test_keywords_are_case_insensitive(p: PathName) -> None:
    # Only the keyword after the computer name: a queue may be called "qsystem$" (whose "system$"
    # is part of the name, and its case with it).
    computer, _, rest = str(p).partition("\\")
    for keyword, mixed in (("private$", "PrIvAtE$"), ("system$", "SYSTEM$")):
        if rest.startswith(keyword):
            rest = mixed + rest[len(keyword) :]
    assert PathName.parse(f"{computer}\\{rest}") == p


@given(st.text(max_size=300), st.sampled_from(list(PathGrammar)))
def test_arbitrary_text_gives_value_or_format_name_error(text: str, grammar: PathGrammar) -> None:
    try:
        p = PathName.parse(text, grammar)
    except FormatNameError as exc:
        assert exc.hresult == HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
    else:
        assert PathName.parse(str(p), grammar) == p


@given(st.text(alphabet="\\;$.aqPRIVATEsystem+, \x7f", max_size=40))
def test_structured_noise_gives_value_or_format_name_error(text: str) -> None:
    try:
        p = PathName.parse(text)
    except FormatNameError:
        return
    assert PathName.parse(str(p)) == p
