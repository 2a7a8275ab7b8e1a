"""Setup cost, separate and never amortised into any per-task figure: install wall time (the
image build record), index build wall time (the `_setup` cell), on-disk bytes of what the arm
wrote (its state mount plus what it added to its corpus copy), and the break-even task count
against the baseline.

Break-even, in wall time: the number of tasks N after which the arm's extra one-off time
(install + index build, minus the baseline's) is paid back by its per-task saving, the median
over the tasks both were graded on of (baseline warm - arm warm). It is `immediate` when the
arm costs no more to set up and saves or ties per task, `never` when it costs more to set up
and saves nothing per task, and `ahead-until` N when it is cheaper to set up but slower per
task (the baseline catches up after N tasks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from orchestrator.run.document import ArmRecord
from orchestrator.score.numbers import median, r6

NS_PER_S = 1_000_000_000


def index_build(rep: Any | None) -> dict[str, Any] | None:
    """The index build's transcript summary, or None when the arm has no set-up step."""
    if rep is None:
        return None
    record = rep.record
    wall = record.timing.get("wall_ns")
    trusted = wall is not None and "impossible-timing" not in record.flags
    return {"argv": list(record.argv), "outcome": record.outcome, "flags": sorted(record.flags),
            "seconds": r6(Fraction(wall, NS_PER_S)) if trusted else None,
            "wall_ns": wall}


def one_off_seconds(install: float | None, index: dict[str, Any] | None) -> Fraction | None:
    if install is None:
        return None
    if index is None:
        return Fraction(repr(float(install)))
    if index["outcome"] != "ok" or index["wall_ns"] is None or "impossible-timing" in \
            index["flags"]:
        return None
    return Fraction(repr(float(install))) + Fraction(index["wall_ns"], NS_PER_S)


def break_even(arm_one_off: Fraction | None, base_one_off: Fraction | None,
               arm_warm: Mapping[str, Fraction], base_warm: Mapping[str, Fraction]
               ) -> dict[str, Any]:
    tasks = sorted(set(arm_warm) & set(base_warm))
    if arm_one_off is None or base_one_off is None:
        return {"kind": "unknown", "tasks": None, "pairs": len(tasks), "extra_setup_s": None,
                "saving_per_task_s": None,
                "why": "an install or index build time is missing or untrusted"}
    saving = median([base_warm[t] - arm_warm[t] for t in tasks])
    extra = arm_one_off - base_one_off
    out: dict[str, Any] = {"pairs": len(tasks), "extra_setup_s": r6(extra),
                           "saving_per_task_s": r6(saving), "why": None}
    if saving is None:
        return {**out, "kind": "unknown", "tasks": None,
                "why": "no task has a warm time on both sides"}
    if extra <= 0 and saving >= 0:
        return {**out, "kind": "immediate", "tasks": 0}
    if extra >= 0 and saving <= 0:
        return {**out, "kind": "never", "tasks": None}
    return {**out, "kind": "after" if extra > 0 else "ahead-until",
            "tasks": math.ceil(extra / saving)}


def no_baseline(why: str) -> dict[str, Any]:
    """The break-even of an arm when the baseline was not measured: unknown, and why."""
    return {"kind": "unknown", "tasks": None, "pairs": 0, "extra_setup_s": None,
            "saving_per_task_s": None, "why": why}


def arm_setup(arm: ArmRecord, index: dict[str, Any] | None,
              state: Mapping[str, Any] | None) -> dict[str, Any]:
    state_bytes = None if state is None else state["state_bytes"]
    added = None if state is None else state["corpus_added_bytes"]
    return {"install_seconds": r6(arm.install_seconds),
            "image_size_bytes": arm.image_size_bytes,
            "index": index, "state_bytes": state_bytes, "corpus_added_bytes": added,
            "on_disk_bytes": None if state is None
            else state["state_bytes"] + state["corpus_added_bytes"]}


DEFINITION = ("install: the arm image's build wall time from the image lock (builds run with "
              "no layer cache); index: the in-container wall time of the arm's set-up step; "
              "on disk: bytes the arm wrote under its state mount plus bytes it added to its "
              "corpus copy; break-even: the number of tasks after which the arm's extra "
              "one-off time (install + index, minus the baseline's) is paid back by the "
              "median per-task warm saving over the tasks both were graded on (after N tasks); "
              "ahead until N tasks: the arm's one-off time is below the baseline's but each "
              "task is slower, so the baseline catches up after N tasks; immediate: no more "
              "one-off time and no slower per task; never: no less one-off time and no "
              "faster per task")
