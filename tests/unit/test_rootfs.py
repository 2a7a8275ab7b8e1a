"""The bootstrapped root file system's pure parts: finding the host's tools, the subordinate
ids a user's bootstrap needs, the mmdebstrap command, the image archive and its fixed config,
the package list, and the recipe's epoch. No engine, no mirror."""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import pwd
import tarfile
from pathlib import Path
from typing import BinaryIO

import pytest
import requests

from orchestrator import images
from orchestrator.errors import EngineError, InputError, SandbenchError
from orchestrator.images.recipes import Bootstrap
from orchestrator.settings import Settings

rootfs = importlib.import_module("orchestrator.images.rootfs")
REPO = Path(__file__).resolve().parents[2]
BOOKWORM = Bootstrap("bookworm", "minbase", 1686355200)
ME = pwd.getpwuid(os.getuid()).pw_name


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_tool_off_the_path_is_named_with_its_folder_and_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sbin = tmp_path / "sbin"
    tool = _executable(sbin / "mmdebstrap")
    monkeypatch.setattr(rootfs, "INSTALL_DIRS", (str(tmp_path / "bin"), str(sbin)))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(SandbenchError) as caught:
        rootfs.host_tool("mmdebstrap", "mmdebstrap")
    assert caught.value.what == f"mmdebstrap is installed at {tool} but {sbin} is not on your PATH"
    assert caught.value.fix == f'export PATH="$PATH:{sbin}" and rerun'
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{sbin}")
    assert rootfs.host_tool("mmdebstrap", "mmdebstrap") == str(tool)
    with pytest.raises(SandbenchError) as caught:
        rootfs.host_tool("newuidmap", "uidmap")
    assert caught.value.what == "newuidmap is not installed"
    assert caught.value.fix is not None and caught.value.fix.startswith("apt-get install uidmap")


@pytest.mark.parametrize(("text", "ok"), [
    ("", False),
    ("someone:100000:65536\n", False),
    (f"{ME}:100000:65535\n", False),  # too few for Debian's ids
    (f"{ME}:100000\n", False),
    (f"{ME}:100000:65536\n", True),
    (f"other:1:65536\n{ME}:200000:70000\n", True),
    (f"{os.getuid()}:200000:70000\n", False),  # mmdebstrap looks for the name only
    (f"{ME}:1:10\n{ME}:200000:70000\n", False),  # and reads the first line naming it
])
def test_a_subordinate_id_range_is_found_as_mmdebstrap_finds_it(text: str, ok: bool) -> None:
    problem = rootfs.subid_problem(ME, os.getuid(), Path("/etc/subuid"), text)
    assert (problem is None) == ok
    if not ok:
        assert problem == (f"/etc/subuid has no range of 65536 ids for user {ME!r} "
                           f"(uid {os.getuid()})")


def test_missing_subordinate_ids_are_one_error_naming_file_user_and_fix(tmp_path: Path) -> None:
    subuid, subgid = tmp_path / "subuid", tmp_path / "subgid"
    subuid.write_text(f"{ME}:100000:65536\n")
    with pytest.raises(SandbenchError) as caught:  # subgid absent: read as empty
        rootfs.check_subids(os.getuid(), (subuid, subgid))
    err = caught.value
    assert err.what == (f"cannot bootstrap the root file system as {ME}: {subgid} has no range "
                        f"of 65536 ids for user {ME!r} (uid {os.getuid()})")
    assert err.fix == (f"as root: usermod --add-subuids 100000-165535 --add-subgids "
                       f"100000-165535 {ME}")
    assert err.data == {"file": str(subgid), "user": ME}
    subgid.write_text(f"{ME}:100000:65536\n")
    rootfs.check_subids(os.getuid(), (subuid, subgid))


