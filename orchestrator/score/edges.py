"""The Rust edges family's metrics (the methodology's "Rust edges": call edges, test edges,
verdicts, site classes), from the oracle's truth file (`rust_edges`: the universe, every
reference with its site class, the #[test] scan; built by `sandbench truth build`) and the
edges an arm's tool printed (parsers.Edge). Pure: no file is read here.

- Call edges. Population: oracle references of shape path-call in context plain or
  macro-argument whose target class is fn. Recall: the share of the population the arm's call
  edges match on file, line, target name and target's defining file, as multisets. Precision:
  over every arm call edge in the universe that names its target's file, the share with an
  oracle reference (any shape) at its file and line to that target. An edge whose target names
  no file (the tool left the call unresolved) claims no definition: counted apart, outside
  precision.
- Verdicts. Every arm edge in the universe is `match`, `wrong-target` (the oracle resolves the
  same name on that line to something else), `unconfirmed` (no oracle reference of that name
  there) or, naming no file, `unresolved`; every non-match is listed.
- Test edges. Oracle pairs: (test, fn) for each test of the scan and each fn a population site
  inside the test's span calls. Arm pairs: its test edges from a test in the universe to a
  target it names the file of. Precision and recall over the two sets.
- A fn the oracle never compiled (behind a cfg it leaves off, as `cfg(loom)`, or a
  `macro_rules!` template: the index defines nothing on its name's line) says nothing either
  way: every arm edge inside one is set apart and counted, and a test among them leaves both
  pair sets.
- Grade: correct when precision and recall reach the suite's edge bands, partial when one of
  the two does, wrong otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple, Protocol

from orchestrator.score import listed
from orchestrator.score.numbers import r6, ratio

CALL_CONTEXTS = ("plain", "macro-argument")
SITE_FIELDS = 9
DEFINITIONS = {
    "call-edges": "population: the oracle's path calls (plain or macro-argument context) to a "
                  "fn defined in the corpus; recall: the share the arm's call edges match on "
                  "file, line, target name and defining file (multisets); precision: the share "
                  "of the arm's call edges in the universe naming a target file that the oracle "
                  "has a reference for at that file and line; correct: both reach the suite's "
                  "edge bands, partial: one does",
    "test-edges": "oracle pairs: (test of the #[test] scan, fn a population site inside its "
                  "span calls); arm pairs: its test edges from a test in the universe to a "
                  "target whose file it names; precision and recall over the two sets; bands "
                  "as for call-edges",
}


class EdgeLike(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def source(self) -> tuple[str | None, str]: ...
    @property
    def target(self) -> tuple[str | None, str]: ...


class Site(NamedTuple):
    file: str
    line: int
    character: int
    name: str
    context: str
    shape: str
    target: str  # fn, type, other, not-recorded, external
    def_file: str | None
    def_line: int | None


class TestSpan(NamedTuple):
    file: str
    name: str
    line: int
    end_line: int
    active: bool  # the oracle indexed it (not behind a cfg it leaves off)


class BadTruth(ValueError):
    """The truth file's rust_edges block is not what `truth build` writes."""


