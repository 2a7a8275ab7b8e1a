"""Breaking a valid file in realistic ways.

A `Damage` is the new bytes of one file (None: the file is deleted), the keys the error must
name (any one of them, or a key above or below it: see `harness.names_key`; empty when the
damage is not about one key, e.g. a truncation), and a note saying what was done.

Syntax damage is checked against the format's own parser (tomllib, json): a generated input
that still parses is discarded, so every example really is malformed. Data-level damage
(`catalog`) parses fine and breaks one rule of the file's spec.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from . import tomlw


@dataclass(frozen=True)
class Damage:
    kind: str
    data: bytes | None
    keys: tuple[str, ...] = ()
    note: str = ""
    extra: dict[str, bytes] = field(default_factory=dict, compare=False)

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        shown = None if self.data is None else (self.data if len(self.data) <= 400
                                                 else self.data[:200] + b" ... " + self.data[-150:])
        return f"Damage(kind={self.kind!r}, keys={self.keys!r}, note={self.note!r}, data={shown!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis's printer
        printer.text(repr(self))


# -- oracles ----------------------------------------------------------------------------------

def parses_as_toml(data: bytes) -> bool:
    try:
        tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return True


def parses_as_json(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return True


# -- positions --------------------------------------------------------------------------------

def toml_statement_offsets(data: bytes) -> list[int]:
    """Byte offsets at the start, after the `=` and at the end of every line that is a
    statement (key = value, or a [table] header), outside multi-line strings."""
    offsets: list[int] = []
    pos = 0
    in_multi: str | None = None
    for line in data.splitlines(keepends=True):
        body = line.rstrip(b"\r\n")
        if in_multi is None:
            stripped = body.strip()
            if stripped and not stripped.startswith(b"#"):
                offsets.append(pos)
                if (eq := body.find(b"=")) >= 0 and not stripped.startswith(b"["):
                    offsets.append(pos + eq + 1)
                offsets.append(pos + len(body))
        for quote in (b'"""', b"'''"):
            if body.count(quote) % 2 == 1 and in_multi in (None, quote.decode()):
                in_multi = None if in_multi else quote.decode()
        pos += len(line)
    return offsets


def json_structural_offsets(data: bytes) -> list[int]:
    """Byte offsets just before and after every structural character outside strings."""
    offsets: list[int] = []
    in_string = escaped = False
    for i, byte in enumerate(data):
        ch = chr(byte)
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                offsets.append(i + 1)
            continue
        if ch == '"':
            in_string = True
            offsets.append(i)
        elif ch in "{}[]:,":
            offsets += [i, i + 1]
    return offsets


def insert(data: bytes, at: int, what: bytes) -> bytes:
    return data[:at] + what + data[at:]


# -- syntax damage ----------------------------------------------------------------------------

STRAY_TOML = [b'"', b"'", b"[", b"]", b"{", b"}", b"=", b'"""', b",", b"[[", b"\\"]
STRAY_JSON = [b'"', b"'", b"{", b"}", b"[", b"]", b",", b":", b"//", b"#", b"\\", b"True",
              b"None", b"undefined"]
