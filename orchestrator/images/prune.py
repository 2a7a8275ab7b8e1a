"""Remove sandbench's images that this bench root's lock does not name.

Every build runs without the engine's cache and every bench root builds its own set (about
9 GB), so superseded builds and other bench roots' images pile up on a long-lived engine
until a build fails for want of space. `prune` removes them by id, oldest first, keeping
for the end the newest build of each image name (another bench root's working set);
`until_free` stops as soon as the engine's data root has that much free. It never touches
an image without sandbench's label (or the `sandbench/rootfs` trees it imported), an image
the lock names or builds from, or an image a container still uses (the engine refuses).
Afterwards every tag of the lock names an image again (`_restore_tags`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import labels as lb
from orchestrator.engine import Engine
from orchestrator.errors import EngineError, InputError, SandbenchError
from orchestrator.images.lock import ImageLock
from orchestrator.images.recipes import REPOSITORY

ROOTFS_REPOSITORY = f"{REPOSITORY}/rootfs"
CONFLICT = 409  # the engine's answer for an image a container uses or another builds on


@dataclass(frozen=True)
class Candidate:
    id: str
    name: str  # its tags, or <none>
    image: str  # the recipe it came from (sandbench.image), or rootfs
    created: int  # seconds since the epoch, as the engine reports them
    size_bytes: int
    newest_of_its_name: bool


@dataclass(frozen=True)
class Pruned:
    id: str
    name: str
    size_bytes: int
    outcome: str  # removed | in use | would remove | tag restored


def kept_ids(lock: ImageLock) -> set[str]:
    """Every image id the lock names or builds from: its images, their parents and the
    root file systems the base recipes came from."""
    kept: set[str] = set()
    for entry in lock.images.values():
        kept.add(entry.get("image_id", ""))
        kept.add(entry.get("parent_id", ""))
        kept.update(v for v in entry.get("build_args", {}).values()
                    if isinstance(v, str) and v.startswith("sha256:"))
    kept.discard("")
    return kept


def candidates(images: Iterable[dict[str, Any]], kept: set[str]) -> list[Candidate]:
    """The images that may go, in the order they go: oldest first, the newest build of each
    image name after every other. `images` are the engine's listings (Id, RepoTags, Labels,
    Created, Size); one listed twice counts once."""
    seen: dict[str, dict[str, Any]] = {}
    for image in images:
        if image["Id"] not in kept:
            seen.setdefault(image["Id"], image)
    newest: dict[str, tuple[int, str]] = {}
    for image in seen.values():
        if not _is_leftover(image):
            key = _image_name(image)
            newest[key] = max(newest.get(key, (-1, "")),
                              (int(image.get("Created", 0)), image["Id"]))
    newest_ids = {image_id for _, image_id in newest.values()}
    found = [Candidate(image["Id"], ",".join(_tags(image)) or "<none>", _image_name(image),
                       int(image.get("Created", 0)), int(image.get("Size", 0)),
                       image["Id"] in newest_ids)
             for image in seen.values()]
    return sorted(found, key=lambda c: (c.newest_of_its_name, c.created, c.id))


def listed(engine: Engine, label: str = f"{lb.LABEL_MANAGED}=true") -> list[dict[str, Any]]:
    """sandbench's images on the engine: those carrying `label`, and the imported root file
    systems (a `docker import` carries no labels; the repository names them)."""
    ours = engine.list_images(label)
    if label == f"{lb.LABEL_MANAGED}=true":
        ours += engine.list_images(repository=ROOTFS_REPOSITORY)
    return ours


def prune(engine: Engine, lock: ImageLock, *, until_free: int | None = None,
          free_bytes: Callable[[], int] | None = None, dry_run: bool = False,
          label: str = f"{lb.LABEL_MANAGED}=true") -> list[Pruned]:
    """Remove, in `candidates` order, what the lock does not keep; with `until_free`, stop as
    soon as `free_bytes()` reaches it. A dry run lists what would go (all of it: what a
    removal frees is known only after it)."""
    if until_free is not None and free_bytes is None:
        raise ValueError("until_free needs free_bytes")
    order = candidates(listed(engine, label), kept_ids(lock))
    if dry_run:
        return [Pruned(c.id, c.name, c.size_bytes, "would remove") for c in order]
    done: list[Pruned] = []
    try:
        _remove(engine, order, done, until_free, free_bytes)
    finally:
        done += _restore_tags(engine, lock)
    return done


def _remove(engine: Engine, order: list[Candidate], done: list[Pruned],
            until_free: int | None, free_bytes: Callable[[], int] | None) -> None:
    # An image other images build on is refused until they are gone: such refusals are
    # tried again after each pass that removed something.
    while order:
        refused: list[Candidate] = []
        for item in order:
            if until_free is not None and free_bytes is not None and free_bytes() >= until_free:
                return
            try:
                if engine.remove_image(item.id):
                    done.append(Pruned(item.id, item.name, item.size_bytes, "removed"))
            except EngineError as err:
                if err.data.get("status") != CONFLICT:
                    raise
                refused.append(item)
        if len(refused) == len(order):
            done += [Pruned(c.id, c.name, c.size_bytes, "in use") for c in refused]
            return
        order = refused


def _restore_tags(engine: Engine, lock: ImageLock) -> list[Pruned]:
    """Tags are per recipe hash, so another bench root's build of the same recipe moves the
    tag to its image; when prune removed that image, the tag is gone: point it back at this
    lock's image. A tag that names another image still present is left to its owner."""
    restored = []
    for entry in lock.images.values():
        tag, image_id = entry.get("tag"), entry.get("image_id")
        if not tag or not image_id or engine.image_id(tag) is not None:
            continue
        if engine.image_id(image_id) is not None:
            repository, name = tag.rsplit(":", 1)
            engine.tag(image_id, repository, name)
            restored.append(Pruned(image_id, tag, 0, "tag restored"))
    return restored


