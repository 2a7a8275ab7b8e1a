"""`sandbench truth`: a suite's compiler truth, from its oracle's transcript."""

from __future__ import annotations

from pathlib import Path

import typer

from orchestrator.cli._common import BenchRoot, Json, emit_json, settings
from orchestrator.cli._help import Command, Group
from orchestrator.engine import Engine
from orchestrator.fsutil import read_json
from orchestrator.oracle import build as oracle_build
from orchestrator.untrusted.text import terminal, terminal_lines

app = typer.Typer(cls=Group, no_args_is_help=True, help="Compiler truth from oracles.")


@app.command("build", cls=Command)
def build(name: str = typer.Argument(..., metavar="SUITE", help="A suite with an [oracle]."),
          bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Run the suite's oracle in a sandbox and store its truth sets under the suite (then
    `sandbench suite seal NAME` covers them)."""
    path = oracle_build.build(Engine.connect(), settings(bench_root), name)
    document = read_json(path)
    if as_json:
        emit_json({"truth": str(path), "oracle": document["oracle"],
                   "transcript": document["transcript"], "resolution": document["resolution"],
                   "tasks": sorted(document["tasks"])})
        return
    oracle = document["oracle"]
    typer.echo(f"{oracle['arm']} ({terminal(oracle['tool_version'])}, "
               f"image {terminal(oracle['image_id'][:19])}): "
               f"{len(document['tasks'])} task truths"
               + (f", {len(document['edges'])} edges" if "edges" in document else ""))
    typer.echo(f"index: {document['transcript']['stdout_bytes']} bytes, stdout sha256 "
               f"{document['transcript']['stdout_sha256']}")
    typer.echo(f"truth: {path}")
    typer.echo(f"next: sandbench suite seal {name}")


@app.command("compare", cls=Command)
def compare(run_dir: Path = typer.Argument(..., file_okay=False,
                                           help="A scored run directory."),
            bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Grade a scored run's answers against the suite's compiler truth too, and list where the
    text and compiler truths disagree (RUN_DIR/truth-comparison.md)."""
    from orchestrator.oracle import compare as compare_mod
    path, figures = compare_mod.compare(run_dir, settings(bench_root).suites_dir)
    if as_json:
        emit_json({"document": str(path), **figures})
        return
    typer.echo(terminal_lines(path.read_text()), nl=False)
    typer.echo(f"document: {path}")