NOT_UTF8 = [b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xc3(", b"\xed\xa0\x80", b"\xf5\x80\x80\x80",
            b"\xc0\xaf", b"\xe9", b"\xe2\x82", b"\xf0\x9f\x98"]
EMPTY = [b"", b"\n", b" \t\n\n", b"\r\n\r\n"]


def toml_syntax(data: bytes) -> st.SearchStrategy[Damage]:
    """Truncation at a random byte, a stray quote/bracket, a NUL, a UTF-8 BOM, a duplicated
    table header; each kept only if tomllib refuses the result."""
    n = len(data)
    statements = toml_statement_offsets(data)
    headers = list(re.finditer(rb"(?m)^\[[^\[\]\n]+\][ \t]*$", data))
    truncated = st.integers(1, n - 1).map(
        lambda p: Damage("truncated", data[:p], note=f"truncated to {p} of {n} bytes"))
    stray = st.tuples(st.sampled_from(statements), st.sampled_from(STRAY_TOML)).map(
        lambda a: Damage("stray-char", insert(data, a[0], a[1]),
                         note=f"{a[1]!r} inserted at byte {a[0]}"))
    nul = st.integers(0, n).map(lambda p: Damage("nul-byte", insert(data, p, b"\x00"),
                                                 note=f"NUL inserted at byte {p}"))
    bom = st.just(Damage("utf8-bom", b"\xef\xbb\xbf" + data, note="UTF-8 BOM prepended"))
    strategies = [truncated, stray, nul, bom]
    if headers:
        def dup(m: re.Match[bytes]) -> Damage:
            name = m.group(0).strip().strip(b"[]").strip().strip(b'"').decode()
            return Damage("duplicate-table", data + b"\n" + m.group(0).strip() + b"\n",
                          keys=(name,), note=f"table [{name}] declared a second time")
        strategies.append(st.sampled_from(headers).map(dup))
    return st.one_of(strategies).filter(lambda d: not parses_as_toml(d.data))


def json_syntax(data: bytes) -> st.SearchStrategy[Damage]:
    """Truncation, a stray character outside strings, trailing garbage, a UTF-8 BOM, Python
    spellings of literals; each kept only if json refuses the result."""
    stripped = data.rstrip()
    n = len(stripped)
    offsets = json_structural_offsets(data)
    truncated = st.integers(0, n - 1).map(
        lambda p: Damage("truncated", data[:p], note=f"truncated to {p} of {len(data)} bytes"))
    stray = st.tuples(st.sampled_from(offsets), st.sampled_from(STRAY_JSON)).map(
        lambda a: Damage("stray-char", insert(data, a[0], a[1]),
                         note=f"{a[1]!r} inserted at byte {a[0]}"))
    trailing = st.sampled_from([b"}", b"]", b",", b"x", b"{}", b"\n{\n"]).map(
        lambda t: Damage("trailing-garbage", data + t, note=f"{t!r} appended"))
    bom = st.just(Damage("utf8-bom", b"\xef\xbb\xbf" + data, note="UTF-8 BOM prepended"))
    literals = [(b"true", b"True"), (b"false", b"False"), (b"null", b"None"), (b'"', b"'")]
    present = [(a, b) for a, b in literals if a in data]
    pythonish = st.sampled_from(present).map(
        lambda ab: Damage("python-literal", data.replace(ab[0], ab[1], 1),
                          note=f"first {ab[0]!r} spelled {ab[1]!r}"))
    return st.one_of([truncated, stray, trailing, bom, pythonish]).filter(
        lambda d: not parses_as_json(d.data))


def not_utf8(data: bytes) -> st.SearchStrategy[Damage]:
    """Bytes that are not UTF-8 at a random position, or the whole file saved as UTF-16."""
    n = len(data)
    inserted = st.tuples(st.integers(0, n), st.sampled_from(NOT_UTF8)).map(
        lambda a: Damage("not-utf8", insert(data, a[0], a[1]),
                         note=f"{a[1]!r} inserted at byte {a[0]}"))
    utf16 = st.just(Damage("utf16", data.decode("utf-8").encode("utf-16"),
                           note="the file saved as UTF-16 (with its BOM)"))
    return st.one_of(inserted, utf16)


def empty() -> st.SearchStrategy[Damage]:
    return st.sampled_from(EMPTY).map(lambda d: Damage("empty", d, note=f"file is {d!r}"))


# -- values of every type ---------------------------------------------------------------------

BARE_KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=10)
_STR = st.one_of(st.sampled_from(["", "x", "1", "true", "rg", "demo", "sha256:", "null"]), _TEXT)
_SCALARS = {
    "str": _STR,
    "int": st.integers(-(2 ** 40), 2 ** 40),
    "float": st.floats(allow_nan=False, allow_infinity=False, width=64),
    "bool": st.booleans(),
    "datetime": st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(2100, 1, 1),
                             timezones=st.just(dt.UTC)),
    "date": st.dates(min_value=dt.date(1970, 1, 1), max_value=dt.date(2100, 1, 1)),
}
_SCALAR = st.one_of(*(_SCALARS[k] for k in ("str", "int", "float", "bool")))
TOML_TYPES: dict[str, st.SearchStrategy[Any]] = {
    **_SCALARS,
    "list": st.lists(_SCALAR, max_size=3),
    "table": st.dictionaries(BARE_KEYS, _SCALAR, max_size=2),
}
JSON_TYPES: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "str": _STR,
    "int": st.integers(-(2 ** 40), 2 ** 40),
    "float": st.floats(allow_nan=False, allow_infinity=False, width=64).filter(
        lambda f: not f.is_integer()),
    "bool": st.booleans(),
    "list": st.lists(st.one_of(st.none(), _SCALAR), max_size=3),
    "object": st.dictionaries(BARE_KEYS, st.one_of(st.none(), _SCALAR), max_size=2),
}


