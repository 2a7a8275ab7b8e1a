"""`sandbench images`: build, list, verify, export and import the pinned images."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

from orchestrator.cli._common import (BenchRoot, Json, emit_json, seconds_text, settings, show,
                                      size_text, table, yes_no)
from orchestrator.cli._help import Command, Group
from orchestrator.errors import SandbenchError

app = typer.Typer(cls=Group, no_args_is_help=True,
                  help="Pinned image recipes and the host's image lock.")


@app.command("build", cls=Command)
def build(names: list[str] = typer.Argument(None, metavar="NAME",
                                            help="Images to build (default: all)."),
          dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be built."),
          artifact: list[str] = typer.Option(None, "--artifact", metavar="NAME=PATH",
                                             help="A file a recipe needs (e.g. "
                                                  "devscout=./devscout); repeat for several."),
          suite: str = typer.Option(None, "--suite", metavar="SUITE",
                                    help="Only the images this suite's arms run in (with "
                                         "their parents, and those the engine's placement "
                                         "runs there), besides any NAME."),
          jobs: int = typer.Option(1, "--jobs", min=1, metavar="N",
                                   help="How many images build at once (each after its "
                                        "parent)."),
          bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Build images whose recipe changed or whose image is missing; skip the rest."""
    from orchestrator import images, placement
    from orchestrator.run import plan, pool
    from orchestrator.engine import Engine, engine_address
    cfg = settings(bench_root)
    artifacts = images.parse_artifacts(artifact or [])
    wanted = list(names or ())
    if suite is not None:
        here = pool.Member(engine_address(), None, {})  # type: ignore[arg-type]
        wanted += [n for n in [*plan.suite_images(cfg, suite), *placement.engine_images(here)]
                   if n not in wanted]
    engine = None if dry_run else Engine.connect()
    outcomes = images.build(engine, cfg, wanted, dry_run=dry_run, artifacts=artifacts,
                            jobs=jobs)
    # Nothing named builds every recipe; with --suite, say which recipes were left out.
    left_out = (sorted(set(images.load_recipes(cfg.images_dir)) - {o.name for o in outcomes})
                if suite is not None else [])
    note = (f"not built (no arm of suite {suite!r} runs in them): {', '.join(left_out)}"
            if left_out else None)
    if as_json:
        emit_json([dataclasses.asdict(o) for o in outcomes])
        if note:
            typer.echo(note, err=True)
        return
    show(table([dataclasses.asdict(o) for o in outcomes],
               ["name", "action", "reason", "tag", "seconds"]))
    if note:
        typer.echo(note)


@app.command("ls", cls=Command)
def ls(bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Every recipe with its locked image, size and build time."""
    from orchestrator import images
    from orchestrator.engine import Engine
    rows = images.listing(Engine.connect(), settings(bench_root))
    if as_json:
        emit_json(rows)
        return
    show(table([{**row, "present": yes_no(row["present"]), "size": size_text(row["size_bytes"]),
                 "build_time": _build_time(row)} for row in rows],
               ["name", "parent", "tag", "present", "size", "build_time", "tool_version"]))


def _build_time(row: dict[str, Any]) -> str | None:
    """The build's wall time; a bootstrapped image's includes its root file system, and a
    lock written before that was timed says so."""
    shown = seconds_text(row["build_seconds"])
    if shown and row["bootstrapped"] and row["bootstrap_seconds"] is None:
        return f"{shown} (bootstrap not timed)"
    return shown


@app.command("verify", cls=Command)
def verify(bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Local images against the lock; exits 1 when any is missing, stale or mismatched."""
    from orchestrator import images
    from orchestrator.engine import Engine
    checks = images.verify(Engine.connect(), settings(bench_root))
    if as_json:
        emit_json([dataclasses.asdict(c) for c in checks])
    else:
        show(table([dataclasses.asdict(c) for c in checks], ["name", "status", "detail"]))
    if any(c.status not in ("ok", "unavailable") for c in checks):
        raise typer.Exit(1)


@app.command("export", cls=Command)
def export(names: list[str] = typer.Argument(..., metavar="NAME",
                                             help="Images to export (with parents)."),
           output: Path = typer.Option(..., "-o", "--output", metavar="FILE",
                                       help="Archive to write."),
           bench_root: Path = BenchRoot) -> None:
    """A `docker save` archive of the locked images, with a sidecar holding its sha256."""
    from orchestrator import images
    from orchestrator.engine import Engine
    sidecar = images.export(Engine.connect(), settings(bench_root), names, output)
    typer.echo(f"wrote {output} and {sidecar}")


@app.command("import", cls=Command)
def import_(archive: Path = typer.Argument(..., exists=True, dir_okay=False, metavar="FILE",
                                          help="An archive written by images export."),
            bench_root: Path = BenchRoot) -> None:
    """Load an exported archive after checking its sha256; adopt its lock entries."""
    from orchestrator import images
    from orchestrator.engine import Engine
    names = images.import_(Engine.connect(), settings(bench_root), archive)
    typer.echo(f"imported {', '.join(names)}")


@app.command("prune", cls=Command)
def prune(dry_run: bool = typer.Option(False, "--dry-run", help="List, remove nothing."),
          until_free: str = typer.Option(None, "--until-free", metavar="SIZE",
                                         help="Stop once the engine's data root has SIZE free "
                                              "(e.g. 20G); exit 1 if it never does."),
          bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Remove sandbench's images this bench root's lock does not name (superseded builds,
    other bench roots' sets, build leftovers), oldest first, each image's newest build last;
    images a container uses are kept."""
    from orchestrator import images
    from orchestrator.engine import Engine
    cfg = settings(bench_root)
    want = images.parse_size(until_free) if until_free is not None else None
    engine = Engine.connect()
    lock = images.ImageLock.load(cfg.images_lock)
    free = images.data_root_free(engine) if want is not None else None
    if want is not None and free is not None:
        typer.echo(f"the engine's data root has {size_text(free())} free, "
                   f"--until-free asks {size_text(want)}", err=True)
    done = images.prune(engine, lock, until_free=want, free_bytes=free, dry_run=dry_run)
    if as_json:
        emit_json([dataclasses.asdict(p) for p in done])
    else:
        if done:
            show(table([{**dataclasses.asdict(p), "size": size_text(p.size_bytes)}
                        for p in done], ["outcome", "id", "name", "size"]))
        removed = [p for p in done if p.outcome in ("removed", "would remove")]
        typer.echo(f"{'would remove' if dry_run else 'removed'} {len(removed)} image(s)")
    if want is not None and free is not None and not dry_run and (left := free()) < want:
        raise SandbenchError(f"the engine's data root has {size_text(left)} free after "
                             f"pruning, expected at least {size_text(want)} (--until-free)",
                             why="no sandbench image this bench root's lock does not name is "
                                 "left to remove (those a container uses are kept)",
                             fix="free space on the file system of the engine's data root "
                                 "(docker info: Docker Root Dir)")
