"""benchmarks/suite_figures.py on the golden demo run: the table's rows from the run alone."""

from __future__ import annotations

from pathlib import Path

from benchmarks import suite_figures

RUN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"


def test_the_golden_run_gives_its_scorecard_and_payloads() -> None:
    text = suite_figures.figures(RUN)
    assert text.startswith("**demo** on sandbench/demo @ `fdafffcc9bcb` (44 files): run wall ")
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines()
            if line.startswith("| ") and "---" not in line and "arm |" not in line}
    # devscout was unavailable (no binary supplied): no row
    assert set(rows) == {"rg", "ast-grep", "code-review-graph", "code-index-mcp", "ctags"}
    assert rows["rg"].endswith("| 21 / 0 / 0 / 0 |")
    assert "references 6,791" in rows["ast-grep"] and rows["ast-grep"].endswith("6 / 0 / 0 / 15 |")
    assert "references 2,098" in rows["code-index-mcp"]  # an MCP arm's payload per call
