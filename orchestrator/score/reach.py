"""Follow-up reach: can an agent act on every row of an answer without searching again?

A row reaches when it carries all three of a repo-relative path, a 1-based line that exists on
that path at the pin, and a reason token. One failing row fails the task; an output with no
rows is `empty` (nothing to follow up), counted on its own.

Whether a line exists needs the files at the pin, and the scorer never reads the bench's
corpus store: it uses the line index of `orchestrator/line_index.py`, `RUN_DIR/pin-lines.json`
(the run reads it from the pristine copy). Without it, rows that are otherwise well formed are
`unverifiable`, never counted as reaching.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from orchestrator.line_index import LineIndex
from orchestrator.score.correctness import RowLike

SHOWN_FAILURES = 3
STATUSES = ("reaches", "fails", "unverifiable", "empty")


# -- rows and tasks -----------------------------------------------------------------------

def row_problems(row: RowLike, index: LineIndex) -> tuple[list[str], bool]:
    """What keeps one row from reaching, and whether the line's existence went unchecked."""
    problems: list[str] = []
    path = row.path or ""
    rel = path.removeprefix("./")
    checkable = False
    if not path:
        problems.append("no path")
    elif (path.startswith("/") or "\\" in path or (len(path) > 1 and path[1] == ":")
          or posixpath.normpath(rel) != rel or rel.split("/")[0] == ".."):
        problems.append("not repo-relative")
    elif index.files is not None and rel not in index.files:
        problems.append("path not at the pin")
    else:
        checkable = True
    if row.line is None:
        problems.append("no line")
    elif row.line < 1:
        problems.append("line not 1-based")
    elif checkable and index.files is not None and row.line > index.files[rel]:
        problems.append(f"line past the end ({index.files[rel]} lines)")
    if not (row.reason or "").strip():
        problems.append("no reason")
    unverified = not problems and index.files is None
    return problems, unverified


def task_reach(rows: Sequence[RowLike], index: LineIndex) -> dict[str, Any]:
    """One answer's reach; only the first SHOWN_FAILURES failing rows are kept, the rest
    counted."""
    failing: list[dict[str, Any]] = []
    failing_rows = 0
    counts: dict[str, int] = {}
    unverified = 0
    for number, row in enumerate(rows, start=1):
        problems, unchecked = row_problems(row, index)
        if problems:
            failing_rows += 1
            if len(failing) < SHOWN_FAILURES:
                failing.append({"row": number, "path": row.path, "line": row.line,
                                "problems": problems})
            for problem in problems:
                key = problem.split(" (")[0]
                counts[key] = counts.get(key, 0) + 1
        unverified += unchecked
    if not rows:
        status = "empty"
    elif failing_rows:
        status = "fails"
    elif unverified:
        status = "unverifiable"
    else:
        status = "reaches"
    return {"status": status, "rows": len(rows), "failing_rows": failing_rows,
            "unverifiable_rows": unverified, "problems": dict(sorted(counts.items())),
            "first_failures": failing}


DEFINITION = ("a row reaches when it has a repo-relative path tracked at the pin, a 1-based "
              "line that exists on that path at the pin, and a non-empty reason; a task "
              "reaches when every row does, fails when one row does not, is empty with no "
              "rows, and is unverifiable when no line index of the pin is available; share = "
              "reaches / (reaches + fails)")
