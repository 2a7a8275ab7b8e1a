"""Tool-derived strings escaped for where a person reads them: a terminal, a Markdown document.

A file name, an answer, a tool's version or the tail of its stderr is whatever the tool chose.
Shown raw it can move a terminal's cursor, set its title or clipboard, clear it, draw a fake
line over a real one (C0/C1 controls, escape sequences, a carriage return); reorder what the
reader sees (Unicode bidi overrides and isolates); or, in Markdown, start a heading, a table
row, a list or a quote, or bring raw HTML, a link or an image.

- `visible(s)` is the base of every other: each code point a reader cannot see as itself
  (Unicode categories Cc, Cf, Zl, Zp and lone surrogates) becomes a visible escape in Python's
  spelling: `\\x1b`, `\\u202e`, `\\U000e0001`; tab, newline and carriage return as `\\t`,
  `\\n`, `\\r`. A lone surrogate U+DC80..U+DCFF (a byte that was not UTF-8, kept by
  `surrogateescape`) is shown as that byte, `\\xff`, as state.json spells it. Tab is escaped
  too: in a one-line field it only misaligns columns, and nothing honest needs it there. A
  literal backslash is left as written, so an honest name reads as before. A character that
  impersonates another (`untrusted.lookalikes`: a Cyrillic letter in a Latin word, a blank
  filler, a fullwidth or mathematical form, a slash that is not `/`, a combining overlay) is
  escaped the same way, so a lookalike path never reads as the real one.
- `terminal(s)` is one line for a terminal (the same, cut at `limits.TERMINAL_FIELD_CHARS`);
  `terminal_lines(s)` keeps the line breaks of a message the host composed of several lines
  and escapes everything else.
- `markdown_inline(s)` / `markdown_cell(s)`: the visible string with every character that could
  open a Markdown construct neutralised. The convention (one, used everywhere): backslash
  escapes for ASCII punctuation that opens inline syntax (\\\\ ` * ~ [ ] $ @ and the
  underscores that are not inside a word), HTML entities for < > & (so the output never holds
  a raw `<`), `:` escaped where a scheme or an emoji code could follow it, the `(` after a `]`,
  and the first character of a line-start construct (#, >, -, +, *, =, `1.`, leading blanks).
  A backslash escape renders as the character alone, so an honest name looks as before.

Everything here is a pure function of its input: the documents stay byte-identical.
"""

from __future__ import annotations

import re
import traceback
import unicodedata
from types import TracebackType

from orchestrator.untrusted import limits
from orchestrator.untrusted.lookalikes import marked

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _escape_char(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def visible(s: str) -> str:
    """Every control, format (bidi overrides and isolates included), line or paragraph
    separator, lone surrogate and lookalike as a visible escape; every other character as
    it is."""
    if s.isascii() and s.isprintable():
        return s  # the common case, and already exactly itself
    lookalike = marked(s)
    return "".join(_escape_char(ch) if i in lookalike or _hidden(ch) else ch
                   for i, ch in enumerate(s))


def _cut(s: str, limit: int) -> str:
    if len(s) <= limit:
        return s
    return f"{s[:limit]}... ({len(s) - limit:,} more characters)"


def terminal(s: object) -> str:
    """One field for a terminal: nothing in it can act on the terminal or break the line."""
    return _cut(visible(str(s)), limits.TERMINAL_FIELD_CHARS)


def terminal_lines(s: object) -> str:
    """A message of several lines for a terminal: its line breaks kept, every other control
    escaped (a carriage return included: no line can draw over another)."""
    return "\n".join(_cut(visible(line), limits.TERMINAL_LINE_CHARS)
                     for line in str(s).split("\n"))


# -- Markdown -----------------------------------------------------------------------------------

_ALWAYS = {"\\": "\\\\", "`": "\\`", "*": "\\*", "~": "\\~", "[": "\\[", "]": "\\]",
           "$": "\\$", "@": "\\@", "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;"}
# Any Unicode blank after the marker, not only CommonMark's space and tab: some renderers take
# a no-break space there too.
_BLOCK_START = re.compile(r"(#{1,6}(?=\s|$)|[-+*](?=\s|$)|=+\s*$|-+\s*$|>)")
_ORDERED_START = re.compile(r"(\d{1,9})([.)])(?=\s|$)")
_WWW = re.compile(r"(?i)www\.")


def _word(ch: str) -> bool:
    return ch.isalnum()


def _inline_char(s: str, i: int) -> str:
    ch = s[i]
    if ch in _ALWAYS:
        return _ALWAYS[ch]
    before = s[i - 1] if i > 0 else ""
    after = s[i + 1] if i + 1 < len(s) else ""
    if ch == "_" and not (_word(before) and _word(after)):
        return "\\_"  # only an underscore inside a word can never open or close emphasis
    if ch == ":" and after not in ("", " "):
        return "\\:"  # javascript:..., http://..., :emoji:
    if ch == "(" and before == "]":
        return "\\("
    return ch


def markdown_inline(s: object) -> str:
    """A tool-derived string as Markdown text inside a line: it renders as the characters it
    holds and can open no construct (no line break, table cell, heading, list, quote, code,
    emphasis, HTML, link, image, autolink, math)."""
    text = visible(str(s))
    out = "".join(_inline_char(text, i) for i in range(len(text)))
    out = _WWW.sub(lambda m: m.group(0)[:3] + "\\.", out)
    if out[:1].isspace():
        # four leading blanks would start an indented code block; a blank-only cell would
        # read as an empty one
        return f"&#{ord(out[0])};" + out[1:]
    ordered = _ORDERED_START.match(out)
    if ordered:
        return f"{ordered.group(1)}\\{ordered.group(2)}{out[ordered.end():]}"
    if _BLOCK_START.match(out):
        return "\\" + out
    return out


def markdown_cell(s: object) -> str:
    """A table cell: inline text (its `|` escaped with the rest), a blank for an empty one."""
    return markdown_inline(s) or " "


def markdown_code_span(s: object) -> str:
    """Inline code in running text (not a table cell): delimited by a backtick run longer
    than any inside, padded where the content starts or ends with a backtick or a blank, so
    it shows exactly the visible string and ends where it should."""
    text = visible(str(s))
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_code(s: object) -> str:
    """One line inside a fenced code block (the fence is made longer than any backtick run):
    Markdown is not read there, so only what could break the line or act on a terminal
    reading the file is escaped."""
    return visible(str(s))


def terminal_traceback(kind: type[BaseException], value: BaseException,
                       tb: TracebackType | None) -> str:
    """A traceback for a terminal: each exception's message (which may quote a tool's bytes)
    kept to one escaped line, the frames' lines escaped too."""
    formatted = traceback.TracebackException(kind, value, tb)
    seen: set[int] = set()
    part: traceback.TracebackException | None = formatted
    while part is not None and id(part) not in seen:
        seen.add(id(part))
        part._str = terminal(part._str)  # type: ignore[attr-defined]  # the message line
        part = part.__cause__ or part.__context__
    return terminal_lines("".join(formatted.format()).rstrip("\n"))
