"""What the text truth rules' lexers share: a source split into code and the rest (comments
and string, character and template literals) in two strings of the source's length, so a word
is found in exactly one of them and positions and lines stay put. One loop drives every
language's lexer (csharp.py, typescript.py, rust.py): a run of plain code is skipped by one
match, never a character at a time, so lexing is linear."""

from __future__ import annotations

import re
from collections.abc import Callable

# One identifier-like word (what a name in the truth rules is).
WORD = re.compile(r"\w+")
_NOT_BREAK = re.compile(r"[^\n]")

# Where the comment opening at `i` ends, or None when none opens there.
CommentEnd = Callable[[str, int], "int | None"]
# A language's reading of the literal opening at `i`: blanks it in `code` (and the holes of an
# interpolated string in `rest`) and returns where it ends, or None when `i` opens none.
LiteralEnd = Callable[[str, int, list[str], list[str]], "int | None"]


def blank(start: int, end: int, where: list[str]) -> None:
    """Spaces over where[start:end], its line breaks kept (positions and lines stay put)."""
    for k in range(start, end):
        if where[k] != "\n":
            where[k] = " "


def line_or_block_comment_end(text: str, i: int) -> int | None:
    """Where the // or /* */ comment starting at i ends (C#, TypeScript and a Rust line
    comment alike), or None."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j == -1 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j == -1 else j + 2
    return None


def hole_end(text: str, j: int) -> int:
    """Just past the `}` closing the interpolation hole whose `{` is at j - 1 (braces counted;
    the text's end when it is not closed)."""
    depth, k, n = 1, j, len(text)
    while k < n and depth:
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        k += 1
    return k


def split(text: str, plain: re.Pattern[str], comment_end: CommentEnd,
          literal_end: LiteralEnd) -> tuple[str, str]:
    """The source split in two same-length strings: code (comments and literals blanked) and
    the comments and literals (code blanked). `plain` matches a run of characters none of
    which may open a comment or literal; `comment_end` and `literal_end` read one that may."""
    code, rest = list(text), list(text)
    i, n = 0, len(text)
    while i < n:
        if m := plain.match(text, i):
            rest[i:m.end()] = _NOT_BREAK.sub(" ", m.group())
            i = m.end()
            continue
        if (j := comment_end(text, i)) is not None:
            blank(i, j, code)
        elif (j := literal_end(text, i, code, rest)) is None:
            rest[i] = " " if text[i] != "\n" else "\n"
            j = i + 1
        i = j
    return "".join(code), "".join(rest)
