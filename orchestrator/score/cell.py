"""One cell (arm x task) of a run, scored: graded on its cold invocation (REP 0), with the
failure or the reason it is unscored or not attempted, its cost, calls, reach and timing.

Whatever a parser raises on a tool's bytes (a bound of `untrusted.decode`, RecursionError,
MemoryError, a bug) is that cell's `parse-error`, its message in `parse_error`: one arm's
output changes only its cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator import line_index, parsers
from orchestrator.parsers import _shapes
from orchestrator.errors import InputError
from orchestrator.kinds import EDGE_KINDS
from orchestrator.score import correctness, cost, edges, reach, timing
from orchestrator.score.inputs import RunInputs
from orchestrator.score.numbers import r6
from orchestrator.suite import Task
from orchestrator.transcripts import OUTCOMES
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
            "flags": [], "command": None, **({"edges": None} if task.kind in EDGE_KINDS else {})}


def output_shape(task: Task, arm: str) -> _shapes.Shape:
    """How the cell's output is read: as the task's own command for the arm declares (sealed
    in the task file), else by the arm's parser."""
    command = task.commands.get(arm)
    if command is None:
        return _shapes.Shape()
    return _shapes.Shape(output=command.output, sections=command.sections,
                         answer_section=command.answer_section, script=command.script is not None)


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
    return sorted(flags)


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
    rows: Sequence[correctness.RowLike] = ()
    graph: Sequence[edges.EdgeLike] = ()
    stdout = inputs.stdout(cold)
    if cold.record.outcome != "ok":
        cell["failure"] = cold.record.outcome
    else:
        parser = parsers.get_parser(arm.parser)
        try:
            parsed = _shapes.parse_output(parser, stdout, inputs.stderr(cold), task.kind,
                                          output_shape(task, arm_name))
            found_reach = reach.task_reach(parsed.rows, index)
        except parsers.ParseError as err:
            cell["failure"] = "parse-error"
            cell["parse_error"] = err.message
        except HostileInput as err:  # past a bound of untrusted.decode: its kind says which
            cell["failure"] = "parse-error"
            cell["parse_error"] = str(err)
        except Exception as err:  # noqa: BLE001 - the tool's bytes fail this cell alone
            cell["failure"] = "parse-error"
            cell["parse_error"] = f"{type(err).__name__}: {clip(str(err))}"
        else:
            rows = parsed.rows
            graph = parsed.edges
            cell["calls"] = parsed.calls
            cell["reach"] = found_reach
    if task.kind in EDGE_KINDS:
        graded = edges.grade(task.kind, edge_truth(inputs), graph, inputs.suite.bands)
        cell["edges"] = graded.detail
        cell["grade"] = {"verdict": graded.verdict, "recall": r6(graded.recall),
                         "precision": r6(graded.precision), "answer": [],
                         "files_named": graded.files_named, "hits": [], "missed": [],
                         "outside": [], "notes": list(graded.notes)}
        cell["verdict"] = graded.verdict if cell["failure"] is None else "wrong"
        return cell
    grade = correctness.grade(rows, task, inputs.suite)
    cell["grade"] = grade.to_json()
    cell["verdict"] = grade.verdict if cell["failure"] is None else "wrong"
    return cell


def edge_truth(inputs: RunInputs) -> edges.EdgeTruth:
    """The sealed suite's oracle truth (the seal was checked on loading), its rust_edges
    block read once per suite."""
    path = inputs.suite.truth_file()
    if path is None or not path.is_file():
        raise InputError(f"suite {inputs.suite.name!r} has edge tasks but no oracle truth",
                         fix=f"sandbench truth build {inputs.suite.name}",
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
                         why=str(exc), fix=f"sandbench truth build {inputs.suite.name}",
                         file=str(path)) from exc
    _EDGE_TRUTH.clear()
    _EDGE_TRUTH[key] = truth
    return truth


# One suite's truth, kept while a run is scored (every edge cell reads it).
_EDGE_TRUTH: dict[tuple[Path, int, int], edges.EdgeTruth] = {}
