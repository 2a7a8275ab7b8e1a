"""Hostile answers on the real engine: arms on the probe image whose answers carry a line
number 100,000 digits long, JSON nested 100,000 deep, an integer of 100,000 digits, and a
2 MiB line made for the quadratic regex rg's binary-file notice once had (minutes per cell).
They run beside rg (first) and rg-late (last): the run completes, the scorer and `sandbench
report` complete in seconds, each hostile cell is `parse-error` naming the guard that refused
it, rg's and rg-late's cells are those of a run without the hostile arms, and the canary each
answer ends with (past every excerpt's cut) reaches no document and no terminal output."""

from __future__ import annotations

import json
import secrets
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator import suite
from orchestrator.cli import app
from orchestrator.engine import Engine
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import built, project_copy  # noqa: F401 (the fixture)
from tests.security.conftest import TASKS, probe_arm, write_suite

pytestmark = pytest.mark.integration
CANARY = f"canary-{secrets.token_hex(12)}"
# Each arm's one command for every references task: python3 on the probe image printing its
# answer, the canary at its end (no brace in it: an arm's argv reads {name} as a placeholder).
ANSWERS = {
    "h-bigint": ("rg", "print('inventory/src/stock.rs:' + '9' * 100000 + ':' + C)",
                 "bad-line"),
    "h-deep": ("code-review-graph", "print('[' * 100000 + C)", "too-deep"),
    "h-number": ("code-review-graph",
                 "import json; print(json.dumps(dict(status='ok', pattern='p', edges=[dict("
                 "file_path='/corpus/inventory/src/stock.rs', line=12345, kind=C)]))"
                 ".replace('12345', '1' + '0' * 100000))", "bad-number"),
    "h-regex": ("rg", "print('a' + ': binary file matches (found ' * 72000 + C)",
                "not path:line:text"),
}
HOSTILE = tuple(ANSWERS)


def _arm_toml(name: str) -> str:
    parser, script, _ = ANSWERS[name]
    # The canary spelled backwards: the arm's spec (argv, env) is quoted in scores.json.
    argv = ["python3", "-c", f"C = {CANARY[::-1]!r}[::-1]; " + script, "{symbol}"]
    return probe_arm("tests/security/test_hostile_output.py", name, argv, parser=parser)


@pytest.fixture(scope="module")
def runs(engine: Engine, built: Settings,  # noqa: F811
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = project_copy(built, tmp_path_factory.mktemp("hostile-output"))
    arms = settings.project_root / "arms"
    shutil.copy2(arms / "rg.toml", arms / "rg-late.toml")
    for name in HOSTILE:
        (arms / f"{name}.toml").write_text(_arm_toml(name))
    write_suite(settings.project_root, "hostile", ["rg", *HOSTILE, "rg-late"], TASKS)
    write_suite(settings.project_root, "clean", ["rg", "rg-late"], TASKS)
    for name in ("hostile", "clean"):
        suite.seal(suite.load_suite(settings.suites_dir, name), settings)
    hostile = runner.run(settings, RunOptions("hostile"), [pool.one(engine)])
    started = time.monotonic()
    scores = scorer.score_run(hostile, settings.suite_dir("hostile"))
    score_seconds = time.monotonic() - started
    report = CliRunner().invoke(app, ["report", str(hostile)])
    clean = runner.run(settings, RunOptions("clean"), [pool.one(engine)])
    yield {"run": hostile, "scores": scores, "score_seconds": score_seconds, "report": report,
           "clean": scorer.score_run(clean, settings.suite_dir("clean"))}


def _graded(scores: dict[str, Any], arm: str) -> dict[str, Any]:
    """What a cell's grade is, without the times of the run it came from, and with its
    answer's files as a set (rg walks directories in parallel: its order varies by run)."""
    return {c["task"]: {**{k: c[k] for k in ("verdict", "failure", "reach", "calls", "cost",
                                             "parse_error")},
                        "grade": {**c["grade"], "answer": sorted(c["grade"]["answer"])}}
            for c in scores["cells"] if c["arm"] == arm}


def test_the_run_and_the_scorer_go_on(runs: dict[str, Any]) -> None:
    meta = json.loads((runs["run"] / "run.json").read_text())
    assert meta["status"] == "complete"
    assert (runs["run"] / "scores.json").is_file()
    assert runs["score_seconds"] < 60, runs["score_seconds"]
    assert runs["report"].exit_code == 0, runs["report"].output
    for name in HOSTILE:  # the answers were delivered whole, canary and all
        stdout = (runs["run"] / "cells" / name / TASKS[0] / "0" / "stdout").read_bytes()
        assert CANARY.encode() in stdout[-64:] and len(stdout) > 100_000


def test_each_hostile_cell_is_a_parse_error_naming_its_guard(runs: dict[str, Any]) -> None:
    scores = runs["scores"]
    for name, (_, _, guard) in ANSWERS.items():
        for task in TASKS:
            (cell,) = [c for c in scores["cells"] if c["arm"] == name and c["task"] == task]
            assert (cell["verdict"], cell["failure"]) == ("wrong", "parse-error"), (name, cell)
            assert guard in cell["parse_error"] and len(cell["parse_error"]) < 500, (name, cell)
        assert scores["failures"][name]["parse-error"] == len(TASKS)


def test_the_other_arms_cells_are_those_of_a_run_without_the_hostile_arms(
        runs: dict[str, Any]) -> None:
    for arm in ("rg", "rg-late"):
        assert _graded(runs["scores"], arm) == _graded(runs["clean"], arm), arm
        assert {c["verdict"] for c in runs["scores"]["cells"] if c["arm"] == arm} == {"correct"}


def test_the_canary_reaches_no_document_and_no_terminal(runs: dict[str, Any]) -> None:
    run_dir = runs["run"]
    for document in ("scores.json", "results.md", "results.html"):
        assert CANARY not in (run_dir / document).read_text(encoding="utf-8"), document
    assert CANARY not in runs["report"].output
    for arm in ("rg", "rg-late"):
        for path in (run_dir / "cells" / arm).rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path
