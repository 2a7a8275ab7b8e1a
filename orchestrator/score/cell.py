"""One cell (arm x task) of a run, scored: every rep graded, the cell's grade the cold
invocation's (REP 0) or, when the suite declares `cell_grade = "worst"`, the lowest over its
reps; with the failure or the reason it is unscored or not attempted, and its cost, calls,
reach and timing (always the cold rep's). A cell whose reps' grades differ is `unstable`.

Whatever a parser raises on a tool's bytes (a bound of `untrusted.decode`, RecursionError,
MemoryError, a bug) is that cell's `parse-error`, its message in `parse_error`: one arm's
output changes only its cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import line_index, parsers
from orchestrator.score import shapes
from orchestrator.errors import InputError
from orchestrator.kinds import EDGE_KINDS
from orchestrator.score import correctness, cost, edges, reach, timing
from orchestrator.score.inputs import ArmRun, Rep, RunInputs
from orchestrator.score.numbers import r6
from orchestrator.suite import Suite, Task
from orchestrator.run.transcripts import OUTCOMES, RECORD_NAME
from orchestrator.untrusted.decode import clip
from orchestrator.untrusted.errors import HostileInput

UNSCORED_KINDS = {
    "arm-unavailable": "the arm was not run: its tool is not available",
    "arm-not-run": "the arm was left out of this run (sandbench run --arm)",
    "guard-violation": "the arm's isolation guards failed, so none of its commands ran",
    "sandbox-unavailable": OUTCOMES["sandbox-unavailable"],
}
# The failure kinds of a graded cell: decided when the exec ended (its record's outcome) or
# when its output was parsed; each makes the cell `wrong`, never `not_attempted`.
FAILURE_KINDS = {**{k: v for k, v in OUTCOMES.items() if k not in ("ok", "sandbox-unavailable")},
                 "parse-error": "the tool's output could not be read by its parser"}


def blank(arm: str, task: Task) -> dict[str, Any]:
    return {"arm": arm, "task": task.id, "kind": task.kind, "verdict": None, "failure": None,
            "parse_error": None, "unscored": None, "not_attempted": None, "argv": None,
            "grade": None, "cost": None, "calls": None, "reach": None, "timing": None,
            "flags": [], "command": None, "graded_rep": None, "reps": [], "unstable": False,
            **({"edges": None} if task.kind in EDGE_KINDS else {})}


def output_shape(task: Task, arm: str) -> shapes.Shape:
    """How the cell's output is read: as the task's own command for the arm declares (sealed
    in the task file), else by the arm's parser."""
    command = task.commands.get(arm)
    if command is None:
        return shapes.Shape()
    return shapes.Shape(output=command.output, sections=command.sections,
                         answer_section=command.answer_section, script=command.script is not None)


# Every flag a cell can carry, defined: `_flags` emits none that is not here.
FLAGS = {
    "output-varies": "the reps whose exec succeeded did not all print the same stdout bytes "
                     "(for a tool that prints in thread order, its order varies); whether the "
                     "grade varies too is the cell's unstable",
    "warm-failures": "at least one warm rep (REP 1 and on) did not end ok (timeout, "
                     "nonzero exit, ...), whatever the cold rep did",
    "stdout-truncated": "the cold rep's stdout passed the bound on what is kept: the cell is "
                        "graded and costed on the bytes kept",
    "impossible-timing": "a rep's record holds a wall time below zero or longer than the "
                         "exec around it took: that sample is kept, enters no median",
}
# Flags a rep's record carries (transcripts), shown with its timing sample.
RECORD_FLAGS = {
    "impossible-timing": FLAGS["impossible-timing"],
    "stray-processes": "processes an earlier exec left running were killed before this rep "
                       "started: the rep is flagged, the tool in it is not failed",
    "not-attempted": "the arm's sandbox died in an earlier cell: this rep was not run, and "
                     "fails as sandbox-died",
}
# Why a rep has no grade of its own.
NOT_GRADED = {
    "sandbox-unavailable": OUTCOMES["sandbox-unavailable"],
    "streams-not-kept": "the run directory does not hold this warm rep's stdout and stderr (a "
                        "trimmed copy of the run): it is not graded",
}


def _flags(reps: Sequence[Any]) -> list[str]:
    flags = set()
    ok = [r.record for r in reps if r.record.outcome == "ok"]
    if len({r.stdout.sha256 for r in ok}) > 1:
        flags.add("output-varies")
    if any(r.record.outcome != "ok" for r in reps[1:]):
        flags.add("warm-failures")
    if reps[0].record.stdout.truncated:
        flags.add("stdout-truncated")
    if any("impossible-timing" in r.record.flags for r in reps):
        flags.add("impossible-timing")
    assert flags <= FLAGS.keys(), flags - FLAGS.keys()  # every flag defined
    return sorted(flags)


@dataclass(frozen=True)
class Reading:
    """One rep's output as its parser read it: its failure (exec outcome or parse-error) or
    its rows, edges, calls and (the cold rep's only) reach."""

    failure: str | None = None
    parse_error: str | None = None
    rows: Sequence[correctness.RowLike] = ()
    graph: Sequence[edges.EdgeLike] = ()
    calls: int | None = None
    reach: dict[str, Any] | None = None


