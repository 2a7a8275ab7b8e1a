"""The Rust edges family on hand-written fixtures: the site lexer (context, shape, the #[test]
scan, fns the oracle never compiled), the target classes of SCIP symbols, and the call-edge and
test-edge metrics with exact expected numbers, worked out by hand in the comments."""

from __future__ import annotations

from fractions import Fraction

import pytest

from orchestrator.oracle import rust_sites, truth
from orchestrator.parsers import Edge
from orchestrator.parsers.code_review_graph import CodeReviewGraphParser
from orchestrator.score import edges

SOURCE = '''\
use crate::util::{helper, Thing};

#[derive(Debug)]
struct Point { x: i32 }

fn make() -> Point {
    let s = "helper(1) // not code";
    let c = '(';
    /* helper(2) /* nested */ helper(3) */
    let p = Point { x: helper(4) };
    assert_eq!(helper(5), 5);
    p.x.max(helper::<u8>(6));
    Thing::new().run();
    p
}

#[cfg(test)]
mod tests {
    #[test]
    fn checks_make() {
        let p = super::make();
        assert!(p.x > 0);
    }

    #[cfg_attr(miri, test)]
    fn under_miri() { make(); }

    fn no_body(x: [u8; 4]);
}
'''


def at(text: str, line: int, needle: str, nth: int = 0) -> tuple[int, int]:
    """The 0-based (line, column) of the nth occurrence of needle on a 1-based line."""
    row = text.splitlines()[line - 1]
    col = -1
    for _ in range(nth + 1):
        col = row.index(needle, col + 1)
    return line - 1, col


@pytest.fixture(scope="module")
def src() -> rust_sites.Source:
    return rust_sites.Source.of(SOURCE)


@pytest.mark.parametrize(("line", "needle", "nth", "expected"), [
    (1, "helper", 0, ("use-tree", "value-reference", "helper")),
    (1, "Thing", 0, ("use-tree", "type-position", "Thing")),
    (1, "util", 0, ("use-tree", "path-qualifier", "util")),
    (3, "Debug", 0, ("attribute", "type-position", "Debug")),
    (6, "Point", 0, ("plain", "type-position", "Point")),
    (10, "Point", 0, ("plain", "struct-literal", "Point")),
    (10, "helper", 0, ("plain", "path-call", "helper")),
    (11, "assert_eq", 0, ("plain", "macro-name", "assert_eq")),
    (11, "helper", 0, ("macro-argument", "path-call", "helper")),
    (12, "max", 0, ("plain", "method-call", "max")),
    (12, "helper", 0, ("plain", "path-call", "helper")),  # past the turbofish
    (13, "Thing", 0, ("plain", "path-qualifier", "Thing")),
    (13, "new", 0, ("plain", "path-call", "new")),
    (13, "run", 0, ("plain", "method-call", "run")),
    (14, "p", 0, ("plain", "value-reference", "p")),
    (22, ">", 0, ("macro-argument", "operator", "")),
])
def test_context_and_shape(src: rust_sites.Source, line: int, needle: str, nth: int,
                           expected: tuple[str, str, str]) -> None:
    assert rust_sites.classify(src, *at(SOURCE, line, needle, nth)) == expected


def test_strings_chars_and_nested_comments_are_not_code(src: rust_sites.Source) -> None:
    # Inside a string, a char literal and a nested comment: literal, never a call.
    assert rust_sites.classify(src, *at(SOURCE, 7, "helper"))[1] == "literal"
    assert rust_sites.classify(src, *at(SOURCE, 8, "("))[1] == "literal"
    assert "helper" not in src.code.splitlines()[8]
    assert src.code.splitlines()[8].strip() == ""


def test_the_test_scan_and_the_fn_items(src: rust_sites.Source) -> None:
    assert rust_sites.tests(src) == [rust_sites.FnItem("checks_make", 20, 23),
                                     rust_sites.FnItem("under_miri", 26, 26)]
    # no_body has no body (its `;` ends it, past the `[u8; 4]` of its signature).
    assert rust_sites.fn_items(src) == [rust_sites.FnItem("make", 6, 15),
                                        rust_sites.FnItem("checks_make", 20, 23),
                                        rust_sites.FnItem("under_miri", 26, 26)]


