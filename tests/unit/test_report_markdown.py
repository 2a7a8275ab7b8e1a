"""The results document: rendered from scores.json alone, the same bytes every time, every
section the issue lists, and a committed document checked by rendering it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_score_fixtures import Arm, Cell, RunBuilder, rg_rows

from orchestrator import report
from orchestrator.errors import InputError
from orchestrator.report.markdown import fenced, md_table, render_markdown
from orchestrator.score import compute, score_run

SECTIONS = ["## Verdict", "## Where peers win", "## Scorecard", "## Run and environment",
            "## Failures", "## Corpus and setup cost", "## Choices the suite declares",
            "## Not attempted", "## Tasks", "## Correctness", "## Cost", "## Wall time",
            "## Follow-up reach and tool calls", "## Where each tool wrote its state",
            "## Suite manifest check", "## Glossary"]


@pytest.fixture
def scored(tmp_path: Path) -> RunBuilder:
    b = RunBuilder(tmp_path, arms=[Arm("rg", tool_version="ripgrep 13.0.0"),
                                   Arm("peer", kinds=("references", "locate")),
                                   Arm("devscout", unavailable="no binary")])
    b.cells[("rg", "ref-money")] = Cell(rg_rows("src/a.cs:2:Money", "src/b.cs:2:Money",
                                                "src/d.cs:1:Money"),
                                        walls=(9_000_000, 1_000_000, 1_000_000))
    b.cells[("peer", "ref-money")] = Cell(rg_rows("src/a.cs:2:Money"),
                                          walls=(900_000_000, 2_000_000, 90_000_000))
    b.cells[("rg", "loc-a")] = Cell(rg_rows("src/a.cs:1:class A", "src/b.cs:1:class B",
                                            "src/c.cs:1:class C", "src/d.cs:1:class D"))
    b.cells[("peer", "loc-a")] = Cell(rg_rows("src/c.cs:1:A | B `x`"))
    b.build()
    score_run(b.run_dir, b.suite_dir)
    return b


def test_rendering_twice_writes_the_same_bytes(scored: RunBuilder) -> None:
    first = report.write(scored.run_dir)
    text = first.markdown.read_bytes()
    again = report.write(scored.run_dir)
    assert not again.written and again.markdown.read_bytes() == text


def test_the_document_is_the_same_from_memory_and_from_the_file(scored: RunBuilder) -> None:
    scores, _ = compute(scored.run_dir, scored.suite_dir)
    from_file = json.loads((scored.run_dir / "scores.json").read_text())
    assert render_markdown(scores) == render_markdown(from_file)


def test_the_document_opens_with_the_verdict_and_has_every_section(
        scored: RunBuilder) -> None:
    text = render_markdown(report.read(scored.run_dir))
    head = text.split("\n\n")
    assert head[0] == "# sandbench results: suite mini, 2026-01-01"
    assert head[1] == "## Verdict"
    assert head[2].split("\n")[:2] == [
        "- locate (1 task): rg is best, correct on 1 of 1; next peer, 1 fewer correct over "
        "the 1 task both were graded on; the suite names no tool under test.",
        "- references (1 task): rg is best, correct on 1 of 1; next peer, 1 fewer correct "
        "over the 1 task both were graded on; the suite names no tool under test."]
    environment = text.index("## Run and environment\n\n")
    assert text[environment:].split("\n\n")[1].startswith(
        "```text\nDate 2026-01-01\nCorpus example/mini @ ")
    positions = [text.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    assert "| rg (baseline) | references | 1 | 0 | 0 | 0 | 0 |" in text
    assert "rg: rg-references Money" in text  # the exact command
    assert "precision_cap = 3" in text and "# impact: the cap." in text
    assert '"peer cannot impact"' in text
    assert str(scored.root) not in text


def test_pipes_in_cells_cannot_break_a_table() -> None:
    assert md_table((["a"], [["x | y"]])).splitlines()[2] == "| x \\| y |"
    assert fenced("a ``` b").startswith("````text\n")


def test_where_peers_win_is_generated_for_every_band_and_metric(scored: RunBuilder) -> None:
    scores = report.read(scored.run_dir)
    cells = {(c["band"], c["metric"]): c for c in scores["leaders"]}
    assert len(cells) == 5 * 8 + 3
    assert cells[("references", "tokens_median")]["leaders"] == ["peer"]
    assert cells[("references", "recall_median")]["leaders"] == ["rg"]
    assert cells[("references", "warm_ms")]["values"]["peer"] == 46.0
    text = render_markdown(scores)
    section = text[text.index("## Where peers win"):text.index("## Scorecard")]
    # the header, the rule, four rows saying what each arm's column is, a row per kind with
    # the tasks each arm was graded on, and a row per cell where some arm has a figure; the
    # others are named in a sentence
    empty = [c for c in cells.values() if all(v is None for v in c["values"].values())]
    kinds = {c["band"] for c in cells.values()} - {"setup"}
    assert empty and section.count("\n| ") == len(cells) - len(empty) + 2 + 4 + len(kinds)
    assert f"Left out, no arm having a figure: {empty[0]['band']} (" in section
    for label in ("tool version", "image id", "set-up s (install + index)",
                  "break-even vs baseline"):
        assert f"| setup | {label} |" in section


def test_a_cost_disagreement_is_called_out(tmp_path: Path) -> None:
    b = RunBuilder(tmp_path)
    b.tasks = {k: v for k, v in b.tasks.items() if v["kind"] == "references"}
    for n, (base, arm) in enumerate(((100, 10), (100, 200), (1000, 500))):
        b.tasks[f"ref-{n}"] = {**b.tasks["ref-money"]}
        b.cells[("rg", f"ref-{n}")] = Cell(b"src/a.cs:1:" + b"x" * (base - 12) + b"\n")
        b.cells[("peer", f"ref-{n}")] = Cell(b"src/a.cs:1:" + b"x" * (arm - 12) + b"\n")
    b.build()
    scores, _ = compute(b.run_dir, b.suite_dir)
    assert scores["cost_ratios"]["peer"]["references"]["median_of_ratios"] == 2.0
    text = render_markdown(scores)
    assert ("- **peer, references**: the median of the per-task ratios is 2.00, the ratio of "
            "the medians 0.50: the two forms fall on different sides of 1.") in text


def test_check_finds_any_difference(scored: RunBuilder) -> None:
    done = report.write(scored.run_dir)
    assert report.differences(scored.run_dir) == (done.markdown, [])
    done.markdown.write_text(done.markdown.read_text().replace("| 1.00 |", "| 0.99 |", 1))
    _, diffs = report.differences(scored.run_dir)
    assert any(line.startswith("-") and "0.99" in line for line in diffs)


def test_a_corrupt_scores_file_is_named(scored: RunBuilder) -> None:
    path = scored.run_dir / "scores.json"
    data = json.loads(path.read_text())
    data["cells"][0]["verdict"] = "great"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="cells\\[0\\].verdict") as err:
        report.write(scored.run_dir)
    assert err.value.data["file"] == str(path)
    assert not (scored.run_dir / "results.md").exists()
    path.unlink()
    with pytest.raises(InputError, match="sandbench score"):
        report.write(scored.run_dir)
