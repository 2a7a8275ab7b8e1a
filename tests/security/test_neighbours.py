"""The run as a whole: every hostile arm contained, recorded and audited, and the two
well-behaved arms beside them (rg first, rg-late last) exactly as in a clean run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import parsers
from orchestrator.sandbox import cleanup
from orchestrator.run.transcripts import read_record
from orchestrator.isolation import guards
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.security.conftest import MAIN_REFUSED, TASKS, MainRun, World, attempts_in

pytestmark = pytest.mark.integration


def _rows(run_dir: Path, arm: str) -> dict[str, list]:
    parser = parsers.get_parser("rg")
    rows = {}
    for task in TASKS:
        for rep in (0, 1):
            cell = run_dir / "cells" / arm / task / str(rep)
            parsed = parser.parse((cell / "stdout").read_bytes(), (cell / "stderr").read_bytes(),
                                  "references")
            # rg searches files in parallel: the order of its lines varies run to run.
            rows[f"{task}/{rep}"] = sorted(parsed.rows, key=lambda r: (r.path, r.line or 0))
    return rows


def test_the_run_completes_with_every_cell_recorded(main_run: MainRun) -> None:
    meta = main_run.meta
    assert meta["status"] == "refused-arms" and meta["finished_at"]
    assert {a for a, i in meta["arms"].items() if i.get("refused")} == MAIN_REFUSED
    assert meta["corpus"]["pristine_digest_before"] == meta["corpus"]["pristine_digest_after"]
    for arm, info in meta["arms"].items():
        cells = list((main_run.run_dir / "cells" / arm).glob("*/*/record.json"))
        if info.get("refused"):
            assert cells == [], arm
            continue
        assert len(cells) == 4, arm
        for path in cells:
            read_record(path)  # each one whole and valid
    assert cleanup.find(main_run.world.engine, run_id=meta["run_id"]) == []
    assert main_run.seconds < 240


def test_well_behaved_arms_are_undisturbed(main_run: MainRun, clean_rg: Path) -> None:
    clean = _rows(clean_rg, "rg")
    assert all(clean.values())
    for arm in ("rg", "rg-late"):
        for path in (main_run.run_dir / "cells" / arm).glob("*/*/record.json"):
            record = read_record(path)
            assert record.outcome == "ok" and record.flags == [], (path, record.outcome)
            assert not record.stdout.truncated
        assert _rows(main_run.run_dir, arm) == clean, arm
        state = main_run.state(arm)
        assert state["corpus_changes"] == [] and state["state_bytes"] == 0


def test_an_image_declaring_a_volume_is_refused_before_it_runs_anything(
        main_run: MainRun) -> None:
    refused = main_run.meta["arms"]["h-volume"]["refused"]
    assert refused.startswith("mounts:") and "'/data'" in refused
    folder = main_run.run_dir / "guards" / "h-volume"
    assert not (folder / "probe.json").exists()
    failed = [r["guard"] for r in json.loads((folder / "verdict.json").read_text())
              if not r["ok"]]
    assert failed == ["mounts"]


def test_the_audit_agrees_offline(main_run: MainRun) -> None:
    audited = {a.arm: a for a in guards.audit(main_run.run_dir)}
    assert set(audited) == set(main_run.meta["arms"])
    for arm, result in audited.items():
        assert result.matches_stored, arm
        # Refused: the image's VOLUME (guard mounts), the image's own helper (image_helpers).
        assert result.ok == (arm not in ("h-volume", "h-helper")), (
            arm, guards.failures(result.results))


def test_a_tool_that_stops_its_own_sandbox_does_not_stop_the_run(world: World) -> None:
    """kill -KILL/-TERM/-INT/-HUP/-QUIT/-STOP of the PID 1 helper: refused (EPERM), since
    PID 1 runs as the executor's uid and the tool as another (and PID 1 of its namespace has
    no handler besides, so the kernel would drop them). The container lives on, the same
    PID 1 serves the next cell, and the run goes on to the next arm."""
    run_dir = runner.run(world.settings, RunOptions("stop"), [pool.one(world.engine)])
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    tried = attempts_in(run_dir / "cells" / "h-stop" / TASKS[1] / "0" / "stdout")
    idle, before = tried["PID 1 helper"][1].split(" ", 1)
    assert idle == "1" and before.startswith("state S "), tried["PID 1 helper"]
    signals = [k for k in tried if k.startswith("kill -") and k.endswith(" the PID 1 helper")]
    assert len(signals) == 6, signals
    assert all(tried[k][0] == "EPERM" for k in signals), {k: tried[k] for k in signals}
    assert tried["PID 1 helper after the signals"] == ("ALIVE", before)  # not even stopped
    nxt = attempts_in(run_dir / "cells" / "h-stop" / TASKS[1] / "1" / "stdout")
    assert nxt["PID 1 helper in the next cell"] == ("PID", f"1 {before}")
    first, second = (read_record(run_dir / "cells" / "h-stop" / TASKS[1] / str(rep) /
                                 "record.json") for rep in (0, 1))
    assert (first.outcome, second.outcome) == ("ok", "ok")
    assert first.container_id == second.container_id
    records = sorted((run_dir / "cells" / "rg").glob("*/*/record.json"))
    assert len(records) == 2 and {read_record(p).outcome for p in records} == {"ok"}
