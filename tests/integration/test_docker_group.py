"""The demo as a user who is not root but is in the docker group: the README's main command
(`scripts/demo`) from a checkout that user owns, with a venv made from Debian's python (the
project's interpreter may live where only root may read), against the shared engine
(benchmarks/docker_group.py makes the user's checkout and runs commands as that user).

Loop mounts need root, so every arm gets file systems the engine makes (the engine agent's,
as for an engine of another host): the run says so in run.json, every guard passes, every
file of the run is the user's, and every arm gets the golden run's grades. What the run left
on the engine is then found and removed by `sandbench cleanup`'s own code, by its id alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.docker_group import (USER, NeedsRoot, as_the_user, remove_work_volume,
                                     users_home)
from orchestrator.engine import Engine
from orchestrator.score import scorer
from orchestrator.settings import Settings

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"
DEMO_TIMEOUT_S = 1500


def _grades(cells: list[dict]) -> dict[tuple[str, str], tuple]:
    return {(c["arm"], c["task"]): (c["verdict"], c["failure"],
                                    (c["grade"] or {}).get("recall"),
                                    (c["grade"] or {}).get("precision"))
            for c in cells}


@pytest.fixture
def home_of_the_user(built: Settings) -> Iterator[Path]:
    try:
        with users_home(built) as top:
            yield top
    except NeedsRoot as exc:
        pytest.fail(str(exc))


def test_a_member_of_the_docker_group_runs_the_demo_with_the_golden_grades(
        engine: Engine, built: Settings, home_of_the_user: Path) -> None:
    top = home_of_the_user
    demo = as_the_user(top, ["scripts/demo"], DEMO_TIMEOUT_S)
    assert demo.returncode == 0, demo.stderr[-3000:]
    run_dir = Path(demo.stdout.strip().splitlines()[-1].removeprefix("run directory: "))
    assert run_dir.parent == top / "bench" / "runs", demo.stdout[-500:]
    meta = json.loads((run_dir / "run.json").read_text())
    try:
        assert meta["status"] == "complete"
        (entry,) = meta["engines"].values()
        assert entry["placement"] == "engine-made" and entry["on_this_host"] is True
        assert not list(run_dir.rglob("*.ext4"))  # nothing loop-mounted here
        ran = {arm for arm, a in meta["arms"].items() if not a.get("unavailable")}
        assert ran >= {"rg", "ctags", "code-review-graph"}, ran
        for arm in ran:
            verdict = json.loads((run_dir / "guards" / arm / "verdict.json").read_text())
            assert verdict and all(g["ok"] for g in verdict), [g for g in verdict if not g["ok"]]
        # Every file the run wrote here is the user's: nothing needed root.
        assert {p.stat().st_uid for p in run_dir.rglob("*")} == {USER}

        settings = Settings(project_root=top / "checkout", bench_root=top / "bench")
        found = _grades(scorer.score_run(run_dir, settings.suite_dir("demo"),
                                         update=False)["cells"])
        golden = _grades(json.loads((GOLDEN / "scores.json").read_text())["cells"])
        assert {k: v for k, v in found.items() if k[0] in ran} == {
            k: v for k, v in golden.items() if k[0] in ran}
    finally:
        removed = remove_work_volume(engine, built, meta["run_id"])
    assert [v.id for v in removed] == [f"sandbench-work-{meta['run_id']}"]
    assert not engine.list_volumes(f"sandbench.run={meta['run_id']}")