def test_the_command_is_unshare_mode_without_the_hosts_own_files() -> None:
    """One command for root and users (unshare mode; a user's maps its subordinate ids)."""
    out = Path("/b/rootfs.tar")
    argv = rootfs.mmdebstrap_argv("/usr/bin/mmdebstrap", BOOKWORM, "http://m/d", out)
    assert argv[:4] == ["/usr/bin/mmdebstrap", "--mode=unshare", "--variant=minbase",
                        "--format=tar"]
    assert argv[-3:] == ["bookworm", str(out), "http://m/d"]
    # the host's resolv.conf and hostname would make the tar differ per host
    [hook] = [a for a in argv if a.startswith("--customize-hook=")]
    assert hook == '--customize-hook=rm -f "$1/etc/resolv.conf" "$1/etc/hostname"'


def _tar(path: Path, body: bytes) -> Path:
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("./etc/debian_version")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return path


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore


def test_the_image_archive_is_the_tar_and_a_config_fixed_by_the_epoch(tmp_path: Path) -> None:
    tarball = _tar(tmp_path / "rootfs.tar", b"12.5\n")
    image_id = rootfs.write_image_archive(tarball, tmp_path / "a.tar", "sandbench/rootfs:k",
                                          BOOKWORM, "amd64")
    members = _members(tmp_path / "a.tar")
    [manifest] = json.loads(members["manifest.json"])
    config = members[manifest["Config"]]
    diff_id = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert manifest == {"Config": f"{image_id.removeprefix('sha256:')}.json",
                        "RepoTags": ["sandbench/rootfs:k"], "Layers": [f"{diff_id}/layer.tar"]}
    assert image_id == "sha256:" + hashlib.sha256(config).hexdigest()  # what an engine computes
    assert members[f"{diff_id}/layer.tar"] == tarball.read_bytes()
    parsed = json.loads(config)
    assert parsed["created"] == "2023-06-10T00:00:00Z"
    assert parsed["history"][0]["created"] == parsed["created"]
    assert (parsed["architecture"], parsed["os"]) == ("amd64", "linux")
    assert parsed["rootfs"] == {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]}
    # Again, elsewhere, later: the same bytes, so the same image id.
    again = rootfs.write_image_archive(tarball, tmp_path / "b.tar", "sandbench/rootfs:k",
                                       BOOKWORM, "amd64")
    assert again == image_id
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    # The id follows the tree and the epoch, not the tag.
    other_tag = rootfs.write_image_archive(tarball, tmp_path / "c.tar", "x/y:z", BOOKWORM, "amd64")
    assert other_tag == image_id
    other_tree = rootfs.write_image_archive(_tar(tmp_path / "t2.tar", b"12.6\n"),
                                            tmp_path / "d.tar", "x/y:z", BOOKWORM, "amd64")
    later = rootfs.write_image_archive(tarball, tmp_path / "e.tar", "x/y:z",
                                       Bootstrap("bookworm", "minbase", 1686355201), "amd64")
    assert len({image_id, other_tree, later}) == 3


def test_the_package_list_is_the_installed_packages_sorted(tmp_path: Path) -> None:
    status = (b"Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.2.13\n"
              b"Description: x\n Version: not a field\n\n"
              b"Package: gone\nStatus: deinstall ok config-files\nVersion: 1\n\n"
              b"Package: apt\nStatus: install ok installed\nVersion: 2.6.1\n")
    with tarfile.open(tmp_path / "r.tar", "w") as tar:
        info = tarfile.TarInfo("./var/lib/dpkg/status")
        info.size = len(status)
        tar.addfile(info, io.BytesIO(status))
    assert rootfs.dpkg_manifest(tmp_path / "r.tar") == "apt=2.6.1\nzlib1g=1:1.2.13\n"
    with pytest.raises(SandbenchError, match="no /var/lib/dpkg/status"):
        rootfs.dpkg_manifest(_tar(tmp_path / "empty.tar", b""))


