"""`sandbench score RUN_DIR` and `sandbench report RUN_DIR`: scores from a run directory and
its sealed suite, offline, and the results document rendered from those scores."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer

from orchestrator.cli._common import (BenchRoot, Json, emit_json, run_dir_argument, settings,
                                      show, table)
from orchestrator.errors import InputError

RunDir = run_dir_argument("A run directory (bench/runs/RUN_ID).")


def _show_scorecard(scores: dict) -> None:
    from orchestrator.report import tables
    show(table(tables.terminal_scorecard(scores), tables.TERMINAL_SCORECARD_COLUMNS))


def score(run_dir: Path = RunDir,
          suite_dir: Path = typer.Option(None, "--suite-dir", file_okay=False, metavar="DIR",
                                         help="The sealed suite the run was made with "
                                              "(default: the project's suites/NAME)."),
          update: bool = typer.Option(False, "--update", help="Write the new scores even "
                                      "where they do not reproduce the earlier ones."),
          bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Score a run offline: grades, cost, wall time, reach and setup cost into
    RUN_DIR/scores.json. A run scored before must reproduce every grade, recall and precision
    (exit 1 naming each that differs, nothing written)."""
    from orchestrator.score import SCORES_NAME, score_run
    from orchestrator.score.inputs import read_complete_run
    if suite_dir is None:
        name = read_complete_run(run_dir).suite.name
        suite_dir = settings(bench_root).suite_dir(name)
    scored_before = (run_dir / SCORES_NAME).is_file()
    scores = score_run(run_dir, suite_dir, update=update)
    if as_json:
        emit_json({"scores": str(run_dir / SCORES_NAME), "cells": len(scores["cells"]),
                   "self_check": "reproduced" if scored_before and not update else None})
        return
    _show_scorecard(scores)
    if scored_before and not update:
        typer.echo(f"self-check: all {len(scores['cells'])} cells reproduce the earlier "
                   "grades, recalls and precisions")
    typer.echo(f"scores: {run_dir / SCORES_NAME}")


def report(run_dir: Path = RunDir,
           check: bool = typer.Option(False, "--check", help="Render again and compare with "
                                      "the committed document; exit 1 on any difference."),
           output: Path = typer.Option(None, "--output", "-o", dir_okay=False, metavar="FILE",
                                       help="Where the Markdown document goes (default "
                                            "RUN_DIR/results.md); the HTML page goes "
                                            "beside it, named like it with .html."),
           fmt: Literal["md", "json"] = typer.Option("md", "--format",
                                                     help="md: write the documents; json: "
                                                          "print scores.json on stdout.")
           ) -> None:
    """Render the results documents from RUN_DIR/scores.json alone: results.md and, beside
    it, results.html (the same tables and the plots, self-contained)."""
    from orchestrator import report as report_mod
    from orchestrator.fsutil import canonical_json
    from orchestrator.report import html as html_page
    from orchestrator.score import SCORES_NAME
    if fmt == "json":
        typer.echo(canonical_json(report_mod.read(run_dir)), nl=False)
        return
    markdown = Path(output) if output is not None else run_dir / report_mod.RESULTS_NAME
    try:
        page = html_page.path_beside(markdown)
    except ValueError as exc:
        raise InputError(f"sandbench report: --output: {exc}", key="--output",
                         fix="name the Markdown document (.md)") from None
    if check:
        target, diffs = report_mod.differences(run_dir, output)
        page_diffs = html_page.differences(report_mod.read(run_dir), page)
        for path, found in ((target, diffs), (page, page_diffs)):
            if found:
                typer.echo(f"{path} differs from a fresh rendering of "
                           f"{run_dir / SCORES_NAME}:", err=True)
                typer.echo("\n".join(found), err=True)
        if diffs or page_diffs:
            raise typer.Exit(1)
        typer.echo(f"{target}: identical to a fresh rendering")
        typer.echo(f"{page}: identical to a fresh rendering")
        return
    done = report_mod.write(run_dir, output)
    html_page.write(done.scores, page)
    _show_scorecard(done.scores)
    typer.echo(f"markdown: {done.markdown}")
    typer.echo(f"html: {page}")
