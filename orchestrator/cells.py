"""The measuring stage: a prepared arm's set-up and every cell of it not yet recorded, run
in its sandbox; then, with every process of the arm's gone, what it wrote disclosed.

A cell counts as done only when its record.json exists and describes the streams beside
it, so a resume runs exactly the cells without one, and an interrupted cell leaves nothing
behind that could be mistaken for one. Cells are made durable in one sync at the end of
each arm, not one fsync each.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator import disclosure, mcp, suite
from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import sync_filesystem
from orchestrator.run_document import SETUP_CELL
from orchestrator.sandbox import Sandbox
from orchestrator.transcripts import RECORD_NAME, ExecRecord, read_record, streams_intact
from orchestrator.untrusted import walk

if TYPE_CHECKING:
    from orchestrator.arms import ArmSpec
    from orchestrator.prepare import Prepared
    from orchestrator.run import ArmPlan, _Run



class SandboxLost(SandbenchError):
    """The container or the engine went away mid-run: stop, keep what is recorded, resume."""


def task_argv(spec: ArmSpec, task: suite.Task) -> list[str]:
    """What a cell of `task` runs for an arm: the task's own command for it (what a
    publication ran), else the arm's template (`sandbox try` renders it the same way)."""
    return task.command_argv(spec.name) or spec.render(task.kind, task.values)


def task_call(spec: ArmSpec, task: suite.Task) -> mcp.ToolCall:
    """What an MCP arm's session sends for `task`: the arm's call for its kind, filled."""
    return spec.calls[task.kind].render(task.values)


def done(cell: Path) -> bool:
    """A cell is done when its record exists and its streams are the ones it describes,
    unless the record says the sandbox went away: that is no answer of the tool's. A resume
    runs the cell again in either case."""
    path = cell / RECORD_NAME
    if not path.is_file():
        return False
    try:
        record = read_record(path)
    except InputError:
        return False
    return record.outcome != "sandbox-unavailable" and streams_intact(cell, record)


def _fresh(cell: Path) -> Path:
    """A cell directory without a record is an unfinished one: start it again from empty."""
    walk.remove_tree(cell)
    return cell


def _stop_if_lost(r: _Run, a: ArmPlan, rec: ExecRecord) -> None:
    if rec.outcome == "sandbox-unavailable":
        raise SandboxLost(f"the sandbox of arm {a.name!r} went away during a cell on engine "
                          f"{r.member(a.name).url}",
                          why="the container or the engine stopped; the cell's record says "
                              "sandbox-unavailable and a resume runs it again",
                          fix=f"once the engine answers: sandbench run {r.plan.suite.name} "
                              f"--resume {r.run_dir}")


def _if_died(rec: ExecRecord, cell: str) -> tuple[ExecRecord, str] | None:
    """The record and cell of an exec the sandbox died in (exited while the engine answered:
    gVisor's pids or memory limit, a crashed sentry): every later cell of the arm is recorded
    as not attempted, and the other arms run on."""
    return (rec, cell) if rec.outcome == "sandbox-died" else None


def run_arm(r: _Run, p: Prepared) -> dict[str, Any]:
    """One prepared arm: set-up and every cell; then, with every process of the arm's gone
    and its cells made durable at once, what it wrote is disclosed. Its file systems are
    taken down on the way out, whatever happened."""
    with p.exits:
        if p.refused is not None:
            return {"refused": p.refused}
        assert p.box is not None and p.before is not None
        _run_cells(r, p.arm, p.box)
        p.box.remove()
        sync_filesystem(r.run_dir)
        state = disclosure.disclose(r.run_dir / "arms" / p.arm.name / "state.json", p.before,
                                    p.snapshot)
    return {"state_bytes": state["state_bytes"] + state["corpus_added_bytes"]}


def _run_cells(r: _Run, a: ArmPlan, box: Sandbox) -> None:
    """The arm's set-up and every cell not yet recorded, each written without an fsync of
    its own (the arm's end syncs them all; a resume re-runs a cell whose streams were lost)."""
    cells = r.run_dir / "cells" / a.name
    tasks = {t.id: t for t in r.plan.suite.tasks}
    if a.spec.mcp is not None:
        _run_mcp_cells(r, a, box, cells, tasks)
        return
    died = None
    if a.spec.setup is not None:
        setup = cells / SETUP_CELL
        if not done(setup):
            rec = box.exec(list(a.spec.setup.argv), _fresh(setup),
                           timeout_s=a.spec.setup.timeout_s, durable=False)
            r.progress(a.name, SETUP_CELL, rec.outcome)
            _stop_if_lost(r, a, rec)
            died = _if_died(rec, SETUP_CELL)
    for task_id, rep in a.cells:
        if r.stop.is_set():
            raise KeyboardInterrupt
        cell = cells / task_id / str(rep)
        if done(cell):
            continue
        argv = task_argv(a.spec, tasks[task_id])
        if died is not None:
            rec = box.not_attempted(argv, _fresh(cell), *died, durable=False)
        else:
            rec = box.exec(argv, _fresh(cell), timeout_s=r.plan.suite.timeout_s, durable=False)
            _stop_if_lost(r, a, rec)
            died = _if_died(rec, f"{task_id}/{rep}")
        r.progress(a.name, f"{task_id}/{rep}", rec.outcome)


def _run_mcp_cells(r: _Run, a: ArmPlan, box: Sandbox, cells: Path,
                   tasks: dict[str, suite.Task]) -> None:
    """An MCP arm: the set-up session, then per task one session sending its call reps + 1
    times (cold, then warm on the same server); every REP record is derived from the
    session's transcript (orchestrator/mcp.py). A task counts as done once all its REP
    records exist; otherwise its session runs again from empty."""
    server = a.spec.mcp
    assert server is not None
    reps = r.plan.suite.reps
    timeout_s = r.plan.suite.timeout_s
    died = None
    setup = cells / SETUP_CELL
    if not done(setup):
        session_dir = _fresh(setup) / mcp.SESSION
        argv = mcp.session_argv(server, list(server.setup_calls), timeout_s, box.spec.workdir)
        rec = box.exec(argv, session_dir, timeout_s=mcp.session_timeout_s(
            server, len(server.setup_calls), timeout_s))
        _stop_if_lost(r, a, rec)
        died = _if_died(rec, SETUP_CELL)
        derived = mcp.setup_record(rec, session_dir, setup, server)
        r.progress(a.name, SETUP_CELL, derived.outcome)
    for task_id in dict.fromkeys(task_id for task_id, _ in a.cells):
        if r.stop.is_set():
            raise KeyboardInterrupt
        task_dir = cells / task_id
        if mcp.done(task_dir, reps):
            continue
        call = task_call(a.spec, tasks[task_id])
        session_dir = _fresh(task_dir) / mcp.SESSION
        argv = mcp.session_argv(server, [call] * (reps + 1), timeout_s, box.spec.workdir)
        if died is not None:
            rec = box.not_attempted(argv, session_dir, *died)
        else:
            rec = box.exec(argv, session_dir,
                           timeout_s=mcp.session_timeout_s(server, reps + 1, timeout_s))
            _stop_if_lost(r, a, rec)
            died = _if_died(rec, f"{task_id}/{mcp.SESSION}")
        for rep, derived in enumerate(mcp.task_records(rec, session_dir, task_dir, call, reps)):
            r.progress(a.name, f"{task_id}/{rep}", derived.outcome)
