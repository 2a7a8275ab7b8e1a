"""Pruning sandbench's images (pure logic, a fake engine) and reading a build's stage
images from its progress stream."""

from __future__ import annotations

import io

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from orchestrator.errors import EngineError, InputError, SandbenchError
from orchestrator.images import ImageLock
from orchestrator.images.prune import candidates, data_root_free, kept_ids, parse_size, prune
from orchestrator.images.build_stream import BuildStream, engine_time as _engine_time, StageImages


def _image(image_id: str, name: str, created: int, *, tags: tuple[str, ...] = (),
           stage: bool = False) -> dict[str, Any]:
    labels = {"sandbench.managed": "true", "sandbench.image": name}
    if stage:
        labels["sandbench.stage"] = "build"
    return {"Id": image_id, "RepoTags": list(tags) or ["<none>:<none>"], "Labels": labels,
            "Created": created, "Size": 1000 * created}


def test_the_lock_keeps_its_images_their_parents_and_its_root_file_systems() -> None:
    lock = ImageLock.__new__(ImageLock)
    lock.images = {"base": {"image_id": "sha256:b", "parent_id": "sha256:root",
                            "build_args": {"ROOTFS": "sha256:root"}},
                   "rg": {"image_id": "sha256:r", "parent_id": "sha256:b",
                          "build_args": {"BASE": "sha256:b", "ARTIFACT_SHA256": "ab12"}}}
    assert kept_ids(lock) == {"sha256:b", "sha256:root", "sha256:r"}


def test_leftovers_and_superseded_builds_go_first_each_names_newest_last() -> None:
    listed = [_image("rg-new", "rg", 30, tags=("sandbench/rg:2",)),
              _image("rg-old", "rg", 10, tags=("sandbench/rg:1",)),
              _image("stage", "python", 40, stage=True),
              _image("py-only", "python", 20, tags=("sandbench/python:1",)),
              _image("locked", "rg", 50, tags=("sandbench/rg:3",)),
              _image("rootfs", "?", 5, tags=("sandbench/rootfs:abc",)),
              _image("rg-old", "rg", 10, tags=("sandbench/rg:1",))]  # listed twice
    order = candidates(listed, kept={"locked"})
    assert [c.id for c in order] == ["rg-old", "stage", "rootfs", "py-only", "rg-new"]
    assert [c.newest_of_its_name for c in order] == [False, False, True, True, True]
    assert order[2].image == "rootfs" and order[1].name == "<none>"


class FakeEngine:
    """Images that refuse removal while another image builds on them (as the engine does)."""

    def __init__(self, images: list[dict[str, Any]], children: dict[str, str],
                 in_use: set[str]) -> None:
        self.images = {i["Id"]: i for i in images}
        self.children = children  # child id -> parent id
        self.in_use = in_use
        self.removed: list[str] = []
        self.tags: dict[str, str] = {}  # tag -> image id

    def image_id(self, ref: str) -> str | None:
        if ref in self.images:
            return ref
        found = self.tags.get(ref)
        return found if found in self.images else None

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        self.tags[f"{repository}:{tag}"] = image_id

    def list_images(self, label: str | None = None, *,
                    repository: str | None = None) -> list[dict[str, Any]]:
        if repository is not None:
            return [i for i in self.images.values() if repository in str(i["RepoTags"])]
        return [i for i in self.images.values() if "rootfs" not in str(i["RepoTags"])]

    def remove_image(self, image_id: str, force: bool = False) -> bool:
        if image_id in self.in_use or image_id in self.children.values():
            raise EngineError(f"engine refused: remove image {image_id}", status=409)
        self.images.pop(image_id)
        self.children.pop(image_id, None)
        self.removed.append(image_id)
        return True


def _empty_lock() -> ImageLock:
    lock = ImageLock.__new__(ImageLock)
    lock.images = {}
    return lock


def test_a_parent_goes_after_its_children_and_an_image_in_use_stays() -> None:
    engine = FakeEngine([_image("py", "python", 1), _image("rg", "rg", 2),
                         _image("busy", "ctags", 3)], children={"rg": "py"}, in_use={"busy"})
    done = prune(engine, _empty_lock())  # type: ignore[arg-type]
    assert engine.removed == ["rg", "py"]
    assert [(p.id, p.outcome) for p in done] == [("rg", "removed"), ("py", "removed"),
                                                 ("busy", "in use")]


def test_until_free_stops_once_enough_is_free_and_a_dry_run_removes_nothing() -> None:
    engine = FakeEngine([_image("a", "rg", 1), _image("b", "rg", 2), _image("c", "rg", 3)],
                        children={}, in_use=set())
    freed = iter([0, 5, 10])
    done = prune(engine, _empty_lock(), until_free=10,  # type: ignore[arg-type]
                           free_bytes=lambda: next(freed))
    assert engine.removed == ["a", "b"] and [p.outcome for p in done] == ["removed"] * 2
    listed = prune(engine, _empty_lock(), dry_run=True)  # type: ignore[arg-type]
    assert [(p.id, p.outcome) for p in listed] == [("c", "would remove")]
    assert engine.removed == ["a", "b"]


