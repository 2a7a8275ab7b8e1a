"""A sandbox that dies mid-run (under gVisor: its pids or memory limit reached, a crashed
sentry; anywhere: killed from the host) fails that arm's remaining cells as `sandbox-died`,
and the run and the other arms go on."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest

from orchestrator import labels
from orchestrator.run import transcripts
from orchestrator.sandbox import runtimes
from orchestrator.engine import Engine
from orchestrator.sandbox.container import Sandbox
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import project_copy
from tests.integration.test_faults import _only_arms
from tests.integration.test_sandbox import _spec

pytestmark = pytest.mark.integration

# 300 processes at once: past an engine limit of a few arms' pids under runc (fork fails with
# EAGAIN), past gVisor's own threads under runsc (its sandbox dies: exit 2, output lost).
BOMB = ["sh", "-c", "i=0; while [ $i -lt 300 ]; do sleep 5 & i=$((i+1)); done; wait"]


@pytest.mark.parametrize("runtime", [runtimes.RUNC, runtimes.RUNSC])
def test_a_fork_burst_past_the_pids_limit(engine: Engine, bench: Settings, tmp_path: Path,
                                          runtime: str) -> None:
    """Under runc the tool's fork fails and the sandbox lives on; under runsc the sandbox
    dies, and the record says so with the container's end as the engine reported it."""
    if runtime == runtimes.RUNSC and not runtimes.engine_has(engine.info(), runtime):
        pytest.skip("the engine has no runsc runtime registered: " + runtimes.REGISTER_FIX)
    spec = dataclasses.replace(_spec(bench, "rg", tmp_path, pids=4), runtime=runtime)
    with Sandbox(engine, spec) as box:
        burst = box.exec(BOMB, tmp_path / "burst", timeout_s=60)
        after = box.exec(["true"], tmp_path / "after", timeout_s=30)
        stored = transcripts.read_record(tmp_path / "burst" / "record.json")
    assert stored == burst
    if runtime == runtimes.RUNC:
        assert (burst.outcome, after.outcome) == ("nonzero-exit", "ok")
        assert "sandbox" not in burst.exit
        return
    assert burst.limits["pids"] == 4
    assert burst.limits["engine_pids"] == runtimes.engine_pids(runtime, 4)
    assert burst.outcome == after.outcome == "sandbox-died"
    assert burst.exit["sandbox"]["exit_code"] != 0
    assert burst.exit["sandbox"]["oom_killed"] is False
    assert burst.exit["exit_code"] is None  # the tool's own end is lost with the sandbox


DYING_ARM = """
description = "a tool whose sandbox is killed from the host while it sets up"
image = "rg"
parser = "rg"
[env]
HOME = "/state/home"
[setup]
argv = ["sleep", "120"]
timeout_s = 150
[tasks.locate]
argv = ["rg", "-n", "--no-require-git", "-e", "zzz-never-matches", "."]
[tasks.references]
argv = ["rg", "-n", "--no-require-git", "-e", "zzz-never-matches", "."]
[tasks.impact]
argv = ["rg", "-n", "--no-require-git", "-e", "zzz-never-matches", "."]
[not_attempted.e2e-retrieval]
reason = "a test arm"
source = "tests/integration/test_sandbox_death.py"
"""


def _kill_when_set_up_begins(engine: Engine, runs: Path, arm: str, killed: list[str]) -> None:
    """Kill this test's run's container of `arm` once its set-up command has started."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        for setup in runs.glob(f"*/cells/{arm}/_setup"):
            run_id = json.loads((setup.parents[2] / "run.json").read_text())["run_id"]
            time.sleep(2)  # the set-up's sleep is running by now
            for c in engine.list_containers(f"{labels.LABEL_RUN}={run_id}"):
                if c["Labels"].get(labels.LABEL_ARM) == arm:
                    engine.kill(c["Id"])
                    killed.append(c["Id"])
            return
        time.sleep(0.2)


def test_a_sandbox_killed_mid_run_fails_its_arms_cells_and_the_run_goes_on(
        engine: Engine, built: Settings, tmp_path: Path) -> None:
    settings = project_copy(built, tmp_path)
    (settings.arms_dir / "dying.toml").write_text(DYING_ARM)
    _only_arms(settings, ["rg", "dying"])
    killed: list[str] = []
    killer = threading.Thread(target=_kill_when_set_up_begins,
                              args=(engine, settings.runs_dir, "dying", killed), daemon=True)
    killer.start()
    run_dir = runner.run(settings, RunOptions("demo"), [pool.one(engine)])
    killer.join(timeout=5)
    assert len(killed) == 1
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    cells = run_dir / "cells" / "dying"
    setup = transcripts.read_record(cells / "_setup" / "record.json")
    assert setup.outcome == "sandbox-died" and setup.container_id == killed[0]
    assert setup.exit["sandbox"]["exit_code"] == 137 and "died_in" not in setup.exit["sandbox"]
    later = [transcripts.read_record(p) for p in sorted(cells.glob("*/*/record.json"))]
    assert later and all(r.outcome == "sandbox-died" and r.flags == ["not-attempted"]
                         and r.exit["sandbox"]["died_in"] == "_setup" for r in later)
    scores = scorer.score_run(run_dir, settings.suite_dir("demo"))
    dying = [c for c in scores["cells"] if c["arm"] == "dying" and c["kind"] != "e2e-retrieval"]
    assert dying and {(c["verdict"], c["failure"]) for c in dying} == {
        ("wrong", "sandbox-died")}
    rg = [c for c in scores["cells"] if c["arm"] == "rg"]
    assert rg and all(c["failure"] is None for c in rg)
