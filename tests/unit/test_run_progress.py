"""What `sandbench run` shows while it runs: each arm's start and end derived from the per-cell
callback alone, a resumed run counted from its recorded cells, and under `--json` nothing on
stdout but the JSON, even on a terminal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.run import document as run_document
from orchestrator.cli import app, progress
from orchestrator.run import preflight, runner as run_runner
from orchestrator.run.options import Progress
from orchestrator.run.plan import ArmPlan, Plan
from orchestrator.run.document import SETUP_CELL

runner = CliRunner()
GOLDEN_RUN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"


def _arm(name: str, *tasks: str, reps: int = 1) -> ArmPlan:
    """An arm as the plan has it; the display reads only its name and cells."""
    cells = tuple((task, rep) for task in tasks for rep in range(reps + 1))
    return ArmPlan(name, None, None, "", None, cells)  # type: ignore[arg-type]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_at_a_time_each_arm_counts_from_the_end_of_the_one_before() -> None:
    clock = Clock()
    tally = progress.ArmTally([_arm("rg", "a"), _arm("crg", "a")], jobs=1, clock=clock)
    clock.now = 101.0
    assert tally.record("rg", "a/0", "ok") == ["rg: started"]
    clock.now = 102.5
    assert tally.record("rg", "a/1", "nonzero-exit") == ["rg: 2 cells, 1 failure, 2.5 s"]
    clock.now = 110.0  # the index build ran from 102.5 until now
    assert tally.record("crg", SETUP_CELL, "ok") == ["crg: started"]
    tally.record("crg", "a/0", "ok")
    clock.now = 111.0
    assert tally.record("crg", "a/1", "ok") == ["crg: 2 cells, 0 failures, 8.5 s"]
    assert tally.failures == 1 and tally.unfinished() == []


def test_with_two_jobs_the_third_arm_takes_the_first_free_worker() -> None:
    clock = Clock()
    arms = [_arm("a", "t", reps=0), _arm("b", "t", reps=0), _arm("c", "t", reps=0)]
    tally = progress.ArmTally(arms, jobs=2, clock=clock)
    clock.now = 104.0
    assert tally.record("b", "t/0", "ok") == ["b: started", "b: 1 cell, 0 failures, 4.0 s"]
    clock.now = 107.0
    assert tally.record("c", "t/0", "ok") == ["c: started", "c: 1 cell, 0 failures, 3.0 s"]
    clock.now = 109.0
    assert tally.record("a", "t/0", "ok") == ["a: started", "a: 1 cell, 0 failures, 9.0 s"]


def test_an_arm_that_stopped_before_its_last_cell_is_reported() -> None:
    clock = Clock()
    tally = progress.ArmTally([_arm("rg", "a", "b")], jobs=1, clock=clock)
    tally.record("rg", "a/0", "timeout")
    clock.now = 103.0
    assert tally.unfinished() == ["rg: stopped after 1 of 4 cells, 1 failure, 3.0 s"]


def test_a_resumed_run_counts_the_cells_it_already_recorded(tmp_path: Path) -> None:
    arms = [_arm("rg", "a"), _arm("crg", "a")]
    for arm, cell in (("rg", "a/0"), ("rg", "a/1"), ("crg", "a/0"), ("gone", "a/0")):
        (tmp_path / "cells" / arm / cell).mkdir(parents=True)
        (tmp_path / "cells" / arm / cell / "record.json").write_text("{}")
    (tmp_path / "cells" / "crg" / SETUP_CELL).mkdir()
    (tmp_path / "cells" / "crg" / SETUP_CELL / "record.json").write_text("{}")
    assert progress.recorded_cells(tmp_path, arms) == 3
    assert progress.recorded_cells(None, arms) == 0


def _finished_run(tmp_path: Path) -> Path:
    """A run directory as a run that finished leaves it, for what the command reads after."""
    (tmp_path / "run").mkdir()
    shutil.copyfile(GOLDEN_RUN / "run.json", tmp_path / "run" / "run.json")
    return tmp_path / "run"


@pytest.fixture
def fake_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`sandbench run` with a plan of one arm and a run that reports its cells, no engine."""
    arm = _arm("rg", "a")
    plan = Plan(None, (arm,), ())  # type: ignore[arg-type]
    monkeypatch.setattr(preflight, "check", lambda *_: preflight.Preflight(plan, (), ()))

    def execute(settings: Any, options: Any, checked: Any, progress: Progress) -> Path:
        for task, rep in arm.cells:
            progress("rg", f"{task}/{rep}", "ok")
        return _finished_run(tmp_path)
    monkeypatch.setattr(run_runner, "execute", execute)
    monkeypatch.setattr(progress, "on_terminal", lambda: True)
    return tmp_path


