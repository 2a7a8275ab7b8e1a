"""One table of every figure scripts/bench measured, each beside the anchor measured in the
same run and the ratio of the two, printed and written to bench/benchmarks/figures.json, so
the README's figures are regenerated from a run, never retyped.

The anchors are what a figure means against: the tool bare on the host, `docker run --rm`,
`docker exec`, and the resident executor. A benchmark's JSON that is missing, or lacks a
figure, stops this script naming the benchmark to run.

    python -m benchmarks.figures [--markdown]    # Markdown on stdout alone: the README's table
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.corpus_growth import ARMS
from orchestrator.fsutil import atomic_write_json, read_json
from orchestrator.settings import load_settings

# Each benchmark's JSON under bench/benchmarks/ and the module that writes it.
SOURCES = {"sandbox.json": "benchmarks.sandbox_bench",
           "corpus_copy.json": "benchmarks.corpus_copy",
           "growth.json": "benchmarks.corpus_growth",
           "run.json": "benchmarks.run_bench"}


class MissingFigure(Exception):
    """A benchmark's output lacks what the table needs: run that benchmark again."""


@dataclass(frozen=True)
class Number:
    """One value from one benchmark's JSON, with where it came from."""

    value: float
    unit: str  # "ms" or "s"
    source: str  # FILE:key.key

    def text(self) -> str:
        if self.unit == "s":
            return f"{self.value:,.2f} s"
        return f"{self.value:,.1f} ms"


@dataclass(frozen=True)
class Figure:
    name: str
    value: Number
    anchor: str | None = None
    anchor_value: Number | None = None

    @property
    def ratio(self) -> float | None:
        """value / anchor; None when there is no anchor (or it is zero)."""
        if self.anchor_value is None or not self.anchor_value.value:
            return None
        return round(self.value.value / self.anchor_value.value, 2)

    def cells(self) -> list[str]:
        anchor = "" if self.anchor_value is None else f"{self.anchor}: {self.anchor_value.text()}"
        return [self.name, self.value.text(), anchor,
                "" if self.ratio is None else f"{self.ratio:.2f}"]

    def to_json(self) -> dict[str, Any]:
        anchor = self.anchor_value
        return {"figure": self.name, "value": self.value.value, "unit": self.value.unit,
                "source": self.value.source, "anchor": self.anchor,
                "anchor_value": None if anchor is None else anchor.value,
                "anchor_source": None if anchor is None else anchor.source,
                "ratio": self.ratio}


