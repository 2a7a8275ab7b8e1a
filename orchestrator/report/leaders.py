"""The table of where peers win: one row per kind x metric, every arm's figure beside the
leader's, under rows saying what each arm's column is (tool version, image, set-up cost,
break-even); the sentence counting how often a peer leads the tool; and what trimming left
out. Built from scores.json alone, with the formats of `tables`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.report.tables import (FORMATTERS, METRIC_FORMAT, NA, Table, Trimmed, arms,
                                        break_even, trimmed, two)


def _identity_rows(scores: Mapping[str, Any], names: list[str]) -> list[list[str]]:
    """What each column is: the tool's version, its locked image id, its one-off set-up cost
    (install plus index build) and its break-even against the baseline."""
    def one_off(arm: str) -> str:
        s = scores["setup"].get(arm)
        if s is None or s["install_seconds"] is None:
            return NA
        index = s["index"]
        if index is not None and index["seconds"] is None:
            return NA
        return two(s["install_seconds"] + (0 if index is None else index["seconds"]))

    def image(arm: str) -> str:
        image_id = scores["arms"][arm].get("image_id")
        return image_id.removeprefix("sha256:")[:12] if image_id else NA

    def even(arm: str) -> str:
        s = scores["setup"].get(arm)
        return NA if s is None else break_even(s["break_even"])

    return [["setup", label, "", "", *(fn(a) for a in names)] for label, fn in (
        ("tool version", lambda a: scores["arms"][a]["tool_version"] or NA),
        ("image id", image), ("set-up s (install + index)", one_off),
        ("break-even vs baseline", even))]


def _tasks_row(scores: Mapping[str, Any], kind: str, names: list[str]) -> list[str]:
    """How many of the kind's tasks each arm was graded on: only an arm graded on every one
    competes for the kind's lead (the scorer's rule, `leader` in the glossary)."""
    summary = scores["summary"]
    tasks = max(sum(summary[a][kind]["counts"].values()) for a in names)
    return [kind, "tasks graded", "", "",
            *(f"{summary[a][kind]['graded']} of {tasks}" if summary[a][kind]["graded"] else NA
              for a in names)]


def leaders(scores: Mapping[str, Any]) -> Table:
    names = arms(scores)
    columns = ["kind", "metric", "better", "leader", *names]
    rows = _identity_rows(scores, names)
    for cell in scores["leaders"]:
        if cell["band"] != rows[-1][0] and cell["band"] in scores["summary"][names[0]]:
            rows.append(_tasks_row(scores, cell["band"], names))
        fmt = FORMATTERS[METRIC_FORMAT[cell["metric"]]]
        rows.append([cell["band"], cell["label"], cell["better"],
                     ", ".join(cell["leaders"]) or "none",
                     *(fmt(cell["values"].get(a)) for a in names)])
    return columns, rows


def leaders_statement(scores: Mapping[str, Any]) -> str:
    """How often a peer leads or ties the tool under test, counted only over the cells where
    it has a figure: a count over cells it never competed in would be true of nothing."""
    cells = scores["leaders"]
    tool = scores["suite"].get("tool_under_test")
    if tool is None:
        return ("The suite names no tool under test: the table compares the arms with one "
                "another.")
    compared = [c for c in cells if c["values"].get(tool) is not None]
    if not compared:
        status = scores["arms"][tool]["status"] if tool in scores["arms"] else "not in the suite"
        return (f"{tool} has no figure in any cell ({status}), so whether a peer leads it "
                "was not measured: the table compares the other arms with one another.")
    lead = sum(1 for c in compared if any(a != tool for a in c["leaders"]))
    rest = len(cells) - len(compared)
    return (f"A peer (any arm but {tool}, the baseline {scores['suite']['baseline']} "
            f"included) leads or ties {lead} of the {len(compared)} cells where {tool} has "
            "a figure" + (f"; in the other {rest} it has none, so they compare only the "
                          "other arms." if rest else "."))


def leaders_trimmed(scores: Mapping[str, Any]) -> Trimmed:
    """The leaders table without the metrics no arm has a figure for and the arms with no
    figure in any row (a 0 there is a figure: 0 bytes on disk)."""
    return trimmed(leaders(scores), 4, frozenset({NA}))


def leaders_left_out(trim: Trimmed) -> str:
    """What `trimmed` left out of the leaders table: metrics no arm has a figure for, arms
    with no figure in any row."""
    parts = []
    if trim.rows:
        per_band: dict[str, list[str]] = {}
        for band, label, *_ in trim.rows:
            per_band.setdefault(band, []).append(label)
        parts.append("Left out, no arm having a figure: " + "; ".join(
            f"{band} ({', '.join(labels)})" for band, labels in per_band.items()) + ".")
    if trim.columns:
        parts.append(f"Left out, having no figure in any row: {', '.join(trim.columns)}.")
    return " ".join(parts)
