"""A run without its suite's baseline arm (left out by `sandbench run --arm`, or present but
never measured): it scores and renders, every figure against the baseline says why it is
missing instead of showing a number, and the grades are the ones the arms earned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_golden import RUN, SUITE
from test_score_cli import make_app, runner
from test_score_fixtures import Arm, Cell, RunBuilder, rg_rows

from orchestrator.report import html as html_page
from orchestrator.score import compute, self_check

GAP = "the baseline arm rg was not run in this run: sandbench run --arm left it out"


@pytest.fixture
def no_baseline(tmp_path: Path) -> Path:
    """The golden demo run as if made with every arm but rg: its cells, guards, state and
    run.json entry gone."""
    run = tmp_path / "demo-run"
    shutil.copytree(RUN, run, ignore=shutil.ignore_patterns("scores.json", "results.md"))
    for part in ("cells", "guards", "arms"):
        shutil.rmtree(run / part / "rg")
    data = json.loads((run / "run.json").read_text())
    del data["arms"]["rg"]
    (run / "run.json").write_text(json.dumps(data))
    return run


def test_a_run_without_the_baseline_scores_and_reports(no_baseline: Path) -> None:
    scored = runner.invoke(make_app(), ["score", str(no_baseline), "--suite-dir", str(SUITE)])
    assert scored.exit_code == 0, scored.output
    for check in ([], ["--check"]):
        reported = runner.invoke(make_app(), ["report", str(no_baseline), *check])
        assert reported.exit_code == 0, reported.output
    scores = json.loads((no_baseline / "scores.json").read_text())
    env = scores["environment"]
    assert env["baseline"] == f"n/a ({GAP})"
    assert f"{GAP}; the Baseline line, every cost ratio and every break-even are n/a" in \
        env["deviations"]
    assert not any(d.startswith("arm rg ") for d in env["deviations"])
    assert scores["cost_ratios"] == {}
    measured = [a for a, s in scores["setup"].items() if s is not None]
    assert measured and all(scores["setup"][a]["break_even"] == {
        "kind": "unknown", "tasks": None, "pairs": 0, "extra_setup_s": None,
        "saving_per_task_s": None, "why": GAP} for a in measured)
    text = (no_baseline / "results.md").read_text()
    assert f"Baseline n/a ({GAP})" in text
    assert f"No cost ratio could be computed because {GAP}." in text
    assert f"unknown ({GAP})" in text
    assert GAP in (no_baseline / "results.html").read_text()


def test_leaving_the_baseline_out_changes_no_other_arms_grade(no_baseline: Path) -> None:
    golden = json.loads((RUN / "scores.json").read_text())
    golden["cells"] = [c for c in golden["cells"] if c["arm"] != "rg"]
    scores, _ = compute(no_baseline, SUITE)
    rg = [c for c in scores["cells"] if c["arm"] == "rg"]
    assert {(c["verdict"], c["unscored"]["kind"]) for c in rg} == {("unscored", "arm-not-run")}
    scores["cells"] = [c for c in scores["cells"] if c["arm"] != "rg"]
    assert self_check(golden, scores) == []


@pytest.mark.parametrize(("state", "why"), [
    ({"refused": "network_mode: expected none, found bridge"}, "its isolation guards failed"),
    ({"unavailable": "no rg binary"}, "its tool is not available")])
def test_a_baseline_present_but_never_measured_is_named(tmp_path: Path, state: dict,
                                                        why: str) -> None:
    b = RunBuilder(tmp_path, arms=[Arm("rg", tool_version="ripgrep 13.0.0", **state),
                                   Arm("peer", setup_wall_ns=1_000_000_000)])
    b.cells[("peer", "ref-money")] = Cell(rg_rows("src/a.cs:2:Money m;"))
    scores, _ = compute(b.build().run_dir, b.suite_dir)
    gap = f"the baseline arm rg was not run in this run: {why}"
    assert scores["environment"]["baseline"] == f"n/a ({gap})"
    assert scores["cost_ratios"] == {}
    assert scores["setup"]["peer"]["break_even"]["why"] == gap
    assert f"No cost ratio could be computed because {gap}." in html_page.render_html(scores)
