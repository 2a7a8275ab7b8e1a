"""`sandbench run SUITE`: every available arm answers every task, cold and warm."""

from __future__ import annotations

from pathlib import Path

import typer

from orchestrator import engines as engines_mod
from orchestrator import run as run_mod
from orchestrator.cli import progress
from orchestrator.cli._common import BenchRoot, Json, emit_json, settings, show, table
from orchestrator.engine import Engine
from orchestrator.settings import Settings


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
        engine_urls: list[str] = typer.Option(
            None, "--engine", envvar="SANDBENCH_ENGINES",
            help="A Docker engine to run arms on, as the docker SDK takes it (unix://, ssh://, "
                 "tcp:// with TLS); repeat for several (SANDBENCH_ENGINES: space-separated). "
                 "Arms are placed whole, one engine each."),
        insecure_engine: bool = typer.Option(False, "--insecure-engine",
                                             help="Allow a plain tcp:// engine (no TLS)."),
        on_engine_refused: str = typer.Option(
            engines_mod.STOP, "--on-engine-refused",
            help="When an engine is refused (a guard, its images, no loop devices): stop "
                 "the run, or move its arms to the other engines."),
        bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Run a sealed suite. Arms run one after another unless --jobs says otherwise."""
    cfg = settings(bench_root)
    if dry_run:
        _dry_run(cfg, suite, arm, engine_urls, insecure_engine, as_json)
        return
    members = engines_mod.connect(engine_urls, insecure_engine) if engine_urls else None
    engine = members[0].engine if members else Engine.connect()
    plan = run_mod.plan(cfg, suite, arm or None, engine)
    on_cell, close = progress.for_run(plan.available, jobs, as_json, resume)
    try:
        run_dir = run_mod.execute(engine, cfg, suite, resume=resume, jobs=jobs,
                                  only=arm or None, progress=on_cell, exec_path=exec_path,
                                  members=members, on_refused=on_engine_refused)
    finally:
        close()
    if as_json:
        emit_json({"run_dir": str(run_dir)})
    else:
        typer.echo(f"run directory: {run_dir}")


def _dry_run(cfg: Settings, suite: str, arm: list[str] | None,
             engine_urls: list[str] | None, insecure: bool, as_json: bool) -> None:
    """The plan, with each arm's engine when several are given; nothing is started."""
    members: list[engines_mod.Member] = []
    if engine_urls:
        members = engines_mod.connect(engine_urls, insecure)
    try:
        engine = members[0].engine if members else Engine.connect(timeout_s=10)
    except Exception:  # noqa: BLE001 - a plan needs no engine; it just checks less
        engine = None
    plan = run_mod.plan(cfg, suite, arm or None, engine)
    placement = (engines_mod.place([a.name for a in plan.available], members)
                 if members else {})
    urls = {m.id: m.url for m in members}
    rows = [{"arm": a.name, "image": a.spec.image, "image_id": (a.image_id or "")[:19],
             "cells": len(a.cells), "status": a.unavailable or "available",
             "engine": urls.get(placement.get(a.name, ""))}
            for a in plan.arms]
    engine_rows = [{"engine": m.url, "id": m.id, "version": m.facts.get("version"),
                    "arch": m.facts.get("arch"), "cores": m.facts.get("cores"),
                    "host": "this" if m.local else "another",
                    "status": m.refused or "usable"} for m in members]
    if as_json:
        emit_json({"suite": suite, "arms": rows, "total_cells": plan.total_cells,
                   "missing": list(plan.missing), "engines": engine_rows})
        return
    show(table(rows, ["arm", "image", "image_id", "cells", "status"]
               + (["engine"] if members else [])))
    typer.echo(f"{plan.total_cells} cells ({len(plan.suite.tasks)} tasks, "
               f"1 cold + {plan.suite.reps} warm each)")
    if members:
        show(table(engine_rows, ["engine", "id", "version", "arch", "cores", "host", "status"]))
    for item in plan.missing:
        typer.echo(f"missing: {item}")
