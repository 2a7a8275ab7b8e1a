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


def one_block_extents(path: Path, count: int) -> None:
    """A sparse file of `count` one-block extents, one block of hole between each."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for i in range(count):
            os.pwrite(fd, b"x", 2 * i * 4096)
    finally:
        os.close(fd)


def test_extents_are_paid_for_before_they_are_enumerated(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    one_block_extents(tmp_path / "many", 500)
    (tmp_path / "plain").write_bytes(b"plain")
    calls = []
    seek = os.lseek
    monkeypatch.setattr(os, "lseek", lambda fd, pos, how: calls.append(how) or seek(fd, pos, how))
    found = walk.listing(tmp_path, bounds=walk.Bounds(extent_steps=100))
    assert [(c.guard, c.limit, c.at) for c in found.cuts] == [("extents", 100, "many")]
    assert found.entries["many"].digest == walk.UNREAD
    assert found.entries["plain"].digest == hashlib.sha256(b"plain").hexdigest()
    assert len(calls) <= 100 + 2  # the hole checks of both files, then the budget's steps
    whole = walk.listing(tmp_path)
    assert whole.cuts == [] and whole.entries["many"].digest.startswith(walk.SPARSE_PREFIX)


def test_a_file_with_many_names_is_read_once_and_counted_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m-first").write_bytes(b"linked" * 1000)
    for i in range(40):
        os.link(tmp_path / "m-first", tmp_path / f"z{i:02}")
    os.link(tmp_path / "m-first", tmp_path / "a-smallest")
    reads = []
    digest_open = walk._digest_open
    monkeypatch.setattr(walk, "_digest_open", lambda fd, budget: reads.append(fd)
                        or digest_open(fd, budget))
    found = walk.listing(tmp_path)
    assert len(reads) == 1
    assert {e.digest for e in found.entries.values()} == \
        {hashlib.sha256(b"linked" * 1000).hexdigest()}
    assert found.repeats == set(found.entries) - {"a-smallest"}  # byte order, not walk order
    snap = snapshot(tmp_path)
    assert snap.repeats == frozenset(found.repeats)


def test_one_budget_is_shared_by_an_arms_listings(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_bytes(b"y" * 300)
    budget = walk.Budget(walk.Bounds(read_bytes=500))
    assert walk.listing(tmp_path / "a", budget=budget).cuts == []
    second = walk.listing(tmp_path / "b", budget=budget)
    assert [c.guard for c in second.cuts] == ["read-bytes"]
    assert second.entries["f"].digest == walk.UNREAD


def test_a_listing_past_the_deadline_stops_cut_time(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(10):
        (tmp_path / f"f{i}").write_bytes(b"z" * (3 << 20))
    clock = [0.0]
    monkeypatch.setattr(walk.time, "monotonic", lambda: clock[0])
    budget = walk.Budget(walk.Bounds(seconds=5))
    reads = []
    pread = os.pread

    def slow(fd: int, n: int, offset: int) -> bytes:
        clock[0] += 1  # each 1 MiB read takes a second of the budget
        reads.append(n)
        return pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", slow)
    found = walk.listing(tmp_path, budget=budget)
    assert [(c.guard, c.limit) for c in found.cuts] == [("time", 5)]
    assert len(reads) == 5  # stopped inside the second file, at the deadline
    assert len(found.entries) == 2 and list(found.entries.values())[1].digest == walk.UNREAD
    assert walk.listing(tmp_path, budget=budget).entries == {}  # the arm's next listing
