"""The `code-index-mcp` parser: its `search_code_advanced` answers (an MCP tool's text
content)."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.parsers import (Parsed, Row, answer_rows, check_kind, count_calls, decode,
                                  json_values, line_value, reason, repo_path, require)


class CodeIndexMcpParser:
    """code-index-mcp's `search_code_advanced` answer, the text content of its tools/call
    result: one JSON object whose ``results`` list holds ``{file, line, text}`` matches (the
    search tool's order), beside ``pagination``. Each match is a row: ``file``, ``line``
    (1-based), ``text`` as reason. A tool error reaches the record as ``mcp-tool-error`` (the
    server answers isError), never here; any other shape is a ParseError."""

    name = "code-index-mcp"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        check_kind(kind)
        return Parsed(answer_rows(self._rows(stdout), self.name), count_calls(stderr))

    def _rows(self, stdout: bytes) -> Iterator[Row]:
        for doc in json_values(decode(stdout), self.name):
            require(isinstance(doc, dict) and isinstance(doc.get("results"), list),
                    self.name, "an object with a `results` list", doc)
            for match in doc["results"]:
                require(isinstance(match, dict) and isinstance(match.get("file"), str),
                        self.name, "a match with a string `file`", match)
                yield Row(repo_path(match["file"], self.name),
                          line_value(match.get("line"), self.name), reason(match.get("text")))


PARSER = CodeIndexMcpParser()
