"""The `serena` parser: serena's `find_referencing_symbols` answers (an MCP tool's text content)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from orchestrator.parsers import (Parsed, Row, answer_rows, check_kind, count_calls, decode,
                                  json_values, line_value, reason, repo_path, require)
from orchestrator.untrusted import decode as untrusted

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
        check_kind(kind)
        text = decode(stdout)
        if not text.strip():
            return Parsed((), count_calls(stderr))
        if text.startswith(_SERENA_COUNTS):
            rows: Iterator[Row] = (Row(repo_path(path, self.name), None, None)
                                   for path in self._document(text[len(_SERENA_COUNTS):]))
        else:
            rows = self._rows(text)
        return Parsed(answer_rows(rows, self.name), count_calls(stderr))

    def _rows(self, text: str) -> Iterator[Row]:
        short = text.startswith(_SERENA_NO_CONTEXT)
        doc = self._document(text[len(_SERENA_NO_CONTEXT):] if short else text)
        for path, by_kind in doc.items():
            require(isinstance(by_kind, dict), self.name,
                    "symbol kinds mapped to referencing symbols", by_kind)
            for items in by_kind.values():
                require(isinstance(items, list), self.name, "a list of referencing symbols",
                        items)
                for item in items:
                    yield self._row(repo_path(path, self.name), item, short)

    def _document(self, text: str) -> dict[str, Any]:
        docs = list(json_values(text, self.name))
        require(len(docs) == 1 and isinstance(docs[0], dict), self.name,
                "one JSON object keyed by path", text)
        return docs[0]

    def _row(self, path: str, item: object, short: bool) -> Row:
        require(isinstance(item, dict), self.name, "a referencing symbol (an object)", item)
        assert isinstance(item, dict)
        if short:
            return Row(path, line_value(item.get("reference_line"), self.name, zero_based=True),
                       reason(item.get("name_path")))
        around = item.get("content_around_reference")
        require(isinstance(around, str), self.name, "a string `content_around_reference`",
                item)
        assert isinstance(around, str)
        marked = None
        for line in around.split("\n"):
            if match := _SERENA_MATCH.fullmatch(line):
                require(marked is None, self.name, "exactly one line marked `  >`", around)
                marked = match
        require(marked is not None, self.name, "exactly one line marked `  >`", around)
        assert marked is not None
        return Row(path, untrusted.line_number(marked["line"], what="serena line number",
                                               zero_based=True), reason(marked["text"]))


PARSER = SerenaParser()
