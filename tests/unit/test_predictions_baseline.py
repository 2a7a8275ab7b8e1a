"""A direction against a named baseline run decided when that run is supplied: `sandbench
check RUN --baseline RUN_0` and `sandbench compare RUN_0 RUN --assert`, on copies of the golden
demo run varied to make a regression (rg, locate) beside an improvement (ctags, one locate
task): each direction met, violated or missing, `needs-baseline` without the baseline, a
baseline other than the named run refused, and the exit codes of both commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import InputError
from orchestrator.predictions.check import check_against, check_run
from test_compare import _cell, _edit

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"
BASELINE_ID = "run-0"
REGRESSED = ("rg", "locate-bulk-threshold")  # correct in the golden run
IMPROVED = ("ctags", "locate-unknown-product-stock-zero")  # wrong in the golden run


def _direction(pid: str, arm: str, direction: str, against: str = BASELINE_ID,
               **scope: str) -> dict[str, Any]:
    return {"id": pid, "arm": arm, **scope, "metric": "count", "grade": "correct",
            "against_run": against, "direction": direction, "source": "preregistration"}


# Every direction of the format, each one met on the varied runs.
MET = [_direction("rg-locate-lower", "rg", "lower", kind="locate"),
       _direction("ctags-task-higher", "ctags", "higher", task=IMPROVED[1]),
       _direction("ast-grep-unchanged", "ast-grep", "unchanged", kind="references")]
VIOLATED = [_direction("rg-locate-higher", "rg", "higher", kind="locate"),
            _direction("rg-locate-unchanged", "rg", "unchanged", kind="locate"),
            _direction("ctags-task-lower", "ctags", "lower", task=IMPROVED[1]),
            _direction("ast-grep-higher", "ast-grep", "higher", kind="references")]
# rg has no e2e-retrieval cell in the baseline run (removed from run A below).
MISSING = [_direction("rg-e2e-higher", "rg", "higher", kind="e2e-retrieval")]
BOUND = {"id": "rg-references", "arm": "rg", "kind": "references", "metric": "count",
         "grade": "correct", "at_least": 6, "source": "preregistration"}


def _baseline_scores(scores: dict[str, Any]) -> None:
    scores["run"]["run_id"] = BASELINE_ID
    scores["cells"] = [c for c in scores["cells"]
                       if (c["arm"], c["kind"]) != ("rg", "e2e-retrieval")]


def _runs(root: Path, predictions: list[dict[str, Any]]) -> tuple[Path, Path]:
    """Run 0 (the golden run renamed `run-0`, rg's e2e-retrieval cells gone) and Run 1 (rg
    regressed on one locate task, ctags improved on one) declaring `predictions`."""
    a, b = root / "run-a", root / "run-b"
    for run in (a, b):
        run.mkdir(parents=True)
        for name in ("run.json", "scores.json"):
            shutil.copyfile(GOLDEN / name, run / name)
    _edit(a, "run.json", lambda run: run.update(run_id=BASELINE_ID))
    _edit(a, "scores.json", _baseline_scores)

    def vary(scores: dict[str, Any]) -> None:
        regressed = _cell(scores, REGRESSED)
        regressed["verdict"] = regressed["grade"]["verdict"] = "wrong"
        improved = _cell(scores, IMPROVED)
        improved["verdict"] = improved["grade"]["verdict"] = "correct"
        scores["predictions"]["declared"] = predictions
    _edit(b, "scores.json", vary)
    return a, b


def _statuses(root: Path, predictions: list[dict[str, Any]]) -> dict[str, str]:
    a, b = _runs(root, predictions)
    result, model = check_against(a, b, root / "suites")
    assert result.baseline_run == BASELINE_ID and "same sealed suite" in str(result.comparable)
    assert [r["task"] for r in model["regressions"]] == [REGRESSED[1]]
    return {o["id"]: o["status"] for o in result.outcomes}


def test_every_direction_is_met_when_the_figure_moves_that_way(tmp_path: Path) -> None:
    assert _statuses(tmp_path, MET) == {p["id"]: "met" for p in MET}


def test_a_direction_the_figure_did_not_take_is_violated(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, VIOLATED)
    result, _ = check_against(a, b, tmp_path / "suites")
    assert [o["status"] for o in result.outcomes] == ["violated"] * 4
    first = result.outcomes[0]
    assert (first["found"], first["baseline"]) == (4, 5)
    assert first["why"] == "found 4 against 5 in run run-0, predicted higher"


def test_a_figure_the_baseline_run_lacks_is_missing(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, MISSING)
    result, _ = check_against(a, b, tmp_path / "suites")
    (out,) = result.outcomes
    assert (out["status"], out["found"], out["baseline"]) == ("missing", 4, None)
    assert out["why"].startswith("in baseline run run-0: the run has no cell of rg")


def test_without_the_baseline_a_direction_needs_one(tmp_path: Path) -> None:
    _, b = _runs(tmp_path, [BOUND, *MET])
    result = check_run(b)
    assert [o["status"] for o in result.outcomes] == ["met"] + ["needs-baseline"] * 3
    assert not result.held and result.baseline_run is None


def test_a_baseline_other_than_the_named_run_is_refused(tmp_path: Path) -> None:
    named = [*MET, _direction("other", "rg", "lower", against="run-7", kind="all")]
    a, b = _runs(tmp_path, named)
    with pytest.raises(InputError) as err:
        check_against(a, b, tmp_path / "suites")
    assert "1 direction prediction(s) name another run: other against 'run-7'" in err.value.what
    assert (err.value.data["expected"], err.value.data["found"]) == (BASELINE_ID, "run-7")
    assert err.value.data["key"] == "predictions.declared.3.against_run"


def test_runs_of_different_seals_are_refused_before_any_direction(tmp_path: Path) -> None:
    a, b = _runs(tmp_path, MET)
    _edit(a, "run.json", lambda run: run["suite"].update(manifest_sha256="f" * 64))
    _edit(a, "scores.json", lambda scores: scores["suite"].update(manifest_sha256="f" * 64))
    with pytest.raises(InputError, match="not declared comparable"):
        check_against(a, b, tmp_path / "suites")


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, [*args])


def test_check_with_a_baseline_exit_codes(tmp_path: Path) -> None:
    a, b = _runs(tmp_path / "met", [BOUND, *MET])
    base = ("--bench-root", str(tmp_path))
    assert _invoke("check", str(b), "--assert", *base).exit_code == 1  # needs-baseline
    met = _invoke("check", str(b), "--assert", "--baseline", str(a), *base)
    assert met.exit_code == 0, met.output
    assert "BASELINE" in met.stdout and "4 met, 0 violated, 0 missing" in met.stdout
    a, b = _runs(tmp_path / "bad", [BOUND, *VIOLATED, *MISSING])
    bad = _invoke("check", str(b), "--assert", "--baseline", str(a), "--json", *base)
    assert bad.exit_code == 1
    data = json.loads(bad.stdout)
    assert data["baseline_run"] == BASELINE_ID and data["held"] is False
    assert data["tally"] == {"met": 1, "violated": 4, "missing": 1, "needs-baseline": 0}
    assert "5 of 6 prediction(s) not met" in bad.stderr


def test_compare_assert_checks_run_b_against_run_a(tmp_path: Path) -> None:
    base = ("--bench-root", str(tmp_path))
    a, b = _runs(tmp_path / "met", [BOUND, *MET])
    met = _invoke("compare", str(a), str(b), "--assert", *base)
    assert met.exit_code == 0, met.output
    assert "rg-locate-lower" in met.stdout and "4 met" in met.stdout
    out = tmp_path / "docs"
    written = _invoke("compare", str(a), str(b), "--assert", "--output", str(out), *base)
    assert written.exit_code == 0 and (out / "compare.json").is_file()
    a, b = _runs(tmp_path / "bad", [BOUND, *VIOLATED, *MISSING])
    bad = _invoke("compare", str(a), str(b), "--assert", "--format", "json", *base)
    assert bad.exit_code == 1
    statuses = [o["status"] for o in json.loads(bad.stdout)["outcomes"]]
    assert statuses == ["met", "violated", "violated", "violated", "violated", "missing"]
    plain = _invoke("compare", str(a), str(b), "--format", "json", *base)
    assert plain.exit_code == 0 and json.loads(plain.stdout)["schema"] == "sandbench.compare/1"
    a, b = _runs(tmp_path / "other", [_direction("other", "rg", "lower", against="run-7",
                                                 kind="all")])
    wrong = _invoke("compare", str(a), str(b), "--assert", *base)
    assert wrong.exit_code == 2 and wrong.stdout == ""
    assert "name another run: other against 'run-7'" in wrong.stderr
