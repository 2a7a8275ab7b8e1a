"""Tool-derived lists as scores.json holds them: at most `limits.DOCUMENT_LIST_MAX_ITEMS`
items each, the first in the list's own order, and how long each cut list was
(`lists_cut`, present only where a list was cut). Every count, recall and precision is
computed over the whole list before it is cut, so a cut changes no figure, only how many
items a reader can see: scores.json and the documents rendered from it stay bounded
whatever a tool printed or wrote."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.untrusted import limits

CUT_KEY = "lists_cut"


def capped(lists: Mapping[str, Sequence[Any]]) -> tuple[dict[str, list[Any]], dict[str, int]]:
    """Each list cut to the document's bound, and the full length of each that was cut."""
    bound = limits.DOCUMENT_LIST_MAX_ITEMS
    kept = {name: list(values[:bound]) for name, values in lists.items()}
    cut = {name: len(values) for name, values in lists.items() if len(values) > bound}
    return kept, cut


def with_lists(entry: dict[str, Any], lists: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """`entry` with `lists` put in it, capped, and `lists_cut` when one was cut."""
    kept, cut = capped(lists)
    entry.update(kept)
    if cut:
        entry[CUT_KEY] = cut
    return entry


def full_length(entry: Mapping[str, Any], name: str) -> int:
    """How many items a list of `entry` had before scores.json kept its first ones."""
    return int(entry.get(CUT_KEY, {}).get(name, len(entry[name])))
