"""`sandbench run SUITE --dry-run`: the plan, and every reason the run could not start.

A dry run checks what the run checks before its first container, with the same code
(`orchestrator.preflight`): each option's value, the engines, the suite and its arms, the
images, the corpus, the seal and the runtimes. It collects every problem instead of stopping
at the first, prints the plan it could make (with each engine's placement), and exits
non-zero with the whole list: 2 when any problem is bad input, 1 when something is missing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from orchestrator import engine_limits, engine_pool
from orchestrator import placement as placement_mod
from orchestrator import run as run_mod
from orchestrator import run_document
from orchestrator.cli._common import emit_json, show, table
from orchestrator.preflight import Problem, attempt, could_not_start, plan_problems
from orchestrator.settings import Settings


@dataclass(frozen=True)
class Options:
    suite: str
    arms: list[str] | None
    resume: Path | None
    exec_path: str | None
    engine_urls: list[str] | None
    insecure_engine: bool
    on_engine_refused: str
    runtime: str | None = None  # --runtime: every arm's container runtime
    accept_unbounded_limits: bool = False  # an engine that cannot enforce limits runs its arms


def option_problems(opts: Options) -> list[Problem]:
    """What is wrong with the values given, before anything is read or dialled (a choice's
    value is the parser's to check: typer refuses one not listed, with exit code 2)."""
    if opts.resume is not None and not run_document.path(opts.resume).is_file():
        return [Problem(f"--resume {opts.resume}: no run.json: not a run directory to resume",
                        2)]
    return []


def dry_run(cfg: Settings, opts: Options, as_json: bool) -> None:
    """Print the plan (with each arm's engine when several are given); start nothing.
    Raises one error listing every problem when the run could not start."""
    problems = option_problems(opts)
    # One engine is a pool of one: its placement is shown as any engine's.
    members = attempt(problems, lambda: engine_pool.connect(
        opts.engine_urls or None, opts.insecure_engine)) or []
    engine = members[0].engine if members else None
    the_plan = attempt(problems, lambda: run_mod.plan(cfg, opts.suite, opts.arms or None,
                                                      engine))
    placement: dict[str, str] = {}
    if the_plan is not None:
        problems += plan_problems(the_plan, cfg, opts.runtime, [m.engine for m in members])
        if members:
            placement = attempt(problems, lambda: engine_pool.place(
                [a.name for a in the_plan.available], members)) or {}
        _show(the_plan, members, placement, as_json, problems, opts.accept_unbounded_limits)
    if problems:
        raise could_not_start(problems)


def _show(the_plan: run_mod.Plan, members: list[engine_pool.Member],
          placement: dict[str, str], as_json: bool, problems: list[Problem],
          accept_unbounded_limits: bool) -> None:
    urls = {m.id: m.url for m in members}
    rows = [{"arm": a.name, "image": a.spec.image, "image_id": (a.image_id or "")[:19],
             "cells": len(a.cells), "status": a.unavailable or "available",
             "engine": urls.get(placement.get(a.name, ""))}
            for a in the_plan.arms]
    engine_rows = [{"engine": m.url, "id": m.id, "version": m.facts.get("version"),
                    "arch": m.facts.get("arch"), "cores": m.facts.get("cores"),
                    "host": "this" if m.local else "another",
                    "placement": placement_mod.kind_of(m).name,
                    "userns_remap": bool(m.facts.get("userns", {}).get("remap")),
                    # An engine that cannot enforce the arms' limits: its arms are refused.
                    "status": m.refused or engine_limits.refusal(
                        m.facts, accept_unbounded_limits) or "usable"} for m in members]
    if as_json:
        emit_json({"suite": the_plan.suite.name, "arms": rows,
                   "total_cells": the_plan.total_cells, "missing": list(the_plan.missing),
                   "engines": engine_rows, "problems": [p.text for p in problems]})
        return
    show(table(rows, ["arm", "image", "image_id", "cells", "status"]
               + (["engine"] if members else [])))
    typer.echo(f"{the_plan.total_cells} cells ({len(the_plan.suite.tasks)} tasks, 1 cold + "
               f"{the_plan.suite.reps} warm each)")
    if members:
        show(table(engine_rows, ["engine", "id", "version", "arch", "cores", "host", "placement",
                                 "userns_remap", "status"]))
