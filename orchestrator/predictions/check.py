"""A scored run's predictions checked again: the declared predictions scores.json carries
(the scorer copied them from the suite's sealed predictions.toml) evaluated against the same
file's cells, so what `sandbench check` reports is what the run's scores say, whatever the
suite directory holds now."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.predictions import evaluate
from orchestrator.predictions.model import SuiteFacts, parse_predictions
from orchestrator.report.scores import load_scores
from orchestrator.score import SCORES_NAME


@dataclass(frozen=True)
class Check:
    """Every prediction's outcome, how many have each status, and whether all were met."""

    run_id: str
    outcomes: list[dict[str, Any]]
    tally: dict[str, int]

    @property
    def held(self) -> bool:
        return not any(o["status"] in evaluate.FAILING for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "held": self.held, "tally": self.tally,
                "outcomes": self.outcomes}


def check_run(run_dir: Path) -> Check:
    """RUN_DIR/scores.json's predictions, each evaluated; InputError when the scores carry
    none (the suite declares none, or the run was scored before it did)."""
    path = Path(run_dir) / SCORES_NAME
    scores = load_scores(path)
    section = scores.get("predictions")
    if section is None:
        name = scores["suite"]["name"]
        raise InputError(f"{path}: carries no predictions: suite {name!r} sealed no "
                         "predictions.toml for this run",
                         fix=f"declare them in suites/{name}/predictions.toml, seal the suite, "
                             "then run and score it", file=str(path), key="predictions")
    suite = scores["suite"]
    facts = SuiteFacts(arms=suite["arms"], baseline=suite["baseline"],
                       kinds={t["kind"] for t in scores["tasks"].values()},
                       tasks=set(scores["tasks"]))
    try:
        declared = parse_predictions(path, {"version": 1, "prediction": section["declared"]},
                                     facts)
    except InputError as err:  # named where it stands in scores.json, not in the TOML file
        key = "predictions.declared" + str(err.data["key"]).removeprefix("prediction")
        raise InputError.bad_value(path, key, err.data["expected"], err.data["found"],
                                   fix="score the run again: sandbench score RUN_DIR "
                                       "--update") from None
    outcomes = evaluate.evaluate(scores, declared)
    return Check(scores["run"]["run_id"], outcomes, evaluate.tally(outcomes))
