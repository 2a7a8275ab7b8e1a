"""Building the bootstrapped root image with no engine and no mirror: its build seconds
include the bootstrap, an imported base is kept, and the bootstrap's cost and digests are
carried over while the engine keeps the tree."""

from __future__ import annotations

import importlib
import io
import json
import tarfile
import time
from pathlib import Path
from types import ModuleType
from typing import BinaryIO

import pytest

from orchestrator import images
from orchestrator.fsutil import sha256_bytes
from orchestrator.settings import Settings

REPO = Path(__file__).resolve().parents[2]


class BootstrapEngine:
    """What images.build asks of an engine for the base recipe, with no engine."""

    def __init__(self) -> None:
        self.loaded: set[str] = set()

    def image_id(self, ref: str) -> str | None:
        # no rootfs cached: the build bootstraps one, and finds it by its tag once loaded
        return "sha256:" + "1" * 64 if ref in self.loaded else None

    def load(self, archive: BinaryIO) -> None:
        with tarfile.open(fileobj=archive) as tar:
            manifest = tar.extractfile("manifest.json")
            assert manifest is not None
            self.loaded.update(json.load(manifest)[0]["RepoTags"])

    def inspect_image(self, ref: str) -> dict:
        return {"Size": 198_901_244}


def fake_mmdebstrap(argv: list[str], what: str, env: dict[str, str] | None = None) -> None:
    """mmdebstrap's tar (argv[-2]) holding only a dpkg status of one installed package."""
    assert what == "mmdebstrap" and env is not None and "SOURCE_DATE_EPOCH" in env
    status = b"Package: dash\nStatus: install ok installed\nVersion: 0.5.12-2\n\n"
    with tarfile.open(argv[-2], "w") as tar:
        info = tarfile.TarInfo("./var/lib/dpkg/status")
        info.size = len(status)
        tar.addfile(info, io.BytesIO(status))


def offline_bootstrap(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The rootfs module with a set mirror, no registry base image, every host tool found
    and run as root: what a bootstrap of base needs before the test replaces the tools'
    runs."""
    rootfs_mod = importlib.import_module("orchestrator.images.rootfs")
    monkeypatch.setenv("SANDBENCH_DEBIAN_MIRROR", "http://mirror.test/debian")
    monkeypatch.delenv("SANDBENCH_BASE_IMAGE", raising=False)
    monkeypatch.setattr(rootfs_mod, "host_tool", lambda name, package: f"/usr/bin/{name}")
    monkeypatch.setattr(rootfs_mod, "as_user", lambda: False)
    monkeypatch.setattr(rootfs_mod, "_host_output", lambda argv: "amd64")
    monkeypatch.setattr(rootfs_mod, "run_host", fake_mmdebstrap)
    return rootfs_mod


def test_a_bootstrapped_images_build_seconds_include_its_bootstrap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rootfs_mod = offline_bootstrap(monkeypatch)
    build_mod = importlib.import_module("orchestrator.images.build")

    def host(argv: list[str], what: str, env: dict[str, str] | None = None) -> None:
        time.sleep(0.3)
        fake_mmdebstrap(argv, what, env)

    def docker_build(*args: object, **kwargs: object) -> str:
        time.sleep(0.1)
        return "sha256:" + "2" * 64

    monkeypatch.setattr(rootfs_mod, "run_host", host)
    monkeypatch.setattr(build_mod, "_docker_build", docker_build)
    monkeypatch.setattr(build_mod, "_build_helper", lambda *a: {
        "path": "helper/sandbench-exec-000000000000", "sha256": "0" * 64, "size_bytes": 1})
    monkeypatch.setattr(build_mod, "read_manifests", lambda *a: {})
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    [outcome] = images.build(BootstrapEngine(), settings, ["base"])  # type: ignore[arg-type]
    entry = images.ImageLock.load(settings.images_lock).images["base"]  # schema-checked
    bootstrap = entry["base"]["bootstrap_seconds"]
    assert bootstrap >= 0.3
    # the 0.1 s build on top, to the millisecond both are rounded to
    assert entry["build_seconds"] == outcome.seconds >= bootstrap + 0.1 - 0.002


class _ImportedEngine(BootstrapEngine):
    """An engine another host's export was imported into: it holds the locked images (and
    answers to their ids), but no root file system was ever bootstrapped or tagged there."""

    def __init__(self, held: set[str]) -> None:
        self.held, self.tagged = held, []  # type: ignore[var-annotated]

    def image_id(self, ref: str) -> str | None:
        return ref if ref in self.held else None

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        self.tagged.append((image_id, f"{repository}:{tag}"))


def test_an_imported_base_is_kept_not_bootstrapped_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock and images of another host, imported: `images build` says up-to-date, as its
    --dry-run did, and bootstraps nothing; a base image named by SANDBENCH_BASE_IMAGE since
    is another base, and that builds."""
    rootfs_mod = offline_bootstrap(monkeypatch)
    build_mod = importlib.import_module("orchestrator.images.build")
    helper = tmp_path / "bench" / "helper" / "sandbench-exec-000000000000"
    helper.parent.mkdir(parents=True)
    helper.write_bytes(b"helper")
    monkeypatch.setattr(build_mod, "_docker_build", lambda *a, **k: "sha256:" + "2" * 64)
    monkeypatch.setattr(build_mod, "_build_helper", lambda *a: {
        "path": "helper/sandbench-exec-000000000000", "sha256": sha256_bytes(b"helper"),
        "size_bytes": 6})
    monkeypatch.setattr(build_mod, "read_manifests", lambda *a: {})
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    images.build(BootstrapEngine(), settings, ["base"])  # type: ignore[arg-type]
    entry = images.ImageLock.load(settings.images_lock).images["base"]

    def bootstrap(*args: object) -> None:
        raise AssertionError("bootstrapped again")
    monkeypatch.setattr(rootfs_mod, "run_host", bootstrap)
    imported = _ImportedEngine({entry["image_id"]})
    [planned] = images.build(None, settings, ["base"], dry_run=True)
    [outcome] = images.build(imported, settings, ["base"])  # type: ignore[arg-type]
    assert (planned.action, outcome.action) == ("up-to-date", "up-to-date")
    assert outcome.image_id == entry["image_id"]
    assert images.ImageLock.load(settings.images_lock).images["base"] == entry
    assert imported.tagged == [(entry["image_id"], entry["tag"])]

    registry = "debian@sha256:" + "3" * 64
    monkeypatch.setenv("SANDBENCH_BASE_IMAGE", registry)
    [planned] = images.build(None, settings, ["base"], dry_run=True)
    [outcome] = images.build(_ImportedEngine({entry["image_id"], registry}), settings,
                             ["base"])  # type: ignore[arg-type]
    assert (planned.action, outcome.action) == ("would-build", "built")


def test_bootstrap_seconds_are_carried_over_while_the_engine_keeps_the_rootfs() -> None:
    carried_over = importlib.import_module("orchestrator.images.rootfs").carried_over
    before = {"base": {"source": "mmdebstrap", "key": "k1", "bootstrap_seconds": 18.7,
                       "tar_sha256": "a" * 64, "packages": 96, "packages_sha256": "b" * 64}}
    cached = {"source": "mmdebstrap", "key": "k1"}
    assert carried_over(cached, before) == 18.7
    # recorded again in the new entry, with what checks the tree
    assert cached == before["base"]
    other = {"source": "mmdebstrap", "key": "k2"}
    assert carried_over(other, before) == 0.0 and "bootstrap_seconds" not in other
    assert carried_over({"source": "registry", "reference": "x"}, before) == 0.0
    assert carried_over({}, None) == 0.0
