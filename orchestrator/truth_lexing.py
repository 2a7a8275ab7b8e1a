"""The lexers of the text truth rules: a C# or TypeScript source split into code and the rest
(comments and string, character and template literals), in two strings of the source's
length, so a word is found in exactly one of them and positions and lines stay put. Linear:
a run of plain code is skipped by one match, never a character at a time."""

from __future__ import annotations

import re

# One identifier-like word (what a name in the truth rules is).
WORD = re.compile(r"\w+")


def blank(start: int, end: int, where: list[str]) -> None:
    """Spaces over where[start:end], its line breaks kept (positions and lines stay put)."""
    for k in range(start, end):
        if where[k] != "\n":
            where[k] = " "


def _comment_end(text: str, i: int) -> int | None:
    """Where the // or /* */ comment starting at i ends (C# and TypeScript alike), or None."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j == -1 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j == -1 else j + 2
    return None


_STRING_START = re.compile(r'(\$+)?(@)?(\$+)?("""+|")')
# Where a comment or literal may open: a run of any other characters is code, skipped at once
# (the same split as stepping through it a character at a time, much faster).
_CS_PLAIN = re.compile(r"[^/\"'$@]+")
_TS_PLAIN = re.compile(r"[^/\"'`]+")
_NOT_BREAK = re.compile(r"[^\n]")


def _code_run(text: str, i: int, plain: re.Pattern[str], rest: list[str]) -> int:
    """Blank, in `rest`, the run of plain code starting at i (line breaks kept); its end."""
    m = plain.match(text, i)
    assert m is not None
    rest[i:m.end()] = _NOT_BREAK.sub(" ", m.group())
    return m.end()
_CHAR_LITERAL = re.compile(r"'(\\.[^']*|[^'\\\n])'")


def code_and_rest(text: str) -> tuple[str, str]:
    """The source split in two same-length strings: code (comments and literals blanked) and
    the comments and literals (code blanked), so a word is found in exactly one of them."""
    code, rest = list(text), list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c not in "/\"'$@":
            i = _code_run(text, i, _CS_PLAIN, rest)
            continue
        if (j := _comment_end(text, i)) is not None:
            blank(i, j, code)
            i = j
            continue
        m = _STRING_START.match(text[i:i + 8])
        at_word_start = i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        if m and (m.group(4) or "") and at_word_start:
            i = _string_end(text, i, m, code, rest)
            continue
        if c == "'" and (char := _CHAR_LITERAL.match(text[i:i + 12])):
            j = i + char.end()
            blank(i, j, code)
            i = j
            continue
        rest[i] = " " if c != "\n" else "\n"
        i += 1
    return "".join(code), "".join(rest)


def _string_end(text: str, i: int, m: re.Match[str], code: list[str], rest: list[str]) -> int:
    """Blank the C# string literal opening at i (matched by m) in `code`, its interpolation
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
            depth, k = 1, j + 1
            while k < n and depth:
                depth += {"{": 1, "}": -1}.get(text[k], 0)
                k += 1
            blank(j + 1, k - 1, rest)  # the hole is code
            start = j = k - 1
            continue
        if dollar and text.startswith("{{", j):
            j += 2
            continue
        if len(quotes) == 1 and not verbatim and ch == "\n":
            break
        j += 1
    blank(start, j, code)
    return j


def ts_code_and_rest(text: str) -> tuple[str, str]:
    """code_and_rest for TypeScript: '...', "..." and `...${hole}...` literals."""
    code, rest = list(text), list(text)
    i, n = 0, len(text)
    while i < n:
        if text[i] not in "/\"'`":
            i = _code_run(text, i, _TS_PLAIN, rest)
            continue
        if (j := _comment_end(text, i)) is not None:
            blank(i, j, code)
            i = j
            continue
        c = text[i]
        if c in "'\"`":
            j, start = i + 1, i
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 2
                    continue
                if c != "`" and text[j] == "\n":
                    break
                if c == "`" and text.startswith("${", j):
                    blank(start, j + 2, code)
                    depth, k = 1, j + 2
                    while k < n and depth:
                        depth += {"{": 1, "}": -1}.get(text[k], 0)
                        k += 1
                    blank(j + 2, k - 1, rest)
                    start = j = k - 1
                    j += 1
                    continue
                j += 1
            j = min(j + 1, n)
            blank(start, j, code)
            i = j
            continue
        rest[i] = " " if c != "\n" else "\n"
        i += 1
    return "".join(code), "".join(rest)


# Rust: a char literal ('x', '\n', '\u{1F600}'); any other quote is a lifetime or a label
# ('a, 'outer:), which is code.
_RS_CHAR = re.compile(r"'(?:\\(?:u\{[0-9A-Fa-f]{1,6}\}|x[0-9A-Fa-f]{2}|.)|[^\\'\n])'")
_RS_PLAIN = re.compile(r"[^/\"']+")
# The prefix just before a string's quote, at a word start: r, br or cr and the hashes of a raw
# string (group 1), or b or c of a byte or C string.
_RS_PREFIX = re.compile(r"(?<!\w)(?:[bc]?r(#*)|[bc])$")


def nested_comment_end(text: str, i: int) -> int:
    """Just past the Rust block comment opening at `i` (`/*`), its nested ones included; the
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


def rs_code_and_rest(text: str) -> tuple[str, str]:
    """code_and_rest for Rust: // and nested /* */ comments, "..." strings (over lines, with
    escapes), raw strings r"...", r#"..."#, byte and C strings (a prefix blanked with its
    string) and char literals; a lifetime's or a label's quote is code."""
    code, rest = list(text), list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c not in "/\"'":
            i = _code_run(text, i, _RS_PLAIN, rest)
            continue
        if text.startswith("/*", i):
            j = nested_comment_end(text, i)
            blank(i, j, code)
            i = j
            continue
        if (line_end := _comment_end(text, i)) is not None:
            blank(i, line_end, code)
            i = line_end
            continue
        if c == '"':
            prefix = _RS_PREFIX.search(text, max(0, i - 258), i)  # at most 255 hashes
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
            i = j
            continue
        if c == "'" and (char := _RS_CHAR.match(text, i)):
            blank(i, char.end(), code)
            i = char.end()
            continue
        rest[i] = " " if c != "\n" else "\n"
        i += 1
    return "".join(code), "".join(rest)
