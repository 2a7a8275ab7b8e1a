"""The grading parts of the document as data, for the Markdown and HTML renderers alike: the
grading rules in force (declared or default, and each task's overrides), the unstable cells
(every rep's grade, the share per arm), the flags a cell can carry, and the published
figures against the cells here. Each reads scores.json alone; a scores.json written before
these keys existed has none, and its document none of these parts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.report.tables import NA, Table, arms, share

# The rules in the order the document lists them.
RULES = ("cut", "precision_cap", "precision_cap_multiple", "over_cap", "cell_grade")


def has_grading(scores: Mapping[str, Any]) -> bool:
    return "grading" in scores["suite"]


def rules(scores: Mapping[str, Any]) -> Table:
    """Each grading rule, its value in force and whether the suite declares it (a rule it
    leaves out is the default: the grading before rules could be declared)."""
    grading = scores["suite"]["grading"]
    defs = scores["definitions"]
    rows = []
    for rule in RULES:
        value = grading["rules"][rule]
        if rule == "precision_cap_multiple" and value is None:
            continue
        source = "declared" if rule in grading["declared"] else "default"
        rows.append([rule, str(value), source, defs.get(f"grading.{rule}", "")])
    return ["rule", "value", "source", "meaning"], rows


def overrides(scores: Mapping[str, Any]) -> Table:
    """Each task's own rules, over the suite's."""
    rows = [[task, rule, str(value)]
            for task, own in scores["suite"]["grading"]["tasks"].items()
            for rule, value in own.items()]
    return ["task", "rule", "its value"], rows


def has_unstable(scores: Mapping[str, Any]) -> bool:
    return "unstable" in scores


def unstable_shares(scores: Mapping[str, Any]) -> Table:
    """Per arm: its graded cells, how many are unstable, and the share."""
    rows = []
    for arm in arms(scores):
        entry = scores["unstable"].get(arm)
        if entry is None:
            continue
        rows.append([arm, str(entry["graded"]), str(entry["unstable"]), share(entry["share"]),
                     str(entry["reps_not_graded"])])
    return ["arm", "graded cells", "unstable", "share", "reps not graded"], rows


def rep_grade(rep: Mapping[str, Any]) -> str:
    """One rep's grade in a line: `REP 1 partial (recall 0.50, precision 1.00)`."""
    if rep["verdict"] is None:
        return f"REP {rep['rep']} not graded ({rep['not_graded']})"
    failure = f", {rep['failure']}" if rep["failure"] else ""
    return (f"REP {rep['rep']} {rep['verdict']} (recall {share(rep['recall'])}, precision "
            f"{share(rep['precision'])}{failure})")


def unstable_cells(scores: Mapping[str, Any]) -> list[str]:
    """Every unstable cell with each rep's grade and the rep whose grade is the cell's."""
    return [f"{c['arm']} / {c['task']}: " + "; ".join(rep_grade(r) for r in c["reps"])
            + f"; the cell's grade is REP {c['graded_rep']}'s ({c['verdict']})"
            for c in scores["cells"] if c.get("unstable")]


def unstable_text(scores: Mapping[str, Any]) -> str:
    rule = scores["suite"]["grading"]["rules"]["cell_grade"] if has_grading(scores) else "cold"
    total = sum(e["unstable"] for e in scores["unstable"].values())
    missing = sum(e["reps_not_graded"] for e in scores["unstable"].values())
    head = (f"Every rep of a cell is graded; the cell's grade is the {rule} rep's "
            f"(cell_grade = {rule}). Unstable: {scores['definitions'].get('unstable', '')}.")
    head += (" No cell is unstable." if not total else
             f" {total} cell(s) are, each listed below with every rep's grade.")
    if missing:
        head += (f" {missing} rep(s) have no grade of their own (column \"reps not graded\"; "
                 "each cell's reps say why): an unstable cell among those would not be seen.")
    return head


def flags(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each flag the scorer can set, with its definition (scores.json `flag.*`)."""
    return [(key.split(".", 1)[1], value) for key, value in sorted(scores["definitions"].items())
            if key.startswith("flag.")]


def has_published(scores: Mapping[str, Any]) -> bool:
    return bool(scores.get("published"))


def _pair(figure: Mapping[str, Any] | None) -> str:
    if figure is None:
        return NA
    here = NA if figure["here"] is None else figure["here"]
    published = NA if figure["published"] is None else figure["published"]
    return f"{published} / {here}"


def published(scores: Mapping[str, Any]) -> Table:
    """Per published cell: lines, bytes and grade as published / here, any other figure the
    publication printed, and whether every figure is reproduced (else which differ, by how
    much: here - published)."""
    rows = []
    for entry in scores["published"]:
        figures = {f["figure"]: f for f in entry["figures"]}
        others = "; ".join(f"{name} {_pair(figures[name])}"
                           for name in ("recall", "precision", "graded") if name in figures)
        differing = [f"{f['figure']} {_difference(f)}" for f in entry["figures"]
                     if f["reproduced"] is False]
        rows.append([entry["task"], entry["arm"], _pair(figures.get("lines")),
                     _pair(figures.get("bytes")), _pair(figures.get("grade")), others or NA,
                     "yes" if entry["reproduced"] else "no: " + ", ".join(differing)])
    return ["task", "arm", "lines (published / here)", "bytes (published / here)",
            "grade (published / here)", "other figures (published / here)", "reproduced"], rows


def _difference(figure: Mapping[str, Any]) -> str:
    diff = figure["difference"]
    if diff is None:
        return "(no figure here)"
    if isinstance(diff, str):
        return f"({diff})"
    return f"({diff:+,})" if isinstance(diff, int) else f"({diff:+.6f})"


def published_notes(scores: Mapping[str, Any]) -> list[str]:
    """The publications quoted, once each, and each cell's notes."""
    sources = sorted({e["source"] for e in scores["published"]})
    prefixes = sorted({e["path_prefix"] for e in scores["published"]})
    lines = [f"Source: {s}" for s in sources]
    lines.append("Path prefix swapped for /corpus/: " + ", ".join(p or "(none)"
                                                                  for p in prefixes))
    lines += [f"{e['arm']} / {e['task']}: {n}" for e in scores["published"] for n in e["notes"]]
    return lines


def section_tables(scores: Mapping[str, Any]) -> list[Table]:
    """The tables the grading sections show, where scores.json has them: the rules in force,
    the tasks' own rules, the unstable shares per arm, the published figures."""
    out = []
    if has_grading(scores):
        out.append(rules(scores))
        if (own := overrides(scores))[1]:
            out.append(own)
    if has_unstable(scores):
        out.append(unstable_shares(scores))
    if has_published(scores):
        out.append(published(scores))
    return out


def task_command_cells(scores: Mapping[str, Any]) -> dict[str, list[str]]:
    """arm -> the tasks whose cell ran the task file's own command for that arm, in cell
    order (empty: no cell did, and the documents show no section for it)."""
    by_arm: dict[str, list[str]] = {}
    for c in scores["cells"]:
        if c.get("command") == "task":
            by_arm.setdefault(c["arm"], []).append(c["task"])
    return by_arm
