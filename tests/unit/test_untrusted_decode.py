"""untrusted/decode: JSON, line numbers and paths a tool wrote, decoded within the bounds of
untrusted/limits. Properties over arbitrary JSON and text (hypothesis), each bound at its edge
and one past it, and the refusals by kind."""

from __future__ import annotations

import json
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.untrusted import decode, limits
from orchestrator.untrusted.errors import HostileInput

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10 ** 30), 10 ** 30),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
# Strings weighted towards what could confuse the nesting scan: brackets, quotes, escapes.
TRICKY = st.text(alphabet=st.sampled_from(list('[]{}"\\/ ,:abc\n\u2028\x00')), max_size=20)
VALUES = st.recursive(st.one_of(SCALARS, TRICKY),
                      lambda inner: st.one_of(st.lists(inner, max_size=4),
                                              st.dictionaries(TRICKY, inner, max_size=4)),
                      max_leaves=30)


def depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


def refused(kind: str, fn, *args, **kwargs) -> HostileInput:
    with pytest.raises(HostileInput) as caught:
        fn(*args, **kwargs)
    assert caught.value.kind == kind, caught.value
    return caught.value


@settings(max_examples=300, deadline=None)
@given(VALUES, st.booleans())
def test_honest_json_decodes_as_json_does_and_its_nesting_is_measured_exactly(
        value: object, indent: bool) -> None:
    text = json.dumps(value, indent=1 if indent else None, ensure_ascii=False)
    assert decode.loads(text, what="t") == json.loads(text)
    assert decode.loads(text.encode(), what="t") == json.loads(text)
    assert decode.nesting(text) == depth(value)
    assert list(decode.json_values(text + "\n" + text, what="t")) == [json.loads(text)] * 2


@settings(max_examples=300, deadline=None)
@given(TRICKY)
def test_brackets_and_quotes_inside_a_string_are_no_nesting(text: str) -> None:
    assert decode.nesting(json.dumps(text)) == 0
    assert decode.nesting(json.dumps([text, {text: [text]}])) == 3


def test_nesting_is_refused_past_the_limit_before_json_recurses() -> None:
    limit = limits.JSON_MAX_DEPTH
    ok = "[" * limit + "]" * limit
    assert decode.nesting(ok) == limit and decode.loads(ok, what="t")
    error = refused("too-deep", decode.loads, "[" * (limit + 1) + "]" * (limit + 1),
                    what="crg stdout")
    assert error.data == {"what": "crg stdout", "found": limit + 1, "limit": limit}
    assert "crg stdout" in str(error) and f"limit of {limit}" in str(error)
    # Unclosed, in an object, after honest values, in a stream, a million levels: refused.
    for text in ('{"a":' * 10 ** 6, "[1] " + "[" * 200, '{"x": "]]]]", "y": ' + "[" * 200):
        refused("too-deep", decode.loads, text, what="t")
        refused("too-deep", lambda t: list(decode.json_values(t, what="t")), text)


def test_the_limit_holds_however_deep_the_caller_already_is() -> None:
    limit = limits.JSON_MAX_DEPTH
    text = "[" * limit + "]" * limit

    def nested(frames: int) -> object:
        return nested(frames - 1) if frames else decode.loads(text, what="t")

    assert nested(sys.getrecursionlimit() - limit - 200)


def test_numbers_are_refused_past_their_length_before_conversion() -> None:
    edge = "9" * limits.NUMBER_MAX_CHARS
    assert decode.loads(f'{{"line": {edge}}}', what="t") == {"line": int(edge)}
    assert decode.loads("-1.5e3", what="t") == -1500.0
    refused("bad-number", decode.loads, "9" * (limits.NUMBER_MAX_CHARS + 1), what="t")
    refused("bad-number", decode.loads, "0." + "1" * limits.NUMBER_MAX_CHARS, what="t")
    started = time.perf_counter()
    error = refused("bad-number", decode.loads, '{"line": ' + "7" * 1_000_000 + "}",
                    what="ast-grep stdout")
    assert time.perf_counter() - started < 2
    assert "1,000,000 characters" in str(error) and "ast-grep stdout" in str(error)
    for constant in ("NaN", "Infinity", "-Infinity", "[1, NaN]"):
        refused("bad-number", decode.loads, constant, what="t")


def test_size_encoding_syntax_and_duplicate_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "JSON_MAX_CHARS", 10)
    assert decode.loads(b"[1, 2, 3]", what="t") == [1, 2, 3]
    error = refused("too-large", decode.loads, b"[1, 2, 3, 4]", what="result")
    assert error.data["found"] == 12 and error.data["limit"] == 10
    refused("too-large", lambda: list(decode.json_values("1 2 3 4 5 6", what="t")))
    monkeypatch.undo()
    refused("not-utf8", decode.loads, b'["\xff"]', what="t")
    error = refused("not-json", decode.loads, '{"a": }', what="frame")
    assert error.data["at"] == 6 and str(error).startswith("not-json: frame: not JSON at")
    refused("not-json", decode.loads, "[1] [2]", what="t")
    refused("not-json", decode.loads, "", what="t")
    assert decode.loads('{"a": 1, "a": 2}', what="t") == {"a": 2}
    error = refused("duplicate-key", decode.loads, '{"a": 1, "a": 2}', what="r",
                    unique_keys=True)
    assert "duplicate key 'a'" in str(error)


def test_a_stream_yields_each_value_then_refuses_at_the_first_bad_one() -> None:
    values = decode.json_values('{"a": 1}\n[2]  "three"\n{"a": x}', what="s")
    assert next(values) == {"a": 1} and next(values) == [2] and next(values) == "three"
    with pytest.raises(HostileInput) as caught:
        next(values)
    assert caught.value.kind == "not-json" and caught.value.data["at"] == 28
    assert list(decode.json_values(" \n\t ", what="s")) == []


@pytest.mark.parametrize("text, zero_based, expected", [
    ("1", False, 1), ("42", False, 42), ("999999999", False, 999_999_999),
    ("0", True, 1), ("24", True, 25)])
def test_line_numbers_within_their_digits(text: str, zero_based: bool, expected: int) -> None:
    assert decode.line_number(text, what="rg line", zero_based=zero_based) == expected


@pytest.mark.parametrize("text", ["0", "", "1000000000", "9" * 100_000, "-1", "+1", " 1",
                                  "1.0", "\u0661", "1\u0662", "١٢"])
def test_anything_else_is_no_line_number(text: str) -> None:
    error = refused("bad-line", decode.line_number, text, what="rg line")
    assert "rg line" in str(error) and len(str(error)) < 300


def test_paths_up_to_path_max() -> None:
    edge = "a/" * (limits.PATH_MAX_CHARS // 2)
    assert decode.path(edge, what="p") == edge
    error = refused("bad-path", decode.path, edge + "b", what="rg path")
    assert error.data["found"] == limits.PATH_MAX_CHARS + 1 and len(str(error)) < 300


def test_clip_is_bounded_whatever_it_is_given() -> None:
    assert decode.clip("short") == "'short'"
    long = decode.clip("x" * 10_000_000)
    assert len(long) < limits.EXCERPT_CHARS + 40 and "10,000,000 characters" in long
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    assert len(decode.clip(deep)) <= limits.EXCERPT_CHARS
    assert len(decode.clip({"k": "v" * 10_000_000, "n": 10 ** 4000})) <= limits.EXCERPT_CHARS
    assert decode.clip("a\x1b[2J", 60) == repr("a\x1b[2J")
