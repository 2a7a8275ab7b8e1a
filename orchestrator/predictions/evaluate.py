"""Each prediction against a run's scored cells: `met`, `violated`, `missing` (its arm has no
scored cell over its kind or task, or the figure is undefined there) or `needs-baseline` (a
direction against a named baseline run, which one run's scores cannot decide). The figures
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


def evaluate_one(scores: Mapping[str, Any], p: Prediction) -> dict[str, Any]:
    """One prediction's outcome: its status, the figure found, the cells it stands on and,
    unless met, why not."""
    cells = _cells(scores, p.arm, p)
    summary = bands.band_summary(cells)
    out: dict[str, Any] = {"id": p.id, "arm": p.arm, "scope": p.scope, "target": p.target,
                           "figure": p.figure, "predicted": p.predicted, "found": None,
                           "cells": len(cells), "graded": summary["graded"],
                           "status": "missing", "why": None, "source": p.source}
    where = f"{p.arm} over {p.scope} {p.target}"
    if not cells:
        out["why"] = f"the run has no cell of {where}"
    elif summary["graded"] == 0 and p.grade not in UNGRADED_COUNTS:
        out["why"] = f"no cell of {where} was scored ({len(cells)} not graded)"
    elif (found := _figure(scores, p, cells, summary)) is None:
        out["why"] = f"{p.figure} is undefined over {where}"
    else:
        out["found"] = found
        if p.direction is not None:
            out.update(_direction(p))
        else:
            met = _within(p, found)
            out["status"] = "met" if met else "violated"
            out["why"] = None if met else f"found {found:g}, predicted {p.predicted}"
    return out


def _direction(p: Prediction) -> dict[str, Any]:
    """A direction against a named baseline run needs that run's figure; one run's scores do
    not have it, so it is reported as not checked, never as met. The comparison of two runs
    (`sandbench compare`) is where it is decided."""
    return {"status": "needs-baseline",
            "why": f"needs the scores of baseline run {p.against_run}: one run cannot show "
                   f"a direction"}


def evaluate(scores: Mapping[str, Any], predictions: Sequence[Prediction]
             ) -> list[dict[str, Any]]:
    """Every prediction's outcome, in the file's order; none is skipped."""
    return [evaluate_one(scores, p) for p in predictions]


def tally(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many predictions have each status (every status listed, zero included)."""
    return {s: sum(o["status"] == s for o in outcomes) for s in STATUSES}
