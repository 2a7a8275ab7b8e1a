"""Faults of the orchestrator, the tools, the disk and the engine lose nothing: every cell
ends up recorded exactly once, classified when it failed, and a stopped run resumes."""

from __future__ import annotations

import json
import re
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.second_engine import SecondEngine
from orchestrator import suite
from orchestrator.run import transcripts
from orchestrator.sandbox import cleanup, mcp
from orchestrator.engine import Engine, engine_address
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.run import plan as run_plan, pool, ready, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import project_copy

pytestmark = pytest.mark.integration


def _cli(settings: Settings, *args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator.cli", *args]


def _env(settings: Settings) -> dict[str, str]:
    return {**os.environ, "SANDBENCH_ROOT": str(settings.bench_root),
            "SANDBENCH_PROJECT": str(settings.project_root)}


def _only_arms(settings: Settings, arms: list[str], baseline: str = "rg") -> None:
    """Narrow the copied demo suite to `arms` and seal it again, without its predictions
    (they name the demo's arms: a narrowed copy states none)."""
    (settings.suite_dir("demo") / "predictions.toml").unlink(missing_ok=True)
    path = settings.suite_dir("demo") / "suite.toml"
    text = path.read_text()
    start = text.index("arms = [")
    end = text.index("]", start) + 1
    text = text[:start] + "arms = " + json.dumps(arms) + text[end:]
    # The tool under test must be one of the arms: a narrowed suite without it names none.
    tool = re.search(r'^tool_under_test = "([^"]*)"\n', text, re.M)
    if tool and tool[1] not in arms:
        text = text.replace(tool[0], "")
    path.write_text(text)
    suite.seal(suite.load_suite(settings.suites_dir, "demo"), settings)


def _grades(run_dir: Path, settings: Settings) -> dict[tuple[str, str], tuple]:
    scores = scorer.score_run(run_dir, settings.suite_dir("demo"), update=True)
    return {(c["arm"], c["task"]): (c["verdict"], c["failure"], (c["grade"] or {}).get("recall"),
                                    (c["grade"] or {}).get("precision"))
            for c in scores["cells"]}


def _assert_each_cell_once(run_dir: Path, settings: Settings) -> None:
    plan = run_plan.plan(settings, "demo")
    for arm in plan.available:
        sessions = sorted((run_dir / "cells" / arm.name).glob(f"*/{mcp.SESSION}/record.json"))
        records = sorted(set((run_dir / "cells" / arm.name).glob("*/*/record.json"))
                         - set(sessions))
        assert len(records) == len(arm.cells), arm.name
        for path in records + sessions:
            transcripts.read_record(path)  # every record whole
    assert not list((run_dir / "cells").rglob(".*.tmp"))
    assert not list((run_dir / "cells").rglob(".std*"))


def test_sigkill_at_ten_seeded_points_then_resume_equals_an_unbroken_run(
        engine: Engine, built: Settings, tmp_path: Path) -> None:
    settings = project_copy(built, tmp_path)
    _only_arms(settings, ["rg", "ast-grep"])
    rng = random.Random(20261202)
    points = sorted(round(rng.uniform(0.8, 9.0), 2) for _ in range(10))
    run_dir = None
    for delay in points:
        args = ["run", "demo"] + (["--resume", str(run_dir)] if run_dir else [])
        proc = subprocess.Popen(_cli(settings, *args), env=_env(settings),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if run_dir is None:
            made = sorted(settings.runs_dir.glob("run-demo-*"))
            run_dir = made[0] if made and (made[0] / "run.json").exists() else None
            for partial in made[1:] if run_dir else made:
                shutil.rmtree(partial)
    assert run_dir is not None, "no kill point came after the run directory was created"
    done = subprocess.run(_cli(settings, "run", "demo", "--resume", str(run_dir)),
                          env=_env(settings), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and len(meta["resumes"]) >= 1
    _assert_each_cell_once(run_dir, settings)
    assert cleanup.find(engine, run_id=meta["run_id"]) == []
    unbroken = runner.run(settings, RunOptions("demo"), [pool.one(engine)])
    assert _grades(run_dir, settings) == _grades(unbroken, settings)


FAULTY_ARM = """
description = "a tool that hangs while indexing, fails some tasks and prints garbage"
image = "rg"
parser = "rg"
[env]
HOME = "/state/home"
[setup]
argv = ["sh", "-c", "trap '' TERM; sleep 600"]
timeout_s = 2
[tasks.references]
argv = ["sh", "-c", "echo this is not a row of rg output"]
[tasks.impact]
argv = ["sh", "-c", "echo partial >&2; exit 3"]
[tasks.locate]
argv = ["rg", "-n", "--no-require-git", "-e", "zzz-never-matches", "."]
[not_attempted.e2e-retrieval]
reason = "a test arm"
source = "tests/integration/test_faults.py"
"""


def test_a_hang_a_failure_and_garbage_are_classified_and_the_run_goes_on(
        engine: Engine, built: Settings, tmp_path: Path) -> None:
    settings = project_copy(built, tmp_path)
    (settings.arms_dir / "faulty.toml").write_text(FAULTY_ARM)
    _only_arms(settings, ["rg", "faulty"])
    run_dir = runner.run(settings, RunOptions("demo"), [pool.one(engine)])
    setup = transcripts.read_record(run_dir / "cells" / "faulty" / "_setup" / "record.json")
    assert setup.outcome == "timeout" and setup.exit["timed_out"]
    scores = scorer.score_run(run_dir, settings.suite_dir("demo"))
    faulty = [c for c in scores["cells"] if c["arm"] == "faulty"]
    by_kind = {k: {c["failure"] for c in faulty if c["kind"] == k} for k in
               ("references", "impact", "locate")}
    assert by_kind["references"] == {"parse-error"}
    assert by_kind["impact"] == {"nonzero-exit"}
    assert all(c["verdict"] == "wrong" for c in faulty if c["kind"] in ("references", "impact"))
    assert {c["verdict"] for c in faulty if c["kind"] == "e2e-retrieval"} == {"not_attempted"}
    rg = [c for c in scores["cells"] if c["arm"] == "rg"]
    assert rg and all(c["failure"] is None for c in rg)


def test_a_full_bench_disk_stops_cleanly_and_resumes(engine: Engine, built: Settings,
                                                      tmp_path: Path) -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root to mount a small tmpfs bench root")
        pytest.skip("needs root to mount a tmpfs")
    mount = tmp_path / "small"
    mount.mkdir()
    # Room for the project copy, the demo corpus, the helper and a whole rg run once the
    # filler is gone (about 8 MB); the filler leaves 400 KiB of it free for the first run.
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
    try:
        settings = project_copy(built, mount)
        _only_arms(settings, ["rg"])
        # This bench holds the demo suite only: another suite's compiler truth (rust-edges'
        # is 1.8 MB) would eat the margin the resume needs once the filler is gone.
        for other in settings.suites_dir.iterdir():
            if other.name not in ("demo", "tools"):
                shutil.rmtree(other)
        free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
        filler = mount / "filler"
        with open(filler, "wb") as fh:
            fh.write(b"\0" * max(free - 400 * 1024, 0))
        result = subprocess.run(_cli(settings, "run", "demo"), env=_env(settings),
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 1, result.stderr[-2000:]
        assert "is full" in result.stderr and "--resume" in result.stderr
        assert "Traceback" not in result.stderr
        (run_dir,) = settings.runs_dir.glob("run-demo-*")
        for path in (run_dir / "cells").rglob("record.json"):
            transcripts.read_record(path)  # nothing half-written
        filler.unlink()
        done = subprocess.run(_cli(settings, "run", "demo", "--resume", str(run_dir)),
                              env=_env(settings), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        _assert_each_cell_once(run_dir, settings)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_an_engine_restart_mid_run_loses_no_cell(engine: Engine, built: Settings,
                                                 second_engine: SecondEngine,
                                                 tmp_path: Path) -> None:
    """The run is on a dockerd of this test's own (the `second_engine` fixture), holding the
    locked images copied from the shared engine; that dockerd is stopped by its own pid and
    started again mid-run. The shared engine is never signalled."""
    settings = project_copy(built, tmp_path)
    _only_arms(settings, ["rg"])
    members = pool.connect([second_engine.url, engine_address()])
    ready.bring_images(members[0], members, settings, ["base", "rg"],
                             settings.bench_root / "transfer")
    env = {**_env(settings), "DOCKER_HOST": second_engine.url}
    env.pop("SANDBENCH_ENGINES", None)
    proc = subprocess.Popen(_cli(settings, "run", "demo"), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and \
            len(list(settings.runs_dir.glob("*/cells/rg/*/*/record.json"))) < 8:
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before the engine could be restarted under it"
    second_engine.restart()
    _, stderr = proc.communicate(timeout=600)
    (run_dir,) = settings.runs_dir.glob("run-demo-*")
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["arms"]["rg"]["engine"] == members[0].id  # it ran on the restarted engine
    if proc.returncode != 0:
        assert "--resume" in stderr and "Traceback" not in stderr, stderr[-2000:]
        done = subprocess.run(_cli(settings, "run", "demo", "--resume", str(run_dir)),
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    _assert_each_cell_once(run_dir, settings)
    assert cleanup.find(Engine.connect(address=second_engine.url), run_id=meta["run_id"]) == []