@pytest.mark.parametrize("value", ["'1686355200'", "true", "0", "-5", "4294967296", "1.5"])
def test_a_bad_epoch_names_its_key(tmp_path: Path, value: str) -> None:
    folder = tmp_path / "images" / "base"
    folder.mkdir(parents=True)
    (folder / "Dockerfile").write_text("FROM scratch\n")
    (folder / "recipe.toml").write_text("tool_version = ['x']\n[bootstrap]\nsuite = 'b'\n"
                                        f"variant = 'm'\nsource_date_epoch = {value}\n")
    with pytest.raises(InputError, match="bootstrap.source_date_epoch"):
        images.load_recipes(tmp_path / "images")


def test_each_shipped_root_pins_its_epoch_and_the_key_follows_it() -> None:
    recipes = images.load_recipes(REPO / "images")
    roots = {n: r.bootstrap for n, r in recipes.items() if r.bootstrap is not None}
    assert roots == {"base": BOOKWORM,
                     "base-trixie": Bootstrap("trixie", "minbase", 1754697600)}
    key = rootfs.bootstrap_key(BOOKWORM, "http://m/d")
    assert key != rootfs.bootstrap_key(Bootstrap("bookworm", "minbase", 1), "http://m/d")
    assert key != rootfs.bootstrap_key(BOOKWORM, "http://other/d")


def test_a_users_bootstrap_without_subordinate_ids_stops_before_mmdebstrap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rootfs, "host_tool", lambda name, package: f"/usr/bin/{name}")
    monkeypatch.setattr(rootfs, "as_user", lambda: True)
    monkeypatch.setattr(rootfs, "SUBID_FILES", (tmp_path / "subuid", tmp_path / "subgid"))
    def ran(*args: object) -> None:
        raise AssertionError("mmdebstrap ran")
    monkeypatch.setattr(rootfs, "run_host", ran)
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    with pytest.raises(SandbenchError) as caught:
        rootfs.bootstrap_image(None, settings, BOOKWORM, "http://m/d", "x/y:z", {})
    assert caught.value.data == {"file": str(tmp_path / "subuid"), "user": ME}


class _LoadingEngine:
    """An engine whose load fails as told, after (or without) loading the archive's image."""

    def __init__(self, failure: BaseException, loaded: bool) -> None:
        self.failure, self.loaded, self.refs = failure, loaded, set[str]()

    def load(self, archive: BinaryIO) -> None:
        with tarfile.open(fileobj=archive) as tar:
            manifest = tar.extractfile("manifest.json")
            assert manifest is not None
            if self.loaded:
                self.refs.update(json.load(manifest)[0]["RepoTags"])
        raise EngineError("engine refused: load images") from self.failure

    def image_id(self, ref: str) -> str | None:
        return "sha256:" + "1" * 64 if ref in self.refs else None


@pytest.mark.parametrize(("failure", "loaded", "kept"), [
    (requests.exceptions.ReadTimeout("read timed out"), True, True),  # the answer was lost
    (requests.exceptions.ReadTimeout("read timed out"), False, False),
    (ValueError("not an image archive"), True, False),  # refused outright: not worth a look
])
def test_a_load_whose_answer_was_lost_is_found_by_its_tag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException, loaded: bool,
        kept: bool) -> None:
    monkeypatch.setattr(rootfs, "_host_output", lambda argv: "amd64")
    status = b"Package: dash\nStatus: install ok installed\nVersion: 1\n"
    with tarfile.open(tmp_path / "rootfs.tar", "w") as tar:
        info = tarfile.TarInfo("./var/lib/dpkg/status")
        info.size = len(status)
        tar.addfile(info, io.BytesIO(status))
    engine = _LoadingEngine(failure, loaded)
    if kept:
        made_id, info_out = rootfs.load_tarball(engine, tmp_path / "rootfs.tar", "x/y:z",
                                                BOOKWORM, {})
        assert made_id == "sha256:" + "1" * 64 and info_out["packages"] == 1
    else:
        with pytest.raises(EngineError, match="load images"):
            rootfs.load_tarball(engine, tmp_path / "rootfs.tar", "x/y:z", BOOKWORM, {})
    assert [p.name for p in tmp_path.iterdir()] == ["rootfs.tar"]  # the archive is removed
