"""Once an arm's sandbox dies, its later cells are recorded not attempted, never run: the
plain path and the MCP one (the real engine's case: tests/integration/test_sandbox_death.py)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from orchestrator import arms, suite
from orchestrator.run import transcripts
from orchestrator.sandbox import mcp
from orchestrator.run import cells
from orchestrator.run.plan import ArmPlan
from orchestrator.run.document import SETUP_CELL
from orchestrator.sandbox.container import Sandbox
from orchestrator.run.transcripts import ExecRecord, StreamInfo

REPO = Path(__file__).resolve().parents[2]
EMPTY = StreamInfo("stdout", 0, 0, False, hashlib.sha256(b"").hexdigest())


def _died(argv: list[str]) -> ExecRecord:
    return ExecRecord(
        run_id="r", arm="a", argv=argv, env={}, workdir="/corpus", user="65532:65532",
        image_id="sha256:" + "a" * 64, container_id="c" * 64,
        limits={"memory_bytes": 1, "pids": 1, "engine_pids": 76, "cpus": 1.0, "tmp_bytes": 1,
                "timeout_s": 1, "grace_s": 1, "cap_bytes": 1},
        started_at="2026-01-01T00:00:00Z",
        timing={"wall_ns": None, "user_us": None, "sys_us": None, "maxrss_kb": None,
                "host_bracket_ns": 5},
        exit={"exit_code": None, "signal": None, "timed_out": False, "host_timed_out": False,
              "oom_killed": False, "oom_kills": None, "spawn_error": None, "stray_killed": None,
              "sandbox": {"exit_code": 2, "oom_killed": False, "error": ""}},
        stdout=EMPTY, stderr=StreamInfo("stderr", 0, 0, False, EMPTY.sha256),
        helper={"version": None, "exit_code": None, "errors": [], "protocol_error": "ended",
                "stderr_tail": ""},
        outcome="sandbox-died", runtime="runsc")


class _DiesOnFirstExec:
    """A sandbox whose first command kills it; every later one would find it dead."""

    not_attempted = Sandbox.not_attempted

    def __init__(self) -> None:
        self.execs: list[list[str]] = []
        self.spec = SimpleNamespace(workdir="/corpus")

    def exec(self, argv: list[str], cell_dir: Path, **_: Any) -> ExecRecord:
        assert not self.execs, "a command ran in a sandbox that had died"
        self.execs.append(argv)
        record = _died(argv)
        cell_dir.mkdir(parents=True, exist_ok=True)
        for name in ("stdout", "stderr"):
            (cell_dir / name).write_bytes(b"")
        transcripts.write_record(cell_dir, record)
        return record


def _run(tmp_path: Path, arm: arms.ArmSpec) -> tuple[Any, ArmPlan]:
    the_suite = suite.load_suite(REPO / "suites", "demo")
    kinds = set(arm.tasks) | set(arm.calls)
    tasks = [t.id for t in the_suite.tasks if t.kind in kinds][:3]
    plan = ArmPlan(arm.name, arm, "sha256:" + "a" * 64, "1", None,
                   tuple((t, rep) for t in tasks for rep in range(the_suite.reps + 1)))
    progress: list[tuple[str, str]] = []
    r = SimpleNamespace(run_dir=tmp_path, plan=SimpleNamespace(suite=the_suite),
                        stop=threading.Event(),
                        progress=lambda arm, cell, outcome: progress.append((cell, outcome)))
    return r, plan


@pytest.mark.parametrize("name", ["rg", "serena"])
def test_after_the_sandbox_died_no_command_runs_and_every_cell_says_why(
        tmp_path: Path, name: str) -> None:
    (arm,) = arms.load_arms(REPO / "arms", [name])
    r, plan = _run(tmp_path, arm)
    box = _DiesOnFirstExec()
    cells.measure_cells(r, plan, box)  # type: ignore[arg-type]
    assert len(box.execs) == 1
    first = SETUP_CELL if arm.setup is not None or arm.mcp is not None else \
        f"{plan.cells[0][0]}/{plan.cells[0][1]}"
    # Each cell's record (an MCP task's session record aside, which its REP records repeat).
    records = [transcripts.read_record(p)
               for p in sorted((tmp_path / "cells" / name).rglob("record.json"))
               if p.parent.name != mcp.SESSION]
    assert records and all(rec.outcome == "sandbox-died" for rec in records)
    later = [rec for rec in records if "not-attempted" in rec.flags]
    cells_run = {(t, rep) for t, rep in plan.cells}
    assert len(later) == len(cells_run) - (0 if first == SETUP_CELL else 1)
    for rec in later:
        assert rec.exit["sandbox"] == {"exit_code": 2, "oom_killed": False, "error": "",
                                       "died_in": first}
        assert rec.stdout.bytes_kept == 0 and rec.timing["wall_ns"] is None
