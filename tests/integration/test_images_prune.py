"""Image disk use on the real engine: a build leaves none of its stage images behind, and
`images prune` removes what the lock does not keep, never what it keeps or a container
uses. Every image and container here carries this test's own label and is removed by id."""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import images, labels as lb
from orchestrator.engine import Engine
from orchestrator.images.prune import prune
from orchestrator.settings import Settings

pytestmark = pytest.mark.integration

TEST_LABEL = "sandbench.test-prune"

DOCKERFILE = """ARG BASE
FROM ${{BASE}} AS build
LABEL sandbench.stage=build {label}={token}
RUN echo {version} > /built

FROM ${{BASE}}
LABEL {label}={token}
COPY --from=build /built /built
"""


@pytest.fixture
def tiny(engine: Engine, built: Settings, tmp_path: Path) -> Iterator[tuple[Settings, str]]:
    """A project holding the base recipe and a two-stage recipe `tiny` of this test's own,
    with the built images' lock; what carries the test's label is removed afterwards."""
    project = tmp_path / "project"
    shutil.copytree(built.images_dir / "base", project / "images" / "base")
    (project / "images" / "tiny").mkdir()
    (project / "images" / "tiny" / "recipe.toml").write_text(
        'description = "two stages, for the prune test"\nparent = "base"\n'
        'tool_version = ["cat", "/built"]\n')
    settings = Settings(project_root=project, bench_root=tmp_path / "bench")
    images.share_lock(built, settings.bench_root)
    token = secrets.token_hex(8)
    yield settings, token
    label = f"{TEST_LABEL}={token}"
    for container in engine.list_containers(label):
        engine.remove_container(container["Id"])
    for image in sorted(engine.list_images(label), key=lambda i: -int(i["Created"])):
        engine.remove_image(image["Id"], force=True)


def _build_tiny(engine: Engine, settings: Settings, token: str, version: int) -> str:
    (settings.images_dir / "tiny" / "Dockerfile").write_text(
        DOCKERFILE.format(label=TEST_LABEL, token=token, version=version))
    outcomes = {o.name: o for o in images.build(engine, settings, ["tiny"])}
    assert outcomes["base"].action == "up-to-date" and outcomes["tiny"].action == "built"
    return images.ImageLock.load(settings.images_lock).image_id("tiny")


def test_a_build_removes_its_stage_images(engine: Engine, tiny: tuple[Settings, str]) -> None:
    settings, token = tiny
    final = _build_tiny(engine, settings, token, 1)
    left = engine.list_images(f"{TEST_LABEL}={token}")
    assert [i["Id"] for i in left] == [final]
    assert images.ImageLock.load(settings.images_lock).images["tiny"]["tool_version"] == "1"


def test_prune_keeps_the_locked_image_and_the_one_a_container_uses(
        engine: Engine, tiny: tuple[Settings, str]) -> None:
    settings, token = tiny
    label = f"{TEST_LABEL}={token}"
    superseded = _build_tiny(engine, settings, token, 1)
    # An image's Created is in whole seconds and ties go by id: a second apart, so that
    # "oldest first" is the order the images were built in.
    time.sleep(1.1)
    in_use = _build_tiny(engine, settings, token, 2)
    engine.create_container({"image": in_use, "command": ["true"], "network_mode": "none",
                             "labels": lb.base_labels(**{TEST_LABEL: token})})
    locked = _build_tiny(engine, settings, token, 3)
    lock = images.ImageLock.load(settings.images_lock)
    assert lock.image_id("tiny") == locked

    planned = prune(engine, lock, dry_run=True, label=label)
    assert [(p.id, p.outcome) for p in planned] == [(superseded, "would remove"),
                                                   (in_use, "would remove")]
    assert {i["Id"] for i in engine.list_images(label)} == {superseded, in_use, locked}

    done = prune(engine, lock, label=label)
    assert [(p.id, p.outcome) for p in done] == [(superseded, "removed"), (in_use, "in use")]
    assert {i["Id"] for i in engine.list_images(label)} == {in_use, locked}
    assert engine.image_id(lock.image_id("base")) is not None


def test_prune_gives_the_tag_back_when_another_root_took_it(
        engine: Engine, built: Settings, tiny: tuple[Settings, str], tmp_path: Path) -> None:
    """Two bench roots build the same recipe (the same hash, so the same tag): the later
    build takes the tag. Pruning from the first root removes the other's image and points
    the tag back at its own, so `images verify` passes there."""
    settings, token = tiny
    mine = _build_tiny(engine, settings, token, 1)
    other = Settings(project_root=settings.project_root, bench_root=tmp_path / "other")
    images.share_lock(built, other.bench_root)
    theirs = _build_tiny(engine, other, token, 1)
    lock = images.ImageLock.load(settings.images_lock)
    tag = lock.images["tiny"]["tag"]
    assert theirs != mine and engine.image_id(tag) == theirs

    done = prune(engine, lock, label=f"{TEST_LABEL}={token}")
    assert [(p.id, p.outcome) for p in done] == [(theirs, "removed"), (mine, "tag restored")]
    assert engine.image_id(tag) == mine
    assert {c.name: c.status for c in images.verify(engine, settings)}["tiny"] == "ok"


def test_a_helper_build_leaves_no_image_behind(engine: Engine, tiny: tuple[Settings, str]
                                               ) -> None:
    """The base recipe's helper build runs its `image` stage (FROM the unlabelled root file
    system) and its `build` stage before the helper's: neither may stay on the engine."""
    settings, token = tiny
    (settings.images_dir / "tiny" / "Dockerfile").write_text(
        DOCKERFILE.format(label=TEST_LABEL, token=token, version=0))
    lock = images.ImageLock.load(settings.images_lock)
    helper, _digest = lock.helper()
    helper.unlink()
    before = {i["Id"] for i in engine.list_images()}
    outcomes = {o.name: o for o in images.build(engine, settings, ["base"])}
    assert outcomes["base"].action == "built" and outcomes["base"].reason.startswith("helper")
    assert {i["Id"] for i in engine.list_images()} - before == set()
    assert images.ImageLock.load(settings.images_lock).helper()[0].is_file()

