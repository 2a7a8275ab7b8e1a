"""Walks of trees a tool wrote (its corpus copy, /state, /out), iterative and bounded.

No recursion (a tree 100,000 levels deep costs a list, not the interpreter's stack), no path
longer than one name is ever handed to the kernel (each directory is opened from its
parent's descriptor with O_NOFOLLOW|O_DIRECTORY), no symbolic link is followed, no mount
below the root is entered. A listing stops at `limits.WALK_MAX_DEPTH` levels,
`WALK_MAX_ENTRIES` entries and `WALK_MAX_PATH_BYTES` of names; where it stopped is in
`Listing.cut`, so a listing is complete up to its caps and says so.

What the host spends on an arm's listings is one `Budget` they share (`Budget.for_arm`):
bytes read (`WALK_MAX_READ_BYTES`), SEEK_DATA/SEEK_HOLE steps over extents
(`WALK_MAX_EXTENT_STEPS`, counted before each step, so a file of a million extents stops at
the budget, not after enumerating them) and a deadline (`WALK_MAX_SECONDS`, checked per entry,
per extent and per chunk read). A file past the read or extent budget is listed by size, its
digest `unread`; a listing past the deadline stops there, cut `time`. A regular file with
several names is read once per (st_dev, st_ino) in a listing: the other names reuse its
digest, and all but the first in byte order are `Listing.repeats`, so byte totals count it
once.

A regular file is digested by its allocated extents when it has a hole (SEEK_DATA and
SEEK_HOLE): `sparse-sha256:` over the offset, length and bytes of every extent, so a 1 TiB
file of holes costs nothing; a file without holes is the sha256 of its bytes, as before.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from orchestrator.untrusted import limits

SPARSE_PREFIX = "sparse-sha256:"
UNREAD = "unread"  # the digest of a file past the read, extent or time budget: listed by size
EMPTY = hashlib.sha256(b"").hexdigest()  # every empty file's digest, one string for all
_DIR_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_DIRECTORY
_FILE_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
_CHUNK = 1 << 20


Guard = Literal["depth", "entries", "path-bytes", "read-bytes", "extents", "time", "mount"]
GUARDS: tuple[Guard, ...] = ("depth", "entries", "path-bytes", "read-bytes", "extents", "time",
                             "mount")


@dataclass(frozen=True, slots=True)
class Entry:
    """One path under a root, never followed if it is a symlink."""

    kind: Literal["file", "dir", "symlink", "other"]
    mode: int
    size: int
    digest: str


@dataclass(frozen=True)
class Cut:
    """Where a walk stopped short: the guard, its bound, and the first path it held back."""

    guard: Guard
    limit: int
    at: str

    def to_json(self) -> dict[str, object]:
        return {"guard": self.guard, "limit": self.limit, "at": self.at}


@dataclass
class Bounds:
    """The caps of one walk and of one arm's budget (the defaults are `limits`', read when
    the bounds are made); tests pass smaller ones."""

    depth: int = field(default_factory=lambda: limits.WALK_MAX_DEPTH)
    entries: int = field(default_factory=lambda: limits.WALK_MAX_ENTRIES)
    path_bytes: int = field(default_factory=lambda: limits.WALK_MAX_PATH_BYTES)
    read_bytes: int = field(default_factory=lambda: limits.WALK_MAX_READ_BYTES)
    extent_steps: int = field(default_factory=lambda: limits.WALK_MAX_EXTENT_STEPS)
    seconds: int = field(default_factory=lambda: limits.WALK_MAX_SECONDS)


class Budget:
    """What one arm's listings may still spend, all of them together: bytes read, extent
    steps, and a deadline that starts when the budget is made."""

    def __init__(self, bounds: Bounds | None = None) -> None:
        self.bounds = bounds or Bounds()
        self.read_bytes = self.bounds.read_bytes
        self.extent_steps = self.bounds.extent_steps
        self.deadline = time.monotonic() + self.bounds.seconds

    def late(self) -> bool:
        return time.monotonic() >= self.deadline


class _Spent(Exception):
    """A budget ran out while one file was digested: that file is listed unread."""

    def __init__(self, guard: Guard, limit: int) -> None:
        super().__init__(guard)
        self.guard, self.limit = guard, limit


@dataclass
class Listing:
    """Every entry under a root up to the caps, keyed by posix relative path, and the cuts
    (at most one per guard; none when the listing is complete). `repeats`: every name of a
    regular file with several in the listing but the first in byte order."""

    entries: dict[str, Entry] = field(default_factory=dict)
    cuts: list[Cut] = field(default_factory=list)
    repeats: set[str] = field(default_factory=set)

    def _cut(self, guard: Guard, limit: int, at: str) -> None:
        if all(c.guard != guard for c in self.cuts):
            self.cuts.append(Cut(guard, limit, at))


def _open_root(root: Path | int) -> int:
    if isinstance(root, int):
        return os.dup(root)
    return os.open(root, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY)


def _items(root_fd: int, bounds: Bounds, listing: Listing, budget: Budget | None = None
           ) -> Iterator[tuple[int, str, str, os.stat_result]]:
    """(parent dir fd, name, relative path, lstat) of every entry, depth first, each
    directory entered from its parent's descriptor; stops (noting the cut) at the caps and
    at the budget's deadline."""
    root_dev = os.fstat(root_fd).st_dev
    stack: list[tuple[int, Iterator[os.DirEntry[str]], str, int]] = []
    top = os.dup(root_fd)
    stack.append((top, os.scandir(top), "", 0))
    seen, name_bytes = 0, 0
    try:
        while stack:
            fd, listing_iter, prefix, depth = stack[-1]
            item = next(listing_iter, None)
            if item is None:
                listing_iter.close()  # type: ignore[attr-defined]
                os.close(fd)
                stack.pop()
                continue
            rel = prefix + item.name
            if budget is not None and budget.late():
                listing._cut("time", budget.bounds.seconds, rel)
                return
            if seen >= bounds.entries:
                listing._cut("entries", bounds.entries, rel)
                return
            name_bytes += len(os.fsencode(rel))
            if name_bytes > bounds.path_bytes:
                listing._cut("path-bytes", bounds.path_bytes, rel)
                return
            seen += 1
            try:
                st = os.stat(item.name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield fd, item.name, rel, st
            if not stat.S_ISDIR(st.st_mode):
                continue
            if depth + 1 >= bounds.depth:
                listing._cut("depth", bounds.depth, rel + "/")
                continue
            if st.st_dev != root_dev:
                listing._cut("mount", 0, rel)
                continue
            try:
                child = os.open(item.name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # replaced since the stat: listed as it was, not entered
            try:
                stack.append((child, os.scandir(child), rel + "/", depth + 1))
            except OSError:
                os.close(child)
    finally:
        for fd, listing_iter, _, _ in stack:
            listing_iter.close()  # type: ignore[attr-defined]
            os.close(fd)


def listing(root: Path | int, *, digests: bool = True, bounds: Bounds | None = None,
            budget: Budget | None = None) -> Listing:
    """Every path under `root` (not `root` itself): files by content (when `digests`), links
    by their target, never followed; complete up to the caps, and cut where it stopped.
    `budget` is the arm's, shared with its other listings (a fresh one when None)."""
    bounds = bounds or (budget.bounds if budget is not None else Bounds())
    budget = budget or Budget(bounds)
    out = Listing()
    # (st_dev, st_ino) of a file with several names: its digest and its first name in byte
    # order (the one whose bytes count; the others are `repeats`, whatever the walk's order).
    links: dict[tuple[int, int], tuple[str, str]] = {}
    root_fd = _open_root(root)
    try:
        for fd, name, rel, st in _items(root_fd, bounds, out, budget):
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                target = os.fsencode(os.readlink(name, dir_fd=fd))
                out.entries[rel] = Entry("symlink", mode, len(target),
                                         hashlib.sha256(target).hexdigest())
            elif stat.S_ISDIR(st.st_mode):
                out.entries[rel] = Entry("dir", mode, 0, "")
            elif stat.S_ISREG(st.st_mode):
                inode = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and inode in links:
                    digest, first = links[inode]
                    out.repeats.add(max(rel, first, key=os.fsencode))
                    links[inode] = digest, min(rel, first, key=os.fsencode)
                else:
                    digest = _file_digest(fd, name, rel, st, budget, out) if digests else ""
                    if st.st_nlink > 1:
                        links[inode] = digest, rel
                out.entries[rel] = Entry("file", mode, st.st_size, digest)
            else:
                out.entries[rel] = Entry("other", mode, 0, stat.filemode(st.st_mode))
    finally:
        os.close(root_fd)
    return out


def _file_digest(parent: int, name: str, rel: str, st: os.stat_result, budget: Budget,
                 out: Listing) -> str:
    if st.st_size == 0:
        return EMPTY
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
    except OSError as exc:
        return "unreadable:" + errno.errorcode.get(exc.errno or 0, str(exc.errno))
    try:
        return _digest_open(fd, budget)
    except _Spent as spent:
        out._cut(spent.guard, spent.limit, rel)
        return UNREAD
    finally:
        os.close(fd)


def _digest_open(fd: int, budget: Budget) -> str:
    """The digest of an open file; `_Spent` when a budget runs out before it is read whole
    (nothing is read of a file whose allocated bytes are past the read budget)."""
    size = os.fstat(fd).st_size
    extents = _extents(fd, size, budget)
    allocated = sum(extents[1::2])
    if allocated > budget.read_bytes:
        raise _Spent("read-bytes", budget.bounds.read_bytes)
    sparse = list(extents) != [0, size] and size > 0
    total = hashlib.sha256()
    for i in range(0, len(extents), 2):
        offset, length = extents[i], extents[i + 1]
        if sparse:
            total.update(b"%d %d\n" % (offset, length))
        done = 0
        while done < length:
            if budget.late():
                raise _Spent("time", budget.bounds.seconds)
            chunk = os.pread(fd, min(_CHUNK, length - done), offset + done)
            if not chunk:
                break  # shrank since the stat: what was there is what is hashed
            total.update(chunk)
            done += len(chunk)
        budget.read_bytes -= done
    return (SPARSE_PREFIX if sparse else "") + total.hexdigest()


def _extents(fd: int, size: int, budget: Budget) -> array[int]:
    """offset, length, offset, length... of every allocated extent: the whole file when it
    has no hole (or the file system cannot say), none for a file that is all hole. Each
    SEEK_DATA/SEEK_HOLE pair is paid from the budget before it is made (`_Spent`)."""
    try:
        if os.lseek(fd, 0, os.SEEK_HOLE) >= size:
            return array("q", (0, size))
    except OSError:
        return array("q", (0, size))
    found = array("q")
    offset = 0
    while offset < size:
        if budget.extent_steps < 2:
            raise _Spent("extents", budget.bounds.extent_steps)
        if budget.late():
            raise _Spent("time", budget.bounds.seconds)
        budget.extent_steps -= 2
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break  # only a hole is left
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        found.extend((start, end - start))
        offset = end
    return found


def chown_tree(root: Path | int, uid: int, gid: int, bounds: Bounds | None = None) -> Listing:
    """`root` and everything under it (up to the caps) given to `uid:gid`, links themselves
    and never their targets; the listing says where it stopped."""
    bounds = bounds or Bounds()
    out = Listing()
    root_fd = _open_root(root)
    try:
        os.fchown(root_fd, uid, gid)
        for fd, name, _, _ in _items(root_fd, bounds, out):
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(root_fd)
    return out


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it, however deep, never following a link: one
    directory descriptor open at a time, going down by name and back up by `..` checked
    against the directory it came from (no recursion, no path longer than one name)."""
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY)
    except FileNotFoundError:
        return  # nothing there: nothing to remove
    try:
        try:
            st = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path.name, dir_fd=parent)
            return
        names = [path.name]
        ids = [(os.fstat(parent).st_dev, os.fstat(parent).st_ino)]
        current = os.open(path.name, _DIR_FLAGS, dir_fd=parent)
        while True:
            below = _first_dir_unlinking_the_rest(current)
            if below is not None:
                inner = os.open(below, _DIR_FLAGS, dir_fd=current)
                here = os.fstat(current)
                ids.append((here.st_dev, here.st_ino))
                os.close(current)
                current, names = inner, [*names, below]
                continue
            up = os.open("..", os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY, dir_fd=current)
            os.close(current)
            up_st = os.fstat(up)
            if (up_st.st_dev, up_st.st_ino) != ids[-1]:
                os.close(up)
                raise OSError(errno.ESTALE, "a directory moved while it was removed",
                              "/".join(names))
            ids.pop()
            os.rmdir(names.pop(), dir_fd=up)
            if not names:
                os.close(up)
                return
            current = up
    finally:
        os.close(parent)


def _first_dir_unlinking_the_rest(fd: int) -> str | None:
    """The first subdirectory of the directory `fd`, every other entry met before it removed
    (links and files by their own name, never followed)."""
    with os.scandir(fd) as entries:
        for item in entries:
            if item.is_dir(follow_symlinks=False):
                return item.name
            with contextlib.suppress(FileNotFoundError):
                os.unlink(item.name, dir_fd=fd)
    return None
