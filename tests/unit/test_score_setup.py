"""Setup cost and the break-even task count against the baseline."""

from __future__ import annotations

from fractions import Fraction

from orchestrator.score import setup

F = Fraction


def test_break_even_after_n_tasks() -> None:
    be = setup.break_even(F(12), F(2), {"a": F(1), "b": F(1)}, {"a": F(4), "b": F(5)})
    # 10 s more set-up, 3.5 s saved per task (median of 3 and 4): paid back after 3 tasks
    assert be["kind"] == "after" and be["tasks"] == 3 and be["saving_per_task_s"] == 3.5


def test_break_even_immediate_and_never() -> None:
    assert setup.break_even(F(1), F(2), {"a": F(1)}, {"a": F(2)})["kind"] == "immediate"
    assert setup.break_even(F(5), F(2), {"a": F(3)}, {"a": F(2)})["kind"] == "never"
    assert setup.break_even(F(2), F(2), {"a": F(3)}, {"a": F(2)})["kind"] == "never"


def test_cheaper_to_set_up_but_slower_per_task() -> None:
    be = setup.break_even(F(0), F(10), {"a": F(3)}, {"a": F(1)})
    assert be["kind"] == "ahead-until" and be["tasks"] == 5


def test_unknown_without_times() -> None:
    assert setup.break_even(None, F(1), {}, {})["kind"] == "unknown"
    assert setup.break_even(F(1), F(1), {"a": F(1)}, {"b": F(1)})["kind"] == "unknown"


def test_one_off_needs_a_trusted_index_build() -> None:
    ok = {"outcome": "ok", "wall_ns": 2_000_000_000, "flags": []}
    assert setup.one_off_seconds(1.5, ok) == F(7, 2)
    assert setup.one_off_seconds(1.5, None) == F(3, 2)
    assert setup.one_off_seconds(1.5, {**ok, "outcome": "timeout"}) is None
    assert setup.one_off_seconds(1.5, {**ok, "flags": ["impossible-timing"]}) is None
    assert setup.one_off_seconds(None, ok) is None
