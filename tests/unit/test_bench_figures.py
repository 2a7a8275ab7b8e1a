"""benchmarks/figures.py: every figure beside its anchor, and a missing benchmark named,
never skipped; the run's figures (benchmarks/run_bench.py) mean the same at any --jobs, and
rg's bound (benchmarks/sandbox_bench.py) is on its excess over the host only."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks import figures, run_bench
from benchmarks.sandbox_bench import rg_fidelity
from benchmarks.corpus_growth import ARMS


def _per_corpus(files: int, wall: float) -> dict[str, Any]:
    return {"tracked_files": files, "warm_wall_median_ms": wall,
            "warm_bracket_median_ms": wall + 60, "overhead_per_cell_median_ms": 60.0}


def _run(jobs: int, wall: float) -> dict[str, Any]:
    return {"jobs": jobs, "cells": 192, "run_wall_s": wall, "tool_wall_s": 30.0,
            "tool_wall_per_worker_s": 30.0 / jobs, "orchestration_per_cell_ms": 50.0,
            "outside_commands_s": 2.0, "overhead_per_cell_median_ms": 45.0,
            "before_first_command_s": 1.5, "between_cells_median_ms": 1.2}


OUTPUTS = {
    "sandbox.json": {"execs": 40, "rg_files": 3000, "exec_overhead_median_ms": 50.0,
                     "exec_overhead_p95_ms": 60.0, "exec_bracket_median_ms": 52.0,
                     "resident_overhead_median_ms": 5.0, "resident_overhead_p95_ms": 9.0,
                     "resident_bracket_median_ms": 7.0, "docker_run_median_ms": 200.0,
                     "rg_inside_median_ms": 36.0, "rg_host_median_ms": 35.0,
                     "rg_difference_ms": 1.0, "rg_excess_ms": 1.0, "rg_allowed_ms": 3.5,
                     "rg_host_plain_dir_median_ms": 34.0, "noop_build_median_ms": 16.0},
    "corpus_copy.json": {"tracked_files": 5800, "on_disk_bytes": 186_000_000,
                         "median_s": {"make_arm_copy, back to back": 0.5,
                                      "make_arm_copy, after sync": 1.0,
                                      "tree_digest of the pristine": 0.25}},
    "growth.json": {"arms": {arm: {"demo": _per_corpus(44, 10.0),
                                   "csharp": _per_corpus(5849, 40.0)} for arm in ARMS}},
    "run.json": {"runs": {"1": _run(1, 40.0), "2": _run(2, 30.0)}},
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, data in OUTPUTS.items():
        (tmp_path / name).write_text(json.dumps(data))
    return tmp_path


def _by_name(folder: Path) -> dict[str, figures.Figure]:
    return {f.name: f for f in figures.figures(figures.Results(folder))}


def test_every_figure_stands_beside_its_anchor(folder: Path) -> None:
    rows = _by_name(folder)
    exec_row = rows["exec overhead: host bracket minus in-container wall, `true`, 40 execs"]
    assert exec_row.cells() == [exec_row.name, "50.0 ms", "`docker run --rm` of `true`: 200.0 ms",
                                "0.25"]
    jobs = rows["demo suite wall, `--jobs 2`"]
    assert (jobs.value.value, jobs.anchor_value.value, jobs.ratio) == (30.0, 40.0, 0.75)
    growth = rows["rg references on csharp (5,849 files): in-container wall, warm"]
    assert growth.ratio == 4.0 and growth.anchor == "the same on demo (44 files)"


def test_the_resident_path_stands_beside_docker_exec(folder: Path) -> None:
    rows = _by_name(folder)
    resident = rows["resident overhead: host bracket minus in-container wall, `true`"]
    assert resident.cells()[1:] == ["5.0 ms", "`docker exec` of `true`, overhead: 50.0 ms",
                                    "0.10"]
    assert rows["resident overhead, p95"].ratio == 0.15
    for jobs in ("1", "2"):
        per_cell = rows[f"demo suite `--jobs {jobs}`: orchestration per cell (each arm's span "
                        "minus its tools' time)"]
        assert per_cell.anchor == "resident call of `true`, overhead"
    # With two workers the wall stands against the tools' time shared by the two.
    wall = rows["demo suite, `--jobs 2`: wall"]
    assert (wall.anchor_value and wall.anchor_value.value, wall.ratio) == (15.0, 2.0)


@pytest.mark.parametrize("broken", ["missing file", "missing key", "missing resident"])
def test_a_missing_figure_names_the_benchmark_to_run(folder: Path, broken: str) -> None:
    bench = "benchmarks.corpus_growth"
    if broken == "missing file":
        (folder / "growth.json").unlink()
    elif broken == "missing key":
        (folder / "growth.json").write_text(json.dumps({"arms": {}}))
    else:
        sandbox = dict(OUTPUTS["sandbox.json"])
        del sandbox["resident_overhead_median_ms"]
        (folder / "sandbox.json").write_text(json.dumps(sandbox))
        bench = "benchmarks.sandbox_bench"
    with pytest.raises(figures.MissingFigure, match=f"python -m {bench}"):
        figures.figures(figures.Results(folder))


def test_the_markdown_table_has_one_row_per_figure(folder: Path) -> None:
    rows = figures.figures(figures.Results(folder))
    table = figures.markdown(rows).splitlines()
    assert table[0] == "| figure | value | anchor (measured in the same run) | ratio |"
    assert len(table) == 2 + len(rows)
    assert all(line.startswith("| ") and line.endswith(" |") for line in table)


BEGAN = datetime(2026, 1, 1, tzinfo=UTC)


def _cell(run_dir: Path, arm: str, rep: int, start_s: float) -> None:
    """One cell's record: 0.3 s in the container, 0.4 s host bracket, from `start_s`."""
    at = (BEGAN + timedelta(seconds=start_s)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    path = run_dir / "cells" / arm / "task" / str(rep) / "record.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"arm": arm, "started_at": at, "timing": {
        "wall_ns": 300_000_000, "host_bracket_ns": 400_000_000}}))


