"""Output parsers: what an arm's captured output says, as rows a scorer can grade.

One parser per output format, registered by name in `PARSERS`; an arm names its parser in
its TOML. A parser reads the verbatim stdout and stderr of one task's invocation and returns
the rows of the answer (repo-relative path, 1-based line, reason), in the tool's own order,
and the tool-call count. It never guesses: output it cannot read raises `ParseError`, which
the run records for that cell and moves on.

Every parser reads hostile bytes in time linear in their length: JSON and line numbers go
through `untrusted.decode` (bounded length, nesting, digits; a refusal is a `HostileInput`
naming its guard), and every pattern is anchored and splits a line where one fixed mark
is, never where two open-ended runs meet. The scorer makes a ParseError, a HostileInput
and any other exception of a parser that cell's `parse-error`, never the whole score's.

Shared conventions:

- **Text.** stdout is decoded as UTF-8 with ``errors="replace"``: a byte that is not UTF-8
  becomes U+FFFD in a row (such a path can never equal a truth path, which is what it should
  do), and the transcript keeps the exact bytes.
- **Paths.** A leading ``/corpus/`` (the arm's corpus mount) or ``./`` is removed; any other
  absolute path, an empty one or one with a ``..`` segment is a `ParseError`.
- **Calls.** A multi-call strategy prints one ``sandbench-call: <argv>`` line on stderr before
  each call; ``calls`` is the number of such lines, and 1 when there are none (a plain command
  is one call).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from orchestrator.errors import InputError
from orchestrator.kinds import ALL_KINDS, EDGE_KINDS
from orchestrator.untrusted import decode as untrusted
from orchestrator.untrusted.errors import HostileInput

CALL_MARKER = b"sandbench-call:"
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

def count_calls(stderr: bytes) -> int:
    """The number of ``sandbench-call:`` lines on stderr; 1 when a command printed none."""
    marked = sum(1 for line in stderr.splitlines() if line.startswith(CALL_MARKER))
    return marked or 1


def decode(data: bytes) -> str:
    """stdout as text; an invalid UTF-8 byte becomes U+FFFD (see the module docstring)."""
    return data.decode("utf-8", errors="replace")


def repo_path(raw: str, parser: str) -> str:
    """A path as the tool printed it, made repo-relative; ParseError when it cannot be
    (HostileInput `bad-path` past PATH_MAX)."""
    path = untrusted.path(raw, what=f"{parser} path")
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


def _check_kind(kind: str) -> None:
    if kind not in ALL_KINDS:
        raise ValueError(f"unknown task kind {kind!r}; known: {', '.join(ALL_KINDS)}")


def _reason(text: object) -> str | None:
    """A reason token: the text without surrounding whitespace, or None when nothing is left."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    return text or None


def _json_values(text: str, parser: str) -> Iterator[Any]:
    """Every JSON value in `text`, one after another (pretty-printed documents back to back,
    or one per line), within untrusted.decode's bounds; ParseError at the first thing that
    is not JSON."""
    try:
        yield from untrusted.json_values(text, what=f"{parser} stdout")
    except HostileInput as exc:
        if exc.kind != "not-json":
            raise
        raise ParseError(f"{parser}: not JSON at character {exc.data['at']}: "
                         f"{exc.message.split(': ', 2)[-1]}", parser=parser,
                         at=exc.data["at"]) from None


def _require(cond: bool, parser: str, what: str, found: object) -> None:
    if not cond:
        raise ParseError(f"{parser}: expected {what}, found {_short(found)}", parser=parser)


def _short(value: object, limit: int = 120) -> str:
    return untrusted.clip(value, limit)


def _line(value: object, parser: str, *, zero_based: bool = False) -> int:
    _require(isinstance(value, int) and not isinstance(value, bool)
             and value >= (0 if zero_based else 1), parser,
             "a 0-based line" if zero_based else "a 1-based line", value)
    assert isinstance(value, int)
    return value + 1 if zero_based else value


