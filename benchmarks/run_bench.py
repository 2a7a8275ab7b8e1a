"""The whole demo suite, timed twice in one run: every shipped arm, 1 cold + N warm per task,
once with `--jobs 1` and once with `--jobs 2`, on this host.

Each figure is defined so that it means the same at any `--jobs` (arms run whole, each on one
worker, its commands one after another; with two workers two arms' commands overlap):

- `run_wall_s`: the run's wall time; `tool_wall_s`: the tools' own time (the in-container
  wall of every exec, the index builds included), summed over every arm; and
  `tool_wall_per_worker_s`, that sum over `jobs`: the least wall the tools alone would take
  were the workers never idle, which the run's wall stands against.
- `orchestration_per_cell_ms`: for each arm, the span from its first command's start to its
  last command's end minus its tools' own time (what the orchestrator spent between and
  around that arm's calls: transcripts, records, progress, the path into the container),
  summed over the arms and divided by the cells. An arm's commands never overlap, so it is
  never negative, whatever the workers. (The run's wall minus the summed tools' time is not
  used: with two arms at a time it goes negative.)
- `outside_commands_s`: the run's wall minus the time at least one arm was between its first
  and last command: sandboxes made and verified before, and the run's end after.
- `overhead_per_cell_median_ms`: the median host bracket minus in-container wall of one exec;
  `before_first_command_s`: the time before the first measured command (every arm's sandbox
  made); `between_cells_median_ms`: the median time between one cell's end and the same
  arm's next start.

The ratio of the two walls is the figure `--jobs 2` is for. Needs the images built and the
demo corpus fetched (scripts/demo does both).

    python -m benchmarks.run_bench
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator import log
from orchestrator.engine import Engine
from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import Settings, load_settings
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions

JOBS = (1, 2)


def timed_run(engine: Engine, settings: Settings, jobs: int) -> dict[str, Any]:
    """One run of the demo suite and what its records say about where the time went."""
    began_at = datetime.now(UTC)
    began = time.monotonic()
    run_dir = runner.run(settings, RunOptions("demo", jobs=jobs), [pool.one(engine)])
    return where_time_went(Path(run_dir), time.monotonic() - began, began_at, jobs)


def where_time_went(run_dir: Path, total: float, began_at: datetime,
                    jobs: int) -> dict[str, Any]:
    """A finished run's wall (`total` seconds from `began_at`) set against its records."""
    paths = sorted((run_dir / "cells").rglob("record.json"))
    # One record per command the helper ran (set-ups, cells, MCP sessions); an MCP arm's
    # per-call records are derived from its session's and carry `mcp`: counted as cells, but
    # their time is the session's, counted once.
    execs = [r for r in map(_read, paths) if not r.get("mcp")]
    answered = sum(1 for p in paths if p.parent.name.isdigit())
    tool_s = sum(r["timing"]["wall_ns"] for r in execs) / 1e9
    overhead = [r["timing"]["host_bracket_ns"] - r["timing"]["wall_ns"] for r in execs]
    first_command = min(_started(r) for r in execs)
    spans = _arm_spans(execs)
    orchestration = sum(end - start for start, end in spans.values()) - tool_s
    return {
        "run_dir": str(run_dir), "jobs": jobs, "cells": answered,
        "arms": sorted(spans),
        "run_wall_s": round(total, 2), "tool_wall_s": round(tool_s, 2),
        "tool_wall_per_worker_s": round(tool_s / jobs, 2),
        "orchestration_s": round(orchestration, 2),
        "orchestration_per_cell_ms": round(orchestration / answered * 1000, 1),
        "outside_commands_s": round(total - _covered(spans.values()), 2),
        "overhead_per_cell_median_ms": round(statistics.median(overhead) / 1e6, 1),
        "before_first_command_s": round((first_command - began_at).total_seconds(), 2),
        "between_cells_median_ms": round(statistics.median(_gaps(execs)) * 1000, 2),
    }


def _arm_spans(records: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Each arm's first command's start and last command's end, in seconds on the records'
    clock (a command ends at its start plus its host bracket)."""
    spans: dict[str, tuple[float, float]] = {}
    for r in records:
        start = _started(r).timestamp()
        end = start + r["timing"]["host_bracket_ns"] / 1e9
        earliest, latest = spans.get(r["arm"], (start, end))
        spans[r["arm"]] = (min(earliest, start), max(latest, end))
    return spans


def _covered(spans: Iterable[tuple[float, float]]) -> float:
    """Seconds inside at least one of `spans` (their union's length)."""
    covered, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return covered


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _started(record: dict[str, Any]) -> datetime:
    return datetime.strptime(record["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _gaps(records: list[dict[str, Any]]) -> list[float]:
    """Seconds from the end of one exec's host bracket to the start of the arm's next: what
    the orchestrator spends per cell outside the call (transcript files, record, progress)."""
    gaps = []
    for arm in {r["arm"] for r in records}:
        mine = sorted((r for r in records if r["arm"] == arm), key=_started)
        gaps += [(_started(b) - _started(a)).total_seconds()
                 - a["timing"]["host_bracket_ns"] / 1e9
                 for a, b in zip(mine, mine[1:], strict=False)]
    return gaps


def main() -> None:
    log.configure(stream=open("/dev/null", "w"))  # noqa: SIM115 - the log lives as long as the process
    settings = load_settings()
    engine = Engine.connect()
    runs = {str(jobs): timed_run(engine, settings, jobs) for jobs in JOBS}
    figures = {"runs": runs,
               "jobs2_over_jobs1_wall": round(runs["2"]["run_wall_s"] / runs["1"]["run_wall_s"],
                                              3)}
    atomic_write_json(settings.bench_root / "benchmarks" / "run.json", figures)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
