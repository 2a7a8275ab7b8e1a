"""Correctness bands at their edges, on hand-made rows: every threshold is met exactly where
the methodology says and missed one file past it."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.score import correctness
from orchestrator.score.numbers import at_least
from orchestrator.suite import Task
from test_score_fixtures import BANDS, R


def task(kind: str, truth: dict, inputs: dict | None = None) -> Task:
    default = {"locate": {"ticket": "t"}, "e2e-retrieval": {"ticket": "t"},
               "references": {"symbol": "S"}, "impact": {"seed": "seed.cs"}}[kind]
    return Task(id="t", kind=kind, language="csharp", explanation="", input=inputs or default,
                truth=truth, path=Path("t.toml"))


def rows(*paths: str) -> list[R]:
    return [R(p) for p in paths]


CORE4 = {"core": ["c1", "c2", "c3", "c4"], "admissible": ["adm"]}


# -- references -------------------------------------------------------------------------------

def test_references_exactly_75_percent_with_2_outside_is_correct() -> None:
    g = correctness.grade_references(rows("c1", "c2", "c3", "x1", "x2", "adm"),
                                     task("references", CORE4), BANDS)
    assert g.verdict == "correct"
    assert float(g.recall) == 0.75 and g.outside == ("x1", "x2")
    assert float(g.precision) == 4 / 6


def test_references_75_percent_with_3_outside_is_only_partial() -> None:
    g = correctness.grade_references(rows("c1", "c2", "c3", "x1", "x2", "x3"),
                                     task("references", CORE4), BANDS)
    assert g.verdict == "partial" and len(g.outside) == 3
    assert any("outside" in n for n in g.notes)


def test_references_nine_of_twelve_is_exactly_75_percent() -> None:
    core = [f"c{i}" for i in range(12)]
    g = correctness.grade_references(rows(*core[:9]), task("references", {"core": core}), BANDS)
    assert g.verdict == "correct"
    g = correctness.grade_references(rows(*core[:8]), task("references", {"core": core}), BANDS)
    assert g.verdict == "partial"


def test_references_exactly_40_percent_is_partial_and_below_is_wrong() -> None:
    core = {"core": ["c1", "c2", "c3", "c4", "c5"]}
    assert correctness.grade_references(rows("c1", "c2"), task("references", core),
                                        BANDS).verdict == "partial"
    assert correctness.grade_references(rows("c1"), task("references", core),
                                        BANDS).verdict == "wrong"


def test_admissible_files_are_never_counted_outside() -> None:
    g = correctness.grade_references(rows("c1", "c2", "c3", "c4", "adm"),
                                     task("references", CORE4), BANDS)
    assert g.outside == () and g.precision == 1


def test_exact_band_comparison() -> None:
    assert at_least(3, 4, 0.75) and not at_least(2, 4, 0.75)
    assert at_least(2, 5, 0.4) and not at_least(1, 3, 0.4)
    assert not at_least(0, 0, 0.0)


# -- locate -----------------------------------------------------------------------------------

LOCATE = {"primary": "p.cs", "touched": ["t.cs"], "types": ["Pricing"]}


def test_locate_primary_in_the_cut_is_correct() -> None:
    g = correctness.grade_locate(rows("x.cs", "p.cs"), task("locate", LOCATE), top_k=2)
    assert g.verdict == "correct" and float(g.recall) == 0.5 and float(g.precision) == 0.5


def test_locate_primary_past_the_cut_is_not_counted() -> None:
    g = correctness.grade_locate(rows("a", "b", "c", "p.cs"), task("locate", LOCATE), top_k=3)
    assert g.verdict == "wrong" and g.answer == ("a", "b", "c") and g.files_named == 4
    assert any("cut at the first 3 of 4" in n for n in g.notes)


def test_locate_the_cut_counts_distinct_files() -> None:
    g = correctness.grade_locate(rows("a", "a", "a", "p.cs"), task("locate", LOCATE), top_k=2)
    assert g.verdict == "correct" and g.answer == ("a", "p.cs")


def test_locate_another_touched_file_is_partial() -> None:
    g = correctness.grade_locate(rows("t.cs"), task("locate", LOCATE), top_k=5)
    assert g.verdict == "partial"


def test_locate_the_right_type_in_the_wrong_file_is_partial() -> None:
    answer = [R("x.cs", 3, "class Pricing {")]
    assert correctness.grade_locate(answer, task("locate", LOCATE), 5).verdict == "partial"
    # a longer identifier holding the name is not the type
    answer = [R("x.cs", 3, "class PricingEngine {")]
    assert correctness.grade_locate(answer, task("locate", LOCATE), 5).verdict == "wrong"


def test_locate_nothing_right_is_wrong_and_empty_has_no_precision() -> None:
    g = correctness.grade_locate([], task("locate", LOCATE), 5)
    assert g.verdict == "wrong" and g.recall == 0 and g.precision is None


# -- impact -----------------------------------------------------------------------------------

IMPACT = {"graded": ["g1", "g2", "g3", "g4"]}


def test_impact_every_graded_file_is_correct() -> None:
    g = correctness.grade_impact(rows("g1", "g2", "g3", "g4", "x"), task("impact", IMPACT),
                                 precision_cap=5, bands=BANDS)
    assert g.verdict == "correct" and float(g.precision) == 0.8


def test_impact_exactly_half_is_partial_and_less_is_wrong() -> None:
    assert correctness.grade_impact(rows("g1", "g2"), task("impact", IMPACT), 5,
                                    BANDS).verdict == "partial"
    assert correctness.grade_impact(rows("g1"), task("impact", IMPACT), 5,
                                    BANDS).verdict == "wrong"


def test_impact_over_the_cap_is_wrong_whatever_it_holds() -> None:
    answer = rows("g1", "g2", "g3", "g4", "x1", "x2")
    g = correctness.grade_impact(answer, task("impact", IMPACT), precision_cap=5, bands=BANDS)
    assert g.verdict == "wrong" and g.recall == 1
    assert any("over the precision cap: 6 files named, the cap is 5" in n for n in g.notes)


def test_impact_at_the_cap_and_the_seed_does_not_count() -> None:
    answer = rows("seed.cs", "g1", "g2", "g3", "g4", "x1")
    g = correctness.grade_impact(answer, task("impact", IMPACT), precision_cap=5, bands=BANDS)
    assert g.verdict == "correct" and "seed.cs" not in g.answer and g.files_named == 6


# -- e2e-retrieval ----------------------------------------------------------------------------

def test_e2e_retrieval_is_graded_as_retrieval() -> None:
    t = task("e2e-retrieval", {"touched": ["a", "b"]})
    assert correctness.grade_e2e_retrieval(rows("b", "a"), t, 2).verdict == "correct"
    assert correctness.grade_e2e_retrieval(rows("b", "x", "a"), t, 2).verdict == "partial"
    assert correctness.grade_e2e_retrieval(rows("x", "y", "a"), t, 2).verdict == "wrong"


@pytest.mark.parametrize("raw,expected", [("./src/a.cs", "src/a.cs"),
                                          ("/corpus/src/a.cs", "src/a.cs"),
                                          ("src//a.cs", "src/a.cs"), ("src/a.cs", "src/a.cs")])
def test_paths_are_compared_normalised(raw: str, expected: str) -> None:
    assert correctness.normalise(raw) == expected


def test_grade_dispatches_on_kind() -> None:
    with pytest.raises(ValueError):
        patch = Task("t", "patch", "csharp", "", {}, {}, Path("t"))
        correctness.grade([], patch, None)  # type: ignore[arg-type]
