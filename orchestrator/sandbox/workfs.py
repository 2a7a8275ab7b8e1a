"""Each arm's writable mounts are file systems of their own, of a declared size.

A bind mount of a plain directory lends the arm the bench root's whole disk: a tool that
fills `/state` fills the orchestrator's disk too, and the run's own records with it. So every
writable mount (`/corpus`, `/state`, `/out`) is a sparse ext4 image under the arm's work
dir, loop-mounted at its mount point only while the arm runs:

    work/ARM/NAME.ext4     the file system (sparse: it costs only what the arm wrote)
    work/ARM/NAME/         its mount point, present only while mounted

A tool that fills one gets ENOSPC inside it and can never take more than the image's size
from the host. The bound is declared in the arm's limits (`state_mib`, `out_mib`, and for the
corpus copy its own size plus `corpus_margin_mib`), and the probe checks it from inside.
Loop-mounting needs root; sandbench refuses to run an arm with unbounded mounts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from orchestrator import log
from orchestrator.errors import SandbenchError
from orchestrator.sandbox.spec import Limits
from orchestrator.untrusted import paths as untrusted_paths, walk
from orchestrator.untrusted.errors import HostileInput

IMAGE_SUFFIX = ".ext4"
# ext4 as mke2fs makes it here: 4 KiB blocks, one 256-byte inode per 4 KiB of space (a corpus
# of many small files must not run out of inodes before bytes), no journal and no reserved
# blocks (scratch space that lives for one run); inode tables are left to read as the
# sparse file's zeros instead of being written out.
MKFS_OPTIONS = ("-q", "-F", "-t", "ext4", "-b", "4096", "-i", "4096", "-I", "256", "-m", "0",
                "-O", "^has_journal", "-E", "lazy_itable_init=1,nodiscard")
MOUNT_OPTIONS = "loop,nosuid,nodev,noatime,noinit_itable"
# What ext4's own metadata takes of an image (inode tables are 1/16 of it with the ratio
# above, plus bitmaps and group descriptors): the corpus image is sized so its data fits.
METADATA_FRACTION = 0.10
MIN_BYTES = 8 << 20
BLOCK = 4096
OCTAL_ESCAPE = re.compile(rb"\\([0-7]{3})")  # how mountinfo spells a space, tab, newline, backslash

logger = log.get(__name__)


def image_path(work: Path, name: str) -> Path:
    return work / f"{name}{IMAGE_SUFFIX}"


def tree_bytes(root: Path) -> int:
    """The space a copy of `root` takes on the arm's file system: every file and directory
    rounded up to whole blocks, symlinks not followed (a bounded, iterative walk)."""
    total = BLOCK  # the root itself
    for e in walk.listing(root, digests=False).entries.values():
        total += BLOCK if e.kind == "dir" else -(-e.size // BLOCK) * BLOCK
    return total


def corpus_image_bytes(corpus_bytes: int, margin_bytes: int) -> int:
    """An image that holds the corpus copy plus the arm's margin, in whole MiB."""
    wanted = (corpus_bytes + margin_bytes) / (1 - METADATA_FRACTION)
    return max(MIN_BYTES, -(-int(wanted) // (1 << 20)) * (1 << 20))


def _run(argv: list[str], what: str, path: Path) -> None:
    # mkfs and mount live in sbin, which a non-login PATH may lack.
    found = shutil.which(argv[0], path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if found is None:
        raise SandbenchError(f"cannot {what} {path}: {argv[0]} is not installed",
                             fix="install e2fsprogs and mount (Debian: apt-get install "
                                 "e2fsprogs mount)", path=str(path))
    done = subprocess.run([found, *argv[1:]], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        if "No space left" in done.stderr:
            raise OSError(28, f"cannot {what}: {done.stderr.strip()}", str(path))
        raise SandbenchError(f"cannot {what} {path}", why=done.stderr.strip()[-2000:] or
                             f"{argv[0]} exited {done.returncode}", path=str(path))


def require_root(work: Path) -> None:
    if os.geteuid() != 0:
        raise SandbenchError(
            "the arm's writable mounts cannot be size-bounded: loop-mounting needs root",
            why=f"sandbench gives each of /corpus, /state and /out a file system of its own "
                f"under {work}, so that no tool can fill the bench root's disk; it never runs "
                "an arm on plain, unbounded directories",
            fix="run sandbench as root; a user who is not root gets file systems the engine "
                "makes instead (placement engine-made), never this placement",
            path=str(work))


def create(image: Path, size_bytes: int) -> None:
    """A new, empty file system image of exactly `size_bytes` (sparse), replacing any."""
    image.unlink(missing_ok=True)
    with open(image, "wb") as fh:
        fh.truncate(size_bytes)
    _run(["mkfs.ext4", *MKFS_OPTIONS, str(image)], "make a file system in", image)


def unmount(point: Path) -> None:
    """Unmount whatever is mounted at `point` (a run killed earlier may have left it), and
    remove the mount point, so that nothing reads an empty directory as the arm's files."""
    while os.path.ismount(point):
        _run(["umount", str(point)], "unmount", point)
    if point.is_dir() and not point.is_symlink():
        point.rmdir()


def mount(image: Path, point: Path, size_bytes: int, read_only: bool = False) -> None:
    """Loop-mount `image` at `point`, then check from the host what the probe checks from
    inside: a file system of its own, no larger than declared."""
    unmount(point)
    point.mkdir()
    options = MOUNT_OPTIONS + (",ro,noexec" if read_only else "")
    _run(["mount", "-t", "ext4", "-o", options, str(image), str(point)], "mount", image)
    st = os.statvfs(point)
    found = st.f_blocks * st.f_frsize
    if not os.path.ismount(point) or found > size_bytes:
        unmount(point)
        raise SandbenchError(f"the file system mounted at {point} is not bounded",
                             why=f"expected a mount of {image} of at most {size_bytes} bytes, "
                                 f"found {found} bytes", path=str(point))


def _remove_lost_found(point: Path) -> None:
    """mke2fs makes lost+found; the arm's tree must hold only what was put there. Only on a
    file system made just now: on a kept one the arm could have swapped it for a link, a
    file or a full tree, and its tree is its own."""
    lost = point / "lost+found"
    if lost.is_dir() and not lost.is_symlink() and not any(lost.iterdir()):
        lost.rmdir()


@contextmanager
def mounted(work: Path, sizes: Mapping[str, int], fresh: bool) -> Iterator[dict[str, Path]]:
    """Every `work/NAME.ext4` of `sizes` mounted at `work/NAME` for the duration; made anew
    when `fresh` (or missing), else the arm's file systems of an earlier attempt, as they
    were. Unmounted on the way out, whatever happened."""
    require_root(work)
    work.mkdir(parents=True, exist_ok=True)
    points: dict[str, Path] = {}
    try:
        for name, size in sizes.items():
            image, point = image_path(work, name), work / name
            made = fresh or not image.is_file()
            if made:
                unmount(point)
                create(image, size)
            mount(image, point, size)
            if made:
                _remove_lost_found(point)
            points[name] = point
        yield points
    finally:
        for name in sizes:
            try:
                unmount(work / name)
            except SandbenchError as exc:
                logger.warning("workfs.unmount_failed", point=str(work / name), why=exc.why)


@contextmanager
def opened(work: Path) -> Iterator[Path]:
    """An arm's file systems after its run, mounted read-only at their mount points for a
    look (an audit, a test), and unmounted after."""
    require_root(work)
    names = sorted(p.name.removesuffix(IMAGE_SUFFIX) for p in work.glob(f"*{IMAGE_SUFFIX}"))
    try:
        for name in names:
            image = image_path(work, name)
            mount(image, work / name, image.stat().st_size, read_only=True)
        yield work
    finally:
        for name in names:
            unmount(work / name)


def leftover_mounts(under: Path) -> list[Path]:
    """Mount points below `under` (an interrupted run leaves its arm's file systems
    mounted), deepest first, from the kernel's own table."""
    root = os.fsencode(under.resolve()) + b"/"
    found = []
    with open("/proc/self/mountinfo", "rb") as fh:
        for line in fh:
            point = OCTAL_ESCAPE.sub(lambda m: bytes([int(m.group(1), 8)]), line.split(b" ")[4])
            if point.startswith(root):
                found.append(Path(os.fsdecode(point)))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def sizes(limits: Limits, corpus_bytes: int) -> dict[str, int]:
    """The bound of each writable mount's file system, by mount name."""
    return {"corpus": corpus_image_bytes(corpus_bytes, limits.corpus_margin_bytes),
            "state": limits.state_bytes, "out": limits.out_bytes}


def prepare_writable(path: Path, user: str, within: Path) -> None:
    """A host directory under `within` the container user may write (chowned when we are
    root), made where missing. An arm may have planted a symlink or a file there in an
    earlier attempt of the run, so every component from `within` down is opened without
    following a link (`orchestrator.untrusted.paths`): a chown as root through a link would
    hand a host directory to the container user. Only the directory itself is chowned: what
    is under it is the arm's own (or a corpus copy, given to the user when it was made)."""
    rel = path.relative_to(within).as_posix()
    uid, gid = (int(x) for x in user.split(":"))
    # `within` itself is the host's own (no sandbox mount is above it): made as any host dir.
    within.mkdir(parents=True, exist_ok=True)
    try:
        with untrusted_paths.made_dirs(within, rel) as fd:
            if os.getuid() == 0:
                os.fchown(fd, uid, gid)
    except HostileInput as exc:
        at = within / exc.data.get("at", rel)
        what = "a symbolic link" if exc.kind == "path-escape" else "not a directory"
        raise SandbenchError(f"refusing to prepare {path}: {at} is {what}",
                             why="a sandboxed tool can write there; sandbench never "
                                 f"follows a link it may have planted ({exc.message})",
                             fix="start a new run (the arm's work dir is not trustworthy)",
                             path=str(at)) from exc
