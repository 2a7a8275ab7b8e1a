"""The per-answer budget (`limits.ANSWER_MAX_*`) and the bounded documents
(`limits.DOCUMENT_LIST_MAX_ITEMS`), with the bounds made small: every parser stops at the first
row, line or JSON item past its bound and the cell is a classified `parse-error` (never graded
on a cut), the same bytes always give the same cell, one arm's answer changes only its cells,
every tool-derived list scores.json and results.md copy is cut to the bound with the count
of the whole, and a published comparison counts its lines and bytes without building a copy
of the answer."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_grading_rules import _figures, _swapped
from test_parsers import FIXTURES, fixture
from test_score_fixtures import Arm, Cell, RunBuilder, rg_rows

from orchestrator import parsers
from orchestrator.score import shapes
from orchestrator.report.markdown import render_markdown
from orchestrator.score import compute, edges, listed, published, score_run
from orchestrator.untrusted import decode, limits
from orchestrator.untrusted.errors import HostileInput

# A fixture's kind, from its name (tests/unit/parser_fixtures/README.md).
KINDS = {"references": "references", "refs": "references", "impact": "impact",
         "locate": "locate", "find": "locate"}
# ctags prints rg's format and has no parser of its own.
PARSER_OF = {"ctags": "rg"}


def _answers() -> list[tuple[str, str, str]]:
    """Every captured answer with at least one row: (parser, fixture, kind)."""
    found = []
    for out in sorted(FIXTURES.glob("*/*.stdout")):
        kind = KINDS.get(out.stem.split("-")[0])
        parser = PARSER_OF.get(out.parent.name, out.parent.name)
        if kind and parsers.get_parser(parser).parse(*fixture(out.parent.name, out.stem),
                                                     kind).rows:
            found.append((out.parent.name, out.stem, kind))
    return found


ANSWERS = _answers()


def _parse(arm: str, name: str, kind: str) -> parsers.Parsed:
    return parsers.get_parser(PARSER_OF.get(arm, arm)).parse(*fixture(arm, name), kind)


def test_every_parser_has_a_captured_answer_here() -> None:
    assert {PARSER_OF.get(a, a) for a, _, _ in ANSWERS} == set(parsers.PARSERS)


@pytest.mark.parametrize(("arm", "name", "kind"), ANSWERS)
def test_each_parser_reads_to_the_row_budget_and_refuses_one_row_more(
        arm: str, name: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _parse(arm, name, kind)
    monkeypatch.setattr(limits, "ANSWER_MAX_ROWS", len(whole.rows))
    assert _parse(arm, name, kind) == whole
    monkeypatch.setattr(limits, "ANSWER_MAX_ROWS", len(whole.rows) - 1)
    with pytest.raises(HostileInput) as refused:
        _parse(arm, name, kind)
    assert refused.value.kind == "too-many-rows"
    assert f"more than {len(whole.rows) - 1:,} rows" in str(refused.value)


def test_the_row_budget_stops_the_parse_at_the_first_row_past_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing past row N+1 is read: a line there that is not a row changes nothing."""
    monkeypatch.setattr(limits, "ANSWER_MAX_ROWS", 3)
    flood = rg_rows(*(f"src/f{i}.cs:1:x" for i in range(5))) + b"not a row\n"
    with pytest.raises(HostileInput, match="too-many-rows"):
        parsers.PARSERS["rg"].parse(flood, b"", "references")


def test_an_edge_answer_is_read_to_the_row_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    edge = {"kind": "CALLS", "file": "/corpus/src/lib.rs", "line": 3,
            "source": "/corpus/src/lib.rs::a", "target": "/corpus/src/lib.rs::b"}
    out = "\n".join(json.dumps(edge) for _ in range(4)).encode()
    monkeypatch.setattr(limits, "ANSWER_MAX_ROWS", 4)
    assert len(parsers.PARSERS["code-review-graph"].parse(out, b"", "call-edges").edges) == 4
    monkeypatch.setattr(limits, "ANSWER_MAX_ROWS", 3)
    with pytest.raises(HostileInput, match="too-many-rows"):
        parsers.PARSERS["code-review-graph"].parse(out, b"", "call-edges")


@pytest.mark.parametrize("parser", ["rg", "devscout"])
def test_lines_that_are_no_rows_count_against_the_line_budget(
        parser: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "ANSWER_MAX_LINES", 5)
    assert parsers.PARSERS[parser].parse(b"\n" * 5, b"", "locate").rows == ()
    with pytest.raises(HostileInput, match="too-many-lines"):
        parsers.PARSERS[parser].parse(b"\n" * 6, b"", "locate")


