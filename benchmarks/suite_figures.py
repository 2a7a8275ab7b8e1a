"""The figures of real-corpus suite runs, as one Markdown table each, from their run
directories alone (run.json, scores.json, the records): run wall time, each arm's set-up
(index build) time, the largest peak RSS of any of its cells, payload bytes per kind (median
of the tasks' cold stdout), and the scorecard.

    python -m benchmarks.suite_figures bench/runs/RUN_DIR [RUN_DIR...]

scripts/bench does not run the real-corpus suites (they need the corpora fetched, and the
csharp run takes minutes); the README's figures are this script's output, pasted."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.kinds import ALL_KINDS as KINDS


def _seconds(run: dict[str, Any]) -> float:
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return (datetime.strptime(run["finished_at"], fmt)
            - datetime.strptime(run["started_at"], fmt)).total_seconds()


def _peak_rss_mib(run_dir: Path, arm: str) -> float | None:
    peaks = [json.loads(p.read_text())["timing"].get("maxrss_kb") or 0
             for p in (run_dir / "cells" / arm).rglob("record.json")]
    return round(max(peaks) / 1024, 1) if peaks else None


def figures(run_dir: Path) -> str:
    run = json.loads((run_dir / "run.json").read_text())
    scores = json.loads((run_dir / "scores.json").read_text())
    lines = [f"**{run['suite']['name']}** on {run['corpus']['repo']} @ "
             f"`{run['corpus']['sha'][:12]}` ({run['corpus']['tracked_files']} files): "
             f"run wall {_seconds(run):.0f} s, `{run_dir.name}`", "",
             "| arm | set-up s | peak RSS MiB | payload bytes (median) per kind | correct / "
             "partial / wrong / not attempted |", "| --- | ---: | ---: | --- | --- |"]
    for arm, summary in scores["summary"].items():
        if run["arms"].get(arm, {}).get("unavailable"):
            continue
        setup = scores["setup"].get(arm, {}).get("index") or {}
        payload = ", ".join(f"{k} {summary[k]['cost']['bytes_median']:,.0f}"
                            for k in KINDS if summary.get(k, {}).get("cost", {}).get("n"))
        c = summary["all"]["counts"]
        lines.append(f"| {arm} | {setup.get('seconds', 0) or 0:.1f} | "
                     f"{_peak_rss_mib(run_dir, arm)} | {payload or '-'} | {c['correct']} / "
                     f"{c['partial']} / {c['wrong']} / {c['not_attempted']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    for arg in argv:
        print(figures(Path(arg)))


if __name__ == "__main__":
    main(sys.argv[1:])
