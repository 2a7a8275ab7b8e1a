"""Wall time: cold is REP 0, warm the median of the repeats, every sample kept, outliers by
the modified z-score flagged and never dropped."""

from __future__ import annotations

from orchestrator.score import timing


def s(rep: int, wall: int | None, outcome: str = "ok", flags: list[str] | None = None) -> dict:
    return {"rep": rep, "wall_ns": wall, "outcome": outcome,
            "flags": flags or [], "lower_bound": outcome == "timeout", "z": None,
            "outlier": False}


def test_modified_z_flags_a_far_sample() -> None:
    z = timing.modified_z([10, 11, 50])
    # median 11, MAD 1: (50 - 11) / 1.4826
    assert z[2] is not None and float(z[2]) > timing.OUTLIER_Z
    assert float(z[0]) < timing.OUTLIER_Z


def test_a_zero_mad_makes_any_sample_off_the_median_infinite() -> None:
    assert timing.modified_z([5, 5, 5]) == [0, 0, 0]
    assert timing.modified_z([5, 5, 6])[2] is None


def test_cold_and_warm_and_every_sample_kept() -> None:
    cell = timing.cell_timing([s(0, 90_000_000), s(1, 10_000_000), s(2, 12_000_000),
                               s(3, 500_000_000)])
    assert cell["cold_ms"] == 90.0
    assert cell["warm_ms"] == 12.0  # median of 10, 12, 500: the far sample stays in
    # three warm samples cannot support a flag: every z is kept, none is an outlier
    assert [x["outlier"] for x in cell["samples"]] == [False] * 4
    assert cell["samples"][3]["z"] is not None and cell["samples"][3]["z"] > timing.OUTLIER_Z
    assert cell["outliers"] == 0 and len(cell["samples"]) == 4


def test_outliers_are_flagged_only_from_enough_warm_samples() -> None:
    def far_last(warm: int) -> dict:
        near = [s(rep, 10_000_000 + rep) for rep in range(1, warm)]
        return timing.cell_timing([s(0, 90_000_000), *near, s(warm, 500_000_000)])
    few = far_last(timing.MIN_OUTLIER_SAMPLES - 1)
    assert few["outliers"] == 0 and not few["samples"][-1]["outlier"]
    enough = far_last(timing.MIN_OUTLIER_SAMPLES)
    assert enough["outliers"] == 1 and enough["samples"][-1]["outlier"]
    assert [x["outlier"] for x in enough["samples"][:-1]] == [False] * timing.MIN_OUTLIER_SAMPLES


def test_an_impossible_sample_enters_no_median_but_is_kept() -> None:
    cell = timing.cell_timing([s(0, 50_000_000, flags=["impossible-timing"]),
                               s(1, 10_000_000), s(2, 20_000_000, flags=["impossible-timing"])])
    assert cell["cold_ms"] is None and cell["warm_ms"] == 10.0 and cell["warm_n"] == 1
    assert len(cell["samples"]) == 3


def test_a_timed_out_sample_is_a_kept_lower_bound() -> None:
    cell = timing.cell_timing([s(0, 60_000_000_000, "timeout"), s(1, 1_000_000),
                               s(2, 3_000_000)])
    assert cell["cold_ms"] == 60_000.0 and cell["samples"][0]["lower_bound"]


def test_band_medians_over_tasks() -> None:
    cells = [timing.cell_timing([s(0, c), s(1, w), s(2, w)])
             for c, w in ((10_000_000, 1_000_000), (30_000_000, 2_000_000),
                          (20_000_000, 9_000_000))]
    band = timing.band_timing(cells)
    assert band == {"cold_ms": 20.0, "warm_ms": 2.0, "cold_n": 3, "warm_n": 3, "outliers": 0}