# -- ripgrep ------------------------------------------------------------------------------------

# The first `:digits:` of a line ends its path; searched from the line's second character (a
# path is never empty). Each try starts at a colon and reads the digits after it once.
_RG_SITE = re.compile(r":([0-9]+):")
_RG_BINARY = ": binary file matches (found "
_RG_BINARY_OFFSET = " byte around offset "


def _rg_binary_notice(line: str) -> bool:
    """`PATH: binary file matches (found WHAT byte around offset N)`, by splitting at its
    fixed marks (a regex of two open-ended runs around them took quadratic time)."""
    path, mark, rest = line.partition(_RG_BINARY)
    found, mark2, offset = rest.removesuffix(")").rpartition(_RG_BINARY_OFFSET)
    return bool(path and mark and rest.endswith(")") and found and mark2
                and offset.isascii() and offset.isdigit())


def _rg_count(line: str) -> bool:
    """`PATH:COUNT` (`rg -c`)."""
    path, mark, count = line.rpartition(":")
    return bool(path and mark and count.isascii() and count.isdigit())


class RgParser:
    """ripgrep's standard output, and the rg arm's strategy scripts (which print only it).

    - ``path:line:text`` (``-n``; with ``-o -r '$1'`` the text is the captured name) is a row
      whose reason is the text. The path is the text before the first ``:digits:``, so a path
      that itself holds ``:digits:`` is misread; rg offers no unambiguous text format short of
      ``--null`` or ``--json``, which the arm does not use.
    - ``path:count`` (``-c``, the ranking call of rg-locate) carries no line: for locate and
      e2e-retrieval it is read but yields no row (the strategy's next call lists the same
      files, in the same order, with lines); for the other kinds it is a ParseError.
    - rg's ``path: binary file matches (...)`` notice yields no row.
    - Blank lines are skipped; any other line is a ParseError.
    """

    name = "rg"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        _check_kind(kind)
        rows: list[Row] = []
        for number, raw in enumerate(decode(stdout).split("\n"), 1):
            line = raw.removesuffix("\r")
            if not line:
                continue
            if site := _RG_SITE.search(line, 1):
                rows.append(Row(repo_path(line[:site.start()], self.name),
                                untrusted.line_number(site[1], what="rg line number"),
                                _reason(line[site.end():])))
            elif (kind in RANKED_KINDS and _rg_count(line)) or _rg_binary_notice(line):
                continue
            else:
                raise ParseError(f"rg: line {number} is not path:line:text: {_short(line)}",
                                 parser=self.name, at=number)
        return Parsed(tuple(rows), count_calls(stderr))


# -- ast-grep -----------------------------------------------------------------------------------

class AstGrepParser:
    """``ast-grep scan|run --json=stream`` (one object per line), or ``--json``/``--json=compact``
    (one array). Each match is a row: ``file``, ``range.start.line`` + 1 (ast-grep counts lines
    from 0), and as reason the first source line of the match (``lines``), else its ``text``."""

    name = "ast-grep"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        _check_kind(kind)
        matches: list[Any] = []
        for value in _json_values(decode(stdout), self.name):
            matches.extend(value if isinstance(value, list) else [value])
        return Parsed(tuple(self._row(m) for m in matches), count_calls(stderr))

    def _row(self, match: Any) -> Row:
        _require(isinstance(match, dict), self.name, "a match object", match)
        path = match.get("file")
        _require(isinstance(path, str), self.name, "a string `file`", path)
        span = match.get("range")
        start = span.get("start") if isinstance(span, dict) else None
        _require(isinstance(start, dict), self.name, "`range.start`", span)
        assert isinstance(start, dict)
        line = _line(start.get("line"), self.name, zero_based=True)
        lines = match.get("lines")
        first = lines.split("\n", 1)[0] if isinstance(lines, str) else None
        return Row(repo_path(path, self.name), line, _reason(first) or _reason(match.get("text")))


