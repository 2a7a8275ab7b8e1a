"""`sandbench suite`: seal a suite's inputs before any arm runs, and verify the seal."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from orchestrator import suite as suite_mod
from orchestrator.cli._common import (BenchRoot, Json, SuiteName, emit_json, settings, show,
                                      table)
from orchestrator.cli._help import Command, Group

app = typer.Typer(cls=Group, no_args_is_help=True, help="Sealed task suites.")


def _load(name: str, bench_root: Path | None):
    cfg = settings(bench_root)
    return cfg, suite_mod.load_suite(cfg.suites_dir, name)


@app.command("seal", cls=Command)
def seal(name: str = SuiteName, bench_root: Path = BenchRoot) -> None:
    """Write manifest.json: the sha256 of every input that decides a number."""
    cfg, the_suite = _load(name, bench_root)
    path = suite_mod.seal(the_suite, cfg)
    typer.echo(f"sealed {name}: {path}")


@app.command("verify", cls=Command)
def verify(name: str = SuiteName, bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Check every sealed input; exits 1 naming each file that changed."""
    cfg, the_suite = _load(name, bench_root)
    diffs = suite_mod.verify_seal(the_suite, cfg)
    if as_json:
        emit_json([dataclasses.asdict(d) for d in diffs])
    elif diffs:
        show(table([dataclasses.asdict(d) for d in diffs], ["file", "expected", "found"]))
    else:
        typer.echo(f"seal of {name} holds")
    if diffs:
        raise typer.Exit(1)