def read_rep(inputs: RunInputs, arm: ArmRun, task: Task, rep: Rep,
             index: line_index.LineIndex | None) -> Reading:
    """Parse one rep's stdout (reach too, given the line index); whatever the parser raises
    on the tool's bytes is this rep's parse-error."""
    stdout = inputs.stdout(rep)
    if rep.record.outcome != "ok":
        return Reading(failure=rep.record.outcome)
    return read_output(arm.parser, arm.name, task, stdout, inputs.stderr(rep), index)


def read_output(parser_name: str, arm: str, task: Task, stdout: bytes, stderr: bytes,
                index: line_index.LineIndex | None) -> Reading:
    """One output of an exec that ended ok, as the scorer reads it (`sandbox try` too): the
    arm's parser through the shape the task declares for it, reach given the line index;
    whatever the parser raises on the tool's bytes is this output's parse-error."""
    parser = parsers.get_parser(parser_name)
    try:
        parsed = shapes.parse_output(parser, stdout, stderr, task.kind,
                                      output_shape(task, arm))
        found_reach = None if index is None else reach.task_reach(parsed.rows, index)
    except parsers.ParseError as err:
        return Reading(failure="parse-error", parse_error=err.message)
    except HostileInput as err:  # past a bound of untrusted.decode: its kind says which
        return Reading(failure="parse-error", parse_error=str(err))
    except Exception as err:  # noqa: BLE001 - the tool's bytes fail this cell alone
        return Reading(failure="parse-error",
                       parse_error=f"{type(err).__name__}: {clip(str(err))}")
    return Reading(rows=parsed.rows, graph=parsed.edges, calls=parsed.calls,
                   reach=found_reach)


@dataclass(frozen=True)
class RepGrade:
    """One rep graded: the cell's grade fields as this rep would set them."""

    verdict: str
    failure: str | None
    parse_error: str | None
    grade: dict[str, Any]
    edges: dict[str, Any] | None


def grade_reading(the_suite: Suite, task: Task, reading: Reading) -> RepGrade:
    """A reading graded by the task's kind; a failed one is wrong, its grade kept beside."""
    grade: dict[str, Any]
    if task.kind in EDGE_KINDS:
        graded = edges.grade(task.kind, edge_truth(the_suite), reading.graph, the_suite.bands)
        grade = {"verdict": graded.verdict, "recall": r6(graded.recall),
                 "precision": r6(graded.precision), "answer": [],
                 "files_named": graded.files_named, "hits": [], "missed": [],
                 "outside": [], "notes": list(graded.notes)}
        verdict, detail = graded.verdict, graded.detail
    else:
        files = correctness.grade(reading.rows, task, the_suite)
        grade, verdict, detail = files.to_json(), files.verdict, None
    return RepGrade(verdict if reading.failure is None else "wrong", reading.failure,
                    reading.parse_error, grade, detail)


def _rep_entry(rep: int, graded: RepGrade | None, not_graded: str | None) -> dict[str, Any]:
    if graded is None:
        return {"rep": rep, "verdict": None, "failure": None, "recall": None,
                "precision": None, "not_graded": not_graded}
    return {"rep": rep, "verdict": graded.verdict, "failure": graded.failure,
            "recall": graded.grade["recall"], "precision": graded.grade["precision"],
            "not_graded": None}


def _streams_kept(rep: Rep) -> bool:
    """Whether a warm rep's streams are beside its record, each the size the record says
    (checked before it is read, as the cold rep's are when the run is loaded)."""
    kept = True
    for stream in ("stdout", "stderr"):
        info = getattr(rep.record, stream)
        file = rep.cell_dir / info.path
        if not file.is_file():
            kept = False
        elif (size := file.stat().st_size) != info.bytes_kept:
            raise InputError.bad_value(rep.cell_dir / RECORD_NAME, f"{stream}.bytes_kept",
                                       str(size), info.bytes_kept,
                                       fix=f"{file} is not the stream this record describes")
    return kept


def grade_warm(inputs: RunInputs, arm: ArmRun, task: Task, reps: Sequence[Rep],
               cold: RepGrade) -> list[tuple[Rep, RepGrade | None, str | None]]:
    """Every warm rep graded, each distinct output once: a rep whose record holds the same
    outcome and stream digests as one graded before has that rep's grade (the same bytes
    parse and grade the same), so only outputs that differ are parsed again."""
    def same(rep: Rep) -> tuple[str, ...]:
        record = rep.record
        if record.outcome != "ok":
            return (record.outcome,)
        return (record.outcome, record.stdout.sha256, record.stderr.sha256)

    known = {same(reps[0]): cold}
    out: list[tuple[Rep, RepGrade | None, str | None]] = []
    for rep in reps[1:]:
        if rep.record.outcome == "sandbox-unavailable":
            out.append((rep, None, "sandbox-unavailable"))
            continue
        if (graded := known.get(same(rep))) is None and rep.record.outcome != "ok":
            graded = grade_reading(inputs.suite, task, Reading(failure=rep.record.outcome))
            known[same(rep)] = graded  # a failed exec is wrong whatever it printed
        if graded is None:
            if not _streams_kept(rep):
                if inputs.suite.rules(task).cell_grade == "worst":
                    raise InputError(f"{rep.cell_dir}: the streams of this rep are missing, "
                                     f"and task {task.id} takes the worst grade over its reps",
                                     fix="score the run directory as the run left it, every "
                                         "rep's streams beside its record",
                                     file=str(rep.cell_dir))
                out.append((rep, None, "streams-not-kept"))
                continue
            graded = grade_reading(inputs.suite, task,
                                   read_rep(inputs, arm, task, rep, None))
            known[same(rep)] = graded
        out.append((rep, graded, None))
    return out


