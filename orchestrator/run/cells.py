"""The measuring stage: a prepared arm's steps not yet recorded (`measure.steps`: its set-up
and every cell, or every MCP session), run in its sandbox by one loop whatever reaches the
tool; then, with every process of the arm's gone, what it wrote disclosed.

A cell counts as done only when its record.json exists and describes the streams beside
it, so a resume runs exactly the cells without one, and an interrupted cell leaves nothing
behind that could be mistaken for one. An exec arm's cells are made durable in one sync at
the end of the arm, not one fsync each.
"""

from __future__ import annotations

from typing import Any

from orchestrator import disclosure
from orchestrator.errors import SandbenchError
from orchestrator.fsutil import sync_filesystem
from orchestrator.run import measure
from orchestrator.run.options import RunContext
from orchestrator.run.plan import ArmPlan
from orchestrator.run.prepare import Prepared
from orchestrator.sandbox.container import Sandbox
from orchestrator.run.transcripts import ExecRecord


class SandboxLost(SandbenchError):
    """The container or the engine went away mid-run: stop, keep what is recorded, resume."""


def _stop_if_lost(r: RunContext, a: ArmPlan, rec: ExecRecord) -> None:
    if rec.outcome == "sandbox-unavailable":
        raise SandboxLost(f"the sandbox of arm {a.name!r} went away during a cell on engine "
                          f"{r.member(a.name).url}",
                          why="the container or the engine stopped; the cell's record says "
                              "sandbox-unavailable and a resume runs it again",
                          fix=f"once the engine answers: sandbench run {r.plan.suite.name} "
                              f"--resume {r.run_dir}")


def run_arm(r: RunContext, p: Prepared) -> dict[str, Any]:
    """One prepared arm: set-up and every cell; then, with every process of the arm's gone
    and its cells made durable at once, what it wrote is disclosed. Its file systems are
    taken down on the way out, whatever happened."""
    with p.exits:
        if p.refused is not None:
            return {"refused": p.refused}
        assert p.box is not None and p.before is not None
        measure_cells(r, p.arm, p.box)
        p.box.remove()
        sync_filesystem(r.run_dir)
        state = disclosure.disclose(r.run_dir / "arms" / p.arm.name / "state.json", p.before,
                                    p.snapshot)
    return {"state_bytes": state["state_bytes"] + state["corpus_added_bytes"]}


def measure_cells(r: RunContext, a: ArmPlan, box: Sandbox) -> None:
    """Every step of the arm not yet done, in order. Once the sandbox died in one (exited
    while the engine answered: gVisor's pids or memory limit, a crashed sentry), every later
    step is recorded as not attempted, naming where it died, and the other arms run on; a
    sandbox that went away with its engine stops the run (`SandboxLost`)."""
    died: tuple[ExecRecord, str] | None = None
    for step in measure.steps(r, a, box.spec.workdir):
        if r.stop.is_set():
            raise KeyboardInterrupt
        if died is not None:
            rec = box.not_attempted(step.argv, step.out, *died, durable=step.durable)
        else:
            rec = box.exec(step.argv, step.out, timeout_s=step.timeout_s,
                           durable=step.durable)
            _stop_if_lost(r, a, rec)
            died = (rec, step.name) if rec.outcome == "sandbox-died" else None
        for cell, outcome in step.outcomes(rec):
            r.progress(a.name, cell, outcome)
