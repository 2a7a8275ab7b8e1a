"""`sandbench compare`: Run 0 beside Run 1 on copies of the golden demo run, varied to make
real transitions (a regression beside an improvement, a newly unscored cell, an answer changed
under the same grade, a new image and tool version), the byte-stable documents, and one clear
error for each kind of bad input."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator import compare as compare_mod
from orchestrator.cli import app
from orchestrator.compare import model as model_mod
from orchestrator.errors import InputError

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"
REGRESSED = ("rg", "locate-bulk-threshold")  # correct in the golden run
IMPROVED = ("ctags", "locate-unknown-product-stock-zero")  # wrong in the golden run
UNSCORED = ("code-review-graph", "references-stock-level")  # correct in the golden run
ANSWER = ("rg", "references-cart-line")  # correct in the golden run
HOSTILE = "13.0.0\x1b]0;pwned\x07 | <script>alert(1)</script> [x](javascript:y)"


def _copy(dest: Path) -> Path:
    """A run directory holding the golden run's run.json and scores.json (all compare reads)."""
    dest.mkdir(parents=True)
    for name in ("run.json", "scores.json"):
        shutil.copyfile(GOLDEN / name, dest / name)
    return dest


def _edit(run: Path, name: str, change: Callable[[Any], None]) -> None:
    data = json.loads((run / name).read_text(encoding="utf-8"))
    change(data)
    (run / name).write_text(json.dumps(data, indent=2), encoding="utf-8")


def _cell(scores: dict[str, Any], key: tuple[str, str]) -> dict[str, Any]:
    return next(c for c in scores["cells"] if (c["arm"], c["task"]) == key)


def _vary(scores: dict[str, Any]) -> None:
    regressed = _cell(scores, REGRESSED)
    regressed["verdict"] = regressed["grade"]["verdict"] = "wrong"
    regressed["grade"]["recall"] = 0.0
    improved = _cell(scores, IMPROVED)
    improved["verdict"] = improved["grade"]["verdict"] = "correct"
    unscored = _cell(scores, UNSCORED)
    unscored.update(verdict="unscored", grade=None, cost=None, timing=None, graded_rep=None,
                    unscored={"kind": "guard-violation", "reason": "refused"})
    _cell(scores, ANSWER)["grade"]["answer"].reverse()
    for cell in scores["cells"]:
        if cell["arm"] == "rg" and cell["cost"]:
            cell["cost"]["tokens"] *= 3


def _vary_run(run: dict[str, Any]) -> None:
    run["arms"]["rg"]["image_id"] = "sha256:" + "e" * 64
    run["arms"]["rg"]["tool_version"] = HOSTILE
    run["engine"]["version"] = "27.0.1"
    run["arms"]["rg"]["runtime"] = "runsc"
    first = run["arms"]["rg"]["engine"]
    run["engines"]["engine-second"] = {**run["engines"][first], "id": "engine-second",
                                       "kernel": "6.1.0"}
    run["arms"]["rg"]["engine"] = "engine-second"


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = _copy(tmp_path / "run-a"), _copy(tmp_path / "run-b")
    _edit(b, "scores.json", _vary)
    _edit(b, "run.json", _vary_run)
    return a, b


def _keys(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(i["arm"], i["task"]) for i in items]


def _group(model: dict[str, Any], arm: str, kind: str) -> dict[str, Any]:
    return next(g for g in model["groups"] if (g["arm"], g["kind"]) == (arm, kind))


def test_a_regression_and_an_improvement_are_both_listed(runs: tuple[Path, Path],
                                                         tmp_path: Path) -> None:
    model = compare_mod.compare(*runs, tmp_path / "suites")
    assert _keys(model["regressions"]) == [REGRESSED]
    assert model["regressions"][0] == {"arm": "rg", "kind": "locate", "task": REGRESSED[1],
                                            "a": "correct", "b": "wrong"}
    assert _keys(model["improvements"]) == [IMPROVED]
    assert _keys(model["newly_unscored"]) == [UNSCORED]
    assert _keys(model["answer_changes"]) == [ANSWER]
    assert _group(model, "rg", "locate")["counts"]["regressed"] == 1
    assert _group(model, "rg", "all")["counts"] == {
        "regressed": 1, "improved": 0, "newly_unscored": 0, "newly_scored": 0,
        "unchanged": 20, "only_in_a": 0, "only_in_b": 0}
    assert _group(model, "ctags", "all")["counts"]["improved"] == 1
    # The same arm-level picture never nets a regression against an improvement.
    rg_locate = _group(model, "rg", "locate")
    assert (rg_locate["a"]["correct"], rg_locate["b"]["correct"]) == (5, 4)
    assert rg_locate["recall_delta"] == 0.0 and rg_locate["cost"]["median_of_ratios"] == 3.0


def test_cells_carry_their_deltas_and_ratios(runs: tuple[Path, Path], tmp_path: Path) -> None:
    model = compare_mod.compare(*runs, tmp_path / "suites")
    cell = next(c for c in model["cells"] if (c["arm"], c["task"]) == REGRESSED)
    assert cell["transition"] == "regressed" and cell["recall_delta"] == -1.0
    assert cell["cost_ratio"] == 3.0 and cell["time_ratio"] == 1.0
    gone = next(c for c in model["cells"] if (c["arm"], c["task"]) == UNSCORED)
    assert gone["b"]["verdict"] == "unscored" and gone["cost_ratio"] is None


