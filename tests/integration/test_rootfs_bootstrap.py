"""The root file system on the real engine and the host's Debian mirror: bootstrapped twice by
mmdebstrap, it is the same tar and the same image id (created at the recipe's epoch, not now),
and base and a child build FROM it. The module's two bootstraps are loaded under tags of its
own, which it removes (an image they name stays while another tag or a child uses it)."""

from __future__ import annotations

import importlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import images
from orchestrator.engine import Engine
from orchestrator.fsutil import read_json
from orchestrator.settings import Settings

pytestmark = pytest.mark.integration

rootfs = importlib.import_module("orchestrator.images.rootfs")
REPO = Path(__file__).resolve().parents[2]
Bootstrapped = tuple[Settings, list[tuple[str, dict[str, Any]]]]


@pytest.fixture(scope="module")
def bootstrapped(engine: Engine, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[Bootstrapped]:
    """base's root file system bootstrapped twice here, as this process's user (root in CI),
    each loaded under a tag of this module's own; a fresh bench root for the builds."""
    settings = Settings(project_root=REPO, bench_root=tmp_path_factory.mktemp("rootfs") / "b")
    boot = images.load_recipes(REPO / "images")["base"].bootstrap
    assert boot is not None
    mirror = images.debian_mirror()
    refs = [f"sandbench/rootfs:test-{secrets.token_hex(4)}-{n}" for n in (1, 2)]
    made = []
    try:
        for ref in refs:
            made.append(rootfs.bootstrap_image(engine, settings, boot, mirror, ref, {}))
        yield settings, made
    finally:
        for ref in refs:
            if engine.image_id(ref) is not None:
                engine.remove_image(ref)


def test_two_bootstraps_are_the_same_tar_and_the_same_image(engine: Engine,
                                                            bootstrapped: Bootstrapped) -> None:
    _, [(first_id, first), (second_id, second)] = bootstrapped
    assert first["tar_sha256"] == second["tar_sha256"]
    assert first["packages_sha256"] == second["packages_sha256"] and first["packages"] > 50
    assert first_id == second_id
    image = engine.inspect_image(first_id)
    assert image["Created"].startswith("2023-06-10T00:00:00")  # the recipe's epoch
    assert image["RootFS"]["Layers"] == [f"sha256:{first['tar_sha256']}"]


def test_base_and_a_child_build_from_the_bootstrapped_tree(engine: Engine,
                                                           bootstrapped: Bootstrapped) -> None:
    """The build's root file system is the image the fixture bootstrapped (made again by the
    build, or found by its key): the lock says so, with the epoch, and the package list it
    records is the one the built base image holds."""
    settings, [(rootfs_id, made), _] = bootstrapped
    outcomes = images.build(engine, settings, ["ctags"], jobs=1)
    assert [(o.name, o.action) for o in outcomes] == [("base", "built"), ("ctags", "built")]
    lock = images.ImageLock.load(settings.images_lock)
    base, ctags = lock.images["base"], lock.images["ctags"]
    assert base["parent_id"] == base["build_args"]["ROOTFS"] == rootfs_id
    assert base["base"]["source"] == "mmdebstrap"
    assert base["base"]["source_date_epoch"] == 1686355200
    assert base["manifests"]["dpkg"]["sha256"] == made["packages_sha256"]
    assert ctags["parent_id"] == base["image_id"]
    checks = {c.name: c.status for c in images.verify(engine, settings)}
    assert (checks["base"], checks["ctags"], checks["base helper"]) == ("ok", "ok", "ok")
    assert read_json(settings.images_lock)["images"]["ctags"]["tool_version"].startswith(
        "Universal Ctags")