# -- code-review-graph --------------------------------------------------------------------------

_CRG_SHAPES = {"references": "query", "impact": "impact", "locate": "search",
               "e2e-retrieval": "search"}


class CodeReviewGraphParser:
    """code-review-graph's JSON answers, one document per call, back to back.

    - ``ambiguous`` (a question back: which of these nodes?) and ``not_found`` yield no row.
    - ``query`` (references: callers_of, importers_of): one row per edge, ``file_path``,
      ``line``, the edge ``kind`` (CALLS, IMPORTS_FROM) as reason.
    - ``impact``: one row per impacted node, at its call site's line when it has one, else its
      first line, with its name after ``::`` (or its kind, for a File node) as reason; then,
      line-less, every impacted file no shown node covers (the tool caps the nodes it lists).
    - ``search`` (locate, e2e-retrieval): one row per result in the tool's rank order, at the
      node's first line, reason as for impact.

    Every other status, or a document of another shape than the task kind's, is a ParseError.
    """

    name = "code-review-graph"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        _check_kind(kind)
        if kind in EDGE_KINDS:
            edges = tuple(self._graph_edge(doc, kind)
                          for doc in _json_values(decode(stdout), self.name))
            return Parsed(tuple(Row(e.path, e.line, e.target[1]) for e in edges),
                          count_calls(stderr), edges)
        rows: list[Row] = []
        for doc in _json_values(decode(stdout), self.name):
            _require(isinstance(doc, dict), self.name, "a JSON object per answer", doc)
            status = doc.get("status")
            if status in ("ambiguous", "not_found"):
                continue
            _require(status == "ok", self.name, "status ok, ambiguous or not_found", status)
            shape = _CRG_SHAPES[kind]
            if shape == "query":
                rows += self._edges(doc)
            elif shape == "impact":
                rows += self._impact(doc)
            else:
                rows += self._search(doc)
        return Parsed(tuple(rows), count_calls(stderr))

    def _node(self, qualified: object) -> tuple[str | None, str]:
        """A graph node's (file, name): `/corpus/FILE::Type.name` or `/corpus/FILE::name`
        (the graph names nodes by absolute path), or the call's text the tool did not
        resolve to a node (`helper`, `Box::new`, `mem::take`): no file, its last segment."""
        _require(isinstance(qualified, str) and qualified, self.name,
                 "a node's qualified name", qualified)
        assert isinstance(qualified, str)
        file, sep, rest = qualified.partition("::")
        if not sep or not file.startswith("/"):
            return None, qualified.rsplit("::", 1)[-1].rsplit(".", 1)[-1]
        return repo_path(file, self.name), rest.rsplit(".", 1)[-1]

    def _graph_edge(self, doc: Any, kind: str) -> Edge:
        """One line of crg-edges: a CALLS edge (caller -> callee) for call-edges, a
        TESTED_BY edge (stored callee -> test, turned round to test -> callee) for
        test-edges."""
        want = {"call-edges": "CALLS", "test-edges": "TESTED_BY"}[kind]
        _require(isinstance(doc, dict) and doc.get("kind") == want, self.name,
                 f"a {want} edge object", doc)
        _require(isinstance(doc.get("file"), str), self.name, "an edge with a `file`", doc)
        line = _line(doc.get("line"), self.name)
        source, target = self._node(doc.get("source")), self._node(doc.get("target"))
        if kind == "test-edges":
            source, target = target, source
        return Edge(repo_path(doc["file"], self.name), line, source, target)

    def _list(self, doc: dict[str, Any], key: str, shape: str) -> list[Any]:
        value = doc.get(key)
        _require(isinstance(value, list), self.name, f"a {shape} answer with a `{key}` list",
                 {k: doc[k] for k in list(doc)[:4]})
        assert isinstance(value, list)
        return value

    def _edges(self, doc: dict[str, Any]) -> list[Row]:
        _require("pattern" in doc, self.name, "a query answer (with `pattern`)", list(doc))
        rows = []
        for edge in self._list(doc, "edges", "query"):
            _require(isinstance(edge, dict) and isinstance(edge.get("file_path"), str),
                     self.name, "an edge with a `file_path`", edge)
            line = edge.get("line")
            rows.append(Row(repo_path(edge["file_path"], self.name),
                            None if line is None else _line(line, self.name),
                            _reason(edge.get("kind"))))
        return rows

    def _node_row(self, node: Any, line: object) -> Row:
        _require(isinstance(node, dict) and isinstance(node.get("file_path"), str), self.name,
                 "a node with a `file_path`", node)
        qualified = node.get("qualified_name")
        label = (qualified.split("::", 1)[1] if isinstance(qualified, str) and "::" in qualified
                 else node.get("kind"))
        return Row(repo_path(node["file_path"], self.name),
                   None if line is None else _line(line, self.name), _reason(label))

    def _impact(self, doc: dict[str, Any]) -> list[Row]:
        rows = []
        for node in self._list(doc, "impacted_nodes", "impact"):
            _require(isinstance(node, dict), self.name, "an impacted node", node)
            site = node.get("call_site")
            line = site.get("line") if isinstance(site, dict) else None
            rows.append(self._node_row(node, node.get("line_start") if line is None else line))
        shown = {row.path for row in rows}
        for file in self._list(doc, "impacted_files", "impact"):
            _require(isinstance(file, str), self.name, "a path in `impacted_files`", file)
            path = repo_path(file, self.name)
            if path not in shown:
                shown.add(path)
                rows.append(Row(path, None, "impacted file"))
        return rows

    def _search(self, doc: dict[str, Any]) -> list[Row]:
        _require("query" in doc, self.name, "a search answer (with `query`)", list(doc))
        rows = []
        for node in self._list(doc, "results", "search"):
            _require(isinstance(node, dict), self.name, "a search result", node)
            rows.append(self._node_row(node, node.get("line_start")))
        return rows


