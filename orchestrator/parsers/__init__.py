"""Output parsers: what an arm's captured output says, as rows a scorer can grade.

One parser per output format, each in its own module of this package (like BenchExec's
tool-info modules): the parser named `code-review-graph` is `code_review_graph.py`, whose
`PARSER` is registered in `PARSERS` under that name when this package is imported. An arm names
its parser in its TOML. This module is the shared core every parser uses (the rows, the
errors, the decoding helpers) and the registry; a suite's seal covers it, and the modules of
only the parsers its arms name (`orchestrator/suite/sealing.py`), so adding or fixing one tool's
parser leaves the seals of suites without that tool intact.

A parser reads the verbatim stdout and stderr of one task's invocation and returns
the rows of the answer (repo-relative path, 1-based line, reason), in the tool's own order,
and the tool-call count. It never guesses: output it cannot read raises `ParseError`, which
the run records for that cell and moves on.

Every parser reads hostile bytes in time linear in their length: JSON and line numbers go
through `untrusted.decode` (bounded length, nesting, digits; a refusal is a `HostileInput`
naming its guard), and every pattern is anchored and splits a line where one fixed mark
is, never where two open-ended runs meet. The scorer makes a ParseError, a HostileInput
and any other exception of a parser that cell's `parse-error`, never the whole score's.

Shared conventions:

- **Text.** stdout is decoded exactly (a byte that is not UTF-8 kept as a lone surrogate by
  ``surrogateescape``); a path becomes a key by the one rule for names (`repo_path` applies
  `untrusted.strings.portable`: such a byte is spelled ``\\xNN``, injectively), so two
  different paths never become one and a path is graded as the corpus's listing spells it.
  Every other string of a row stays exact; documents can always hold it (`fsutil`).
  A text format is read line by line (`lines`), each line decoded alone, so no copy of the
  whole answer is made.
- **Budget.** One answer is read to `limits.ANSWER_MAX_ROWS` rows (`answer_rows`: every
  parser yields its rows and stops at the first past it), `ANSWER_MAX_LINES` lines of text
  and `ANSWER_MAX_JSON_ITEMS` items of JSON: past one, a `HostileInput` (`too-many-rows`,
  `too-many-lines`, `too-many-items`), which the scorer makes the cell's `parse-error`. An
  answer is never graded on a cut (see `limits`).
- **Paths.** A leading ``/corpus/`` (the arm's corpus mount) or ``./`` is removed; any other
  absolute path, an empty one or one with a ``..`` segment is a `ParseError`.
- **Calls.** A multi-call strategy prints one ``sandbench-call: <argv>`` line on stderr before
  each call; ``calls`` is the number of such lines, and 1 when there are none (a plain command
  is one call). A task's own script (``[commands.ARM] script``) counts exactly its marked
  calls, none included.
- **Banners.** A tool that prints fixed lines before its answer (aider's cold-cache notice) has
  its own parser module declaring them, exactly, in ``banners``; only leading lines equal to
  one are skipped (`skip_banners`). There is no blanket skip: any other line stays the
  tool's output, read or refused as such.
- **Shapes.** A task's own command may declare its output a bare file list, or sections split
  at a separator line with one of them the answer (`orchestrator/score/shapes.py`); the scorer reads
  every cell through it, which for an arm's own template is the arm's parser alone.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol, TypeVar

from orchestrator.errors import InputError
from orchestrator.kinds import ALL_KINDS
from orchestrator.untrusted import decode as untrusted, limits
from orchestrator.untrusted.errors import HostileInput
from orchestrator.untrusted.strings import portable

CALL_MARKER = b"sandbench-call:"
# A marker at the start of a line as bytes.splitlines() splits them (at \n, \r and \r\n).
_MARKED_LINE = re.compile(rb"(?<![^\r\n])" + re.escape(CALL_MARKER))
CORPUS_PREFIX = "/corpus/"
RANKED_KINDS = ("locate", "e2e-retrieval")


class ParseError(Exception):
    """Output a parser cannot read. Recorded per (arm, task) cell; never fatal to a run."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