def score_cell(inputs: RunInputs, arm_name: str, task: Task,
               index: line_index.LineIndex) -> dict[str, Any]:
    cell = blank(arm_name, task)
    arm = next(a for a in inputs.arms if a.name == arm_name)
    skipped = arm.not_attempted.get(task.kind)
    if skipped is not None:
        cell["verdict"] = "not_attempted"
        cell["not_attempted"] = {"reason": skipped["reason"], "source": skipped["source"]}
        return cell
    if arm.status != "available":
        kind = {"unavailable": "arm-unavailable", "refused": "guard-violation",
                "absent": "arm-not-run"}[arm.status]
        cell["verdict"] = "unscored"
        cell["unscored"] = {"kind": kind, "reason": UNSCORED_KINDS[kind]}
        return cell
    reps = inputs.reps[(arm_name, task.id)]
    cold = reps[0]
    cell["argv"] = list(cold.record.argv)
    cell["command"] = "task" if arm_name in task.commands else "arm"
    cell["flags"] = _flags(reps)
    cell["timing"] = timing.cell_timing([timing.sample(r.rep, r.record) for r in reps])
    if cold.record.outcome == "sandbox-unavailable":
        cell["verdict"] = "unscored"
        cell["unscored"] = {"kind": "sandbox-unavailable",
                            "reason": UNSCORED_KINDS["sandbox-unavailable"]}
        return cell
    cell["cost"] = cost.cell_cost(cold.record)
    reading = read_rep(inputs, arm, task, cold, index)
    cell["calls"] = reading.calls
    cell["reach"] = reading.reach
    cold_grade = grade_reading(inputs.suite, task, reading)
    graded = [(cold, cold_grade, None), *grade_warm(inputs, arm, task, reps, cold_grade)]
    return _settle(cell, graded, inputs.suite.rules(task).cell_grade)


def _settle(cell: dict[str, Any], graded: Sequence[tuple[Rep, RepGrade | None, str | None]],
            cell_grade: str) -> dict[str, Any]:
    """The cell's grade from its graded reps: the cold rep's, or (`worst`) the lowest, the
    earliest rep among equals; every rep listed, and whether their grades differ."""
    cell["reps"] = [_rep_entry(rep.rep, g, why) for rep, g, why in graded]
    known = [(rep, g) for rep, g, _ in graded if g is not None]
    cell["unstable"] = len({(g.verdict, g.grade["recall"], g.grade["precision"])
                            for _, g in known}) > 1
    rep, chosen = known[0]  # the cold rep: always graded here
    if cell_grade == "worst":
        rep, chosen = min(known, key=lambda pair: correctness.RANK[pair[1].verdict])
    cell["graded_rep"] = rep.rep
    cell["failure"] = chosen.failure
    cell["parse_error"] = chosen.parse_error
    cell["grade"] = chosen.grade
    cell["verdict"] = chosen.verdict
    if cell["kind"] in EDGE_KINDS:
        cell["edges"] = chosen.edges
    return cell


def edge_truth(the_suite: Suite) -> edges.EdgeTruth:
    """The sealed suite's oracle truth (the seal was checked on loading), its rust_edges
    block read once per suite."""
    path = the_suite.truth_file()
    if path is None or not path.is_file():
        raise InputError(f"suite {the_suite.name!r} has edge tasks but no oracle truth",
                         fix=f"sandbench truth build {the_suite.name}",
                         file=None if path is None else str(path))
    stat = path.stat()
    key = (path, stat.st_mtime_ns, stat.st_size)
    if (cached := _EDGE_TRUTH.get(key)) is not None:
        return cached
    from orchestrator.fsutil import read_json

    try:
        truth = edges.EdgeTruth.of(read_json(path).get("rust_edges"))
    except edges.BadTruth as exc:
        raise InputError(f"{path}: rust_edges is not what sandbench truth build writes",
                         why=str(exc), fix=f"sandbench truth build {the_suite.name}",
                         file=str(path)) from exc
    _EDGE_TRUTH.clear()
    _EDGE_TRUTH[key] = truth
    return truth


# One suite's truth, kept while a run is scored (every edge cell reads it).
_EDGE_TRUTH: dict[tuple[Path, int, int], edges.EdgeTruth] = {}
