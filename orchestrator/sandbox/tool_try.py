"""`sandbench sandbox try ARM --suite SUITE`: the loop of a tool author writing an arm file.

Each task of a sealed suite gets the arm's command exactly as a run renders it
(`run.measure.task_argv`); unless only rendering, each command runs once in the arm's sandbox,
made and verified as `sandbox exec` makes it (`one_sandbox`: a private copy of the corpus, every
guard verified), and what the arm's parser reads of its output is shown, read and graded by
the scorer's own functions (`score.cell.read_output`, `score.cell.grade_reading`). Nothing
here is a measurement: one invocation per task, no reps, no run document; the transcripts
stay under RUNS/try-ARM-*. An MCP arm's call for each task is sent in a session of its own
after its set-up session, as a run sends its cold rep.

The tool's output is hostile: the excerpt is a bounded head of its stdout, every string
shown is escaped for the terminal and cut, and each task's output is read and parsed alone,
so one output changes only its own lines.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import arms, corpus, log, suite
from orchestrator.engine import Engine
from orchestrator.errors import InputError
from orchestrator.images import ImageLock
from orchestrator.kinds import EDGE_KINDS
from orchestrator.run import measure, rundir
from orchestrator.run.document import SETUP_CELL
from orchestrator.run.transcripts import ExecRecord
from orchestrator.sandbox import mcp, one_sandbox
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import default_user
from orchestrator.score.cell import Reading, grade_reading, read_output
from orchestrator.score.correctness import answer_files
from orchestrator.settings import Settings
from orchestrator.untrusted.text import terminal

EXCERPT_LINES = 8        # of a task's stdout shown
FIELD_CHARS = 160        # one shown string (a stdout line, a row, a path) before it is cut
SHOWN_ROWS = 10          # parsed rows listed per task
SHOWN_FILES = 10         # files listed per truth list
# Outcomes after which the sandbox takes no more commands: the later tasks are not run.
SANDBOX_GONE = ("sandbox-died", "sandbox-unavailable")


@dataclass(frozen=True)
class Rendered:
    """One task's command for the arm, as a run renders it; `argv` is empty when the arm
    runs nothing for the task (`skipped` says why)."""

    task: suite.Task
    command: str | None            # "task": the task's own command for the arm; "arm": its template
    argv: tuple[str, ...]
    call: dict[str, Any] | None    # an MCP arm's tools/call for the task
    skipped: dict[str, Any] | None  # not attempted (the arm's quote), or no command at all

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task.id, "kind": self.task.kind, "command": self.command,
                "argv": list(self.argv) or None, "call": self.call, "skipped": self.skipped}


@dataclass(frozen=True)
class Planned:
    suite: suite.Suite
    arm: arms.ArmSpec
    tasks: tuple[Rendered, ...]  # in task id order


def plan(settings: Settings, suite_name: str, arm_name: str, task_ids: list[str]) -> Planned:
    """The sealed suite's tasks (those named, or all) in id order, each with the arm's
    command rendered. The arm need not be one of the suite's: a new tool is tried on a suite
    before it joins it (which would change the seal)."""
    the_suite = suite.load_suite(settings.suites_dir, suite_name)
    _check_sealed(the_suite, settings)
    (spec,) = arms.load_arms(settings.arms_dir, [arm_name])
    if spec.kind == "oracle":
        raise InputError.bad_value(spec.path, "kind", "an arm that answers tasks (an oracle "
                                   "runs in sandbench truth build)", spec.kind)
    return Planned(the_suite, spec, tuple(render(spec, task)
                                          for task in select(the_suite, task_ids)))


def _check_sealed(the_suite: suite.Suite, settings: Settings) -> None:
    """The suite as a run would take it: sealed (`verify_seal` says how to seal one that is
    not), every sealed file as it was."""
    if changed := suite.verify_seal(the_suite, settings):
        raise InputError(f"suite {the_suite.name!r} changed since its seal: "
                         f"{', '.join(d.file for d in changed)}",
                         fix=f"review the change, then: sandbench suite seal {the_suite.name}",
                         files=[d.file for d in changed])


def select(the_suite: suite.Suite, task_ids: list[str]) -> list[suite.Task]:
    """The named tasks (all when none), in id order: an unknown id is an error."""
    by_id = {task.id: task for task in the_suite.tasks}
    if unknown := [t for t in task_ids if t not in by_id]:
        raise InputError(f"suite {the_suite.name!r} has no task {unknown[0]!r}",
                         fix=f"its tasks: {', '.join(sorted(by_id))}", task=unknown[0])
    return [by_id[t] for t in sorted(set(task_ids) or by_id)]


def render(spec: arms.ArmSpec, task: suite.Task) -> Rendered:
    """The arm's command for one task, by the run's own functions."""
    if task.kind in spec.not_attempted:
        quote = spec.not_attempted[task.kind]
        return Rendered(task, None, (), None, {"not_attempted": quote.reason,
                                               "source": quote.source})
    if task.kind not in spec.tasks:
        return Rendered(task, None, (), None, {
            "no_command": f"{spec.path.name} has no [tasks.{task.kind}] and no "
                          f"[not_attempted.{task.kind}]: a run of this suite refuses the arm"})
    command = "task" if spec.name in task.commands else "arm"
    if spec.mcp is not None:
        call = measure.task_call(spec, task)
        return Rendered(task, command, (), call.to_json(), None)
    return Rendered(task, command, tuple(measure.task_argv(spec, task)), None, None)


# -- one exec per task ---------------------------------------------------------------------

@dataclass(frozen=True)
class Tried:
    """What `sandbox try` shows: each task's entry, and after a run the set-up's exec and
    the folder holding every transcript."""

    planned: Planned
    entries: list[dict[str, Any]]
    run_dir: Path | None = None
    setup: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"arm": self.planned.arm.name, "suite": self.planned.suite.name,
                "run_dir": None if self.run_dir is None else str(self.run_dir),
                "setup": self.setup, "tasks": self.entries}


def rendered_only(planned: Planned) -> Tried:
    return Tried(planned, [r.to_json() for r in planned.tasks])


def run(connect: Callable[[], Engine], settings: Settings, planned: Planned,
        runtime: str | None = None) -> Tried:
    """Every rendered command run once in the arm's verified sandbox on a private corpus
    copy (its set-up first, when it has one), on the engine `connect` returns once nothing
    else refuses the arm. An MCP arm's set-up is its set-up session and each task a session
    of its own that sends the task's call once, as a run's cold rep."""
    spec, the_suite = planned.arm, planned.suite
    ImageLock.load(settings.images_lock).image_id(spec.image)  # built, before anything starts
    lock_file = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock_file), the_suite.corpus, lock_file)
    corpus.verify_pristine(pin, settings)
    engine = connect()
    run_id, run_dir = rundir.create(settings.runs_dir, f"try-{spec.name}")
    log.configure(run_dir / "log.jsonl")
    user = default_user()
    out = run_dir / "cells" / spec.name
    with one_sandbox.member(engine, settings, run_id, user) as one, \
            one_sandbox.arm_sandbox(one, settings, spec, run_id, run_dir, user,
                                    runtime=the_suite.runtime.of(spec.name, runtime),
                                    pristine=(corpus.corpus_dir(settings, pin.id), pin)) as box:
        box.verify(run_dir / "guards" / spec.name)
        execs = _Sessions(box, the_suite, spec, out) if spec.mcp is not None else \
            _Execs(box, the_suite, spec, out)
        setup = execs.setup()
        gone = f"{setup['outcome']} in the set-up" if setup and setup["outcome"] in SANDBOX_GONE \
            else None
        entries = []
        for rendered in planned.tasks:
            if (not rendered.argv and rendered.call is None) or gone is not None:
                entries.append({**rendered.to_json(), "exec": None, "not_run": gone})
                continue
            record, cell = execs.task(rendered)
            entries.append(tried(the_suite, spec, rendered, record,
                                 (cell / record.stdout.path).read_bytes(),
                                 (cell / record.stderr.path).read_bytes()))
            if record.outcome in SANDBOX_GONE:
                gone = f"{record.outcome} in task {rendered.task.id}"
    return Tried(planned, entries, run_dir, setup)


@dataclass(frozen=True)
class _Execs:
    """A command arm: its set-up command, then each task's command, one exec each."""

    box: Sandbox
    suite: suite.Suite
    spec: arms.ArmSpec
    out: Path

    def setup(self) -> dict[str, Any] | None:
        if self.spec.setup is None:
            return None
        return exec_summary(self.box.exec(list(self.spec.setup.argv), self.out / SETUP_CELL,
                                          timeout_s=self.spec.setup.timeout_s))

    def task(self, rendered: Rendered) -> tuple[ExecRecord, Path]:
        cell = self.out / rendered.task.id
        return self.box.exec(list(rendered.argv), cell, timeout_s=self.suite.timeout_s), cell


