"""C# as the text truth rules read it: a source split into code and the rest (// and /* */
comments; regular, verbatim, interpolated and raw string literals, an interpolation's holes
being code; char literals), and the types its code declares."""

from __future__ import annotations

import re

from orchestrator.truth.lexing import blank, hole_end, line_or_block_comment_end, split

_STRING_START = re.compile(r'(\$+)?(@)?(\$+)?("""+|")')
# Where a comment or literal may open: a run of any other characters is code.
_PLAIN = re.compile(r"[^/\"'$@]+")
_CHAR_LITERAL = re.compile(r"'(\\.[^']*|[^'\\\n])'")

# class, interface, struct, enum and record (`record class`, `record struct`), whatever
# modifiers and attributes stand before them; the name starts with a capital (the keywords of
# a constraint, `where T : class, new()`, are followed by no capitalised name) and is followed
# by what a declaration's name is: type parameters, a primary constructor, a base list, a body,
# a constraint, a `;` or the end of the line.
_TYPE = re.compile(r"\b(?:class|interface|struct|enum|record(?:[ \t]+(?:class|struct))?)"
                   r"\s+(?P<name>[A-Z]\w*)(?=[ \t]*(?:[<(:{;]|where\b|$))", re.M)
# A delegate is named by the last identifier before its parameter list (after its return
# type, itself perhaps generic: `delegate Task<T> Handler<T>(T message)`), on the same line.
_DELEGATE = re.compile(r"\bdelegate[ \t]+(?P<signature>[\w.<>,?\[\] \t]{1,400})\(")
_TYPE_PARAMETERS_AT_END = re.compile(r"<[\w \t,]*>[ \t]*$")
_LAST_NAME = re.compile(r"(?P<name>[A-Z]\w*)[ \t]*$")


def code_and_rest(text: str) -> tuple[str, str]:
    """(code, comments and literals) of a C# source (lexing.split)."""
    return split(text, _PLAIN, line_or_block_comment_end, _literal_end)


def _literal_end(text: str, i: int, code: list[str], rest: list[str]) -> int | None:
    m = _STRING_START.match(text[i:i + 8])
    if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
        return _string_end(text, i, m, code, rest)
    if text[i] == "'" and (char := _CHAR_LITERAL.match(text[i:i + 12])):
        j = i + char.end()
        blank(i, j, code)
        return j
    return None


def _string_end(text: str, i: int, m: re.Match[str], code: list[str], rest: list[str]) -> int:
    """Blank the string literal opening at i (matched by m) in `code`, its interpolation
    holes in `rest`; where it ends."""
    n = len(text)
    dollar = bool(m.group(1) or m.group(3))
    verbatim = bool(m.group(2))
    quotes = m.group(4)
    j = i + len(m.group(0))
    start = i
    while j < n:
        if len(quotes) >= 3 and text.startswith(quotes, j):
            j += len(quotes)
            break
        ch = text[j]
        if len(quotes) == 1 and not verbatim and ch == "\\":
            j += 2
            continue
        if len(quotes) == 1 and ch == '"':
            if verbatim and text.startswith('""', j):
                j += 2
                continue
            j += 1
            break
        if dollar and ch == "{" and not text.startswith("{{", j):
            blank(start, j + 1, code)
            k = hole_end(text, j + 1)
            blank(j + 1, k - 1, rest)  # the hole is code
            # past the hole's `}`, or past its `{` when that ends the text (never in place)
            start = j = max(k - 1, j + 1)
            continue
        if dollar and text.startswith("{{", j):
            j += 2
            continue
        if len(quotes) == 1 and not verbatim and ch == "\n":
            break
        j += 1
    j = min(j, n)  # an escape's backslash may end the text
    blank(start, j, code)
    return j


def _delegates(code: str) -> set[str]:
    names = set()
    for match in _DELEGATE.finditer(code):
        signature = _TYPE_PARAMETERS_AT_END.sub("", match.group("signature"))
        if (" " in signature.strip() or "\t" in signature.strip()) and (
                name := _LAST_NAME.search(signature)):
            names.add(name.group("name"))  # an anonymous `delegate (int x)` has no name
    return names


def declared_names(code: str) -> list[str]:
    """The types (class, interface, struct, enum, record, delegate) the code declares,
    sorted, each once."""
    return sorted({m.group("name") for m in _TYPE.finditer(code)} | _delegates(code))
