"""Tool strings a document can always hold: **names injective, every string encodable.**

A tool's bytes become Python strings that UTF-8 cannot encode in two ways: a name that is not
UTF-8, decoded with `surrogateescape` (each undecodable byte 0xNN becomes the lone surrogate
U+DCNN), and a JSON string holding a lone surrogate escape (`"\\udcff"`, valid JSON). Written
as UTF-8 either raises. Escaping them the obvious way (`backslashreplace`) is not injective:
the name made of the byte 0xFF and the name spelling the four characters `\\xff` become one
key, and the tool chooses which survives.

The rule, one for every kind of document:

- **A name** (a path under /state, /out or a corpus copy, a cut point, an answer's path, a
  corpus's tracked path) becomes a key by `portable`: a lone surrogate U+DC80..U+DCFF (a byte
  0xNN that was not UTF-8) is written `\\xNN`; any other lone surrogate `\\uNNNN`; a
  backslash is doubled where what follows it could be read as one of those escapes or as a
  doubled backslash (`x`, `u`, a backslash, a lone surrogate); every other character is
  itself. An honest name (no surrogate, no `\\x`, `\\u` or `\\\\` in it) is unchanged,
  every result is valid Unicode, and `original(portable(s)) == s` for every string: two names
  never share a key. Apply it once, where the name is first read (it is injective, not
  idempotent).
- **Every other string** (a reason, a version, an MCP field, a stderr tail) stays exactly what
  the tool wrote, so nested text (an MCP server's JSON payload) is never altered; a document
  holds it exactly because the writers spell a lone surrogate as its JSON escape
  (`fsutil.canonical_json`; a high surrogate written right before a low one reads back as
  their pair's character, JSON having no other spelling), and a person sees it escaped
  (`untrusted.text.visible`).

Both are pure functions of their input, so documents stay byte-identical.
"""

from __future__ import annotations

import re

# What needs rewriting: a lone surrogate, or a backslash before x, u, another backslash or a
# lone surrogate. Each alternative is one or two characters wide: the scan is linear.
_NEEDS = re.compile(r"[\ud800-\udfff]|\\(?=[xu\\\ud800-\udfff])")
_ESCAPE = re.compile(r"\\\\|\\x[0-9a-f]{2}|\\u[0-9a-f]{4}")


def _rewrite(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch == "\\":
        return "\\\\"
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def portable(s: str) -> str:
    """`s` as a document can hold it, injectively (see the module docstring)."""
    if s.isascii() and "\\" not in s:
        return s  # the common case: nothing to rewrite
    return _NEEDS.sub(_rewrite, s)


def portable_bytes(raw: bytes) -> str:
    """Bytes a tool chose (a file name, a path it printed) as a portable string: UTF-8 where
    they are, each other byte as `\\xNN`."""
    return portable(raw.decode("utf-8", "surrogateescape"))


def _restore(match: re.Match[str]) -> str:
    text = match.group(0)
    if text == "\\\\":
        return "\\"
    code = int(text[2:], 16)
    return chr(0xDC00 + code) if text[1] == "x" else chr(code)


def original(s: str) -> str:
    """The string `portable` was given: its inverse on every string `portable` returns (a
    doubled backslash is read before what follows it, so `\\\\xff` is a backslash and `xff`)."""
    return _ESCAPE.sub(_restore, s)
