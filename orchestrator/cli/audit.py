"""`sandbench audit RUN_DIR`: re-check a run's stored guard snapshots offline."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from orchestrator.cli._common import Json, emit_json, run_dir_argument, show_guards


def audit(run_dir: Path = run_dir_argument("A run directory."), as_json: bool = Json) -> None:
    """Recompute every guard from the stored snapshots, with no engine. Exits 1 when a guard
    fails, an arm was never probed, or the stored verdict differs from the recomputed one."""
    from orchestrator.isolation import guards
    audited = guards.audit(run_dir)
    if as_json:
        emit_json([{"arm": a.arm, "ok": a.ok, "probed": a.probed,
                    "matches_stored": a.matches_stored,
                    "guards": [dataclasses.asdict(r) for r in a.results]} for a in audited])
    else:
        for a in audited:
            state = "ok" if a.ok else "FAILED"
            notes = [] if a.probed else ["never probed: refused from outside"]
            if not a.matches_stored:
                notes.append("stored verdict differs from the recomputed one")
            show_guards(f"{a.arm}: {state}" + (f" ({'; '.join(notes)})" if notes else ""),
                        a.results)
    if not audited or not all(a.ok for a in audited):
        raise typer.Exit(1)
