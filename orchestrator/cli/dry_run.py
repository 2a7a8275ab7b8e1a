"""`sandbench run SUITE --dry-run`: the plan, and every reason the run could not start.

A dry run shows what the run's one pre-flight found (`orchestrator.run.preflight`, the same
call a run makes before its first container): the engines, the suite and its arms, the
images, the corpus, the seal and the runtimes. It prints the plan it could make (with each
engine's placement), and exits non-zero with every problem: 2 when any is bad input, 1 when
something is missing."""

from __future__ import annotations

import typer

from orchestrator.sandbox import engine_limits
from orchestrator import placement as placement_mod
from orchestrator.cli._common import emit_json, show, table
from orchestrator.run import pool
from orchestrator.run.options import RunOptions
from orchestrator.run.plan import Plan
from orchestrator.run.preflight import Preflight, Problem, attempt, could_not_start


def dry_run(checked: Preflight, options: RunOptions, as_json: bool) -> None:
    """Print the plan (with each arm's engine); start nothing. Raises one error listing
    every problem when the run could not start."""
    problems = list(checked.problems)
    members = list(checked.members)
    the_plan = checked.plan
    if the_plan is not None:
        # One engine is a pool of one: its placement is shown as any engine's.
        placement: dict[str, str] = {}
        if members:
            placement = attempt(problems, lambda: pool.place(
                [a.name for a in the_plan.available], members)) or {}
        _show(the_plan, members, placement, as_json, problems,
              options.accept_unbounded_limits)
    if problems:
        raise could_not_start(problems)


def _show(the_plan: Plan, members: list[pool.Member],
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