def _synthetic(tokens: list[int], verdict: str = "correct") -> dict[str, Any]:
    return {"cells": [{"arm": "x", "task": f"t{i}", "kind": "locate", "verdict": verdict,
                       "grade": {"recall": 1.0, "precision": 0.5, "answer": ["f"]},
                       "cost": {"tokens": n}, "timing": {"warm_ms": float(n)}}
                      for i, n in enumerate(tokens)]}


def test_median_of_ratios_stands_beside_the_ratio_of_medians() -> None:
    rows = model_mod.compare_cells(_synthetic([10, 100, 1000]), _synthetic([30, 100, 2000]))
    locate = model_mod.groups(rows)[0]
    assert locate["cost"] == {"pairs": 3, "median_of_ratios": 2.0, "ratio_of_medians": 1.0}
    assert locate["time"] == locate["cost"]


def test_only_the_cells_of_one_run_are_named_as_such() -> None:
    rows = model_mod.compare_cells(_synthetic([1, 2]), _synthetic([1]))
    assert [r["transition"] for r in rows] == ["unchanged", "only_in_a"]


def test_every_environment_difference_is_listed(runs: tuple[Path, Path],
                                                tmp_path: Path) -> None:
    env = compare_mod.compare(*runs, tmp_path / "suites")["environment"]
    assert [(d["scope"], d["key"]) for d in env] == [
        ("run", "engine.version"), ("rg", "engine"), ("rg", "engine.kernel"), ("rg", "image_id"),
        ("rg", "runtime"), ("rg", "tool_version")]
    assert (env[2]["a"], env[2]["b"]) == ("6.18.44-fc-v1300", "6.1.0")
    assert (env[4]["a"], env[4]["b"]) == ("runc", "runsc")
    assert env[5]["a"] == "ripgrep 13.0.0" and env[5]["b"] == HOSTILE


