"""The one way host code decodes what a tool wrote: JSON, JSON-lines streams, line numbers and
paths, each within the bounds of `limits` and in time linear in its length.

Python's own decoders are not safe on hostile text: `json.loads` recurses once per level of
nesting (RecursionError, never a ValueError, past about a thousand levels, fewer the deeper
its caller), and converts a decimal integer in time quadratic in its digits (a ValueError of
its own past 4,300). So before `json` sees a text:

- its length is checked against `limits.JSON_MAX_CHARS`;
- its nesting is measured by one linear scan (escapes, then strings removed by a regex that
  can neither backtrack nor start twice inside one string, then a running sum of the
  brackets left),
  and refused past `limits.JSON_MAX_DEPTH`: the recursive decoder then stays far from the
  interpreter's recursion limit, whoever calls it;
- the same scan counts its items (arrays, objects, separating commas) for a caller that
  bounds them (an answer: `limits.ANSWER_MAX_JSON_ITEMS`), so a text of a million tiny
  values is refused before Python builds one;
- every number is handed to a hook that refuses it past `limits.NUMBER_MAX_CHARS` before it
  is converted, and NaN and Infinity (not JSON) are refused.

Every refusal is a `HostileInput` whose kind says which guard refused it (`too-large`,
`too-deep`, `too-many-items`, `bad-number`, `not-json`, `not-utf8`, `duplicate-key`,
`bad-line`, `bad-path`), and whose message
names what was read, the guard, and the value found (clipped): the caller makes it that
cell's, that session's or that oracle's failure, never the run's.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from orchestrator.untrusted import limits
from orchestrator.untrusted.errors import HostileInput

# Every byte but a quote, a bracket or a comma: deleted (bytes.translate) before the strings
# are, so what the string scan reads is structure alone.
_NOT_STRUCTURE = bytes(set(range(256)) - set(b'"[]{},'))
# Bytes of that structure split at quotes at once: the pieces of one chunk are all that exist.
_CHUNK = 1 << 16
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_SPACE = re.compile(r"\s*")
# A parsed value quoted in a message: a few levels and items of it, never all of it.
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist = 3, 4, 4
_REPR.maxstring = _REPR.maxother = limits.EXCERPT_CHARS
_REPR.maxlong = limits.NUMBER_MAX_CHARS


def clip(text: object, limit: int = limits.EXCERPT_CHARS) -> str:
    """A bounded excerpt of a tool's text for a message: its repr, cut at `limit` characters
    with the count of what was left out. (Escaping for a terminal or a document is the
    renderer's, through untrusted.text.)"""
    if not isinstance(text, str):
        return _REPR.repr(text)[:limit]
    shown = repr(text[:limit])
    if len(text) <= limit and len(shown) <= limit:
        return shown
    return f"{shown[:limit]}... ({len(text):,} characters)"


def _structure(text: str) -> bytes:
    """`text`'s brackets and commas outside its strings, in order, by passes in C linear in
    its length that copy nothing per string: no character but ASCII is JSON structure, so
    every other becomes `?` (never a backslash or a quote, as it was not), escapes go, then
    everything but quotes, brackets and commas, then the strings."""
    ascii_only = text.encode("ascii", "replace")
    # Escapes pair left to right, as json reads them: `\\` first, then every `\"` left is an
    # escaped quote. A backslash outside a string is where json stops reading.
    unescaped = ascii_only.replace(b"\\\\", b"").replace(b'\\"', b"")
    return _outside_strings(unescaped.translate(None, _NOT_STRUCTURE))


def _outside_strings(marks: bytes) -> bytes:
    """`marks` (quotes, brackets and commas) without its strings: what lies between an odd
    quote and the next one (or the end) goes, the quotes with it."""
    kept, inside = [], False
    for start in range(0, len(marks), _CHUNK):
        pieces = marks[start:start + _CHUNK].split(b'"')
        kept.append(b"".join(pieces[inside::2]))
        inside ^= len(pieces) % 2 == 0
    return b"".join(kept)


def _depth(structure: bytes) -> int:
    brackets = structure.replace(b",", b"")
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def nesting(text: str) -> int:
    """The deepest nesting of arrays and objects in `text` outside its strings, by a scan
    linear in its length. An upper bound of what `json` reaches on it: a closing bracket
    where nothing is open ends what `json` reads, so counting on past it only overstates."""
    return _depth(_structure(text))


def _number(text: str, convert: type) -> Any:
    if len(text) > limits.NUMBER_MAX_CHARS:
        raise HostileInput("bad-number", f"a JSON number of {len(text):,} characters, over "
                           f"the limit of {limits.NUMBER_MAX_CHARS}: {clip(text, 60)}",
                           found=len(text), limit=limits.NUMBER_MAX_CHARS)
    return convert(text)


def _integer(text: str) -> int:
    return int(_number(text, int))


def _float(text: str) -> float:
    return float(_number(text, float))


def _constant(name: str) -> Any:
    raise HostileInput("bad-number", f"{name} is not a JSON number", found=name)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise HostileInput("duplicate-key", f"duplicate key {clip(key, 60)}", key=key)
        obj[key] = value
    return obj


_DECODER = json.JSONDecoder(parse_int=_integer, parse_float=_float, parse_constant=_constant)
# For a protocol whose messages must not say one thing twice (json keeps the last silently).
_STRICT = json.JSONDecoder(parse_int=_integer, parse_float=_float, parse_constant=_constant,
                           object_pairs_hook=_unique)


def _text(data: bytes | str, what: str) -> str:
    if len(data) > limits.JSON_MAX_CHARS:
        raise HostileInput("too-large", f"{what}: {len(data):,} characters of JSON, over the "
                           f"limit of {limits.JSON_MAX_CHARS:,}", what=what, found=len(data),
                           limit=limits.JSON_MAX_CHARS)
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HostileInput("not-utf8", f"{what}: not UTF-8 at byte {exc.start}", what=what,
                           at=exc.start) from None


def _too_many_items(found: int, limit: int, what: str) -> HostileInput:
    return HostileInput("too-many-items", f"{what}: more than {limit:,} JSON items (arrays, "
                        f"objects, separating commas and top-level values), the limit of one "
                        f"text; {found:,} counted before decoding stopped", what=what,
                        found=found, limit=limit)


def _check_structure(text: str, what: str, max_items: int | None = None) -> int:
    """Refuse `text` past the nesting bound, or (with `max_items`) past that many items
    (arrays, objects and commas outside strings), before any value is built; the items
    counted."""
    structure = _structure(text)
    items = len(structure) - structure.count(b"]") - structure.count(b"}")
    if max_items is not None and items > max_items:  # before the depth, whose sum is Python's
        raise _too_many_items(items, max_items, what)
    depth = _depth(structure)
    if depth > limits.JSON_MAX_DEPTH:
        raise HostileInput("too-deep", f"{what}: JSON nested {depth:,} levels deep, over the "
                           f"limit of {limits.JSON_MAX_DEPTH}", what=what, found=depth,
                           limit=limits.JSON_MAX_DEPTH)
    return items


def _not_json(exc: json.JSONDecodeError, what: str) -> HostileInput:
    return HostileInput("not-json", f"{what}: not JSON at character {exc.pos}: {exc.msg}",
                        what=what, at=exc.pos)


def _tagged(exc: HostileInput, what: str) -> HostileInput:
    """A hook's refusal (it cannot know `what`), named for the text it was in."""
    return HostileInput(exc.kind, f"{what}: {exc.message}", what=what, **exc.data)


def _past_space(text: str, pos: int) -> int:
    """The first offset at or after `pos` that is not whitespace."""
    match = _SPACE.match(text, pos)
    assert match is not None  # \s* matches the empty string at any offset
    return match.end()


def loads(data: bytes | str, *, what: str, unique_keys: bool = False) -> Any:
    """One JSON document (bytes must be UTF-8), within every bound; `what` names it in an
    error ("code-review-graph stdout", "MCP frame", "result frame"). With `unique_keys` an
    object that names a key twice is refused (`duplicate-key`)."""
    text = _text(data, what)
    _check_structure(text, what)
    decoder = _STRICT if unique_keys else _DECODER
    try:
        value, end = decoder.raw_decode(text, _past_space(text, 0))
    except json.JSONDecodeError as exc:
        raise _not_json(exc, what) from None
    except HostileInput as exc:
        raise _tagged(exc, what) from None
    end = _past_space(text, end)
    if end != len(text):
        raise HostileInput("not-json", f"{what}: extra data after the JSON value at character "
                           f"{end}", what=what, at=end)
    return value


def json_values(data: bytes | str, *, what: str, max_items: int | None = None
                ) -> Iterator[Any]:
    """Every JSON value of a stream, one after another (pretty-printed documents back to
    back, or one per line); the whole stream is bounded before the first is decoded (with
    `max_items`, its items too: `too-many-items`, its top-level values counted as they
    come), and a HostileInput is raised at the first thing that is not JSON."""
    text = _text(data, what)
    items = _check_structure(text, what, max_items)
    index, end = 0, len(text)
    while True:
        index = _past_space(text, index)
        if index == end:
            return
        items += 1
        if max_items is not None and items > max_items:
            raise _too_many_items(items, max_items, what)
        try:
            value, index = _DECODER.raw_decode(text, index)
        except json.JSONDecodeError as exc:
            raise _not_json(exc, what) from None
        except HostileInput as exc:
            raise _tagged(exc, what) from None
        yield value


def line_number(text: str, *, what: str, zero_based: bool = False) -> int:
    """A line number a tool printed as text, made 1-based: 1 to `LINE_NUMBER_MAX_DIGITS`
    ASCII digits, not zero unless the tool counts from 0."""
    first = 0 if zero_based else 1
    if not (0 < len(text) <= limits.LINE_NUMBER_MAX_DIGITS and text.isascii()
            and text.isdigit()) or int(text) < first:
        raise HostileInput("bad-line", f"{what}: expected a {first}-based line number of at "
                           f"most {limits.LINE_NUMBER_MAX_DIGITS} digits, found "
                           f"{clip(text, 60)}", what=what, found=clip(text, 60))
    return int(text) + 1 - first


def path(value: str, *, what: str) -> str:
    """A path a tool named, at most `PATH_MAX_CHARS` long (where it may lead is
    untrusted.paths' to decide)."""
    if len(value) > limits.PATH_MAX_CHARS:
        raise HostileInput("bad-path", f"{what}: a path of {len(value):,} characters, over the "
                           f"limit of {limits.PATH_MAX_CHARS}: {clip(value, 60)}", what=what,
                           found=len(value), limit=limits.PATH_MAX_CHARS)
    return value


__all__ = ["clip", "json_values", "line_number", "loads", "nesting", "path"]
