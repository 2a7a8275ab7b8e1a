"""The run loop against the real engine: the demo suite end to end with the shipped arms,
and a resume after the orchestrator is killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator import corpus, images, parsers, suite
from orchestrator.run import transcripts
from orchestrator.sandbox import cleanup, mcp, workfs
from orchestrator.engine import Engine
from orchestrator.settings import Settings
from orchestrator.run import plan as run_plan, pool, runner
from orchestrator.run.options import RunOptions

pytestmark = pytest.mark.integration
SHIPPED = ("rg", "ast-grep", "code-review-graph", "code-index-mcp", "ctags")


def _with_demo(settings: Settings) -> Settings:
    pins = corpus.load_lock(corpus.lock_path(settings))
    corpus.fetch(pins["demo"], settings)
    return settings


@pytest.fixture(scope="module")
def demo_run(engine: Engine, built: Settings, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Settings, Path]:
    root = tmp_path_factory.mktemp("demo-run") / "bench"
    images.share_lock(built, root)
    settings = _with_demo(Settings(project_root=built.project_root, bench_root=root))
    return settings, runner.run(settings, RunOptions("demo", jobs=1), [pool.one(engine)])


def _truth_files(task: suite.Task) -> set[str]:
    t = task.truth
    return {t["primary"]} if task.kind == "locate" else set(
        t.get("core") or t.get("graded") or t.get("touched"))


def test_every_planned_cell_has_exactly_one_record(demo_run: tuple[Settings, Path]) -> None:
    settings, run_dir = demo_run
    plan = run_plan.plan(settings, "demo")
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete"
    assert meta["corpus"]["pristine_digest_before"] == meta["corpus"]["pristine_digest_after"]
    assert meta["arms"]["devscout"]["unavailable"]
    assert any("devscout" in d for d in meta["deviations"])
    for arm in plan.available:
        for task_id, rep in arm.cells:
            assert (run_dir / "cells" / arm.name / task_id / str(rep) / "record.json").is_file()
        recorded = [p for p in (run_dir / "cells" / arm.name).glob("*/*/record.json")
                    if p.parent.name != mcp.SESSION]
        assert len(recorded) == len(arm.cells)
        if arm.spec.mcp is not None:  # one session per task, and one for the set-up
            sessions = list((run_dir / "cells" / arm.name).glob(f"*/{mcp.SESSION}/record.json"))
            assert len(sessions) == len({task for task, _ in arm.cells}) + 1
        assert (run_dir / "arms" / arm.name / "state.json").is_file()
        assert json.loads((run_dir / "guards" / arm.name / "verdict.json").read_text())
    assert {a.name for a in plan.available} == set(SHIPPED)


def test_every_sandbox_is_verified_before_any_measured_command(
        demo_run: tuple[Settings, Path]) -> None:
    """No container start, corpus copy or guard probe runs beside a measured tool: the
    engine's pre-flight sandbox (one engine is a pool of one) and every arm's sandbox are
    verified before the first cell of any arm starts."""
    settings, run_dir = demo_run
    events = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    verified = {e["arm"]: e["timestamp"] for e in events if e["event"] == "guards_verified"}
    arms = {a.name for a in run_plan.plan(settings, "demo").available}
    assert set(verified) == arms | {"preflight"}
    assert verified["preflight"] < min(v for arm, v in verified.items() if arm != "preflight")
    first_cell = min(json.loads(p.read_text())["started_at"]
                     for p in (run_dir / "cells").rglob("record.json"))
    assert max(verified.values()) < first_cell, (verified, first_cell)


def test_each_arm_finds_expected_files_for_every_kind_it_attempts(
        demo_run: tuple[Settings, Path]) -> None:
    settings, run_dir = demo_run
    plan = run_plan.plan(settings, "demo")
    for arm in plan.available:
        parser = parsers.get_parser(arm.spec.parser)
        found_kinds = set()
        for task in plan.suite.tasks:
            if task.kind not in arm.spec.tasks:
                continue
            cell = run_dir / "cells" / arm.name / task.id / "0"
            parsed = parser.parse((cell / "stdout").read_bytes(), (cell / "stderr").read_bytes(),
                                  task.kind)
            if _truth_files(task) & {row.path for row in parsed.rows}:
                found_kinds.add(task.kind)
        # Every kind the arm attempts among the demo suite's (an edge kind is another suite's).
        attempted = set(arm.spec.tasks) & {t.kind for t in plan.suite.tasks}
        assert found_kinds == attempted, (arm.name, found_kinds)


def test_each_arm_ran_on_bounded_file_systems_that_are_unmounted_after(
        demo_run: tuple[Settings, Path]) -> None:
    """The probe saw every writable mount at or under its declared size; after the run only
    the sparse images are left, nothing is mounted, and reach's line index was saved from
    the pristine copy (never an arm's: git there would run what the arm put in its .git)."""
    settings, run_dir = demo_run
    for arm in run_plan.plan(settings, "demo").available:
        verdict = {r["guard"]: r for r in json.loads(
            (run_dir / "guards" / arm.name / "verdict.json").read_text())}
        assert verdict["mount_sizes"]["ok"], verdict["mount_sizes"]
        assert set(verdict["mount_sizes"]["found"]) == {"/corpus", "/state", "/out"}
        work = run_dir / "work" / arm.name
        assert sorted(p.name for p in work.iterdir()) == ["corpus.ext4", "out.ext4",
                                                          "state.ext4"]
    assert workfs.leftover_mounts(settings.runs_dir) == []
    lines = json.loads((run_dir / "pin-lines.json").read_text())
    assert lines["files"]["README.md"] > 0 and lines["source"] == "pristine"


def test_code_review_graph_keeps_its_state_under_the_state_dir(
        demo_run: tuple[Settings, Path]) -> None:
    _, run_dir = demo_run
    state = json.loads((run_dir / "arms" / "code-review-graph" / "state.json").read_text())
    assert state["state_bytes"] > 0
    setup = json.loads((run_dir / "cells" / "code-review-graph" / "_setup" / "record.json"
                        ).read_text())
    assert setup["outcome"] == "ok", setup


def test_a_killed_run_resumes_with_every_cell_exactly_once(engine: Engine, bench: Settings
                                                           ) -> None:
    settings = _with_demo(bench)
    env = {**os.environ, "SANDBENCH_ROOT": str(settings.bench_root)}
    cmd = [sys.executable, "-m", "orchestrator.cli", "run", "demo", "--arm", "rg"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    records: list[Path] = []
    while time.monotonic() < deadline and len(records) < 6:
        time.sleep(0.2)
        records = list(settings.runs_dir.glob("*/cells/rg/*/*/record.json"))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(records) >= 6, proc.stderr.read().decode()[-2000:]
    (run_dir,) = settings.runs_dir.iterdir()
    # As a crash between two syncs can leave it: a record whose stdout is not what it says.
    torn = records[0].parent
    torn_at = json.loads(records[0].read_text())["started_at"]
    (torn / "stdout").write_bytes(b"lost\n")
    result = subprocess.run([*cmd, "--resume", str(run_dir)], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (rg,) = run_plan.plan(settings, "demo", ["rg"]).available
    recorded = sorted((run_dir / "cells" / "rg").glob("*/*/record.json"))
    assert len(recorded) == len(rg.cells)
    assert not list((run_dir / "cells").rglob(".std*"))
    rerun = transcripts.read_record(torn / "record.json")
    assert rerun.started_at != torn_at and transcripts.streams_intact(torn, rerun)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and len(meta["resumes"]) == 1
    assert cleanup.find(engine, run_id=meta["run_id"]) == []
    assert workfs.leftover_mounts(settings.runs_dir) == []  # the killed run's, unmounted