# -- devscout -----------------------------------------------------------------------------------

# `file:line` then two spaces (a declaration and its source line), `: ` (a manifest hit and the
# file's purpose) or nothing: the first `:digits` so followed ends the path. Searched from the
# line's second character; each try starts at a colon and reads the digits after it once.
_DS_SITE = re.compile(r":([0-9]+)(?:  |: |$)")
_DS_TRAILERS = (re.compile(r"… \+[0-9]+ more( declarations)? \(refine query\)"),
                re.compile(r"\+[0-9]+ resource-key hits, use --resources"))
_DS_ZERO_HIT = ('no matches for "', "\" (run 'devscout map' if manifest is missing)")


def _ds_zero_hit(line: str) -> bool:
    start, end = _DS_ZERO_HIT
    return len(line) >= len(start) + len(end) and line.startswith(start) \
        and line.endswith(end)


class DevscoutParser:
    """devscout's answers (the `--json` answer contract of its docs/answer-contract.md, and
    the text of `find`).

    - references (`refs --json`) and impact (`impact --json`): one JSON object. ``ambiguous``
      yields no row (its candidates are a question back). Rows are the hit rows: every
      ``inbound.<edge kind>.rows`` entry of the answer and of each entry of its ``members``
      wrapper, and every top-level ``rows`` entry (impact's blast radius), each with ``file``,
      ``line`` (an impact row has none: the first entry of its ``fromLines``, the tool's own
      order of edge kinds, else no line) and ``why`` as reason. The ``ambiguous`` sub-blocks
      (edges it could not resolve) and the ``sites`` (the declaration, not a reference) are
      not rows.
    - locate and e2e-retrieval (`find`, text): ``file:line  source`` (a declaration) and
      ``file:line: purpose`` (a manifest hit) are rows in printed order, a bare ``file:line``
      a row without reason; the ``… +N more`` and ``+N resource-key hits`` trailers and the
      zero-hit ``no matches for "..."`` line yield none; anything else is a ParseError.
    """

    name = "devscout"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        _check_kind(kind)
        text = decode(stdout)
        if kind in RANKED_KINDS:
            rows = self._find(text)
        else:
            rows = []
            for doc in _json_values(text, self.name):
                _require(isinstance(doc, dict), self.name, "a JSON object", doc)
                rows += self._hits(doc)
        return Parsed(tuple(rows), count_calls(stderr))

    def _hits(self, answer: dict[str, Any]) -> list[Row]:
        if answer.get("outcome") == "ambiguous":
            return []
        rows: list[Row] = []
        members = answer.get("members", [])
        _require(isinstance(members, list), self.name, "a `members` list", members)
        for member in members:
            _require(isinstance(member, dict), self.name, "a member answer", member)
            rows += self._hits(member)
        inbound = answer.get("inbound", {})
        _require(isinstance(inbound, dict), self.name, "an `inbound` table", inbound)
        for edge_kind, block in inbound.items():
            _require(isinstance(block, dict) and isinstance(block.get("rows"), list),
                     self.name, f"`inbound.{edge_kind}.rows`", block)
            rows += [self._row(r) for r in block["rows"]]
        top = answer.get("rows", [])
        _require(isinstance(top, list), self.name, "a `rows` list", top)
        rows += [self._row(r) for r in top]
        return rows

    def _row(self, row: Any) -> Row:
        _require(isinstance(row, dict) and isinstance(row.get("file"), str), self.name,
                 "a hit row with a `file`", row)
        line = row.get("line")
        if line is None and isinstance(row.get("fromLines"), dict) and row["fromLines"]:
            line = next(iter(row["fromLines"].values()))
        return Row(repo_path(row["file"], self.name),
                   None if line is None else _line(line, self.name), _reason(row.get("why")))

    def _find(self, text: str) -> list[Row]:
        rows: list[Row] = []
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.removesuffix("\r")
            if not line.strip() or any(t.fullmatch(line) for t in _DS_TRAILERS) \
                    or _ds_zero_hit(line):
                continue
            site = _DS_SITE.search(line, 1)
            if site is None:
                raise ParseError(f"devscout: find line {number} is not file:line: "
                                 f"{_short(line)}", parser=self.name, at=number)
            text = line[site.end():] if site.end() < len(line) else None
            rows.append(Row(repo_path(line[:site.start()], self.name),
                            untrusted.line_number(site[1], what="devscout line number"),
                            _reason(text)))
        return rows


