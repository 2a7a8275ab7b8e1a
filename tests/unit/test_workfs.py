"""The arms' writable mounts are file systems of their own: sized from the arm's limits,
mounted for the arm's run only, and never larger than declared. The mounting tests use the
real kernel (loop devices, ext4) and need root, as sandbench itself does."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.sandbox import cleanup, workfs
from orchestrator.errors import SandbenchError
from orchestrator.sandbox.spec import MIB, Limits
from orchestrator.untrusted import walk
from tests.unit.test_untrusted_walk import deep_tree

needs_root = pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"),
                                reason="loop-mounting needs root (CI runs as root)")


def test_sizes_come_from_the_limits_and_the_corpus_fits_with_its_margin() -> None:
    limits = Limits(state_bytes=32 * MIB, out_bytes=16 * MIB, corpus_margin_bytes=8 * MIB)
    sizes = workfs.sizes(limits, 100 * MIB)
    assert sizes["state"] == 32 * MIB and sizes["out"] == 16 * MIB
    assert sizes["corpus"] % MIB == 0
    assert sizes["corpus"] * (1 - workfs.METADATA_FRACTION) >= 108 * MIB
    assert workfs.sizes(limits, 0)["corpus"] >= workfs.MIN_BYTES


def test_tree_bytes_counts_whole_blocks_and_does_not_follow_links(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "one").write_bytes(b"x")
    (tmp_path / "big").write_bytes(b"x" * (workfs.BLOCK + 1))
    os.symlink("/usr", tmp_path / "link")
    # the root and d, one block each; `one` one block, `big` two, the link its own size
    assert workfs.tree_bytes(tmp_path) == workfs.BLOCK * (2 + 1 + 2 + 1)


def test_without_root_the_arm_is_refused_naming_why(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with (pytest.raises(SandbenchError, match="cannot be size-bounded") as info,
          workfs.mounted(tmp_path / "w", {"state": 16 * MIB}, fresh=True)):
        pass
    assert "run sandbench as root" in info.value.fix
    assert not (tmp_path / "w").exists()


def _fill(path: Path, limit: int) -> tuple[int, int]:
    """Write until the file system refuses (or `limit`): (errno, bytes written)."""
    written = 0
    chunk = b"\xa5" * MIB
    with open(path, "wb") as fh:
        try:
            while written < limit:
                written += fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            return exc.errno or 0, written
    return 0, written


@needs_root
def test_a_mount_is_bounded_and_gone_when_the_arm_is_done(tmp_path: Path) -> None:
    work = tmp_path / "work" / "arm"
    sizes = {"state": 16 * MIB, "out": 8 * MIB}
    with workfs.mounted(work, sizes, fresh=True) as points:
        assert set(points) == {"state", "out"}
        for name, size in sizes.items():
            point = work / name
            assert os.path.ismount(point) and list(point.iterdir()) == []  # no lost+found
            st = os.statvfs(point)
            assert st.f_blocks * st.f_frsize <= size
            assert os.stat(point).st_dev != os.stat(tmp_path).st_dev
        err, written = _fill(work / "state" / "fill", 256 * MIB)
        assert err == errno.ENOSPC and written <= 16 * MIB
        (work / "out" / "kept").write_text("kept")
    assert not (work / "state").exists() and not (work / "out").exists()
    image = workfs.image_path(work, "state")
    assert image.stat().st_size == 16 * MIB
    assert image.stat().st_blocks * 512 <= 16 * MIB  # sparse: what was written, at most
    with workfs.opened(work):  # a look after the run, read-only
        assert (work / "out" / "kept").read_text() == "kept"
        assert (work / "state" / "fill").stat().st_size == written
        with pytest.raises(OSError) as info:
            (work / "out" / "new").write_text("x")
        assert info.value.errno == errno.EROFS
    assert not (work / "out").exists()
    with workfs.mounted(work, {"out": 8 * MIB}, fresh=False):
        assert (work / "out" / "kept").read_text() == "kept"  # an earlier attempt's files
    with workfs.mounted(work, {"out": 8 * MIB}, fresh=True):
        assert list((work / "out").iterdir()) == []


@needs_root
def test_a_mount_left_by_a_killed_run_is_found_reused_and_cleaned_up(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    work = runs / "run-x" / "work" / "arm"
    work.mkdir(parents=True)
    image = workfs.image_path(work, "state")
    workfs.create(image, 16 * MIB)
    workfs.mount(image, work / "state", 16 * MIB)  # as a SIGKILLed run leaves it
    (work / "state" / "index").write_text("built")
    try:
        assert workfs.leftover_mounts(runs) == [work / "state"]
        with workfs.mounted(work, {"state": 16 * MIB}, fresh=False):
            assert (work / "state" / "index").read_text() == "built"
        assert workfs.leftover_mounts(runs) == []
        workfs.mount(image, work / "state", 16 * MIB)
        (found,) = cleanup.find_mounts(runs)
        assert found.kind == "mount" and found.id == str(work / "state")
        assert cleanup.remove(None, [found]) == [found]  # type: ignore[arg-type]
        assert workfs.leftover_mounts(runs) == [] and not (work / "state").exists()
    finally:
        subprocess.run(["umount", str(work / "state")], capture_output=True, check=False)


@needs_root
def test_an_image_that_is_larger_than_declared_is_refused(tmp_path: Path) -> None:
    image = tmp_path / "state.ext4"
    workfs.create(image, 32 * MIB)
    with pytest.raises(SandbenchError, match="is not bounded") as info:
        workfs.mount(image, tmp_path / "state", 16 * MIB)
    assert f"at most {16 * MIB} bytes" in info.value.why
    assert not os.path.ismount(tmp_path / "state")


@needs_root
def test_a_kept_file_system_is_the_arms_own_lost_found_and_all(tmp_path: Path) -> None:
    """lost+found is removed from a file system made just now, never from a kept one: there
    the arm could have swapped it for a link to a host directory (or anything else)."""
    work = tmp_path / "work" / "arm"
    host_dir = tmp_path / "host-dir"
    host_dir.mkdir()
    with workfs.mounted(work, {"state": 16 * MIB}, fresh=True):
        os.symlink(host_dir, work / "state" / "lost+found")
        (work / "state" / "home").write_text("a file where HOME was")
    with workfs.mounted(work, {"state": 16 * MIB}, fresh=False):
        assert os.readlink(work / "state" / "lost+found") == str(host_dir)
    assert host_dir.is_dir()


@needs_root
@pytest.mark.parametrize("plant", ["file", "link"])
def test_a_home_turned_into_a_file_or_link_is_refused_naming_it(tmp_path: Path,
                                                                plant: str) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    work = tmp_path / "work" / "arm"
    (work / "state").mkdir(parents=True)
    home = work / "state" / "home"
    if plant == "file":
        home.write_text("x")
    else:
        os.symlink(victim, home)
    with pytest.raises(SandbenchError) as refused:
        workfs.prepare_writable(home / "sub", "4321:4321", work)
    assert refused.value.data["path"] == str(home)
    assert ("is a symbolic link" if plant == "link" else "is not a directory") in \
        refused.value.what
    assert "new run" in refused.value.fix
    assert victim.stat().st_uid == os.geteuid() and list(victim.iterdir()) == []


@needs_root
def test_preparing_a_deep_tree_walks_nothing(tmp_path: Path) -> None:
    """The arm's tree under a writable dir is its own: only the directory is chowned, so a
    tree far past the recursion limit costs nothing (it used to raise RecursionError)."""
    work = tmp_path / "work" / "arm"
    (work / "state").mkdir(parents=True)
    deep_tree(work / "state", 3000)
    workfs.prepare_writable(work / "state", "4321:4321", work)
    assert os.stat(work / "state").st_uid == 4321
    assert os.stat(work / "state" / "d").st_uid == os.geteuid()
    walk.remove_tree(work)


def test_preparing_makes_the_hosts_own_work_dir_where_missing(tmp_path: Path) -> None:
    """The work dir above the mounts is the host's (a sandbox writes only below it): a fresh
    one is made, as a mount's dir is, rather than refused as if an arm had planted it."""
    work = tmp_path / "fresh" / "arm"
    workfs.prepare_writable(work / "corpus", f"{os.geteuid()}:{os.getegid()}", work)
    assert (work / "corpus").is_dir() and not (work / "corpus").is_symlink()
