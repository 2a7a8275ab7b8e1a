"""Building images: the root file system (`rootfs`: bootstrapped by mmdebstrap, or a
digest-pinned base), each recipe FROM its parent's locked id, the timing helper copied out
of its build stage, and the dpkg/pip manifests and tool version recorded in the lock. An
image whose recipe hash is unchanged and which is present is never rebuilt."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator import labels as lb, log
from orchestrator.errors import EngineError, InputError
from orchestrator.fsutil import sha256_bytes, sha256_file
from orchestrator.images import helper as host_helper
from orchestrator.images.build_faults import build_failure, retried
from orchestrator.images.build_stream import BuildStream, StageImages, remove_stage_images
from orchestrator.images.build_inputs import build_ca_bundle, proxy_build_args
from orchestrator.images.lock import ImageLock
from orchestrator.images.manifests import read_manifests
from orchestrator.images.recipes import Recipe, load_recipes, recipe_hash, select, tag_for
from orchestrator.images.rootfs import carried_over, rootfs
from orchestrator.isolation import folds
from orchestrator.isolation.setting import BUILD_HELPER
from orchestrator.settings import Settings

if TYPE_CHECKING:
    from orchestrator.engine import Engine

BUILD_DIR = ".sandbench-build"
STEP_SHOWN = 100  # characters of a step's instruction a progress line shows
ARTIFACT_DIR = "artifact"

logger = log.get(__name__)


def _build_context(recipe: Recipe, into: Path, artifact: Path | None) -> Path:
    ctx = into / "context"
    shutil.copytree(recipe.path, ctx, symlinks=True)
    if artifact is not None:
        (ctx / ARTIFACT_DIR).mkdir(exist_ok=True)
        shutil.copy2(artifact, ctx / ARTIFACT_DIR / (recipe.artifact or artifact.name))
    build = ctx / BUILD_DIR
    build.mkdir()
    ca = build_ca_bundle()
    (build / "ca.pem").write_bytes(ca.read_bytes() if ca else b"")
    return ctx


def _docker_build(engine: Engine, settings: Settings, recipe: Recipe, tag: str | None,
                  build_args: dict[str, str], labels: dict[str, str],
                  artifact: Path | None, target: str | None = None) -> str:
    """One build, retried after a fault from outside (build_faults.py); the image id. An
    attempt is safe to repeat: its context is made afresh, its log rewritten, what its
    stages left removed, and a tag it set is moved by the next."""
    stage = f"-{target}" if target and target != recipe.target else ""
    return retried(f"build image {recipe.name}{stage}", lambda: _build_once(
        engine, settings, recipe, tag, build_args, labels, artifact, target, stage))


def _build_once(engine: Engine, settings: Settings, recipe: Recipe, tag: str | None,
                build_args: dict[str, str], labels: dict[str, str], artifact: Path | None,
                target: str | None, stage: str) -> str:
    """One attempt with its log under the bench root, each step logged as it starts. The
    untagged images its earlier stages left are removed after it, failed or not (a failed
    one's last committed step too): every build runs without the cache, so they are only disk
    spent, and a retried build leaves none per attempt."""
    log_path = settings.bench_root / "image-builds" / f"{recipe.name}{stage}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    scratch = settings.bench_root / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    image_id = None
    stages = StageImages()
    started, began = datetime.now(UTC), time.monotonic()

    def on_step(step: str, instruction: str) -> None:
        logger.info("build step", image=f"{recipe.name}{stage}", step=step,
                    instruction=instruction[:STEP_SHOWN], elapsed_s=round(
                        time.monotonic() - began, 1))
    try:
        with tempfile.TemporaryDirectory(dir=scratch, prefix=f"ctx-{recipe.name}-") as tmp, \
                open(log_path, "w", encoding="utf-8", errors="backslashreplace") as out:
            ctx = _build_context(recipe, Path(tmp), artifact)
            stream = BuildStream(out, stages, on_step=on_step)
            for chunk in engine.build(ctx, tag=tag,
                                      build_args={**build_args, **proxy_build_args()},
                                      labels=labels, target=target or recipe.target):
                stream.feed(chunk.get("stream") or chunk.get("status") or "")
                if "error" in chunk:
                    why = stream.failed(chunk["error"])
                    raise build_failure(f"image {recipe.name!r} failed to build", why,
                                        f"see the build log {log_path}", stream.faults.mark)
                if aux := chunk.get("aux"):
                    image_id = aux.get("ID", image_id)
            stream.end()
        if image_id is None and tag is not None:
            image_id = engine.inspect_image(tag)["Id"]
        if image_id is None:
            raise EngineError(f"the build of {recipe.name!r} named no image",
                              fix=f"see the build log {log_path}")
        return image_id
    finally:
        remove_stage_images(engine, stages.left(failed=image_id is None), keep=image_id,
                            since=started)


def _build_helper(engine: Engine, settings: Settings, recipe: Recipe,
                  build_args: dict[str, str]) -> dict[str, Any]:
    """Build the recipe's helper stage, copy the one file out of it to the bench root
    (content-addressed, read-only) and remove what the build left, by id. Returns the
    lock's `helper` member: path relative to the bench root, and sha256."""
    assert recipe.helper is not None
    labels = lb.base_labels(**{lb.LABEL_TEMPORARY: "true", lb.LABEL_IMAGE: recipe.name})
    image_id = _docker_build(engine, settings, recipe, None, build_args, labels, None,
                             target=recipe.helper.stage)
    container_id = None
    try:
        # Created, never started: the engine copies the file out of a stopped container.
        container_id = engine.create_container(
            {"image": image_id, "command": [recipe.helper.path], "entrypoint": [],
             "labels": labels, **folds.own_create(BUILD_HELPER)},
            what="create helper container")
        archive = engine.copy_out(container_id, recipe.helper.path)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            member = tar.next()
            fh = tar.extractfile(member) if member is not None and member.isfile() else None
            if fh is None:
                raise EngineError(f"{recipe.helper.path} in the {recipe.helper.stage!r} stage "
                                  f"of {recipe.name!r} is not a regular file")
            data = fh.read()
    finally:
        if container_id is not None:
            engine.remove_container(container_id)
        engine.remove_image(image_id, force=True)
    digest = sha256_bytes(data)
    path = settings.bench_root / host_helper.HELPER_DIR / f"sandbench-exec-{digest[:12]}"
    host_helper.install(path, data)
    return {"path": path.relative_to(settings.bench_root).as_posix(), "sha256": digest,
            "size_bytes": len(data)}


@dataclass(frozen=True)
class BuildOutcome:
    name: str
    action: str  # built | up-to-date | would-build | unavailable
    reason: str
    tag: str | None = None
    image_id: str | None = None
    seconds: float | None = None


def build(engine: Engine | None, settings: Settings, names: Iterable[str] = (),
          dry_run: bool = False, artifacts: dict[str, Path] | None = None, jobs: int = 1
          ) -> list[BuildOutcome]:
    """Build the named recipes (all when none are named) and their ancestors, skipping every
    image whose recipe hash is unchanged and whose image is present. A recipe that needs a
    user-supplied artifact is `unavailable` until one is given. Up to `jobs` images build at
    once, each only after its parent: what an image contains does not depend on it, but its
    `build_seconds` are wall time shared with the others (the lock keeps `build_jobs`)."""
    artifacts = artifacts or {}
    recipes = load_recipes(settings.images_dir)
    for name in artifacts:
        if name not in {r.artifact for r in recipes.values()}:
            known = sorted(r.artifact for r in recipes.values() if r.artifact)
            raise InputError.bad_value("--artifact", "--artifact",
                                       f"the artifact of a recipe ({known})",
                                       name)
    state = _Builds(engine, settings, ImageLock.load(settings.images_lock), artifacts, dry_run,
                    max(jobs, 1))
    chosen = select(recipes, names)
    if state.jobs == 1 or len(chosen) == 1:
        return [state.one(recipe) for recipe in chosen]
    return _build_at_once(state, chosen)


def _build_at_once(state: _Builds, chosen: list[Recipe]) -> list[BuildOutcome]:
    """Every recipe of `chosen` submitted once its parent's build ended, those with the most
    descendants first (the longest chain starts soonest); no worker waits for a parent. A
    recipe's timing helper is built beside its children (they build FROM its image, not from
    the helper). The first failure (in build order) is raised once the builds already running
    have ended; nothing waiting for a parent starts after it."""
    names = {r.name for r in chosen}
    below = {r.name: 0 for r in chosen}
    for recipe in chosen:
        parent = recipe.parent
        while parent in names:
            below[parent] += 1
            parent = next(r.parent for r in chosen if r.name == parent)
    done: dict[str, BuildOutcome] = {}
    waiting = list(chosen)
    running: dict[Future[Any], tuple[str, str]] = {}  # -> (image, "image" | "helper")
    failures: dict[str, BaseException] = {}
    state.defer_helpers = True
    with ThreadPoolExecutor(max_workers=state.jobs, thread_name_prefix="image-build") as pool:
        while waiting or running:
            ready = [r for r in waiting if r.parent not in names or r.parent in done]
            if not failures:
                for recipe in sorted(ready, key=lambda r: -below[r.name]):
                    if len(running) == state.jobs:
                        break
                    waiting.remove(recipe)
                    running[pool.submit(state.one, recipe)] = (recipe.name, "image")
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                name, part = running.pop(future)
                if (error := future.exception()) is not None:
                    failures[name] = error
                elif part == "helper":
                    done[name] = dataclasses.replace(
                        done[name], seconds=round((done[name].seconds or 0) + future.result(), 3))
                else:
                    done[name] = future.result()
                    if name in state.deferred:
                        running[pool.submit(state.finish_helper, name)] = (name, "helper")
    if failures:
        raise next(failures[r.name] for r in chosen if r.name in failures)
    return [done[r.name] for r in chosen]


class _Builds:
    """The state one `build` call shares among its workers: the lock (changed and saved under
    one mutex) and the images rebuilt so far."""

    def __init__(self, engine: Engine | None, settings: Settings, lock: ImageLock,
                 artifacts: dict[str, Path], dry_run: bool, jobs: int) -> None:
        self.engine, self.settings, self.lock = engine, settings, lock
        self.artifacts, self.dry_run, self.jobs = artifacts, dry_run, jobs
        self.rebuilt: set[str] = set()
        self.mutex = threading.Lock()
        # With `defer_helpers`, a recipe's timing helper is left to `finish_helper`, so that
        # its children need not wait for it; `deferred` holds what that build needs.
        self.defer_helpers = False
        self.deferred: dict[str, tuple[Recipe, dict[str, str]]] = {}

    def finish_helper(self, name: str) -> float:
        """The deferred helper of image `name` built and added to its lock entry, its seconds
        added to the entry's build_seconds; returns those seconds. Until then the entry has no
        helper, so a build stopped in between builds the helper alone next time."""
        assert self.engine is not None
        recipe, build_args = self.deferred.pop(name)
        started = time.monotonic()
        helper = _build_helper(self.engine, self.settings, recipe, build_args)
        seconds = time.monotonic() - started
        with self.mutex:
            entry = self.lock.images[name]
            self.lock.images[name] = {**entry, "helper": helper, "build_seconds":
                                      round(entry["build_seconds"] + seconds, 3)}
            self.lock.save()
        return seconds

    def save(self, name: str, entry: dict[str, Any]) -> None:
        with self.mutex:
            self.lock.images[name] = entry
            self.lock.save()

    def one(self, recipe: Recipe) -> BuildOutcome:
        engine, settings, lock, dry_run = self.engine, self.settings, self.lock, self.dry_run
        with self.mutex:
            entry = lock.images.get(recipe.name)
            parent_changed = recipe.parent in self.rebuilt
        base_info: dict[str, Any] = {}
        if recipe.bootstrap is not None:
            # The locked image's own root file system first: the decision is dry-run's, and
            # an image kept (an import from another host's export included) needs none here.
            parent_id = _kept_rootfs(entry)
            build_args = {"ROOTFS": parent_id}
        else:
            with self.mutex:
                parent_entry = lock.images.get(recipe.parent or "", {})
            parent_id = parent_entry.get("image_id", "")
            # FROM the parent's image id, never its tag: another bench root on the same
            # engine may have pointed the tag at its own build of the same recipe.
            build_args = {"BASE": parent_entry.get("image_id", "")}
        artifact = self.artifacts.get(recipe.artifact or "")
        if recipe.artifact:
            if artifact is not None:
                build_args["ARTIFACT_SHA256"] = sha256_file(artifact)
            elif entry is not None:
                build_args["ARTIFACT_SHA256"] = entry.get("build_args", {}).get(
                    "ARTIFACT_SHA256", "")
            else:
                return BuildOutcome(recipe.name, "unavailable",
                                    f"needs --artifact {recipe.artifact}=PATH")
        rhash = recipe_hash(recipe, build_args, parent_id)
        reason = _why_build(engine, entry, rhash, parent_changed)
        if reason is not None and recipe.bootstrap is not None and not dry_run and engine:
            # It builds: FROM the root file system made (or cached) here now.
            parent_id, base_info = rootfs(engine, settings, recipe)
            build_args["ROOTFS"] = parent_id
            rhash = recipe_hash(recipe, build_args, parent_id)
            reason = _why_build(engine, entry, rhash, parent_changed)
        if reason is None:
            assert entry is not None  # an image the lock lacks always has a reason to build
            if recipe.helper is not None and (
                    missing := host_helper.entry_problem(settings, entry)):
                if dry_run or engine is None:
                    return BuildOutcome(recipe.name, "would-build", missing)
                # The image is what the recipe makes; only the host's copy of its helper is
                # not.
                host_copy = _build_helper(engine, settings, recipe, build_args)
                self.save(recipe.name, {**entry, "helper": host_copy})
                return BuildOutcome(recipe.name, "built", f"helper only: {missing}",
                                    entry["tag"], entry["image_id"])
            note = "recipe hash unchanged and image present"
            if engine is not None and _retag(engine, entry):
                note += "; tag re-pointed at the locked image"
            logger.info("cached", image=recipe.name, why=note)
            return BuildOutcome(recipe.name, "up-to-date", note, entry["tag"],
                                entry["image_id"])
        if dry_run or engine is None:
            with self.mutex:
                self.rebuilt.add(recipe.name)
            return BuildOutcome(recipe.name, "would-build", reason)
        tag = tag_for(recipe.name, rhash)
        labels = lb.base_labels(**{lb.LABEL_IMAGE: recipe.name, lb.LABEL_RECIPE: rhash})
        logger.info("build", image=recipe.name, reason=reason, tag=tag)
        started = time.monotonic()
        image_id = _docker_build(engine, settings, recipe, tag, build_args, labels, artifact)
        defer = recipe.helper is not None and self.defer_helpers
        helper = (_build_helper(engine, settings, recipe, build_args)
                  if recipe.helper is not None and not defer else None)
        seconds = round(time.monotonic() - started + carried_over(base_info, entry), 3)
        size = engine.inspect_image(image_id)["Size"]
        self.save(recipe.name, {
            "recipe_hash": rhash, "image_id": image_id, "tag": tag, "parent": recipe.parent,
            "parent_id": parent_id, "build_args": build_args, "build_seconds": seconds,
            "build_jobs": self.jobs,
            "size_bytes": size, "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **({"base": base_info} if base_info else {}),
            **({"helper": helper} if helper else {}),
            **({"artifact": {"name": recipe.artifact, "path": str(artifact),
                             "sha256": build_args["ARTIFACT_SHA256"]}} if artifact else {}),
            **read_manifests(engine, settings, recipe, image_id)})
        logger.info("built", image=recipe.name, seconds=seconds)
        with self.mutex:
            self.rebuilt.add(recipe.name)
            if defer:
                self.deferred[recipe.name] = (recipe, build_args)
        return BuildOutcome(recipe.name, "built", reason, tag, image_id, seconds)


def _kept_rootfs(entry: dict[str, Any] | None) -> str:
    """The root file system the locked base image was built FROM, while it may be kept: a
    registry base only while SANDBENCH_BASE_IMAGE still names it, a bootstrapped one while
    none is named (whatever this host's mirror: it says where a new tree would come from, not
    what the kept one is); '' when there is none to keep."""
    base = (entry or {}).get("base", {})
    configured = os.environ.get("SANDBENCH_BASE_IMAGE")
    if (configured or None) != (base.get("reference") if base.get("source") == "registry"
                                else None):
        return ""
    return str((entry or {}).get("parent_id", ""))


def _retag(engine: Engine, entry: dict[str, Any]) -> bool:
    """Point the lock's tag back at the lock's image when another build moved it."""
    if engine.image_id(entry["tag"]) == entry["image_id"]:
        return False
    repository, tag = entry["tag"].rsplit(":", 1)
    engine.tag(entry["image_id"], repository, tag)
    return True


def _why_build(engine: Engine | None, entry: dict[str, Any] | None, rhash: str,
               parent_changed: bool) -> str | None:
    if entry is None:
        return "not in the lock"
    if parent_changed:
        return "parent image rebuilt"
    if entry["recipe_hash"] != rhash:
        return "recipe changed"
    if engine is not None and engine.image_id(entry["image_id"]) is None:
        return "image missing from the engine"
    return None
