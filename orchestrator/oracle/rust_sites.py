"""Site classes of the Rust edges family (the methodology's "Site classes"): every oracle
reference gets a context and a shape read off the source at its position by a lexer of its own
(string, raw-string, byte-string, char and nested-comment aware), and the `#[test]` scan that
gives the oracle side of the test edges. Lexical and approximate by design, as the methodology
says: the split between type positions and value references never touches the call population.

- context: plain, macro-argument, macro-rules-body, attribute (`#[...]`, derives included),
  use-tree (a `use` declaration up to its `;`);
- shape: path-call (a name followed, past an optional turbofish, by `(` and not preceded by
  `.`), method-call (preceded by `.`), path-qualifier (followed by `::`), struct-literal (a
  capitalised name followed by `{` where an expression stands), type-position (a capitalised
  name otherwise: a unit enum variant counts here), macro-name (followed by `!`),
  value-reference (any other name), and the positions rust-analyzer resolves without a name:
  operator, literal, lifetime, whitespace.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, cached_property, partial
from itertools import accumulate

from orchestrator.truth.rust import nested_comment_end

_IDENT = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")
_OPEN = {"(": ")", "[": "]", "{": "}"}
# A name followed by `{` is a struct literal only where an expression stands: after one of
# these tokens (never after `impl`, `for`, `->`, `where`, a type's `:` ...).
_EXPR_BEFORE = {"=", "(", ",", "{", "=>", ";", "return", "[", "|", "&", "!", "in", "else",
                "break", "Some", "Ok", "Err", ""}


@dataclass(frozen=True)
class Source:
    """One file: its text with every comment, string and char literal's content blanked
    (positions kept, newlines kept), and the context of every byte offset.

    The oracle chooses the positions asked about, as many as its index holds: every question
    costs a logarithm of the file, never a scan of it (whitespace runs and non-ASCII lines are
    indexed once, each position is classified once)."""

    text: str
    code: str  # masked: literals' and comments' characters replaced by spaces
    kinds: bytearray  # per offset: 0 code, 1 comment, 2 literal
    line_starts: tuple[int, ...]
    context_at: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> Source:
        code, kinds = _mask(text)
        starts = [0]
        starts += [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        return cls(text, code, kinds, tuple(starts), tuple(_contexts(code)))

    def offset(self, line: int, character: int) -> int | None:
        """The offset of a 0-based (line, UTF-8 byte column) position, None past the file: the
        characters of the line that end within its first `character` bytes."""
        if line >= len(self.line_starts):
            return None
        start, end = self._span(line)
        byte_ends = self._byte_ends(line)
        if byte_ends is None:
            return start + min(character, end - start)
        return start + bisect_right(byte_ends, character)

    def _span(self, line: int) -> tuple[int, int]:
        """The offsets where a line starts and ends (its newline left out)."""
        start = self.line_starts[line]
        end = self.line_starts[line + 1] - 1 if line + 1 < len(self.line_starts) else len(
            self.text)
        return start, end

    @cached_property
    def _byte_ends(self) -> Callable[[int], list[int] | None]:
        """Where each character of a non-ASCII line ends, in UTF-8 bytes (None: ASCII),
        computed once per line of this file."""
        @cache
        def of_line(line: int) -> list[int] | None:
            start, end = self._span(line)
            segment = self.text[start:end]
            return None if segment.isascii() else list(
                accumulate(len(ch.encode("utf-8")) for ch in segment))
        return of_line

    @cached_property
    def shape_at(self) -> Callable[[int], tuple[str, str]]:
        """`shape` of an offset of this file, computed once per offset (the oracle may
        reference one position many times)."""
        return cache(partial(shape, self))

    @cached_property
    def _blank_runs(self) -> tuple[list[int], list[int]]:
        """Start and end offsets of every run of whitespace in the masked code."""
        runs = [m.span() for m in _BLANK.finditer(self.code)]
        return [a for a, _ in runs], [b for _, b in runs]

    def skip_blank(self, pos: int) -> int:
        """The first offset at or after `pos` that is not whitespace (or the end)."""
        starts, ends = self._blank_runs
        i = bisect_right(starts, pos) - 1
        return ends[i] if i >= 0 and ends[i] > pos else pos

    def last_non_blank(self, pos: int) -> int:
        """The last offset before `pos` that is not whitespace, -1 if none."""
        j = pos - 1
        starts, ends = self._blank_runs
        i = bisect_right(starts, j) - 1
        return starts[i] - 1 if j >= 0 and i >= 0 and ends[i] > j else j


_BLANK = re.compile(r"\s+")


def _mask(text: str) -> tuple[str, bytearray]:
    out = list(text)
    kinds = bytearray(len(text))
    i, n = 0, len(text)

    def blank(a: int, b: int, kind: int) -> None:
        for k in range(a, min(b, n)):
            kinds[k] = kind
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        ch = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end == -1 else end
            blank(i, end, 1)
            i = end
        elif text.startswith("/*", i):
            j = nested_comment_end(text, i)
            blank(i, j, 1)
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (
                i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            end = text.find(close, m.end())
            end = n if end == -1 else end + len(close)
            blank(i, end, 2)
            i = end
        elif ch == '"' or (ch == "b" and text.startswith('b"', i) and (
                i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + (2 if ch == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1, 2)
            i = j + 1
        elif ch == "'" or (ch == "b" and text.startswith("b'", i)):
            j = i + (2 if ch == "b" else 1)
            m = re.compile(r"\\(?:x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f_]*\}|.)'|[^\\\n]'").match(text, j)
            if m:  # a char literal; otherwise a lifetime or a label, which stays code
                blank(i, m.end(), 2)
                i = m.end()
            else:
                i += 1
        elif ch.isdigit() and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.compile(r"[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9A-Za-z_]*)?").match(text, i)
            assert m is not None
            for k in range(i, m.end()):
                kinds[k] = 2
            i = m.end()
        else:
            i += 1
    return "".join(out), kinds


def _contexts(code: str) -> list[str]:
    """The innermost context of every offset: a stack of open delimiters, each carrying the
    context it opens (an attribute's `[`, a macro's delimiter, `macro_rules!`'s body), and a
    `use` declaration open until its `;`."""
    ctx = ["plain"] * len(code)
    stack: list[tuple[str, str]] = []  # (closing delimiter, context inside)
    in_use = False
    i, n = 0, len(code)
    pending: str | None = None  # the context the next opening delimiter opens
    while i < n:
        ch = code[i]
        current = stack[-1][1] if stack else "plain"
        if in_use and current == "plain":
            current = "use-tree"
        ctx[i] = current
        m = _IDENT.match(code, i)
        if m and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            word = m.group(0)
            end = m.end()
            rest = code[end:end + 1]
            for k in range(i, end):
                ctx[k] = current
            if word == "use" and not in_use and current == "plain":
                in_use = True
                for k in range(i, end):
                    ctx[k] = "use-tree"
            elif rest == "!" and word == "macro_rules":
                pending = "macro-rules-body"
            elif rest == "!" and not code.startswith("!=", end):
                pending = "macro-argument"
            i = end
            continue
        if ch == "#" and (code.startswith("#[", i) or code.startswith("#![", i)):
            pending = "attribute"
        elif ch in _OPEN:
            inside = pending if pending is not None else current
            if current in ("macro-rules-body", "attribute") and pending is None:
                inside = current
            stack.append((_OPEN[ch], inside))
            pending = None
        elif ch in ")]}":
            if stack and stack[-1][0] == ch:
                stack.pop()
        elif ch == ";" and in_use and (not stack or stack[-1][1] == "plain"):
            in_use = False
        elif not ch.isspace() and ch != "!" and pending not in (None, "macro-rules-body"):
            pending = None
        i += 1
    return ctx


def _prev_token(src: Source, pos: int) -> str:
    code = src.code
    j = src.last_non_blank(pos)
    if j < 0:
        return ""
    if code[j].isalnum() or code[j] == "_":
        k = j
        while k >= 0 and (code[k].isalnum() or code[k] == "_"):
            k -= 1
        return code[k + 1:j + 1]
    if code[j] == ">" and j > 0 and code[j - 1] == "=":
        return "=>"
    return code[j]


def _skip_turbofish(src: Source, pos: int) -> int:
    """Past `::<...>` (balanced angle brackets), or pos unchanged."""
    code = src.code
    if not code.startswith("::", pos):
        return pos
    j = src.skip_blank(pos + 2)
    if j >= len(code) or code[j] != "<":
        return pos
    depth = 0
    while j < len(code):
        if code[j] == "<":
            depth += 1
        elif code[j] == ">" and code[j - 1] != "-":
            depth -= 1
            if depth == 0:
                return src.skip_blank(j + 1)
        j += 1
    return pos


def shape(src: Source, at: int) -> tuple[str, str]:
    """(shape, name) of the reference starting at offset `at`."""
    code = src.code
    if at >= len(code):
        return "whitespace", ""
    kind = src.kinds[at]
    if kind == 2:
        return "literal", ""
    ch = code[at]
    if ch == "'":
        return "lifetime", ""
    m = _IDENT.match(code, at)
    if m is None:
        return ("whitespace", "") if ch.isspace() else ("operator", "")
    name = m.group(0).removeprefix("r#")
    after = src.skip_blank(m.end())
    before = _prev_token(src, at)
    if code.startswith("!", after) and not code.startswith("!=", after):
        return "macro-name", name
    past = src.skip_blank(_skip_turbofish(src, after))
    if past < len(code) and code[past] == "(":
        return ("method-call" if before == "." else "path-call"), name
    if code.startswith("::", after):
        return "path-qualifier", name
    capital = name[:1].isupper()
    if capital and after < len(code) and code[after] == "{" and before in _EXPR_BEFORE:
        return "struct-literal", name
    if capital:
        return "type-position", name
    return "value-reference", name


def classify(src: Source, line: int, character: int) -> tuple[str, str, str]:
    """(context, shape, name) of an oracle reference at a 0-based position."""
    at = src.offset(line, character)
    if at is None:
        return "plain", "whitespace", ""
    kind, name = src.shape_at(at)
    context = src.context_at[at] if at < len(src.context_at) else "plain"
    return context, kind, name


# -- the #[test] scan and the fn items -----------------------------------------------------

_TEST_ATTR = re.compile(r"#\[\s*(?:test|cfg_attr\s*\((?:[^()]|\([^()]*\))*,\s*test\s*\))\s*\]")
_FN = re.compile(r"\bfn\s+((?:r#)?[A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class FnItem:
    name: str
    line: int  # 1-based line of its name
    end_line: int  # 1-based line of its body's closing brace


def _body_end(code: str, pos: int) -> int | None:
    """The offset of the closing brace of the body a signature starting at pos opens, or
    None when the signature ends in `;` (no body). Brackets and parentheses in the
    signature (an array type `[u8; 4]`) are skipped whole."""
    depth, j = 0, pos
    while j < len(code):
        ch = code[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch == ";":
            return None
        elif depth == 0 and ch == "{":
            break
        j += 1
    else:
        return None
    braces = 0
    while j < len(code):
        if code[j] == "{":
            braces += 1
        elif code[j] == "}":
            braces -= 1
            if braces == 0:
                return j
        j += 1
    return None


def fn_items(src: Source) -> list[FnItem]:
    """Every `fn` with a body, from its name to its closing brace."""
    found = []
    for fn in _FN.finditer(src.code):
        end = _body_end(src.code, fn.end())
        if end is not None:
            found.append(FnItem(fn.group(1).removeprefix("r#"), _line_of(src, fn.start(1)),
                                _line_of(src, end)))
    return found


def tests(src: Source) -> list[FnItem]:
    """Every function carrying `#[test]` (or a `cfg_attr` whose last item is `test`, the
    predicate unevaluated), with its span from its name to the end of its body."""
    code = src.code
    found = []
    for attr in _TEST_ATTR.finditer(code):
        fn = _FN.search(code, attr.end())
        if fn is None:
            continue
        between = code[attr.end():fn.start()]
        if ";" in between or "}" in between:
            continue
        end = _body_end(code, fn.end())
        if end is not None:
            found.append(FnItem(fn.group(1).removeprefix("r#"), _line_of(src, fn.start(1)),
                                _line_of(src, end)))
    return found


def _line_of(src: Source, offset: int) -> int:
    lo, hi = 0, len(src.line_starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if src.line_starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1
