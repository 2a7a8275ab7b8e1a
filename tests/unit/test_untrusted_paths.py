"""untrusted.paths: a name a tool chose is resolved inside its root, component by component,
never through a link, a file or `..` planted on the way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.untrusted import limits, paths
from orchestrator.untrusted.errors import HostileInput


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root" / "d").mkdir(parents=True)
    (tmp_path / "root" / "d" / "f.txt").write_bytes(b"inside\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_bytes(b"host secret\n")
    return tmp_path / "root"


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../outside/secret", "d/../../outside",
                                  "d/./f.txt", "d//f.txt", "d/", "a\0b",
                                  "x" * (limits.PATH_MAX_BYTES + 1)])
def test_a_name_that_could_leave_its_root_is_refused_before_any_open(name: str) -> None:
    with pytest.raises(HostileInput) as refused:
        paths.parts(name)
    assert refused.value.kind == "path-escape"


def test_a_plain_name_reads_inside_its_root(root: Path) -> None:
    assert paths.read_bytes(root, "d/f.txt", 100) == b"inside\n"
    with pytest.raises(HostileInput) as big:
        paths.read_bytes(root, "d/f.txt", 3)
    assert big.value.kind == "too-large"


@pytest.mark.parametrize("plant", ["leaf", "dir", "proc"])
def test_a_link_anywhere_on_the_way_is_never_followed(root: Path, plant: str) -> None:
    outside = root.parent / "outside"
    if plant == "leaf":
        os.symlink(outside / "secret", root / "d" / "link")
        name = "d/link"
    elif plant == "dir":
        os.symlink(outside, root / "ldir")
        name = "ldir/secret"
    else:
        os.symlink("/proc/self", root / "proc")
        name = "proc/environ"
    with pytest.raises(HostileInput) as refused:
        paths.read_bytes(root, name, 1 << 20)
    assert refused.value.kind == "path-escape"


def test_a_fifo_or_a_directory_is_not_read(root: Path) -> None:
    os.mkfifo(root / "fifo")
    for name in ("fifo", "d"):
        with pytest.raises(HostileInput) as refused:
            paths.read_bytes(root, name, 100)
        assert refused.value.kind == "not-a-file"


def _make_dirs(root: Path, rel: str) -> None:
    with paths.made_dirs(root, rel):
        pass


def test_made_dirs_never_goes_through_a_planted_link_or_file(root: Path) -> None:
    _make_dirs(root, "home/a/b")
    assert (root / "home" / "a" / "b").is_dir()
    os.symlink(root.parent / "outside", root / "home2")
    with pytest.raises(HostileInput) as refused:
        _make_dirs(root, "home2/x")
    assert refused.value.kind == "path-escape" and refused.value.data["at"] == "home2"
    assert not (root.parent / "outside" / "x").exists()
    (root / "home3").write_text("a file")
    with pytest.raises(HostileInput) as refused:
        _make_dirs(root, "home3/x")
    assert refused.value.kind == "not-a-directory" and refused.value.data["at"] == "home3"


def test_opened_dir_and_file_give_descriptors_inside(root: Path) -> None:
    with paths.opened_dir(root, "d") as fd:
        assert sorted(os.listdir(fd)) == ["f.txt"]
    with paths.opened_file(root, "d/f.txt") as fd:
        assert os.read(fd, 100) == b"inside\n"
