"""Per-arm copies: an independent byte copy of the pristine checkout for each arm, verified
before it is handed over."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path
from typing import IO

from orchestrator import log
from orchestrator.corpus.git import Git, clean_git, differences, refuse
from orchestrator.corpus.lock import CorpusPin
from orchestrator.errors import InputError, SandbenchError

_log = log.get("corpus")



def make_arm_copy(pristine_dir: Path, dest: Path, pin: CorpusPin) -> Path:
    """An independent copy of the pristine one for one arm, verified before it is handed over.

    A byte copy (never a clone with alternates, a worktree or hard links), so the arm owns its
    object store outright; the index is refreshed so that the arm's first git call does not
    rewrite it. `dest` is new, or an empty directory (the mount point of the arm's own file
    system); a copy that cannot be verified is removed again, so `dest` holds a clean,
    detached, remote-free checkout of the pin or nothing.
    """
    dest = Path(dest)
    existed = dest.is_dir() and not dest.is_symlink()
    if dest.is_symlink() or dest.exists() and (not existed or any(dest.iterdir())):
        raise SandbenchError(f"arm copy destination {dest} already exists",
                             fix="give each arm a fresh directory", path=str(dest))
    dest.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(pristine_dir, dest, symlinks=True, dirs_exist_ok=True)
        with clean_git() as git:
            git.run("update-index", "-q", "--refresh", cwd=dest, check=False)
            _verify_copy(git, dest, pin, shown=dest)
    except BaseException:
        for child in list(dest.iterdir()) if dest.is_dir() else []:
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        if not existed:
            dest.rmdir()
        raise
    _log.info("corpus.arm_copy", corpus=pin.id, path=str(dest))
    return dest


def verify_arm_copy(copy: Path, pin: CorpusPin) -> None:
    """Refuse, naming each difference, unless `copy` is a private clean checkout of the pin.

    For a copy no arm has had yet: git reads the copy's own config, which an arm could have
    written. After an arm, list what it did with `snapshot`/`changes`, which run no git.
    """
    with clean_git() as git:
        _verify_copy(git, Path(copy), pin, shown=Path(copy))


def _verify_copy(git: Git, path: Path, pin: CorpusPin, shown: Path) -> None:
    if pin.sha is None:
        raise InputError(f"corpus {pin.id!r} is proposed: it has no copies", corpus=pin.id)
    if found := differences(git, path, pin.sha):
        raise refuse(f"copy of {pin.id!r} for {shown} refused", found,
                      f"make a fresh copy; check the pristine: sandbench corpus verify {pin.id}",
                      corpus=pin.id, path=str(shown))


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
