"""A task's published figures (`[published.ARM]`) against the cell that ran here: whether the
figures the publication printed (its payload bytes and, when it printed them, its line count,
grade, recall, precision and the size of the graded set) are reproduced, and by how much each
differs; a figure it did not print is shown, not compared.

Lines and bytes are the cold rep's stdout, the one cost is measured on, after the sandbox's
corpus mount `/corpus/` is swapped for the prefix the publication's paths had wherever a path
starts with it: at a line's start (`path:line:text`, a `--heading` line) or within a line
(`Found 2 in /corpus/a.cs`, `{"path": "/corpus/a.cs"}`), anywhere the mount does not continue
a longer word or path (`data/corpus/` and `/corpusx` are not it). The same tool on the same
corpus then prints the same bytes wherever it ran (a line of the corpus's own text quoting
` /corpus/` would be swapped too: the figure names the rule, DEFINITION).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.score import correctness
from orchestrator.score.inputs import RunInputs
from orchestrator.score.numbers import r6
from orchestrator.suite import Published, Task

DEFINITION = ("a task's [published.ARM] figures compared with that cell here: lines and bytes "
              "of the cold rep's stdout after /corpus/ is swapped for the publication's path "
              "prefix wherever a path starts with it (at a line's start or within a line, "
              "not where it continues a longer word or path; lines: newline-ended lines, a "
              "last line without one counted), the cell's grade, and recall and precision "
              "rounded to the digits the publication printed; a figure the publication did "
              "not print (a grade, a line count) is shown, not compared; difference = here - "
              "published")


# The corpus mount where a path starts with it: not after a character that a word or a path
# goes on with (a letter, digit, `_`, `.`, `~`, `@`, `+`, `-`, `/` or a byte of a UTF-8
# sequence), so at a line's start, after a blank, a quote, a bracket, `=` or `:`.
_MOUNT_STARTING_A_PATH = re.compile(rb"(?<![\w.~@+/\x80-\xff-])"
                                    + re.escape(correctness.CORPUS_MOUNT.encode()))


def swapped_figures(stdout: bytes, prefix: str) -> tuple[int, int]:
    """The lines and bytes the output would have with the publication's prefix instead of
    /corpus/ wherever a path starts with it, counted where the mount is found (one search),
    never by building the swapped copy or a list of its lines: lines are newline-ended, a last
    line without one counted."""
    mount, new = correctness.CORPUS_MOUNT.encode(), prefix.encode("utf-8")
    swaps = sum(1 for _ in _MOUNT_STARTING_A_PATH.finditer(stdout))
    size = len(stdout) + swaps * (len(new) - len(mount))
    newlines = stdout.count(b"\n") + swaps * new.count(b"\n")
    last = stdout[-1:]
    if stdout.endswith(mount) and _MOUNT_STARTING_A_PATH.match(stdout,
                                                                len(stdout) - len(mount)):
        last = new[-1:] or stdout[-len(mount) - 1:-len(mount)]  # the last line is the mount
    return newlines + (1 if size and last != b"\n" else 0), size


def _figure(name: str, published: Any, here: Any, reproduced: bool | None,
            difference: Any) -> dict[str, Any]:
    return {"figure": name, "published": published, "here": here, "reproduced": reproduced,
            "difference": difference}


def _count(name: str, published: int | None, here: int | None) -> dict[str, Any]:
    """A count compared; one the publication did not print is shown, not compared
    (reproduced None)."""
    if published is None:
        return _figure(name, None, here, None, None)
    return _figure(name, published, here, here == published,
                   None if here is None else here - published)


def _grade(published: str | None, here: str) -> dict[str, Any]:
    """The cell's grade against the published one; one the publication did not print is
    shown, not compared (reproduced None)."""
    if published is None:
        return _figure("grade", None, here, None, None)
    return _figure("grade", published, here, here == published,
                   None if here == published else f"{here} here, {published} published")


def _fraction(name: str, published: float, digits: int, here: float | None) -> dict[str, Any]:
    """Compared at the digits the publication printed: 0.0513 reproduces a published 0.051."""
    shown = f"{published:.{digits}f}"  # as the publication printed it: 1.000, 0.060
    if here is None:
        return _figure(name, shown, None, False, None)
    return _figure(name, shown, f"{here:.{digits}f}",
                   round(here, digits) == round(published, digits), r6(here - published))


def compare(published: Published, task: Task, cell: Mapping[str, Any],
            stdout: bytes | None) -> dict[str, Any]:
    """One cell's published figures against its figures here (`stdout`: the cold rep's, None
    when the cell has none: not attempted, unscored)."""
    graded = cell["verdict"] in correctness.VERDICTS
    lines, size = (None, None) if stdout is None else swapped_figures(stdout,
                                                                      published.path_prefix)
    grade = cell["grade"] or {}
    figures = [
        _count("lines", published.lines, lines),
        _count("bytes", published.bytes, size),
        _grade(published.grade, cell["verdict"])]
    if published.recall is not None and published.recall_digits is not None:
        figures.append(_fraction("recall", published.recall, published.recall_digits,
                                 grade.get("recall") if graded else None))
    if published.precision is not None and published.precision_digits is not None:
        figures.append(_fraction("precision", published.precision, published.precision_digits,
                                 grade.get("precision") if graded else None))
    if published.graded is not None:
        figures.append(_count("graded", published.graded,
                              len(correctness.graded_set(task))
                              if task.kind in correctness.FILE_KINDS else None))
    notes = []
    if cell["verdict"] not in correctness.VERDICTS:
        notes.append(f"the cell is {cell['verdict']} here: nothing to compare but the grade"
                     if published.grade is not None else f"the cell is {cell['verdict']} "
                     "here and the publication printed no grade: nothing to compare")
    if "stdout-truncated" in cell["flags"]:
        notes.append("the cold rep's stdout was truncated here: lines and bytes are of the "
                     "bytes kept")
    return {"arm": cell["arm"], "task": cell["task"], "source": published.source,
            "path_prefix": published.path_prefix, "figures": figures,
            "reproduced": all(f["reproduced"] is not False for f in figures),
            "notes": notes}


def published_figures(inputs: RunInputs, cells: Sequence[Mapping[str, Any]]
                      ) -> list[dict[str, Any]]:
    """Every published cell of the suite, in task then suite arm order."""
    by_key = {(c["arm"], c["task"]): c for c in cells}
    out = []
    for task in inputs.suite.tasks:
        for arm in inputs.suite.arms:
            if (published := task.published.get(arm)) is None:
                continue
            cell = by_key[(arm, task.id)]
            reps = inputs.reps.get((arm, task.id))
            stdout = (inputs.stdout(reps[0]) if reps and cell["verdict"]
                      in correctness.VERDICTS else None)
            out.append(compare(published, task, cell, stdout))
    return out


def deviations(inputs: RunInputs) -> list[str]:
    """Where the publication's figures came from against where this run's did, per arm and
    source: a tool version or platform other than here is a deviation the disclosure names."""
    here = {arm.name: "" if arm.record is None else arm.record.tool_version
            for arm in inputs.arms}
    platform = f"{inputs.run.host.os}/{inputs.run.host.arch}"
    seen: dict[tuple[str, str, str | None, str | None], int] = {}
    for task in inputs.suite.tasks:
        for arm, published in sorted(task.published.items()):
            key = (arm, published.source, published.tool_version, published.platform)
            seen[key] = seen.get(key, 0) + 1
    lines = []
    for (arm, source, version, where), count in seen.items():
        lines.append(f"{count} task(s) carry {arm}'s published figures ({source}): published "
                     f"with {version or 'a tool version it did not state'} on "
                     f"{where or 'a platform it did not state'}; here {arm} is "
                     f"{here.get(arm) or 'not run'} on {platform}; lines and bytes are "
                     "compared after the path prefix swap")
    return lines
