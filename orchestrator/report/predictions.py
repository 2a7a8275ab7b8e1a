"""The results documents' Predictions section: each prediction the suite sealed, beside what
the run found and whether it held, from scores.json's `predictions` (absent: no section)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.predictions.evaluate import STATUSES
from orchestrator.report.tables import NA, Table

TITLE = "Predictions"
COLUMNS = ["prediction", "arm", "over", "figure", "predicted", "found", "status", "why not met",
           "registered as"]


def present(scores: Mapping[str, Any]) -> bool:
    return "predictions" in scores


def intro(scores: Mapping[str, Any]) -> str:
    tally = scores["predictions"]["tally"]
    counts = ", ".join(f"{tally[status]} {status}" for status in STATUSES)
    return (f"The predictions the suite sealed in {scores['predictions']['file']} before the "
            f"run, each beside what this run found ({counts}). A prediction is missing when "
            "its arm has no scored cell over its kind or task, and needs a baseline run when "
            "it is a direction against another run. The command sandbench check RUN_DIR "
            "--assert exits 1 unless every one is met.")


def table(scores: Mapping[str, Any]) -> Table:
    rows = [[o["id"], o["arm"], f"{o['scope']} {o['target']}", o["figure"], o["predicted"],
             NA if o["found"] is None else f"{o['found']:g}", o["status"], o["why"] or "",
             o["source"]] for o in scores["predictions"]["outcomes"]]
    return list(COLUMNS), rows