@dataclass(frozen=True)
class _Sessions:
    """An MCP arm, as the run measures one (`run.measure`): a set-up session (initialize
    and the arm's set-up calls), then per task a session sending its call once; each call's
    record is derived from its session's transcript (`sandbox.mcp`)."""

    box: Sandbox
    suite: suite.Suite
    spec: arms.ArmSpec
    out: Path

    def _session(self, calls: list[mcp.ToolCall], folder: Path) -> tuple[ExecRecord, Path]:
        server = self.spec.mcp
        assert server is not None
        session = folder / mcp.SESSION
        argv = mcp.session_argv(server, calls, self.suite.timeout_s, self.box.spec.workdir)
        return self.box.exec(argv, session, timeout_s=mcp.session_timeout_s(
            server, len(calls), self.suite.timeout_s)), session

    def setup(self) -> dict[str, Any]:
        server = self.spec.mcp
        assert server is not None
        folder = self.out / SETUP_CELL
        record, session = self._session(list(server.setup_calls), folder)
        return exec_summary(mcp.setup_record(record, session, folder, server))

    def task(self, rendered: Rendered) -> tuple[ExecRecord, Path]:
        folder = self.out / rendered.task.id
        call = measure.task_call(self.spec, rendered.task)
        record, session = self._session([call], folder)
        (cold,) = mcp.task_records(record, session, folder, call, 0)
        return cold, folder / "0"


