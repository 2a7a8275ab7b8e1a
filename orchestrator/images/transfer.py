"""Moving the exact images to another host: `export` writes one `docker save` archive of the
locked images, a sidecar with their lock entries and the archive's sha256, and the timing
helper beside it; `import_` loads it only when the archive is unaltered and adopts the lock
entries once every image id is the one the archive claims."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import atomic_write_json, sha256_file
from orchestrator.images import helper as host_helper
from orchestrator.images.lock import LOCK_VERSION, ImageLock
from orchestrator.images.recipes import load_recipes, select
from orchestrator.settings import Settings

if TYPE_CHECKING:
    from orchestrator.engine import Engine


def export(engine: Engine, settings: Settings, names: list[str], out: Path) -> Path:
    """`docker save` of the locked images into `out`, and `out`.json with their lock entries
    and the archive's sha256, so another host can run the exact same images."""
    lock = ImageLock.load(settings.images_lock)
    recipes = load_recipes(settings.images_dir)
    chosen = [r.name for r in select(recipes, names)]
    entries = {n: lock.images[n] for n in chosen if lock.image_id(n)}
    for entry in entries.values():
        # The archive names each image by its lock tag; another bench root on this engine may
        # have pointed that tag at its own build of the recipe: point it at the locked id.
        repository, _, tag = entry["tag"].rpartition(":")
        engine.tag(entry["image_id"], repository, tag)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            for chunk in engine.save([e["tag"] for e in entries.values()]):
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    # The timing helper is a host file, not an image: it travels beside the archive.
    helpers = [e["helper"] for e in entries.values() if isinstance(e.get("helper"), dict)]
    for helper in helpers:
        if problem := host_helper.helper_problem(settings, helper):
            raise SandbenchError(f"cannot export the timing helper: {problem}",
                                 fix="run: sandbench images build base")
        shutil.copyfile(settings.bench_root / helper["path"], host_helper.archive_copy(out))
    sidecar = out.with_name(out.name + ".json")
    atomic_write_json(sidecar, {"version": LOCK_VERSION, "archive": out.name,
                                "sha256": sha256_file(out), "images": entries})
    return sidecar


def import_(engine: Engine, settings: Settings, archive: Path) -> list[str]:
    """Load an exported archive after checking its sha256, then adopt its lock entries once
    every image id matches what the archive claims."""
    sidecar = archive.with_name(archive.name + ".json")
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{sidecar} is missing", fix="export writes it beside the archive; "
                         "copy both", file=str(sidecar)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{sidecar}: does not parse: {exc}", file=str(sidecar)) from exc
    found = sha256_file(archive)
    if found != meta.get("sha256"):
        raise InputError.bad_value(sidecar, "sha256", meta.get("sha256"), found,
                                   fix="the archive was altered or truncated in transit")
    with open(archive, "rb") as fh:
        engine.load(fh)
    lock = ImageLock.load(settings.images_lock)
    for name, entry in meta["images"].items():
        actual = engine.image_id(entry["tag"])
        if actual != entry["image_id"]:
            raise SandbenchError(f"imported image {name!r} has id {actual}, "
                                 f"expected {entry['image_id']}")
        if isinstance(helper := entry.get("helper"), dict):
            host_helper.install_from_archive(settings, archive, helper)
        lock.images[name] = entry
    lock.save()
    return sorted(meta["images"])
