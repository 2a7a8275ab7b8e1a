"""`sandbench k8s export SUITE`: Kubernetes manifests equivalent to a suite's containers."""

from __future__ import annotations

from pathlib import Path

import typer

from orchestrator.cli._common import (BenchRoot, Json, SuiteName, emit_json, existing_run_dir,
                                      settings)
from orchestrator.cli._help import Command, Group

app = typer.Typer(cls=Group, no_args_is_help=True,
                  help="Kubernetes manifests for audit and hand reruns.")


@app.command("export", cls=Command)
def export(suite: str = SuiteName,
           run_dir: Path = typer.Option(None, "--run", file_okay=False, metavar="RUN_DIR",
                                        callback=existing_run_dir,
                                        help="Take the run's id, user, image ids and mount "
                                             "bounds, and refuse a Job that differs from its "
                                             "guard policy."),
           json_out: bool = Json, bench_root: Path = BenchRoot) -> None:
    """Write bench/k8s/SUITE.yaml: one Job per arm and a deny-all NetworkPolicy, validated
    against the pinned Kubernetes schema."""
    from orchestrator.exports import k8s as k8s_mod
    path, count = k8s_mod.export(settings(bench_root), suite, run_dir)
    if json_out:
        emit_json({"path": str(path), "validated": count,
                   "kubernetes_version": k8s_mod.KUBERNETES_VERSION})
        return
    typer.echo(f"wrote {path}: {count} manifests, valid for Kubernetes "
               f"{k8s_mod.KUBERNETES_VERSION}")
