"""The scorer on answers built to break it: a line number 100,000 digits long, JSON nested
100,000 deep, an integer of 100,000 digits, NaN, a 5,000-character path, a 1 MiB line made
for a quadratic regex, and parsers that raise RecursionError and MemoryError. Each fails its
own cell as a classified `parse-error` (the guard's kind in its message), scores.json is
written, and every other arm's cells and summaries are exactly those of the same run with
honest answers in place of the hostile ones."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from test_score_fixtures import Arm, Cell, RunBuilder, rg_rows

from orchestrator import parsers
from orchestrator.score import compute, score_run

GOOD_REFS = rg_rows("src/a.cs:2:Money m;", "src/b.cs:2:Money m;", "src/d.cs:1:Money")
CRG_REFS = json.dumps({"status": "ok", "pattern": "callers_of", "edges": [
    {"file_path": "/corpus/src/a.cs", "line": 2, "kind": "CALLS"},
    {"file_path": "/corpus/src/b.cs", "line": 2, "kind": "CALLS"}]}).encode()
CRG_SEARCH = json.dumps({"status": "ok", "query": "a", "results": [
    {"file_path": "/corpus/src/a.cs", "line_start": 1, "kind": "Class",
     "qualified_name": "/corpus/src/a.cs::A"}]}).encode()
CRG_IMPACT = json.dumps({"status": "ok", "impacted_nodes": [], "impacted_files": [
    "/corpus/src/b.cs"]}).encode()
HONEST = {
    "ref-money": (GOOD_REFS, CRG_REFS), "loc-a": (rg_rows("src/a.cs:1:class A"), CRG_SEARCH),
    "imp-a": (rg_rows("src/b.cs:1:class B"), CRG_IMPACT),
    "e2e-a": (rg_rows("src/a.cs:1:class A"), CRG_SEARCH)}
# The hostile arms' answers, and the guard each must be refused by.
HOSTILE_RG = {
    "ref-money": (b"src/a.cs:" + b"9" * 100_000 + b":Money m;\n", "bad-line"),
    "loc-a": (b"a" + b": binary file matches (found " * 36_000 + b"\n", "not path:line:text"),
    "imp-a": (b"src/" + b"a" * 5000 + b".cs:1:class A\n", "bad-path"),
    "e2e-a": (b"src/a.cs:0:class A\n", "bad-line"),
}
HOSTILE_CRG = {
    "ref-money": (b"[" * 100_000, "too-deep"),
    "loc-a": (b'{"status": "ok", "query": "a", "results": [{"file_path": "/corpus/src/a.cs", '
              b'"line_start": 1' + b"0" * 100_000 + b"}]}", "bad-number"),
    "imp-a": (b'{"status": "ok", "impacted_nodes": [], "impacted_files": ["/corpus/src/b.cs"]'
              + b', "x": ' + b'{"a": ' * 50_000, "too-deep"),
    "e2e-a": (b'{"status": "ok", "query": "a", "results": [{"file_path": "/corpus/src/a.cs", '
              b'"line_start": NaN}]}', "bad-number"),
}
# A parser that fails as no bound can foresee: the scorer's cell boundary must hold anyway.
RAISES = {"ref-money": RecursionError("maximum recursion depth exceeded"),
          "loc-a": MemoryError(), "imp-a": KeyError("x"), "e2e-a": ZeroDivisionError()}


class _Exploding:
    name = "serena"

    def parse(self, stdout: bytes, stderr: bytes, kind: str) -> parsers.Parsed:
        if stdout.startswith(b"raise "):
            raise RAISES[stdout.decode().split(" ", 1)[1]]
        return parsers.PARSERS["rg"].parse(stdout, stderr, kind)


def _run(root: Path, hostile: bool) -> RunBuilder:
    arms = [Arm("rg", tool_version="ripgrep 13.0.0"), Arm("crg", parser="code-review-graph"),
            Arm("h-rg"), Arm("h-crg", parser="code-review-graph"), Arm("h-raise",
                                                                       parser="serena"),
            Arm("rg-late")]
    b = RunBuilder(root, arms=arms)
    for task, (rg_out, crg_out) in HONEST.items():
        for arm in ("rg", "h-rg", "rg-late"):
            b.cells[(arm, task)] = Cell(rg_out)
        b.cells[("crg", task)] = Cell(crg_out)
        b.cells[("h-crg", task)] = Cell(crg_out)
        b.cells[("h-raise", task)] = Cell(rg_out)
        if hostile:
            b.cells[("h-rg", task)] = Cell(HOSTILE_RG[task][0])
            b.cells[("h-crg", task)] = Cell(HOSTILE_CRG[task][0])
            b.cells[("h-raise", task)] = Cell(f"raise {task}".encode())
    return b.build()


def _others(scores: dict[str, Any]) -> dict[str, Any]:
    return {"cells": [c for c in scores["cells"] if not c["arm"].startswith("h-")],
            "summary": {a: s for a, s in scores["summary"].items() if not a.startswith("h-")},
            "cost_ratios": {a: r for a, r in scores["cost_ratios"].items()
                            if not a.startswith("h-")},
            "failures": {a: f for a, f in scores["failures"].items()
                         if not a.startswith("h-")}}


@pytest.fixture
def exploding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(parsers.PARSERS, "serena", _Exploding())


@pytest.mark.usefixtures("exploding")
def test_each_hostile_answer_fails_its_own_cell_and_nothing_else(tmp_path: Path) -> None:
    control = _run(tmp_path / "honest", False)
    honest, _ = compute(control.run_dir, control.suite_dir)
    built = _run(tmp_path / "hostile", True)
    started = time.monotonic()
    scores = score_run(built.run_dir, built.suite_dir)
    assert time.monotonic() - started < 30
    assert (built.run_dir / "scores.json").is_file()
    assert json.loads((built.run_dir / "scores.json").read_text())["cells"] == scores["cells"]
    assert _others(scores) == _others(honest) and len(_others(scores)["cells"]) == 12
    cells = {(c["arm"], c["task"]): c for c in scores["cells"]}
    for arm, table in (("h-rg", HOSTILE_RG), ("h-crg", HOSTILE_CRG)):
        for task, (_, guard) in table.items():
            cell = cells[(arm, task)]
            assert (cell["verdict"], cell["failure"]) == ("wrong", "parse-error"), (arm, task)
            assert guard in cell["parse_error"], (arm, task, cell["parse_error"])
            assert len(cell["parse_error"]) < 500 and cell["grade"]["recall"] == 0.0
            assert cell["reach"] is None and cell["calls"] is None
    for task, exc in RAISES.items():
        cell = cells[("h-raise", task)]
        assert (cell["verdict"], cell["failure"]) == ("wrong", "parse-error")
        assert cell["parse_error"].startswith(type(exc).__name__), cell["parse_error"]
    assert scores["failures"]["h-crg"]["parse-error"] == 4
    # Scoring again reproduces every grade (the self-check passes on the hostile cells too).
    assert score_run(built.run_dir, built.suite_dir)["cells"] == scores["cells"]


@pytest.mark.usefixtures("exploding")
def test_the_same_arms_honest_answers_are_graded_as_before(tmp_path: Path) -> None:
    """The control: the hostile arms' parsers grade honest answers (so a failure above is
    the answer's, not the arm's set-up)."""
    built = _run(tmp_path, False)
    scores, _ = compute(built.run_dir, built.suite_dir)
    for arm in ("h-rg", "h-crg", "h-raise"):
        for c in (c for c in scores["cells"] if c["arm"] == arm):
            assert c["failure"] is None and c["verdict"] in ("correct", "partial", "wrong"), c