def test_an_engine_error_other_than_a_conflict_is_raised() -> None:
    engine = FakeEngine([_image("a", "rg", 1)], children={}, in_use=set())

    def refuse(image_id: str, force: bool = False) -> bool:
        raise EngineError("engine failed: remove image", status=500)
    engine.remove_image = refuse  # type: ignore[method-assign]
    with pytest.raises(EngineError, match="engine failed"):
        prune(engine, _empty_lock())  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "size"), [("20G", 20 * 10 ** 9), ("500M", 500 * 10 ** 6),
                                             ("1.5GB", int(1.5 * 10 ** 9)), ("4096", 4096),
                                             ("2gb", 2 * 10 ** 9), ("7B", 7)])
def test_sizes_read_as_df_prints_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "G", "-1G", "twenty", "20X", "20GiB"])
def test_a_bad_size_names_the_option_and_what_it_expects(text: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_size(text)
    assert raised.value.data["key"] == "--until-free" and "20G" in raised.value.what


def test_a_builds_stage_images_are_the_last_id_before_each_later_from() -> None:
    stream = ["Step 1/9 : ARG BASE\n", "Step 2/9 : FROM sha256:aa AS build\n",
              " ---> eb51ccb06408\n", "Step 3/9 : LABEL sandbench.stage=build\n",
              " ---> Running in 0123456789ab\n", " ---> 962f0c12b7c2\n",
              "Step 4/9 : RUN pip install x\n", "Collecting x\n ---> 5ddefdaa2e58\n",
              " ---> 58f10b53", "53ef\n",  # a line split across chunks
              "Step 8/9 : FROM sha256:aa\n", " ---> eb51ccb06408\n",
              "Step 9/9 : COPY --from=build /opt/tool /opt/tool\n", " ---> a9e1065ff2dd\n",
              "Successfully built a9e1065ff2dd\n"]
    stages = StageImages()
    fed = BuildStream(io.StringIO(), stages)
    for chunk in stream:
        fed.feed(chunk)
    # The final image is the build's own; the FROM's base is never a stage's image.
    assert stages.left() == ["58f10b5353ef"]


def test_a_stage_with_nothing_but_its_from_leaves_no_image_of_its_own() -> None:
    stages = StageImages()
    BuildStream(io.StringIO(), stages).feed(
        "Step 1/3 : FROM sha256:aa AS image\n ---> eb51ccb06408\n"
        "Step 2/3 : FROM sha256:aa AS build\n ---> eb51ccb06408\n"
        "Step 3/3 : RUN true\n ---> 1234567890ab\n")
    assert stages.left() == []


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-12-04T19:04:09.384512641Z", "2026-12-04T19:04:09.384512+00:00"),
    ("2026-12-04T19:04:09Z", "2026-12-04T19:04:09+00:00"),
    ("2026-12-04T20:04:09.5+01:00", "2026-12-04T20:04:09.500000+01:00"),
    ("yesterday", None), ("", None)])
def test_the_engines_times_read_to_the_microsecond(text: str, expected: str | None) -> None:
    read = _engine_time(text)
    assert (read.isoformat() if read else None) == expected


def test_free_space_is_read_where_the_engine_keeps_its_data(tmp_path: Path) -> None:
    here = SimpleNamespace(info=lambda: {"DockerRootDir": str(tmp_path)})
    assert data_root_free(here)() > 0  # type: ignore[arg-type]
    elsewhere = SimpleNamespace(info=lambda: {"DockerRootDir": str(tmp_path / "remote")})
    with pytest.raises(SandbenchError, match="not a directory on this host"):
        data_root_free(elsewhere)  # type: ignore[arg-type]


def test_a_lock_tag_left_naming_nothing_points_at_the_locks_image_again() -> None:
    """Another bench root built the same recipe (same tag) and prune removed its image."""
    engine = FakeEngine([_image("mine", "rg", 1), _image("theirs", "rg", 2),
                         _image("other", "ctags", 3)], children={}, in_use={"other"})
    engine.tags = {"sandbench/rg:1": "theirs", "sandbench/ctags:1": "other"}
    lock = _empty_lock()
    lock.images = {"rg": {"image_id": "mine", "tag": "sandbench/rg:1"},
                   "ctags": {"image_id": "gone", "tag": "sandbench/ctags:1"}}
    done = prune(engine, lock)  # type: ignore[arg-type]
    assert [(p.id, p.name, p.outcome) for p in done] == [
        ("theirs", "<none>", "removed"), ("other", "<none>", "in use"),
        ("mine", "sandbench/rg:1", "tag restored")]
    # A tag naming an image still present is its owner's; a lock image that is gone is not
    # tagged.
    assert engine.tags == {"sandbench/rg:1": "mine", "sandbench/ctags:1": "other"}
