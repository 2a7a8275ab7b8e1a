"""benchmarks/figures.py: every figure beside its anchor, and a missing benchmark named,
never skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import figures
from benchmarks.corpus_growth import ARMS


def _per_corpus(files: int, wall: float) -> dict[str, Any]:
    return {"tracked_files": files, "warm_wall_median_ms": wall,
            "warm_bracket_median_ms": wall + 60, "overhead_per_cell_median_ms": 60.0}


def _run(jobs: int, wall: float) -> dict[str, Any]:
    return {"jobs": jobs, "cells": 192, "run_wall_s": wall, "tool_wall_s": 30.0,
            "orchestration_per_cell_ms": 50.0, "overhead_per_cell_median_ms": 45.0,
            "before_first_command_s": 1.5, "between_cells_median_ms": 1.2}


OUTPUTS = {
    "sandbox.json": {"execs": 40, "rg_files": 3000, "exec_overhead_median_ms": 50.0,
                     "exec_overhead_p95_ms": 60.0, "exec_bracket_median_ms": 52.0,
                     "resident_overhead_median_ms": 5.0, "resident_overhead_p95_ms": 9.0,
                     "resident_bracket_median_ms": 7.0, "docker_run_median_ms": 200.0,
                     "rg_inside_median_ms": 36.0, "rg_host_median_ms": 35.0,
                     "rg_difference_ms": 1.0, "rg_allowed_ms": 3.5,
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
    per_cell = rows["demo suite `--jobs 1`: orchestration per cell (wall minus tools' time)"]
    assert per_cell.anchor == "resident call of `true`, overhead"
    # Two arms at once: their tools' times add up past the wall, so no such row for --jobs 2.
    assert "demo suite `--jobs 2`: orchestration per cell (wall minus tools' time)" not in rows


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
