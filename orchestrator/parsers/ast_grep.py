"""The `ast-grep` parser: ast-grep's JSON matches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from orchestrator.parsers import (Parsed, Row, answer_rows, check_kind, count_calls, decode,
                                  json_values, line_value, reason, repo_path, require)


class AstGrepParser:
    """``ast-grep scan|run --json=stream`` (one object per line), or ``--json``/``--json=compact``
    (one array). Each match is a row: ``file``, ``range.start.line`` + 1 (ast-grep counts lines
    from 0), and as reason the first source line of the match (``lines``), else its ``text``."""

    name = "ast-grep"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        check_kind(kind)
        return Parsed(answer_rows(self._rows(stdout), self.name), count_calls(stderr))

    def _rows(self, stdout: bytes) -> Iterator[Row]:
        for value in json_values(decode(stdout), self.name):
            yield from map(self._row, value if isinstance(value, list) else [value])

    def _row(self, match: Any) -> Row:
        require(isinstance(match, dict), self.name, "a match object", match)
        path = match.get("file")
        require(isinstance(path, str), self.name, "a string `file`", path)
        span = match.get("range")
        start = span.get("start") if isinstance(span, dict) else None
        require(isinstance(start, dict), self.name, "`range.start`", span)
        assert isinstance(start, dict)
        line = line_value(start.get("line"), self.name, zero_based=True)
        lines = match.get("lines")
        first = lines.split("\n", 1)[0] if isinstance(lines, str) else None
        return Row(repo_path(path, self.name), line, reason(first) or reason(match.get("text")))


PARSER = AstGrepParser()
