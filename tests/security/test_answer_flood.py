"""Answers as large as the exec lets them be, on the real engine: arms on the probe image
whose answer (every rep, both references tasks) is 64 MiB of distinct rg rows, 64 MiB of
blank lines, 64 MiB of JSON matches, or 50,000 rows of distinct files (under every answer
bound, a flood of files outside the truth). They run beside rg (first) and rg-late (last).
The run completes; `sandbench score` and `sandbench report`, each a process of its own
measured by the kernel (peak RSS, wall time), stay inside the per-answer budget
(`limits.ANSWER_BUDGET_MIB`, `ANSWER_BUDGET_S`); each flood past a bound is `parse-error`
naming its guard, the flood of files is graded whole and its lists cut in scores.json with
their count; rg's and rg-late's cells are those of a run without the floods; and
scores.json and results.md stay small."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator import suite
from orchestrator.engine import Engine
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.untrusted import limits
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import built, project_copy  # noqa: F401 (the fixture)
from tests.security.conftest import TASKS, probe_arm, write_suite
from tests.security.test_hostile_output import _graded

pytestmark = pytest.mark.integration
# Under the exec's 64 MiB stream cap, so every byte is kept and graded.
SIZE = (64 << 20) - (64 << 10)
FILES = 50_000
WRITE = "import sys\nw = sys.stdout.buffer.write\n"
# Each arm's one command for both references tasks: python3 on the probe image printing its
# answer (no brace in it: an arm's argv reads {name} as a placeholder).
ROWS = WRITE + r"""i = n = 0
while n < LIMIT:
    b = b''.join(b'src/flood/f%08d.cs:%d:Money x%d;\n' % (j, j % 999 + 1, j)
                 for j in range(i, i + 10000))
    w(b)
    n += len(b)
    i += 10000
