"""What an engine must have and pass before an arm runs on it: the arm's locked image (moved
there with `images export`/`import` when it is missing), the run's place there opened by its
placement, and the guards, verified there by a pre-flight sandbox."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from orchestrator import log, placement
from orchestrator.sandbox import engine_limits
from orchestrator.isolation.policy import GuardResult
from orchestrator.errors import EngineError, GuardViolation, InputError, SandbenchError
from orchestrator.images import ImageLock, transfer
from orchestrator.run.options import RunContext
from orchestrator.run.pool import Member, learn_ids, refuse
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import HelperFile, default_user, make
from orchestrator.settings import Settings

logger = log.get(__name__)


def bring_images(member: Member, sources: Iterable[Member], settings: Settings,
                 names: Sequence[str], scratch: Path) -> None:
    """The locked images `names` present on `member` by id: those missing are saved from an
    engine that has them and loaded there through `images export`/`images import` (the
    archive's sha256 and the helper's digest verified, each image id checked after the
    load). An image the engine holds under the lock's tag with another id is refused."""
    lock = ImageLock.load(settings.images_lock)
    missing = []
    for name in names:
        locked = lock.image_id(name)
        if member.engine.image_id(locked) is not None:
            continue
        tagged = member.engine.image_id(lock.images[name]["tag"])
        if tagged is not None and tagged != locked:
            raise SandbenchError(f"engine {member.url} has image {lock.images[name]['tag']} "
                                 f"as {tagged}, the lock says {locked}",
                                 why="an image under the locked tag with another id is not "
                                     "the locked image", fix="remove that tag on the engine, "
                                     "or run on another engine")
        missing.append(name)
    if not missing:
        return
    source = next((s for s in sources if s.id != member.id and all(
        s.engine.image_id(lock.image_id(n)) for n in missing)), None)
    if source is None:
        raise SandbenchError(f"no engine of the run has images {missing} to copy to "
                             f"{member.url}", fix="sandbench images build, then run again")
    scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="transfer-", dir=scratch))
    try:
        began = time.monotonic()
        archive = folder / "images.tar"
        transfer.export(source.engine, settings, missing, archive)
        # The import adopts the archive's lock entries: into a copy of this host's lock, so
        # the run's lock is never rewritten under it.
        private = Settings(project_root=settings.project_root, bench_root=folder / "root")
        private.bench_root.mkdir()
        shutil.copy2(settings.images_lock, private.images_lock)
        transfer.import_(member.engine, private, archive)
        seconds = time.monotonic() - began
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for name in missing:
        member.imported[name] = round(seconds, 3)
    logger.info("images_imported", engine=member.id, images=missing, seconds=round(seconds, 3))


def preflight(member: Member, settings: Settings, run_id: str, user: str, exec_path: str,
              folder: Path, accept_unbounded_limits: bool = False) -> list[GuardResult]:
    """The guards verified on `member` exactly as for an arm, in a sandbox of the locked
    base image with no mounts but the helper: what fails here is the engine's doing. An
    engine that cannot enforce limits has none unless the user accepted that: its arms are
    each refused by name (engine_limits) before any sandbox starts."""
    unbounded = engine_limits.refusal(member.facts, False) is not None
    if unbounded and not accept_unbounded_limits:
        return []
    lock = ImageLock.load(settings.images_lock)
    helper, digest = lock.helper()
    helper_mount = placement.mounted_helper(member)
    spec = dataclasses.replace(
        make(run_id, None, image_id=lock.image_id("base"), tool_version="", user=user,
             helper=HelperFile(helper_mount.source(helper), digest), exec_path=exec_path),
        unbounded_limits_accepted=unbounded)
    with Sandbox(member.engine, spec, member.id, helper_mount) as box:
        return box.verify(folder)


def prepare(r: RunContext, images_of: Mapping[str, str]) -> bool:
    """Every engine that has arms placed on it made ready: its images present (and those
    its placement runs there), the run's place there opened, its pre-flight guards passed.
    Returns False when an engine was refused (its arms need another place), True when every
    placed engine is ready."""
    members = list(r.members.values())
    user = default_user()
    for engine_id in dict.fromkeys(r.engine_of.values()):
        member = r.members[engine_id]
        arms_here = [a for a, e in r.engine_of.items() if e == engine_id]
        try:
            bring_images(member, members, r.settings,
                         sorted({"base", *placement.engine_images(member),
                                 *(images_of[a] for a in arms_here)}),
                         r.settings.bench_root / "transfer")
            learn_ids(member, r.settings, user, r.run_id)
            placement.open_engine(member, r.settings, r.run_id)
            preflight(member, r.settings, r.run_id, user, r.exec_path,
                      r.run_dir / "engines" / member.id / "preflight",
                      r.options.accept_unbounded_limits)
        except GuardViolation as exc:
            refuse(member, f"guards failed in its pre-flight sandbox: {exc.why}",
                   r.options.on_engine_refused)
            return False
        except (EngineError, SandbenchError) as exc:
            if isinstance(exc, InputError):
                raise
            refuse(member, f"{exc.what}" + (f": {exc.why}" if exc.why else ""),
                   r.options.on_engine_refused)
            return False
    return True
