"""The verdict the document opens with: per task kind, the best arm, over how many tasks, by how
much, and where the tool under test stands. Every comparison between two arms is made over the
tasks both were graded on, and says how many: an arm that attempts 6 of 21 tasks is never set
beside one graded on all 21 by its share alone. Built from scores.json's cells in one pass."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.report.tables import NA, Table, arms, bands, one

GRADED = ("correct", "partial", "wrong")
RULE = ("Per task kind, the best arm is the one with the most tasks correct among the arms "
        "graded on every task of the kind (ties name every tied arm); each other arm is set "
        "beside it over the tasks both were graded on, and the count of those tasks is shown. "
        "Warm time is the median over those same tasks of each arm's warm median.")


@dataclass(frozen=True)
class KindVerdict:
    kind: str
    tasks: int
    best: list[str]
    # arm -> task -> its graded cell, for the arms graded on at least one task of the kind
    graded: dict[str, dict[str, Mapping[str, Any]]]


def _tasks(n: int) -> str:
    return f"{n} task" if n == 1 else f"{n} tasks"


def _correct(cells: Mapping[str, Mapping[str, Any]], tasks: set[str]) -> int:
    return sum(1 for t in tasks if cells[t]["verdict"] == "correct")


def _warm(cells: Mapping[str, Mapping[str, Any]], tasks: set[str]) -> float | None:
    found = [cells[t]["timing"]["warm_ms"] for t in sorted(tasks)
             if cells[t]["timing"] and cells[t]["timing"]["warm_ms"] is not None]
    return statistics.median(found) if found else None


def verdicts(scores: Mapping[str, Any]) -> list[KindVerdict]:
    """One verdict per kind in the methodology's order, then `all` (every kind)."""
    names = arms(scores)
    tasks_of: dict[str, set[str]] = {}
    graded: dict[str, dict[str, dict[str, Mapping[str, Any]]]] = {}
    for task, info in scores["tasks"].items():
        for band in (info["kind"], "all"):
            tasks_of.setdefault(band, set()).add(task)
    for cell in scores["cells"]:
        if cell["verdict"] in GRADED:
            for band in (cell["kind"], "all"):
                graded.setdefault(band, {}).setdefault(cell["arm"], {})[cell["task"]] = cell
    out = []
    for band in bands(scores):
        per_arm = {a: graded.get(band, {})[a] for a in names if a in graded.get(band, {})}
        every = [a for a in per_arm if len(per_arm[a]) == len(tasks_of.get(band, ()))]
        counts = {a: _correct(per_arm[a], set(per_arm[a])) for a in every}
        top = max(counts.values(), default=None)
        best = [a for a in every if counts[a] == top]
        out.append(KindVerdict(band, len(tasks_of.get(band, ())), best, per_arm))
    return out


def _tool_line(scores: Mapping[str, Any], v: KindVerdict) -> str:
    tool = scores["suite"].get("tool_under_test")
    if tool is None:
        return "the suite names no tool under test"
    if tool not in v.graded:
        status = scores["arms"].get(tool, {}).get("status", "not in the suite")
        why = "not attempted" if status == "available" else f"not measured ({status})"
        return f"{tool} (tool under test): {why}, so no verdict"
    own = v.graded[tool]
    if not v.best:
        return f"{tool} (tool under test): correct on {_correct(own, set(own))} of {len(own)}"
    if tool in v.best:
        return f"{tool} (tool under test) is best"
    lead = v.best[0]
    shared = set(own) & set(v.graded[lead])
    return (f"{tool} (tool under test): correct on {_correct(own, shared)} of the "
            f"{_tasks(len(shared))} it shares with {lead}, which has "
            f"{_correct(v.graded[lead], shared)}")


def headline(scores: Mapping[str, Any], v: KindVerdict) -> str:
    """One sentence per kind: the best arm with its count, the runner-up's margin over the
    same tasks, and the tool under test."""
    if not v.best:
        return (f"{v.kind} ({_tasks(v.tasks)}): no arm was graded on every task, so none is "
                f"named best; {_tool_line(scores, v)}.")
    lead = v.best[0]
    own = v.graded[lead]
    who = (f"{', '.join(v.best[:-1])} and {v.best[-1]} tie" if len(v.best) > 1
           else f"{lead} is best")
    parts = [f"{v.kind} ({_tasks(v.tasks)}): {who}, correct on {_correct(own, set(own))} of "
             f"{v.tasks}"]
    rivals = [(a, set(v.graded[a]) & set(own)) for a in v.graded if a not in v.best]
    if rivals:
        # the runner-up: the most tasks in common, then the fewest correct behind
        arm, shared = max(rivals, key=lambda r: (len(r[1]), _correct(v.graded[r[0]], r[1])
                                                 - _correct(own, r[1])))
        ahead = _correct(own, shared) - _correct(v.graded[arm], shared)
        margin = f"{ahead} fewer correct" if ahead else "as many correct"
        parts.append(f"next {arm}, {margin} over the {_tasks(len(shared))} both were graded on")
    parts.append(_tool_line(scores, v))
    return "; ".join(parts) + "."


def comparisons(v: KindVerdict) -> list[list[str]]:
    """Every other arm graded on the kind beside the (first) best arm, over shared tasks."""
    if not v.best:
        return []
    lead = v.best[0]
    own = v.graded[lead]
    rows = []
    for arm, cells in v.graded.items():
        if arm == lead:
            continue
        shared = set(cells) & set(own)
        mine, theirs = _correct(cells, shared), _correct(own, shared)
        rows.append([v.kind, arm, lead, str(len(shared)), f"{mine} vs {theirs}",
                     f"{mine - theirs:+d}", _ms(_warm(cells, shared)),
                     _ms(_warm(own, shared))])
    return rows


def _ms(value: float | None) -> str:
    return NA if value is None else one(value)


def table(scores: Mapping[str, Any]) -> Table:
    columns = ["kind", "arm", "best arm", "tasks both graded", "correct: arm vs best",
               "difference", "warm ms: arm", "warm ms: best"]
    return columns, [row for v in verdicts(scores) for row in comparisons(v)]


def headlines(scores: Mapping[str, Any]) -> list[str]:
    return [headline(scores, v) for v in verdicts(scores)]
