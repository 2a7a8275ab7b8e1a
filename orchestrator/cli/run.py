"""`sandbench run SUITE`: every available arm answers every task, cold and warm."""

from __future__ import annotations

from pathlib import Path

import typer

from orchestrator import run as run_mod
from orchestrator.cli import progress
from orchestrator.cli._common import BenchRoot, Json, emit_json, settings, show, table
from orchestrator.engine import Engine


def run(suite: str = typer.Argument(..., help="A suite under suites/."),
        resume: Path = typer.Option(None, "--resume", file_okay=False,
                                    help="Continue this run directory: cells with a record "
                                         "are kept, the rest run."),
        jobs: int = typer.Option(1, "--jobs", min=1, help="Arms run in parallel."),
        arm: list[str] = typer.Option(None, "--arm", help="Only these arms of the suite."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and what is "
                                     "missing; start nothing."),
        exec_path: str = typer.Option(None, "--exec-path", help="How commands reach each "
                                      "container: resident (requests on PID 1's attach stream; "
                                      "the default) or docker-exec (the fallback). A resume "
                                      "keeps the run's own."),
        bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Run a sealed suite. Arms run one after another unless --jobs says otherwise."""
    cfg = settings(bench_root)
    if dry_run:
        try:
            engine = Engine.connect(timeout_s=10)
        except Exception:  # noqa: BLE001 - a plan needs no engine; it just checks less
            engine = None
        plan = run_mod.plan(cfg, suite, arm or None, engine)
        rows = [{"arm": a.name, "image": a.spec.image, "image_id": (a.image_id or "")[:19],
                 "cells": len(a.cells), "status": a.unavailable or "available"}
                for a in plan.arms]
        if as_json:
            emit_json({"suite": suite, "arms": rows, "total_cells": plan.total_cells,
                       "missing": list(plan.missing)})
            return
        show(table(rows, ["arm", "image", "image_id", "cells", "status"]))
        typer.echo(f"{plan.total_cells} cells ({len(plan.suite.tasks)} tasks, "
                   f"1 cold + {plan.suite.reps} warm each)")
        for item in plan.missing:
            typer.echo(f"missing: {item}")
        return
    engine = Engine.connect()
    plan = run_mod.plan(cfg, suite, arm or None, engine)
    on_cell, close = progress.for_run(plan.available, jobs, as_json, resume)
    try:
        run_dir = run_mod.execute(engine, cfg, suite, resume=resume, jobs=jobs,
                                  only=arm or None, progress=on_cell, exec_path=exec_path)
    finally:
        close()
    if as_json:
        emit_json({"run_dir": str(run_dir)})
    else:
        typer.echo(f"run directory: {run_dir}")