@pytest.mark.parametrize(("symbol", "expected"), [
    ("rust-analyzer cargo demo 0.1.0 util/helper().", "fn"),
    ("rust-analyzer cargo demo 0.1.0 util/Thing#new().", "fn"),
    ("rust-analyzer cargo demo 0.1.0 util/Thing#", "type"),
    ("rust-analyzer cargo demo 0.1.0 util/LIMIT.", "other"),
    ("rust-analyzer cargo demo 0.1.0 util/Thing#field.", "not-recorded"),
    ("rust-analyzer cargo demo 0.1.0 util/make().inner().", "not-recorded"),
    ("local 7", "not-recorded"),
    ("rust-analyzer cargo std 1.85.1 vec/Vec#new().", "external"),
])
def test_target_classes(symbol: str, expected: str) -> None:
    defined = dict.fromkeys((
        "rust-analyzer cargo demo 0.1.0 util/helper().",
        "rust-analyzer cargo demo 0.1.0 util/Thing#new().",
        "rust-analyzer cargo demo 0.1.0 util/Thing#",
        "rust-analyzer cargo demo 0.1.0 util/LIMIT.",
        "rust-analyzer cargo demo 0.1.0 util/Thing#field.",
        "rust-analyzer cargo demo 0.1.0 util/make().inner()."), ("src/util.rs", 0))
    assert truth.target_class(symbol, truth.Definitions(defined)) == expected


# -- the metrics --------------------------------------------------------------------------

def site(file: str, line: int, name: str, shape: str = "path-call", context: str = "plain",
         target: str = "fn", def_file: str | None = "src/util.rs") -> list:
    return [file, line, 0, name, context, shape, target, def_file, None if def_file is None
            else 1]


TRUTH = edges.EdgeTruth.of({
    "universe": ["src/lib.rs", "src/util.rs", "tests/it.rs"],
    "sites": [
        site("src/lib.rs", 10, "helper"),                      # population 1
        site("src/lib.rs", 10, "helper"),                      # population 2 (same line twice)
        site("src/lib.rs", 11, "helper", context="macro-argument"),  # population 3
        site("src/lib.rs", 12, "run", shape="method-call"),    # not population (method)
        site("src/lib.rs", 13, "new", def_file="src/other.rs"),  # population 4
        site("src/lib.rs", 14, "Vec", shape="type-position", target="external", def_file=None),
        site("tests/it.rs", 5, "helper"),                      # population 5, inside test a
        site("tests/it.rs", 6, "new", def_file="src/other.rs"),  # population 6, inside test a
        site("tests/it.rs", 12, "helper"),                     # population 7, inside test b
        site("src/lib.rs", 20, "helper", context="attribute"),  # not population (context)
    ],
    "tests": [["tests/it.rs", "a", 4, 8, True], ["tests/it.rs", "b", 11, 13, True],
              ["tests/it.rs", "loom_only", 20, 25, False]],
    "unindexed": [["tests/it.rs", "loom_only", 20, 25]],
})
BANDS = {"edges_correct_precision": 0.98, "edges_correct_recall": 0.85}


def edge(path: str, line: int, target: tuple[str | None, str],
         source: tuple[str | None, str] = ("src/lib.rs", "caller")) -> Edge:
    return Edge(path, line, source, target)