""".replace("LIMIT", str(SIZE - (1 << 20)))
ITEMS = WRITE + r"""o, c = bytes([123]), bytes([125])
w(o + b'"results": [')
w(b', '.join(o + b'"file": "f%d", "line": 1, "text": "t"' % i + c for i in range(COUNT)))
w(b']' + c)
""".replace("COUNT", str(SIZE // 48))
FLOODS = {
    "h-rows": ("rg", ROWS, "too-many-rows"),
    "h-lines": ("rg", WRITE + f"w(b'\\n' * {SIZE})", "too-many-lines"),
    "h-items": ("code-index-mcp", ITEMS, "too-many-items"),
    "h-files": ("rg", WRITE + "w(b''.join(b'src/many/f%05d.cs:1:Money m;\\n' % i "
                f"for i in range({FILES})))", None),
}
HOSTILE = tuple(FLOODS)


@dataclass(frozen=True)
class Measured:
    exit_code: int
    seconds: float
    peak_mib: float
    output: str


def _measure(argv: list[str]) -> Measured:
    """One `sandbench` command in a process of its own: its exit status, wall time and peak
    resident memory as the kernel counted them (wait4)."""
    started = time.monotonic()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("sandbench")), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measured(proc.returncode, time.monotonic() - started, usage.ru_maxrss / 1024,
                    output.decode("utf-8", "replace"))


def _arm_toml(name: str) -> str:
    parser, script, _ = FLOODS[name]
    return probe_arm("tests/security/test_answer_flood.py", name,
                     ["python3", "-c", script, "{symbol}"], parser=parser)


@pytest.fixture(scope="module")
def runs(engine: Engine, built: Settings,  # noqa: F811
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = project_copy(built, tmp_path_factory.mktemp("answer-flood"))
    arms = settings.project_root / "arms"
    shutil.copy2(arms / "rg.toml", arms / "rg-late.toml")
    for name in HOSTILE:
        (arms / f"{name}.toml").write_text(_arm_toml(name))
    write_suite(settings.project_root, "flood", ["rg", *HOSTILE, "rg-late"], TASKS, 120)
    write_suite(settings.project_root, "clean", ["rg", "rg-late"], TASKS)
    for name in ("flood", "clean"):
        suite.seal(suite.load_suite(settings.suites_dir, name), settings)
    flood = runner.run(settings, RunOptions("flood"), [pool.one(engine)])
    score = _measure(["score", str(flood), "--suite-dir", str(settings.suite_dir("flood")),
                      "--bench-root", str(settings.bench_root)])
    report = _measure(["report", str(flood)])
    clean = runner.run(settings, RunOptions("clean"), [pool.one(engine)])
    yield {"run": flood, "score": score, "report": report,
           "scores": json.loads((flood / "scores.json").read_text(encoding="utf-8")),
           "clean": scorer.score_run(clean, settings.suite_dir("clean"))}


def _cell(scores: dict[str, Any], arm: str, task: str) -> dict[str, Any]:
    (cell,) = [c for c in scores["cells"] if c["arm"] == arm and c["task"] == task]
    return cell


def test_the_run_completes_with_every_flood_delivered_whole(runs: dict[str, Any]) -> None:
    assert json.loads((runs["run"] / "run.json").read_text())["status"] == "complete"
    for name in ("h-rows", "h-lines", "h-items"):
        for task in TASKS:
            record = json.loads((runs["run"] / "cells" / name / task / "0" /
                                 "record.json").read_text())
            assert record["outcome"] == "ok", (name, record["outcome"])
            assert not record["stdout"]["truncated"]
            assert record["stdout"]["bytes_kept"] > 60 << 20, (name, record["stdout"])


def test_score_and_report_stay_inside_the_answer_budget(runs: dict[str, Any]) -> None:
    # Each flood's two cells print the same bytes in both reps: one parse per cell.
    answers = sum(1 for name in HOSTILE for _ in TASKS)
    for step in ("score", "report"):
        measured: Measured = runs[step]
        assert measured.exit_code == 0, (step, measured.output[-2000:])
        assert measured.peak_mib < limits.ANSWER_BUDGET_MIB, (step, measured)
        assert measured.seconds < limits.ANSWER_BUDGET_S * answers, (step, measured)


def test_each_flood_past_a_bound_is_a_parse_error_naming_its_guard(
        runs: dict[str, Any]) -> None:
    scores = runs["scores"]
    for name, (_, _, guard) in FLOODS.items():
        if guard is None:
            continue
        for task in TASKS:
            cell = _cell(scores, name, task)
            assert (cell["verdict"], cell["failure"]) == ("wrong", "parse-error"), (name, cell)
            assert cell["parse_error"].startswith(guard + ":"), (name, cell["parse_error"])
            assert cell["grade"]["recall"] == 0.0 and cell["grade"]["answer"] == []
        assert scores["failures"][name]["parse-error"] == len(TASKS)


def test_a_flood_of_files_is_graded_whole_and_its_lists_cut(runs: dict[str, Any]) -> None:
    for task in TASKS:
        cell = _cell(runs["scores"], "h-files", task)
        grade = cell["grade"]
        assert (cell["verdict"], cell["failure"], grade["files_named"]) == ("wrong", None, FILES)
        assert grade["precision"] == 0.0 and cell["reach"]["rows"] == FILES
        assert len(grade["answer"]) == len(grade["outside"]) == limits.DOCUMENT_LIST_MAX_ITEMS
        assert grade["answer"][0] == "src/many/f00000.cs"
        assert grade["lists_cut"] == {"answer": FILES, "outside": FILES}
        assert len(cell["reach"]["first_failures"]) == 3


def test_the_other_arms_cells_are_those_of_a_run_without_the_floods(
        runs: dict[str, Any]) -> None:
    for arm in ("rg", "rg-late"):
        assert _graded(runs["scores"], arm) == _graded(runs["clean"], arm), arm
        assert {c["verdict"] for c in runs["scores"]["cells"] if c["arm"] == arm} == {"correct"}


def test_the_documents_stay_small(runs: dict[str, Any]) -> None:
    # The clean run's scores.json is ~40 KB; the flood's lists add at most 1,000 paths each.
    sizes = {name: (runs["run"] / name).stat().st_size
             for name in ("scores.json", "results.md", "results.html")}
    assert sizes["scores.json"] < 2 << 20, sizes
    assert sizes["results.md"] < 512 << 10, sizes
    assert "... 49,990 more (the first 1,000 in scores.json)" in (
        runs["run"] / "results.md").read_text(encoding="utf-8")
