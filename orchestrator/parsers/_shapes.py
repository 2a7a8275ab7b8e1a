"""The output shapes a task's own command may declare ([commands.ARM] of a task file, see
orchestrator/suite.py): what the scorer parses of a cell's stdout, and how its calls count.

- **Sections.** A multi-call command that prints each call's output, separated by a line equal
  to a declared separator, has its answer in one section ("last" or a 1-based number); only
  that section is parsed (the payload stays the whole stdout). A section the output lacks is a
  ParseError naming it.
- **File list.** One repo path per line (``rg -l``): each through `repo_path`, as a row with
  no line; blank lines are skipped; the arm's parser's banners are skipped first.
- **Calls.** A script counts its ``sandbench-call:`` lines (those its `call`s printed), zero
  included; any other command counts as its parser does.

Every step is one pass over the bytes (split at newlines, compare whole lines), so the time is
linear in the output and nothing is kept beyond its lines.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from orchestrator.parsers import (ParseError, Parsed, Row, check_kind, clipped, count_calls,
                                  decode, marked_calls, repo_path, skip_banners)

if TYPE_CHECKING:
    from orchestrator.parsers import OutputParser

FILE_LIST = "file-list"
TOOL = "tool"


@dataclass(frozen=True)
class Shape:
    """How a cell's output is read: the default (an arm's own template) is its parser's."""

    output: str = TOOL                # TOOL (the arm's parser) | FILE_LIST
    sections: str | None = None       # the separator line, when the output has sections
    answer_section: str | int = "last"
    script: bool = False              # a task's script: calls are its marked calls exactly


def answer_section(stdout: bytes, separator: str, which: str | int, parser: str) -> bytes:
    """The declared section of `stdout`, split at lines equal to `separator` (a trailing CR
    aside); ParseError when the output has fewer sections than the one named."""
    mark = separator.encode()
    sections: list[list[bytes]] = [[]]
    for line in stdout.split(b"\n"):
        if line.removesuffix(b"\r") == mark:
            sections.append([])
        else:
            sections[-1].append(line)
    if which == "last":
        return b"\n".join(sections[-1])
    assert isinstance(which, int)
    if which > len(sections):
        raise ParseError(f"{parser}: answer section {which} is missing: the output has "
                         f"{len(sections)} section(s) split at lines equal to "
                         f"{clipped(separator)}", parser=parser, section=which,
                         sections=len(sections))
    return b"\n".join(sections[which - 1])


def file_list(stdout: bytes, parser: str) -> tuple[Row, ...]:
    """One repo path per line, in the tool's order; a line that is not a path inside the
    repository is a ParseError (repo_path)."""
    rows = []
    for raw in decode(stdout).split("\n"):
        if line := raw.removesuffix("\r"):
            rows.append(Row(repo_path(line, f"{parser} file-list"), None, None))
    return tuple(rows)


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
    else:
        parsed = parser.parse(answer, stderr, kind)
    return replace(parsed, calls=marked_calls(stderr)) if shape.script else parsed
