"""A small TOML writer: enough to write back what tomllib read, after a data-level mutation.

Scalars first, then tables as `[a.b]` sections; tables inside arrays become inline tables.
`tomllib.loads(dumps(doc)) == doc` for every document made of str, int, float (also nan and
inf), bool, date/datetime, list and dict (checked by the properties' sanity test).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _string(value: str) -> str:
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def key(name: str) -> str:
    return name if _BARE.fullmatch(name) else _string(name)


def value(obj: Any) -> str:
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        if math.isnan(obj):
            return "nan"
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        text = repr(obj)
        return text if any(c in text for c in ".e") else text + ".0"
    if isinstance(obj, str):
        return _string(obj)
    if isinstance(obj, dt.datetime | dt.date | dt.time):
        return obj.isoformat()
    if isinstance(obj, list):
        return "[" + ", ".join(value(v) for v in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{key(k)} = {value(v)}" for k, v in obj.items()) + "}"
    raise TypeError(f"not a TOML value: {obj!r}")


def _table(path: list[str], table: dict[str, Any], lines: list[str]) -> None:
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in table.items() if isinstance(v, dict)]
    if path:
        lines.append("")
        lines.append("[" + ".".join(key(p) for p in path) + "]")
    for k, v in scalars:
        lines.append(f"{key(k)} = {value(v)}")
    for k, v in tables:
        _table([*path, k], v, lines)


def dumps(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    _table([], doc, lines)
    return "\n".join(lines).lstrip("\n") + "\n"
