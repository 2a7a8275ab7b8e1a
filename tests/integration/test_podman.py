"""Podman's Docker API (Debian 12's podman 4.3, as root): a `podman system service` started
here over storage of its own (benchmarks/podman_engine.py), never touching another
container or image. Images built on Docker go there through `images export`/`import` with
their ids; a root file system imported there keeps the tag it was given; the demo suite runs
there with every guard passed and the same grades, cell by cell, as on the rootful Docker
engine; and a real loosening is still refused there, by name."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.podman_engine import PodmanService, podman_service
from orchestrator import corpus, images
from orchestrator.sandbox import podman
from orchestrator.engine import Engine
from orchestrator.errors import GuardViolation
from orchestrator.images import transfer
from orchestrator.images.rootfs import write_image_archive
from orchestrator.images.recipes import Bootstrap
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import HelperFile, Mount, SandboxSpec, default_user
from orchestrator.settings import Settings
from orchestrator.isolation import guards
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import grades_and_bytes

pytestmark = pytest.mark.integration

# The demo's arms that have images here (devscout's needs an artifact this repository lacks).
ARMS = ["rg", "ast-grep", "code-review-graph", "code-index-mcp", "ctags"]


@pytest.fixture(scope="module")
def service(engine: Engine) -> Iterator[PodmanService]:
    """Podman's service of this module's own; it needs root (its storage is root's) and
    Debian's podman (scripts/ensure-podman installs it)."""
    if os.geteuid() != 0 or shutil.which("podman") is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root with Debian's podman (scripts/ensure-podman)")
        pytest.skip("the Podman service needs root and podman (scripts/ensure-podman)")
    with podman_service() as started:
        yield started


@pytest.fixture(scope="module")
def podman_engine(service: PodmanService) -> Engine:
    return Engine.connect(address=service.url)


def test_podman_is_told_from_docker(engine: Engine, podman_engine: Engine) -> None:
    assert (engine.dialect, podman_engine.dialect) == (podman.DOCKER, podman.PODMAN)
    assert pool.facts(podman_engine, "unix:///x")["dialect"] == podman.PODMAN
    # Podman answers a new random ID each time: the engine's identity must not follow it.
    assert len({pool.facts(podman_engine, "unix:///x")["id"] for _ in range(2)}) == 1


def test_a_root_file_system_loads_there_under_its_tag_with_the_id_its_config_makes(
        podman_engine: Engine, tmp_path: Path) -> None:
    """Base's root file system is loaded as an image archive with a fixed config (Podman
    would name a `docker import` `:latest`): Podman keeps the tag, and the id is the one the
    config makes, as on Docker, so two engines bootstrapping the same tree agree."""
    tarball = tmp_path / "rootfs.tar"
    with tarfile.open(tarball, "w") as tar:
        info = tarfile.TarInfo("marker")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"ok"))
    ref = "sandbench-test/rootfs:podman"
    boot = Bootstrap(suite="bookworm", variant="minbase", source_date_epoch=1686355200)
    expected = write_image_archive(tarball, tmp_path / "rootfs.image", ref, boot, "amd64")
    with open(tmp_path / "rootfs.image", "rb") as archive:
        podman_engine.load(archive)
    assert podman_engine.image_id(ref) == expected


def _to_podman(bench: Settings, engine: Engine, podman_engine: Engine, scratch: Path,
               names: list[str]) -> None:
    """Locked images (base with them) through `images export` and `import`, as a user moves
    them; each keeps its id there (import_ checks every one)."""
    archive = scratch / "images.tar"
    transfer.export(engine, bench, names, archive)
    private = Settings(project_root=bench.project_root, bench_root=scratch / "root")
    images.share_lock(bench, private.bench_root)
    assert set(names) <= set(transfer.import_(podman_engine, private, archive))
    archive.unlink()


