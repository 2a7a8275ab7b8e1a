"""The Rust edges family's tables: per edge cell its counts, recall and precision (and the
call edges' verdicts), and the oracle's references by site class. Built from scores.json
alone, with the formats of `tables`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.report.tables import Table, integer, share

EDGE_FIGURES = {
    "call-edges": (("population", "oracle population"), ("matched", "matched"),
                   ("in_universe", "arm edges in the universe"),
                   ("claimed", "naming a target file"),
                   ("outside_universe", "outside the universe"),
                   ("in_unindexed_fns", "in fns the oracle never compiled")),
    "test-edges": (("oracle_pairs", "oracle pairs"), ("arm_pairs", "arm pairs"),
                   ("matched", "in both"), ("unresolved", "arm edges naming no target file"),
                   ("in_unindexed_tests", "in tests the oracle never compiled")),
}


def edge_cells(scores: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for c in scores["cells"] if c.get("edges")]


def edge_figures(cell: Mapping[str, Any]) -> Table:
    """One edge cell's counts, recall and precision, and (call edges) its verdicts."""
    detail, grade = cell["edges"], cell["grade"]
    rows = [[label, integer(detail.get(key))] for key, label in EDGE_FIGURES[cell["kind"]]]
    rows += [["recall", share(grade["recall"])], ["precision", share(grade["precision"])]]
    for context, part in detail.get("by_context", {}).items():
        rows.append([f"recall, {context} context ({part['matched']} of {part['population']})",
                     share(part["recall"])])
    for verdict, n in detail.get("verdicts", {}).items():
        rows.append([f"arm edges: {verdict}", integer(n)])
    if "tests" in detail:
        t = detail["tests"]
        rows += [["tests: scan (compiled)", integer(t["scan"])],
                 ["tests: scan, never compiled", integer(t.get("scan_inactive"))],
                 ["tests: the arm's", integer(t["arm"])], ["tests: both", integer(t["both"])]]
    return ["figure", "value"], rows


def site_classes(cell: Mapping[str, Any]) -> Table:
    """The oracle's references by context x shape, split by target class."""
    classes = ("fn", "type", "other", "not-recorded", "external")
    rows = []
    for context, shapes in cell["edges"]["site_classes"].items():
        for shape_name, counts in shapes.items():
            rows.append([context, shape_name, *(integer(counts.get(k, 0)) for k in classes)])
    return ["context", "shape", *classes], rows
