"""`sandbench cleanup`: remove containers and temporary images that carry sandbench labels,
and unmount arm file systems an interrupted run left mounted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from orchestrator import cleanup as cleanup_mod
from orchestrator.cli._common import BenchRoot, settings, show, table
from orchestrator.engine import Engine


def cleanup(dry_run: bool = typer.Option(False, "--dry-run", help="List, remove nothing."),
            bench_root: Path = BenchRoot) -> None:
    """Remove leftovers of crashed runs, by label and then by id, and unmount the arms' file
    systems they left mounted; nothing else is touched."""
    engine = Engine.connect()
    found = cleanup_mod.find(engine) + cleanup_mod.find_mounts(settings(bench_root).runs_dir)
    if not found:
        typer.echo("nothing to clean up")
        return
    done = found if dry_run else cleanup_mod.remove(engine, found)
    show(table([dataclasses.asdict(x) for x in done], ["kind", "id", "name", "detail"]))
    typer.echo(f"{'would remove' if dry_run else 'removed'} {len(done)}")
