"""`sandbench check RUN_DIR`: the suite's registered predictions against the run's scores,
a table of predicted vs found; with --baseline RUN_0, each direction decided against that run;
with --assert, exit 1 unless every one was met."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from orchestrator.cli._common import (BenchRoot, Json, emit_json, existing_run_dir,
                                      run_dir_argument, settings, show, table)

if TYPE_CHECKING:
    from orchestrator.predictions.check import Check

COLUMNS = ("id", "arm", "over", "figure", "predicted", "found", "status", "why")
# With a baseline run, each direction's figure in that run stands beside the one found.
BASELINE_COLUMNS = (*COLUMNS[:6], "baseline", *COLUMNS[6:])


def _shown(value: float | None) -> str | None:
    return None if value is None else f"{value:g}"


def report(result: Check, as_json: bool, assert_: bool) -> None:
    """The outcomes as a table (or JSON) on stdout; under --assert, exit 1 with the count of
    predictions not met on stderr unless all were met. What check and compare --assert print."""
    if as_json:
        emit_json(result.to_json())
    else:
        columns = COLUMNS if result.baseline_run is None else BASELINE_COLUMNS
        show(table([{**o, "over": f"{o['scope']} {o['target']}", "found": _shown(o["found"]),
                     "baseline": _shown(o.get("baseline"))} for o in result.outcomes],
                   columns))
        typer.echo(", ".join(f"{n} {status}" for status, n in result.tally.items()))
    if assert_ and not result.held:
        failing = len(result.outcomes) - result.tally["met"]
        typer.echo(f"{failing} of {len(result.outcomes)} prediction(s) not met", err=True)
        raise typer.Exit(1)


def check(run_dir: Path = run_dir_argument("A scored run directory (bench/runs/RUN_ID)."),
          assert_: bool = typer.Option(False, "--assert", help="Exit 1 if any prediction is "
                                       "violated, missing or needs a baseline run."),
          baseline: Path = typer.Option(None, "--baseline", file_okay=False, metavar="RUN_0",
                                        callback=existing_run_dir,
                                        help="The scored run the directions are against (the "
                                             "one they name), compared with RUN_DIR first."),
          as_json: bool = Json, bench_root: Path = BenchRoot) -> None:
    """Check every prediction the suite sealed (predictions.toml, carried in
    RUN_DIR/scores.json) against the run's scored cells, every one reported; a direction
    against a named run is decided only with that run given as --baseline."""
    from orchestrator.predictions.check import check_against, check_run
    if baseline is None:
        result = check_run(run_dir)
    else:
        result, _ = check_against(baseline, run_dir, settings(bench_root).suites_dir)
    report(result, as_json, assert_)
