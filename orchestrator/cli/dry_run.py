"""`sandbench run SUITE --dry-run`: the plan, and every reason the run could not start.

A dry run checks what the run would check before its first container (each option's value,
the engines, the suite and its arms, the images, the corpus, the seal, root), collects every
problem instead of stopping at the first, prints the plan it could make, and exits non-zero
with the whole list: 2 when any problem is bad input, 1 when something is missing."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import typer

from orchestrator import engine_pool
from orchestrator import run as run_mod
from orchestrator import run_document
from orchestrator import suite as suite_mod
from orchestrator import runtimes, workfs
from orchestrator.cli._common import emit_json, show, table
from orchestrator.engine import Engine
from orchestrator.errors import InputError, SandbenchError
from orchestrator.settings import Settings

T = TypeVar("T")


@dataclass(frozen=True)
class Problem:
    text: str
    exit_code: int  # 2: an input is wrong; 1: something the run needs is missing
    error: SandbenchError | None = None  # what the run itself would raise, when it is one

    @classmethod
    def of(cls, err: SandbenchError) -> Problem:
        return cls(err.what + (f" (fix: {err.fix})" if err.fix else ""), err.exit_code, err)


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


def option_problems(opts: Options) -> list[Problem]:
    """What is wrong with the values given, before anything is read or dialled (a choice's
    value is the parser's to check: typer refuses one not listed, with exit code 2)."""
    if opts.resume is not None and not run_document.path(opts.resume).is_file():
        return [Problem(f"--resume {opts.resume}: no run.json: not a run directory to resume",
                        2)]
    return []


def _attempt(problems: list[Problem], step: Callable[[], T]) -> T | None:
    """The step's result, or None with its error added to the problems."""
    try:
        return step()
    except SandbenchError as err:
        problems.append(Problem.of(err))
        return None


def _seal_problems(the_plan: run_mod.Plan, cfg: Settings) -> list[Problem]:
    problems: list[Problem] = []
    name = the_plan.suite.name
    diffs = _attempt(problems, lambda: suite_mod.verify_seal(the_plan.suite, cfg)) or []
    return problems + [Problem(f"suite {name!r}: {d.file} changed since the seal (sealed "
                               f"{d.expected}, now {d.found}) (fix: review the change, then: "
                               f"sandbench suite seal {name})", 2) for d in diffs]


def _runtime_problems(the_plan: run_mod.Plan, override: str | None,
                      members: list[engine_pool.Member], engine: Engine | None
                      ) -> list[Problem]:
    """Each arm whose container runtime an engine of the run lacks (the run refuses it)."""
    engines = [m.engine for m in members] or ([engine] if engine is not None else [])
    problems: list[Problem] = []
    for a in the_plan.available:
        wanted = the_plan.suite.runtime.of(a.name, override)
        if wanted == runtimes.RUNC:
            continue
        for e in engines:
            info = _attempt(problems, e.info)
            if info is not None and not runtimes.engine_has(info, wanted):
                problems.append(Problem(f"arm {a.name!r} asks for the container runtime "
                                        f"{wanted!r}, which the engine {e.address} does not "
                                        f"have (fix: {runtimes.REGISTER_FIX})", 1))
    return problems


def dry_run(cfg: Settings, opts: Options, as_json: bool) -> None:
    """Print the plan (with each arm's engine when several are given); start nothing.
    Raises one error listing every problem when the run could not start."""
    problems = option_problems(opts)
    members: list[engine_pool.Member] = []
    if opts.engine_urls:
        members = _attempt(problems, lambda: engine_pool.connect(
            opts.engine_urls, opts.insecure_engine)) or []
    engine = members[0].engine if members else _attempt(
        problems, lambda: Engine.connect(timeout_s=10))
    the_plan = _attempt(problems, lambda: run_mod.plan(cfg, opts.suite, opts.arms or None,
                                                       engine))
    placement: dict[str, str] = {}
    if the_plan is not None:
        problems += [Problem(item, 1) for item in the_plan.missing]
        problems += _seal_problems(the_plan, cfg)
        problems += _runtime_problems(the_plan, opts.runtime, members, engine)
        if members:
            placement = _attempt(problems, lambda: engine_pool.place(
                [a.name for a in the_plan.available], members)) or {}
    if os.geteuid() != 0:
        _attempt(problems, lambda: workfs.require_root(cfg.runs_dir))
    if the_plan is not None:
        _show(the_plan, members, placement, as_json, problems)
    if problems:
        raise _could_not_start(problems)


def _could_not_start(problems: list[Problem]) -> SandbenchError:
    """One problem: the run's own error for it, as the run would print it. Several: one
    error listing them, exit 2 when any is bad input, else 1."""
    kind = InputError if any(p.exit_code == 2 for p in problems) else SandbenchError
    if len(problems) == 1:
        return problems[0].error or kind(f"the run could not start: {problems[0].text}")
    listed = "; ".join(f"({i}) {p.text}" for i, p in enumerate(problems, 1))
    return kind(f"the run could not start: {len(problems)} problems", why=listed,
                problems=[p.text for p in problems])


def _show(the_plan: run_mod.Plan, members: list[engine_pool.Member],
          placement: dict[str, str], as_json: bool, problems: list[Problem]) -> None:
    urls = {m.id: m.url for m in members}
    rows = [{"arm": a.name, "image": a.spec.image, "image_id": (a.image_id or "")[:19],
             "cells": len(a.cells), "status": a.unavailable or "available",
             "engine": urls.get(placement.get(a.name, ""))}
            for a in the_plan.arms]
    engine_rows = [{"engine": m.url, "id": m.id, "version": m.facts.get("version"),
                    "arch": m.facts.get("arch"), "cores": m.facts.get("cores"),
                    "host": "this" if m.local else "another",
                    "userns_remap": bool(m.facts.get("userns", {}).get("remap")),
                    "status": m.refused or "usable"} for m in members]
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
        show(table(engine_rows, ["engine", "id", "version", "arch", "cores", "host", "userns_remap",
                                      "status"]))