def exec_summary(record: ExecRecord) -> dict[str, Any]:
    """What one exec did, as `sandbox exec` prints it."""
    wall_ns = record.timing.get("wall_ns")
    return {"outcome": record.outcome, "exit_code": record.exit.get("exit_code"),
            "signal": record.exit.get("signal"),
            "wall_ms": None if wall_ns is None else round(wall_ns / 1e6, 3),
            "stdout_bytes": record.stdout.bytes_total, "stderr_bytes": record.stderr.bytes_total,
            "stdout_truncated": record.stdout.truncated, "flags": list(record.flags)}


def tried(the_suite: suite.Suite, spec: arms.ArmSpec, rendered: Rendered, record: ExecRecord,
          stdout: bytes, stderr: bytes) -> dict[str, Any]:
    """One task's entry: its command and exec, a bounded head of its stdout, what the arm's
    parser reads of it (an exec that did not end ok is not parsed, as the scorer does) and,
    where the suite has truth for the task, how the scorer grades this one output."""
    task = rendered.task
    reading = Reading(failure=record.outcome) if record.outcome != "ok" else \
        read_output(spec.parser, spec.name, task, stdout, stderr, None)
    return {**rendered.to_json(), "exec": exec_summary(record), "excerpt": excerpt(stdout),
            "stderr_excerpt": excerpt(stderr), "parsed": parsed_summary(reading),
            "parse_error": reading.parse_error, "failure": reading.failure,
            "truth": truth_summary(the_suite, task, reading)}


def excerpt(stdout: bytes) -> list[str]:
    """stdout's first EXCERPT_LINES lines, each cut at FIELD_CHARS bytes and escaped: a
    line is looked for only as far as its newline, once."""
    lines: list[str] = []
    start = 0
    while start < len(stdout) and len(lines) < EXCERPT_LINES:
        stop = stdout.find(b"\n", start)
        stop = len(stdout) if stop < 0 else stop
        line = stdout[start:stop].removesuffix(b"\r")
        more = f"... ({len(line) - FIELD_CHARS:,} more bytes)" if len(line) > FIELD_CHARS else ""
        lines.append(terminal(line[:FIELD_CHARS].decode("utf-8", "surrogateescape")) + more)
        start = stop + 1
    return lines


def shown(text: object) -> str:
    """A tool-derived string for one line of output: cut, then escaped."""
    raw = str(text)
    cut = f"... ({len(raw) - FIELD_CHARS:,} more characters)" if len(raw) > FIELD_CHARS else ""
    return terminal(raw[:FIELD_CHARS]) + cut


def parsed_summary(reading: Reading) -> dict[str, Any] | None:
    """What the parser read: its row and edge counts, calls, files and first rows."""
    if reading.failure is not None:
        return None
    files = answer_files(reading.rows)
    return {"rows": len(reading.rows), "edges": len(reading.graph), "calls": reading.calls,
            "files": len(files), "first_files": [shown(f) for f in files[:SHOWN_FILES]],
            "first_rows": [shown(f"{r.path}:{'' if r.line is None else r.line}"
                                 f"{'' if r.reason is None else ' ' + r.reason}")
                           for r in reading.rows[:SHOWN_ROWS]]}


def truth_summary(the_suite: suite.Suite, task: suite.Task, reading: Reading
                  ) -> dict[str, Any] | None:
    """The scorer's grade of this one output (`grade_reading`), or None where the suite has
    no truth for the task (an edge task before `sandbench truth build`)."""
    try:
        graded = grade_reading(the_suite, task, reading)
    except InputError:
        if task.kind in EDGE_KINDS:
            return None
        raise
    grade = graded.grade
    return {"verdict": graded.verdict, "recall": grade["recall"],
            "precision": grade["precision"], "files_named": grade["files_named"],
            "hits": [shown(f) for f in grade["hits"]],
            "missed": [shown(f) for f in grade["missed"]],
            "outside": [shown(f) for f in grade["outside"]],
            "answer": [shown(f) for f in grade["answer"]], "notes": list(grade["notes"])}


