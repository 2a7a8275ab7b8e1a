"""The document leads with the answer: per kind, the best arm over the tasks both arms were
graded on (the count shown), leaders only among arms graded on every task of a kind, one
glossary with no column that explains nothing, versions as versions, the HTML carrying every
section of the Markdown, and rendering linear in cells."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from orchestrator.report import verdict
from orchestrator.report.html import render_html
from orchestrator.report.markdown import render_markdown
from orchestrator.score import leaders
from orchestrator.score.environment import version_only

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run" / "scores.json"


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    scores = json.loads(GOLDEN.read_text(encoding="utf-8"))
    scores["suite"]["tool_under_test"] = "devscout"
    return scores


def test_the_document_opens_with_the_verdict(golden: dict[str, Any]) -> None:
    text = render_markdown(golden)
    assert text.split("\n\n")[1] == "## Verdict"
    assert text.index("## Verdict") < text.index("## Where peers win") < text.index(
        "## Run and environment") < text.index("```text\nDate ")
    assert ("- all (21 tasks): rg is best, correct on 21 of 21; next code-review-graph, 15 "
            "fewer correct over the 21 tasks both were graded on; devscout (tool under test): "
            "not measured (unavailable), so no verdict.") in text


def test_an_arm_is_set_beside_the_best_only_over_the_tasks_both_were_graded_on(
        golden: dict[str, Any]) -> None:
    rows = {(r[0], r[1]): r for r in verdict.table(golden)[1]}
    # ast-grep attempts only the 6 references tasks: over all 21 it is compared on those 6
    assert rows["all", "ast-grep"][2:6] == ["rg", "6", "6 vs 6", "+0"]
    assert rows["all", "ctags"][2:6] == ["rg", "9", "7 vs 9", "-2"]
    assert rows["all", "code-review-graph"][3] == "21"
    # the warm medians are over those same tasks: rg's over the 6 references tasks
    assert rows["all", "ast-grep"][7] == rows["references", "ast-grep"][7]


def test_a_kind_is_led_only_by_arms_graded_on_every_task_of_it(golden: dict[str, Any]) -> None:
    computed = leaders.leaders(golden["summary"], golden["setup"], list(golden["suite"]["arms"]),
                               list(golden["summary"]["rg"]))
    lead = {(c["band"], c["metric"]): c["leaders"] for c in computed}
    # ast-grep and code-index-mcp (6 of 21 tasks) lead no all-kinds metric any more
    assert lead["all", "correct_share"] == ["rg"]
    assert lead["all", "warm_ms"] == ["rg"]
    assert lead["references", "warm_ms"] == ["rg"]
    text = render_markdown(golden)
    assert "| all | tasks graded |   |   | 21 of 21 | 6 of 21 | 21 of 21 | 6 of 21 | 9 of 21 |" \
        in text


def test_a_tool_under_test_that_was_measured_is_placed(golden: dict[str, Any]) -> None:
    scores = copy.deepcopy(golden)
    scores["suite"]["tool_under_test"] = "ctags"
    lines = verdict.headlines(scores)
    assert lines[0].endswith("; ctags (tool under test): correct on 4 of the 5 tasks it "
                             "shares with rg, which has 5.")
    assert lines[1].endswith("; ctags (tool under test): not attempted, so no verdict.")


def test_terms_have_one_meaning_and_every_column_says_what_it_holds(
        golden: dict[str, Any]) -> None:
    text = render_markdown(golden)
    headers = [line for line in text.split("\n") if line.startswith("| ")
               and text.split("\n")[text.split("\n").index(line) + 1].startswith("| ---")]
    columns = {c.strip() for h in headers for c in h.strip("|").split("|")}
    assert "band" not in columns and "kind" in columns
    # the ratio table's count of tasks with no ratio, named for what it counts (and left out
    # here, being 0 in every row)
    assert "undefined" not in text
    assert "Left out, being 0 or none in every row shown: tasks with no ratio." in text
    assert text.count("## Glossary") == 1 and "## Definitions" not in text
    for term in ("kind", "rep", "leader", "setup", "reach"):
        assert f"- **{term}**: " in text
    assert "ahead until N tasks: " in text


@pytest.mark.parametrize(("reported", "version"), [
    ("Universal Ctags 5.9.0, Copyright (C) 2015 Universal Ctags Team", "Universal Ctags 5.9.0"),
    ("ripgrep 13.0.0\n-SIMD -AVX (compiled)", "ripgrep 13.0.0"),
    ("tool 1.2 (c) 2020 Someone", "tool 1.2"),
    ("tool 2.0 - Licensed under MIT", "tool 2.0"),
    ("ast-grep 0.51.1", "ast-grep 0.51.1"), ("", "")])
def test_a_version_is_kept_and_its_notice_dropped(reported: str, version: str) -> None:
    assert version_only(reported) == version


def test_the_committed_document_shows_versions_as_versions() -> None:
    committed = (GOLDEN.parent / "results.md").read_text(encoding="utf-8")
    assert "Copyright" not in committed and "| Universal Ctags 5.9.0 |" in committed


def test_the_page_carries_every_section_of_the_document(golden: dict[str, Any]) -> None:
    markdown = re.findall(r"^## (.+)$", render_markdown(golden), re.MULTILINE)
    page = re.findall(r"<h2>([^<]+)</h2>", render_html(golden))
    assert [h for h in page if h != "Plots"] == markdown
    assert page.index("Plots") == 2  # after the verdict and where peers win
    # the per-arm notes of the tasks, of the state each arm wrote
    html = render_html(golden)
    assert "<li>code-review-graph: missed: " in html
    assert "<p><strong>rg</strong>: environment " in html


class CountingCells(list):  # type: ignore[type-arg]
    """A cell list that counts how often it is walked."""
    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        CountingCells.walks += 1
        return super().__iter__()


def _widened(scores: dict[str, Any], copies: int) -> dict[str, Any]:
    """The golden scores with every task `copies` times (each with its own cells)."""
    out = copy.deepcopy(scores)
    out["tasks"] = {f"{t}-{i}": v for i in range(copies) for t, v in scores["tasks"].items()}
    out["cells"] = [{**c, "task": f"{c['task']}-{i}"} for i in range(copies)
                    for c in scores["cells"]]
    return out


@pytest.mark.parametrize("render", [render_markdown, render_html])
def test_rendering_walks_the_cells_a_fixed_number_of_times(golden: dict[str, Any],
                                                           render: Any) -> None:
    walks = []
    for copies in (1, 10):
        scores = _widened(golden, copies)
        scores["cells"] = CountingCells(scores["cells"])
        CountingCells.walks = 0
        render(scores)
        walks.append(CountingCells.walks)
    # the same walks for 21 tasks and for 210: nothing scans every cell once per task
    assert walks[0] == walks[1] < 40, walks
