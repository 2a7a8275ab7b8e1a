"""Cost without a model in the loop: the payload bytes of the captured stdout of the graded
invocation, and `tokens = ceil(bytes / 4)`, a proxy and labelled as one. No model's token
counter is ever read here, so nothing of that kind can land in the same table.

The cost ratio is paired: for each task both the baseline and the arm were graded on, the
baseline's bytes divided by the arm's (above 1: the arm's answer is smaller), then the median
of those per-task ratios. The ratio of the two medians over the same tasks is published beside
it; the two disagree when they fall on different sides of 1 or differ by more than 10% of the
larger, and a disagreement is part of the result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from orchestrator.score.numbers import median, r6

BYTES_PER_TOKEN = 4
DISAGREE_RELATIVE = Fraction(1, 10)
UNIT = "stdout payload bytes; tokens = ceil(bytes / 4), a proxy, not a model's token counter"


def tokens(payload_bytes: int) -> int:
    return math.ceil(payload_bytes / BYTES_PER_TOKEN)


def cell_cost(record: Any) -> dict[str, Any]:
    """The bytes the tool wrote to stdout (all of them, even past the kept cap)."""
    total = record.stdout.bytes_total
    return {"stdout_bytes": total, "tokens": tokens(total), "truncated": record.stdout.truncated}


def _side(value: Fraction) -> int:
    return (value > 1) - (value < 1)


def disagreement(median_of_ratios: Fraction | None,
                 ratio_of_medians: Fraction | None) -> str | None:
    """Why the two forms disagree, or None when they agree (or one is undefined)."""
    if median_of_ratios is None or ratio_of_medians is None:
        return None
    if _side(median_of_ratios) != _side(ratio_of_medians):
        return "the two forms fall on different sides of 1"
    larger = max(median_of_ratios, ratio_of_medians)
    if larger > 0 and abs(median_of_ratios - ratio_of_medians) / larger > DISAGREE_RELATIVE:
        return "the two forms differ by more than 10% of the larger"
    return None


def paired_ratio(baseline: Mapping[str, int], arm: Mapping[str, int]) -> dict[str, Any]:
    """Both forms over the tasks both sides have a cost for; `arm` bytes of 0 leave the
    ratio undefined for that task, which is counted and excluded from both forms."""
    tasks = sorted(set(baseline) & set(arm))
    defined = [t for t in tasks if arm[t] > 0]
    per_task = {t: Fraction(baseline[t], arm[t]) for t in defined}
    mor = median(list(per_task.values()))
    base_median = median([baseline[t] for t in defined])
    arm_median = median([arm[t] for t in defined])
    rom = None if not arm_median or base_median is None else base_median / arm_median
    return {"pairs": len(defined), "undefined": len(tasks) - len(defined),
            "median_of_ratios": r6(mor), "ratio_of_medians": r6(rom),
            "disagreement": disagreement(mor, rom),
            "per_task": {t: r6(v) for t, v in per_task.items()}}


def band_cost(costs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"n": len(costs),
            "tokens_median": r6(median([c["tokens"] for c in costs])),
            "bytes_median": r6(median([c["stdout_bytes"] for c in costs])),
            "bytes_total": sum(c["stdout_bytes"] for c in costs)}


DEFINITION = ("cost of a task: the bytes its graded (cold) invocation wrote to stdout, and "
              "tokens = ceil(bytes / 4) as a proxy; paired ratio per task = baseline bytes / "
              "arm bytes over the tasks both were graded on (above 1: the arm's answer is "
              "smaller); both the median of the per-task ratios and the ratio of the medians "
              "are published; a task whose arm printed 0 bytes has no ratio and is counted "
              "apart (tasks with no ratio); the two forms disagree when on different sides of "
              "1 or more than 10% apart (relative to the larger)")