def test_call_edges_by_hand() -> None:
    arm = [
        edge("src/lib.rs", 10, ("src/util.rs", "helper")),  # match, population
        edge("src/lib.rs", 12, ("src/util.rs", "run")),     # match (any shape), not population
        edge("src/lib.rs", 13, ("src/util.rs", "new")),     # wrong-target: oracle says other.rs
        edge("src/lib.rs", 30, ("src/util.rs", "gone")),    # unconfirmed
        edge("src/lib.rs", 11, (None, "helper")),            # unresolved: outside precision
        edge("tests/it.rs", 5, ("src/util.rs", "helper")),  # match, population
        edge("tests/it.rs", 21, ("src/util.rs", "helper")),  # in a fn never compiled: apart
        edge("benches/b.rs", 3, ("src/util.rs", "helper")),  # outside the universe
    ]
    graded = edges.grade("call-edges", TRUTH, arm, BANDS)
    # Population 7 (sites 1, 2, 3, 5, 6, 7, 4); matched 2 (lib.rs:10 once, it.rs:5).
    assert graded.recall == Fraction(2, 7)
    # Claimed in the universe: 5 (lib 10, 12, 13, 30; it 5); 3 match.
    assert graded.precision == Fraction(3, 5)
    assert graded.verdict == "wrong"
    d = graded.detail
    assert (d["population"], d["matched"], d["arm_edges"], d["in_universe"], d["claimed"],
            d["outside_universe"], d["in_unindexed_fns"]) == (7, 2, 8, 6, 5, 1, 1)
    assert d["verdicts"] == {"match": 3, "wrong-target": 1, "unconfirmed": 1, "unresolved": 1}
    assert d["by_context"] == {"plain": {"population": 6, "matched": 2, "recall": 0.333333},
                               "macro-argument": {"population": 1, "matched": 0,
                                                  "recall": 0.0}}
    assert d["non_matches"] == [
        ["src/lib.rs", 13, "new", "src/util.rs", "wrong-target", ["src/other.rs"]],
        ["src/lib.rs", 30, "gone", "src/util.rs", "unconfirmed", []],
        ["src/lib.rs", 11, "helper", None, "unresolved", ["src/util.rs"]]]
    assert d["missed"] == [["src/lib.rs", 10, "helper", "src/util.rs"],
                           ["src/lib.rs", 11, "helper", "src/util.rs"],
                           ["src/lib.rs", 13, "new", "src/other.rs"],
                           ["tests/it.rs", 6, "new", "src/other.rs"],
                           ["tests/it.rs", 12, "helper", "src/util.rs"]]
    assert d["site_classes"]["plain"]["path-call"] == {"fn": 6}
    assert d["site_classes"]["plain"]["type-position"] == {"external": 1}


def test_call_edges_bands() -> None:
    population = [edge(s.file, s.line, (s.def_file, s.name)) for s in TRUTH.population()]
    every = edges.grade("call-edges", TRUTH, population, BANDS)
    assert (every.recall, every.precision, every.verdict) == (1, 1, "correct")
    # 6 of 7 (0.857) still reaches 0.85 recall; 5 of 7 does not: partial.
    most = edges.grade("call-edges", TRUTH, population[1:], BANDS)
    assert (most.recall, most.precision, most.verdict) == (Fraction(6, 7), 1, "correct")
    fewer = edges.grade("call-edges", TRUTH, population[2:], BANDS)
    assert (fewer.recall, fewer.verdict) == (Fraction(5, 7), "partial")
    nothing = edges.grade("call-edges", TRUTH, [], BANDS)
    assert (nothing.recall, nothing.precision, nothing.verdict) == (0, None, "wrong")


def test_test_edges_by_hand() -> None:
    # Oracle pairs: a -> util.helper, a -> other.new, b -> util.helper (3).
    assert edges.oracle_test_pairs(TRUTH) == {
        ("tests/it.rs", "a", "src/util.rs", "helper"), ("tests/it.rs", "a", "src/other.rs", "new"),
        ("tests/it.rs", "b", "src/util.rs", "helper")}
    arm = [
        Edge("tests/it.rs", 5, ("tests/it.rs", "a"), ("src/util.rs", "helper")),  # hit
        Edge("tests/it.rs", 5, ("tests/it.rs", "a"), ("src/util.rs", "helper")),  # same pair
        Edge("tests/it.rs", 6, ("tests/it.rs", "a"), ("src/util.rs", "new")),     # extra
        Edge("tests/it.rs", 7, ("tests/it.rs", "a"), (None, "len")),              # unresolved
        Edge("tests/it.rs", 21, ("tests/it.rs", "loom_only"), ("src/util.rs", "helper")),
        Edge("benches/b.rs", 3, ("benches/b.rs", "bench"), ("src/util.rs", "helper")),
    ]
    graded = edges.grade("test-edges", TRUTH, arm, BANDS)
    assert graded.recall == Fraction(1, 3)
    assert graded.precision == Fraction(1, 2)
    assert graded.verdict == "wrong"
    d = graded.detail
    assert (d["oracle_pairs"], d["arm_pairs"], d["matched"], d["unresolved"],
            d["in_unindexed_tests"]) == (3, 2, 1, 1, 1)
    assert d["tests"] == {"scan": 2, "scan_inactive": 1, "arm": 1, "both": 1, "arm_only": []}
    assert d["missed"] == [["tests/it.rs", "a", "src/other.rs", "new"],
                           ["tests/it.rs", "b", "src/util.rs", "helper"]]
    assert d["extra"] == [["tests/it.rs", "a", "src/util.rs", "new"]]


