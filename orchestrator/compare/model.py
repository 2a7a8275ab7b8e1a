"""The comparison of Run 0 (A, the baseline) and Run 1 (B) as one JSON document, the model
every rendering (and a prediction checked against a baseline run) reads. Its keys are stable:

- `schema`: "sandbench.compare/1"; `comparable`: why the two runs may stand side by side.
- `runs.a`, `runs.b`: run_id, suite, manifest_sha256, sandbench_version, date.
- `cells[]`: one per arm x task in either run (sorted by arm, kind, task): `arm`, `kind`,
  `task`, `a` and `b` (each null when the run has no such cell, else `verdict`, `recall`,
  `precision`, `tokens`, `warm_ms`), `transition` (one of TRANSITIONS), `recall_delta` and
  `precision_delta` (B - A, null unless both graded), `cost_ratio` and `time_ratio` (B / A of
  tokens and of warm_ms, null unless both are positive), `answer_changed` (both graded, the
  same verdict, a different graded answer).
- `groups[]`: one per arm x kind, and per arm over all its kinds (`kind` "all"): `counts` (each
  transition's number of cells), `a` and `b` (`graded`, `correct`, `correct_share`,
  `recall_median`, `precision_median` over the cells graded in both runs), `recall_delta` and
  `precision_delta` (B - A of those medians), `cost` and `time` (`pairs`, `median_of_ratios`,
  `ratio_of_medians`, B over A over the tasks with a ratio).
- `regressions[]`, `improvements[]`, `newly_unscored[]`, `answer_changes[]`: the cells with
  that transition (or change), each `{arm, kind, task, a, b}` with the verdicts; never netted.
- `environment[]`: every difference in what the runs ran on, `{scope, key, a, b}`: scope "run"
  (sandbench version, exec path, default engine, host) or an arm name (image_id,
  tool_version, runtime, engine and that engine's version, kernel, storage driver).

Every float is rounded to 6 places, so the document is the same bytes on every rerender.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import median
from typing import Any

from orchestrator.compare.inputs import ScoredRun
from orchestrator.run.document import RunDoc

SCHEMA = "sandbench.compare/1"
GRADE_RANK = {"wrong": 0, "partial": 1, "correct": 2}
IMPROVED, REGRESSED, UNCHANGED = "improved", "regressed", "unchanged"
NEWLY_UNSCORED, NEWLY_SCORED = "newly_unscored", "newly_scored"
ONLY_A, ONLY_B = "only_in_a", "only_in_b"
# Every transition a cell can make, in the order the documents list them.
TRANSITIONS = (REGRESSED, IMPROVED, NEWLY_UNSCORED, NEWLY_SCORED, UNCHANGED, ONLY_A, ONLY_B)
ALL_KINDS = "all"
_ENGINE_FACTS = ("version", "api_version", "kernel", "storage_driver")


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _side(cell: dict[str, Any] | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    grade, cost, timing = cell.get("grade"), cell.get("cost"), cell.get("timing")
    return {"verdict": cell["verdict"],
            "recall": _round(grade["recall"]) if grade else None,
            "precision": _round(grade["precision"]) if grade else None,
            "tokens": cost["tokens"] if cost else None,
            "warm_ms": _round(timing["warm_ms"]) if timing else None}


def _graded(side: dict[str, Any] | None) -> bool:
    return side is not None and side["verdict"] in GRADE_RANK


def transition(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    """What happened to one cell from A to B."""
    if a is None or b is None:
        return ONLY_B if a is None else ONLY_A
    if _graded(a) and _graded(b):
        step = GRADE_RANK[b["verdict"]] - GRADE_RANK[a["verdict"]]
        return IMPROVED if step > 0 else REGRESSED if step < 0 else UNCHANGED
    if _graded(a):
        return NEWLY_UNSCORED
    return NEWLY_SCORED if _graded(b) else UNCHANGED


def _ratio(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None or a <= 0 or b <= 0 else _round(b / a)


def _delta(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else _round(b - a)


def _cells_by_key(scores: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["arm"], c["task"]): c for c in scores["cells"]}


def _answer(cell: dict[str, Any] | None) -> list[str] | None:
    grade = None if cell is None else cell.get("grade")
    return None if not grade else list(grade["answer"])


def compare_cells(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per arm x task of either run, sorted by arm, kind and task (a total order:
    nothing depends on the order the runs list their cells in)."""
    cells_a, cells_b = _cells_by_key(a), _cells_by_key(b)
    rows = []
    for key in sorted(set(cells_a) | set(cells_b)):
        raw_a, raw_b = cells_a.get(key), cells_b.get(key)
        side_a, side_b = _side(raw_a), _side(raw_b)
        kind = (raw_b or raw_a or {})["kind"]
        both = _graded(side_a) and _graded(side_b)
        step = transition(side_a, side_b)
        a_of, b_of = side_a or {}, side_b or {}
        rows.append({
            "arm": key[0], "kind": kind, "task": key[1], "a": side_a, "b": side_b,
            "transition": step,
            "recall_delta": _delta(b_of["recall"], a_of["recall"]) if both else None,
            "precision_delta": _delta(b_of["precision"], a_of["precision"]) if both else None,
            "cost_ratio": _ratio(b_of.get("tokens"), a_of.get("tokens")),
            "time_ratio": _ratio(b_of.get("warm_ms"), a_of.get("warm_ms")),
            "answer_changed": both and step == UNCHANGED and _answer(raw_a) != _answer(raw_b)})
    rows.sort(key=lambda r: (r["arm"], r["kind"], r["task"]))
    return rows


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return _round(median(present)) if present else None


