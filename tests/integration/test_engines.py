"""A run across two Docker engines: a second dockerd started here (its own data root, exec
root, pid file, socket and bridge; no iptables, so it touches nothing of the shared
engine, whose docker0 must outlive it), the demo suite spread over both, the second engine killed
mid-run, the run resumed on the first alone: grades and payload bytes equal to a one-engine run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.second_engine import SecondEngine
from orchestrator import corpus
from orchestrator.engine import Engine, engine_address
from orchestrator.errors import SandbenchError
from orchestrator.settings import Settings
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import grades_and_bytes

pytestmark = pytest.mark.integration


def test_two_engines_one_lost_mid_run_resume_on_the_other_equals_one_engine(
        engine: Engine, bench: Settings, second_engine: SecondEngine) -> None:
    corpus.fetch(corpus.load_lock(corpus.lock_path(bench))["demo"], bench)
    one_engine = runner.run(bench, RunOptions("demo"), [pool.one(engine)])

    members = pool.connect([engine_address(), second_engine.url])
    first, second = (m.id for m in members)
    seen: dict[str, int] = {}

    def kill_the_second_engine_mid_arm(arm: str, cell: str, outcome: str) -> None:
        meta = json.loads((run_dir() / "run.json").read_text())
        if meta["arms"][arm].get("engine") != second:
            return
        seen[arm] = seen.get(arm, 0) + 1
        if seen[arm] == 6:
            second_engine.kill()

    def run_dir() -> Path:
        return next(p for p in bench.runs_dir.glob("run-demo-*") if p != one_engine)

    with pytest.raises(SandbenchError) as caught:
        runner.run(bench, RunOptions("demo"), members, progress=kill_the_second_engine_mid_arm)
    assert seen, f"no cell ran on the second engine: {caught.value.render()}"
    assert "--resume" in (caught.value.fix or "")
    two = run_dir()
    meta = json.loads((two / "run.json").read_text())
    assert meta["status"] == "failed"
    assert set(meta["engines"]) == {first, second}
    moved = list(seen)
    assert meta["engines"][second]["images_imported_s"]  # the fresh engine got the images

    # Resume on the first engine alone: the lost engine's arms move there.
    runner.run(bench, RunOptions("demo", resume=two), pool.connect([engine_address()]))
    meta = json.loads((two / "run.json").read_text())
    assert meta["status"] == "complete"
    for arm in moved:
        assert meta["arms"][arm]["engine"] == first
        ran_on = {json.loads(p.read_text())["engine"]
                  for p in (two / "cells" / arm).glob("*/*/record.json")}
        assert ran_on == {first, second}  # some cells on each: every record names its engine
    resumed, unbroken = grades_and_bytes(two, bench), grades_and_bytes(one_engine, bench)
    assert {k: v[:4] for k, v in resumed.items()} == {k: v[:4] for k, v in unbroken.items()}
    # Payload bytes too, but for code-review-graph: its node ids come from its own index
    # build and differ between any two builds (18,491 and 18,507 bytes for one answer, both
    # on the first engine), which says nothing about engines.
    assert {k: v for k, v in resumed.items() if k[0] != "code-review-graph"} == {
        k: v for k, v in unbroken.items() if k[0] != "code-review-graph"}
    assert meta["arms"]["code-review-graph"]["engine"] == first