def test_the_demo_on_podman_grades_as_on_docker(engine: Engine, bench: Settings,
                                                podman_engine: Engine, service: PodmanService,
                                                tmp_path: Path) -> None:
    corpus.fetch(corpus.load_lock(corpus.lock_path(bench))["demo"], bench)
    _to_podman(bench, engine, podman_engine, tmp_path, ARMS)
    on_docker = runner.run(bench, RunOptions("demo", arms=tuple(ARMS)), [pool.one(engine)])
    on_podman = runner.run(bench, RunOptions("demo", arms=tuple(ARMS)), pool.connect([service.url]))
    meta = json.loads((on_podman / "run.json").read_text())
    assert meta["status"] == "complete"
    (record,) = meta["engines"].values()
    assert record["dialect"] == podman.PODMAN
    for arm in ARMS:  # every guard passed there, and an audit recomputes the same verdicts
        verdict = json.loads((on_podman / "guards" / arm / "verdict.json").read_text())
        assert [v for v in verdict if not v["ok"]] == [], arm
    assert all(a.ok for a in guards.audit(on_podman))
    docker_cells, podman_cells = grades_and_bytes(on_docker, bench), grades_and_bytes(
        on_podman, bench)
    assert len(podman_cells) == len(docker_cells) > 0
    assert {k: v[:4] for k, v in podman_cells.items()} == {
        k: v[:4] for k, v in docker_cells.items()}
    # Payload bytes too, but for code-review-graph, whose node ids differ between any two of
    # its index builds (tests/integration/test_engines.py).
    assert {k: v for k, v in podman_cells.items() if k[0] != "code-review-graph"} == {
        k: v for k, v in docker_cells.items() if k[0] != "code-review-graph"}


@dataclasses.dataclass(frozen=True)
class Loosened(SandboxSpec):
    """A spec with one create argument overridden: what the guards must refuse on Podman."""

    override: tuple[tuple[str, Any], ...] = ()

    def create_kwargs(self) -> dict[str, Any]:
        return {**super().create_kwargs(), **dict(self.override)}


@pytest.mark.parametrize(("override", "guard"), [
    (("cap_add", ["SETUID", "SETGID", "SYS_ADMIN"]), "cap_add"),
    # Only one capability dropped: Podman's other defaults are kept.
    (("cap_drop", ["CHOWN"]), "cap_drop"),
    # Without sandbench's own /run and /var/tmp, Podman mounts its writable, unbounded ones.
    (("tmpfs", {"/tmp": "rw,nosuid,nodev,size=1048576,mode=1777"}), "tmpfs"),
    (("environment", ["HOME=/state", "LD_PRELOAD=/state/x.so"]), "env"),
    (("network_mode", "host"), "network_mode"),
])
def test_a_loosening_on_podman_is_refused_naming_the_guard(
        engine: Engine, bench: Settings, podman_engine: Engine, tmp_path: Path,
        override: tuple[str, Any], guard: str) -> None:
    lock = images.ImageLock.load(bench.images_lock)
    if podman_engine.image_id(lock.image_id("base")) is None:
        _to_podman(bench, engine, podman_engine, tmp_path, ["base"])
    mounts = [Mount(tmp_path / name, f"/{name}") for name in ("corpus", "state", "out")]
    for m in mounts:
        m.source.mkdir()
    spec = Loosened(run_id=f"test-{tmp_path.name}"[:60], arm="base",
                    image_id=lock.image_id("base"), tool_version="test", user=default_user(),
                    env={"HOME": "/state"}, helper=HelperFile(*lock.helper()),
                    mounts=tuple(mounts), workdir="/corpus", override=(override,))
    with Sandbox(podman_engine, spec) as box, pytest.raises(GuardViolation) as err:
        box.verify(tmp_path / "guards")
    assert guard in {f.guard for f in err.value.data["failures"]}, err.value.why
    # Refused from outside: nothing ran inside.
    assert not (tmp_path / "guards" / "probe.json").exists()

