"""The root file system on the real engine and the host's Debian mirror: bootstrapped by
mmdebstrap once as root and once as a user with subordinate ids (a throwaway user this module
adds and deletes, with a PATH that lacks /usr/sbin), it is the same tar and the same image id
(created at the recipe's epoch, not now), and base and a child build FROM it. The two
bootstraps are loaded under tags of the module's own, which it removes (an image they name
stays while another tag or a child uses it). Adding a user needs root: run as another user,
both bootstraps are that user's, which the fixture says."""

from __future__ import annotations

import importlib
import os
import pwd
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from orchestrator import images
from orchestrator.engine import Engine
from orchestrator.fsutil import read_json
from orchestrator.images.recipes import Bootstrap
from orchestrator.settings import Settings

pytestmark = pytest.mark.integration

rootfs = importlib.import_module("orchestrator.images.rootfs")
REPO = Path(__file__).resolve().parents[2]
Bootstrapped = tuple[Settings, list[tuple[str, dict[str, Any]]]]


@contextmanager
def _throwaway_user() -> Iterator[str]:
    """A user with 65536 subordinate uids and gids past every range the
    host's files hold, deleted (with its ranges) afterwards."""
    name = f"sbtest-{secrets.token_hex(3)}"
    ends = [int(f[1]) + int(f[2]) for file in rootfs.SUBID_FILES if file.exists()
            for f in (line.split(":") for line in file.read_text().splitlines())
            if len(f) == 3 and f[1].isdigit() and f[2].isdigit()]
    first = max([1 << 20, *ends])
    ids = f"{first}-{first + rootfs.SUBIDS_NEEDED - 1}"
    # A system user: useradd gives it no range of its own, so the one added here is its only.
    subprocess.run(["/usr/sbin/useradd", "--system", "--no-create-home", "--shell",
                    "/usr/sbin/nologin", name], check=True)
    try:
        subprocess.run(["/usr/sbin/usermod", "--add-subuids", ids, "--add-subgids", ids, name],
                       check=True)
        yield name
    finally:
        subprocess.run(["/usr/sbin/usermod", "--del-subuids", ids, "--del-subgids", ids, name],
                       check=True)
        subprocess.run(["/usr/sbin/userdel", name], check=True)


def _bootstrap_as(engine: Engine, user: str, boot: Bootstrap, ref: str
                  ) -> tuple[str, dict[str, Any]]:
    """The build's mmdebstrap command and epoch run by `user` with a user's PATH: unshare mode
    in a user namespace mapped to its subordinate ids. The tar is loaded by this process (the
    project's interpreter may not be the user's to run)."""
    tool = rootfs.host_tool("mmdebstrap", "mmdebstrap")
    account = pwd.getpwnam(user)
    with tempfile.TemporaryDirectory(prefix="sandbench-rootfs-user-") as out:
        os.chown(out, account.pw_uid, account.pw_gid)
        tarball = Path(out) / "rootfs.tar"
        proc = subprocess.run(
            ["/usr/sbin/runuser", "-u", user, "--", "env", "-i", "PATH=/usr/bin:/bin",
             f"HOME={out}", *(f"{k}={v}" for k, v in rootfs.bootstrap_env(boot).items()),
             *rootfs.mmdebstrap_argv(tool, boot, images.debian_mirror(), tarball)],
            capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return rootfs.load_tarball(engine, tarball, ref, boot, {})


@pytest.fixture(scope="module")
def bootstrapped(engine: Engine, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[Bootstrapped]:
    """base's root file system bootstrapped twice here: by this process (root in CI), then
    by a throwaway user (or again by this process when it is not root); a fresh bench root
    for the builds."""
    settings = Settings(project_root=REPO, bench_root=tmp_path_factory.mktemp("rootfs") / "b")
    boot = images.load_recipes(REPO / "images")["base"].bootstrap
    assert boot is not None
    refs = [f"sandbench/rootfs:test-{secrets.token_hex(4)}-{n}" for n in (1, 2)]
    made = []
    try:
        made.append(rootfs.bootstrap_image(engine, settings, boot, images.debian_mirror(),
                                           refs[0], {}))
        if os.geteuid() == 0:
            with _throwaway_user() as user:
                made.append(_bootstrap_as(engine, user, boot, refs[1]))
        else:
            print("not root: both bootstraps are this user's (adding a user needs root)")
            made.append(rootfs.bootstrap_image(engine, settings, boot, images.debian_mirror(),
                                               refs[1], {}))
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
