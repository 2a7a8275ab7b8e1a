"""The resolver-precision audit path on a fixture whose every figure was worked out by hand:
the family no suite can attempt here (no Roslyn), scored as a run would be."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import InputError
from orchestrator.score import resolver

FIXTURE = Path(__file__).parent / "resolver_fixture"


def test_the_fixture_scores_as_worked_out_by_hand() -> None:
    result = resolver.audit(resolver.load_records(FIXTURE / "refs.jsonl"),
                            resolver.load_edges(FIXTURE / "edges.jsonl"),
                            resolver.load_defs(FIXTURE / "defs.jsonl"),
                            resolver.load_units(FIXTURE / "units.jsonl"))
    assert result["precision"] == {
        "precise": {"edges": 2, "true": 1, "false": 1, "precision": 0.5},
        "ext": {"edges": 1, "true": 1, "false": 0, "precision": 1.0},
        "guess": {"edges": 3, "true": 1, "false": 2, "precision": 0.3333},
        "heuristic": {"edges": 0, "true": 0, "false": 0, "precision": None}}
    assert result["recall"] == {
        "precise": {"sites": 3, "found": 1, "recall": 0.3333},
        "precise+ext": {"sites": 3, "found": 2, "recall": 0.6667},
        "all": {"sites": 3, "found": 3, "recall": 1.0}}
    assert result["recall_by_receiver"] == {
        "call": {"sites": 1, "found": 1, "recall": 1.0},
        "ident": {"sites": 1, "found": 1, "recall": 1.0},
        "this": {"sites": 1, "found": 1, "recall": 1.0}}
    assert result["other_shapes"] == {"conditional": {"sites": 1, "found": 0, "recall": 0.0},
                                      "bare": {"sites": 1, "found": 0, "recall": 0.0}}
    assert result["external"] == {"sites": 2, "silent": 1, "leak": 1,
                                  "leaks": [["src/App/Orders.cs", 18]]}
    assert result["structurally_impossible"] == [
        ["src/App/Orders.cs", 14, "Tests.Fakes.Add", "guess"]]
    assert result["fan_out"] == {"1": 4, "2": 1, "3": 0, "4+": 0}
    assert result["top_false_positive_targets"] == [("Add", 1), ("Total", 1), ("Trim", 1)]
    assert result["top_missed_targets"] == []
    assert result["excluded_files"] == ["src/Broken/Thing.cs"]


def test_without_units_nothing_is_excluded_or_impossible() -> None:
    result = resolver.audit(resolver.load_records(FIXTURE / "refs.jsonl"),
                            resolver.load_edges(FIXTURE / "edges.jsonl"),
                            resolver.load_defs(FIXTURE / "defs.jsonl"))
    assert result["precision"]["precise"] == {"edges": 3, "true": 2, "false": 1,
                                              "precision": 0.6667}
    assert result["structurally_impossible"] == [] and result["excluded_files"] == []


@pytest.mark.parametrize(("text", "where"), [
    ('{"file": "a.cs", "line": "3", "target": "X", "tier": "precise"}\n', "edges.jsonl:1"),
    ('{"file": "a.cs", "line": 3, "target": "X", "tier": "precise"}\nnot json\n', "edges.jsonl:2"),
    ('{"file": "a.cs", "line": 3, "target": "X", "tier": "exact"}\n', "tier"),
])
def test_bad_edge_files_name_file_and_line(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "edges.jsonl"
    path.write_text(text)
    with pytest.raises(InputError, match=where) as err:
        resolver.load_edges(path)
    assert err.value.exit_code == 2
