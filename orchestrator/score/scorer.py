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
- `correct` / `partial` / `wrong`: every rep is graded; the cell's grade is the cold
  invocation's (REP 0), or the lowest over its reps when the suite declares
  `cell_grade = "worst"`, and a cell whose reps' grades differ is `unstable`. An exec that
  failed (any other record outcome) or whose output the arm's parser cannot read
  (`parse-error`) is `wrong` with its failure kind shown, recall 0, never dropped.

One cell is `cell`, the bands `bands`; this module puts the run's sections together, checks a
re-score against the earlier one and writes scores.json.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator import log, line_index
from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import atomic_write_json
from orchestrator.predictions import evaluate
from orchestrator.predictions.model import PREDICTIONS, Prediction
from orchestrator.run.document import RunDoc
from orchestrator.score import (bands, cell, correctness, cost, edges, environment, leaders,
                                listed, published, reach, setup, timing)
from orchestrator.score.inputs import RunInputs, load
from orchestrator.score.numbers import r6
from orchestrator.suite import Suite

SCHEMA = "sandbench.scores/1"
SCORES_NAME = "scores.json"
DECLARED = ("baseline", "reps", "timeout_s", "precision_cap", "top_k")

logger = log.get(__name__)


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
    for table in ("bands", "grading"):
        try:
            start = next(i for i, line in enumerate(lines) if line.strip() == f"[{table}]")
        except StopIteration:
            continue
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")),
                   len(lines))
        quotes[table] = "\n".join(line for line in lines[start:end] if line.strip())
    return quotes


def grading_section(the_suite: Suite) -> dict[str, Any]:
    """The grading rules in force (the defaults where the suite declares none), which keys
    suite.toml declares, and each task's own overrides."""
    return {"rules": the_suite.grading.to_json(), "declared": list(the_suite.grading_declared),
            "tasks": {t.id: dict(sorted(t.grading.items()))
                      for t in the_suite.tasks if t.grading}}


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
            "tool_version": "" if record is None else environment.version_only(
                record.tool_version),
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
    out: dict[str, Any] = {}
    for arm in inputs.arms:
        data = inputs.state.get(arm.name)
        if data is None:
            out[arm.name] = None
            continue
        entry: dict[str, Any] = {
            "state_dir": f"bench/runs/{run_id}/work/{arm.name}/state/",
            "corpus_dir": f"bench/runs/{run_id}/work/{arm.name}/corpus/",
            "state_files": [],
            "state_bytes": data["state_bytes"],
            "corpus_changes": [],
            "corpus_added_bytes": data["corpus_added_bytes"],
            # Where a listing of the arm's files stopped at a walk's bound (a run before the
            # bounds recorded none).
            "listings_cut": {where: data[f"{where}_cut"] for where in ("corpus", "state", "out")
                             if data.get(f"{where}_cut")},
            # What the lists left out (orchestrator/disclosure.py): absent when whole.
            **{key: data[key] for key in ("state_files_omitted", "corpus_changes_omitted")
               if data.get(key)},
        }
        # The arm's listings are as long as what it wrote: scores.json keeps their first items.
        out[arm.name] = listed.with_lists(entry, {"state_files": data["state_files"],
                                                  "corpus_changes": data["corpus_changes"]})
        entry["state_files"] = [[str(p), int(s)] for p, s in entry["state_files"]]
    return out


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
                one_off[arm.name], one_off[baseline], bands.warm_seconds(by_arm[arm.name]),
                bands.warm_seconds(by_arm[baseline]))
        setups[arm.name] = entry
    return setups


def _scorer_changed(inputs: RunInputs) -> list[str]:
    """The scorer's sources that differ from the ones sealed before the run."""
    return [r["file"] for r in inputs.manifest_rows
            if r["kind"] == "scorer" and r["status"] != "match"]


