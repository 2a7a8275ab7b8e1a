"""TypeScript as the text truth rules read it: a source split into code and the rest (// and
/* */ comments; '...', "..." and `...${hole}...` literals, a template's holes being code), and
the names its code declares."""

from __future__ import annotations

import re

from orchestrator.truth.lexing import blank, hole_end, line_or_block_comment_end, split

# Where a comment or literal may open: a run of any other characters is code.
_PLAIN = re.compile(r"[^/\"'`]+")

# class, interface, enum and namespace (`const enum`, `abstract class`, `declare ...`,
# `export default ...` alike; an anonymous `class extends Base` declares nothing), a function
# (a generator's `function*` too) and a type alias (`type Name =` or `type Name<T> =`, so that
# `import type Name from` declares nothing).
_NAME = r"(?!(?:extends|implements)\b)(?P<name>[A-Za-z_$][\w$]*)"
_DECLARATION = re.compile(r"\b(?:(?:class|interface|enum|namespace)\s+"
                          r"|function\b\s*\*?\s*)" + _NAME)
_TYPE_ALIAS = re.compile(r"\btype\s+" + _NAME + r"(?=\s*[<=])")


def code_and_rest(text: str) -> tuple[str, str]:
    """(code, comments and literals) of a TypeScript source (lexing.split)."""
    return split(text, _PLAIN, line_or_block_comment_end, _literal_end)


def _literal_end(text: str, i: int, code: list[str], rest: list[str]) -> int | None:
    c, n = text[i], len(text)
    if c not in "'\"`":
        return None
    j, start = i + 1, i
    while j < n and text[j] != c:
        if text[j] == "\\":
            j += 2
            continue
        if c != "`" and text[j] == "\n":
            break
        if c == "`" and text.startswith("${", j):
            blank(start, j + 2, code)
            k = hole_end(text, j + 2)
            blank(j + 2, k - 1, rest)
            start = j = k - 1
            j += 1
            continue
        j += 1
    j = min(j + 1, n)
    blank(start, j, code)
    return j


def declared_names(code: str) -> list[str]:
    """The classes, interfaces, enums, namespaces, functions and type aliases the code
    declares, sorted, each once."""
    return sorted({m.group("name") for pattern in (_DECLARATION, _TYPE_ALIAS)
                   for m in pattern.finditer(code)})
