"""TOML values spelled for the files sandbench writes by command (a corpus.lock table, a
suite.toml, a task file): every string escaped so that it reads back as exactly itself."""

from __future__ import annotations

from collections.abc import Sequence

_NAMED = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
          "\r": "\\r"}


def _escape(ch: str, keep: str = "") -> str:
    if ch in keep:
        return ch
    if ch in _NAMED:
        return _NAMED[ch]
    return f"\\u{ord(ch):04X}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch


def string(value: str) -> str:
    """A basic string on one line."""
    return '"' + "".join(_escape(ch) for ch in value) + '"'


def multiline(value: str) -> str:
    """A multi-line basic string, its line breaks and tabs kept as they are, opening and
    closing on lines of their own: it reads back as `value` without its leading and trailing
    line breaks, plus one line break (the task files' explanations end so)."""
    out, quotes = [], 0
    for ch in value.strip("\n"):
        # a quote is kept as it is unless it would make a third in a row (the delimiter)
        quotes = quotes + 1 if ch == '"' else 0
        out.append('\\"' if quotes == 3 else _escape(ch, keep='\n\t"'))
        quotes = 0 if quotes == 3 else quotes
    body = "".join(out)
    return f'"""\n{body}\n"""'


def array(values: Sequence[str], indent: str = "  ") -> str:
    """An array of strings: inline when short, else one string per line."""
    inline = "[" + ", ".join(string(v) for v in values) + "]"
    if len(inline) <= 80:
        return inline
    return "[\n" + "".join(f"{indent}{string(v)},\n" for v in values) + "]"
