"""One task's part of the document as data, for the Markdown and HTML renderers alike: its
input and truth line, its table, the commands its cells ran and the notes on each cell. Every
task's cells are found in one pass (`cells_by_task`), so rendering stays linear in cells."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.report.grading import rep_grade
from orchestrator.report.tables import NA, Table, integer, one, share, shown
from orchestrator.score.listed import full_length


def cells_by_task(scores: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every task's cells in scores.json's order, found in one pass over the cells: a
    renderer that looked them up per task would scan every cell for every task."""
    found: dict[str, list[dict[str, Any]]] = {task: [] for task in scores["tasks"]}
    for cell in scores["cells"]:
        if cell["task"] in found:
            found[cell["task"]].append(cell)
    return found


def task_summary(scores: Mapping[str, Any], task_id: str, cells: Sequence[Mapping[str, Any]]
                 ) -> tuple[str, list[str]]:
    """One task's "Input: ... Truth: ..." line and the exact command each of its `cells`
    ran (REP 0): shared by the Markdown and the HTML document."""
    task = scores["tasks"][task_id]
    inputs = "; ".join(f"{k}: \"{' '.join(v.split())}\"" for k, v in task["input"].items())
    truth = "; ".join(f"{k}: {_truth_value(v)}" for k, v in task["truth"].items())
    commands = [f"{c['arm']}: {shlex.join(c['argv'])}" for c in cells if c["argv"]]
    return f"Input: {inputs}. Truth: {truth}.", commands


def _truth_value(value: object) -> str:
    """A truth entry as words: a list joined, and `none` for an empty one or no value."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return str(value) if value else "none"


def task_cells(cells: Sequence[Mapping[str, Any]]) -> Table:
    """One task's table, from its cells (`cells_by_task`)."""
    columns = ["arm", "verdict", "recall", "precision", "files", "tokens", "cold ms", "warm ms",
               "calls", "reach"]
    rows = []
    for cell in cells:
        verdict = cell["verdict"].replace("_", " ")
        if cell["failure"]:
            verdict += f" ({cell['failure']})"
        if cell["unscored"]:
            verdict += f" ({cell['unscored']['kind']})"
        grade, c, t = cell["grade"], cell["cost"], cell["timing"]
        rows.append([cell["arm"], verdict,
                     share(grade["recall"]) if grade else NA,
                     share(grade["precision"]) if grade else NA,
                     str(grade["files_named"]) if grade else NA,
                     integer(c["tokens"]) if c else NA,
                     one(t["cold_ms"]) if t else NA, one(t["warm_ms"]) if t else NA,
                     str(cell["calls"]) if cell["calls"] is not None else NA,
                     cell["reach"]["status"] if cell["reach"] else NA])
    return columns, rows


def task_notes(cell: Mapping[str, Any]) -> list[str]:
    """What a cell's table row cannot hold, one line each: the grader's notes, a parse error,
    flags, every rep's grade of an unstable cell, the files missed and those outside the
    truth, and the first row that does not reach."""
    grade = cell["grade"] or {}
    notes = [str(n) for n in grade.get("notes", [])]
    if cell["parse_error"]:
        notes.append(f"parse error: {cell['parse_error']}")
    if cell["flags"]:
        notes.append("flags: " + ", ".join(cell["flags"]))
    if cell.get("unstable"):
        notes.append("unstable: " + "; ".join(rep_grade(r) for r in cell["reps"]))
    if grade.get("missed"):
        notes.append("missed: " + ", ".join(grade["missed"]))
    if grade.get("outside"):
        notes.append("outside the truth: " + ", ".join(
            shown(grade["outside"], 10, full_length(grade, "outside"))))
    for failure in (cell["reach"] or {}).get("first_failures", [])[:1]:
        notes.append(f"first row that does not reach: #{failure['row']} "
                     f"{failure['path']}:{failure['line']} ({', '.join(failure['problems'])})")
    return notes