def _environment(inputs: RunInputs, cells: Sequence[dict[str, Any]],
                 index: line_index.LineIndex, changed: Sequence[str], guards: dict[str, Any],
                 roots: Sequence[str]) -> dict[str, Any]:
    """The methodology's disclosure block, with every deviation this run had."""
    run = inputs.run
    extra = published.deviations(inputs)
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
    if pids_line := environment.runsc_pids(run.to_json(), inputs.verdicts):
        extra.append(pids_line)
    env = environment.disclosure(run.to_json(), inputs.suite.baseline,
                                 {a.name: a.status for a in inputs.arms},
                                 {a: g["ok"] for a, g in guards.items()}, roots, extra,
                                 tool_under_test=inputs.suite.tool_under_test,
                                 truth=truth_made_by(inputs.suite))
    env["engine"] = {"version": run.engine.version, "api_version": run.engine.api_version}
    return env


def _run_section(run: RunDoc) -> dict[str, Any]:
    return {"run_id": run.run_id, "date": run.date, "status": run.status,
            "sandbench_version": run.sandbench_version, "resumes": len(run.resumes),
            "exec_path": run.exec_path_used}


def truth_made_by(the_suite: Suite) -> str | None:
    """The rule and the rules version that made the suite's truth, as the disclosure states
    them; None for a suite whose truth no declared rule made."""
    if the_suite.truth_rule is None:
        return None
    version = (f"truth rules version {the_suite.truth_rule_version}"
               if the_suite.truth_rule_version is not None else
               "truth rules version not recorded (the suite predates versions: version 1)")
    return f"rule {the_suite.truth_rule}, {version}"


def _suite_section(inputs: RunInputs) -> dict[str, Any]:
    the_suite = inputs.suite
    return {"name": the_suite.name, "manifest_sha256": inputs.run.suite.manifest_sha256,
            "arms": list(the_suite.arms), "baseline": the_suite.baseline,
            "tool_under_test": the_suite.tool_under_test,
            "reps": the_suite.reps, "timeout_s": r6(the_suite.timeout_s),
            "precision_cap": the_suite.precision_cap, "top_k": the_suite.top_k,
            "bands": {k: r6(v) for k, v in sorted(the_suite.bands.items())},
            "declarations": declarations(inputs.suite_text),
            "grading": grading_section(the_suite)}


def _tasks_section(inputs: RunInputs) -> dict[str, Any]:
    return {t.id: {"kind": t.kind, "language": t.language, "input": dict(t.input),
                   "truth": dict(sorted(t.truth.items()))}
            for t in inputs.suite.tasks}


DEFINITIONS = {**{f"correct.{k}": v for k, v in correctness.DEFINITIONS.items()},
               "cost": cost.DEFINITION, "cost.unit": cost.UNIT,
               "timing": timing.DEFINITION, "reach": reach.DEFINITION,
               "setup": setup.DEFINITION, "leader": leaders.DEFINITION,
               "kind": "a task kind (locate, references, impact, e2e-retrieval, call-edges, "
                       "test-edges): every table counts per arm and kind, `all` being every "
                       "kind together; the suite.toml's [bands] table is not a kind but the "
                       "grading thresholds (references_correct_recall and the like)",
               "rep": "one invocation of a task by an arm: REP 0 is the cold one (the first "
                      "after the index build), graded and costed; REP 1..N are the warm "
                      "repeats, timed",
               "not_attempted": "the arm declares it cannot express the task's kind, "
                                "quoting the tool's own docs; excluded from that "
                                "arm's denominators",
               **{f"unscored.{k}": v for k, v in cell.UNSCORED_KINDS.items()},
               **{f"failure.{k}": v for k, v in cell.FAILURE_KINDS.items()},
               **{f"grading.{k}": v for k, v in correctness.RULE_DEFINITIONS.items()},
               **{f"flag.{k}": v for k, v in {**cell.RECORD_FLAGS, **cell.FLAGS}.items()},
               "flag.outlier": "a warm timing sample whose modified z-score over its cell's "
                               "warm samples exceeds the bound (Wall time)",
               "unstable": "a cell whose graded reps do not all have the same verdict, "
                           "recall and precision: its grade depends on which rep is graded, "
                           "and a rerun may not reproduce it",
               **{f"not_graded.{k}": v for k, v in cell.NOT_GRADED.items()},
               "published": published.DEFINITION}


