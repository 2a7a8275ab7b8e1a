"""The per-arm notes of the document as plain text, for the Markdown and HTML renderers alike
(each escapes them for where they are shown): where each arm wrote its state, and where the
two forms of the paired cost ratio disagree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.report.tables import arms, bands, shown, two
from orchestrator.score.listed import full_length

# What a walk's bound counts, by guard (orchestrator/untrusted/walk.py): levels, entries and
# mounts need no unit.
CUT_UNITS = {"path-bytes": " bytes", "read-bytes": " bytes", "extents": " seek steps",
             "time": " s"}


def state_notes(scores: Mapping[str, Any]) -> list[tuple[str, str, list[str]]]:
    """Per measured arm: its name, its declared environment, and one line per state file,
    corpus copy change, names left out and listing cut."""
    out = []
    for arm in arms(scores):
        s = scores["state"][arm]
        if s is None:
            continue
        env = ", ".join(f"{k}={v}" for k, v in scores["arms"][arm]["env"].items())
        files = [f"{p} ({n:,} bytes)" for p, n in s["state_files"]]
        changes = [f"{c['status']} {c['path']}" for c in s["corpus_changes"]]
        lines = [f"state: {f}" for f in shown(files, total=full_length(s, "state_files"))]
        lines += _omitted(s, "state_files", "state", "files")
        lines += [f"corpus copy: {c}"
                  for c in shown(changes, total=full_length(s, "corpus_changes"))]
        lines += _omitted(s, "corpus_changes", "corpus copy", "changes")
        lines += [f"{where} listing cut at its {c['guard']} bound ({c['limit']:,}"
                  f"{CUT_UNITS.get(c['guard'], '')}), first left out: {c['at']}"
                  for where, cuts in s.get("listings_cut", {}).items() for c in cuts]
        out.append((arm, env, lines))
    return out


def _omitted(state: Mapping[str, Any], key: str, where: str, what: str) -> list[str]:
    """The line for the names a state list left out (none when it is whole)."""
    left = state.get(f"{key}_omitted")
    return [f"{where}: {left['count']:,} more {what} ({left['bytes']:,} bytes), past the "
            "names state.json lists"] if left else []


def disagreements(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Per arm and kind where the two ratio forms disagree: the heading and the figures."""
    found = []
    for arm in arms(scores):
        per_band = scores["cost_ratios"].get(arm)
        for band in bands(scores) if per_band else []:
            r = per_band[band]
            if r["disagreement"]:
                found.append((f"{arm}, {band}", "the median of the per-task ratios is "
                              f"{two(r['median_of_ratios'])}, the ratio of the medians "
                              f"{two(r['ratio_of_medians'])}: {r['disagreement']}."))
    return found


DISAGREE_TEXT = "The two forms disagree here, and the disagreement is part of the result:"
AGREE_TEXT = "The two forms agree in every kind."