# -- code-index-mcp -----------------------------------------------------------------------------

class CodeIndexMcpParser:
    """code-index-mcp's `search_code_advanced` answer, the text content of its tools/call
    result: one JSON object whose ``results`` list holds ``{file, line, text}`` matches (the
    search tool's order), beside ``pagination``. Each match is a row: ``file``, ``line``
    (1-based), ``text`` as reason. A tool error reaches the record as ``mcp-tool-error`` (the
    server answers isError), never here; any other shape is a ParseError."""

    name = "code-index-mcp"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        _check_kind(kind)
        rows: list[Row] = []
        for doc in _json_values(decode(stdout), self.name):
            _require(isinstance(doc, dict) and isinstance(doc.get("results"), list),
                     self.name, "an object with a `results` list", doc)
            for match in doc["results"]:
                _require(isinstance(match, dict) and isinstance(match.get("file"), str),
                         self.name, "a match with a string `file`", match)
                rows.append(Row(repo_path(match["file"], self.name),
                                _line(match.get("line"), self.name), _reason(match.get("text"))))
        return Parsed(tuple(rows), count_calls(stderr))


# -- serena -------------------------------------------------------------------------------------

_SERENA_MATCH = re.compile(r"  >\s*(?P<line>[0-9]+):(?P<text>.*)")
_SERENA_NO_CONTEXT = "References without surrounding lines:\n"
_SERENA_COUNTS = "Reference counts per file:\n"


