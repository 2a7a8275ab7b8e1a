"""Tree digests and snapshots: every path under a copy (the git dir included), never following a
symlink, and what changed between two snapshots of one copy."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator.corpus.git import GIT_DIR
from orchestrator.errors import SandbenchError
from orchestrator.untrusted import walk
from orchestrator.untrusted.walk import Cut, Entry

__all__ = ["Change", "Cut", "Entry", "Snapshot", "changes", "iter_changes", "snapshot",
           "snapshot_of_archive", "in_git", "tree_digest"]



@dataclass(frozen=True)
class Snapshot:
    """Every path under a root (the git dir included), keyed by posix relative path, up to
    the walk's caps; `cuts` say where it stopped short (none for a complete one); `repeats`
    are the later names of a file with several (its bytes are the first name's)."""

    entries: Mapping[str, Entry]
    cuts: tuple[Cut, ...] = ()
    repeats: frozenset[str] = frozenset()

    def digest(self) -> str:
        """sha256 over (kind, path, mode, size, content digest) of every entry, in byte order,
        and over the cuts of a snapshot that stopped short."""
        total = hashlib.sha256()
        for path in sorted(self.entries, key=os.fsencode):
            e = self.entries[path]
            total.update(b"%s\0%s\0%o\0%d\0%s\n" % (e.kind.encode(), os.fsencode(path), e.mode,
                                                    e.size, e.digest.encode()))
        for cut in self.cuts:
            total.update(b"cut\0%s\0%d\0%s\n" % (cut.guard.encode(), cut.limit,
                                                 os.fsencode(cut.at)))
        return total.hexdigest()

    def bytes_in(self, inside_git: bool) -> int:
        return sum(e.size for path, e in self.entries.items()
                   if e.kind == "file" and in_git(path) == inside_git)

    def cut_json(self) -> list[dict[str, object]] | None:
        """Where the listing stopped, as a run records it: None when it is complete."""
        return [c.to_json() for c in self.cuts] or None


def snapshot(root: Path, budget: walk.Budget | None = None) -> Snapshot:
    """Walk `root` without following any symlink: files by content (sparse ones by their
    allocated extents), links by their target; bounded (`orchestrator.untrusted.walk`),
    spending from `budget` (an arm's, shared by its listings) when given."""
    found = walk.listing(root, budget=budget)
    return Snapshot(found.entries, tuple(found.cuts), frozenset(found.repeats))


def tree_digest(path: Path) -> str:
    """One sha256 over the worktree and the git dir: paths, modes and bytes; links as links.
    Only for a copy the host made (the pristine one): a tree past the walk's caps is refused
    rather than digested in part."""
    snap = snapshot(path)
    if snap.cuts:
        cut = snap.cuts[0]
        raise SandbenchError(f"cannot digest {path}: it is past the {cut.guard} bound "
                             f"({cut.limit:,}) at {cut.at}",
                             fix="a corpus this large is beyond sandbench's walk bounds "
                                 "(orchestrator/untrusted/limits.py)", path=str(path))
    return snap.digest()


@dataclass(frozen=True)
class Change:
    """A path an arm added, modified or removed in its copy, with its size before and after."""

    path: str
    status: Literal["added", "modified", "removed"]
    kind: str
    size_before: int
    size_after: int
    in_git: bool


def in_git(path: str) -> bool:
    return path == GIT_DIR or path.startswith(GIT_DIR + "/")


def changes(before: Snapshot, after: Snapshot) -> list[Change]:
    """What differs between two snapshots of one copy, in path order."""
    return sorted(iter_changes(before, after), key=lambda c: os.fsencode(c.path))


def iter_changes(before: Snapshot, after: Snapshot) -> Iterator[Change]:
    """What differs between two snapshots of one copy, one at a time in no set order (the
    caller keeps what it needs, never a list as long as the listing)."""
    for path, new in after.entries.items():
        old = before.entries.get(path)
        if old != new:
            yield _change(path, old, new)
    for path, old in before.entries.items():
        if path not in after.entries:
            yield _change(path, old, None)


def _change(path: str, old: Entry | None, new: Entry | None) -> Change:
    status: Literal["added", "modified", "removed"] = \
        "added" if old is None else "removed" if new is None else "modified"
    kind = (new or old).kind  # type: ignore[union-attr]
    return Change(path, status, kind, old.size if old else 0, new.size if new else 0,
                  in_git(path))



class _ChunkReader(io.RawIOBase):
    """A stream of byte chunks (an engine's tar of a path) read as a file."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            self._left = next(self._chunks, b"")
            if not self._left:
                return 0
        size = min(len(buffer), len(self._left))
        buffer[:size] = self._left[:size]
        self._left = self._left[size:]
        return size


def snapshot_of_archive(chunks: Iterable[bytes], budget: walk.Budget | None = None
                        ) -> Snapshot:
    """What `snapshot` gives for a tree, from the tar an engine makes of it (`PATH/.`, so
    names are `.` and `./REL`): a copy on another host is described by what that host holds,
    read as it streams and never written here. Bounded as `snapshot` is: entries, depth,
    bytes read and the deadline of `budget` (the file past the read budget is listed by size,
    its digest `unread`, and the listing stops there: a tar spells out a sparse file's holes;
    past the deadline the listing stops, cut `time`). A hard link reuses its file's digest."""
    budget = budget or walk.Budget()
    bounds = budget.bounds
    entries: dict[str, Entry] = {}
    cuts: dict[str, Cut] = {}
    names: dict[str, list[str]] = {}  # a file's first name in the tar: all its names
    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(chunks), 1 << 20),
                      mode="r|") as archive:
        for member in archive:
            rel = member.name.removeprefix("./").rstrip("/")
            if rel in ("", "."):
                continue  # the root itself, as `snapshot` leaves it out
            if budget.late():
                cuts.setdefault("time", Cut("time", bounds.seconds, rel))
                break
            if len(entries) >= bounds.entries:
                cuts.setdefault("entries", Cut("entries", bounds.entries, rel))
                break
            if rel.count("/") + 1 > bounds.depth:
                cuts.setdefault("depth", Cut("depth", bounds.depth, rel))
                continue
            mode = stat.S_IMODE(member.mode)
            if member.issym():
                target = os.fsencode(member.linkname)
                entries[rel] = Entry("symlink", mode, len(target),
                                     hashlib.sha256(target).hexdigest())
            elif member.isdir():
                entries[rel] = Entry("dir", mode, 0, "")
            elif member.islnk():  # a hard link to a file already listed: the same content
                # Its first name may lie past the depth cut (an arm can link a shallow name to
                # a deep file): then it is listed as a file not read, never a failed listing.
                first = member.linkname.removeprefix("./")
                linked = entries.get(first)
                entries[rel] = Entry("file", mode, linked.size, linked.digest) if linked \
                    else Entry("file", mode, 0, walk.UNREAD)
                names.setdefault(first, [first]).append(rel)
            elif member.isreg():
                if member.size > budget.read_bytes:
                    # A tar holds a sparse file's holes as bytes: stop reading the stream
                    # here rather than pull the rest through (1 TiB of zeros, say).
                    cuts.setdefault("read-bytes", Cut("read-bytes", bounds.read_bytes, rel))
                    entries[rel] = Entry("file", mode, member.size, walk.UNREAD)
                    break
                budget.read_bytes -= member.size
                fh = archive.extractfile(member)
                # tarfile's ExFileObject: typeshed says IO[bytes], file_digest needs readinto.
                assert isinstance(fh, io.BufferedReader)
                entries[rel] = Entry("file", mode, member.size,
                                     hashlib.file_digest(fh, "sha256").hexdigest())
            else:
                kind = {tarfile.CHRTYPE: stat.S_IFCHR, tarfile.BLKTYPE: stat.S_IFBLK,
                        tarfile.FIFOTYPE: stat.S_IFIFO}.get(member.type, 0)
                entries[rel] = Entry("other", mode, 0, stat.filemode(kind | mode))
    # As `snapshot` counts a file with several names: by its first name in byte order.
    repeats = frozenset(n for group in names.values()
                        for n in sorted(group, key=os.fsencode)[1:])
    return Snapshot(entries, tuple(cuts.values()), repeats)
