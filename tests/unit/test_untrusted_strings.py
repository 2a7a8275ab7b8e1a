"""untrusted/strings and the writers: a tool's name becomes a key injectively, and every tool
string, name or not, can be written to a document and read back exactly."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import corpus
from orchestrator.fsutil import atomic_write_json, atomic_write_text, canonical_json
from orchestrator.run.prepare import portable_snapshot
from orchestrator.untrusted import walk
from orchestrator.untrusted.strings import original, portable, portable_bytes

# Strings weighted towards what collides: backslashes, the letters of the escapes, hex digits
# and lone surrogates of both kinds.
PIECES = st.one_of(st.sampled_from(["\\", "x", "u", "ff", "dcff", "d800", "\udcff", "\udc80",
                                    "\ud800", "\udfff", "a", "/", "é", "\\\\"]),
                   st.text(max_size=6))
TOOL_STRINGS = st.lists(PIECES, max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(TOOL_STRINGS)
def test_portable_is_encodable_and_the_original_comes_back(s: str) -> None:
    out = portable(s)
    out.encode("utf-8")  # never raises
    assert original(out) == s


@settings(max_examples=500, deadline=None)
@given(TOOL_STRINGS, TOOL_STRINGS)
def test_two_strings_never_share_a_portable_spelling(a: str, b: str) -> None:
    assert (portable(a) == portable(b)) == (a == b)


@settings(max_examples=300, deadline=None)
@given(st.text().filter(lambda s: "\\" not in s and not any(
    0xD800 <= ord(c) <= 0xDFFF for c in s)))
def test_an_honest_string_is_itself(s: str) -> None:
    assert portable(s) == s


def test_the_name_and_the_name_that_spells_its_escape_stay_two() -> None:
    """The class: b'a\\xff' and the four characters a\\xff were one key with backslashreplace."""
    byte_name = portable_bytes(b"bad-\xff.txt")
    spelled = portable_bytes(b"bad-\\xff.txt")
    assert byte_name == "bad-\\xff.txt" and spelled == "bad-\\\\xff.txt"
    assert os.fsencode(b"bad-\xff.txt".decode("utf-8", "surrogateescape")).decode(
        "utf-8", "backslashreplace") == spelled.replace("\\\\", "\\")  # the old collision


def test_a_listing_with_both_names_keeps_both_and_its_cut_point_is_portable(
        tmp_path: Path) -> None:
    root = os.fsencode(tmp_path)
    for name, size in ((b"bad-\xff.txt", 7), (b"bad-\\xff.txt", 0)):
        with open(os.path.join(root, name), "wb") as fh:
            fh.write(b"x" * size)
    deep = os.path.join(root, b"d\xfe")
    os.makedirs(os.path.join(deep, b"e"))
    found = walk.listing(tmp_path, bounds=walk.Bounds(depth=2))
    snap = portable_snapshot(corpus.Snapshot(found.entries, tuple(found.cuts)))
    assert {p: e.size for p, e in snap.entries.items() if e.kind == "file"} == {
        "bad-\\xff.txt": 7, "bad-\\\\xff.txt": 0}
    assert [c.at for c in snap.cuts] == ["d\\xfe/e/"]
    atomic_write_json(tmp_path / "state.json", {"files": sorted(snap.entries),
                                                "cut": snap.cut_json()})
    assert set(json.loads((tmp_path / "state.json").read_text("utf-8"))["files"]) == \
        set(snap.entries)


def _no_split_pair(s: str) -> bool:
    return re.search("[\ud800-\udbff][\udc00-\udfff]", s) is None


UNPAIRED = TOOL_STRINGS.filter(_no_split_pair)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | UNPAIRED | st.integers(),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(UNPAIRED, inner, max_size=4), max_leaves=12))
def test_every_tool_value_is_written_and_read_back_exactly(value: object) -> None:
    """Values are not rewritten: the one JSON spelling holds a lone surrogate as its escape."""
    text = canonical_json(value)
    text.encode("utf-8")
    assert json.loads(text) == value


def test_a_split_surrogate_pair_is_written_as_json_reads_it() -> None:
    """JSON has no spelling for a high surrogate followed by a low one as two characters (a
    lone escape next to an undecodable byte): it is written, and reads back as the pair's
    character. Only a value can hold one: a name is portable (each surrogate its own escape)."""
    assert json.loads(canonical_json("\ud800\udcff")) == "\U000100ff"
    assert portable("\ud800\udcff") == "\\ud800\\xff"


def test_a_document_write_never_fails_on_tool_bytes(tmp_path: Path) -> None:
    atomic_write_json(tmp_path / "a.json", {"reason\udcff": "var \udcff = 1", "x": "\ud800"})
    assert json.loads((tmp_path / "a.json").read_bytes()) == {
        "reason\udcff": "var \udcff = 1", "x": "\ud800"}
    atomic_write_text(tmp_path / "a.md", "a \udcff b")
    assert (tmp_path / "a.md").read_bytes() == b"a \\udcff b"
