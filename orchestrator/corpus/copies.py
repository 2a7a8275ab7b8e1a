"""Per-arm copies: an independent byte copy of the pristine checkout for each arm, verified
before it is handed over. git runs on the pristine copy only, never on a copy an arm may have
had."""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path
from typing import IO

from orchestrator import log
from orchestrator.corpus.git import GIT_DIR, Difference, some, clean_git, differences, refuse
from orchestrator.corpus.lock import CorpusPin
from orchestrator.corpus.snapshot import Snapshot, changes, snapshot
from orchestrator.errors import InputError, SandbenchError
from orchestrator.untrusted import walk

_log = log.get("corpus")
INDEX = f"{GIT_DIR}/index"  # refreshed with the copy's own stat data



def make_arm_copy(pristine_dir: Path, dest: Path, pin: CorpusPin,
                  owner: str | None = None) -> Path:
    """An independent copy of the pristine one for one arm, verified before it is handed over.

    A byte copy (never a clone with alternates, a worktree or hard links), so the arm owns its
    object store outright. git runs on the pristine copy only: the pristine is checked to be a
    clean, detached, remote-free checkout of the pin, the copy is checked byte for byte equal
    to it, and its index is refreshed with the pristine's git dir (config and hooks included)
    and the copy as work tree, so that the arm's first git call does not rewrite the index.
    `dest` is new, or an empty directory (the mount point of the arm's own file system); a
    copy that cannot be verified is removed again, so `dest` holds a verified copy of the
    pin or nothing. With `owner` (`uid:gid`, when sandbench runs as root) the copy is then
    given to the container's user.
    """
    dest = Path(dest)
    existed = dest.is_dir() and not dest.is_symlink()
    if dest.is_symlink() or dest.exists() and (not existed or any(dest.iterdir())):
        raise SandbenchError(f"arm copy destination {dest} already exists",
                             fix="give each arm a fresh directory", path=str(dest))
    if pin.sha is None:
        raise InputError(f"corpus {pin.id!r} is proposed: it has no copies", corpus=pin.id)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with clean_git() as git:
            if found := differences(git, pristine_dir, pin.sha):
                raise refuse(f"copy of {pin.id!r} for {dest} refused", found,
                             f"check the pristine: sandbench corpus verify {pin.id}",
                             corpus=pin.id, path=str(dest))
        expected = snapshot(pristine_dir)
        shutil.copytree(pristine_dir, dest, symlinks=True, dirs_exist_ok=True)
        # No container has had the copy yet and the git dir is the pristine's: the refresh
        # writes the copy's index alone, which the check below leaves aside.
        with clean_git() as git:
            git.run(f"--git-dir={pristine_dir / GIT_DIR}", f"--work-tree={dest}",
                    "update-index", "-q", "--refresh", check=False,
                    env={"GIT_INDEX_FILE": str(dest / GIT_DIR / "index")})
        _refuse_unless_equal(expected, dest, pin)
        if owner is not None and os.geteuid() == 0:
            uid, gid = (int(x) for x in owner.split(":"))
            walk.chown_tree(dest, uid, gid)
    except BaseException:
        for child in list(dest.iterdir()) if dest.is_dir() else []:
            walk.remove_tree(child)
        if not existed:
            dest.rmdir()
        raise
    _log.info("corpus.arm_copy", corpus=pin.id, path=str(dest))
    return dest


def verify_arm_copy(copy: Path, pristine_dir: Path, pin: CorpusPin) -> None:
    """Refuse, naming each difference, unless `copy` holds the pristine copy's bytes (its
    git index aside, which the copy's own stat data refresh). Reads files only, bounded:
    no git runs on a copy, whose config and hooks an arm may have written."""
    _refuse_unless_equal(snapshot(pristine_dir), Path(copy), pin)


def _refuse_unless_equal(expected: Snapshot, copy: Path, pin: CorpusPin) -> None:
    found: list[Difference] = []
    gitdir = copy / GIT_DIR
    if gitdir.is_symlink() or not gitdir.is_dir():
        what = "a symlink" if gitdir.is_symlink() else "a file (a worktree of another clone)" \
            if gitdir.exists() else "nothing"
        found.append(Difference("git dir", "a .git directory of its own", what))
    else:
        changed = [c.path for c in changes(expected, snapshot(copy)) if c.path != INDEX]
        if changed:
            found.append(Difference("copy", "the pristine copy's bytes",
                                    f"{len(changed)} difference(s): {some(changed)}"))
    if found:
        raise refuse(f"copy of {pin.id!r} for {copy} refused", found,
                     f"make a fresh copy; check the pristine: sandbench corpus verify {pin.id}",
                     corpus=pin.id, path=str(copy))


def archive_tree(root: Path, out: IO[bytes], owner: str) -> None:
    """A tar of `root` (named `.` and `./REL`, links as links) with every entry owned by
    `owner` (`uid:gid`): an arm's corpus copy as it goes to a file system on another host,
    owned there as a local copy is here."""
    uid, gid = (int(x) for x in owner.split(":"))

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as archive:
        archive.add(root, arcname=".", recursive=True, filter=owned)
