"""Run directories: one per run under bench/runs/, named so that they sort by time."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path


def new_run_id(kind: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{kind}-{stamp}-{secrets.token_hex(3)}"


def create(runs_dir: Path, kind: str) -> tuple[str, Path]:
    run_id = new_run_id(kind)
    path = runs_dir / run_id
    path.mkdir(parents=True, exist_ok=False)
    return run_id, path
