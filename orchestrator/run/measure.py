"""What an arm's sandbox runs to answer the suite, as steps, whatever reaches its tool: one
`Step` per exec. An exec arm's steps are its set-up and each cell (one command each); an MCP
arm's are its set-up session and one session per task that sends the task's call reps + 1
times (cold, then warm on the same server), each of its REP records derived from the
session's transcript (orchestrator/sandbox/mcp.py). `steps` gives either kind to the one measuring
loop (`cells.measure_cells`).

A step whose cells are done is not given: a resume runs only what is missing. A cell is done
when its record exists and its streams are the ones it describes (an MCP task when all its
REP records do); a step's folder is emptied before it runs, so nothing half-written of an
earlier attempt stays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator import suite
from orchestrator.sandbox import mcp
from orchestrator.arms import ArmSpec
from orchestrator.errors import InputError
from orchestrator.run.options import RunContext
from orchestrator.run.plan import ArmPlan
from orchestrator.run.document import SETUP_CELL
from orchestrator.run.transcripts import RECORD_NAME, ExecRecord, read_record, streams_intact
from orchestrator.untrusted import walk

Outcomes = Callable[[ExecRecord], list[tuple[str, str]]]  # the exec's record -> (cell, outcome)


def task_argv(spec: ArmSpec, task: suite.Task) -> list[str]:
    """What a cell of `task` runs for an arm: the task's own command for it (what a
    publication ran), else the arm's template (`sandbox try` renders it the same way)."""
    return task.command_argv(spec.name) or spec.render(task.kind, task.values)


def task_call(spec: ArmSpec, task: suite.Task) -> mcp.ToolCall:
    """What an MCP arm's session sends for `task`: the arm's call for its kind, filled."""
    return spec.calls[task.kind].render(task.values)


@dataclass(frozen=True)
class Step:
    """One exec of the arm's sandbox: what it runs, where its streams and record go, the
    cell named when the sandbox dies in it, and the cells it records, with their outcomes,
    read from its record."""

    name: str
    argv: list[str]
    out: Path
    timeout_s: float
    durable: bool  # an exec arm's cells are synced at the arm's end, not one by one
    outcomes: Outcomes


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


def fresh(cell: Path) -> Path:
    """A cell directory without a record is an unfinished one: start it again from empty."""
    walk.remove_tree(cell)
    return cell


def steps(r: RunContext, a: ArmPlan, workdir: str) -> Iterator[Step]:
    """The arm's steps not yet done, in order (`workdir`: its sandbox's working directory,
    where an MCP session starts its server)."""
    tasks = {t.id: t for t in r.plan.suite.tasks}
    cells = r.run_dir / "cells" / a.name
    if a.spec.mcp is not None:
        return _session_steps(r, a, cells, tasks, workdir)
    return _exec_steps(r, a, cells, tasks)


def _one(name: str) -> Outcomes:
    return lambda rec: [(name, rec.outcome)]


def _exec_steps(r: RunContext, a: ArmPlan, cells: Path, tasks: dict[str, suite.Task]
                ) -> Iterator[Step]:
    if a.spec.setup is not None and not done(setup := cells / SETUP_CELL):
        yield Step(SETUP_CELL, list(a.spec.setup.argv), fresh(setup), a.spec.setup.timeout_s,
                   False, _one(SETUP_CELL))
    for task_id, rep in a.cells:
        cell = cells / task_id / str(rep)
        if done(cell):
            continue
        task = tasks[task_id]
        # The task's own command for this arm (what a publication ran), else the arm's template.
        argv = task_argv(a.spec, task)
        yield Step(f"{task_id}/{rep}", argv, fresh(cell), r.plan.suite.timeout_s, False,
                   _one(f"{task_id}/{rep}"))


def _session_steps(r: RunContext, a: ArmPlan, cells: Path, tasks: dict[str, suite.Task],
                   workdir: str) -> Iterator[Step]:
    server = a.spec.mcp
    assert server is not None
    reps = r.plan.suite.reps
    timeout_s = r.plan.suite.timeout_s
    setup = cells / SETUP_CELL
    if not done(setup):
        session = fresh(setup) / mcp.SESSION
        yield Step(SETUP_CELL, mcp.session_argv(server, list(server.setup_calls), timeout_s,
                                                workdir),
                   session, mcp.session_timeout_s(server, len(server.setup_calls), timeout_s),
                   True, lambda rec: [(SETUP_CELL, mcp.setup_record(rec, session, setup,
                                                                    server).outcome)])
    for task_id in dict.fromkeys(task_id for task_id, _ in a.cells):
        task_dir = cells / task_id
        if mcp.done(task_dir, reps):
            continue
        task = tasks[task_id]
        call = task_call(a.spec, task)
        yield _task_session(task_id, task_dir, call, server, reps, timeout_s, workdir)


def _task_session(task_id: str, task_dir: Path, call: mcp.ToolCall, server: mcp.Server,
                  reps: int, timeout_s: float, workdir: str) -> Step:
    session = fresh(task_dir) / mcp.SESSION

    def outcomes(rec: ExecRecord) -> list[tuple[str, str]]:
        return [(f"{task_id}/{rep}", derived.outcome) for rep, derived in
                enumerate(mcp.task_records(rec, session, task_dir, call, reps))]
    return Step(f"{task_id}/{mcp.SESSION}",
                mcp.session_argv(server, [call] * (reps + 1), timeout_s, workdir), session,
                mcp.session_timeout_s(server, reps + 1, timeout_s), True, outcomes)
