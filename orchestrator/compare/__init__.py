"""`sandbench compare RUN_A RUN_B`: Run 0 (A, the baseline) beside Run 1 (B), from the two
runs' scores alone: per arm, kind and task the grades and their transitions, recall and
precision deltas, paired cost and time ratios, answers that changed under the same grade, and
every difference in what the runs ran on. The model (`model.build`) is JSON with documented,
stable keys; Markdown and HTML are rendered from it, the same bytes on every rerender."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.compare import render
from orchestrator.compare.inputs import ScoredRun, comparability, read_scored_run
from orchestrator.compare.model import build
from orchestrator.fsutil import atomic_write_text, canonical_json

# The documents `--output DIR` writes, by format.
FILES = {"md": "compare.md", "html": "compare.html", "json": "compare.json"}


def compare(run_a: Path, run_b: Path, suites_dir: Path) -> dict[str, Any]:
    """The comparison model of two scored runs, or one InputError saying why not."""
    a, b = read_scored_run(run_a), read_scored_run(run_b)
    return build(a, b, comparability(a, b, suites_dir))


def rendered(model: dict[str, Any], fmt: str) -> str:
    """The model as one format: md, html or json (canonical JSON)."""
    if fmt == "json":
        return canonical_json(model)
    return render.markdown(model) if fmt == "md" else render.html(model)


def write(model: dict[str, Any], directory: Path) -> list[Path]:
    """Every format into DIRECTORY (created if need be), each file written atomically."""
    written = []
    for fmt, name in FILES.items():
        target = Path(directory) / name
        atomic_write_text(target, rendered(model, fmt))
        written.append(target)
    return written


__all__ = ["FILES", "ScoredRun", "build", "comparability", "compare", "read_scored_run",
           "rendered", "write"]
