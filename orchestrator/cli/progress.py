"""What `sandbench run` shows while it runs. On a terminal: one live display (cells done of
the total, the arm and cell last finished, failures so far, time elapsed and left) and a line
as each arm starts and ends. Otherwise (a pipe, CI): the same short line per arm, on stderr,
nothing that needs a terminal. With `--json`: one structured log line per cell."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from orchestrator import log
from orchestrator.run.options import Progress as OnCell
from orchestrator.run.plan import ArmPlan
from orchestrator.run.document import SETUP_CELL
from orchestrator.run.transcripts import RECORD_NAME
from orchestrator.untrusted.text import terminal

Clock = Callable[[], float]


@dataclass
class _Arm:
    started_at: float
    cells: int = 0
    failures: int = 0
    ended: bool = False


class ArmTally:
    """Each arm's start and end, derived from the run's per-cell callback alone, so the run
    loop needs no events of its own. An arm has started at its first callback and ended at
    its last planned cell. Its time counts from when a worker was free to take it (the run's
    start, or an earlier arm's end; arms take workers in plan order, `jobs` at a time), so
    the set-up before its first cell, the index build, is counted; where that moment is not
    known (an arm of a resumed run that had nothing left to do), from its first callback."""

    def __init__(self, arms: Sequence[ArmPlan], jobs: int, clock: Clock = time.monotonic):
        self._clock = clock
        self._order = [a.name for a in arms]
        self._planned = {a.name: len(a.cells) for a in arms}
        self._last_cell = {a.name: f"{a.cells[-1][0]}/{a.cells[-1][1]}" for a in arms if a.cells}
        self._free_at = [clock()] * jobs  # when a worker became free, in order
        self._arms: dict[str, _Arm] = {}

    @property
    def failures(self) -> int:
        return sum(a.failures for a in self._arms.values())

    def record(self, arm: str, cell: str, outcome: str) -> list[str]:
        """The lines this cell's report brings: the arm's start, its end, both, or none."""
        now, lines = self._clock(), []
        state = self._arms.get(arm)
        if state is None:
            taken = self._order.index(arm)
            started = self._free_at[taken] if taken < len(self._free_at) else now
            state = self._arms[arm] = _Arm(started)
            lines.append(f"{arm}: started")
        state.cells += cell != SETUP_CELL
        state.failures += outcome != "ok"
        if cell == self._last_cell.get(arm):
            state.ended = True
            self._free_at.append(now)
            lines.append(f"{arm}: {_count(state.cells, 'cell')}, "
                         f"{_count(state.failures, 'failure')}, {now - state.started_at:.1f} s")
        return lines

    def unfinished(self) -> list[str]:
        """A line for each arm that started and did not reach its last cell (the run
        stopped, or a resumed arm's last cell was already done)."""
        now = self._clock()
        return [f"{name}: stopped after {a.cells} of {self._planned[name]} cells, "
                f"{_count(a.failures, 'failure')}, {now - a.started_at:.1f} s"
                for name, a in self._arms.items() if not a.ended]


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


def live_display(arms: Sequence[ArmPlan], jobs: int, done_before: int
                 ) -> tuple[OnCell, Callable[[], None]]:
    """The terminal's display on stderr, and what closes it. While it shows, the console
    logs only warnings and errors; the run log keeps every event."""
    tally = ArmTally(arms, jobs)
    # Plain text columns (markup=False): a description is never read as rich markup, and
    # every name in it is escaped for the terminal first.
    display = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                       MofNCompleteColumn(),
                       TextColumn("{task.fields[failures]}", markup=False), TimeElapsedColumn(),
                       TextColumn("left", markup=False), TimeRemainingColumn(),
                       console=Console(stderr=True))
    task = display.add_task("starting", total=sum(len(a.cells) for a in arms),
                            completed=done_before, failures=_count(0, "failure"))
    log.console_level(logging.WARNING)
    display.start()
    one_at_a_time = threading.Lock()  # with --jobs, arms report from their own threads

    def on_cell(arm: str, cell: str, outcome: str) -> None:
        with one_at_a_time:
            for line in tally.record(arm, cell, outcome):
                display.console.print(terminal(line), markup=False, highlight=False,
                                      emoji=False)
            display.update(task, advance=0 if cell == SETUP_CELL else 1,
                           description=terminal(f"{arm} {cell}"),
                           failures=_count(tally.failures, "failure"))

    def close() -> None:
        for line in tally.unfinished():
            display.console.print(terminal(line), markup=False, highlight=False, emoji=False)
        display.stop()
        log.console_level(logging.NOTSET)
    return on_cell, close


def arm_lines(arms: Sequence[ArmPlan], jobs: int) -> tuple[OnCell, Callable[[], None]]:
    """A line on stderr as each arm starts and ends, for a pipe or CI: what the terminal's
    display prints above its bar, without the bar. Meanwhile the console logs only warnings
    and errors, as under the display; the run log keeps every event."""
    tally = ArmTally(arms, jobs)
    one_at_a_time = threading.Lock()  # with --jobs, arms report from their own threads
    log.console_level(logging.WARNING)

    def say(lines: list[str]) -> None:
        for line in lines:
            print(terminal(line), file=sys.stderr, flush=True)

    def on_cell(arm: str, cell: str, outcome: str) -> None:
        with one_at_a_time:
            say(tally.record(arm, cell, outcome))

    def close() -> None:
        say(tally.unfinished())
        log.console_level(logging.NOTSET)
    return on_cell, close


def log_lines(total: int, done_before: int) -> tuple[OnCell, Callable[[], None]]:
    """One structured log line per cell, for `--json`."""
    logger = log.get("progress")
    done = {"cells": done_before, "failures": 0}
    one_at_a_time = threading.Lock()  # with --jobs, arms report from their own threads

    def on_cell(arm: str, cell: str, outcome: str) -> None:
        with one_at_a_time:
            done["cells"] += cell != SETUP_CELL
            done["failures"] += outcome != "ok"
            logger.info("cell", arm=arm, cell=cell, outcome=outcome, done=done["cells"],
                        total=total, failures=done["failures"])
    return on_cell, lambda: None


def recorded_cells(run_dir: Path | None, arms: Sequence[ArmPlan]) -> int:
    """Cells of these arms that a resumed run has already recorded: the run skips them, so
    the count starts there."""
    if run_dir is None:
        return 0
    return sum(1 for a in arms for task, rep in a.cells
               if (run_dir / "cells" / a.name / task / str(rep) / RECORD_NAME).is_file())


def on_terminal() -> bool:
    return sys.stderr.isatty()


def for_run(arms: Sequence[ArmPlan], jobs: int, as_json: bool, resume: Path | None
            ) -> tuple[OnCell, Callable[[], None]]:
    """Log lines when JSON was asked for; else the live display on a terminal, and a line
    per arm otherwise."""
    done_before = recorded_cells(resume, arms)
    if as_json:
        return log_lines(sum(len(a.cells) for a in arms), done_before)
    if on_terminal():
        return live_display(arms, jobs, done_before)
    return arm_lines(arms, jobs)
