"""``Message`` validation shortcuts give exactly the general result.

* ``_EXACT_TYPES``: a value of the listed exact type passes that property's ``_CHECKS`` test, so
  ``validate`` may skip the call;
* ``validate`` agrees with the plain loop over ``_CHECKS`` (restated here) on messages whose
  properties were set to anything, valid or not, after construction;
* ``Message(body, label)`` (the constructor's shortcut for just those two) agrees with the general
  constructor path on any body and label.
"""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from pymsmq import Message, MSMQError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import _CHECKS, _EXACT_TYPES

samples: dict[type, st.SearchStrategy[object]] = {
    bytes: st.binary(max_size=8),
    bool: st.booleans(),
    ObjectId: st.builds(ObjectId, st.uuids(), st.integers(0, 0xFFFFFFFF)),
    uuid.UUID: st.uuids(),
    str: st.text(max_size=300),
}
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**65), 2**65),
    st.floats(allow_nan=False),
    st.binary(max_size=8),
    st.binary(max_size=8).map(bytearray),
    st.text(max_size=300),
    st.uuids(),
    st.uuids().map(str),
    samples[ObjectId],
    samples[ObjectId].map(bytes),
)


@given(st.data())
def test_exact_types_pass_their_checks(data: st.DataObject) -> None:
    for name, kind in _EXACT_TYPES.items():
        value = data.draw(samples[kind])
        assert type(value) is kind and _CHECKS[name](value), name


def _reference_validate(m: Message) -> None:
    # ``validate`` before the exact-type shortcut.
    for name, value in m.__dict__.items():
        check = _CHECKS.get(name)
        if check is None or not check(value):
            m._validate_slow()
            return


def _outcome(m: Message, validate: object) -> object:
    try:
        validate(m)  # type: ignore[operator]
    except Exception as exc:  # (a bytearray enumeration value is a TypeError either way)
        return ("error", type(exc), getattr(exc, "hresult", None))
    return ("ok", vars(m))


@given(st.dictionaries(st.sampled_from(sorted(_CHECKS)), anything, max_size=6))
def test_validate_equals_the_plain_loop(props: dict[str, object]) -> None:
    a, b = Message(), Message()
    for name, value in props.items():
        setattr(a, name, value)
        setattr(b, name, value)
    assert _outcome(a, Message.validate) == _outcome(b, _reference_validate)


bodies = st.one_of(
    st.just(Message.body), st.binary(max_size=8), st.binary(max_size=8).map(bytearray), anything
)
labels = st.one_of(st.just(Message.label), st.text(max_size=260), anything)


def _construct(**kwargs: object) -> object:
    try:
        m = Message(**kwargs)
    except MSMQError as exc:
        return ("error", exc.hresult)
    # app_specific: the full check stores its normalised value; the general path below passes it.
    return ("ok", {k: v for k, v in vars(m).items() if k != "app_specific"}, m.app_specific)


@given(bodies, labels)
def test_body_and_label_shortcut_equals_the_general_path(body: object, label: object) -> None:
    # An extra (default-valued) property sends the constructor down its general path.
    assert _construct(body=body, label=label) == _construct(body=body, label=label, app_specific=0)