def test_documents_are_byte_stable_and_independent_of_cell_order(runs: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    first = {fmt: compare_mod.rendered(compare_mod.compare(*runs, tmp_path), fmt)
             for fmt in compare_mod.FILES}
    _edit(runs[1], "scores.json", lambda s: s["cells"].reverse())
    again = {fmt: compare_mod.rendered(compare_mod.compare(*runs, tmp_path), fmt)
             for fmt in compare_mod.FILES}
    assert {f: t.encode() for f, t in first.items()} == {f: t.encode() for f, t in again.items()}
    out = tmp_path / "out"
    written = compare_mod.write(compare_mod.compare(*runs, tmp_path), out)
    before = {p.name: p.read_bytes() for p in written}
    compare_mod.write(compare_mod.compare(*runs, tmp_path), out)
    assert {p.name: p.read_bytes() for p in written} == before
    assert sorted(before) == ["compare.html", "compare.json", "compare.md"]
    assert json.loads(before["compare.json"])["schema"] == model_mod.SCHEMA


def test_a_tool_version_is_escaped_where_it_is_shown(runs: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    model = compare_mod.compare(*runs, tmp_path)
    md, page = compare_mod.rendered(model, "md"), compare_mod.rendered(model, "html")
    for text in (md, page):
        assert "\x1b" not in text and "\x07" not in text and "<script>" not in text
    assert r"13.0.0\\x1b\]0;pwned\\x07 \| &lt;script&gt;" in md
    assert "13.0.0\\x1b]0;pwned\\x07 | &lt;script&gt;" in page
    row = next(line for line in md.splitlines() if line.startswith("| rg | tool_version |"))
    assert row.count(" | ") == 3  # the tool's `|` cannot open a fifth cell
    assert "\\[x\\]\\(javascript\\:y)" in md


def _reseal(run: Path, seal: str, suite: str = "demo") -> None:
    for name in ("run.json", "scores.json"):
        _edit(run, name, lambda d: d["suite"].update(manifest_sha256=seal, name=suite))


def _error(tmp_path: Path, run_a: Path, run_b: Path) -> InputError:
    with pytest.raises(InputError) as caught:
        compare_mod.compare(run_a, run_b, tmp_path / "suites")
    return caught.value


def test_runs_of_different_suites_are_refused_naming_both_seals(runs: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    _reseal(runs[1], "b" * 64, "demo-next")
    err = _error(tmp_path, *runs)
    seal_a = json.loads((runs[0] / "run.json").read_text())["suite"]["manifest_sha256"]
    assert seal_a in err.what and "b" * 64 in err.what and "not declared comparable" in err.what
    assert "comparable_with" in (err.fix or "")
    result = CliRunner().invoke(app, ["compare", str(runs[0]), str(runs[1])])
    assert result.exit_code == 2
    assert result.output.count("error:") == 1 and "fix:" in result.output


def _declaring_suite(suites: Path, name: str, declared: list[str]) -> str:
    """suites/NAME with a suite.toml declaring `declared` and a manifest sealing it; its seal."""
    folder = suites / name
    folder.mkdir(parents=True)
    toml = f'name = "{name}"\ncomparable_with = {json.dumps(declared)}\n'.encode()
    (folder / "suite.toml").write_bytes(toml)
    manifest = json.dumps({"inputs": {f"suites/{name}/suite.toml":
                                      hashlib.sha256(toml).hexdigest()}}).encode()
    (folder / "manifest.json").write_bytes(manifest)
    return hashlib.sha256(manifest).hexdigest()


def test_a_declared_comparable_suite_is_compared(runs: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    seal_a = json.loads((runs[0] / "run.json").read_text())["suite"]["manifest_sha256"]
    seal_b = _declaring_suite(tmp_path / "suites", "demo-next", [f"demo@{seal_a}"])
    _reseal(runs[1], seal_b, "demo-next")
    model = compare_mod.compare(*runs, tmp_path / "suites")
    assert model["comparable"].startswith(f"suite demo-next@{seal_b[:12]} declares itself")
    # A suite.toml edited after its seal declares nothing the run can rely on.
    toml = tmp_path / "suites" / "demo-next" / "suite.toml"
    toml.write_text(toml.read_text() + "# edited\n")
    assert "differs from the seal" in _error(tmp_path, *runs).what


def test_a_declaration_naming_another_seal_is_refused(runs: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    seal_b = _declaring_suite(tmp_path / "suites", "demo-next", [f"demo@{'c' * 64}"])
    _reseal(runs[1], seal_b, "demo-next")
    assert "not declared comparable" in _error(tmp_path, *runs).what


def test_an_unscored_run_is_refused(runs: tuple[Path, Path], tmp_path: Path) -> None:
    (runs[1] / "scores.json").unlink()
    err = _error(tmp_path, *runs)
    assert err.what == f"{runs[1] / 'scores.json'} is missing"
    assert err.fix == f"score the run first: sandbench score {runs[1]}"


def test_a_missing_run_directory_is_refused(runs: tuple[Path, Path], tmp_path: Path) -> None:
    err = _error(tmp_path, runs[0], tmp_path / "nowhere")
    assert err.what == f"{tmp_path / 'nowhere'} is not a run directory"


def test_a_scores_file_linked_out_of_the_run_is_refused(runs: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    (runs[1] / "scores.json").rename(outside)
    (runs[1] / "scores.json").symlink_to(outside)
    err = _error(tmp_path, *runs)
    assert err.data["key"] == "(file type)" and "a regular file" in err.what


def test_scores_of_another_run_are_refused(runs: tuple[Path, Path], tmp_path: Path) -> None:
    _edit(runs[1], "scores.json", lambda s: s["run"].update(run_id="run-other"))
    assert _error(tmp_path, *runs).data["key"] == "run.run_id"


def test_the_command_prints_one_format_or_writes_every_one(runs: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    args = ["compare", str(runs[0]), str(runs[1]), "--bench-root", str(tmp_path)]
    model = compare_mod.compare(*runs, tmp_path)
    for fmt in compare_mod.FILES:
        result = CliRunner().invoke(app, [*args, "--format", fmt])
        assert result.exit_code == 0, result.output
        assert result.stdout == compare_mod.rendered(model, fmt)
    result = CliRunner().invoke(app, [*args, "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "regressions: 1, improvements: 1, newly unscored: 1" in result.stdout
    assert (tmp_path / "out" / "compare.md").read_text() == compare_mod.rendered(model, "md")


def test_the_model_keeps_its_documented_keys(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """The keys a prediction checked against a baseline run reads (model.py's docstring)."""
    model = compare_mod.compare(*runs, tmp_path)
    assert sorted(model) == ["answer_changes", "cells", "comparable", "environment", "groups",
                             "improvements", "newly_unscored", "regressions", "runs", "schema"]
    assert sorted(model["cells"][0]) == ["a", "answer_changed", "arm", "b", "cost_ratio",
                                         "kind", "precision_delta", "recall_delta", "task",
                                         "time_ratio", "transition"]
    assert sorted(model["cells"][0]["a"]) == ["precision", "recall", "tokens", "verdict",
                                              "warm_ms"]
    group = _group(model, "rg", "all")
    assert sorted(group) == ["a", "arm", "b", "cost", "counts", "kind", "precision_delta",
                             "recall_delta", "time"]
    assert sorted(group["a"]) == ["correct", "correct_share", "graded", "precision_median",
                                  "recall_median"]
    assert sorted(group["cost"]) == ["median_of_ratios", "pairs", "ratio_of_medians"]
    assert sorted(group["counts"]) == sorted(model_mod.TRANSITIONS)


def test_a_scores_file_past_the_bound_is_refused_unread(runs: tuple[Path, Path], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    size = (runs[0] / "scores.json").stat().st_size  # run A is read first
    monkeypatch.setattr("orchestrator.compare.inputs.MAX_DOCUMENT_BYTES", size - 1)
    err = _error(tmp_path, *runs)
    assert err.data["key"] == "(size)" and err.data["found"] == size