def compute(run_dir: Path, suite_dir: Path) -> tuple[dict[str, Any], line_index.LineIndex]:
    """Every score of a run, and the line index reach used; reads only, writes nothing."""
    inputs = load(run_dir, suite_dir)
    run = inputs.run
    arm_names = [a.name for a in inputs.arms]
    available = [a.name for a in inputs.arms if a.status == "available"]
    index = line_index.load_index(inputs.run_dir, run.corpus.sha)
    cells = [cell.score_cell(inputs, arm, task, index) for arm in arm_names
             for task in inputs.suite.tasks]
    summary = bands.summaries(cells, arm_names)
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
        "cost_ratios": bands.cost_ratios(cells, inputs.suite.baseline, available),
        "setup": setups,
        "state": _state(inputs),
        "reach_index": {"available": index.available,
                        "files": None if index.files is None else len(index.files)},
        "manifest": {"manifest_sha256": run.suite.manifest_sha256,
                     "matches_run": True, "inputs": list(inputs.manifest_rows),
                     "scorer_changed": changed},
        "failures": bands.failure_counts(cells, arm_names),
        "unstable": bands.unstable_shares(cells, arm_names),
        "published": published.published_figures(inputs, cells),
        "leaders": leaders.leaders(summary, setups, arm_names, bands.bands_of(cells)),
        "definitions": {**DEFINITIONS, **{f"correct.{k}": v for k, v in edges.DEFINITIONS.items()
                                          if k in bands.bands_of(cells)}},
    }
    if inputs.suite.predictions:
        scores["predictions"] = _predictions_section(inputs.suite.predictions, scores)
    return scores, index


def _predictions_section(declared: Sequence[Prediction], scores: dict[str, Any]
                         ) -> dict[str, Any]:
    """The suite's sealed predictions and each one's outcome on this run's cells."""
    outcomes = evaluate.evaluate(scores, declared)
    return {"file": PREDICTIONS, "declared": [p.to_json() for p in declared],
            "outcomes": outcomes, "tally": evaluate.tally(outcomes)}


# -- the self-check and the write ---------------------------------------------------------

def self_check(previous: dict[str, Any], scores: dict[str, Any]) -> list[str]:
    """Every grade, recall and precision of an earlier score that this one does not
    reproduce, one line each; empty when all are reproduced."""
    def key(c: dict[str, Any]) -> tuple[str, str]:
        return c["arm"], c["task"]

    def facts(c: dict[str, Any]) -> dict[str, Any]:
        grade = c.get("grade") or {}
        return {"verdict": c.get("verdict"), "failure": c.get("failure"),
                "recall": grade.get("recall"), "precision": grade.get("precision"),
                "reps": {r.get("rep"): (r.get("verdict"), r.get("recall"), r.get("precision"))
                         for r in c["reps"] if r.get("verdict") is not None}
                if isinstance(c.get("reps"), list) else {}}

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
            diffs += [f"{k[0]}/{k[1]}: REP {i} {was} -> {now}" for i, was, now in
                      _rep_differences(old[k]["reps"], new[k]["reps"])]
    return diffs


def _rep_differences(old: dict[int, Any], new: dict[int, Any]
                     ) -> list[tuple[int, Any, Any]]:
    """The reps graded in both scores whose grades differ: a rep graded in one only (scores
    from before every rep was graded, a copy of the run without the warm streams) has no
    grade to reproduce."""
    return [(i, old[i], new[i]) for i in sorted(old.keys() & new.keys()) if old[i] != new[i]]


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