@pytest.mark.parametrize(("jobs", "b_starts", "wall", "outside"),
                         [(1, 1.0, 2.2, 0.4), (2, 0.0, 1.0, 0.1)])
def test_orchestration_per_cell_is_the_same_at_any_jobs(
        tmp_path: Path, jobs: int, b_starts: float, wall: float, outside: float) -> None:
    """Two arms of two cells, each cell 0.3 s of tool in a 0.4 s bracket, 0.1 s apart: one
    after the other, or side by side. Each arm's span is 0.9 s, 0.3 s of it not the tool's:
    150 ms per cell either way. Side by side, the run's 1.0 s wall is less than the tools'
    1.2 s: the wall minus the summed tools' time would be negative."""
    for arm, first in (("a", 0.0), ("b", b_starts)):
        _cell(tmp_path, arm, 0, first)
        _cell(tmp_path, arm, 1, first + 0.5)
    got = run_bench.where_time_went(tmp_path, wall, BEGAN, jobs)
    assert got["orchestration_per_cell_ms"] == 150.0
    assert got["orchestration_s"] == 0.6
    assert got["tool_wall_s"] == 1.2 and got["tool_wall_per_worker_s"] == round(1.2 / jobs, 2)
    assert got["outside_commands_s"] == outside
    assert got["between_cells_median_ms"] == 100.0


@pytest.mark.parametrize(("inside_ms", "within"), [(30.0, True), (35.0, True), (36.0, True),
                                                   (36.1, False)])
def test_rg_is_out_of_bound_only_when_slower_than_the_host_by_more_than_allowed(
        inside_ms: float, within: bool) -> None:
    """The host's 35 ms allows 1.05 ms more (3%); 5 ms faster in the container is within."""
    got = rg_fidelity(inside_ms * 1e6, 35e6)
    assert got["rg_within_bound"] is within
    assert got["rg_allowed_ms"] == 1.05
    assert got["rg_excess_ms"] == max(round(inside_ms - 35.0, 3), 0)