@dataclass(frozen=True)
class EdgeTruth:
    universe: frozenset[str]
    sites: tuple[Site, ...]
    tests: tuple[TestSpan, ...]
    unindexed: tuple[tuple[str, str, int, int], ...] = ()  # fns the oracle never compiled

    @classmethod
    def of(cls, block: Any) -> EdgeTruth:
        if not isinstance(block, dict) or not {"universe", "sites", "tests",
                                               "unindexed"} <= set(block):
            raise BadTruth("rust_edges must be an object with universe, sites, tests and "
                           "unindexed")
        sites, tests = [], []
        for site in block["sites"]:
            if not isinstance(site, list) or len(site) != SITE_FIELDS:
                raise BadTruth(f"a site must be a list of {SITE_FIELDS} values: {site!r}")
            sites.append(Site(*site))
        for test in block["tests"]:
            if not isinstance(test, list) or len(test) != 5:
                raise BadTruth(f"a test must be [file, name, line, end line, active]: {test!r}")
            tests.append(TestSpan(*test))
        unindexed = []
        for item in block["unindexed"]:
            if not isinstance(item, list) or len(item) != 4:
                raise BadTruth(f"an unindexed fn must be [file, name, line, end line]: "
                               f"{item!r}")
            unindexed.append(tuple(item))
        return cls(frozenset(block["universe"]), tuple(sites), tuple(tests),
                   tuple(unindexed))

    def inactive(self, path: str, line: int) -> bool:
        """Inside a fn the oracle never compiled (behind a cfg it leaves off, a macro_rules!
        template): nothing there can be confirmed or missed, so such edges are set apart."""
        return any(f[0] == path and f[2] <= line <= f[3] for f in self.unindexed)

    def population(self) -> list[Site]:
        return [s for s in self.sites if s.shape == "path-call"
                and s.context in CALL_CONTEXTS and s.target == "fn"]


@dataclass(frozen=True)
class EdgeGrade:
    verdict: str
    recall: Fraction | None
    precision: Fraction | None
    files_named: int
    notes: tuple[str, ...]
    detail: dict[str, Any]


def _verdict(recall: Fraction | None, precision: Fraction | None,
             bands: dict[str, float]) -> str:
    met = [value is not None and value >= Fraction(repr(float(bands[key]))) for value, key in (
        (precision, "edges_correct_precision"), (recall, "edges_correct_recall"))]
    return "correct" if all(met) else "partial" if any(met) else "wrong"


