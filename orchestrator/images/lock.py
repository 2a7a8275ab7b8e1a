"""The host's image lock (bench/images.lock): which image id each recipe built here, from
which recipe hash, with its size, build time, tool version and manifests; and the lock
checked against the engine (`verify`, `listing`). Host state: image ids are per host."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import SandbenchError
from orchestrator.fsutil import atomic_write_bytes, atomic_write_json, read_json
from orchestrator.images import helper as host_helper
from orchestrator.images.recipes import load_recipes, recipe_hash
from orchestrator.settings import Settings
from orchestrator.sandbox.shared_checks import check_schema

if TYPE_CHECKING:
    from orchestrator.engine import Engine

LOCK_VERSION = 1
# A root file system made here, by the tool each lock version used.
BOOTSTRAPPED = ("mmdebstrap", "debootstrap")


@dataclass
class ImageLock:
    path: Path
    images: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> ImageLock:
        """The lock, checked whole against orchestrator/schemas/images-lock.schema.json."""
        if not path.exists():
            return cls(path)
        data = check_schema(path, read_json(path, fix="restore it, or delete it and rebuild "
                                                "the images"), "images-lock.schema.json")
        return cls(path, data["images"])

    def save(self) -> None:
        atomic_write_json(self.path, {"version": LOCK_VERSION, "images": self.images})

    def helper(self) -> tuple[Path, str]:
        """The host's timing helper (file under the bench root, sha256) from the lock entry
        of the image that built it; every sandbox mounts it."""
        entries = [e["helper"] for e in self.images.values() if isinstance(e.get("helper"), dict)]
        if len(entries) != 1:
            raise SandbenchError(f"the image lock {self.path} records {len(entries)} timing "
                                 "helpers, expected exactly 1",
                                 why="every sandbox mounts the helper the lock records",
                                 fix="run: sandbench images build base")
        entry = entries[0]
        return self.path.parent / entry["path"], entry["sha256"]

    def image_id(self, name: str) -> str:
        try:
            return self.images[name]["image_id"]
        except KeyError:
            raise SandbenchError(f"image {name!r} is not built on this host",
                                 fix=f"run: sandbench images build {name}") from None


def share_lock(source: Settings, bench_root: Path) -> None:
    """Give another bench root on this host the same images: a copy of the lock and of the
    timing helper file it records (both host state)."""
    bench_root.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(bench_root / source.images_lock.name, source.images_lock.read_bytes())
    for entry in ImageLock.load(source.images_lock).images.values():
        if isinstance(helper := entry.get("helper"), dict):
            host_helper.install(bench_root / helper["path"],
                            (source.bench_root / helper["path"]).read_bytes())


@dataclass(frozen=True)
class ImageCheck:
    name: str
    status: str  # ok | unavailable | missing | stale | mismatched
    detail: str


def verify(engine: Engine, settings: Settings) -> list[ImageCheck]:
    """Local images against the lock: never built, missing, stale recipe, or a tag that now
    points at another image than the one locked."""
    recipes = load_recipes(settings.images_dir)
    lock = ImageLock.load(settings.images_lock)
    checks = []
    for recipe in recipes.values():
        entry = lock.images.get(recipe.name)
        if entry is None and recipe.artifact:
            checks.append(ImageCheck(recipe.name, "unavailable",
                                     f"needs --artifact {recipe.artifact}=PATH"))
            continue
        if entry is None:
            checks.append(ImageCheck(recipe.name, "missing", "not in the lock: never built"))
            continue
        build_args = dict(entry.get("build_args", {}))
        if recipe.parent is not None:
            build_args = {"BASE": lock.images.get(recipe.parent, {}).get("image_id", ""),
                          **({"ARTIFACT_SHA256": build_args.get("ARTIFACT_SHA256", "")}
                             if recipe.artifact else {})}
            parent_id = lock.images.get(recipe.parent, {}).get("image_id", "")
        else:
            parent_id = entry.get("parent_id", "")
        rhash = recipe_hash(recipe, build_args, parent_id)
        if engine.image_id(entry["image_id"]) is None:
            checks.append(ImageCheck(recipe.name, "missing",
                                     f"locked image {entry['image_id'][:19]} is not present"))
        elif rhash != entry["recipe_hash"]:
            checks.append(ImageCheck(recipe.name, "stale", "recipe or parent changed since "
                                     f"the build (hash {entry['recipe_hash'][:12]} -> "
                                     f"{rhash[:12]})"))
        else:
            tagged = engine.image_id(entry["tag"])
            if tagged != entry["image_id"]:
                checks.append(ImageCheck(recipe.name, "mismatched",
                                         f"tag {entry['tag']} is {tagged}, lock says "
                                         f"{entry['image_id']}"))
            else:
                checks.append(ImageCheck(recipe.name, "ok", entry["image_id"][:19]))
    for recipe in recipes.values():
        if recipe.helper is not None and (entry := lock.images.get(recipe.name)) is not None:
            problem = host_helper.entry_problem(settings, entry)
            status = "ok" if problem is None else (
                "mismatched" if "sha256" in problem else "missing")
            checks.append(ImageCheck(f"{recipe.name} helper", status, problem or
                                     f"sha256 {entry['helper']['sha256'][:12]}"))
    return checks


def listing(engine: Engine | None, settings: Settings) -> list[dict[str, Any]]:
    recipes = load_recipes(settings.images_dir)
    lock = ImageLock.load(settings.images_lock)
    rows = []
    for name, recipe in recipes.items():
        entry = lock.images.get(name, {})
        present = (bool(entry) and engine is not None
                   and engine.image_id(entry["image_id"]) is not None)
        rows.append({"name": name, "parent": recipe.parent or "(bootstrap)",
                     "tag": entry.get("tag", ""), "image_id": entry.get("image_id", ""),
                     "present": present, "size_bytes": entry.get("size_bytes"),
                     "build_seconds": entry.get("build_seconds"),
                     "bootstrapped": entry.get("base", {}).get("source") in BOOTSTRAPPED,
                     "bootstrap_seconds": entry.get("base", {}).get("bootstrap_seconds"),
                     "tool_version": entry.get("tool_version", ""),
                     "description": recipe.description})
    return rows
