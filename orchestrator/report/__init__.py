"""The results document of a scored run: `results.md` rendered from `RUN_DIR/scores.json`
alone, the same bytes every time it is rendered from the same scores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.fsutil import atomic_write_text
from orchestrator.report.markdown import check, render_markdown
from orchestrator.report.scores import load_scores
from orchestrator.score.scorer import SCORES_NAME

RESULTS_NAME = "results.md"


@dataclass(frozen=True)
class Report:
    scores: dict[str, Any]
    markdown: Path
    written: bool


def read(run_dir: Path) -> dict[str, Any]:
    return load_scores(Path(run_dir) / SCORES_NAME)


def write(run_dir: Path, output: Path | None = None) -> Report:
    """Render results.md (beside scores.json unless `output` says where) atomically."""
    scores = read(run_dir)
    target = Path(output) if output is not None else Path(run_dir) / RESULTS_NAME
    text = render_markdown(scores)
    unchanged = target.is_file() and target.read_text(encoding="utf-8") == text
    if not unchanged:
        atomic_write_text(target, text)
    return Report(scores, target, not unchanged)


def differences(run_dir: Path, output: Path | None = None) -> tuple[Path, list[str]]:
    """Render again and compare with the committed document; empty when byte-identical."""
    scores = read(run_dir)
    target = Path(output) if output is not None else Path(run_dir) / RESULTS_NAME
    if not target.is_file():
        return target, [f"{target} does not exist"]
    committed = target.read_bytes()
    rendered = render_markdown(scores).encode("utf-8")
    if committed == rendered:
        return target, []
    return target, list(check(rendered.decode("utf-8"),
                              committed.decode("utf-8", "replace"))) or ["bytes differ"]


__all__ = ["RESULTS_NAME", "Report", "differences", "read", "render_markdown",
           "write"]