@dataclass(frozen=True)
class Row:
    path: str            # repo-relative POSIX path (no leading ./ or /corpus/)
    line: int | None     # 1-based, or None when the format carries no line
    reason: str | None   # the matched symbol, edge kind, or source line text


@dataclass(frozen=True)
class Edge:
    """One edge of a tool's graph (the edge kinds): its site, and the definition it goes from
    and to, each as (repo-relative file or None when the tool names none, name). A call edge
    goes from the caller to the callee; a test edge from the test to the function it calls."""

    path: str
    line: int
    source: tuple[str | None, str]
    target: tuple[str | None, str]


@dataclass(frozen=True)
class Parsed:
    rows: tuple[Row, ...]   # in the tool's order (ranked order for locate/e2e-retrieval)
    calls: int              # tool calls: count of 'sandbench-call:' lines on stderr, else 1
    edges: tuple[Edge, ...] = ()  # the edge kinds: every edge the tool printed, in its order


class OutputParser(Protocol):
    name: str

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed: ...


# -- shared helpers ---------------------------------------------------------------------------

def marked_calls(stderr: bytes) -> int:
    """The number of ``sandbench-call:`` lines on stderr (found where they are, no line
    copied)."""
    return sum(1 for _ in _MARKED_LINE.finditer(stderr))


def count_calls(stderr: bytes) -> int:
    """The number of ``sandbench-call:`` lines on stderr; 1 when a command printed none."""
    return marked_calls(stderr) or 1


def skip_banners(stdout: bytes, banners: tuple[str, ...]) -> bytes:
    """stdout without its leading lines that equal one of `banners` exactly (a trailing CR
    aside); the first other line and everything after it are kept. Linear: a line is looked
    at only up to the longest banner's length."""
    wanted = {banner.encode() for banner in banners}
    longest = max((len(banner) for banner in wanted), default=0)
    start = 0
    while wanted and start < len(stdout):
        end = stdout.find(b"\n", start, start + longest + 2)
        if end < 0:
            if len(stdout) - start > longest + 1:
                break
            end = len(stdout)
        if stdout[start:end].removesuffix(b"\r") not in wanted:
            break
        start = end + 1
    return stdout[start:]


def decode(data: bytes) -> str:
    """stdout as text, exactly: a byte that is not UTF-8 kept as a lone surrogate (see the
    module docstring)."""
    return data.decode("utf-8", "surrogateescape")


def lines(data: bytes, parser: str) -> Iterator[tuple[int, str]]:
    """stdout's lines as `decode(data).split("\\n")` numbers them (1-based, a trailing CR
    removed, the empty piece after a final newline left out), one at a time, each decoded
    alone (a newline is never part of a UTF-8 sequence, so the text is the same); past
    `limits.ANSWER_MAX_LINES` a HostileInput `too-many-lines`."""
    start, end = 0, len(data)
    for number in range(1, limits.ANSWER_MAX_LINES + 1):
        if start >= end:
            return
        stop = data.find(b"\n", start)
        stop = end if stop < 0 else stop
        yield number, decode(data[start:stop]).removesuffix("\r")
        start = stop + 1
    if start < end:
        raise HostileInput("too-many-lines", f"{parser}: the answer has more than "
                           f"{limits.ANSWER_MAX_LINES:,} lines, the limit of one answer: not "
                           "read past it, not graded", parser=parser,
                           limit=limits.ANSWER_MAX_LINES)


Item = TypeVar("Item")


def answer_rows(rows: Iterable[Item], parser: str) -> tuple[Item, ...]:
    """The rows (or edges) of one answer, taken from a parser's lazy iteration up to
    `limits.ANSWER_MAX_ROWS`: one more is a HostileInput `too-many-rows`, and nothing past
    it is read."""
    kept = tuple(islice(rows, limits.ANSWER_MAX_ROWS + 1))
    if len(kept) > limits.ANSWER_MAX_ROWS:
        raise HostileInput("too-many-rows", f"{parser}: the answer has more than "
                           f"{limits.ANSWER_MAX_ROWS:,} rows, the limit of one answer: not "
                           "read past it, not graded", parser=parser,
                           limit=limits.ANSWER_MAX_ROWS)
    return kept


