"""Each prediction against a run's scored cells: `met`, `violated`, `missing` (its arm has no
scored cell over its kind or task, or the figure is undefined there) or `needs-baseline` (a
direction against a named baseline run whose scores were not supplied). The figures
are the results document's own (orchestrator/score/bands.py over the same cells), so a
prediction is checked on the number the reader sees."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from orchestrator.predictions.model import Prediction
from orchestrator.score import bands, cost
from orchestrator.score.numbers import r6

STATUSES = ("met", "violated", "missing", "needs-baseline")
# The statuses that are not a held prediction: `sandbench check --assert` exits 1 on any.
FAILING = ("violated", "missing", "needs-baseline")
# A count of these grades is decided by cells that have no grade; every other figure needs
# at least one graded cell.
UNGRADED_COUNTS = ("not_attempted", "unscored")


def _cells(scores: Mapping[str, Any], arm: str, p: Prediction) -> list[dict[str, Any]]:
    mine = [c for c in scores["cells"] if c["arm"] == arm]
    if p.scope == "task":
        return [c for c in mine if c["task"] == p.target]
    return bands.in_band(mine, p.target)


def _figure(scores: Mapping[str, Any], p: Prediction, cells: Sequence[dict[str, Any]],
            summary: Mapping[str, Any]) -> float | int | None:
    """The figure the prediction bounds, as the document computes it; None if undefined."""
    if p.metric == "count":
        assert p.grade is not None  # checked on load
        found: int = summary["counts"][p.grade]
        return found
    if p.metric == "share":
        assert p.grade is not None
        return r6(Fraction(summary["counts"][p.grade], summary["graded"]))
    if p.metric in ("recall", "precision"):
        value: float | None = summary[f"{p.metric}_median"]
        return value
    if p.metric in ("cold_ms", "warm_ms"):
        timed: float | None = summary["timing"][p.metric]
        return timed
    assert p.metric == "cost_ratio"
    baseline = _cells(scores, scores["suite"]["baseline"], p)
    ratio: float | None = cost.paired_ratio(bands.graded_costs(baseline),
                                            bands.graded_costs(cells))["median_of_ratios"]
    return ratio


def _within(p: Prediction, found: float) -> bool:
    return ((p.at_least is None or found >= p.at_least)
            and (p.at_most is None or found <= p.at_most))


def measure(scores: Mapping[str, Any], p: Prediction
            ) -> tuple[list[dict[str, Any]], dict[str, Any], float | int | None, str | None]:
    """The prediction's figure over one run's scores: the cells it stands on, their summary,
    the figure (None if it cannot be found) and, if not found, why not."""
    cells = _cells(scores, p.arm, p)
    summary = bands.band_summary(cells)
    where = f"{p.arm} over {p.scope} {p.target}"
    if not cells:
        return cells, summary, None, f"the run has no cell of {where}"
    if summary["graded"] == 0 and p.grade not in UNGRADED_COUNTS:
        return cells, summary, None, f"no cell of {where} was scored ({len(cells)} not graded)"
    found = _figure(scores, p, cells, summary)
    return cells, summary, found, None if found is not None else (
        f"{p.figure} is undefined over {where}")


def evaluate_one(scores: Mapping[str, Any], p: Prediction,
                 baseline: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One prediction's outcome: its status, the figure found, the cells it stands on and,
    unless met, why not. A direction is decided against `baseline`, the scores of the run it
    names (None: not supplied, so it needs one); its outcome then carries the baseline's
    figure as `baseline` (the scorer never supplies one: scores.json keeps its keys)."""
    cells, summary, found, why = measure(scores, p)
    out: dict[str, Any] = {"id": p.id, "arm": p.arm, "scope": p.scope, "target": p.target,
                           "figure": p.figure, "predicted": p.predicted, "found": found,
                           "cells": len(cells), "graded": summary["graded"],
                           "status": "missing", "why": why, "source": p.source}
    if found is None:
        return out
    if p.direction is not None:
        out.update(_direction(p, found, baseline))
    else:
        met = _within(p, found)
        out["status"] = "met" if met else "violated"
        out["why"] = None if met else f"found {found:g}, predicted {p.predicted}"
    return out


# What each direction asks of the figure in the run checked (B) against the baseline's (A).
MOVES = {"higher": lambda b, a: b > a, "lower": lambda b, a: b < a,
         "unchanged": lambda b, a: b == a}


def _direction(p: Prediction, found: float, baseline: Mapping[str, Any] | None
               ) -> dict[str, Any]:
    """A direction is the prediction's own figure in this run beside the same figure in the
    baseline run, each as that run's results document shows it. Without the baseline's
    scores it is reported as not checked, never as met; when the baseline has no such figure
    it is missing."""
    if baseline is None:
        return {"status": "needs-baseline",
                "why": f"needs the scores of baseline run {p.against_run}: one run cannot "
                       f"show a direction (sandbench check RUN --assert --baseline RUN_0, or "
                       f"sandbench compare RUN_0 RUN --assert)"}
    _, _, before, why = measure(baseline, p)
    if before is None:
        return {"baseline": None, "status": "missing",
                "why": f"in baseline run {p.against_run}: {why}"}
    held = MOVES[str(p.direction)](found, before)
    return {"baseline": before, "status": "met" if held else "violated",
            "why": None if held else f"found {found:g} against {before:g} in run "
                                     f"{p.against_run}, predicted {p.direction}"}


def evaluate(scores: Mapping[str, Any], predictions: Sequence[Prediction],
             baseline: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every prediction's outcome, in the file's order; none is skipped. `baseline`: the
    scores of the run the directions are against, if supplied."""
    return [evaluate_one(scores, p, baseline) for p in predictions]


def tally(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many predictions have each status (every status listed, zero included)."""
    return {s: sum(o["status"] == s for o in outcomes) for s in STATUSES}
