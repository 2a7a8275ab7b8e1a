"""Benchmarks whose figures the README quotes: each writes bench/benchmarks/NAME.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import load_settings


def publish(name: str, found: dict[str, Any]) -> Path:
    """A benchmark's figures written atomically to bench/benchmarks/NAME.json and printed."""
    out = load_settings().bench_root / "benchmarks" / f"{name}.json"
    atomic_write_json(out, found)
    print(json.dumps(found, indent=2))
    print(f"written: {out}")
    return out