def other_than(types: dict[str, st.SearchStrategy[Any]], accepted: Iterable[str]
               ) -> st.SearchStrategy[Any]:
    """A value of any type not in `accepted`."""
    accepted = set(accepted)
    return st.one_of([s for name, s in types.items() if name not in accepted])


def non_str_list(types: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[list[Any]]:
    """A non-empty list holding at least one non-string."""
    bad = other_than(types, {"str"})
    return st.tuples(st.lists(_STR, max_size=2), bad, st.lists(_STR, max_size=2)).map(
        lambda t: [*t[0], t[1], *t[2]])


def typo_key(existing: Iterable[str]) -> st.SearchStrategy[str]:
    """A key no spec allows: a plausible misspelling of a real key, or a new name."""
    existing = sorted(set(existing))
    typos = st.sampled_from(existing).flatmap(lambda k: st.sampled_from(
        [k + "s", k + "_", "_" + k, k.upper(), k[:-1] if len(k) > 2 else k + "x",
         k.replace("_", "-") if "_" in k else k + "-x"]))
    fresh = st.from_regex(r"x[a-z]{2,6}", fullmatch=True)
    return st.one_of(typos, fresh).filter(lambda k: k not in existing)


# -- documents --------------------------------------------------------------------------------

Path_ = tuple[str, ...]


def dotted(path: Path_) -> str:
    return ".".join(path)


def get(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def put(doc: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target = doc
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value
    return doc


def drop(doc: dict[str, Any], path: Path_) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target = doc
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return doc


def leaves(doc: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every key path in a document (tables and their keys)."""
    out: list[Path_] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((*prefix, k))
            out += leaves(v, (*prefix, k))
    return out


def toml_doc(doc: dict[str, Any]) -> bytes:
    return tomlw.dumps(doc).encode("utf-8")


def json_doc(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def serialise_with(fmt: str) -> Callable[[Any], bytes]:
    return toml_doc if fmt == "toml" else json_doc


def toml_duplicate_key(data: bytes) -> st.SearchStrategy[Damage]:
    """A one-line `key = value` statement written twice (an editing slip)."""
    candidates: list[tuple[int, bytes, str]] = []
    pos = 0
    table: str | None = None
    in_multi = False
    for line in data.splitlines(keepends=True):
        body = line.rstrip(b"\r\n")
        stripped = body.strip()
        if not in_multi and stripped.startswith(b"[") and not stripped.startswith(b"[["):
            table = stripped.split(b"#")[0].strip().strip(b"[]").strip().decode()
        elif not in_multi and stripped and not stripped.startswith(b"#") and b"=" in body:
            try:
                tomllib.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, tomllib.TOMLDecodeError):
                pass
            else:
                name = body.split(b"=", 1)[0].strip().strip(b'"').decode()
                candidates.append((pos + len(body), body, f"{table}.{name}" if table else name))
        if body.count(b'"""') % 2 == 1:
            in_multi = not in_multi
        pos += len(line)
    return st.sampled_from(candidates).map(lambda c: Damage(
        "duplicate-key", data[:c[0]] + b"\n" + c[1] + data[c[0]:], keys=(c[2],),
        note=f"{c[2]} written twice"))


def json_with_duplicate(doc: Any, path: tuple[str, ...], key: str, value: Any) -> bytes:
    """`doc` as JSON with one more `key: value` member in the object at `path`, after the
    existing one of that name: a duplicate name, which json.loads resolves to the last."""
    def render(obj: Any, at: tuple[str, ...]) -> str:
        if isinstance(obj, dict):
            members = [f"{json.dumps(k)}: {render(v, (*at, k))}" for k, v in obj.items()]
            if at == path:
                members.append(f"{json.dumps(key)}: {json.dumps(value, sort_keys=True)}")
            return "{" + ", ".join(members) + "}"
        return json.dumps(obj, sort_keys=True)
    return (render(doc, ()) + "\n").encode()