class SerenaParser:
    """serena's `find_referencing_symbols` answer, the text content of its tools/call result.

    Its full form is one JSON object grouped as path -> symbol kind -> referencing symbols;
    each item names the symbol that contains the reference and its ``content_around_reference``,
    the referencing line marked ``  >`` with its 0-based number (``  >  25:    code``), one line
    of context either side. Each item is a row: the path, the marked line (made 1-based), its
    text as reason. When the answer would pass serena's ``max_answer_chars`` it shortens it,
    least first: "References without surrounding lines:" and the same grouping whose items
    carry a 0-based ``reference_line``, then "Reference counts per file:" and a path -> count
    object (rows with no line), then "Found N references." (no path at all: a ParseError, as
    is any other shape). Empty output is an empty answer. A tool error reaches the record as
    ``mcp-tool-error``, never here."""

    name = "serena"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        _check_kind(kind)
        text = decode(stdout)
        if not text.strip():
            return Parsed((), count_calls(stderr))
        if text.startswith(_SERENA_COUNTS):
            rows = [Row(repo_path(path, self.name), None, None)
                    for path in self._document(text[len(_SERENA_COUNTS):])]
            return Parsed(tuple(rows), count_calls(stderr))
        short = text.startswith(_SERENA_NO_CONTEXT)
        doc = self._document(text[len(_SERENA_NO_CONTEXT):] if short else text)
        rows = []
        for path, by_kind in doc.items():
            _require(isinstance(by_kind, dict), self.name,
                     "symbol kinds mapped to referencing symbols", by_kind)
            for items in by_kind.values():
                _require(isinstance(items, list), self.name, "a list of referencing symbols",
                         items)
                for item in items:
                    rows.append(self._row(repo_path(path, self.name), item, short))
        return Parsed(tuple(rows), count_calls(stderr))

    def _document(self, text: str) -> dict[str, Any]:
        docs = list(_json_values(text, self.name))
        _require(len(docs) == 1 and isinstance(docs[0], dict), self.name,
                 "one JSON object keyed by path", text)
        return docs[0]

    def _row(self, path: str, item: object, short: bool) -> Row:
        _require(isinstance(item, dict), self.name, "a referencing symbol (an object)", item)
        assert isinstance(item, dict)
        if short:
            return Row(path, _line(item.get("reference_line"), self.name, zero_based=True),
                       _reason(item.get("name_path")))
        around = item.get("content_around_reference")
        _require(isinstance(around, str), self.name, "a string `content_around_reference`",
                 item)
        marked = None
        for line in around.split("\n"):
            if match := _SERENA_MATCH.fullmatch(line):
                _require(marked is None, self.name, "exactly one line marked `  >`", around)
                marked = match
        _require(marked is not None, self.name, "exactly one line marked `  >`", around)
        assert marked is not None
        return Row(path, untrusted.line_number(marked["line"], what="serena line number",
                                               zero_based=True), _reason(marked["text"]))


# -- the registry -------------------------------------------------------------------------------

PARSERS: dict[str, OutputParser] = {p.name: p for p in (
    RgParser(), AstGrepParser(), CodeReviewGraphParser(), DevscoutParser(),
    CodeIndexMcpParser(), SerenaParser())}


def get_parser(name: str) -> OutputParser:
    """The parser registered as `name`; an unknown name is an InputError listing the known."""
    try:
        return PARSERS[name]
    except KeyError:
        raise InputError(f"unknown output parser {name!r}",
                         fix=f"known parsers: {', '.join(sorted(PARSERS))}", name=name,
                         known=sorted(PARSERS)) from None


__all__ = ["PARSERS", "AstGrepParser", "CodeIndexMcpParser", "CodeReviewGraphParser",
           "DevscoutParser", "OutputParser", "ParseError", "Parsed", "RgParser", "Row",
           "SerenaParser", "count_calls",
           "get_parser", "repo_path"]
