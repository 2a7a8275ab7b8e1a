"""Cost without a model: the byte proxy, and the two forms of the paired ratio on hand-made
costs, including costs where the two forms disagree."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from orchestrator.score import cost


@pytest.mark.parametrize("nbytes,tokens", [(0, 0), (1, 1), (4, 1), (5, 2), (4001, 1001)])
def test_tokens_are_ceil_of_bytes_over_four(nbytes: int, tokens: int) -> None:
    assert cost.tokens(nbytes) == tokens


def test_the_cost_is_every_byte_written_even_past_the_cap() -> None:
    @dataclass
    class Stream:
        bytes_total: int
        truncated: bool

    @dataclass
    class Record:
        stdout: Stream

    assert cost.cell_cost(Record(Stream(10_000, True))) == {
        "stdout_bytes": 10_000, "tokens": 2_500, "truncated": True}


def test_median_of_ratios_and_ratio_of_medians_disagree_across_one() -> None:
    baseline = {"t1": 100, "t2": 100, "t3": 1000}
    arm = {"t1": 10, "t2": 200, "t3": 500}
    r = cost.paired_ratio(baseline, arm)
    # per task 10, 0.5, 2: median 2 (the arm looks cheaper) ...
    assert r["median_of_ratios"] == 2.0
    # ... while the medians, 100 / 200, say it is dearer
    assert r["ratio_of_medians"] == 0.5
    assert r["disagreement"] == "the two forms fall on different sides of 1"
    assert r["per_task"] == {"t1": 10.0, "t2": 0.5, "t3": 2.0} and r["pairs"] == 3


def test_the_forms_disagree_by_size_on_the_same_side() -> None:
    r = cost.paired_ratio({"a": 100, "b": 300}, {"a": 50, "b": 100})
    # ratios 2 and 3: median 2.5; medians 200 / 75 = 2.667: within 10%
    assert r["median_of_ratios"] == 2.5 and r["disagreement"] is None
    r = cost.paired_ratio({"a": 100, "b": 100, "c": 900}, {"a": 50, "b": 10, "c": 100})
    # ratios 2, 10, 9: median 9; medians 100 / 50 = 2
    assert r["median_of_ratios"] == 9.0 and r["ratio_of_medians"] == 2.0
    assert r["disagreement"] == "the two forms differ by more than 10% of the larger"


def test_agreeing_forms() -> None:
    r = cost.paired_ratio({"a": 40, "b": 80}, {"a": 20, "b": 40})
    assert r["median_of_ratios"] == r["ratio_of_medians"] == 2.0 and r["disagreement"] is None


def test_only_tasks_both_sides_have_are_paired_and_zero_is_undefined() -> None:
    r = cost.paired_ratio({"a": 10, "b": 10, "c": 10}, {"a": 5, "b": 0, "d": 1})
    assert r["pairs"] == 1 and r["undefined"] == 1 and r["per_task"] == {"a": 2.0}


def test_no_pairs_leaves_both_forms_undefined() -> None:
    r = cost.paired_ratio({"a": 1}, {})
    assert r["median_of_ratios"] is None and r["ratio_of_medians"] is None
    assert r["disagreement"] is None


def test_band_cost() -> None:
    c = cost.band_cost([{"stdout_bytes": 4, "tokens": 1}, {"stdout_bytes": 9, "tokens": 3}])
    assert c == {"n": 2, "tokens_median": 2.0, "bytes_median": 6.5, "bytes_total": 13}