def data_root_free(engine: Engine) -> Callable[[], int]:
    """A reader of the free bytes of the file system holding the engine's data root; only an
    engine on this host has one here to measure."""
    root = Path(engine.info().get("DockerRootDir") or "")
    if not root.is_absolute() or not root.is_dir():
        raise SandbenchError(f"the engine's data root {str(root) or '(none reported)'!r} is "
                             "not a directory on this host",
                             why="--until-free measures the free space of that file system",
                             fix="run prune on the engine's own host, or without --until-free")

    def free() -> int:
        stats = os.statvfs(root)
        return stats.f_bavail * stats.f_frsize
    return free


def parse_size(text: str) -> int:
    """`20G`, `500M`, `1.5GB` or plain bytes as bytes (powers of 1000, as docker prints
    sizes and as sandbench shows them)."""
    units = {"": 1, "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3, "T": 1000 ** 4}
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(?:([KMGT])B?|B)?", text.strip().upper())
    if match is None:
        raise InputError.bad_value("sandbench images prune", "--until-free",
                                   "a size such as 20G, 500M or 1073741824", text)
    value, unit = float(match[1]), match[2] or ""
    return int(value * units[unit])


def _tags(image: dict[str, Any]) -> list[str]:
    return [t for t in image.get("RepoTags") or [] if t != "<none>:<none>"]


def _image_name(image: dict[str, Any]) -> str:
    if any(t.startswith(f"{ROOTFS_REPOSITORY}:") for t in _tags(image)):
        return "rootfs"
    return (image.get("Labels") or {}).get(lb.LABEL_IMAGE, "?")


def _is_leftover(image: dict[str, Any]) -> bool:
    """A build stage or a temporary image: never anyone's working set."""
    labels = image.get("Labels") or {}
    return lb.LABEL_STAGE in labels or labels.get(lb.LABEL_TEMPORARY) == "true"
