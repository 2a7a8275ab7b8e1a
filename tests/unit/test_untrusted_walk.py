"""untrusted.walk: listings of trees a tool wrote are iterative, bounded and say where they
were cut; sparse files cost their allocated extents only; removal works at any depth."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from orchestrator.corpus import snapshot
from orchestrator.untrusted import walk

DEEP = 3000  # past Python's recursion limit (1000) and PATH_MAX (4096 bytes of "d/")
TIB = 1 << 40


def deep_tree(root: Path, levels: int) -> None:
    """`levels` nested directories `d`, made by descriptor (no path is ever that long)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as fh:
            fh.write(b"deep")
    finally:
        os.close(fd)


def test_a_deep_tree_is_listed_to_the_depth_bound_and_removed(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir()
    (root / "top.txt").write_text("top")
    deep_tree(root, DEEP)
    found = walk.listing(root)
    assert [c.guard for c in found.cuts] == ["depth"]
    assert found.cuts[0].limit == walk.limits.WALK_MAX_DEPTH
    assert found.cuts[0].at == "d/" * walk.limits.WALK_MAX_DEPTH
    assert max(p.count("/") + 1 for p in found.entries) == walk.limits.WALK_MAX_DEPTH
    assert found.entries["top.txt"].digest == hashlib.sha256(b"top").hexdigest()
    snap = snapshot(root)
    assert snap.cut_json() == [{"guard": "depth", "limit": walk.limits.WALK_MAX_DEPTH,
                                "at": "d/" * walk.limits.WALK_MAX_DEPTH}]
    walk.remove_tree(root)
    assert not root.exists()


def test_removal_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "keep").write_text("host file")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    os.symlink(outside, tree / "a" / "b" / "link")
    os.symlink(outside / "sub", tree / "dirlink")
    os.mkfifo(tree / "a" / "fifo")
    walk.remove_tree(tree)
    assert not tree.exists() and (outside / "sub" / "keep").read_text() == "host file"
    walk.remove_tree(tree)  # nothing there: nothing to do
    walk.remove_tree(tree / "a" / "b")  # nor above it
    link = tmp_path / "link"
    os.symlink(outside, link)
    walk.remove_tree(link)  # the link goes, never what it names
    assert not link.is_symlink() and (outside / "sub" / "keep").exists()


def test_a_huge_sparse_file_costs_its_extents_only(tmp_path: Path) -> None:
    path = tmp_path / "sparse"
    with open(path, "wb") as fh:
        fh.truncate(TIB)
        fh.seek(TIB // 2)
        fh.write(b"x" * 4096)
    started = time.monotonic()
    entry = walk.listing(tmp_path).entries["sparse"]
    assert time.monotonic() - started < 5
    assert entry.size == TIB and entry.digest.startswith(walk.SPARSE_PREFIX)
    with open(path, "r+b") as fh:
        fh.seek(TIB // 2 + 10)
        fh.write(b"y")
    assert walk.listing(tmp_path).entries["sparse"].digest != entry.digest
    empty = tmp_path / "all-hole"
    with open(empty, "wb") as fh:
        fh.truncate(TIB)
    assert walk.listing(tmp_path).entries["all-hole"].digest == \
        walk.SPARSE_PREFIX + hashlib.sha256().hexdigest()


def test_a_dense_file_is_the_sha256_of_its_bytes(tmp_path: Path) -> None:
    data = os.urandom(3 << 20)
    (tmp_path / "f").write_bytes(data)
    (tmp_path / "empty").write_bytes(b"")
    entries = walk.listing(tmp_path).entries
    assert entries["f"].digest == hashlib.sha256(data).hexdigest()
    assert entries["empty"].digest == hashlib.sha256(b"").hexdigest()


def test_every_cap_cuts_and_says_where(tmp_path: Path) -> None:
    for i in range(20):
        (tmp_path / f"f{i:02}").write_bytes(b"x" * 100)
    few = walk.listing(tmp_path, bounds=walk.Bounds(entries=5))
    assert len(few.entries) == 5 and [c.guard for c in few.cuts] == ["entries"]
    unread = walk.listing(tmp_path, bounds=walk.Bounds(read_bytes=250))
    assert [c.guard for c in unread.cuts] == ["read-bytes"]
    assert len(unread.entries) == 20
    assert sum(e.digest == walk.UNREAD for e in unread.entries.values()) == 18
    names = walk.listing(tmp_path, bounds=walk.Bounds(path_bytes=30))
    assert [c.guard for c in names.cuts] == ["path-bytes"] and len(names.entries) == 10
    assert walk.listing(tmp_path).cuts == []


def test_links_and_special_files_are_listed_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("host")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "dirlink")
    os.symlink("/proc/self/environ", root / "proc")
    os.mkfifo(root / "fifo")
    entries = walk.listing(root).entries
    assert set(entries) == {"dirlink", "proc", "fifo"}
    assert entries["dirlink"].kind == "symlink" and entries["fifo"].kind == "other"


def test_chown_tree_never_follows_a_link(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    outside = tmp_path / "outside"
    outside.write_text("host")
    root = tmp_path / "copy"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f").write_text("x")
    os.symlink(outside, root / "a" / "link")
    walk.chown_tree(root, 4321, 4321)
    assert {os.lstat(p).st_uid for p in (root, root / "a", root / "a" / "f",
                                         root / "a" / "link")} == {4321}
    assert outside.stat().st_uid == os.geteuid()
