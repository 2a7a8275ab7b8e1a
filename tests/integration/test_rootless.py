"""The demo on a rootless dockerd of the test's own (benchmarks/rootless_engine.py), driven as
root: detected (rootless, its uid mapping read from the kernel), and on this machine's cgroup
v1, where it enforces no memory, pids or CPU limit, every arm refused by name with the fix
(exit 3, run `refused-arms`); with --accept-unbounded-limits the arms run, write where they
do on a rootful engine (their files owned by the host ids the run's user maps to) and get
the golden run's grades, and run.json and the disclosure say the limits were not in force."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.rootless_engine import SUBID_BASE, RootlessEngine, rootless_dockerd
from orchestrator import images, suite
from orchestrator.sandbox import workfs
from orchestrator.cli import app
from orchestrator.engine import Engine, engine_address
from orchestrator.sandbox.spec import default_user
from orchestrator.score import scorer
from orchestrator.settings import Settings, load_settings
from orchestrator.run import pool, ready
from tests.integration.conftest import project_copy

pytestmark = pytest.mark.integration

# The baseline, and two arms whose set-up writes their index under /state.
ARMS = ("rg", "ctags", "code-review-graph")
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"


@pytest.fixture
def demo_images(engine: Engine) -> Settings:
    """The images of the arms this test runs, built and locked under the default bench root
    (only those: the rest of the suite's are not needed here)."""
    settings = load_settings()
    images.build(engine, settings, ["base", *ARMS])
    return settings


@pytest.fixture
def rootless(engine: Engine) -> Iterator[RootlessEngine]:
    if os.geteuid() != 0:
        pytest.fail("this test starts a rootless dockerd for a user of its own: run it as root")
    with rootless_dockerd() as daemon:
        yield daemon
    # Stopped, it leaves nothing: no root mount, no directory, no process of its user.
    assert not daemon.root.exists(), f"{daemon.root} left behind"


def _grades(cells: list[dict]) -> dict[tuple[str, str], tuple]:
    return {(c["arm"], c["task"]): (c["verdict"], c["failure"],
                                    (c["grade"] or {}).get("recall"),
                                    (c["grade"] or {}).get("precision"))
            for c in cells if c["arm"] in ARMS}


def _run(bench: Settings, url: str, *extra: str) -> tuple[int, str, str, Path]:
    argv = ["run", "demo", *(a for arm in ARMS for a in ("--arm", arm)), "--json",
            "--bench-root", str(bench.bench_root), *extra]
    result = CliRunner().invoke(app, argv, env={"DOCKER_HOST": url, "SANDBENCH_PROJECT": str(
        bench.project_root), "SANDBENCH_ROOT": str(bench.bench_root)})
    out = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.exit_code, result.stdout, result.stderr, Path(out.get("run_dir", "/"))


def test_a_rootless_engine_on_cgroup_v1_is_refused_by_name_and_with_the_override_grades_as_rootful(
        engine: Engine, demo_images: Settings, rootless: RootlessEngine) -> None:
    began = time.monotonic()
    # The bench root under the engine's shared root: the engine sees the arms' mounts there.
    # A copy of the project, its demo suite sealed again: what this change's scorer sources
    # are, whatever the checkout's seal says (the seal's own tests check that one).
    bench = project_copy(demo_images, rootless.root)
    suite.seal(suite.load_suite(bench.suites_dir, "demo"), bench)
    (shared,) = pool.connect([engine_address()])
    (member,) = pool.connect([rootless.url])
    assert (shared.facts["rootless"], member.facts["rootless"]) == (False, True)
    assert member.facts["userns"] == {"remap": True}
    limits = member.facts["limits"]
    assert (limits["cgroup_version"], limits["cgroup_driver"]) == ("1", "none"), limits
    assert not (limits["memory"] or limits["pids"] or limits["cpu"])
    ready.bring_images(member, [shared], bench, ["base", *ARMS], rootless.root / "moved")

    code, _, stderr, run_dir = _run(bench, rootless.url)
    assert code == 3, stderr
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "refused-arms"
    assert meta["engines"][member.id]["rootless"] is True
    for arm in ARMS:
        why = meta["arms"][arm]["refused"]
        assert why.startswith("engine_limits: expected memory, pids and cpu limits enforced"), why
        assert "found a rootless engine on cgroup v1 with cgroup driver none" in why
        assert "fix: a rootful engine, or cgroup v2" in why and "Delegate=memory pids cpu" in why
        assert "--accept-unbounded-limits" in why
        assert f"arm {arm} refused: engine_limits" in stderr
        assert not (run_dir / "cells" / arm).exists(), "a refused arm ran a command"
    assert "sandbox check" not in stderr  # the engine's fix, not a guard's: no check finds it
    print(f"\nrefusal: exit {code} after {time.monotonic() - began:.0f} s\n{stderr}")

    code, _, stderr, run_dir = _run(bench, rootless.url, "--accept-unbounded-limits")
    assert code == 0, stderr
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete"
    uid, gid = (int(x) for x in default_user().split(":"))
    the_map = meta["engines"][member.id]["userns"]
    # Container uid 0 is the engine's user; 1 and up its subordinate range.
    assert the_map["uid_map"] == [[0, rootless.uid, 1], [1, SUBID_BASE, 65536]], the_map
    accepted = [d for d in meta["deviations"] if "--accept-unbounded-limits" in d]
    assert accepted == [f"engine {member.id} is a rootless engine on cgroup v1 with cgroup "
                        "driver none that enforces no memory, pids, cpu limit ("
                        + "; ".join(limits["warnings"]) + "): the user accepted unbounded "
                        "limits (--accept-unbounded-limits), so its arms ran without their "
                        "declared memory, pids, cpu limits"]
    for arm in ARMS:
        verdict = json.loads((run_dir / "guards" / arm / "verdict.json").read_text())
        assert verdict and all(g["ok"] for g in verdict), [g for g in verdict if not g["ok"]]
    with workfs.opened(run_dir / "work" / "ctags") as work:
        for made in (work / "state" / "tags", work / "state", work / "corpus" / ".git"):
            st = os.lstat(made)
            assert (st.st_uid, st.st_gid) == (SUBID_BASE + uid - 1, SUBID_BASE + gid - 1), made

    scores = scorer.score_run(run_dir, bench.suite_dir("demo"), update=True)
    golden = json.loads((GOLDEN / "scores.json").read_text())
    assert _grades(scores["cells"]) == _grades(golden["cells"])
    assert len(_grades(scores["cells"])) > 10
    said = scores["environment"]["deviations"]
    assert accepted[0] in said
    assert any(f"engine {member.id} ran its containers in a user namespace of its own (a "
               "rootless engine)" in d for d in said), said
    print(f"override: {len(_grades(scores['cells']))} cells as golden; whole test "
          f"{time.monotonic() - began:.0f} s")
