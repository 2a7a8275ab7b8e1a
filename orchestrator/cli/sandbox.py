"""`sandbench sandbox`: start arm sandboxes, verify their guards, run a command in one, try an
arm on a suite's tasks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from orchestrator.cli.run import Runtime
from orchestrator.cli._common import BenchRoot, Json, emit_json, settings, show_guards
from orchestrator.cli._help import Command, Group
from orchestrator.untrusted.text import terminal

RUNTIME = typer.Option(Runtime.runc, "--runtime",
                       help="The container runtime: runc (the host's kernel) or runsc (gVisor).")
app = typer.Typer(cls=Group, no_args_is_help=True, help="Hardened per-arm containers.")


@app.command("check", cls=Command)
def check(arms: list[str] = typer.Argument(None, metavar="ARM",
                                           help="Arms to check (default: all)."),
          runtime: Runtime = RUNTIME, bench_root: Path = BenchRoot, as_json: bool = Json
          ) -> None:
    """Start each arm's container, verify and print every guard, remove the container.
    Exits 1 when any arm is refused."""
    from orchestrator.sandbox import selfcheck
    from orchestrator.engine import Engine
    run_dir, checks = selfcheck.check(Engine.connect(), settings(bench_root), arms or [],
                                      runtime.value)
    if as_json:
        emit_json({"run_dir": str(run_dir), "arms": [
            {"arm": c.arm, "ok": c.ok, "refused": c.refused, "unavailable": c.unavailable,
             "guards": [dataclasses.asdict(r) for r in c.results]} for c in checks]})
    else:
        for c in checks:
            if c.unavailable:
                typer.echo(f"\n{c.arm}: unavailable ({terminal(c.unavailable)})")
                continue
            show_guards(f"{c.arm}: {'all guards verified' if c.ok else 'REFUSED'}", c.results)
        typer.echo(f"\nsnapshots: {run_dir} (re-check offline: sandbench audit {run_dir})")
    if not all(c.ok for c in checks if not c.unavailable):
        raise typer.Exit(1)


@app.command("exec", cls=Command)
def exec_(arm: str = typer.Argument(..., metavar="ARM",
                                    help="The arm whose sandbox runs the command."),
          argv: list[str] = typer.Argument(..., metavar="CMD", help="The command, after --."),
          timeout: float = typer.Option(600, metavar="SECONDS",
                                        help="Seconds before the process tree is killed."),
          runtime: Runtime = RUNTIME, bench_root: Path = BenchRoot, as_json: bool = Json
          ) -> None:
    """Run one command in a verified sandbox and keep its complete transcript."""
    from orchestrator.sandbox import selfcheck
    from orchestrator.engine import Engine
    run_dir, record = selfcheck.exec_once(Engine.connect(), settings(bench_root), arm, argv,
                                          timeout, runtime.value)
    cell = run_dir / "cells" / arm / "exec"
    if as_json:
        emit_json({"cell": str(cell), "record": record.to_json()})
        return
    t = record.timing
    typer.echo(f"outcome {record.outcome}  exit {record.exit['exit_code']}  "
               f"signal {record.exit['signal']}  "
               f"wall {t['wall_ns'] / 1e6 if t['wall_ns'] else '-'} ms  "
               f"stdout {record.stdout.bytes_total} B  stderr {record.stderr.bytes_total} B"
               + (f"  flags {','.join(record.flags)}" if record.flags else ""))
    typer.echo(f"transcript: {cell}")


@app.command("try", cls=Command)
def try_(arm: str = typer.Argument(..., metavar="ARM", help="The arm to try (arms/ARM.toml)."),
         suite_name: str = typer.Option(..., "--suite", metavar="SUITE",
                                        help="A sealed suite whose tasks the arm answers."),
         task_ids: list[str] = typer.Option(None, "--task", metavar="ID",
                                            help="Only this task (repeat it; default: all)."),
         render_only: bool = typer.Option(False, "--render-only",
                                          help="Print the commands; start nothing."),
         runtime: Runtime = typer.Option(None, "--runtime",
                                         help="The container runtime instead of the suite's."),
         bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Render the arm's command for each task as a run would, run each once in the arm's
    verified sandbox, and show what its parser reads (and, with truth, the scorer's grade)."""
    from orchestrator.sandbox import tool_try
    from orchestrator.engine import Engine
    cfg = settings(bench_root)
    planned = tool_try.plan(cfg, suite_name, arm, task_ids or [])
    tried = tool_try.rendered_only(planned) if render_only else tool_try.run(
        Engine.connect, cfg, planned, runtime.value if runtime else None)
    if as_json:
        emit_json(tried.to_json())
    else:
        typer.echo("\n".join(tool_try.text_report(tried)))
