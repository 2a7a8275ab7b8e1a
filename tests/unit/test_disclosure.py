"""orchestrator.disclosure: state.json keeps at most a declared number of names per list, in
byte order, with the count and bytes of the rest, and counts a file with several names once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orchestrator import corpus, disclosure
from orchestrator.untrusted import limits, walk

MANY = 33


def _fs(root: Path) -> dict[str, Path]:
    out = {}
    for name in ("corpus", "state", "out"):
        out[name] = root / name
        out[name].mkdir()
    return out


def test_every_list_keeps_its_first_names_and_counts_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "DISCLOSED_NAMES", 5)
    fs = _fs(tmp_path)
    (fs["corpus"] / "kept.txt").write_text("kept")
    before = corpus.snapshot(fs["corpus"])
    for i in range(MANY):  # not a multiple of the names kept: the last rows need their cut
        (fs["state"] / f"s{MANY - 1 - i:02}").write_bytes(b"s" * i)
        (fs["corpus"] / f"c{i:02}").write_bytes(b"c" * 10)
    with open(fs["out"] / "sparse", "wb") as fh:
        fh.truncate(1 << 30)
    doc = disclosure.disclose(tmp_path / "state.json", before,
                              lambda name, budget: corpus.snapshot(fs[name], budget))
    assert json.loads((tmp_path / "state.json").read_text()) == doc
    assert doc["state_files"] == [[f"s{i:02}", MANY - 1 - i] for i in range(5)]
    assert doc["state_files_omitted"] == {"count": MANY - 5, "bytes": sum(range(MANY - 5))}
    assert doc["state_bytes"] == sum(range(MANY))
    assert [c["path"] for c in doc["corpus_changes"]] == [f"c{i:02}" for i in range(5)]
    assert doc["corpus_changes_omitted"] == {"count": MANY - 5, "bytes": 10 * (MANY - 5)}
    assert doc["corpus_added_bytes"] == 10 * MANY
    assert doc["out_files"] == [["sparse", 1 << 30]] and "out_files_omitted" not in doc
    assert doc["sparse_files"] == {"corpus": [], "state": [], "out": ["sparse"]}
    assert doc["state_cut"] is None and doc["out_cut"] is None and doc["corpus_cut"] is None


def test_a_list_stops_at_its_bytes_of_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "DISCLOSED_NAME_BYTES", 25)
    rows, omitted = disclosure.first_names((name, 1, name) for name in
                                           ("b" * 10, "a" * 10, "c" * 10, b"\xff".decode(
                                               "utf-8", "surrogateescape") * 3))
    assert rows == ["a" * 10, "b" * 10] and omitted == {"count": 2, "bytes": 2}


def test_hard_links_count_their_bytes_once(tmp_path: Path) -> None:
    fs = _fs(tmp_path)
    before = corpus.snapshot(fs["corpus"])
    (fs["state"] / "big").write_bytes(b"b" * 5000)
    (fs["corpus"] / "added").write_bytes(b"a" * 7000)
    for i in range(20):
        os.link(fs["state"] / "big", fs["state"] / f"link{i}")
        os.link(fs["corpus"] / "added", fs["corpus"] / f"link{i}")
    doc = disclosure.disclose(tmp_path / "state.json", before,
                              lambda name, budget: corpus.snapshot(fs[name], budget))
    assert doc["state_bytes"] == 5000 and len(doc["state_files"]) == 21
    assert doc["corpus_added_bytes"] == 7000 and len(doc["corpus_changes"]) == 21


def test_the_arms_listings_share_one_budget(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "WALK_MAX_READ_BYTES", 6000)
    fs = _fs(tmp_path)
    before = corpus.snapshot(fs["corpus"])
    (fs["state"] / "f").write_bytes(b"s" * 5000)
    (fs["out"] / "f").write_bytes(b"o" * 5000)
    budgets: list[walk.Budget] = []

    def snap(name: str, budget: walk.Budget) -> corpus.Snapshot:
        budgets.append(budget)
        return corpus.snapshot(fs[name], budget)

    doc = disclosure.disclose(tmp_path / "state.json", before, snap)
    assert len(set(map(id, budgets))) == 1
    assert doc["state_cut"] is None
    assert doc["out_cut"] == [{"guard": "read-bytes", "limit": 6000, "at": "f"}]
