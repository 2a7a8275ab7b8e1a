"""The demo on an engine that remaps its containers' ids (`dockerd --userns-remap`): a
dockerd of the test's own (its own roots, socket and bridge), given only the images of the
arms it runs. The remap is detected and read from the kernel, recorded in run.json and in the
results' disclosure; the arms pass their guards, write where they did on the default engine
(their files owned by the remapped ids on this host) and get the golden run's grades."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.second_engine import REMAP_BASE, REMAP_COUNT, SecondEngine
from orchestrator import corpus
from orchestrator.sandbox import workfs
from orchestrator.cli import app
from orchestrator.engine import Engine, engine_address
from orchestrator.sandbox.spec import default_user
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.run import pool, ready, runner
from orchestrator.run.options import RunOptions

pytestmark = pytest.mark.integration

# The baseline, and an arm whose set-up writes its index under /state.
ARMS = ("rg", "ctags")
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"


def _grades(cells: list[dict]) -> dict[tuple[str, str], tuple]:
    return {(c["arm"], c["task"]): (c["verdict"], c["failure"],
                                    (c["grade"] or {}).get("recall"),
                                    (c["grade"] or {}).get("precision"))
            for c in cells if c["arm"] in ARMS}


def test_the_demo_on_a_userns_remap_engine_is_recorded_and_grades_as_the_golden_run(
        engine: Engine, bench: Settings, remapped_engine: SecondEngine,
        tmp_path: Path) -> None:
    corpus.fetch(corpus.load_lock(corpus.lock_path(bench))["demo"], bench)
    (shared,) = pool.connect([engine_address()])
    (remapped,) = pool.connect([remapped_engine.url])
    assert shared.facts["userns"] == {"remap": False}
    assert remapped.facts["userns"] == {"remap": True}
    ready.bring_images(remapped, [shared], bench, ["base", *ARMS], tmp_path / "moved")

    checked = CliRunner().invoke(app, ["run", "demo", "--arm", "rg", "--arm", "ctags",
                                       "--engine", remapped_engine.url, "--dry-run", "--json",
                                       "--bench-root", str(bench.bench_root)])
    assert checked.exit_code == 0, checked.output
    assert [e["userns_remap"] for e in json.loads(checked.stdout)["engines"]] == [True]

    run_dir = runner.run(bench, RunOptions("demo", arms=tuple(ARMS)), [remapped])

    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete"
    the_map = [[0, REMAP_BASE, REMAP_COUNT]]
    assert meta["engines"][remapped.id]["userns"] == {"remap": True, "uid_map": the_map,
                                                     "gid_map": the_map}
    for arm in ARMS:
        assert meta["arms"][arm]["engine"] == remapped.id
        verdict = json.loads((run_dir / "guards" / arm / "verdict.json").read_text())
        assert verdict and all(g["ok"] for g in verdict), [g for g in verdict if not g["ok"]]

    # Read back on the host as on the default engine (the golden run's ctags wrote its tags).
    golden_state = json.loads((GOLDEN / "arms" / "ctags" / "state.json").read_text())
    state = json.loads((run_dir / "arms" / "ctags" / "state.json").read_text())
    assert state["state_files"] == golden_state["state_files"] != []
    # What the tool wrote, and the places made for it, are the run's user's remapped ids.
    uid, gid = (int(x) for x in default_user().split(":"))
    with workfs.opened(run_dir / "work" / "ctags") as work:
        for made in (work / "state" / "tags", work / "state", work / "corpus" / ".git"):
            st = os.lstat(made)
            assert (st.st_uid, st.st_gid) == (REMAP_BASE + uid, REMAP_BASE + gid), made

    scores = scorer.score_run(run_dir, bench.suite_dir("demo"), update=True)
    golden = json.loads((GOLDEN / "scores.json").read_text())
    assert _grades(scores["cells"]) == _grades(golden["cells"])
    assert len(_grades(scores["cells"])) > 10
    remap_lines = [d for d in scores["environment"]["deviations"] if "userns-remap" in d]
    assert remap_lines == [
        f"engine {remapped.id} ran its containers in a user namespace of its own "
        f"(userns-remap): container uids 0-{REMAP_COUNT - 1} as {REMAP_BASE}-"
        f"{REMAP_BASE + REMAP_COUNT - 1}, gids 0-{REMAP_COUNT - 1} as {REMAP_BASE}-"
        f"{REMAP_BASE + REMAP_COUNT - 1} of the host; what an arm wrote is owned by those "
        "host ids"]

    # Without --engine (that engine the run's default one) the mapping is read as well.
    default_run = runner.run(bench, RunOptions("demo", arms=("ctags",)),
                             [pool.one(remapped.engine)])
    meta = json.loads((default_run / "run.json").read_text())
    assert meta["status"] == "complete"
    assert meta["engines"][remapped.id]["userns"]["uid_map"] == the_map
    again = scorer.score_run(default_run, bench.suite_dir("demo"), update=True)["cells"]
    assert {k: v for k, v in _grades(again).items() if k[0] == "ctags"} == {
        k: v for k, v in _grades(golden["cells"]).items() if k[0] == "ctags"}
