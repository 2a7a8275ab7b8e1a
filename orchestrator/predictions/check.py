"""A scored run's predictions checked again: the declared predictions scores.json carries
(the scorer copied them from the suite's sealed predictions.toml) evaluated against the same
file's cells, so what `sandbench check` reports is what the run's scores say, whatever the
suite directory holds now. With a baseline run (`check_against`), the two runs are first
compared (orchestrator/compare: the same sealed suite, or suites declared comparable) and each
direction is decided against the baseline's scores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import compare
from orchestrator.errors import InputError
from orchestrator.predictions import direction, evaluate
from orchestrator.predictions.model import Prediction, SuiteFacts, parse_predictions
from orchestrator.report.scores import load_scores
from orchestrator.score import SCORES_NAME


@dataclass(frozen=True)
class Check:
    """Every prediction's outcome, how many have each status, and whether all were met."""

    run_id: str
    outcomes: list[dict[str, Any]]
    tally: dict[str, int]
    baseline_run: str | None = None
    comparable: str | None = None  # why the baseline run may stand beside this one

    @property
    def held(self) -> bool:
        return not any(o["status"] in evaluate.FAILING for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "baseline_run": self.baseline_run,
                "comparable": self.comparable, "held": self.held, "tally": self.tally,
                "outcomes": self.outcomes}


def declared_predictions(path: Path, scores: dict[str, Any]) -> tuple[Prediction, ...]:
    """The predictions scores.json (at `path`) carries, checked against its suite; InputError
    when it carries none (the suite declares none, or the run was scored before it did)."""
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
        return parse_predictions(path, {"version": 1, "prediction": section["declared"]},
                                 facts)
    except InputError as err:  # named where it stands in scores.json, not in the TOML file
        key = "predictions.declared" + str(err.data["key"]).removeprefix("prediction")
        raise InputError.bad_value(path, key, err.data["expected"], err.data["found"],
                                   fix="score the run again: sandbench score RUN_DIR "
                                       "--update") from None


def check_run(run_dir: Path) -> Check:
    """RUN_DIR/scores.json's predictions, each evaluated; a direction needs a baseline."""
    path = Path(run_dir) / SCORES_NAME
    scores = load_scores(path)
    outcomes = evaluate.evaluate(scores, declared_predictions(path, scores))
    return Check(scores["run"]["run_id"], outcomes, evaluate.tally(outcomes))


def check_against(baseline_dir: Path, run_dir: Path, suites_dir: Path
                  ) -> tuple[Check, dict[str, Any]]:
    """RUN_DIR's predictions with BASELINE_DIR as the run its directions are against, and the
    comparison of the two (Run 0 the baseline, Run 1 RUN_DIR); one InputError when the runs
    may not be compared or a direction names another run than the baseline."""
    before, after = compare.read_scored_run(baseline_dir), compare.read_scored_run(run_dir)
    model = compare.build(before, after, compare.comparability(before, after, suites_dir))
    path = after.run_dir / SCORES_NAME
    declared = declared_predictions(path, after.scores)
    baseline_id = before.run.run_id
    others = [(i, p) for i, p in enumerate(declared)
              if p.direction is not None and p.against_run != baseline_id]
    if others:
        named = ", ".join(f"{p.id} against {p.against_run!r}" for _, p in others)
        raise InputError(f"the baseline run given is {baseline_id!r}, but {len(others)} "
                         f"direction prediction(s) name another run: {named}",
                         why=f"a direction is registered against one named run "
                             f"({baseline_dir} is run {baseline_id!r})",
                         fix="give as the baseline the run the predictions name",
                         file=str(path), key=f"predictions.declared.{others[0][0]}.against_run",
                         expected=baseline_id, found=others[0][1].against_run)
    outcomes = direction.evaluate_against(after.scores, declared, before.scores)
    return Check(after.run.run_id, outcomes, evaluate.tally(outcomes), baseline_id,
                 model["comparable"]), model
