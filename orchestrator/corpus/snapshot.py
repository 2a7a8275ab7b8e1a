"""Tree digests and snapshots: every path under a copy (the git dir included), never following a
symlink, and what changed between two snapshots of one copy."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator.corpus.git import GIT_DIR
from orchestrator.errors import SandbenchError



@dataclass(frozen=True)
class Entry:
    """One path under a root, never followed if it is a symlink."""

    kind: Literal["file", "dir", "symlink", "other"]
    mode: int
    size: int
    digest: str


@dataclass(frozen=True)
class Snapshot:
    """Every path under a root (the git dir included), keyed by posix relative path."""

    entries: Mapping[str, Entry]

    def digest(self) -> str:
        """sha256 over (kind, path, mode, size, content digest) of every entry, in byte order."""
        total = hashlib.sha256()
        for path in sorted(self.entries, key=os.fsencode):
            e = self.entries[path]
            total.update(b"%s\0%s\0%o\0%d\0%s\n" % (e.kind.encode(), os.fsencode(path), e.mode,
                                                    e.size, e.digest.encode()))
        return total.hexdigest()

    def bytes_in(self, inside_git: bool) -> int:
        return sum(e.size for path, e in self.entries.items()
                   if e.kind == "file" and in_git(path) == inside_git)


def _nofollow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)


def snapshot(root: Path) -> Snapshot:
    """Walk `root` without following any symlink: files by content, links by their target."""
    entries: dict[str, Entry] = {}
    pending = [(str(root), "")]
    while pending:
        directory, prefix = pending.pop()
        with os.scandir(directory) as listing:
            for item in listing:
                rel = prefix + item.name
                st = item.stat(follow_symlinks=False)
                mode = stat.S_IMODE(st.st_mode)
                if stat.S_ISLNK(st.st_mode):
                    target = os.fsencode(os.readlink(item.path))
                    entries[rel] = Entry("symlink", mode, len(target),
                                         hashlib.sha256(target).hexdigest())
                elif stat.S_ISDIR(st.st_mode):
                    entries[rel] = Entry("dir", mode, 0, "")
                    pending.append((item.path, rel + "/"))
                elif stat.S_ISREG(st.st_mode):
                    entries[rel] = _file_entry(item.path, rel, mode)
                else:
                    entries[rel] = Entry("other", mode, 0, stat.filemode(st.st_mode))
    return Snapshot(entries)


def _file_entry(path: str, rel: str, mode: int) -> Entry:
    try:
        with open(path, "rb", opener=_nofollow) as fh:
            size = os.fstat(fh.fileno()).st_size
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as err:
        raise SandbenchError(f"cannot read {rel} to digest it", why=err.strerror,
                             fix="make every file of the copy readable by sandbench",
                             path=path) from err
    return Entry("file", mode, size, digest)


def tree_digest(path: Path) -> str:
    """One sha256 over the worktree and the git dir: paths, modes and bytes; links as links."""
    return snapshot(path).digest()


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
    out: list[Change] = []
    for path in sorted(before.entries.keys() | after.entries.keys(), key=os.fsencode):
        old, new = before.entries.get(path), after.entries.get(path)
        if old == new:
            continue
        status: Literal["added", "modified", "removed"] = \
            "added" if old is None else "removed" if new is None else "modified"
        kind = (new or old).kind  # type: ignore[union-attr]
        out.append(Change(path, status, kind, old.size if old else 0, new.size if new else 0,
                          in_git(path)))
    return out



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


def snapshot_of_archive(chunks: Iterable[bytes]) -> Snapshot:
    """What `snapshot` gives for a tree, from the tar an engine makes of it (`PATH/.`, so
    names are `.` and `./REL`): a copy on another host is described by what that host holds,
    read as it streams and never written here."""
    entries: dict[str, Entry] = {}
    with tarfile.open(fileobj=io.BufferedReader(_ChunkReader(chunks), 1 << 20),
                      mode="r|") as archive:
        for member in archive:
            rel = member.name.removeprefix("./").rstrip("/")
            if rel in ("", "."):
                continue  # the root itself, as `snapshot` leaves it out
            mode = stat.S_IMODE(member.mode)
            if member.issym():
                target = os.fsencode(member.linkname)
                entries[rel] = Entry("symlink", mode, len(target), hashlib.sha256(target).hexdigest())
            elif member.isdir():
                entries[rel] = Entry("dir", mode, 0, "")
            elif member.islnk():  # a hard link to a file already listed: the same content
                linked = entries.get(member.linkname.removeprefix("./"))
                if linked is None:
                    raise SandbenchError(f"the archive links {rel} to {member.linkname}, "
                                         "which it did not hold before")
                entries[rel] = Entry("file", mode, linked.size, linked.digest)
            elif member.isreg():
                fh = archive.extractfile(member)
                assert fh is not None
                entries[rel] = Entry("file", mode, member.size,
                                     hashlib.file_digest(fh, "sha256").hexdigest())
            else:
                kind = {tarfile.CHRTYPE: stat.S_IFCHR, tarfile.BLKTYPE: stat.S_IFBLK,
                        tarfile.FIFOTYPE: stat.S_IFIFO}.get(member.type, 0)
                entries[rel] = Entry("other", mode, 0, stat.filemode(kind | mode))
    return Snapshot(entries)
