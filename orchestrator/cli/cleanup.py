"""`sandbench cleanup`: remove containers and temporary images that carry sandbench labels."""

from __future__ import annotations

import dataclasses

import typer

from orchestrator import cleanup as cleanup_mod
from orchestrator.cli._common import table
from orchestrator.engine import Engine


def cleanup(dry_run: bool = typer.Option(False, "--dry-run", help="List, remove nothing.")
            ) -> None:
    """Remove leftovers of crashed runs, by label and then by id; nothing else is touched."""
    engine = Engine.connect()
    found = cleanup_mod.find(engine)
    if not found:
        typer.echo("nothing to clean up")
        return
    done = found if dry_run else cleanup_mod.remove(engine, found)
    typer.echo(table([dataclasses.asdict(x) for x in done], ["kind", "id", "name", "detail"]))
    typer.echo(f"{'would remove' if dry_run else 'removed'} {len(done)}")