def test_a_truth_block_of_another_shape_is_refused() -> None:
    with pytest.raises(edges.BadTruth, match="universe, sites, tests and unindexed"):
        edges.EdgeTruth.of({"universe": [], "sites": []})
    with pytest.raises(edges.BadTruth, match="list of 9 values"):
        edges.EdgeTruth.of({"universe": [], "sites": [["a", 1]], "tests": [], "unindexed": []})


def test_code_review_graph_edges_parse_both_ways_round() -> None:
    parser = CodeReviewGraphParser()
    calls = (b'{"file": "/corpus/src/lib.rs", "kind": "CALLS", "line": 10, "resolution": '
             b'"direct", "source": "/corpus/src/lib.rs::make", "target": '
             b'"/corpus/src/util.rs::Thing.new"}\n'
             b'{"file": "/corpus/src/lib.rs", "kind": "CALLS", "line": 11, "resolution": '
             b'"unresolved", "source": "/corpus/src/lib.rs::make", "target": "Box::new"}\n')
    parsed = parser.parse(calls, b"sandbench-call: sqlite3\n", "call-edges")
    assert parsed.edges == (
        Edge("src/lib.rs", 10, ("src/lib.rs", "make"), ("src/util.rs", "new")),
        Edge("src/lib.rs", 11, ("src/lib.rs", "make"), (None, "new")))
    assert parsed.calls == 1 and [r.line for r in parsed.rows] == [10, 11]
    tested = (b'{"file": "/corpus/tests/it.rs", "kind": "TESTED_BY", "line": 5, "resolution": '
              b'null, "source": "/corpus/src/util.rs::helper", "target": '
              b'"/corpus/tests/it.rs::a"}\n')
    assert parser.parse(tested, b"", "test-edges").edges == (
        Edge("tests/it.rs", 5, ("tests/it.rs", "a"), ("src/util.rs", "helper")),)
    from orchestrator.parsers import ParseError
    with pytest.raises(ParseError, match="TESTED_BY edge"):
        parser.parse(calls, b"", "test-edges")


def test_truth_build_refuses_an_edge_task_without_a_population(tmp_path) -> None:
    import shutil
    from pathlib import Path

    from orchestrator import arms, suite
    from orchestrator.errors import InputError
    from orchestrator.oracle import build

    repo = Path(__file__).resolve().parents[2]
    shutil.copytree(repo / "suites" / "rust-edges", tmp_path / "suites" / "rust-edges")
    the_suite = suite.load_suite(tmp_path / "suites", "rust-edges")
    (spec,) = arms.load_arms(repo / "arms", ["oracle-rust-analyzer"])
    empty = {"universe": ["src/lib.rs"], "sites": [site("src/lib.rs", 3, "run",
                                                        shape="method-call")],
             "tests": [], "unindexed": []}
    with pytest.raises(InputError, match="call-edges.toml: the oracle's truth for this task "
                                         "is empty"):
        build._check_edge_tasks(the_suite, spec, {"rust_edges": empty})
    with pytest.raises(InputError, match="oracle.arm"):
        build._check_edge_tasks(the_suite, spec, {})
    build._check_edge_tasks(the_suite, spec, {"rust_edges": {
        **empty, "sites": [site("src/lib.rs", 3, "run")]}})
