"""The `rg-heading` parser: ripgrep's human output with `--heading`, the form rg prints by
default to a terminal, so the form a publication shows when it pastes a terminal session.

A task whose published figures were counted on that form runs rg with `--heading -n` (in a
sandbox rg's stdout is a pipe, where its default is `path:line:text`, the `rg` parser's) and
declares `output = "rg-heading"` in its `[commands.ARM]`, so that the cell is graded on the
same bytes the publication counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from orchestrator.parsers import (ParseError, Parsed, Row, answer_rows, check_kind, clipped,
                                  count_calls, lines, reason, repo_path)
from orchestrator.parsers.rg import rg_binary_notice
from orchestrator.untrusted import decode as untrusted

# A line of a file's group: its number, then `:` (a match, its text after) or `-` (a context
# line of `-A`/`-B`/`-C`). The digits are read once from the line's start.
_NUMBERED = re.compile(r"([0-9]+)([:-])")
_CONTEXT_BREAK = "--"


class RgHeadingParser:
    """ripgrep's `--heading -n` output.

    - A file's group opens with its path alone on a line (the output's first line, or the
      first after a blank line), then one line per match, ``line:text``, a row whose reason
      is the text; a context line ``line-text`` and the ``--`` between context blocks yield
      no row, nor does rg's ``PATH: binary file matches (...)`` notice (rg 13 prints it
      right after the group before, then a blank line).
    - A blank line closes the group. A line in a group that is none of these (a heading
      output without ``-n`` has no numbers) is a ParseError, as is a group with no line
      after its path, and a path that reads as a numbered line: rg prints no path when it
      searched one file, and such output cannot say which file it is.
    """

    name = "rg-heading"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> Parsed:
        check_kind(kind)
        return Parsed(answer_rows(self._rows(stdout), self.name), count_calls(stderr))

    def _rows(self, stdout: bytes) -> Iterator[Row]:
        path: str | None = None  # the open group's path; None between groups
        empty = False  # the open group has no line yet
        for number, line in lines(stdout, self.name):
            if not line:
                if empty:
                    raise self._error(number, "line:text or line-text right after a file's path",
                                      line)
                path = None
            elif path is None:
                if _NUMBERED.match(line):
                    raise self._error(number, "a file's path (rg prints none when it searches "
                                      "one file)", line)
                path, empty = repo_path(line, self.name), True
            elif site := _NUMBERED.match(line):
                empty = False
                if site[2] == ":":
                    yield Row(path, untrusted.line_number(site[1], what="rg line number"),
                              reason(line[site.end():]))
            elif line == _CONTEXT_BREAK or rg_binary_notice(line):
                empty = False
            else:
                raise self._error(number, "line:text, line-text or a blank line in a file's "
                                  "group (rg --heading -n)", line)
        if empty:
            raise ParseError(f"{self.name}: the output ends right after a file's path",
                             parser=self.name)

    def _error(self, number: int, expected: str, line: str) -> ParseError:
        return ParseError(f"{self.name}: line {number}: expected {expected}, found "
                          f"{clipped(line)}", parser=self.name, at=number)


PARSER = RgHeadingParser()
