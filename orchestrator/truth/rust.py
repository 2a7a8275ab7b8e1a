"""Rust as the text truth rules read it: a source split into code and the rest (// and nested
/* */ comments, "..." strings over lines with escapes, raw strings r"...", r#"..."#, byte and
C strings with their prefix, char literals; a lifetime's or a label's quote is code), and the
items its code declares."""

from __future__ import annotations

import re

from orchestrator.truth.lexing import blank, line_or_block_comment_end, split

# A char literal ('x', '\n', '\u{1F600}'); any other quote is a lifetime or a label
# ('a, 'outer:), which is code.
_CHAR = re.compile(r"'(?:\\(?:u\{[0-9A-Fa-f]{1,6}\}|x[0-9A-Fa-f]{2}|.)|[^\\'\n])'")
_PLAIN = re.compile(r"[^/\"']+")
# The prefix just before a string's quote, at a word start: r, br or cr and the hashes of a raw
# string (group 1), or b or c of a byte or C string.
_PREFIX = re.compile(r"(?<!\w)(?:[bc]?r(#*)|[bc])$")

# struct, enum, union, trait, type alias, function, module and macro_rules! items, whatever
# visibility and qualifiers stand before them (`pub(crate)`, `unsafe`, `async`, `extern "C"`);
# a function pointer type (`fn(i32) -> i32`) and `impl Trait for Type` declare nothing, and a
# `union` keyword is one only before a name (`let union = ...` is a variable).
_DECLARATION = re.compile(r"\b(?:struct|enum|union|trait|type|fn|mod|macro_rules!)[ \t]*"
                          r"(?<=[ \t!])\s*(?P<name>[A-Za-z_]\w*)")


def nested_comment_end(text: str, i: int) -> int:
    """Just past the block comment opening at `i` (`/*`), its nested ones included; the
    text's end when it is not closed."""
    j, depth, n = i + 2, 1, len(text)
    while j < n and depth:
        if text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
        else:
            j += 1
    return j


def code_and_rest(text: str) -> tuple[str, str]:
    """(code, comments and literals) of a Rust source (lexing.split)."""
    return split(text, _PLAIN, _comment_end, _literal_end)


def _comment_end(text: str, i: int) -> int | None:
    """Where the // or (nested) /* */ comment opening at `i` ends, or None."""
    return nested_comment_end(text, i) if text.startswith("/*", i) \
        else line_or_block_comment_end(text, i)


def _literal_end(text: str, i: int, code: list[str], rest: list[str]) -> int | None:
    c, n = text[i], len(text)
    if c == '"':
        prefix = _PREFIX.search(text, max(0, i - 258), i)  # at most 255 hashes
        start = i if prefix is None else prefix.start()
        if prefix is not None and (hashes := prefix.group(1)) is not None:
            end = text.find('"' + hashes, i + 1)
            j = n if end < 0 else end + 1 + len(hashes)
        else:
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        for k in range(start, i):  # the prefix, already taken as code
            rest[k] = text[k]
        blank(start, j, code)
        return j
    if c == "'" and (char := _CHAR.match(text, i)):
        blank(i, char.end(), code)
        return char.end()
    return None


def declared_names(code: str) -> list[str]:
    """The structs, enums, unions, traits, type aliases, functions, modules and macros the
    code declares, sorted, each once."""
    return sorted({m.group("name") for m in _DECLARATION.finditer(code)})