class Results:
    """The benchmarks' JSON files in one folder, each read once, on first use."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._loaded: dict[str, Any] = {}

    def _find(self, file: str, keys: tuple[str, ...]) -> Any:
        """The value at keys in file; MissingFigure names the benchmark to run."""
        rerun = f"run `python -m {SOURCES[file]}` (scripts/bench runs every benchmark)"
        if file not in self._loaded:
            if not (self.folder / file).is_file():
                raise MissingFigure(f"{self.folder / file} is missing: {rerun}")
            self._loaded[file] = read_json(self.folder / file)
        value = self._loaded[file]
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                raise MissingFigure(f"{self.folder / file} has no {'.'.join(keys)}: {rerun}")
            value = value[key]
        return value

    def number(self, file: str, unit: str, *keys: str) -> Number:
        return Number(self._find(file, keys), unit, f"{file}:{'.'.join(keys)}")

    def count(self, file: str, *keys: str) -> int:
        """A count that names what was measured (files, execs, cells)."""
        return int(self._find(file, keys))


def figures(results: Results) -> list[Figure]:
    """Every figure in the README's order: the sandbox core, corpus copies, growth with the
    corpus, then the whole demo suite."""
    def sandbox(key: str) -> Number:
        return results.number("sandbox.json", "ms", key)

    def copy(operation: str) -> Number:
        return results.number("corpus_copy.json", "s", "median_s", operation)

    def grown(arm: str, corpus: str, key: str) -> Number:
        return results.number("growth.json", "ms", "arms", arm, corpus, key)

    def suite(jobs: str, unit: str, key: str) -> Number:
        return results.number("run.json", unit, "runs", jobs, key)

    docker_run = "`docker run --rm` of `true`"
    exec_overhead = "`docker exec` of `true`, overhead"
    resident_overhead = "resident call of `true`, overhead"
    execs = results.count("sandbox.json", "execs")
    rg_files = results.count("sandbox.json", "rg_files")
    rows = [
        Figure(f"exec overhead: host bracket minus in-container wall, `true`, {execs} execs",
               sandbox("exec_overhead_median_ms"), docker_run, sandbox("docker_run_median_ms")),
        Figure("exec bracket: one `docker exec` of `true`, host side",
               sandbox("exec_bracket_median_ms"), docker_run, sandbox("docker_run_median_ms")),
        Figure("resident overhead: host bracket minus in-container wall, `true`",
               sandbox("resident_overhead_median_ms"), exec_overhead,
               sandbox("exec_overhead_median_ms")),
        Figure("resident overhead, p95", sandbox("resident_overhead_p95_ms"),
               "`docker exec` overhead, p95", sandbox("exec_overhead_p95_ms")),
        Figure("resident bracket: one call of `true` through the resident executor",
               sandbox("resident_bracket_median_ms"), "`docker exec` of `true`, bracket",
               sandbox("exec_bracket_median_ms")),
        Figure(f"`rg -n -w -c` over {rg_files:,} mounted files, in the container",
               sandbox("rg_inside_median_ms"), "host bare: the same rg on the host",
               sandbox("rg_host_median_ms")),
        Figure("rg in the container: its excess over the host (0 when faster)",
               sandbox("rg_excess_ms"), "allowed: max(1 ms, 3% of the host's)",
               sandbox("rg_allowed_ms")),
        Figure("the same rg on the host, on the arm's loop-mounted ext4",
               sandbox("rg_host_median_ms"), "host bare: a plain directory on the bench root",
               sandbox("rg_host_plain_dir_median_ms")),
        Figure("no-op `images build` (everything locked and present)",
               sandbox("noop_build_median_ms")),
    ]
    files = results.count("corpus_copy.json", "tracked_files")
    megabytes = results.count("corpus_copy.json", "on_disk_bytes") / 1e6
    rows += [
        Figure(f"per-arm copy of a MassTransit-size corpus ({files:,} files, {megabytes:.0f} MB "
               "with history), back to back", copy("make_arm_copy, back to back")),
        Figure("the same copy after `sync`", copy("make_arm_copy, after sync"),
               "back to back", copy("make_arm_copy, back to back")),
        Figure("tree digest of that corpus", copy("tree_digest of the pristine")),
    ]
    for arm in ARMS:
        big = results.count("growth.json", "arms", arm, "csharp", "tracked_files")
        small = results.count("growth.json", "arms", arm, "demo", "tracked_files")
        demo = f"the same on demo ({small:,} files)"
        rows += [
            Figure(f"{arm} references on csharp ({big:,} files): in-container wall, warm",
                   grown(arm, "csharp", "warm_wall_median_ms"), demo,
                   grown(arm, "demo", "warm_wall_median_ms")),
            Figure(f"{arm} references on csharp: host bracket, warm",
                   grown(arm, "csharp", "warm_bracket_median_ms"), demo,
                   grown(arm, "demo", "warm_bracket_median_ms")),
            Figure(f"{arm} references on csharp: overhead per cell (bracket minus wall)",
                   grown(arm, "csharp", "overhead_per_cell_median_ms"), demo,
                   grown(arm, "demo", "overhead_per_cell_median_ms")),
        ]
    cells = results.count("run.json", "runs", "1", "cells")
    rows.append(Figure(f"demo suite, {cells} cells, `--jobs 1`: wall",
                       suite("1", "s", "run_wall_s"), "its tools' own time",
                       suite("1", "s", "tool_wall_per_worker_s")))
    rows += [
        Figure("demo suite, `--jobs 2`: wall", suite("2", "s", "run_wall_s"),
               "its tools' own time ÷ 2 workers", suite("2", "s", "tool_wall_per_worker_s")),
        Figure("demo suite wall, `--jobs 2`", suite("2", "s", "run_wall_s"), "`--jobs 1`",
               suite("1", "s", "run_wall_s")),
        Figure("demo suite `--jobs 1`: before the first measured command (every arm's sandbox "
               "made and verified)", suite("1", "s", "before_first_command_s"), "its wall",
               suite("1", "s", "run_wall_s")),
        Figure("demo suite `--jobs 1`: from one cell's end to the next one's start, median",
               suite("1", "ms", "between_cells_median_ms"), resident_overhead,
               sandbox("resident_overhead_median_ms")),
    ]
    # Each arm's span minus its own tools' time (benchmarks/run_bench.py): the same figure
    # at any --jobs, since an arm's commands never overlap.
    for jobs in ("1", "2"):
        rows += [
            Figure(f"demo suite `--jobs {jobs}`: orchestration per cell (each arm's span minus "
                   "its tools' time)", suite(jobs, "ms", "orchestration_per_cell_ms"),
                   resident_overhead, sandbox("resident_overhead_median_ms")),
            Figure(f"demo suite `--jobs {jobs}`: outside every arm's commands (sandboxes made, "
                   "the run's end)", suite(jobs, "s", "outside_commands_s"), "its wall",
                   suite(jobs, "s", "run_wall_s")),
            Figure(f"demo suite `--jobs {jobs}`: path overhead per cell (bracket minus wall)",
                   suite(jobs, "ms", "overhead_per_cell_median_ms"), resident_overhead,
                   sandbox("resident_overhead_median_ms")),
        ]
    return rows


HEADERS = ["figure", "value", "anchor (measured in the same run)", "ratio"]


def plain(rows: list[Figure]) -> str:
    """Columns padded to their widest cell, numbers right-aligned."""
    table = [HEADERS, *(f.cells() for f in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADERS))]
    lines = []
    for n, row in enumerate(table):
        lines.append("  ".join([row[0].ljust(widths[0]), row[1].rjust(widths[1]),
                                row[2].ljust(widths[2]), row[3].rjust(widths[3])]).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(rows: list[Figure]) -> str:
    """The README's Benchmarks table."""
    lines = ["| " + " | ".join(HEADERS) + " |", "| --- | ---: | --- | ---: |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in f.cells()) + " |"
              for f in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true",
                        help="print the table as Markdown, for the README")
    args = parser.parse_args()
    folder = load_settings().bench_root / "benchmarks"
    try:
        rows = figures(Results(folder))
    except MissingFigure as exc:
        sys.exit(f"figures: {exc}")
    written = {name: datetime.fromtimestamp((folder / name).stat().st_mtime, UTC)
               .strftime("%Y-%m-%dT%H:%M:%SZ") for name in SOURCES}
    atomic_write_json(folder / "figures.json", {"sources": written,
                                                "figures": [f.to_json() for f in rows]})
    print(markdown(rows) if args.markdown else plain(rows))
    print(f"figures.json: {folder / 'figures.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