def _paired(rows: Sequence[dict[str, Any]], ratio: str, value: str) -> dict[str, Any]:
    """Median of the per-task ratios beside the ratio of the medians, over the same tasks."""
    pairs = [r for r in rows if r[ratio] is not None]
    med_a = _median(r["a"][value] for r in pairs)
    med_b = _median(r["b"][value] for r in pairs)
    return {"pairs": len(pairs), "median_of_ratios": _median(r[ratio] for r in pairs),
            "ratio_of_medians": _ratio(med_b, med_a)}


def _side_figures(rows: Sequence[dict[str, Any]], side: str) -> dict[str, Any]:
    """A run's figures over the cells graded in both runs (the same tasks on both sides)."""
    graded = [r[side] for r in rows if _graded(r["a"]) and _graded(r["b"])]
    correct = sum(1 for s in graded if s["verdict"] == "correct")
    return {"graded": len(graded), "correct": correct,
            "correct_share": _round(correct / len(graded)) if graded else None,
            "recall_median": _median(s["recall"] for s in graded),
            "precision_median": _median(s["precision"] for s in graded)}


def _group(arm: str, kind: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    a, b = _side_figures(rows, "a"), _side_figures(rows, "b")
    return {"arm": arm, "kind": kind,
            "counts": {t: sum(1 for r in rows if r["transition"] == t) for t in TRANSITIONS},
            "a": a, "b": b,
            "recall_delta": _delta(b["recall_median"], a["recall_median"]),
            "precision_delta": _delta(b["precision_median"], a["precision_median"]),
            "cost": _paired(rows, "cost_ratio", "tokens"),
            "time": _paired(rows, "time_ratio", "warm_ms")}


def groups(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per arm: each kind, then all its kinds together."""
    out = []
    for arm in sorted({r["arm"] for r in rows}):
        mine = [r for r in rows if r["arm"] == arm]
        out += [_group(arm, kind, [r for r in mine if r["kind"] == kind])
                for kind in sorted({r["kind"] for r in mine})]
        out.append(_group(arm, ALL_KINDS, mine))
    return out


def _arm_facts(run: RunDoc, arm: str) -> dict[str, Any]:
    record = run.arms[arm]
    facts: dict[str, Any] = {"image_id": record.image_id, "tool_version": record.tool_version,
                             "runtime": record.runtime, "engine": record.engine}
    engine = (run.engines or {}).get(record.engine or "")
    for key in _ENGINE_FACTS:
        facts[f"engine.{key}"] = None if engine is None else getattr(engine, key, None)
    return facts


def _run_facts(run: RunDoc) -> dict[str, Any]:
    return {"sandbench_version": run.sandbench_version, "exec_path": run.exec_path_used,
            **{f"engine.{k}": getattr(run.engine, k) for k in
               ("version", "api_version", "kernel", "os")},
            **{f"host.{k}": getattr(run.host, k) for k in ("arch", "cores", "memory_bytes", "os")}}


def environment(a: RunDoc, b: RunDoc) -> list[dict[str, Any]]:
    """Every fact of what ran that differs between the runs (an arm in one run only: each of
    its facts, the other side null)."""
    diffs = [{"scope": "run", "key": k, "a": v, "b": _run_facts(b)[k]}
             for k, v in _run_facts(a).items() if v != _run_facts(b)[k]]
    for arm in sorted(set(a.arms) | set(b.arms)):
        facts_a = _arm_facts(a, arm) if arm in a.arms else {}
        facts_b = _arm_facts(b, arm) if arm in b.arms else {}
        for key in sorted(set(facts_a) | set(facts_b)):
            if facts_a.get(key) != facts_b.get(key):
                diffs.append({"scope": arm, "key": key, "a": facts_a.get(key),
                              "b": facts_b.get(key)})
    return diffs


def _listed(rows: Sequence[dict[str, Any]], keep: Any) -> list[dict[str, Any]]:
    return [{"arm": r["arm"], "kind": r["kind"], "task": r["task"],
             "a": r["a"]["verdict"] if r["a"] else None,
             "b": r["b"]["verdict"] if r["b"] else None} for r in rows if keep(r)]


def _run_head(run: ScoredRun) -> dict[str, Any]:
    return {"run_id": run.run.run_id, "suite": run.run.suite.name, "manifest_sha256": run.seal,
            "sandbench_version": run.run.sandbench_version, "date": run.run.date}


def build(a: ScoredRun, b: ScoredRun, comparable: str) -> dict[str, Any]:
    """The whole comparison of A (Run 0) and B (Run 1)."""
    rows = compare_cells(a.scores, b.scores)
    return {"schema": SCHEMA, "comparable": comparable,
            "runs": {"a": _run_head(a), "b": _run_head(b)},
            "cells": rows, "groups": groups(rows),
            "regressions": _listed(rows, lambda r: r["transition"] == REGRESSED),
            "improvements": _listed(rows, lambda r: r["transition"] == IMPROVED),
            "newly_unscored": _listed(rows, lambda r: r["transition"] == NEWLY_UNSCORED),
            "answer_changes": _listed(rows, lambda r: r["answer_changed"]),
            "environment": environment(a.run, b.run)}