def test_a_file_list_is_read_to_the_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    shape = shapes.Shape(output=shapes.FILE_LIST)
    out = b"src/a.cs\nsrc/b.cs\nsrc/c.cs\n"
    monkeypatch.setattr(limits, "ANSWER_MAX_ROWS", 3)
    rg = parsers.PARSERS["rg"]
    assert len(shapes.parse_output(rg, out, b"", "references", shape).rows) == 3
    monkeypatch.setattr(limits, "ANSWER_MAX_ROWS", 2)
    with pytest.raises(HostileInput, match="too-many-rows"):
        shapes.parse_output(rg, out, b"", "references", shape)


def test_json_past_the_item_budget_is_refused_before_it_is_decoded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The array, 3 objects, 2 separating commas and 3 inside them: 9 items before decoding,
    # the top-level value the 10th; brackets and commas inside strings are not structure.
    text = '[{"file": "a,[{", "x": 1}, {"file": "b", "x": 2}, {"file": "c]", "x": 3}]'
    assert len(list(decode.json_values(text, what="t", max_items=10))) == 1
    with pytest.raises(HostileInput) as refused:
        list(decode.json_values(text, what="t", max_items=8))
    assert refused.value.kind == "too-many-items" and refused.value.data["found"] == 9
    with pytest.raises(HostileInput, match="10 counted"):
        list(decode.json_values(text, what="t", max_items=9))
    # A stream of top-level values counts each as it comes.
    assert len(list(decode.json_values("1 2 3", what="t", max_items=3))) == 3
    with pytest.raises(HostileInput, match="too-many-items"):
        list(decode.json_values("1 2 3 4", what="t", max_items=3))
    monkeypatch.setattr(limits, "ANSWER_MAX_JSON_ITEMS", 8)
    with pytest.raises(HostileInput, match="too-many-items"):
        parsers.PARSERS["ast-grep"].parse(text.encode(), b"", "references")


def test_a_text_read_line_by_line_is_the_text_decoded_whole() -> None:
    data = b"a\r\n\xe2\x82\n\xff\xfeb\n\n\xf0\x9f\x98\x80c\r\nlast"
    want = [line.removesuffix("\r") for line in parsers.decode(data).split("\n")]
    assert [line for _, line in parsers.lines(data, "p")] == want
    assert [n for n, _ in parsers.lines(data + b"\n", "p")] == list(range(1, len(want) + 1))


# -- the scorer: the cell, its neighbours, the documents -------------------------------------

FLOOD = rg_rows(*(f"src/flood/f{i}.cs:{i + 1}:Money m;" for i in range(12)))


def _run(root: Path, flood: bytes | None) -> RunBuilder:
    b = RunBuilder(root, arms=[Arm("rg"), Arm("h-flood"), Arm("rg-late")])
    honest = rg_rows("src/a.cs:2:Money m;", "src/b.cs:2:Money m;", "src/d.cs:1:Money")
    for arm in ("rg", "h-flood", "rg-late"):
        b.cells[(arm, "ref-money")] = Cell(honest)
    if flood is not None:
        b.cells[("h-flood", "ref-money")] = Cell(flood)
    return b.build()


def _cell(scores: dict[str, Any], arm: str, task: str = "ref-money") -> dict[str, Any]:
    (cell,) = [c for c in scores["cells"] if c["arm"] == arm and c["task"] == task]
    return cell


def _others(scores: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in scores["cells"] if c["arm"] != "h-flood"]


def test_an_answer_past_the_budget_is_a_classified_wrong_cell_never_a_cut(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "ANSWER_MAX_ROWS", 10)
    # The flood names the three core files first: graded on a cut it would be correct.
    flood = rg_rows("src/a.cs:2:Money m;", "src/b.cs:2:Money m;", "src/d.cs:1:Money") + FLOOD
    built = _run(tmp_path / "flood", flood)
    scores = score_run(built.run_dir, built.suite_dir)
    cell = _cell(scores, "h-flood")
    assert (cell["verdict"], cell["failure"]) == ("wrong", "parse-error")
    assert cell["parse_error"].startswith("too-many-rows: rg: the answer has more than 10 rows")
    assert cell["grade"]["recall"] == 0.0 and cell["grade"]["answer"] == []
    assert cell["reach"] is None
    assert scores["failures"]["h-flood"]["parse-error"] == 1
    # The same bytes, the same cell: scored again (the self-check) and from a fresh copy.
    assert score_run(built.run_dir, built.suite_dir)["cells"] == scores["cells"]
    again, _ = compute(_run(tmp_path / "again", flood).run_dir, built.suite_dir)
    assert _cell(again, "h-flood") == cell
    # Every other cell is the one of the same run with an honest answer in its place.
    honest, _ = compute(_run(tmp_path / "honest", None).run_dir, built.suite_dir)
    assert _others(scores) == _others(honest)
    assert "too-many-rows" in render_markdown(scores)


