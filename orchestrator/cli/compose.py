"""`sandbench compose export SUITE`: Compose files equivalent to a suite's containers."""

from __future__ import annotations

from pathlib import Path

import typer

from orchestrator.cli._common import BenchRoot, SuiteName, existing_run_dir, settings
from orchestrator.cli._help import Command, Group

app = typer.Typer(cls=Group, no_args_is_help=True, help="Compose files for audit and hand reruns.")


@app.command("export", cls=Command)
def export(suite: str = SuiteName,
           run_dir: Path = typer.Option(None, "--run", file_okay=False, metavar="RUN_DIR",
                                        callback=existing_run_dir,
                                        help="Point the env file at this run's work "
                                             "directories."),
           bench_root: Path = BenchRoot) -> None:
    """Write compose/SUITE.yml and this host's bench/compose/SUITE.env."""
    from orchestrator.exports import compose as compose_mod
    yml, env = compose_mod.export(settings(bench_root), suite, run_dir)
    typer.echo(f"wrote {yml} and {env}")
