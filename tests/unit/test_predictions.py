"""Predictions as data: predictions.toml checked on load (every bad key named), each kind of
prediction evaluated (met, violated, missing, needs-baseline), the scorer carrying them into
scores.json from the sealed file, `sandbench check` (table, --json, --assert exit codes) and
the documents' Predictions section."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_suite import copy_project
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import InputError
from orchestrator.predictions import evaluate
from orchestrator.predictions.model import (PREDICTIONS, Prediction, SuiteFacts,
                                            parse_predictions)
from orchestrator.report import html, markdown
from orchestrator.score import score_run
from orchestrator.suite.model import MANIFEST

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SCORES = json.loads((GOLDEN / "demo-run" / "scores.json").read_text(encoding="utf-8"))
FACTS = SuiteFacts(arms=SCORES["suite"]["arms"], baseline="rg",
                   kinds={t["kind"] for t in SCORES["tasks"].values()},
                   tasks=set(SCORES["tasks"]))
GOOD = {"id": "p", "arm": "rg", "kind": "references", "metric": "count", "grade": "correct",
        "at_least": 6, "source": "preregistration"}


def _parse(*tables: dict[str, Any]) -> tuple[Prediction, ...]:
    return parse_predictions(Path("predictions.toml"),
                             {"version": 1, "prediction": list(tables)}, FACTS)


def _one(**changes: Any) -> Prediction:
    table = {**GOOD, **changes}
    return _parse({k: v for k, v in table.items() if v is not None})[0]


def test_a_good_prediction_parses() -> None:
    p = _one()
    assert (p.arm, p.scope, p.target, p.figure, p.predicted) == (
        "rg", "kind", "references", "count correct", ">= 6")


@pytest.mark.parametrize(("changes", "key", "expected"), [
    ({"arm": "nope"}, "prediction.0.arm", "one of the suite's arms"),
    ({"kind": "band"}, "prediction.0.kind", "one of ["),
    ({"kind": None, "task": "no-such-task"}, "prediction.0.task", "one of ["),
    ({"task": "impact-order"}, "prediction.0", "exactly one of kind and task"),
    ({"kind": None}, "prediction.0", "exactly one of kind and task"),
    ({"metric": "speed"}, "prediction.0.metric", "one of count, share"),
    ({"grade": None}, "prediction.0.grade", "with metric = 'count'"),
    ({"metric": "share", "grade": "unscored", "at_least": 0.5},
     "prediction.0.grade", "with metric = 'share'"),
    ({"metric": "recall", "at_least": 0.5}, "prediction.0.grade", "absent"),
    ({"at_least": None}, "prediction.0.at_least", "at_least or at_most"),
    ({"at_least": -1}, "prediction.0.at_least", "a number >= 0"),
    ({"at_least": 2.5}, "prediction.0.at_least", "a whole number of cells"),
    ({"metric": "share", "at_least": 1.5}, "prediction.0.at_least", "a number in [0, 1]"),
    ({"at_least": 5, "at_most": 4}, "prediction.0.at_most", "a number >= at_least (5)"),
    ({"metric": "cost_ratio", "grade": None, "at_least": 1}, "prediction.0.arm",
     "an arm other than the baseline"),
    ({"against_run": "r0", "direction": "higher"}, "prediction.0.at_least", "absent"),
    ({"against_run": "r0", "at_least": None}, "prediction.0.direction", "present"),
    ({"direction": "higher", "at_least": None}, "prediction.0.against_run", "present"),
    ({"direction": "sideways", "at_least": None, "against_run": "r0"},
     "prediction.0.direction", "one of higher, lower, unchanged"),
    ({"id": "Bad Id"}, "prediction.0.id", "lower-case letters"),
    ({"source": None}, "prediction.0.source", "where the preregistration states it"),
    ({"colour": "red"}, "prediction.0.colour", "one of ["),
])
def test_every_bad_key_is_named(changes: dict[str, Any], key: str, expected: str) -> None:
    with pytest.raises(InputError) as err:
        _one(**changes)
    assert err.value.data["key"] == key
    assert expected in err.value.data["expected"]
    assert "predictions.toml" in str(err.value)


@pytest.mark.parametrize(("data", "key"), [
    ({"prediction": [GOOD]}, "version"),
    ({"version": 2, "prediction": [GOOD]}, "version"),
    ({"version": 1}, "prediction"),
    ({"version": 1, "prediction": []}, "prediction"),
    ({"version": 1, "prediction": [GOOD, GOOD]}, "prediction.1.id"),
    ({"version": "1", "prediction": [GOOD]}, "version"),
    ({"version": 1, "prediction": "x"}, "prediction"),
    ({"version": 1, "prediction": [5]}, "prediction.0"),
    ({"version": 1, "prediction": [{**GOOD, "at_least": True}]}, "prediction.0.at_least"),
    ({"version": 1, "prediction": [{**GOOD, "at_least": float("nan")}]},
     "prediction.0.at_least"),
])
def test_a_bad_file_is_named(data: dict[str, Any], key: str) -> None:
    with pytest.raises(InputError) as err:
        parse_predictions(Path("predictions.toml"), data, FACTS)
    assert err.value.data["key"] == key


def _status(**changes: Any) -> dict[str, Any]:
    return evaluate.evaluate_one(SCORES, _one(**changes))


def _summary(arm: str, band: str) -> dict[str, Any]:
    summary: dict[str, Any] = SCORES["summary"][arm][band]
    return summary


def test_count_met_and_violated() -> None:
    correct = _summary("rg", "references")["counts"]["correct"]
    met = _status(at_least=correct)
    assert (met["status"], met["found"], met["why"]) == ("met", correct, None)
    violated = _status(at_least=correct + 1)
    assert violated["status"] == "violated"
    assert f"found {correct}" in violated["why"]


@pytest.mark.parametrize("metric", ["share", "recall", "precision", "cold_ms", "warm_ms"])
def test_every_band_figure_is_the_documents(metric: str) -> None:
    summary = _summary("rg", "all")
    found = {"share": summary["correct_share"], "recall": summary["recall_median"],
             "precision": summary["precision_median"], "cold_ms": summary["timing"]["cold_ms"],
             "warm_ms": summary["timing"]["warm_ms"]}[metric]
    grade = "correct" if metric == "share" else None
    top = 1 if metric in ("share", "recall", "precision") else None
    met = _status(kind="all", metric=metric, grade=grade, at_least=found, at_most=top)
    assert (met["status"], met["found"]) == ("met", found)
    assert _status(kind="all", metric=metric, grade=grade, at_least=None,
                   at_most=found * 0.99)["status"] == "violated"


def test_cost_ratio_is_the_paired_median_against_the_baseline() -> None:
    arm = next(a for a in SCORES["cost_ratios"]
               if SCORES["cost_ratios"][a]["references"]["median_of_ratios"] is not None)
    ratio = SCORES["cost_ratios"][arm]["references"]["median_of_ratios"]
    met = _status(arm=arm, metric="cost_ratio", grade=None, at_least=ratio)
    assert (met["status"], met["found"]) == ("met", ratio)
    task = sorted(SCORES["cost_ratios"][arm]["references"]["per_task"])[0]
    one = _status(arm=arm, kind=None, task=task, metric="cost_ratio", grade=None,
                  at_least=None, at_most=0.0001)
    assert (one["status"], one["found"]) == (
        "violated", SCORES["cost_ratios"][arm]["references"]["per_task"][task])


def test_a_task_prediction_reads_its_one_cell() -> None:
    cell = next(c for c in SCORES["cells"] if c["arm"] == "rg" and c["kind"] == "impact")
    out = _status(kind=None, task=cell["task"], metric="recall", grade=None,
                  at_least=cell["grade"]["recall"])
    assert (out["status"], out["found"], out["cells"]) == ("met", cell["grade"]["recall"], 1)


def test_no_scored_cell_is_missing_never_zero() -> None:
    arm, band = next((a, b) for a, bands in SCORES["summary"].items()
                     for b, s in bands.items() if s["graded"] == 0
                     and s["counts"]["not_attempted"] > 0)
    out = _status(arm=arm, kind=band, at_least=0)
    assert out["status"] == "missing"
    assert "was scored" in out["why"]
    counted = _status(arm=arm, kind=band, grade="not_attempted",
                      at_least=_summary(arm, band)["counts"]["not_attempted"])
    assert counted["status"] == "met"


def test_a_run_without_the_arm_is_missing() -> None:
    scores = copy.deepcopy(SCORES)
    scores["cells"] = [c for c in scores["cells"] if c["arm"] != "rg"]
    out = evaluate.evaluate_one(scores, _one())
    assert (out["status"], out["cells"]) == ("missing", 0)
    assert "has no cell" in out["why"]


def test_a_direction_needs_a_baseline_run_and_is_never_met() -> None:
    out = _status(at_least=None, against_run="run-0", direction="higher")
    assert out["status"] == "needs-baseline"
    assert "run-0" in out["why"]
    assert "needs-baseline" in evaluate.FAILING


def test_every_prediction_is_reported_in_order() -> None:
    tables = [{**GOOD, "id": f"p{i}", "at_least": n} for i, n in enumerate((0, 99, 1))]
    outcomes = evaluate.evaluate(SCORES, _parse(*tables))
    assert [o["id"] for o in outcomes] == ["p0", "p1", "p2"]
    assert evaluate.tally(outcomes) == {"met": 2, "violated": 1, "missing": 0,
                                        "needs-baseline": 0}


# -- the scorer, `sandbench check` and the documents, on a sealed copy of the golden run ------

def _seal_with(suite: Path, run: Path, text: str) -> None:
    """The suite copy with `text` as its predictions.toml, sealed, and the run's record of
    the seal updated to it (as if the run had been made with this suite)."""
    (suite / PREDICTIONS).write_text(text, encoding="utf-8")
    _reseal(suite, run, hashlib.sha256(text.encode()).hexdigest())


def _reseal(suite: Path, run: Path, predictions_sha256: str | None) -> None:
    """The suite's manifest with predictions.toml's digest (None: without the file), and the
    run's record of the seal updated to it."""
    manifest = json.loads((suite / MANIFEST).read_text(encoding="utf-8"))
    manifest["inputs"].pop(f"suites/demo/{PREDICTIONS}", None)
    if predictions_sha256 is not None:
        manifest["inputs"][f"suites/demo/{PREDICTIONS}"] = predictions_sha256
    (suite / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    run_doc = json.loads((run / "run.json").read_text(encoding="utf-8"))
    run_doc["suite"]["manifest_sha256"] = hashlib.sha256(
        (suite / MANIFEST).read_bytes()).hexdigest()
    (run / "run.json").write_text(json.dumps(run_doc), encoding="utf-8")


MET = """version = 1
[[prediction]]
id = "rg-references"
arm = "rg"
kind = "references"
metric = "count"
grade = "correct"
at_least = 1
source = "a sentence of the preregistration"
"""
FAILING = MET + """
[[prediction]]
id = "too-many"
arm = "rg"
kind = "all"
metric = "count"
grade = "correct"
at_least = 999
source = "too many"

[[prediction]]
id = "ast-grep-locate"
arm = "ast-grep"
kind = "locate"
metric = "recall"
at_least = 0.5
source = "no scored cell"

[[prediction]]
id = "faster-than-run-0"
arm = "rg"
kind = "all"
metric = "warm_ms"
against_run = "run-0"
direction = "lower"
source = "a direction"
"""


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the golden run and of its suite without the suite's own predictions, sealed
    so, to seal other predictions into."""
    root = tmp_path_factory.mktemp("predict")
    suite, run = root / "suites" / "demo", root / "run"
    shutil.copytree(GOLDEN / "suites" / "demo", suite)
    shutil.copytree(GOLDEN / "demo-run", run,
                    ignore=shutil.ignore_patterns("scores.json", "results.md"))
    (suite / PREDICTIONS).unlink(missing_ok=True)
    _reseal(suite, run, None)
    return suite, run


def _copied(sealed: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """The sealed suite and run copied under `tmp_path`, for one test to change."""
    suite_src, run_src = sealed
    suite, run = tmp_path / "suites" / "demo", tmp_path / "run"
    shutil.copytree(suite_src, suite)
    shutil.copytree(run_src, run)
    return suite, run


def _scored(sealed: tuple[Path, Path], tmp_path: Path, text: str) -> Path:
    suite, run = _copied(sealed, tmp_path)
    _seal_with(suite, run, text)
    score_run(run, suite)
    return run


def _check(run: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["check", str(run), *args])


def test_the_scorer_carries_the_sealed_predictions_and_check_passes(
        sealed: tuple[Path, Path], tmp_path: Path) -> None:
    run = _scored(sealed, tmp_path, MET)
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    assert scores["predictions"]["tally"]["met"] == 1
    assert scores["predictions"]["declared"][0]["id"] == "rg-references"
    result = _check(run, "--assert")
    assert result.exit_code == 0, result.output
    assert "rg-references" in result.stdout and "met" in result.stdout


def test_check_reports_every_failure_and_exits_1(sealed: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    run = _scored(sealed, tmp_path, FAILING)
    plain = _check(run)
    assert plain.exit_code == 0
    asserted = _check(run, "--assert")
    assert asserted.exit_code == 1
    for name in ("too-many", "ast-grep-locate", "faster-than-run-0"):
        assert name in asserted.stdout
    assert "3 of 4 prediction(s) not met" in asserted.stderr
    as_json = _check(run, "--assert", "--json")
    assert as_json.exit_code == 1
    data = json.loads(as_json.stdout)
    assert [o["status"] for o in data["outcomes"]] == ["met", "violated", "missing",
                                                       "needs-baseline"]
    assert data["held"] is False
    doc = markdown.render_markdown(json.loads((run / "scores.json").read_text()))
    assert "## Predictions" in doc
    assert "| too-many | rg | kind all | count correct | &gt;= 999 | 21 | violated |" in doc
    assert doc == markdown.render_markdown(json.loads((run / "scores.json").read_text()))
    page = html.render_html(json.loads((run / "scores.json").read_text()))
    assert 'id="predictions"' in page and "faster-than-run-0" in page


def test_a_predictions_file_not_in_the_seal_is_refused(sealed: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    suite, run = _copied(sealed, tmp_path)
    (suite / PREDICTIONS).write_text(MET, encoding="utf-8")
    with pytest.raises(InputError, match="not in the seal"):
        score_run(run, suite)


def test_check_without_predictions_is_an_input_error(sealed: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    suite, run = _copied(sealed, tmp_path)
    score_run(run, suite)
    result = _check(run)
    assert result.exit_code == 2
    assert "carries no predictions" in result.stderr
    assert result.stdout == ""


def test_the_demo_suite_predictions_load() -> None:
    from orchestrator.suite import load_suite
    suite = load_suite(Path(__file__).resolve().parents[2] / "suites", "demo")
    assert len(suite.predictions) == 12
    assert {p.arm for p in suite.predictions} == {"rg", "ast-grep"}


def test_the_seal_covers_the_predictions_and_names_a_change(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    from orchestrator import suite
    demo = suite.load_suite(project.suites_dir, "demo")
    suite.seal(demo, project)
    key = f"suites/demo/{PREDICTIONS}"
    assert key in json.loads((demo.path / MANIFEST).read_text())["inputs"]
    file = demo.path / PREDICTIONS
    file.write_text(file.read_text() + "\n# edited after the seal\n")
    assert [d.file for d in suite.verify_seal(demo, project)] == [key]
    file.unlink()
    suite.seal(suite.load_suite(project.suites_dir, "demo"), project)
    assert key not in json.loads((demo.path / MANIFEST).read_text())["inputs"]


def test_a_bad_predictions_file_stops_the_suite_loading(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    from orchestrator import suite
    file = project.suites_dir / "demo" / PREDICTIONS
    file.write_text(MET.replace('arm = "rg"', 'arm = "grep"'))
    with pytest.raises(InputError) as err:
        suite.load_suite(project.suites_dir, "demo")
    assert err.value.data["key"] == "prediction.0.arm" and str(file) in str(err.value)


def test_a_tampered_declaration_in_scores_is_named_where_it_stands(
        sealed: tuple[Path, Path], tmp_path: Path) -> None:
    run = _scored(sealed, tmp_path, MET)
    scores = json.loads((run / "scores.json").read_text(encoding="utf-8"))
    scores["predictions"]["declared"][0]["at_least"] = -3
    (run / "scores.json").write_text(json.dumps(scores), encoding="utf-8")
    result = _check(run, "--assert")
    assert result.exit_code == 2
    assert "predictions.declared.0.at_least: expected a number >= 0" in result.stderr
