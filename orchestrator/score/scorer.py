"""A run directory and its sealed suite in, `scores.json` out: every metric of the
methodology, per cell (arm x task) and per band (task kind), with everything the results
document needs so that a renderer works from scores.json alone.

What a cell is:

- `not_attempted`: the arm declares it cannot express the task's kind; the reason is quoted
  from the arm spec (which quotes the tool's own docs). Excluded from the arm's denominators.
- `unscored`: the tool never had a fair chance, so it is never scored as the tool's wrong
  answer: the arm's tool is not available (`arm-unavailable`), the arm was left out of the
  run (`arm-not-run`), its guards refused it (`guard-violation`), or the sandbox went away during
  the graded exec (`sandbox-unavailable`). Counted on its own.
- `correct` / `partial` / `wrong`: graded on the cold invocation (REP 0). An exec that failed
  (any other record outcome) or whose output the arm's parser cannot read (`parse-error`) is
  `wrong` with its failure kind shown, recall 0, never dropped. Whatever a parser raises on
  a tool's bytes (a bound of `untrusted.decode`, RecursionError, MemoryError, a bug) is that
  cell's `parse-error`, its message in `parse_error`: one arm's output changes only its cells.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from orchestrator import log, pinlines
from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import atomic_write_json, canonical_json
from orchestrator.kinds import ALL_KINDS, EDGE_KINDS
from orchestrator.rundoc import RunDoc
from orchestrator.score import (correctness, cost, edges, environment, leaders, reach, setup,
                                timing)
from orchestrator.score.inputs import RunInputs, load
from orchestrator.score.numbers import median, r6
from orchestrator.suite import Task
from orchestrator.transcripts import OUTCOMES
from orchestrator.untrusted.decode import clip
from orchestrator.untrusted.errors import HostileInput

SCHEMA = "sandbench.scores/1"
SCORES_NAME = "scores.json"
ALL = "all"
BANDS = (*ALL_KINDS, ALL)
COUNTS = ("correct", "partial", "wrong", "not_attempted", "unscored")
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
DECLARED = ("baseline", "reps", "timeout_s", "precision_cap", "top_k")

logger = log.get(__name__)


# -- one cell -----------------------------------------------------------------------------

def _blank(arm: str, task: Task) -> dict[str, Any]:
    return {"arm": arm, "task": task.id, "kind": task.kind, "verdict": None, "failure": None,
            "parse_error": None, "unscored": None, "not_attempted": None, "argv": None,
            "grade": None, "cost": None, "calls": None, "reach": None, "timing": None,
            "flags": [], **({"edges": None} if task.kind in EDGE_KINDS else {})}


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
               index: pinlines.LineIndex) -> dict[str, Any]:
    from orchestrator import parsers

    cell = _blank(arm_name, task)
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
            parsed = parser.parse(stdout, inputs.stderr(cold), task.kind)
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


# -- per band -----------------------------------------------------------------------------

def _median_of(values: Sequence[float | None]) -> float | None:
    known = [Fraction(repr(v)) for v in values if v is not None]
    return r6(median(known))


def band_summary(cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    counts = {k: sum(c["verdict"] == k for c in cells) for k in COUNTS}
    graded = [c for c in cells if c["verdict"] in correctness.VERDICTS]
    failures: dict[str, int] = {}
    for c in graded:
        if c["failure"]:
            failures[c["failure"]] = failures.get(c["failure"], 0) + 1
    reached = [c["reach"]["status"] for c in graded if c["reach"] is not None]
    problems: dict[str, int] = {}
    for c in graded:
        for problem, n in (c["reach"] or {}).get("problems", {}).items():
            problems[problem] = problems.get(problem, 0) + n
    decided = sum(s in ("reaches", "fails") for s in reached)
    calls = [c["calls"] for c in graded if c["calls"] is not None]
    return {
        "counts": counts, "graded": len(graded), "failures": dict(sorted(failures.items())),
        "correct_share": r6(Fraction(counts["correct"], len(graded))) if graded else None,
        "recall_median": _median_of([c["grade"]["recall"] for c in graded]),
        "precision_median": _median_of([c["grade"]["precision"] for c in graded]),
        "cost": cost.band_cost([c["cost"] for c in graded]),
        "timing": timing.band_timing([c["timing"] for c in graded]),
        "reach": {**{s: reached.count(s) for s in reach.STATUSES},
                  "share": r6(Fraction(reached.count("reaches"), decided)) if decided else None,
                  "row_problems": dict(sorted(problems.items()))},
        "calls": {"median": r6(median(calls)), "total": sum(calls), "n": len(calls)},
    }


def _in_band(cells: Sequence[dict[str, Any]], band: str) -> list[dict[str, Any]]:
    return [c for c in cells if band == ALL or c["kind"] == band]


def _graded_costs(cells: Sequence[dict[str, Any]]) -> dict[str, int]:
    return {c["task"]: c["cost"]["stdout_bytes"] for c in cells
            if c["verdict"] in correctness.VERDICTS}


def _warm_seconds(cells: Sequence[dict[str, Any]]) -> dict[str, Fraction]:
    out = {}
    for c in cells:
        if c["verdict"] in correctness.VERDICTS and c["timing"]["warm_ms"] is not None:
            out[c["task"]] = Fraction(repr(c["timing"]["warm_ms"])) / 1000
    return out


# -- the whole run ------------------------------------------------------------------------

def declarations(suite_text: str) -> dict[str, str]:
    """Each declared choice as the suite states it: its comment lines and its line."""
    lines = suite_text.splitlines()
    quotes = {}
    for key in DECLARED:
        for i, line in enumerate(lines):
            if re.match(rf"{key}\s*=", line):
                start = i
                while start > 0 and lines[start - 1].startswith("#"):
                    start -= 1
                quotes[key] = "\n".join(lines[start:i + 1])
                break
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "[bands]")
    except StopIteration:
        pass
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")),
                   len(lines))
        quotes["bands"] = "\n".join(line for line in lines[start:end] if line.strip())
    return quotes


def _arm_section(inputs: RunInputs, roots: Sequence[str]) -> dict[str, Any]:
    out = {}
    for arm in inputs.arms:
        record = arm.record
        out[arm.name] = {
            "status": arm.status,
            "reason": None if arm.reason is None else environment.rewrite_paths(arm.reason,
                                                                                roots),
            "description": arm.description, "image": None if record is None else record.image,
            "image_id": None if record is None else record.image_id,
            "tool_version": "" if record is None else record.tool_version,
            "parser": arm.parser,
            "spec_sha256": None if record is None else record.spec_sha256,
            "env": dict(sorted(arm.env.items())),
            "setup_argv": arm.setup_argv,
            "tasks": {k: list(v) for k, v in sorted(arm.tasks.items())},
            "not_attempted": {k: {"reason": environment.rewrite_paths(v["reason"], roots),
                                  "source": environment.rewrite_paths(v["source"], roots)}
                              for k, v in sorted(arm.not_attempted.items())},
            "baseline": arm.name == inputs.suite.baseline,
        }
    return out


def _guards(inputs: RunInputs) -> dict[str, Any]:
    out = {}
    for arm in inputs.arms:
        verdict = inputs.verdicts.get(arm.name)
        if verdict is None:
            out[arm.name] = {"checked": 0, "failed": [], "ok": None}
            continue
        failed = sorted({str(g.get("guard")) for g in verdict if not g.get("ok")})
        out[arm.name] = {"checked": len(verdict), "failed": failed,
                         "ok": bool(verdict) and not failed}
    return out


def _state(inputs: RunInputs) -> dict[str, Any]:
    run_id = inputs.run.run_id
    out = {}
    for arm in inputs.arms:
        data = inputs.state.get(arm.name)
        if data is None:
            out[arm.name] = None
            continue
        out[arm.name] = {
            "state_dir": f"bench/runs/{run_id}/work/{arm.name}/state/",
            "corpus_dir": f"bench/runs/{run_id}/work/{arm.name}/corpus/",
            "state_files": [[str(p), int(s)] for p, s in data["state_files"]],
            "state_bytes": data["state_bytes"],
            "corpus_changes": data["corpus_changes"],
            "corpus_added_bytes": data["corpus_added_bytes"],
            # Where a listing of the arm's files stopped at a walk's bound (a run before the
            # bounds recorded none).
            "listings_cut": {where: data[f"{where}_cut"] for where in ("corpus", "state", "out")
                             if data.get(f"{where}_cut")},
        }
    return out


def failure_counts(cells: Sequence[dict[str, Any]], arm_names: Sequence[str]
                   ) -> dict[str, dict[str, int]]:
    """Per arm, how many cells failed by each kind (wrong) or were unscored by each kind
    (never the tool's wrong answer); every kind is listed, zero included."""
    counts = {}
    for arm in arm_names:
        mine = [c for c in cells if c["arm"] == arm]
        row = {k: sum(1 for c in mine if c["failure"] == k) for k in FAILURE_KINDS}
        row.update({k: sum(1 for c in mine if (c["unscored"] or {}).get("kind") == k)
                    for k in UNSCORED_KINDS})
        counts[arm] = row
    return counts


def bands_of(cells: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The bands a run has: the methodology's four kinds always (every table shows them),
    an edge kind only when the suite has such tasks, and all."""
    present = {c["kind"] for c in cells}
    return tuple(b for b in BANDS if b not in EDGE_KINDS or b in present)


def _summaries(cells: Sequence[dict[str, Any]], arm_names: Sequence[str]
               ) -> dict[str, dict[str, Any]]:
    """Per arm and band: the grades, costs and times of its cells."""
    return {arm: {band: band_summary(_in_band([c for c in cells if c["arm"] == arm], band))
                  for band in bands_of(cells)} for arm in arm_names}


def _cost_ratios(cells: Sequence[dict[str, Any]], baseline: str, available: Sequence[str]
                 ) -> dict[str, dict[str, Any]]:
    """The baseline's cost over each arm's, paired per task, per band; none when the baseline
    was not measured (the report says why, from the baseline arm's status)."""
    if baseline not in available:
        return {}

    def costs(arm: str, band: str) -> dict[str, int]:
        return _graded_costs(_in_band([c for c in cells if c["arm"] == arm], band))

    return {arm: {band: cost.paired_ratio(costs(baseline, band), costs(arm, band))
                  for band in bands_of(cells)}
            for arm in available if arm != baseline}


def _setups(inputs: RunInputs, cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Set-up cost per arm, never amortised, with its break-even against the baseline (or
    why there is none: the baseline was not measured)."""
    baseline = inputs.suite.baseline
    gap = environment.baseline_gap(baseline, next(a.status for a in inputs.arms
                                                  if a.name == baseline))
    by_arm = {a.name: [c for c in cells if c["arm"] == a.name] for a in inputs.arms}
    index_builds = {a.name: setup.index_build(inputs.setup.get(a.name)) for a in inputs.arms}
    one_off = {a.name: setup.one_off_seconds(a.install_seconds,
                                             index_builds[a.name]) for a in inputs.arms}
    setups: dict[str, Any] = {}
    for arm in inputs.arms:
        if arm.status != "available":
            setups[arm.name] = None
            continue
        assert arm.record is not None  # an available arm ran
        entry = setup.arm_setup(arm.record, index_builds[arm.name], inputs.state[arm.name])
        if arm.name == baseline:
            entry["break_even"] = None
        elif gap:
            entry["break_even"] = setup.no_baseline(gap)
        else:
            entry["break_even"] = setup.break_even(
                one_off[arm.name], one_off[baseline], _warm_seconds(by_arm[arm.name]),
                _warm_seconds(by_arm[baseline]))
        setups[arm.name] = entry
    return setups


def _scorer_changed(inputs: RunInputs) -> list[str]:
    """The scorer's sources that differ from the ones sealed before the run."""
    return [r["file"] for r in inputs.manifest_rows
            if r["kind"] == "scorer" and r["status"] != "match"]


def _environment(inputs: RunInputs, cells: Sequence[dict[str, Any]],
                 index: pinlines.LineIndex, changed: Sequence[str], guards: dict[str, Any],
                 roots: Sequence[str]) -> dict[str, Any]:
    """The methodology's disclosure block, with every deviation this run had."""
    run = inputs.run
    extra = []
    if changed:
        extra.append("the scorer differs from the one sealed before the run: "
                     + ", ".join(changed))
    if run.resumes:
        extra.append(f"the run was resumed {len(run.resumes)} time(s)")
    sandbox_lost = sum(1 for c in cells if (c["unscored"] or {}).get("kind")
                       == "sandbox-unavailable")
    if sandbox_lost:
        extra.append(f"{sandbox_lost} cell(s) lost their sandbox during the graded exec "
                     "(unscored)")
    if not index.available:
        extra.append("no line index of the pin was available: reach is unverifiable")
    env = environment.disclosure(run.to_json(), inputs.suite.baseline,
                                 {a.name: a.status for a in inputs.arms},
                                 {a: g["ok"] for a, g in guards.items()}, roots, extra)
    env["engine"] = {"version": run.engine.version, "api_version": run.engine.api_version}
    return env


def _run_section(run: RunDoc) -> dict[str, Any]:
    return {"run_id": run.run_id, "date": run.date, "status": run.status,
            "sandbench_version": run.sandbench_version, "resumes": len(run.resumes),
            "exec_path": run.exec_path_used}


def _suite_section(inputs: RunInputs) -> dict[str, Any]:
    the_suite = inputs.suite
    return {"name": the_suite.name, "manifest_sha256": inputs.run.suite.manifest_sha256,
            "arms": list(the_suite.arms), "baseline": the_suite.baseline,
            "reps": the_suite.reps, "timeout_s": r6(the_suite.timeout_s),
            "precision_cap": the_suite.precision_cap, "top_k": the_suite.top_k,
            "bands": {k: r6(v) for k, v in sorted(the_suite.bands.items())},
            "declarations": declarations(inputs.suite_text)}


def _tasks_section(inputs: RunInputs) -> dict[str, Any]:
    return {t.id: {"kind": t.kind, "language": t.language, "input": dict(t.input),
                   "truth": dict(sorted(t.truth.items()))}
            for t in inputs.suite.tasks}


DEFINITIONS = {**{f"correct.{k}": v for k, v in correctness.DEFINITIONS.items()},
               "cost": cost.DEFINITION, "cost.unit": cost.UNIT,
               "timing": timing.DEFINITION, "reach": reach.DEFINITION,
               "setup": setup.DEFINITION,
               "not_attempted": "the arm declares it cannot express the task's kind, "
                                "quoting the tool's own docs; excluded from that "
                                "arm's denominators",
               **{f"unscored.{k}": v for k, v in UNSCORED_KINDS.items()},
               **{f"failure.{k}": v for k, v in FAILURE_KINDS.items()}}


def compute(run_dir: Path, suite_dir: Path) -> tuple[dict[str, Any], pinlines.LineIndex]:
    """Every score of a run, and the line index reach used; reads only, writes nothing."""
    inputs = load(run_dir, suite_dir)
    run = inputs.run
    arm_names = [a.name for a in inputs.arms]
    available = [a.name for a in inputs.arms if a.status == "available"]
    index = pinlines.load_index(inputs.run_dir, run.corpus.sha)
    cells = [score_cell(inputs, arm, task, index) for arm in arm_names
             for task in inputs.suite.tasks]
    summary = _summaries(cells, arm_names)
    setups = _setups(inputs, cells)
    roots = environment.bench_roots(run.to_json(), inputs.run_dir)
    guards = _guards(inputs)
    changed = _scorer_changed(inputs)
    scores: dict[str, Any] = {
        "schema": SCHEMA,
        "run": _run_section(run),
        "suite": _suite_section(inputs),
        "corpus": dataclasses.asdict(run.corpus),
        "environment": _environment(inputs, cells, index, changed, guards, roots),
        "arms": _arm_section(inputs, roots),
        "guards": guards,
        "tasks": _tasks_section(inputs),
        "cells": cells,
        "summary": summary,
        "cost_ratios": _cost_ratios(cells, inputs.suite.baseline, available),
        "setup": setups,
        "state": _state(inputs),
        "reach_index": {"available": index.available,
                        "files": None if index.files is None else len(index.files)},
        "manifest": {"manifest_sha256": run.suite.manifest_sha256,
                     "matches_run": True, "inputs": list(inputs.manifest_rows),
                     "scorer_changed": changed},
        "failures": failure_counts(cells, arm_names),
        "leaders": leaders.leaders(summary, setups, arm_names, bands_of(cells)),
        "definitions": {**DEFINITIONS, **{f"correct.{k}": v for k, v in edges.DEFINITIONS.items()
                                          if k in bands_of(cells)}},
    }
    return scores, index


# -- the self-check and the write ---------------------------------------------------------

def self_check(previous: dict[str, Any], scores: dict[str, Any]) -> list[str]:
    """Every grade, recall and precision of an earlier score that this one does not
    reproduce, one line each; empty when all are reproduced."""
    def key(c: dict[str, Any]) -> tuple[str, str]:
        return c["arm"], c["task"]

    def facts(c: dict[str, Any]) -> dict[str, Any]:
        grade = c.get("grade") or {}
        return {"verdict": c.get("verdict"), "failure": c.get("failure"),
                "recall": grade.get("recall"), "precision": grade.get("precision")}

    old = {key(c): facts(c) for c in previous.get("cells", [])}
    new = {key(c): facts(c) for c in scores["cells"]}
    diffs = []
    for k in sorted(old.keys() | new.keys()):
        if k not in new:
            diffs.append(f"{k[0]}/{k[1]}: scored before, not now")
        elif k not in old:
            diffs.append(f"{k[0]}/{k[1]}: not scored before")
        else:
            for field in ("verdict", "failure", "recall", "precision"):
                if old[k][field] != new[k][field]:
                    diffs.append(f"{k[0]}/{k[1]}: {field} {old[k][field]} -> {new[k][field]}")
    return diffs


class SelfCheckFailed(SandbenchError):
    """Re-scoring a run did not reproduce its earlier grades; nothing was overwritten."""

    def __init__(self, path: Path, differences: list[str]) -> None:
        shown = "; ".join(differences[:10]) + (f"; ... {len(differences) - 10} more"
                                               if len(differences) > 10 else "")
        super().__init__(f"{path}: re-scoring does not reproduce {len(differences)} "
                         "grade(s), recall(s) or precision(s)", why=shown,
                         fix="find out why (a scorer change, an altered transcript); to keep "
                             "the new scores, run again with --update",
                         file=str(path), differences=differences)
        self.differences = differences


def score_run(run_dir: Path, suite_dir: Path, *, update: bool = False) -> dict[str, Any]:
    """Score a run and write RUN_DIR/scores.json atomically. When the run was
    scored before, the earlier grades must be reproduced: SelfCheckFailed names each that is
    not, and nothing is written unless `update`."""
    import json

    run_dir = Path(run_dir)
    scores, _ = compute(run_dir, suite_dir)
    path = run_dir / SCORES_NAME
    if path.is_file():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if not update:
                raise InputError(f"{path}: the earlier scores do not parse: {exc}",
                                 fix="to replace them, run again with --update",
                                 file=str(path)) from exc
            previous = {}
        differences = self_check(previous if isinstance(previous, dict) else {}, scores)
        if differences and not update:
            raise SelfCheckFailed(path, differences)
    atomic_write_json(path, scores)
    logger.info("scored", run=scores["run"]["run_id"], cells=len(scores["cells"]))
    return scores


def scores_text(scores: dict[str, Any]) -> str:
    return canonical_json(scores)
