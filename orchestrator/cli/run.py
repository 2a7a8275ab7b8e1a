"""`sandbench run SUITE`: every available arm answers every task, cold and warm."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from orchestrator.sandbox import engine_limits, runtimes
from orchestrator.cli._common import BenchRoot, Json, SuiteName, emit_json, settings
from orchestrator.sandbox.spec import DOCKER_EXEC, RESIDENT
from orchestrator.untrusted.text import terminal

# A run that finished with arms refused: it is scored like a complete one, but it is not what
# the suite asked for (1 and 2 are a failed check and bad input).
REFUSED_ARMS_EXIT = 3


class ExecPath(StrEnum):
    """--exec-path: how commands reach each container (sandbox_spec.EXEC_PATHS)."""

    resident = RESIDENT
    docker_exec = DOCKER_EXEC


class Runtime(StrEnum):
    """--runtime: the container runtime every arm runs under (runtimes.RUNTIMES)."""

    runc = runtimes.RUNC
    runsc = runtimes.RUNSC


class OnEngineRefused(StrEnum):
    """--on-engine-refused: what a refused engine does to the run (run.pool.ON_REFUSED,
    spelled here so that the help needs no engine client; test_cli holds them equal)."""

    move = "move"
    stop = "stop"


def run(suite: str = SuiteName,
        resume: Path = typer.Option(None, "--resume", file_okay=False, metavar="RUN_DIR",
                                    help="Continue this run directory: cells with a record "
                                         "are kept, the rest run."),
        jobs: int = typer.Option(1, "--jobs", min=1, metavar="N",
                                 help="How many arms run in parallel."),
        arm: list[str] = typer.Option(None, "--arm", metavar="ARM",
                                      help="Only this arm of the suite; repeat for several."),
        check_only: bool = typer.Option(False, "--dry-run", help="Print the plan and check "
                                        "everything the run needs; start nothing. Exits 2 "
                                        "(bad input) or 1 (something missing) listing every "
                                        "problem when the run could not start."),
        exec_path: ExecPath = typer.Option(None, "--exec-path",
                                           help="How commands reach each container: resident "
                                                "(requests on PID 1's attach stream; the "
                                                "default) or docker-exec (the fallback). A "
                                                "resume keeps the run's own."),
        engine_urls: list[str] = typer.Option(
            None, "--engine", envvar="SANDBENCH_ENGINES", metavar="URL",
            help="A Docker engine to run arms on, as the docker SDK takes it (unix://, ssh://, "
                 "tcp:// with TLS); repeat for several (SANDBENCH_ENGINES: space-separated). "
                 "Arms are placed whole, one engine each."),
        insecure_engine: bool = typer.Option(False, "--insecure-engine",
                                             help="Allow a plain tcp:// engine (no TLS)."),
        on_engine_refused: OnEngineRefused = typer.Option(
            OnEngineRefused.stop, "--on-engine-refused",
            help="When an engine is refused (a guard, its images, no loop devices): stop "
                 "the run, or move its arms to the other engines."),
        runtime: Runtime = typer.Option(None, "--runtime",
                                        help="Run every arm under this container runtime: "
                                             "runc (the host's kernel) or runsc (gVisor's), "
                                             "instead of the suite's [runtime] choice (runc "
                                             "unless it says). A resume keeps the run's own."),
        accept_unbounded_limits: bool = typer.Option(
            False, engine_limits.ACCEPT_OPTION,
            help="Run the arms of an engine that cannot enforce their memory, pids and CPU "
                 "limits (rootless on cgroup v1, or cgroup v2 without delegated controllers) "
                 "instead of refusing them; run.json and the disclosure say they ran "
                 "without limits."),
        bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Run a sealed suite. Arms run one after another unless --jobs says otherwise. Exits 3,
    naming each refused arm and why on stderr, when the run finished with arms its isolation
    guards refused (status refused-arms: the arms that ran are scored)."""
    from orchestrator.run import document as run_document
    from orchestrator.cli import progress
    from orchestrator.cli.dry_run import dry_run
    from orchestrator.run import preflight, runner
    from orchestrator.run.options import RunOptions
    cfg = settings(bench_root)
    options = RunOptions(suite, tuple(arm or ()), resume, jobs,
                         exec_path.value if exec_path is not None else None,
                         tuple(engine_urls or ()), insecure_engine, on_engine_refused.value,
                         runtime.value if runtime is not None else None,
                         accept_unbounded_limits)
    checked = preflight.check(cfg, options)
    if check_only:
        dry_run(checked, options, as_json)
        return
    the_plan, _ = checked.ready()
    on_cell, close = progress.for_run(the_plan.available, jobs, as_json, resume)
    try:
        run_dir = runner.execute(cfg, options, checked, on_cell)
    finally:
        close()
    doc = run_document.read(run_dir)
    refused = doc.refused_arms
    if as_json:
        emit_json({"run_dir": str(run_dir), "status": doc.status, "refused_arms": refused})
    else:
        typer.echo(f"run directory: {run_dir}")
    for name, why in refused.items():
        # A refusal of the arm's engine carries its own fix; a guard's is found by a check.
        fix = "" if why.startswith(engine_limits.GUARD + ":") else (
            f"; fix: see every guard with `sandbench sandbox check {terminal(name)}`, then: "
            f"sandbench run {terminal(suite)} --resume {terminal(run_dir)}")
        typer.echo(f"arm {terminal(name)} refused: {terminal(why)}{fix}", err=True)
    if refused:
        raise typer.Exit(REFUSED_ARMS_EXIT)
