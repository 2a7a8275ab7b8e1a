"""The results document a reader can take in: tables without the rows and columns that carry
no information (and a sentence naming what was left out), counts printed as counts, outlier
flags only from a sample that can support them, and no claim that holds only because nothing
was measured. Each rule on the golden run's scores, and on a copy changed to break it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.report import leaders, tables, tasks
from orchestrator.report.html import render_html
from orchestrator.report.markdown import render_markdown
from orchestrator.score import timing

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run" / "scores.json"
# The demo suite's tool under test (suites/demo/suite.toml); the golden run's suite was sealed
# before suites named one, so the fixture names it as the demo suite now does.
TOOL = "devscout"


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    scores = json.loads(GOLDEN.read_text(encoding="utf-8"))
    scores["suite"]["tool_under_test"] = TOOL
    return scores


@pytest.fixture(scope="module")
def document(golden: dict[str, Any]) -> str:
    return render_markdown(golden)


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    return text[start:text.index("\n## ", start + 1)]


def test_a_column_zero_in_every_row_is_left_out_and_named() -> None:
    table = (["arm", "band", "a", "b", "c"],
             [["x", "one", "0", "1", "none"], ["x", "two", "0", "n/a", "0"],
              ["y", "one", "0", "0", "0"]])
    trim = tables.trimmed(table, 2)
    assert trim.table == (["arm", "band", "b"], [["x", "one", "1"]])
    assert trim.rows == [["x", "two"], ["y", "one"]] and trim.columns == ["a", "c"]


def test_the_sentence_names_what_was_left_out(golden: dict[str, Any]) -> None:
    trim = tables.trimmed(tables.correctness(golden), 2)
    text = tables.left_out(trim, golden)
    assert "devscout (every kind)" in text
    assert "ctags (references, impact)" in text
    assert text.endswith("Left out, being 0 or none in every row shown: failures.")
    assert tables.left_out(tables.trimmed((["arm", "band", "n"], [["x", "all", "1"]]), 2),
                           golden) == ""


def test_the_failures_table_shows_only_the_kinds_that_happened(golden: dict[str, Any],
                                                               document: str) -> None:
    section = _section(document, "Failures")
    assert "| arm | unscored: arm-unavailable |\n| --- | --- |\n| devscout (unavailable) | 21 |" \
        in section
    assert "wrong: timeout" not in section and "| rg (baseline) |" not in section
    kinds = len(tables.failures(golden)[0]) - 1  # every column but the arm's is a kind
    assert f"Left out: the {kinds - 1} causes no cell had (each defined under Glossary) and " \
           "the arms with no failed or unscored cell (rg (baseline), ast-grep," in section
    assert "- `arm-unavailable`:" in section and "- `timeout`:" not in section
    assert "**failure.timeout**" in document  # still defined, under Glossary
    quiet = copy.deepcopy(golden)
    quiet["failures"]["devscout"]["arm-unavailable"] = 0
    assert "No cell failed and none is unscored." in _section(render_markdown(quiet),
                                                              "Failures")


def test_the_not_attempted_table_holds_only_the_suites_kinds(golden: dict[str, Any],
                                                             document: str) -> None:
    kinds = {row[1] for row in tables.not_attempted(golden)[1]}
    assert kinds <= tables.suite_kinds(golden) and "locate" in kinds
    assert tables.declared_elsewhere(golden) == ["call-edges", "test-edges"]
    assert "Declarations for kinds this suite has no task of (call-edges, test-edges) are " \
           "left out." in _section(document, "Not attempted")


@pytest.mark.parametrize(("value", "shown"), [(1577.0, "1,577"), (281.5, "281.5"), (2.0, "2"),
                                              (0, "0"), (None, "n/a")])
def test_a_median_of_counts_is_printed_as_a_count(value: float | None, shown: str) -> None:
    assert tables.counted(value) == shown


def test_no_count_carries_a_decimal_it_does_not_have(document: str) -> None:
    cost = _section(document, "Cost")
    assert "| rg | locate | 5 | 1,577 | 6,307 | 27,178 |" in cost
    assert "| rg | references | 6 | 281.5 | 1,125 | 9,368 |" in cost
    reach = _section(document, "Follow-up reach and tool calls")
    assert "| ctags | locate | 5 | 0 | 1.00 | 22 | 117 |" in reach
    peers = _section(document, "Where peers win")
    assert "| locate | median tool calls per task | lower | code-review-graph | 2 | n/a | 1 |" \
        in peers
    assert tables.break_even({"kind": "after", "tasks": 153691}) == "after 153,691 tasks"


def _with_warm_samples(golden: dict[str, Any], warm: int) -> dict[str, Any]:
    """The golden scores with one rg cell given `warm` warm samples, the last an outlier."""
    scores = copy.deepcopy(golden)
    cell = next(c for c in scores["cells"] if c["arm"] == "rg" and c["timing"])
    first = cell["timing"]["samples"][0]
    samples = [dict(first, rep=i, z=0.0, outlier=False) for i in range(warm + 1)]
    samples[-1].update(wall_ns=first["wall_ns"] * 40, z=None, outlier=True)
    cell["timing"].update(samples=samples, warm_n=warm, outliers=1)
    return scores


def test_outliers_need_a_sample_that_can_support_them(golden: dict[str, Any],
                                                      document: str) -> None:
    assert tables.MIN_OUTLIER_SAMPLES == timing.MIN_OUTLIER_SAMPLES == 10
    wall = _section(document, "Wall time")
    assert "An outlier is shown only in a cell with at least 10 warm samples" in wall
    assert "No cell here has that many (at most 3), so no sample is flagged" in wall
    assert "Flagged outliers" not in wall and "outliers flagged." in wall  # named as left out
    assert sum(len(tables.outliers_shown(c)) for c in golden["cells"]) == 0
    assert not any(s["outlier"] for c in golden["cells"] if c["timing"]
                   for s in c["timing"]["samples"])  # nor in scores.json

    enough = _with_warm_samples(golden, tables.MIN_OUTLIER_SAMPLES)
    assert sum(len(tables.outliers_shown(c)) for c in enough["cells"]) == 1
    wall = _section(render_markdown(enough), "Wall time")
    assert "Flagged outliers (kept in every median):" in wall and "modified z inf" in wall
    assert "| outliers flagged |" in wall
    assert "flagged outlier" in render_html(enough)


def test_no_statement_is_true_only_because_nothing_was_measured(golden: dict[str, Any],
                                                                document: str) -> None:
    peers = _section(document, "Where peers win")
    assert "leads or ties 43 of 43" not in peers
    assert f"{TOOL} has no figure in any cell (unavailable), so whether a peer leads it was " \
           "not measured" in peers
    assert f"Left out, having no figure in any row: {TOOL}." in peers

    measured = copy.deepcopy(golden)
    for cell in measured["leaders"][:10]:
        cell["values"][TOOL] = cell["values"]["rg"]
        cell["leaders"] = [*cell["leaders"], TOOL] if "rg" in cell["leaders"] else cell["leaders"]
    statement = leaders.leaders_statement(measured)
    assert f"leads or ties 10 of the 10 cells where {TOOL} has a figure; in the other " \
           f"{len(golden['leaders']) - 10} it has none" in statement

    unnamed = copy.deepcopy(golden)
    unnamed["suite"]["tool_under_test"] = None
    assert leaders.leaders_statement(unnamed) == ("The suite names no tool under test: the table "
                                                  "compares the arms with one another.")


def test_an_empty_truth_list_reads_none(golden: dict[str, Any], document: str) -> None:
    assert "admissible: ;" not in document and "touched: ;" not in document
    assert "Truth: admissible: none; core: web/src/money.ts" in document
    task = "locate-bulk-threshold"
    summary, _ = tasks.task_summary(golden, task, tasks.cells_by_task(golden)[task])
    assert "touched: none; types: BulkDiscountRule." in summary


def test_the_method_is_named_where_any_checkout_finds_it(golden: dict[str, Any],
                                                         document: str) -> None:
    assert "docs/methodology.md in sandbench's source tree" in document
    assert "docs/methodology.md in sandbench&#x27;s source tree" in render_html(golden)
