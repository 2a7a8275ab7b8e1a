""""Where peers win", generated mechanically: the leading arm of every band x metric cell, so
the section cannot be trimmed by hand. Ties name every tied arm. Only the arms graded on every
task of a kind compete in it: a median over 6 of 21 tasks is not set beside one over all 21
(its figure is still shown); an arm with no figure (not attempted, not measured) never does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# (metric, what it is, better, how to read it off a band summary)
METRICS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("correct_share", "share of graded tasks correct", "higher", ("correct_share",)),
    ("recall_median", "median recall", "higher", ("recall_median",)),
    ("precision_median", "median precision", "higher", ("precision_median",)),
    ("tokens_median", "median cost, tokens (proxy)", "lower", ("cost", "tokens_median")),
    ("cold_ms", "median cold wall time, ms", "lower", ("timing", "cold_ms")),
    ("warm_ms", "median warm wall time, ms", "lower", ("timing", "warm_ms")),
    ("reach_share", "share of tasks whose every row reaches", "higher", ("reach", "share")),
    ("calls_median", "median tool calls per task", "lower", ("calls", "median")),
)
SETUP_METRICS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("install_seconds", "install wall time, s", "lower", ("install_seconds",)),
    ("index_seconds", "index build wall time, s", "lower", ("index", "seconds")),
    ("on_disk_bytes", "bytes on disk", "lower", ("on_disk_bytes",)),
)


def _get(data: Mapping[str, Any] | None, path: Sequence[str]) -> Any:
    current: Any = data
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


DEFINITION = ("the leader of a kind x metric is the arm with the best figure among the arms "
              "graded on every task of that kind (ties name every tied arm); an arm graded on "
              "fewer shows its figure, over its own tasks, and does not compete; setup "
              "metrics compare every arm that has a figure")


def _cell(band: str, metric: str, label: str, better: str,
          values: dict[str, float | int | None],
          competing: Sequence[str] | None = None) -> dict[str, Any]:
    known = {arm: v for arm, v in values.items()
             if v is not None and (competing is None or arm in competing)}
    if known:
        best = max(known.values()) if better == "higher" else min(known.values())
        leaders = [arm for arm, v in known.items() if v == best]
    else:
        best, leaders = None, []
    return {"band": band, "metric": metric, "label": label, "better": better,
            "leaders": leaders, "best": best, "values": values}


def leaders(summary: Mapping[str, Mapping[str, Any]], setup: Mapping[str, Any],
            arms: Sequence[str], bands: Sequence[str]) -> list[dict[str, Any]]:
    """One row per band x metric, arms in suite order, then the setup metrics (one band)."""
    rows = []
    for band in bands:
        per_arm = {arm: summary.get(arm, {}).get(band) or {} for arm in arms}
        tasks = max((sum(s.get("counts", {}).values()) for s in per_arm.values()), default=0)
        competing = [arm for arm, s in per_arm.items() if s.get("graded") == tasks]
        for metric, label, better, path in METRICS:
            values = {arm: _get(per_arm[arm], path) for arm in arms}
            rows.append(_cell(band, metric, label, better, values, competing))
    for metric, label, better, path in SETUP_METRICS:
        values = {arm: _get(setup.get(arm), path) for arm in arms}
        if metric == "index_seconds":
            # An arm without an index build spends no time on one.
            values = {arm: 0.0 if setup.get(arm) is not None and setup[arm]["index"] is None
                      else v for arm, v in values.items()}
        rows.append(_cell("setup", metric, label, better, values))
    return rows
