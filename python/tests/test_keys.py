"""Keys: the shared vectors, the refusals in the TypeScript package's words, and properties (Hypothesis)."""

from __future__ import annotations

import json
import math
import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idemkey import CanonicalizationError, canonical_call, canonicalize, idempotency_key
from idemkey.canonical import format_number

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "test-vectors")


def load(name: str) -> list[dict]:
    with open(os.path.join(VECTORS, name), encoding="utf-8") as file:
        return json.load(file)


@pytest.mark.parametrize("case", load("keys.json"), ids=lambda c: c["description"])
def test_shared_vectors(case: dict) -> None:
    step = case.get("step")
    assert canonical_call(case["taskId"], case["tool"], case["args"], step=step) == case["canonical"]
    assert idempotency_key(case["taskId"], case["tool"], case["args"], step=step) == case["key"]


@pytest.mark.parametrize("case", load("keyed-keys.json"), ids=lambda c: c["description"])
def test_keyed_vectors(case: dict) -> None:
    key = idempotency_key(case["taskId"], case["tool"], case["args"], step=case.get("step"), secret=case["secret"])
    assert key == case["key"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (-0.0, "0"), (1.0, "1"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-6, "0.000001"),
        (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (123.456, "123.456"), (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"), (0.1 + 0.2, "0.30000000000000004"),
        (2**53, "9007199254740992"), (10**21, "1e+21"), (2**60, "1152921504606847000"), (2**53 + 1, "9007199254740992"), (-1e-7, "-1e-7"),
        (4.35, "4.35"), (1e23, "1e+23"), (333333333.3333333, "333333333.3333333"),
    ],
)
def test_numbers_print_as_ecmascript(value: float, text: str) -> None:
    assert canonicalize(value) == text


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ({"a": [1, math.nan]}, "$.a[1]", "NaN is not a JSON number"),
        ({"a": math.inf}, "$.a", "Infinity is not a JSON number"),
        ([-math.inf], "$[0]", "-Infinity is not a JSON number"),
        ({"x": "a\ud800"}, "$.x", "string contains a lone surrogate, which UTF-8 cannot encode"),
        ({"\udc00": 1}, '$["\\udc00"]', "member name contains a lone surrogate, which UTF-8 cannot encode"),
        ({"a b": {1: 2}}, '$["a b"]', "a member name must be a string, got int 1"),
    ],
)
def test_refusals_name_the_path(value: object, path: str, reason: str) -> None:
    with pytest.raises(CanonicalizationError) as raised:
        canonicalize(value)
    assert (raised.value.path, raised.value.reason) == (path, reason)


def test_refusals_of_other_types_and_lossy_ints() -> None:
    for value in [{1, 2}, b"x", object(), 10**400]:
        with pytest.raises(CanonicalizationError) as raised:
            canonicalize({"v": [value]})
        assert raised.value.path == "$.v[0]"


def test_cycles_and_depth() -> None:
    a: dict = {"x": [1]}
    a["x"].append(a)
    with pytest.raises(CanonicalizationError, match=r"cycle: refers back to \$$") as raised:
        canonicalize(a)
    assert raised.value.path == "$.x[1]"
    deep: list = []
    for _ in range(1000):
        deep = [deep]
    with pytest.raises(CanonicalizationError, match="nested deeper than 1000 levels"):
        canonicalize(deep)
    assert canonicalize(deep, max_depth=1001).startswith("[[[")


def test_key_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="task_id must be a non-empty string, got an empty string"):
        idempotency_key("", "t", {})
    with pytest.raises(TypeError, match="tool must be a non-empty string, got int"):
        idempotency_key("task", 3, {})  # type: ignore[arg-type]
    with pytest.raises(CanonicalizationError) as raised:
        idempotency_key("task\udfff", "t", {})
    assert raised.value.path == "$.taskId"
    with pytest.raises(CanonicalizationError) as raised:
        idempotency_key("task", "t", {"a": math.nan})
    assert raised.value.path == "$.args.a"
    with pytest.raises(TypeError, match="step must be a string or a number"):
        idempotency_key("task", "t", {}, step=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="secret must be"):
        idempotency_key("task", "t", {}, secret="short")


# Properties, with Hypothesis: every finite double prints as a number that reads back as itself, in ES's layout;
# member order never changes a key; canonical text parses back to the same value.

doubles = st.floats(allow_nan=False, allow_infinity=False)
bits = st.integers(min_value=0, max_value=2**64 - 1).map(lambda b: struct.unpack("<d", b.to_bytes(8, "little"))[0])
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | doubles | st.integers(-(2**53), 2**53) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(doubles | bits.filter(math.isfinite))
def test_every_finite_double_round_trips(value: float) -> None:
    text = format_number(value)
    assert float(text) == value
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    # Never more digits than repr needs (the shortest that round-trip).
    assert len(mantissa.rstrip("0")) <= len(repr(abs(value)).split("e")[0].replace(".", "").strip("0")) or value == 0


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(texts, json_values, max_size=6))
def test_member_order_never_changes_the_key(value: dict) -> None:
    reversed_value = dict(reversed(list(value.items())))
    assert idempotency_key("t", "tool", value) == idempotency_key("t", "tool", reversed_value)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_canonical_text_parses_back_to_the_value(value: object) -> None:
    text = canonicalize(value)
    again = json.loads(text)
    assert canonicalize(again) == text
