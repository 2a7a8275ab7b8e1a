"""`sandbench compare RUN_A RUN_B`: Run 0 beside Run 1, on stdout in one format or as every
format written into a directory."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer

from orchestrator.cli._common import BenchRoot, run_dir_argument, settings
from orchestrator.cli.check import report


def compare(run_a: Path = run_dir_argument("Run 0, the baseline: a scored run directory.",
                                           "RUN_A"),
            run_b: Path = run_dir_argument("Run 1, after the change: a scored run directory.",
                                           "RUN_B"),
            fmt: Literal["md", "html", "json"] = typer.Option(
                "md", "--format", help="What stdout gets: md, html or json (the model)."),
            output: Path = typer.Option(None, "--output", "-o", file_okay=False, metavar="DIR",
                                        help="Write compare.md, compare.html and compare.json "
                                             "into DIR (atomically) instead of printing."),
            assert_: bool = typer.Option(False, "--assert", help="Instead of the comparison, "
                                         "check RUN_B's predictions with RUN_A as the baseline "
                                         "(a table, or JSON with --format json); exit 1 "
                                         "unless every one is met."),
            bench_root: Path = BenchRoot) -> None:
    """Compare two scored runs of one sealed suite (or of two suites one declares comparable
    with `comparable_with` in its sealed suite.toml): each cell's grade in both runs and its
    transition, recall and precision deltas, paired cost and time ratios, answers changed
    under the same grade, and every difference in images, tool versions, engines and
    runtimes. Regressions are listed one by one, never netted. With --assert, stdout gets
    RUN_B's predictions checked against RUN_A instead (--output still writes the documents)."""
    from orchestrator import compare as compare_mod
    from orchestrator.predictions.check import check_against
    suites_dir = settings(bench_root).suites_dir
    if assert_:
        result, model = check_against(run_a, run_b, suites_dir)
        if output is not None:
            compare_mod.write(model, output)
        report(result, fmt == "json", assert_=True)
        return
    model = compare_mod.compare(run_a, run_b, suites_dir)
    if output is None:
        typer.echo(compare_mod.rendered(model, fmt), nl=False)
        return
    for path in compare_mod.write(model, output):
        typer.echo(f"{path.suffix.lstrip('.')}: {path}")
    typer.echo(f"regressions: {len(model['regressions'])}, improvements: "
               f"{len(model['improvements'])}, newly unscored: {len(model['newly_unscored'])}")