def test_json_keeps_stdout_to_the_json_even_on_a_terminal(fake_run: Path) -> None:
    result = runner.invoke(app, ["run", "demo", "--json", "--bench-root", str(fake_run)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"run_dir": str(fake_run / "run"), "status": "complete",
                                         "refused_arms": {}}
    cells = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(c["event"], c["cell"], c["done"], c["total"]) for c in cells] == [
        ("cell", "a/0", 1, 2), ("cell", "a/1", 2, 2)]


def test_a_terminal_gets_the_arm_lines_instead_of_log_lines(fake_run: Path) -> None:
    result = runner.invoke(app, ["run", "demo", "--bench-root", str(fake_run)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"run directory: {fake_run / 'run'}\n"
    assert "rg: started" in result.stderr and "rg: 2 cells, 0 failures" in result.stderr
    assert '"event"' not in result.stderr


def test_a_run_with_refused_arms_names_each_and_exits_3(
        fake_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run finished, but not as the suite asked: every refused arm on a line of its own
    on stderr (a control in why escaped), the JSON and the run document say refused-arms."""
    finished = run_runner.execute

    def refusing(*args: Any, **kwargs: Any) -> Path:
        run_dir = finished(*args, **kwargs)
        doc = run_document.read(run_dir)
        doc.arms["ctags"].ended(refused="network_mode: expected none, found bridge")
        doc.arms["rg"].ended(refused="mounts: expected none, found /x\n/fake line")
        assert doc.finished(doc.corpus.pristine_digest_before)
        run_document.write(run_dir, doc)
        return run_dir
    monkeypatch.setattr(run_runner, "execute", refusing)
    result = runner.invoke(app, ["run", "demo", "--json", "--bench-root", str(fake_run)])
    assert result.exit_code == 3, result.output
    out = json.loads(result.stdout)
    assert out["status"] == "refused-arms" == run_document.read(fake_run / "run").status
    assert out["refused_arms"] == {"ctags": "network_mode: expected none, found bridge",
                                   "rg": "mounts: expected none, found /x\n/fake line"}
    lines = [line for line in result.stderr.splitlines() if " refused: " in line]
    assert lines == [
        "arm ctags refused: network_mode: expected none, found bridge; fix: see every guard "
        f"with `sandbench sandbox check ctags`, then: sandbench run demo --resume "
        f"{fake_run / 'run'}",
        "arm rg refused: mounts: expected none, found /x\\n/fake line; fix: see every guard "
        f"with `sandbench sandbox check rg`, then: sandbench run demo --resume "
        f"{fake_run / 'run'}"]


def test_the_display_shows_markup_and_controls_in_a_name_as_written(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A name in the display is plain, escaped text: rich markup is not read, and no control
    reaches the terminal (arm names come from the suite; the display trusts none)."""
    name = "[bold red]rg[/]\x1b]0;title\x07\r"
    arm = _arm(name, "a")
    monkeypatch.setattr(preflight, "check", lambda *_: preflight.Preflight(
        Plan(None, (arm,), ()), (), ()))  # type: ignore[arg-type]

    def execute(settings: Any, options: Any, checked: Any, progress: Progress) -> Path:
        for task, rep in arm.cells:
            progress(name, f"{task}/{rep}", "ok")
        return _finished_run(tmp_path)
    monkeypatch.setattr(run_runner, "execute", execute)
    monkeypatch.setattr(progress, "on_terminal", lambda: True)
    result = runner.invoke(app, ["run", "demo", "--bench-root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "[bold red]rg[/]\\x1b]0;title\\x07\\r: started" in result.stderr
    assert "\x1b]0;" not in result.stderr and "\r" not in result.stderr.replace("\r\n", "\n")
