"""Per band (task kind, and `all`): the grades, costs, times, reach and calls of an arm's
cells, the failure counts per arm, and the baseline's cost over each arm's, paired per task."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from orchestrator.kinds import ALL_KINDS, EDGE_KINDS
from orchestrator.score import correctness, cost, reach, timing
from orchestrator.score.cell import FAILURE_KINDS, UNSCORED_KINDS
from orchestrator.score.numbers import median, r6

ALL = "all"
BANDS = (*ALL_KINDS, ALL)
COUNTS = ("correct", "partial", "wrong", "not_attempted", "unscored")


def _median_of(values: Sequence[float | None]) -> float | None:
    known = [Fraction(repr(v)) for v in values if v is not None]
    return r6(median(known))


def band_summary(cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    counts = {k: sum(c["verdict"] == k for c in cells) for k in COUNTS}
    graded = [c for c in cells if c["verdict"] in correctness.VERDICTS]
    failures: dict[str, int] = {}
    for c in graded:
        if c["failure"]:
            failures[c["failure"]] = failures.get(c["failure"], 0) + 1
    reached = [c["reach"]["status"] for c in graded if c["reach"] is not None]
    problems: dict[str, int] = {}
    for c in graded:
        for problem, n in (c["reach"] or {}).get("problems", {}).items():
            problems[problem] = problems.get(problem, 0) + n
    decided = sum(s in ("reaches", "fails") for s in reached)
    calls = [c["calls"] for c in graded if c["calls"] is not None]
    return {
        "counts": counts, "graded": len(graded), "failures": dict(sorted(failures.items())),
        "correct_share": r6(Fraction(counts["correct"], len(graded))) if graded else None,
        "recall_median": _median_of([c["grade"]["recall"] for c in graded]),
        "precision_median": _median_of([c["grade"]["precision"] for c in graded]),
        "cost": cost.band_cost([c["cost"] for c in graded]),
        "timing": timing.band_timing([c["timing"] for c in graded]),
        "reach": {**{s: reached.count(s) for s in reach.STATUSES},
                  "share": r6(Fraction(reached.count("reaches"), decided)) if decided else None,
                  "row_problems": dict(sorted(problems.items()))},
        "calls": {"median": r6(median(calls)), "total": sum(calls), "n": len(calls)},
    }


def in_band(cells: Sequence[dict[str, Any]], band: str) -> list[dict[str, Any]]:
    return [c for c in cells if band == ALL or c["kind"] == band]


def graded_costs(cells: Sequence[dict[str, Any]]) -> dict[str, int]:
    return {c["task"]: c["cost"]["stdout_bytes"] for c in cells
            if c["verdict"] in correctness.VERDICTS}


def warm_seconds(cells: Sequence[dict[str, Any]]) -> dict[str, Fraction]:
    out = {}
    for c in cells:
        if c["verdict"] in correctness.VERDICTS and c["timing"]["warm_ms"] is not None:
            out[c["task"]] = Fraction(repr(c["timing"]["warm_ms"])) / 1000
    return out


def failure_counts(cells: Sequence[dict[str, Any]], arm_names: Sequence[str]
                   ) -> dict[str, dict[str, int]]:
    """Per arm, how many cells failed by each kind (wrong) or were unscored by each kind
    (never the tool's wrong answer); every kind is listed, zero included."""
    counts = {}
    for arm in arm_names:
        mine = [c for c in cells if c["arm"] == arm]
        row = {k: sum(1 for c in mine if c["failure"] == k) for k in FAILURE_KINDS}
        row.update({k: sum(1 for c in mine if (c["unscored"] or {}).get("kind") == k)
                    for k in UNSCORED_KINDS})
        counts[arm] = row
    return counts


def bands_of(cells: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The bands a run has: the methodology's four kinds always (every table shows them),
    an edge kind only when the suite has such tasks, and all."""
    present = {c["kind"] for c in cells}
    return tuple(b for b in BANDS if b not in EDGE_KINDS or b in present)


def summaries(cells: Sequence[dict[str, Any]], arm_names: Sequence[str]
               ) -> dict[str, dict[str, Any]]:
    """Per arm and band: the grades, costs and times of its cells."""
    return {arm: {band: band_summary(in_band([c for c in cells if c["arm"] == arm], band))
                  for band in bands_of(cells)} for arm in arm_names}


def cost_ratios(cells: Sequence[dict[str, Any]], baseline: str, available: Sequence[str]
                 ) -> dict[str, dict[str, Any]]:
    """The baseline's cost over each arm's, paired per task, per band; none when the baseline
    was not measured (the report says why, from the baseline arm's status)."""
    if baseline not in available:
        return {}

    def costs(arm: str, band: str) -> dict[str, int]:
        return graded_costs(in_band([c for c in cells if c["arm"] == arm], band))

    return {arm: {band: cost.paired_ratio(costs(baseline, band), costs(arm, band))
                  for band in bands_of(cells)}
            for arm in available if arm != baseline}


def unstable_shares(cells: Sequence[dict[str, Any]], arm_names: Sequence[str]
                    ) -> dict[str, dict[str, Any]]:
    """Per arm, how many of its graded cells are unstable (their reps' grades differ), and
    which: a grade that flips between reps is a grade a rerun may not reproduce."""
    out = {}
    for arm in arm_names:
        graded = [c for c in cells if c["arm"] == arm and c["verdict"] in correctness.VERDICTS]
        unstable = [c["task"] for c in graded if c["unstable"]]
        not_graded = sum(r["not_graded"] is not None for c in graded for r in c["reps"])
        out[arm] = {"graded": len(graded), "unstable": len(unstable),
                    "reps_not_graded": not_graded,
                    "share": r6(Fraction(len(unstable), len(graded))) if graded else None,
                    "tasks": unstable}
    return out
