"""Shared rendering for thin commands: an aligned text table, or JSON alone on stdout."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from orchestrator.settings import Settings, load_settings

BenchRoot = typer.Option(None, "--bench-root", envvar="SANDBENCH_ROOT",
                         help="Where corpora, the image lock and runs live (default ./bench).")
Json = typer.Option(False, "--json", help="Print only JSON on stdout.")


def settings(bench_root: Path | None) -> Settings:
    return load_settings(bench_root)


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    cells = [[str("" if r.get(c) is None else r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def emit_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))
