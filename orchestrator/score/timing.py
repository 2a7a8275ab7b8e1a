"""Wall time, cold and warm. Cold is the first invocation after the index build (REP 0); warm
is the median of the repeats (REP 1..N). Neither is dropped for being unflattering: every raw
sample is kept, outliers are flagged, never removed.

The figure is the in-container wall time of the tool's process tree (`timing.wall_ns` of the
record). A sample the record flags `impossible-timing` is kept but enters no median: sandbench
never trusts a figure only a forger could have produced. A sample whose exec timed out is a
lower bound and is kept in the median (dropping it would flatter the arm), marked as such.

Outliers: a warm sample whose modified z-score |x - median| / (1.4826 * MAD) over the warm
samples of its own cell exceeds 10. With MAD = 0, any sample off the median is an outlier.
Only a cell with at least MIN_OUTLIER_SAMPLES warm samples flags any: with 3 the MAD is the
smaller of two distances to the median, so two close samples make any third one an "outlier"
(z in the hundreds). The z of every sample is kept either way. The cold sample is one per
cell: it has no population of its own to be an outlier in.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from orchestrator.score.numbers import median, r6

MAD_SCALE = Fraction("1.4826")
OUTLIER_Z = 10
MIN_OUTLIER_SAMPLES = 10
NS_PER_MS = 1_000_000


def trusted(sample: dict[str, Any]) -> bool:
    return sample["wall_ns"] is not None and "impossible-timing" not in sample["flags"]


def modified_z(values: Sequence[int]) -> list[Fraction | None]:
    """|x - median| / (1.4826 MAD) per value; None stands for infinity (MAD 0, x off median)."""
    if not values:
        return []
    mid = median(values)
    assert mid is not None
    mad = median([abs(Fraction(v) - mid) for v in values])
    assert mad is not None
    out: list[Fraction | None] = []
    for v in values:
        deviation = abs(Fraction(v) - mid)
        if mad == 0:
            out.append(Fraction(0) if deviation == 0 else None)
        else:
            out.append(deviation / (MAD_SCALE * mad))
    return out


def sample(rep: int, record: Any) -> dict[str, Any]:
    return {"rep": rep, "wall_ns": record.timing.get("wall_ns"), "outcome": record.outcome,
            "flags": sorted(record.flags),
            "lower_bound": record.outcome == "timeout", "z": None, "outlier": False}


def cell_timing(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Cold and warm for one cell from its samples (REP 0 first); fills z and outlier."""
    cold = samples[0] if samples else None
    warm = [s for s in samples[1:] if trusted(s)]
    enough = len(warm) >= MIN_OUTLIER_SAMPLES
    for s, z in zip(warm, modified_z([s["wall_ns"] for s in warm]), strict=True):
        s["z"] = r6(z)
        s["outlier"] = enough and (z is None or z > OUTLIER_Z)
    warm_median = median([s["wall_ns"] for s in warm])
    return {"cold_ms": r6(Fraction(cold["wall_ns"], NS_PER_MS)) if cold and trusted(cold)
            else None,
            "warm_ms": r6(warm_median / NS_PER_MS) if warm_median is not None else None,
            "warm_n": len(warm), "outliers": sum(s["outlier"] for s in warm),
            "samples": samples}


def _cold_warm_ns(cell: dict[str, Any]) -> tuple[int | None, Fraction | None]:
    samples = cell["samples"]
    cold = samples[0]["wall_ns"] if samples and trusted(samples[0]) else None
    return cold, median([s["wall_ns"] for s in samples[1:] if trusted(s)])


def band_timing(cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per band: the median over tasks of each task's cold figure and of its warm median."""
    pairs = [_cold_warm_ns(c) for c in cells]
    colds = [c for c, _ in pairs if c is not None]
    warms = [w for _, w in pairs if w is not None]
    cold, warm = median(colds), median(warms)
    return {"cold_ms": None if cold is None else r6(cold / NS_PER_MS),
            "warm_ms": None if warm is None else r6(warm / NS_PER_MS),
            "cold_n": len(colds), "warm_n": len(warms),
            "outliers": sum(c["outliers"] for c in cells)}


DEFINITION = ("cold: the in-container wall time of REP 0, the first invocation after the index "
              "build; warm: the median of REP 1..N; per kind, the median over tasks of each; "
              "impossible-timing samples are kept and enter no median; timed-out samples are "
              "kept as lower bounds; an outlier is a warm sample whose modified z-score "
              "|x - median| / (1.4826 MAD) over its cell's warm samples exceeds 10, in a cell "
              "of at least 10 warm samples (flagged, never dropped; the z of every sample is "
              "kept)")
