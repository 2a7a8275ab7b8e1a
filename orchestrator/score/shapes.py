"""The output shapes a task's own command may declare ([commands.ARM] of a task file, see
orchestrator/suite/): what the scorer parses of a cell's stdout, and how its calls count.

- **Sections.** A multi-call command that prints each call's output, separated by a line equal
  to a declared separator, has its answer in one section ("last" or a 1-based number); only
  that section is parsed (the payload stays the whole stdout). A section the output lacks is a
  ParseError naming it.
- **File list.** One repo path per line (``rg -l``): each through `repo_path`, as a row with
  no line; blank lines are skipped; the arm's parser's banners are skipped first.
- **A parser of its own.** A command printing a form other than its arm's parser reads (rg's
  `--heading`, as a publication printed it) names the registered parser that reads it.
- **Calls.** A script counts its ``sandbench-call:`` lines (those its `call`s printed), zero
  included; any other command counts as its parser does.

Every step is one pass over the bytes (a search for the separator lines, one line at a time
for a file list), so the time is linear in the output, and a file list is read to the
answer's budget (`parsers.answer_rows`, `parsers.lines`) like any parser's rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from orchestrator.parsers import (ParseError, Parsed, Row, answer_rows, check_kind, clipped,
                                  count_calls, get_parser, lines, marked_calls, repo_path,
                                  skip_banners)

if TYPE_CHECKING:
    from orchestrator.parsers import OutputParser

FILE_LIST = "file-list"
TOOL = "tool"


@dataclass(frozen=True)
class Shape:
    """How a cell's output is read: the default (an arm's own template) is its parser's."""

    output: str = TOOL                # TOOL (the arm's parser) | FILE_LIST | a parser's name
    sections: str | None = None       # the separator line, when the output has sections
    answer_section: str | int = "last"
    script: bool = False              # a task's script: calls are its marked calls exactly


def answer_section(stdout: bytes, separator: str, which: str | int, parser: str) -> bytes:
    """The declared section of `stdout`, split at lines equal to `separator` (a trailing CR
    aside: suite.py refuses a separator holding a line break); ParseError when the output has
    fewer sections than the one named. The separator lines are found by one search and the
    section is a slice: no line is copied."""
    separators = re.compile(rb"(?m)^" + re.escape(separator.encode()) + rb"\r?$")
    # Section i runs from starts[i] to ends[i]: from after one separator line's newline to
    # before the next one's (empty when they are adjacent).
    starts, ends = [0], []
    for found in separators.finditer(stdout):
        ends.append(max(found.start() - 1, starts[-1]))
        starts.append(found.end() + 1)
    ends.append(len(stdout))
    if which == "last":
        return stdout[starts[-1]:ends[-1]]
    assert isinstance(which, int)
    if which > len(starts):
        raise ParseError(f"{parser}: answer section {which} is missing: the output has "
                         f"{len(starts)} section(s) split at lines equal to "
                         f"{clipped(separator)}", parser=parser, section=which,
                         sections=len(starts))
    return stdout[starts[which - 1]:ends[which - 1]]


def file_list(stdout: bytes, parser: str) -> tuple[Row, ...]:
    """One repo path per line, in the tool's order; a line that is not a path inside the
    repository is a ParseError (repo_path)."""
    what = f"{parser} file-list"
    return answer_rows((Row(repo_path(line, what), None, None)
                        for _, line in lines(stdout, what) if line), what)


def parse_output(parser: OutputParser, stdout: bytes, stderr: bytes, kind: str,
                 shape: Shape = Shape()) -> Parsed:
    """A cell's output read as `shape` declares: its answer section, then its parser (or the
    file list), and its calls."""
    answer = stdout if shape.sections is None else answer_section(
        stdout, shape.sections, shape.answer_section, parser.name)
    if shape.output == FILE_LIST:
        check_kind(kind)
        banners: tuple[str, ...] = getattr(parser, "banners", ())
        parsed = Parsed(file_list(skip_banners(answer, banners), parser.name),
                        count_calls(stderr))
    elif shape.output != TOOL:  # a parser the task names for the form its command prints
        parsed = get_parser(shape.output).parse(answer, stderr, kind)
    else:
        parsed = parser.parse(answer, stderr, kind)
    return replace(parsed, calls=marked_calls(stderr)) if shape.script else parsed