def repo_path(raw: str, parser: str) -> str:
    """A path as the tool printed it (exactly: a JSON string or a line of stdout), made
    repo-relative and portable (`untrusted.strings`); ParseError when it cannot be
    (HostileInput `bad-path` past PATH_MAX)."""
    path = portable(untrusted.path(raw, what=f"{parser} path"))
    if path.startswith(CORPUS_PREFIX):
        path = path[len(CORPUS_PREFIX):]
    elif path.startswith("/"):
        raise ParseError(f"{parser}: absolute path outside /corpus: {untrusted.clip(raw)}",
                         parser=parser, path=raw)
    while path.startswith("./"):
        path = path[2:]
    if not path or ".." in path.split("/"):
        raise ParseError(f"{parser}: not a path inside the repository: "
                         f"{untrusted.clip(raw)}", parser=parser, path=raw)
    return path


def check_kind(kind: str) -> None:
    if kind not in ALL_KINDS:
        raise ValueError(f"unknown task kind {kind!r}; known: {', '.join(ALL_KINDS)}")


def reason(text: object) -> str | None:
    """A reason token: the text without surrounding whitespace, or None when nothing is left."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    return text or None


def json_values(text: str, parser: str) -> Iterator[Any]:
    """Every JSON value in `text`, one after another (pretty-printed documents back to back,
    or one per line), within untrusted.decode's bounds; ParseError at the first thing that
    is not JSON; past `limits.ANSWER_MAX_JSON_ITEMS` a HostileInput `too-many-items`."""
    try:
        yield from untrusted.json_values(text, what=f"{parser} stdout",
                                         max_items=limits.ANSWER_MAX_JSON_ITEMS)
    except HostileInput as exc:
        if exc.kind != "not-json":
            raise
        raise ParseError(f"{parser}: not JSON at character {exc.data['at']}: "
                         f"{exc.message.split(': ', 2)[-1]}", parser=parser,
                         at=exc.data["at"]) from None


def require(cond: bool, parser: str, what: str, found: object) -> None:
    if not cond:
        raise ParseError(f"{parser}: expected {what}, found {clipped(found)}", parser=parser)


def clipped(value: object, limit: int = 120) -> str:
    return untrusted.clip(value, limit)


def line_value(value: object, parser: str, *, zero_based: bool = False) -> int:
    require(isinstance(value, int) and not isinstance(value, bool)
             and value >= (0 if zero_based else 1), parser,
             "a 0-based line" if zero_based else "a 1-based line", value)
    assert isinstance(value, int)
    return value + 1 if zero_based else value


# -- the registry -------------------------------------------------------------------------------

def module_name(parser: str) -> str:
    """The module of this package that holds the parser named `parser` (`ast-grep` ->
    `ast_grep`): the seal finds a parser's source from its name alone, without importing it."""
    return parser.replace("-", "_")


def _discover() -> dict[str, OutputParser]:
    """Every parser module of this package (a module whose name starts with `_` is a helper,
    not a parser), each registered under its `PARSER.name`, which must name the module."""
    found: dict[str, OutputParser] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        parser: Any = getattr(module, "PARSER", None)
        name = getattr(parser, "name", None)
        if not isinstance(name, str) or module_name(name) != info.name:
            raise RuntimeError(f"{module.__file__}: a parser module defines PARSER, whose name "
                               f"is the module's with '-' for '_'; found {name!r}")
        found[name] = parser
    return found


PARSERS: dict[str, OutputParser] = _discover()


def get_parser(name: str) -> OutputParser:
    """The parser registered as `name`; an unknown name is an InputError listing the known."""
    try:
        return PARSERS[name]
    except KeyError:
        raise InputError(f"unknown output parser {name!r}",
                         fix=f"known parsers: {', '.join(sorted(PARSERS))}", name=name,
                         known=sorted(PARSERS)) from None


__all__ = ["CALL_MARKER", "CORPUS_PREFIX", "PARSERS", "RANKED_KINDS", "Edge", "OutputParser",
           "ParseError", "Parsed", "Row", "answer_rows", "check_kind", "clipped", "count_calls",
           "decode", "get_parser", "json_values", "line_value", "lines", "marked_calls",
           "module_name", "reason", "repo_path", "require", "skip_banners"]
