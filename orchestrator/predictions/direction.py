"""A direction against a named baseline run, decided with that run's scores: the prediction's
own figure in the run checked (B) beside the same figure in the baseline run (A), each as that
run's results document shows it. Kept apart from `evaluate`, which the scorer imports (and
seals): one run's scores leave a direction `needs-baseline`; this decides it afterwards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.predictions import evaluate
from orchestrator.predictions.model import Prediction

# What each direction of predictions.toml asks of B's figure against A's: strict for higher
# and lower, equal for unchanged.
MOVES = {"higher": lambda b, a: b > a, "lower": lambda b, a: b < a,
         "unchanged": lambda b, a: b == a}


def decide(outcome: dict[str, Any], p: Prediction, baseline: Mapping[str, Any]
           ) -> dict[str, Any]:
    """`outcome` (evaluate_one's, for the run checked) with its direction decided against
    `baseline`, the scores of the run it names: met or violated, with the baseline's figure
    as `baseline`; missing when the baseline run has no such figure. Anything else (a bound,
    or a direction whose figure the run checked lacks) is returned as it is."""
    if outcome["status"] != "needs-baseline":
        return outcome
    before = evaluate.evaluate_one(baseline, p)
    if before["found"] is None:
        return {**outcome, "baseline": None, "status": "missing",
                "why": f"in baseline run {p.against_run}: {before['why']}"}
    found, prior = outcome["found"], before["found"]
    held = MOVES[str(p.direction)](found, prior)
    return {**outcome, "baseline": prior, "status": "met" if held else "violated",
            "why": None if held else f"found {found:g} against {prior:g} in run "
                                     f"{p.against_run}, predicted {p.direction}"}


def evaluate_against(scores: Mapping[str, Any], predictions: Sequence[Prediction],
                     baseline: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every prediction's outcome in the run `scores`, each direction decided against
    `baseline`; in the file's order, none skipped."""
    return [decide(evaluate.evaluate_one(scores, p), p, baseline) for p in predictions]
