"""`sandbench check RUN_DIR`: the suite's registered predictions against the run's scores,
a table of predicted vs found; with --assert, exit 1 unless every one was met."""

from __future__ import annotations

from pathlib import Path

import typer

from orchestrator.cli._common import Json, emit_json, show, table
from orchestrator.predictions.check import check_run

COLUMNS = ("id", "arm", "over", "figure", "predicted", "found", "status", "why")


def check(run_dir: Path = typer.Argument(..., file_okay=False,
                                         help="A scored run directory (bench/runs/RUN_ID)."),
          assert_: bool = typer.Option(False, "--assert", help="Exit 1 if any prediction is "
                                       "violated, missing or needs a baseline run."),
          as_json: bool = Json) -> None:
    """Check every prediction the suite sealed (predictions.toml, carried in
    RUN_DIR/scores.json) against the run's scored cells, every one reported."""
    result = check_run(run_dir)
    if as_json:
        emit_json(result.to_json())
    else:
        show(table([{**o, "over": f"{o['scope']} {o['target']}",
                     "found": None if o["found"] is None else f"{o['found']:g}"}
                    for o in result.outcomes], COLUMNS))
        typer.echo(", ".join(f"{n} {status}" for status, n in result.tally.items()))
    if assert_ and not result.held:
        failing = len(result.outcomes) - result.tally["met"]
        typer.echo(f"{failing} of {len(result.outcomes)} prediction(s) not met", err=True)
        raise typer.Exit(1)
