"""truth compare on the golden demo run: the stored answers regraded against a compiler truth
written here, with the same bands, and the disagreements listed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.oracle import compare

REPO = Path(__file__).resolve().parents[2]
GOLDEN_RUN = REPO / "tests" / "golden" / "demo-run"


def test_grades_move_with_the_truth(tmp_path: Path, monkeypatch) -> None:
    suites = tmp_path / "project" / "suites"
    shutil.copytree(REPO / "suites" / "demo", suites / "demo")
    toml = suites / "demo" / "suite.toml"
    toml.write_text(toml.read_text() + '\n[oracle]\narm = "oracle-scip-typescript"\n'
                    'project = "web"\n')
    (suites / "demo" / "truth").mkdir()
    # A compiler truth that adds one file the text truth admits and drops one it holds.
    (suites / "demo" / "truth" / "oracle-scip-typescript.json").write_text(json.dumps({
        "oracle": {"arm": "oracle-scip-typescript", "tool_version": "scip-typescript 0.4.0",
                   "image_id": "sha256:" + "0" * 64, "argv": ["scip-oracle", "web"]},
        "resolution": {"documents": 13, "occurrences": 747, "defined_in_corpus": 462,
                       "defined_outside": 140, "local": 145},
        "tasks": {"references-cart-line": {"kind": "references", "core": [
            "web/src/cart/cart.ts", "web/src/cart/cartLine.ts", "web/test/cart.test.ts"]}}}))
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy2(GOLDEN_RUN / "scores.json", run / "scores.json")
    path, figures = compare.compare(run, suites)
    assert figures["disagreements"] == {"references-cart-line": {
        "only_text": ["web/src/api/ordersClient.ts"], "only_compiler": ["web/test/cart.test.ts"],
        "admissible_in_compiler": ["web/test/cart.test.ts"]}}
    moved = {r["arm"]: (r["text"], r["compiler"], r["compiler_recall"])
             for r in figures["grades"]}
    # rg named the three text-core files: 2 of 3 compiler-core files, one outside (partial).
    assert moved["rg"] == ("correct", "partial", 0.666667)
    assert moved["code-review-graph"] == ("partial", "wrong", 0.333333)
    assert "| rg | references-cart-line | correct | 1.0 | partial (moved) |" in path.read_text()
    monkeypatch.setenv("SANDBENCH_PROJECT", str(tmp_path / "project"))
    missing = CliRunner().invoke(app, ["truth", "compare", str(tmp_path)])
    assert missing.exit_code == 2 and "no scores.json" in missing.output
