"""The `rg` parser: ripgrep's standard output and the rg arm's strategy scripts (also read
for the arms that print rg's format: aider-repomap, ctags)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from orchestrator.parsers import (ParseError, Parsed, RANKED_KINDS, Row, answer_rows, check_kind,
                                  clipped, count_calls, lines, reason, repo_path)
from orchestrator.untrusted import decode as untrusted

# The first `:digits:` of a line ends its path; searched from the line's second character (a
# path is never empty). Each try starts at a colon and reads the digits after it once.
_RG_SITE = re.compile(r":([0-9]+):")
_RG_BINARY = ": binary file matches (found "
_RG_BINARY_OFFSET = " byte around offset "


def rg_binary_notice(line: str) -> bool:
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
        check_kind(kind)
        return Parsed(answer_rows(self._rows(stdout, kind), self.name), count_calls(stderr))

    def _rows(self, stdout: bytes, kind: str) -> Iterator[Row]:
        for number, line in lines(stdout, self.name):
            if not line:
                continue
            if site := _RG_SITE.search(line, 1):
                yield Row(repo_path(line[:site.start()], self.name),
                          untrusted.line_number(site[1], what="rg line number"),
                          reason(line[site.end():]))
            elif (kind in RANKED_KINDS and _rg_count(line)) or rg_binary_notice(line):
                continue
            else:
                raise ParseError(f"{self.name}: line {number} is not path:line:text: "
                                 f"{clipped(line)}", parser=self.name, at=number)


PARSER = RgParser()