def site_classes(truth: EdgeTruth) -> dict[str, dict[str, dict[str, int]]]:
    """Every oracle reference counted by context, shape and target class."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for s in truth.sites:
        row = table.setdefault(s.context, {}).setdefault(s.shape, {})
        row[s.target] = row.get(s.target, 0) + 1
    return {c: {k: dict(sorted(v.items())) for k, v in sorted(shapes.items())}
            for c, shapes in sorted(table.items())}


def grade_calls(truth: EdgeTruth, edges: Sequence[EdgeLike], bands: dict[str, float]
                ) -> EdgeGrade:
    population = truth.population()
    wanted = Counter((s.file, s.line, s.name, s.def_file) for s in population)
    by_line: dict[tuple[str, int, str], set[str | None]] = {}
    for s in truth.sites:
        by_line.setdefault((s.file, s.line, s.name), set()).add(s.def_file)
    inactive = [e for e in edges if e.path in truth.universe
                and truth.inactive(e.path, e.line)]
    inside = [e for e in edges if e.path in truth.universe
              and not truth.inactive(e.path, e.line)]
    claimed = [e for e in inside if e.target[0] is not None]
    got = Counter((e.path, e.line, e.target[1], e.target[0]) for e in claimed)
    matched = wanted & got
    verdicts: Counter[str] = Counter()
    non_matches = []
    for e in inside:
        oracle = by_line.get((e.path, e.line, e.target[1]), set())
        if e.target[0] is None:
            verdict = "unresolved"
        elif e.target[0] in oracle:
            verdict = "match"
        elif oracle:
            verdict = "wrong-target"
        else:
            verdict = "unconfirmed"
        verdicts[verdict] += 1
        if verdict != "match":
            non_matches.append([e.path, e.line, e.target[1], e.target[0], verdict,
                                sorted(t or "(external)" for t in oracle)])
    recall = ratio(sum(matched.values()), len(population))
    precision = ratio(verdicts["match"], len(claimed))
    missed = sorted((wanted - got).elements(), key=lambda k: (k[0], k[1], k[2], k[3] or ""))
    by_context = {}
    for context in CALL_CONTEXTS:
        part = Counter((s.file, s.line, s.name, s.def_file) for s in population
                       if s.context == context)
        by_context[context] = {"population": sum(part.values()),
                               "matched": sum((part & got).values()),
                               "recall": r6(ratio(sum((part & got).values()),
                                                  sum(part.values())))}
    detail = {
        "population": len(population), "matched": sum(matched.values()),
        "by_context": by_context,
        "arm_edges": len(edges), "in_universe": len(inside), "claimed": len(claimed),
        "outside_universe": len(edges) - len(inside) - len(inactive),
        "in_unindexed_fns": len(inactive),
        "verdicts": {k: verdicts[k] for k in ("match", "wrong-target", "unconfirmed",
                                              "unresolved")},
        "non_matches": [],
        "missed": [list(m) for m in missed],
        "site_classes": site_classes(truth),
    }
    listed.with_lists(detail, {"non_matches": non_matches})
    notes = (f"population {len(population)} oracle path calls, {sum(matched.values())} "
             f"matched", f"{len(claimed)} arm call edges in the universe name a target file: "
             f"{verdicts['match']} match, {verdicts['wrong-target']} wrong-target, "
             f"{verdicts['unconfirmed']} unconfirmed; {verdicts['unresolved']} unresolved "
             "(no target file, outside precision)")
    return EdgeGrade(_verdict(recall, precision, bands), recall, precision,
                     len({e.path for e in edges}), notes, detail)


def oracle_test_pairs(truth: EdgeTruth) -> set[tuple[str, str, str | None, str]]:
    """(test file, test name, fn's defining file, fn name) per population site in a test."""
    spans: dict[str, list[TestSpan]] = {}
    for t in truth.tests:
        if t.active:
            spans.setdefault(t.file, []).append(t)
    pairs = set()
    for s in truth.population():
        for t in spans.get(s.file, []):
            if t.line <= s.line <= t.end_line:
                pairs.add((t.file, t.name, s.def_file, s.name))
    return pairs


def grade_tests(truth: EdgeTruth, edges: Sequence[EdgeLike], bands: dict[str, float]
                ) -> EdgeGrade:
    oracle = oracle_test_pairs(truth)
    off = {(t.file, t.name) for t in truth.tests if not t.active}
    kept = [e for e in edges if e.source[0] in truth.universe
            and (e.source[0], e.source[1]) not in off]
    arm = {(e.source[0], e.source[1], e.target[0], e.target[1]) for e in kept
           if e.target[0] is not None}
    unresolved = sum(1 for e in kept if e.target[0] is None)
    hits = oracle & arm
    recall = ratio(len(hits), len(oracle))
    precision = ratio(len(hits), len(arm))
    scan = {(t.file, t.name) for t in truth.tests if t.active}
    arm_tests = {(e.source[0], e.source[1]) for e in kept}

    def in_order(pairs: set[tuple[Any, ...]]) -> list[list[Any]]:
        return [list(p) for p in sorted(pairs, key=lambda p: tuple(str(x) for x in p))]

    detail = {
        "oracle_pairs": len(oracle), "arm_pairs": len(arm), "matched": len(hits),
        "arm_edges": len(edges), "unresolved": unresolved,
        "in_unindexed_tests": sum(1 for e in edges if (e.source[0], e.source[1]) in off),
        "tests": listed.with_lists({"scan": len(scan), "scan_inactive": len(off),
                                    "arm": len(arm_tests), "both": len(scan & arm_tests),
                                    "arm_only": []}, {"arm_only": in_order(arm_tests - scan)}),
        "missed": in_order(oracle - arm), "extra": [],
    }
    listed.with_lists(detail, {"extra": in_order(arm - oracle)})
    notes = (f"{len(oracle)} oracle pairs from {len(scan)} tests, {len(arm)} arm pairs, "
             f"{len(hits)} in both", f"{unresolved} arm test edges name no target file "
             "(outside precision)")
    return EdgeGrade(_verdict(recall, precision, bands), recall, precision,
                     len({e.path for e in edges}), notes, detail)


def grade(kind: str, truth: EdgeTruth, edges: Sequence[EdgeLike], bands: dict[str, float]
          ) -> EdgeGrade:
    return (grade_calls if kind == "call-edges" else grade_tests)(truth, edges, bands)
