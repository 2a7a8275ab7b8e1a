"""The `devscout` parser: devscout's answers: its `--json` contract and the text of `find`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from orchestrator.parsers import (ParseError, Parsed, RANKED_KINDS, Row, answer_rows, check_kind,
                                  clipped, count_calls, decode, json_values, line_value, lines,
                                  reason, repo_path, require)
from orchestrator.untrusted import decode as untrusted

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
        check_kind(kind)
        rows = self._find(stdout) if kind in RANKED_KINDS else self._answers(stdout)
        return Parsed(answer_rows(rows, self.name), count_calls(stderr))

    def _answers(self, stdout: bytes) -> Iterator[Row]:
        for doc in json_values(decode(stdout), self.name):
            require(isinstance(doc, dict), self.name, "a JSON object", doc)
            yield from self._hits(doc)

    def _hits(self, answer: dict[str, Any]) -> Iterator[Row]:
        if answer.get("outcome") == "ambiguous":
            return
        members = answer.get("members", [])
        require(isinstance(members, list), self.name, "a `members` list", members)
        for member in members:
            require(isinstance(member, dict), self.name, "a member answer", member)
            yield from self._hits(member)
        inbound = answer.get("inbound", {})
        require(isinstance(inbound, dict), self.name, "an `inbound` table", inbound)
        for edge_kind, block in inbound.items():
            require(isinstance(block, dict) and isinstance(block.get("rows"), list),
                    self.name, f"`inbound.{edge_kind}.rows`", block)
            yield from map(self._row, block["rows"])
        top = answer.get("rows", [])
        require(isinstance(top, list), self.name, "a `rows` list", top)
        yield from map(self._row, top)

    def _row(self, row: Any) -> Row:
        require(isinstance(row, dict) and isinstance(row.get("file"), str), self.name,
                "a hit row with a `file`", row)
        line = row.get("line")
        if line is None and isinstance(row.get("fromLines"), dict) and row["fromLines"]:
            line = next(iter(row["fromLines"].values()))
        return Row(repo_path(row["file"], self.name),
                   None if line is None else line_value(line, self.name), reason(row.get("why")))

    def _find(self, stdout: bytes) -> Iterator[Row]:
        for number, line in lines(stdout, self.name):
            if not line.strip() or any(t.fullmatch(line) for t in _DS_TRAILERS) \
                    or _ds_zero_hit(line):
                continue
            site = _DS_SITE.search(line, 1)
            if site is None:
                raise ParseError(f"devscout: find line {number} is not file:line: "
                                 f"{clipped(line)}", parser=self.name, at=number)
            rest = line[site.end():] if site.end() < len(line) else None
            yield Row(repo_path(line[:site.start()], self.name),
                      untrusted.line_number(site[1], what="devscout line number"), reason(rest))


PARSER = DevscoutParser()