def test_answer_lists_in_scores_json_and_results_md_are_cut_with_their_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "DOCUMENT_LIST_MAX_ITEMS", 5)
    built = _run(tmp_path, FLOOD)
    scores = score_run(built.run_dir, built.suite_dir)
    grade = _cell(scores, "h-flood")["grade"]
    flood_files = [f"src/flood/f{i}.cs" for i in range(12)]
    # Every figure is over the whole answer; the lists hold its first files.
    assert (grade["verdict"], grade["files_named"], grade["precision"]) == ("wrong", 12, 0.0)
    assert grade["answer"] == grade["outside"] == flood_files[:5]
    assert grade["lists_cut"] == {"answer": 12, "outside": 12}
    assert listed.full_length(grade, "outside") == 12
    assert "lists_cut" not in _cell(scores, "rg")["grade"]  # an honest answer: no cut
    on_disk = json.loads((built.run_dir / "scores.json").read_text())
    assert _cell(on_disk, "h-flood")["grade"] == grade
    document = render_markdown(scores)
    assert "f4.cs, ... 7 more (the first 5 in scores.json)" in document
    assert "src/flood/f5.cs" not in document


def test_listings_copied_into_scores_json_are_cut_with_their_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "DOCUMENT_LIST_MAX_ITEMS", 5)
    built = _run(tmp_path, None)
    state = built.run_dir / "arms" / "h-flood" / "state.json"
    data = json.loads(state.read_text())
    data["state_files"] = [[f"home/f{i}", 1] for i in range(30)]
    data["corpus_changes"] = [{"status": "added", "path": f"x{i}"} for i in range(7)]
    state.write_text(json.dumps(data))
    scores = score_run(built.run_dir, built.suite_dir)
    entry = scores["state"]["h-flood"]
    assert entry["state_files"] == [[f"home/f{i}", 1] for i in range(5)]
    assert len(entry["corpus_changes"]) == 5
    assert entry["lists_cut"] == {"state_files": 30, "corpus_changes": 7}
    assert "lists_cut" not in scores["state"]["rg"]
    document = render_markdown(scores)
    assert "home/f4 (1 bytes)\n  - state: ... 25 more (the first 5 in scores.json)" in document
    assert "| h-flood | bench/runs/" in document and "| 30 |" in document


def test_edge_non_matches_are_cut_with_their_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "DOCUMENT_LIST_MAX_ITEMS", 2)
    truth = edges.EdgeTruth(frozenset({"src/lib.rs"}), (), ())
    arm = [parsers.Edge("src/lib.rs", i, ("src/lib.rs", "a"), ("src/lib.rs", f"f{i}"))
           for i in range(1, 6)]
    bands = {"edges_correct_precision": 0.98, "edges_correct_recall": 0.85}
    calls = edges.grade_calls(truth, arm, bands).detail
    assert calls["verdicts"]["unconfirmed"] == 5 and len(calls["non_matches"]) == 2
    assert calls["lists_cut"] == {"non_matches": 5}
    tests = edges.grade_tests(truth, arm, bands).detail
    assert (tests["arm_pairs"], len(tests["extra"]), tests["lists_cut"]) == (5, 2, {"extra": 5})


def test_the_swapped_figures_are_those_of_the_swapped_output() -> None:
    """Counted without building the swapped copy, on every shape of line break, a last line
    that is the mount itself, and prefixes that are empty or hold a newline."""
    rng = random.Random(7)
    parts = [b"/corpus/", b"a", b"\n", b"\r", b"\r\n", b"/corpus", b"x/"]
    for _ in range(20_000):
        out = b"".join(rng.choice(parts) for _ in range(rng.randint(0, 8)))
        for prefix in ("p/", "", "a\n", "\n"):
            assert published.swapped_figures(out, prefix) == \
                _figures(_swapped(out, prefix)), (out, prefix)
