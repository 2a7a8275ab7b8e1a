"""`sandbench cleanup`: remove containers, temporary images and runs' work volumes that carry
sandbench labels, and unmount arm file systems an interrupted run left mounted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from orchestrator.cli._common import BenchRoot, settings, show, table
from orchestrator.errors import SandbenchError
from orchestrator.settings import Settings


def cleanup(dry_run: bool = typer.Option(False, "--dry-run", help="List, remove nothing."),
            bench_root: Path = BenchRoot) -> None:
    """Remove leftovers of runs, by label and then by id: containers, temporary images, the
    work volumes of runs whose file systems the engine made, and the arms' file systems
    left mounted here; nothing else is touched."""
    from orchestrator.sandbox import cleanup as cleanup_mod
    from orchestrator.engine import Engine
    cfg = settings(bench_root)
    engine = Engine.connect()
    found = (cleanup_mod.find(engine) + cleanup_mod.find_volumes(engine)
             + cleanup_mod.find_mounts(cfg.runs_dir))
    if not found:
        typer.echo("nothing to clean up")
        return
    done = found if dry_run else cleanup_mod.remove(engine, found, _agent_image(cfg))
    show(table([dataclasses.asdict(x) for x in done], ["kind", "id", "name", "detail"]))
    typer.echo(f"{'would remove' if dry_run else 'removed'} {len(done)}")


def _agent_image(cfg: Settings) -> str | None:
    """The engine agent's locked image, which detaches a work volume's file systems (None
    without one: work volumes are then listed, not removed)."""
    from orchestrator.images import ImageLock
    from orchestrator.sandbox.remote import AGENT_IMAGE
    try:
        return ImageLock.load(cfg.images_lock).image_id(AGENT_IMAGE)
    except SandbenchError:
        return None