# -- the text a person reads ---------------------------------------------------------------

def text_lines(entry: dict[str, Any]) -> list[str]:
    """One task's entry as lines for a terminal; every tool-derived string escaped."""
    skipped = entry["skipped"]
    how = {"task": "the task's own command", "arm": "the arm's template",
           None: "not attempted" if skipped and "not_attempted" in skipped else "no command"}
    lines = [f"{terminal(entry['task'])}  ({terminal(entry['kind'])}, {how[entry['command']]})"]
    if skipped is not None:
        lines.append("  " + (f"{shown(skipped['not_attempted'])} ({shown(skipped['source'])})"
                             if "not_attempted" in skipped else shown(skipped["no_command"])))
        return lines
    # The command whole (the suite's values, escaped): what a reader would run by hand.
    if entry["call"] is not None:
        lines.append(f"  tools/call {terminal(entry['call']['tool'])} " + terminal(json.dumps(
            entry["call"]["arguments"], ensure_ascii=False, sort_keys=True)))
    else:
        lines.append(f"  $ {terminal(shlex.join(entry['argv']))}")
    if entry.get("not_run"):
        lines.append(f"  not run: the sandbox ended ({terminal(entry['not_run'])})")
    if entry.get("exec") is None:
        return lines
    lines.append("  " + exec_line(entry["exec"]))
    lines += [f"  | {line}" for line in entry["excerpt"]]
    if entry["exec"]["outcome"] != "ok":  # what the tool said about it
        lines += [f"  stderr| {line}" for line in entry["stderr_excerpt"]]
    return lines + reading_lines(entry)


def exec_line(summary: dict[str, Any]) -> str:
    wall = "-" if summary["wall_ms"] is None else f"{summary['wall_ms']:.1f} ms"
    return (f"{summary['outcome']}  exit {summary['exit_code']}  signal {summary['signal']}  "
            f"wall {wall}  stdout {summary['stdout_bytes']:,} B"
            + (" (truncated)" if summary["stdout_truncated"] else "")
            + f"  stderr {summary['stderr_bytes']:,} B"
            + (f"  flags {','.join(summary['flags'])}" if summary["flags"] else ""))


def reading_lines(entry: dict[str, Any]) -> list[str]:
    """What the parser read and, with truth, how the scorer grades it."""
    parsed, truth = entry["parsed"], entry["truth"]
    if entry["parse_error"] is not None:
        lines = [f"  parser: {terminal(entry['parse_error'])}"]
    elif parsed is None:
        lines = [f"  parser: not read (the exec's outcome is {entry['failure']})"]
    else:
        lines = [f"  parser: {parsed['rows']} rows, {parsed['files']} files, "
                 f"{parsed['calls']} calls" + (f", {parsed['edges']} edges"
                                               if parsed["edges"] else "")]
        lines += [f"    {row}" for row in parsed["first_rows"]]
        if parsed["rows"] > len(parsed["first_rows"]):
            lines.append(f"    ... ({parsed['rows'] - len(parsed['first_rows'])} more rows)")
    if truth is None:
        return lines + ["  truth: none in the suite for this task"]
    if entry["failure"] is None:
        lines.append(f"  truth: {len(truth['hits'])} of "
                     f"{len(truth['hits']) + len(truth['missed'])} named; "
                     f"{len(truth['outside'])} of the {len(truth['answer'])} graded files "
                     "outside it")
        lines += [f"    {key}: {', '.join(truth[key][:SHOWN_FILES])}"
                  for key in ("hits", "missed", "outside") if truth[key]]
    figures = "; ".join([entry["failure"] or f"recall {_figure(truth['recall'])}, precision "
                         f"{_figure(truth['precision'])}", *map(terminal, truth["notes"])])
    return lines + [f"  the scorer grades this output {truth['verdict']} ({figures})"]


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def text_report(tried: Tried) -> list[str]:
    """The whole report: a heading, the set-up's exec, each task's lines, the transcripts."""
    planned = tried.planned
    lines = [f"arm {terminal(planned.arm.name)} on suite {terminal(planned.suite.name)}: "
             f"{len(tried.entries)} tasks" + ("" if tried.run_dir else ", commands only")]
    server, setup = planned.arm.mcp, planned.arm.setup
    if tried.setup is not None:
        what = (f"MCP session: initialize and {len(server.setup_calls)} set-up call(s)"
                if server is not None else
                f"$ {terminal(shlex.join(setup.argv))}" if setup is not None else "")
        lines += ["", f"set-up  {what}", "  " + exec_line(tried.setup)]
    for entry in tried.entries:
        lines += ["", *text_lines(entry)]
    if tried.run_dir is not None:
        lines += ["", f"transcripts: {terminal(tried.run_dir)}"]
    return lines
