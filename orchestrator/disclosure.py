"""arms/ARM/state.json: what an arm changed in its corpus copy and wrote to /state and /out,
bounded whatever the arm wrote.

The arm's three file systems are listed one at a time from one `walk.Budget` (bytes read,
extent steps, a deadline: the host's whole work on them), each reduced to its part of the
document before the next is walked, so the host holds one listing at a time. Every list of
names keeps its first `limits.DISCLOSED_NAMES` (and `DISCLOSED_NAME_BYTES` of names) in byte
order of the path; the rest is
`KEY_omitted: {"count": N, "bytes": B}` (B: their sizes as the list spells them), so counts
and totals stay exact. A file with several names counts its bytes once (`Snapshot.repeats`).
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from orchestrator import corpus
from orchestrator.fsutil import atomic_write_json
from orchestrator.untrusted import limits, walk

T = TypeVar("T")


def first_names(items: Iterable[tuple[str, int, T]]) -> tuple[list[T], dict[str, int] | None]:
    """Of (path, bytes, row) items: the rows of the first paths in byte order, at most
    `DISCLOSED_NAMES` of them and `DISCLOSED_NAME_BYTES` of names, and the count and bytes of
    the rest (None when nothing is left out). Holds at most twice the kept rows, never the
    whole listing."""
    count, total, kept = 0, 0, []
    for item in items:
        count += 1
        total += item[1]
        kept.append(item)
        if len(kept) >= 2 * limits.DISCLOSED_NAMES:
            kept = _smallest(kept)
    kept, name_bytes = _smallest(kept), 0
    for i, item in enumerate(kept):
        name_bytes += len(os.fsencode(item[0]))
        if name_bytes > limits.DISCLOSED_NAME_BYTES:
            kept = kept[:i]
            break
    left = count - len(kept)
    omitted = {"count": left, "bytes": total - sum(i[1] for i in kept)} if left else None
    return [i[2] for i in kept], omitted


def _smallest(items: list[tuple[str, int, T]]) -> list[tuple[str, int, T]]:
    """The first `DISCLOSED_NAMES` items by path in byte order, in that order."""
    return heapq.nsmallest(limits.DISCLOSED_NAMES, items, key=lambda i: os.fsencode(i[0]))


def _files(snap: corpus.Snapshot, key: str, doc: dict[str, Any]) -> None:
    doc[f"{key}_files"], omitted = first_names(
        (p, e.size, [p, e.size]) for p, e in snap.entries.items() if e.kind == "file")
    if omitted:
        doc[f"{key}_files_omitted"] = omitted
    doc[f"{key}_bytes"] = sum(e.size for p, e in snap.entries.items()
                              if e.kind == "file" and p not in snap.repeats)


def _sparse(snap: corpus.Snapshot, where: str, doc: dict[str, Any]) -> None:
    """Files with holes, digested by their allocated extents (their size is apparent)."""
    doc["sparse_files"][where], omitted = first_names(
        (p, e.size, p) for p, e in snap.entries.items()
        if e.digest.startswith(walk.SPARSE_PREFIX))
    if omitted:
        doc.setdefault("sparse_files_omitted", {})[where] = omitted


def _added(c: corpus.Change) -> int:
    return max(c.size_after - c.size_before, 0)


def _changes(before: corpus.Snapshot, after: corpus.Snapshot, doc: dict[str, Any]) -> None:
    doc["corpus_changes"], omitted = first_names(
        (c.path, _added(c), {"path": c.path, "status": c.status, "kind": c.kind,
                             "size_before": c.size_before, "size_after": c.size_after,
                             "in_git": c.in_git})
        for c in corpus.iter_changes(before, after))
    if omitted:
        doc["corpus_changes_omitted"] = omitted
    doc["corpus_added_bytes"] = sum(_added(c) for c in corpus.iter_changes(before, after)
                                    if c.path not in after.repeats)


def disclose(path: Path, before: corpus.Snapshot,
             snapshot: Callable[[str, walk.Budget], corpus.Snapshot]) -> dict[str, Any]:
    """Write the arm's state.json at `path` from its file systems as `snapshot(name,
    budget)` reads them now, complete up to the walk's bounds, each listing's cut (null when
    complete) beside it; returns the document."""
    budget = walk.Budget()
    doc: dict[str, Any] = {"sparse_files": {}}
    for where in ("corpus", "state", "out"):  # the tamper comparison first, in the budget
        snap = snapshot(where, budget)
        if where == "corpus":
            _changes(before, snap, doc)
        else:
            _files(snap, where, doc)
        doc[f"{where}_cut"] = snap.cut_json()
        _sparse(snap, where, doc)
        del snap  # one listing at a time
    atomic_write_json(path, doc)
    return doc


def omitted(state: Mapping[str, Any], key: str) -> dict[str, int]:
    """The count and bytes a state.json list left out (none for one written whole)."""
    found = state.get(f"{key}_omitted")
    return {"count": int(found["count"]), "bytes": int(found["bytes"])} if found else \
        {"count": 0, "bytes": 0}
